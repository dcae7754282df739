"""Tests for icml25.theory.moe_sgd (Kawata et al., ICML 2025, arXiv 2506.01656)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.theory.moe_sgd import (
    ClusteredSIMTask,
    HermiteLink,
    MoE,
    StageSchedule,
    TwoLayerNet,
    correlation_step,
    evaluate_mse,
    hermite_coeffs,
    hermite_correlation,
    information_exponent,
    loglog_slope,
    oracle_assign,
    overlap_report,
    overlaps,
    per_sample_lr,
    ridge_refit,
    routing_confusion,
    routing_purity,
    train_moe_stagewise,
    train_vanilla,
)
from icml25.theory.moe_sgd.check import CHECK, MoESGDConfig, stage3_nstar
from icml25.theory.moe_sgd.models import Activation
from icml25.theory.moe_sgd.train import TrainLog

# -- Hermite tools -------------------------------------------------------------------------------


def test_hermite_coeffs_of_normalised_he3_is_a_unit_vector() -> None:
    c = hermite_coeffs(lambda z: (z**3 - 3 * z) / math.sqrt(6), 6)
    np.testing.assert_allclose(c, [0, 0, 0, 1, 0, 0, 0], atol=1e-10)


def test_information_exponent_known_cases() -> None:
    assert information_exponent(lambda z: (z**3 - 3 * z) / math.sqrt(6)) == 3
    assert information_exponent(lambda z: z**2 - 1) == 2
    assert information_exponent(np.tanh) == 1
    assert information_exponent(lambda z: z**4 - 6 * z**2 + 3) == 4  # He_4
    with pytest.raises(ValueError, match="max_k"):
        information_exponent(lambda z: np.ones_like(z), max_k=5)  # a constant has no exponent


def test_hermite_link_values_and_derivative() -> None:
    link = HermiteLink({3: 2.0, 4: -1.0})
    z = np.linspace(-3, 3, 41)
    expected = 2.0 * (z**3 - 3 * z) / math.sqrt(6) - (z**4 - 6 * z**2 + 3) / math.sqrt(24)
    np.testing.assert_allclose(link(z), expected, atol=1e-10)
    h = 1e-5
    np.testing.assert_allclose(link.derivative(z), (link(z + h) - link(z - h)) / (2 * h), atol=1e-5)
    np.testing.assert_allclose(hermite_coeffs(link, 5), [0, 0, 0, 2, -1, 0], atol=1e-10)


@pytest.mark.parametrize("name", ["hermite", "relu_bias"])
def test_activation_derivative_matches_finite_difference(name: str) -> None:
    act = Activation(name, 3)
    z = np.linspace(-2.9, 3.1, 50)  # avoids the ReLU kink at 0
    np.testing.assert_allclose(act.derivative(z), (act(z + 1e-6) - act(z - 1e-6)) / 2e-6, atol=1e-4)


# -- data model ----------------------------------------------------------------------------------


def test_task_shapes_and_orthonormal_directions() -> None:
    task = ClusteredSIMTask(12, 2, seed=3)
    X, y, c = task.sample(50, np.random.default_rng(0))
    assert X.shape == (50, 12) and y.shape == (50,) and c.shape == (50,)
    assert X.dtype == np.float64 and c.dtype == np.int64
    B = np.vstack([task.V, task.W_local, task.w_global, task.w_null])
    np.testing.assert_allclose(B @ B.T, np.eye(6), atol=1e-12)
    # labels without noise follow the formula
    X0 = np.random.default_rng(1).standard_normal((5, 12))
    c0 = np.array([0, 1, 0, 1, 1])
    he3 = lambda z: (z**3 - 3 * z) / math.sqrt(6)  # noqa: E731
    want = he3(np.einsum("nd,nd->n", X0, task.W_local[c0])) + task.signs[c0] * he3(X0 @ task.w_global)
    np.testing.assert_allclose(task.labels(X0, c0), want)


def test_cluster_means() -> None:
    task = ClusteredSIMTask(10, 2, rho=3.0, seed=0)
    X, _, c = task.sample(20_000, np.random.default_rng(0))
    for k in range(2):
        np.testing.assert_allclose(X[c == k].mean(0), 3.0 * task.V[k], atol=0.06)


def test_pooled_low_order_hermite_coefficients_cancel_along_w_g_but_not_per_cluster() -> None:
    """Sec. 3: sum_c s_c = 0 removes the global signal from the pooled task at every order."""
    task = ClusteredSIMTask(16, 2, noise=0.1, seed=1)
    rng = np.random.default_rng(0)
    n = 200_000
    for k in (1, 2, 3, 4):
        est, se = hermite_correlation(task, task.w_global, k, n, rng)
        assert abs(est) < 4 * se + 1e-3, (k, est, se)
    for cl, sign in ((0, 1.0), (1, -1.0)):
        est, se = hermite_correlation(task, task.w_global, 3, n // 2, rng, cluster=cl)
        assert abs(est - sign) < 4 * se, (cl, est)
    # the local directions keep their degree-3 signal in the pooled task (weight 1/C each)
    est, se = hermite_correlation(task, task.W_local[0], 3, n, rng)
    assert abs(est - 0.5) < 4 * se


def test_vanilla_population_gradient_along_w_g_is_exactly_zero_with_the_matched_activation() -> None:
    """The algebra behind the vanilla arm's failure (issue 43): with sigma = He_3/sqrt(6) the
    pooled correlation gradient E[y sigma'(u . x) (w_g . x)] vanishes at every u, while each
    cluster's own gradient along w_g does not. Exact Gauss-Hermite quadrature on the span of
    v_c, w_c, w_g and u (the integrand is a polynomial of degree 6)."""
    task = ClusteredSIMTask(12, 2, rho=3.0, noise=0.0, seed=3)
    act = Activation("hermite", 3)
    rng = np.random.default_rng(0)
    basis = np.concatenate([task.V, task.W_local, task.w_global[None]])  # (5, d) orthonormal
    u = 0.5 * task.w_global + 0.3 * task.V[0] - 0.2 * task.V[1] + 0.4 * task.W_local[0]
    u = u + 0.3 * rng.standard_normal(12)
    u /= np.linalg.norm(u)
    resid = u - basis.T @ (basis @ u)
    Q = np.concatenate([basis, (resid / np.linalg.norm(resid))[None]])  # (6, d)
    nodes, weights = np.polynomial.hermite_e.hermegauss(5)
    weights = weights / weights.sum()
    grids = np.meshgrid(*([nodes] * 6), indexing="ij")
    Z = np.stack([g.ravel() for g in grids], axis=1)  # (5^6, 6)
    W = np.prod(np.meshgrid(*([weights] * 6), indexing="ij"), axis=0).ravel()
    per_cluster = []
    for c in range(2):
        X = task.rho * task.V[c] + Z @ Q  # x = rho v_c + z restricted to the span
        y = task.labels(X, np.full(len(X), c))
        per_cluster.append(float(np.sum(W * y * act.derivative(X @ u) * (X @ task.w_global))))
    assert abs(per_cluster[0]) > 1e-2 and per_cluster[0] == pytest.approx(-per_cluster[1], rel=1e-9)
    assert abs(np.mean(per_cluster)) < 1e-10


def _stage3_log(n_star: dict[int, float], routed: list[int], initial: list[float]) -> TrainLog:
    log = TrainLog(threshold=0.5)
    log.routed_stage3 = routed
    log.stage3_initial_overlap = initial
    for e in range(len(routed)):
        log.n_star[f"global_stage3_expert{e}_routed"] = n_star.get(e, math.inf)
        log.n_star[f"global_stage3_expert{e}"] = 4 * n_star.get(e, math.inf)  # the total-sample clock
    return log


def test_stage3_nstar_counts_routed_samples_with_lower_bounds_and_left_outs() -> None:
    """Issue 43: n* counts each expert's own routed samples (not all stage-III samples), an expert
    that never holds the threshold enters as a lower bound, one that starts above it is left out,
    and unused experts do not count."""
    log = _stage3_log({0: 100.0, 1: 300.0, 3: 5.0}, routed=[400, 500, 20, 300], initial=[0.2, 0.3, 0.1, 0.6])
    n_star, censored, left_out, active = stage3_nstar(log, 0.5)
    assert (censored, left_out, active) == (0, 1, 3)  # expert 2 is unused, expert 3 started above
    assert n_star == 200.0  # median of the routed counts 100 and 300, not of the 4x total clock
    log = _stage3_log({0: 100.0}, routed=[400, 500], initial=[0.2, 0.3])
    n_star, censored, left_out, active = stage3_nstar(log, 0.5)
    assert (censored, left_out, active) == (1, 0, 2)
    assert n_star == 300.0  # median of 100 and the lower bound 500 (expert 1's routed count)
    log = _stage3_log({}, routed=[10, 10], initial=[0.9, 0.9])
    assert math.isnan(stage3_nstar(log, 0.5)[0])
    with pytest.raises(ValueError, match="stage-III"):
        stage3_nstar(TrainLog(threshold=0.5), 0.5)


def test_training_logs_the_routed_sample_clock_per_expert() -> None:
    task = ClusteredSIMTask(10, 2, seed=0)
    rng = np.random.default_rng(1)
    moe = MoE(10, 3, 2, rng=rng)
    log = train_moe_stagewise(moe, task, schedule=StageSchedule(256, 256, 2048), batch=32, lr=0.05, rng=rng)
    assert sum(log.routed_stage3) == 2048 and len(log.stage3_initial_overlap) == 3
    for e in range(3):
        own, total = log.n_star[f"global_stage3_expert{e}_routed"], log.n_star[f"global_stage3_expert{e}"]
        assert own <= total and (math.isinf(own) == math.isinf(total))
        assert math.isinf(own) or own <= log.routed_stage3[e]


def test_label_variance_matches_samples() -> None:
    task = ClusteredSIMTask(10, 2, noise=0.3, seed=0)
    _, y, _ = task.sample(100_000, np.random.default_rng(2))
    assert abs(y.var() - task.label_variance()) < 0.05 * task.label_variance()


# -- models --------------------------------------------------------------------------------------


def test_moe_gates_and_forward_match_a_naive_loop() -> None:
    rng = np.random.default_rng(0)
    moe = MoE(8, 3, 2, top_k=2, rng=rng)
    moe.Theta = rng.standard_normal((3, 8))
    moe.a = rng.standard_normal((3, 4))
    X = rng.standard_normal((7, 8))
    soft = moe.gates(X, "soft")
    np.testing.assert_allclose(soft.sum(1), 1.0)
    top = moe.gates(X, "top")
    assert ((top > 0).sum(1) == 2).all()
    np.testing.assert_allclose(top.sum(1), 1.0)
    out = moe(X, routing="top")
    for i in range(7):
        f = [sum(moe.a[m, j] * moe.act(X[i] @ moe.U[m, j]) for j in range(4)) for m in range(3)]
        assert out[i] == pytest.approx(float(np.dot(top[i], f)))
    moe.top_k = 1
    np.testing.assert_array_equal(moe.gates(X, "top").argmax(1), np.argmax(soft, 1))


def test_vanilla_forward_shape_and_unit_rows() -> None:
    net = TwoLayerNet(9, 5, act="relu_bias", rng=np.random.default_rng(0))
    np.testing.assert_allclose(np.linalg.norm(net.U, axis=1), 1.0)
    assert net(np.zeros((4, 9))).shape == (4,)
    assert np.all(np.abs(net.b) <= 1.0)


# -- training pieces -----------------------------------------------------------------------------


def test_correlation_step_matches_a_naive_loop_and_stays_on_the_sphere() -> None:
    rng = np.random.default_rng(0)
    U = rng.standard_normal((3, 6))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    X, y = rng.standard_normal((10, 6)), rng.standard_normal(10)
    mask = (rng.random((10, 3)) > 0.5).astype(float)
    act = Activation("hermite", 3)
    want = U.copy()
    for j in range(3):
        g = sum(mask[i, j] * y[i] * act.derivative(X[i] @ U[j]) * X[i] for i in range(10))
        g = g - (g @ U[j]) * U[j]
        want[j] = (U[j] + 0.01 * g) / np.linalg.norm(U[j] + 0.01 * g)
    got = U.copy()
    correlation_step(got, np.zeros(3), X, y, act, 0.01, mask)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0)
    frozen = U.copy()
    correlation_step(frozen, np.zeros(3), X, y, act, 0.01, np.zeros((10, 3)))
    np.testing.assert_allclose(frozen, U)  # a neuron that receives no sample does not move


def test_oracle_assign_sends_each_cluster_to_its_pool() -> None:
    c = np.random.default_rng(0).integers(0, 3, 500)
    m = oracle_assign(c, 7, 3, np.random.default_rng(1))
    assert np.all(m % 3 == c) and m.max() < 7 and set(m.tolist()) == set(range(7))
    np.testing.assert_array_equal(oracle_assign(c, 3, 3, np.random.default_rng(2)), c)


def test_stage_schedule_from_fractions() -> None:
    s = StageSchedule.from_fractions(1000, (0.4, 0.1, 0.5))
    assert (s.stage1, s.stage2, s.stage3, s.total) == (400, 100, 500, 1000)


def test_router_stage_assigns_clusters_to_experts_on_an_easy_case() -> None:
    """Group-A neurons placed on the local directions: stage II must route cluster c to experts
    whose neurons hold w_c (purity ~ 1)."""
    d = 16
    task = ClusteredSIMTask(d, 2, rho=4.0, seed=0)
    rng = np.random.default_rng(0)
    moe = MoE(d, 4, 2, rng=rng)
    for m in range(4):
        moe.U[m, :2] = task.W_local[m % 2]
    train_moe_stagewise(
        moe,
        task,
        schedule=StageSchedule(1, 30_000, 1),
        batch=1,
        lr=1e-12,
        router_lr=0.05,
        a_lr=0.05,
        rng=rng,
    )
    rep = overlap_report(moe, task, rng=np.random.default_rng(1))
    assert rep.purity is not None and rep.purity > 0.9
    conf = np.asarray(rep.confusion)
    for m in range(4):  # every used expert gets the cluster whose direction it holds
        if conf[:, m].sum() > 100:
            assert conf[:, m].argmax() == m % 2


def test_perfect_features_give_noise_level_mse_and_vanilla_cannot_fit_the_global_term() -> None:
    d = 12
    task = ClusteredSIMTask(d, 2, noise=0.1, seed=2)
    rng = np.random.default_rng(0)
    moe = MoE(d, 2, 1, rng=rng)
    for m in range(2):
        moe.U[m, 0], moe.U[m, 1] = task.W_local[m], task.w_global
    assign = lambda X, c: c  # noqa: E731 - the oracle with M = C
    ridge_refit(moe, task, n=4000, rng=rng, assign_fn=assign)
    assert evaluate_mse(moe, task, n=4000, rng=rng, assign_fn=assign) < 0.02
    # the same neurons in one network: the pooled fit cannot carry the cluster-dependent sign
    net = TwoLayerNet(d, 3, rng=rng)
    net.U[:] = np.vstack([task.W_local, task.w_global])
    ridge_refit(net, task, n=4000, rng=rng)
    assert evaluate_mse(net, task, n=4000, rng=rng) > 1.3


def test_short_training_runs_and_logs() -> None:
    task = ClusteredSIMTask(10, 2, seed=0)
    rng = np.random.default_rng(0)
    net = TwoLayerNet(10, 8, rng=rng)
    log = train_vanilla(
        net, task, n_samples=640, batch=64, lr=per_sample_lr(0.1, 10), rng=rng, record_every=128
    )
    assert log.samples[0] == 0 and log.samples[-1] == 640 and log.stage_ends == [640]
    assert "global_total" in log.n_star
    moe = MoE(10, 2, 2, rng=rng)
    log = train_moe_stagewise(
        moe, task, schedule=StageSchedule(256, 256, 256), batch=32, lr=1e-3, rng=rng, lr_final_factor=0.1
    )
    assert log.stage_ends == [256, 512, 768]
    assert {"local_stage1", "global_stage3", "global_total", "global_stage3_expert1"} <= set(log.n_star)
    assert len(log.router_alignment) == len(log.samples)
    assert np.isfinite(moe.U).all() and np.isfinite(moe.Theta).all()


# -- measurements --------------------------------------------------------------------------------


def test_overlaps_known_case() -> None:
    task = ClusteredSIMTask(9, 2, seed=0)
    g, loc = overlaps(np.vstack([task.w_global, -2.0 * task.W_local[1]]), task)
    assert g == pytest.approx(1.0)
    np.testing.assert_allclose(loc, [0.0, 1.0], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 50), min_size=3, max_size=3), min_size=2, max_size=4))
def test_purity_bounds(rows: list[list[int]]) -> None:
    conf = np.asarray(rows)
    if conf.sum() == 0:
        return
    p = routing_purity(conf)
    assert 0 < p <= 1
    assert p >= conf.sum(1).max() / conf.sum() - 1e-12  # never worse than sending all to one expert


def test_routing_confusion_counts() -> None:
    conf = routing_confusion(np.array([0, 1, 1, 2]), np.array([0, 0, 1, 1]), 2, 3)
    np.testing.assert_array_equal(conf, [[1, 1, 0], [0, 1, 1]])
    assert routing_purity(np.array([[10, 0], [0, 10]])) == 1.0


@given(st.floats(0.5, 4.0), st.floats(0.1, 10.0))
def test_loglog_slope_recovers_a_power_law(power: float, scale: float) -> None:
    dims = [16, 32, 64, 128]
    assert loglog_slope(dims, [scale * d**power for d in dims]) == pytest.approx(power, abs=1e-9)


def test_loglog_slope_nan_for_unreached() -> None:
    assert math.isnan(loglog_slope([8, 16], [10.0, math.inf]))


# -- claim check ---------------------------------------------------------------------------------


def test_criteria_follow_the_config_dims() -> None:
    claim = CHECK.claim_for(CHECK.config("small", {"dims": (40, 80)}))
    names = {c.name for c in claim.criteria}
    assert {"moe_beats_vanilla_global_d80", "moe_mse_below_vanilla_d80", "nstar_slope_low"} <= names
    assert not any("d96" in n for n in names)
    assert claim.headline == "moe_beats_vanilla_global_d80"
    assert {g.name for g in claim.gates_at("small")} == {"oracle_recovers", "nstar_measured"}


def test_check_follows_the_protocol() -> None:
    claim = CHECK.claim_for(CHECK.config("small"))
    assert set(claim.references) == {"untrained", "oracle_moe"} and claim.controls == ("oracle_moe",)
    head = claim.headline_criterion()
    assert head.paired and head.other_arm == "vanilla" and head.arm == "moe"
    for c in claim.criteria_at("small"):
        assert c.other_arm is None or c.smallest_effect is not None, c.name
    assert claim.min_seeds == 5 and CHECK.default_seeds["small"] == 5
    assert min(CHECK.config("small").dims) <= 24 and max(CHECK.config("small").dims) >= 96


def test_full_preset_constructs_and_runs_one_step() -> None:
    result = CHECK.run("full", seeds=[0], overrides={"max_steps": 1, "n_refit": 300, "n_eval": 300})
    assert result.metrics["moe"]["d512/test_mse"].mean >= 0
    assert math.isfinite(result.metrics["untrained"]["d512/global_overlap"].mean)
    assert math.isfinite(result.metrics["vanilla"]["d512/global_overlap"].mean)


# -- bad input -----------------------------------------------------------------------------------


def test_bad_input_is_refused_with_the_argument_named() -> None:
    rng = np.random.default_rng(0)
    task = ClusteredSIMTask(8, 2, seed=0)
    with pytest.raises(ValueError, match="d must be at least"):
        ClusteredSIMTask(4, 2)
    with pytest.raises(ValueError, match="signs"):
        ClusteredSIMTask(8, 2, signs=(1.0, 1.0))
    with pytest.raises(ValueError, match="n_clusters"):
        ClusteredSIMTask(8, 1)
    with pytest.raises(ValueError, match="X"):
        task.labels(np.full((3, 8), np.nan), np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="X"):
        task.labels(np.ones((3, 7)), np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="c must"):
        task.labels(np.ones((3, 8)), np.array([0, 1, 2]))
    with pytest.raises(TypeError, match="rng"):
        task.sample(3, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n must"):
        task.sample(0, rng)
    with pytest.raises(ValueError, match="n_experts"):
        MoE(8, 0, 2, rng=rng)
    with pytest.raises(ValueError, match="top_k"):
        MoE(8, 2, 2, top_k=3, rng=rng)
    with pytest.raises(ValueError, match="act"):
        TwoLayerNet(8, 2, act="tanh", rng=rng)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="directions"):
        overlaps(np.ones((2, 5)), task)
    with pytest.raises(ValueError, match="dims"):
        loglog_slope([8], [1.0])
    with pytest.raises(ValueError, match="eta0"):
        per_sample_lr(0.0, 8)
    with pytest.raises(ValueError, match="stage1"):
        StageSchedule(0, 1, 1)
    with pytest.raises(ValueError, match="task.d"):
        train_vanilla(TwoLayerNet(9, 2, rng=rng), task, n_samples=10, batch=2, lr=0.1, rng=rng)
    with pytest.raises(ValueError, match="fn"):
        hermite_coeffs(lambda z: z * np.nan, 3)
    with pytest.raises(ValueError, match="signs"):
        MoESGDConfig(signs=(1.0,))
