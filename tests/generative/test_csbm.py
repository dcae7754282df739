"""Tests for icml25.generative.csbm (Categorical Schrödinger Bridge Matching, arXiv 2502.01416)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.generative.csbm import (
    CategoricalReference,
    DIMFConfig,
    EndpointNet,
    NetConfig,
    ReferenceConfig,
    coupling_kl,
    csbm_loss,
    energy_distance,
    markovian_projection,
    one_step_matrix,
    sample_chain,
    sb_conditional_2d,
    sinkhorn_coupling,
    tabular_dimf,
    train_dimf,
)


def _ref(
    kind: str = "gaussian", s: int = 4, alpha: float = 0.3, n: int = 2, skip: int = 1
) -> CategoricalReference:
    return CategoricalReference(ReferenceConfig(kind=kind, n_states=s, alpha=alpha, n_steps=n, skip=skip))  # type: ignore[arg-type]


@pytest.mark.parametrize("kind,alpha", [("uniform", 0.2), ("gaussian", 0.1), ("gaussian", 0.5)])
def test_one_step_matrix_row_stochastic_and_symmetric(kind: str, alpha: float) -> None:
    q = one_step_matrix(kind, 7, alpha)
    assert q.dtype == torch.float64 and q.shape == (7, 7)
    assert torch.allclose(q.sum(1), torch.ones(7, dtype=torch.float64), atol=1e-12)
    assert (q >= 0).all()
    assert torch.allclose(q, q.T, atol=1e-15)


def test_cumulative_matrices_are_powers() -> None:
    ref = _ref(s=5, n=3, skip=2)
    base = one_step_matrix("gaussian", 5, 0.3)
    assert torch.allclose(ref.Q, base @ base)
    for t in range(ref.N + 2):
        assert torch.allclose(ref.Qbar[t], torch.linalg.matrix_power(ref.Q, t))


def test_bridge_matches_brute_force_enumeration() -> None:
    ref = _ref(s=4, n=2)
    q = ref.Q
    for x0, x3 in itertools.product(range(4), repeat=2):
        joint = torch.zeros(4, 4, dtype=torch.float64)  # (x1, x2)
        for x1, x2 in itertools.product(range(4), repeat=2):
            joint[x1, x2] = q[x0, x1] * q[x1, x2] * q[x2, x3]
        joint /= joint.sum()
        a, b = torch.tensor([[x0]]), torch.tensor([[x3]])
        assert torch.allclose(ref.bridge_probs(a, b, 1)[0, 0], joint.sum(1), atol=1e-12)
        assert torch.allclose(ref.bridge_probs(a, b, 2)[0, 0], joint.sum(0), atol=1e-12)
        assert torch.allclose(ref.bridge_probs(a, b, 0)[0, 0], torch.eye(4, dtype=torch.float64)[x0])


def test_posterior_is_bayes_rule() -> None:
    ref = _ref(kind="uniform", s=5, alpha=0.3, n=3)
    for t in range(1, ref.N + 2):
        for x0, xt in itertools.product(range(5), repeat=2):
            bayes = ref.Q[:, xt] * ref.Qbar[t - 1][x0] / ref.Qbar[t][x0, xt]
            got = ref.posterior_probs(torch.tensor([[xt]]), torch.tensor([[x0]]), torch.tensor([t]))[0, 0]
            assert torch.allclose(got, bayes, atol=1e-12)
            onehot = torch.eye(5, dtype=torch.float64)[x0][None, None]
            step = ref.model_step_probs(torch.tensor([[xt]]), onehot, torch.tensor([t]))[0, 0]
            assert torch.allclose(step, bayes, atol=1e-12)


def test_bridge_sampling_frequencies() -> None:
    ref = _ref(s=4, n=2, alpha=0.5)
    n = 40_000
    x0, x1 = torch.zeros(n, 1, dtype=torch.long), torch.full((n, 1), 3)
    xs = ref.sample_bridge(x0, x1, 1, torch.Generator().manual_seed(0))
    freq = torch.bincount(xs[:, 0], minlength=4).double() / n
    assert torch.allclose(freq, ref.bridge_probs(x0[:1], x1[:1], 1)[0, 0], atol=0.01)


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["uniform", "gaussian"]),
    s=st.integers(2, 9),
    n=st.integers(1, 4),
    alpha=st.floats(0.05, 0.9),
    data=st.data(),
)
def test_bridge_is_a_distribution_pinned_at_the_ends(
    kind: str, s: int, n: int, alpha: float, data: st.DataObject
) -> None:
    ref = _ref(kind=kind, s=s, alpha=alpha, n=n)
    x0 = torch.tensor(data.draw(st.lists(st.integers(0, s - 1), min_size=3, max_size=3)))[None]
    x1 = torch.tensor(data.draw(st.lists(st.integers(0, s - 1), min_size=3, max_size=3)))[None]
    for t in range(n + 2):
        p = ref.bridge_probs(x0, x1, t)
        assert torch.allclose(p.sum(-1), torch.ones(1, 3, dtype=torch.float64), atol=1e-9)
    reachable = ref.Qbar[n + 1][x0, x1] > 1e-250  # otherwise the pair has probability ~0 under the reference
    assert (ref.bridge_probs(x0, x1, n + 1).argmax(-1) == x1)[reachable].all()
    assert (ref.bridge_probs(x0, x1, 0).argmax(-1) == x0)[reachable].all()


def test_sinkhorn_matches_pot() -> None:
    import ot

    ref = _ref(s=12, n=4, alpha=0.2, skip=3)
    a = torch.rand(12, generator=torch.Generator().manual_seed(1)).double() + 0.1
    b = torch.arange(1, 13).double()
    ours = sinkhorn_coupling(ref.Qbar[-1], a, b)
    theirs = ot.sinkhorn(
        (a / a.sum()).numpy(),
        (b / b.sum()).numpy(),
        -ref.Qbar[-1].log().numpy(),
        1.0,
        numItermax=100_000,
        stopThr=1e-14,
    )
    assert np.abs(ours.numpy() - theirs).max() < 1e-9


def test_tabular_dimf_converges_monotonically_and_keeps_marginals() -> None:
    ref = _ref(s=20, n=5, alpha=0.1, skip=20)
    p0 = torch.ones(20, dtype=torch.float64)
    p1 = torch.arange(1, 21, dtype=torch.float64)
    tr = tabular_dimf(ref, p0, p1, 15)
    assert tr.kl[0] > 1e-3
    assert all(b <= a + 1e-12 for a, b in zip(tr.kl[:-1], tr.kl[1:], strict=True))
    assert tr.kl[-1] < 1e-6
    assert max(tr.marginal_error) < 1e-10


def test_sb_coupling_is_a_fixed_point_of_the_projections() -> None:
    ref = _ref(kind="uniform", s=10, n=3, alpha=0.2, skip=2)
    p0 = torch.linspace(1, 2, 10, dtype=torch.float64)
    star = sinkhorn_coupling(ref.Qbar[-1], p0, p0.flip(0))
    for d in ("forward", "backward"):
        assert coupling_kl(star, markovian_projection(ref, star, d)) < 1e-12


def test_sb_conditional_2d_matches_dense_sinkhorn() -> None:
    ref = _ref(s=6, n=2, alpha=0.3, skip=2)
    g = torch.Generator().manual_seed(0)
    pa, pb = torch.rand(36, generator=g).double() + 0.1, torch.rand(36, generator=g).double() + 0.1
    pi = sinkhorn_coupling(torch.kron(ref.Qbar[-1], ref.Qbar[-1]), pa, pb)
    assert torch.allclose(sb_conditional_2d(ref.Qbar[-1], pa, pb), pi / pi.sum(0, keepdim=True), atol=1e-8)


def test_network_loss_and_sampling() -> None:
    torch.manual_seed(0)
    ref = _ref(s=8, n=3, alpha=0.2, skip=2)
    net = EndpointNet(3, 8, ref.N + 2, NetConfig(hidden=16, depth=1, time_dim=4))
    x = torch.randint(0, 8, (5, 3))
    t = torch.tensor([1, 2, 3, 4, 1])
    assert net(x, t).shape == (5, 3, 8)
    loss = csbm_loss(net, ref, x, torch.randint(0, 8, (5, 3)), torch.Generator().manual_seed(0))
    assert loss.ndim == 0 and torch.isfinite(loss)
    y = sample_chain(net, ref, x, torch.Generator().manual_seed(0))
    assert y.shape == x.shape and y.dtype == torch.long and int(y.min()) >= 0 and int(y.max()) < 8


def test_learned_dimf_learns_a_shift() -> None:
    """Target = source + 3 on a line: after training, translations land near the target marginal."""
    ref = _ref(s=12, n=3, alpha=0.1, skip=2)
    g = torch.Generator().manual_seed(0)
    src = torch.randint(0, 5, (512, 1), generator=g)
    tgt = src + 6
    res = train_dimf(
        ref,
        tgt,
        src,
        DIMFConfig(
            iterations=2,
            first_steps=60,
            steps=10,
            batch_size=32,
            n_pairs=256,
            lr=1e-2,
            net=NetConfig(hidden=32, depth=1, time_dim=4),
        ),
    )
    assert len(res.forward) == 2 and len(res.losses) == 2
    out = sample_chain(res.forward[-1], ref, src[:200], g)
    assert float((out >= 6).double().mean()) > 0.8


def test_energy_distance_zero_on_same_sample_positive_otherwise() -> None:
    a = torch.randn(50, 2, generator=torch.Generator().manual_seed(0)).double()
    assert abs(energy_distance(a, a)) < 1e-12
    assert energy_distance(a, a + 3) > 1.0


@pytest.mark.parametrize(
    "call,err",
    [
        (lambda: one_step_matrix("gaussian", 0, 0.1), ValueError),
        (lambda: one_step_matrix("other", 5, 0.1), ValueError),
        (lambda: ReferenceConfig(n_steps=0), ValueError),
        (lambda: _ref().bridge_probs(torch.tensor([[0.5]]), torch.tensor([[1]]), 1), TypeError),
        (lambda: _ref().bridge_probs(torch.tensor([[9]]), torch.tensor([[1]]), 1), ValueError),
        (
            lambda: _ref().bridge_probs(
                torch.zeros(0, 1, dtype=torch.long), torch.zeros(0, 1, dtype=torch.long), 1
            ),
            ValueError,
        ),
        (
            lambda: sinkhorn_coupling(torch.full((3, 3), float("nan")), torch.ones(3), torch.ones(3)),
            ValueError,
        ),
        (lambda: tabular_dimf(_ref(), torch.ones(4), torch.ones(3), 2), ValueError),
    ],
)
def test_bad_input(call, err) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(err):
        call()


def test_check_tiny_runs_and_passes_its_smoke_criteria() -> None:
    from icml25.generative.csbm.check import CSBMCheck

    result = CSBMCheck().run("tiny")
    passed = {c.name: c.passed for c in result.criteria}
    assert passed["tabular_converges"] is True
    assert passed["tiny_runs"] is True


def test_full_config_constructs_and_runs_one_step() -> None:
    from icml25.generative.csbm.check import CSBMCheck

    cfg = CSBMCheck().config("full")
    ref = CategoricalReference(cfg.toy_reference)
    net = EndpointNet(2, ref.S, ref.N + 2, cfg.toy_dimf.net)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.toy_dimf.lr)
    x = torch.randint(0, ref.S, (cfg.toy_dimf.batch_size, 2))
    loss = csbm_loss(net, ref, x, x.flip(0), weights=cfg.toy_dimf.loss)
    loss.backward()
    opt.step()
    assert torch.isfinite(loss)


# -- issue 41: the check's comparisons -------------------------------------------------------------


def test_beats_continuous_compares_with_a_learned_bridge_not_the_data_floor() -> None:
    """The continuous-space comparison is against a learned bridge (a baseline); resampling the
    training targets is the data floor, a reference that no generator can beat."""
    from icml25.generative.csbm.check import CHECK

    claim = CHECK.claim_for(CHECK.config("small"))
    crit = {c.name: c for c in claim.criteria}
    assert crit["beats_continuous"].other_arm == "dsbm"
    assert "dsbm" in claim.baselines
    assert {"data_floor", "identity", "exact_sb"} <= set(claim.references)
    for c in claim.criteria_at("small"):
        if c.other_arm is not None:
            assert c.other_arm not in claim.references
            assert c.smallest_effect is not None and c.effect_source
    assert claim.gates_at("small")


def _spy_run(monkeypatch: pytest.MonkeyPatch, **overrides: object) -> tuple[list, list, object]:
    from icml25.generative.csbm import check as check_mod

    bm_calls: list[tuple[float, int]] = []
    cont_calls: list[float] = []
    real_bm, real_cbm = check_mod.train_bridge_matching, check_mod.train_continuous_bm

    def spy_bm(ref, start, end, config, steps, **kw):  # type: ignore[no-untyped-def]
        bm_calls.append((config.lr, steps))
        return real_bm(ref, start, end, config, steps, **kw)

    def spy_cbm(source, target, config, sigma, steps, **kw):  # type: ignore[no-untyped-def]
        cont_calls.append(config.lr)
        return real_cbm(source, target, config, sigma, steps, **kw)

    monkeypatch.setattr(check_mod, "train_bridge_matching", spy_bm)
    monkeypatch.setattr(check_mod, "train_continuous_bm", spy_cbm)
    result = check_mod.CSBMCheck().run("tiny", overrides=dict(overrides))
    return bm_calls, cont_calls, result


def test_bm_gets_the_forward_steps_of_all_csbm_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal budget: the bridge-matching arm trains as many forward steps as csbm's forward network
    gets over its rounds (it had round 1's steps only)."""
    from icml25.generative.csbm.check import CHECK

    d = CHECK.config("tiny").toy_dimf
    bm_calls, _, _ = _spy_run(monkeypatch)
    assert bm_calls[-1][1] == d.first_steps + (d.iterations - 1) * d.steps


def test_every_learned_arm_gets_the_same_lr_sweep_also_on_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Digits had one learning rate; now the discrete and continuous families each run one
    validation pilot per rate, in both parts, and the chosen rates are reported."""
    lrs = (1e-3, 3e-3)
    bm_calls, cont_calls, result = _spy_run(
        monkeypatch,
        lrs=lrs,
        run_digits=True,
        digits_split=(20, 10),
        digits_dimf=DIMFConfig(
            iterations=2,
            first_steps=5,
            steps=3,
            batch_size=16,
            n_pairs=64,
            net=NetConfig(hidden=8, depth=1, time_dim=4),
        ),
    )
    pilots = [lr for lr, steps in bm_calls if steps in (15, 5)]
    assert sorted(pilots) == sorted(lrs * 2)  # toy and digits, one pilot per rate
    assert sorted(cont_calls) == sorted(lrs * 2)
    assert result.metrics["csbm"]["digits_lr"].values[0] in lrs  # type: ignore[attr-defined]
    assert result.metrics["dsbm"]["digits_lr"].values[0] in lrs  # type: ignore[attr-defined]
    assert "digits_energy" in result.metrics["bm"]


def test_energy_item_scores_average_to_the_energy_distance() -> None:
    from icml25.generative.csbm.data import energy_item_scores

    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(40, 2, generator=g).double(), torch.randn(30, 2, generator=g).double() + 1
    rows = energy_item_scores(a, b)
    assert rows.shape == (40,)
    assert abs(float(rows.mean()) - energy_distance(a, b)) < 1e-12


def test_sde_sampler_with_the_exact_bridge_drift_ends_at_the_endpoint() -> None:
    from icml25.generative.csbm.continuous import DriftNet, sample_sde

    end = torch.tensor([1.5, -0.5])

    class Exact(DriftNet):
        def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
            return (end - x) / (1 - s)[:, None]

    x0 = torch.randn(16, 2, generator=torch.Generator().manual_seed(0))
    out = sample_sde(Exact(2, NetConfig(hidden=4, depth=1, time_dim=2)), x0, 0.7, 20, torch.Generator())
    assert torch.allclose(out, end.double().expand(16, 2), atol=1e-5)


def test_bridge_drift_loss_is_zero_for_the_exact_drift_without_noise_error() -> None:
    from icml25.generative.csbm.continuous import DriftNet, bridge_drift_loss

    class Exact(DriftNet):
        target: torch.Tensor

        def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
            return (self.target - x) / (1 - s)[:, None]

    net = Exact(1, NetConfig(hidden=4, depth=1, time_dim=2))
    net.target = torch.full((64, 1), 2.0)
    src = torch.zeros(64, 1, dtype=torch.float64)
    loss = bridge_drift_loss(net, src, torch.full((64, 1), 2.0), 0.5, "forward", torch.Generator())
    assert float(loss) < 1e-6


def test_continuous_dimf_learns_a_shift() -> None:
    from icml25.generative.csbm.continuous import train_continuous_dimf

    g = torch.Generator().manual_seed(0)
    src = torch.randn(512, 1, generator=g).double() * 0.3
    tgt = src + 2.0
    cfg = DIMFConfig(
        iterations=2,
        first_steps=150,
        steps=30,
        batch_size=64,
        n_pairs=512,
        lr=1e-2,
        net=NetConfig(hidden=32, depth=1, time_dim=4),
    )
    res = train_continuous_dimf(src, tgt, cfg, sigma=0.2, n_sample_steps=20)
    assert len(res.forward) == 2
    out = res.translate(src[:200], g)
    assert abs(float(out.mean()) - 2.0) < 0.3


def test_reference_sigma_matches_the_categorical_variance() -> None:
    from icml25.generative.csbm.continuous import reference_sigma

    ref = _ref(kind="gaussian", s=41, alpha=0.05, n=4, skip=3)
    row = ref.Qbar[-1][20]
    k = torch.arange(41, dtype=torch.float64)
    var = float((row * (k - 20) ** 2).sum())  # symmetric around the middle state
    assert abs(reference_sigma(ref, 0.5) - 0.5 * var**0.5) < 1e-9
    with pytest.raises(ValueError):
        reference_sigma(ref, 0.0)


def test_official_log_floor_flag_distorts_far_bridges() -> None:
    """Exact logs put the bridge between far endpoints in the middle; the official log(p + 1e-20)
    (a flag) moves it to the endpoints, where the floor dominates the tiny true probabilities."""
    cfg = dict(kind="gaussian", n_states=30, alpha=0.1, n_steps=1, skip=1)
    exact = CategoricalReference(ReferenceConfig(**cfg))  # type: ignore[arg-type]
    official = CategoricalReference(ReferenceConfig(**cfg, log_eps=1e-20))  # type: ignore[arg-type]
    a, b = torch.tensor([[0]]), torch.tensor([[29]])
    assert 0 < float(exact.Qbar[-1][0, 29]) < 1e-80
    assert int(exact.bridge_probs(a, b, 1)[0, 0].argmax()) in (14, 15)
    assert int(official.bridge_probs(a, b, 1)[0, 0].argmax()) in (0, 29)
    near = torch.tensor([[3]]), torch.tensor([[4]])
    assert torch.allclose(exact.bridge_probs(*near, 1), official.bridge_probs(*near, 1), atol=1e-10)
    with pytest.raises(ValueError):
        ReferenceConfig(log_eps=-1.0)


def test_raw_first_step_flag_returns_the_prediction_at_t1_only() -> None:
    ref_raw = CategoricalReference(
        ReferenceConfig(kind="uniform", n_states=5, alpha=0.3, n_steps=2, skip=1, raw_first_step=True)
    )
    ref = CategoricalReference(ReferenceConfig(kind="uniform", n_states=5, alpha=0.3, n_steps=2, skip=1))
    x = torch.tensor([[1, 2], [3, 4]])
    pred = torch.softmax(
        torch.randn(2, 2, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64), -1
    )
    t = torch.tensor([1, 2])
    raw, mixed = ref_raw.model_step_probs(x, pred, t), ref.model_step_probs(x, pred, t)
    assert torch.allclose(raw[0], pred[0])
    assert not torch.allclose(mixed[0], pred[0])
    assert torch.allclose(raw[1], mixed[1])


def _pairs_seen(monkeypatch: pytest.MonkeyPatch, config: DIMFConfig) -> set[tuple[int, ...]]:
    """The distinct (x_0, x_{N+1}) training pairs that learned D-IMF fits on."""
    from icml25.generative.csbm import model as csbm_model

    seen: set[tuple[int, ...]] = set()
    original = csbm_model.csbm_loss

    def recording(net, ref, x_start, x_end, gen, *args):  # type: ignore[no-untyped-def]
        seen.update(tuple(r) for r in torch.cat([x_start, x_end], 1).tolist())
        return original(net, ref, x_start, x_end, gen, *args)

    g = torch.Generator().manual_seed(0)
    start, end = torch.randint(0, 12, (400, 2), generator=g), torch.randint(0, 12, (400, 2), generator=g)
    with monkeypatch.context() as patch:
        patch.setattr(csbm_model, "csbm_loss", recording)
        train_dimf(_ref(s=12, n=2, alpha=0.2), start, end, config)
    return seen


def test_resample_pairs_flag_draws_fresh_pairs_every_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Default: every projection fits on a pool of n_pairs pairs drawn once (2 rounds x 2 directions
    x 8 pairs = at most 32 distinct pairs); resample_pairs=True (the official loop) draws a fresh
    batch at every step, model-translated in round 2."""
    base = dict(
        iterations=2, first_steps=6, steps=6, batch_size=16, n_pairs=8, net=NetConfig(hidden=8, depth=1)
    )
    assert DIMFConfig(**base).resample_pairs is False  # type: ignore[arg-type]
    pooled = _pairs_seen(monkeypatch, DIMFConfig(**base))  # type: ignore[arg-type]
    fresh = _pairs_seen(monkeypatch, DIMFConfig(**base, resample_pairs=True))  # type: ignore[arg-type]
    assert 0 < len(pooled) <= 32
    assert len(fresh) > 100
    with pytest.raises(TypeError, match="resample_pairs"):
        DIMFConfig(resample_pairs=1)  # type: ignore[arg-type]


def test_resample_pairs_flag_runs_in_every_trainer() -> None:
    from icml25.generative.csbm.continuous import train_continuous_bm, train_continuous_dimf
    from icml25.generative.csbm.model import train_bridge_matching

    cfg = DIMFConfig(
        iterations=2,
        first_steps=3,
        steps=2,
        batch_size=8,
        n_pairs=4,
        resample_pairs=True,
        net=NetConfig(hidden=8),
    )
    g = torch.Generator().manual_seed(0)
    a, b = torch.randint(0, 6, (50, 2), generator=g), torch.randint(0, 6, (50, 2), generator=g)
    net = train_bridge_matching(_ref(s=6, n=2), a, b, cfg, 3)
    assert sample_chain(net, _ref(s=6, n=2), b[:5], g).shape == (5, 2)
    res = train_continuous_dimf(a.double(), b.double(), cfg, sigma=0.5, n_sample_steps=3)
    assert len(res.forward) == 2 and all(torch.isfinite(torch.tensor(loss)).all() for loss in res.losses)
    assert train_continuous_bm(a.double(), b.double(), cfg, 0.5, 3)(a[:4].float(), torch.zeros(4)).shape == (
        4,
        2,
    )
