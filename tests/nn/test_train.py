"""icml25.nn.train.fit, icml25.nn.optim, icml25.nn.checkpoint and icml25.nn.params."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.nn.checkpoint import load_checkpoint, save_checkpoint
from icml25.nn.optim import param_groups, warmup_cosine
from icml25.nn.params import count_parameters, match_width
from icml25.nn.train import BatchSampler, FitConfig, fit


def regression(n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 3, generator=g)
    return X, X @ torch.tensor([[1.0], [-2.0], [0.5]])


def mse(m, batch, gen):
    xb, yb = batch
    return ((m(xb) - yb) ** 2).mean()


def test_warmup_cosine_values():
    kw = {"total_steps": 10, "warmup_steps": 2, "peak": 1.0}
    assert warmup_cosine(0, **kw) == 0.5 and warmup_cosine(1, **kw) == 1.0
    assert warmup_cosine(2, **kw) == 1.0
    assert math.isclose(warmup_cosine(6, **kw), 0.5)
    assert warmup_cosine(10, **kw) == 0.0 and warmup_cosine(50, **kw) == 0.0
    assert warmup_cosine(0, total_steps=10, warmup_steps=2, peak=1.0, floor=0.2) == pytest.approx(0.6)
    assert warmup_cosine(10, total_steps=10, warmup_steps=2, peak=1.0, floor=0.2) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="floor"):
        warmup_cosine(0, total_steps=10, warmup_steps=0, peak=1.0, floor=2.0)


def test_param_groups_decay_matrices_only():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 1))
    model[2].bias.requires_grad_(False)
    decay, no_decay = param_groups(model, 0.1)
    assert [p.shape for p in decay["params"]] == [(4, 3), (1, 4)] and decay["weight_decay"] == 0.1
    assert len(no_decay["params"]) == 3 and no_decay["weight_decay"] == 0.0  # bias, LN weight, LN bias


def test_fit_equals_a_hand_written_loop():
    X, y = regression()
    torch.manual_seed(0)
    a = torch.nn.Linear(3, 1)
    b = torch.nn.Linear(3, 1)
    b.load_state_dict(a.state_dict())
    cfg = FitConfig(
        steps=7,
        batch_size=8,
        lr=0.1,
        warmup_steps=2,
        weight_decay=0.01,
        grad_clip=0.5,
        sampling="replacement",
        betas=(0.9, 0.95),
    )
    hist = fit(a, mse, (X, y), cfg, seed=5)
    gen = torch.Generator().manual_seed(5)
    opt = torch.optim.AdamW(
        [{"params": [b.weight], "weight_decay": 0.01}, {"params": [b.bias], "weight_decay": 0.0}],
        lr=0.1,
        betas=(0.9, 0.95),
    )
    losses = []
    for s in range(7):
        idx = torch.randint(40, (8,), generator=gen)
        for g in opt.param_groups:
            g["lr"] = warmup_cosine(s, total_steps=7, warmup_steps=2, peak=0.1)
        loss = ((b(X[idx]) - y[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(b.parameters(), 0.5)
        opt.step()
        losses.append(float(loss.detach()))
    assert list(hist.train_loss) == losses
    assert torch.equal(a.weight, b.weight)
    assert hist.steps == tuple(range(1, 8)) and len(hist.lr) == 7


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 30), bs=st.integers(1, 12), mode=st.sampled_from(["shuffle", "shuffle_drop_last"]))
def test_shuffle_samplers_visit_every_example_once_per_epoch(n, bs, mode):
    if mode == "shuffle_drop_last" and bs > n:
        with pytest.raises(ValueError, match="batch_size"):
            BatchSampler(n, bs, mode, torch.Generator().manual_seed(0))
        return
    s = BatchSampler(n, bs, mode, torch.Generator().manual_seed(0))
    seen = torch.cat([s.next() for _ in range(s.steps_per_epoch)])
    expected = n if mode == "shuffle" else (n // bs) * bs
    assert len(seen) == expected and len(set(seen.tolist())) == expected


def test_keep_best_patience_and_on_eval():
    X, y = regression()
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    calls = []
    # a validation metric that is best at the second evaluation, then worse: keep-best restores it
    scores = iter([3.0, 1.0, 2.0, 2.5, 4.0])
    states = []

    def evaluate(m):
        states.append(m.weight.detach().clone())
        return {"val_loss": next(scores)}

    cfg = FitConfig(steps=50, batch_size=8, lr=0.05, eval_every=2, patience=3)
    hist = fit(model, mse, (X, y), cfg, evaluate=evaluate, on_eval=calls.append)
    assert hist.best_step == 4 and hist.best_value == 1.0 and hist.stopped_early
    assert [r.step for r in calls] == [2, 4, 6, 8, 10] and len(hist.steps) == 10
    assert torch.equal(model.weight, states[1])
    assert hist.metric("val_loss") == ((2, 4, 6, 8, 10), (3.0, 1.0, 2.0, 2.5, 4.0))


def test_keep_best_copies_trained_parameters_and_buffers_not_frozen_ones():
    from icml25.nn.train import snapshot_state

    X, y = regression()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 1))
    model[0].requires_grad_(False)  # a frozen body under a trained head
    frozen = model[0].weight.detach().clone()
    partial = snapshot_state(model, skip_frozen=True)
    assert "0.weight" not in partial and "2.weight" in partial and "1.running_mean" in partial
    assert set(snapshot_state(model)) == set(model.state_dict())
    scores = iter([3.0, 1.0, 2.0, 2.5, 4.0])
    states = []

    def evaluate(m):
        states.append({k: v.detach().clone() for k, v in m.state_dict().items()})
        return {"val_loss": next(scores)}

    cfg = FitConfig(steps=10, batch_size=8, lr=0.05, eval_every=2)
    hist = fit(model, mse, (X, y), cfg, evaluate=evaluate)
    assert hist.best_step == 4
    for name, value in model.state_dict().items():  # the best state, buffers included
        assert torch.equal(value, states[1][name]), name
    assert torch.equal(model[0].weight, frozen)


@pytest.mark.parametrize(
    ("mode", "sign"),
    [("min", 1.0), ("max", -1.0)],
)
def test_min_delta_stops_a_metric_that_creeps(mode, sign):
    X, y = regression()
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    # improves by 1e-3 per evaluation forever: without min_delta patience never runs out
    values = [sign * (1.0 - 1e-3 * k) for k in range(100)]
    states = []

    def evaluate(m):
        states.append(m.weight.detach().clone())
        return {"val_loss": values[len(states) - 1]}

    base = dict(steps=40, batch_size=8, lr=0.05, eval_every=2, patience=3, monitor_mode=mode)
    states.clear()
    never = fit(model, mse, (X, y), FitConfig(**base), evaluate=evaluate)
    assert not never.stopped_early and len(never.steps) == 40
    states.clear()
    hist = fit(model, mse, (X, y), FitConfig(**base, min_delta=0.01), evaluate=evaluate)
    # the first evaluation counts; the next three improve by under 0.01 each: stop at the fourth
    assert hist.stopped_early and len(hist.steps) == 8
    # keep-best still restores the strictly best (last) state
    assert hist.best_step == 8 and torch.equal(model.weight, states[-1])


def test_min_delta_must_be_non_negative():
    with pytest.raises(ValueError, match="min_delta"):
        FitConfig(steps=1, batch_size=1, lr=0.1, min_delta=-0.1)


def test_nonfinite_loss_stops_before_the_update_and_post_step_runs():
    model = torch.nn.Linear(3, 1)
    before = model.weight.detach().clone()
    hooks = []

    def loss(m, batch, gen):
        return m(batch[0]).sum() * (float("nan") if len(hooks) == 2 else 1.0)

    X, y = regression()
    hist = fit(
        model, loss, (X, y), FitConfig(steps=5, batch_size=4, lr=0.1), post_step=lambda m, s: hooks.append(s)
    )
    assert hist.diverged and hist.steps == (1, 2) and hooks == [1, 2]
    assert not torch.equal(model.weight, before) and torch.isfinite(model.weight).all()


def test_index_data_and_loss_generator_are_shared():
    drawn = []

    def loss(m, idx, gen):
        drawn.append((idx.tolist(), torch.rand(1, generator=gen).item()))
        return m(torch.ones(1, 1)).sum()

    fit(torch.nn.Linear(1, 1), loss, 6, FitConfig(steps=4, batch_size=2, lr=0.1, sampling="shuffle"), seed=1)
    gen = torch.Generator().manual_seed(1)
    expected = []
    perm = torch.randperm(6, generator=gen)
    for i in range(3):
        expected.append((perm[2 * i : 2 * i + 2].tolist(), torch.rand(1, generator=gen).item()))
    perm = torch.randperm(6, generator=gen)
    expected.append((perm[:2].tolist(), torch.rand(1, generator=gen).item()))
    assert drawn == expected


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"steps": 0}, "FitConfig.steps"),
        ({"batch_size": -1}, "FitConfig.batch_size"),
        ({"lr": float("nan")}, "FitConfig.lr"),
        ({"min_lr": 1.0}, "FitConfig.min_lr"),
        ({"sampling": "random"}, "FitConfig.sampling"),
        ({"betas": (0.9, 1.0)}, "betas"),
    ],
)
def test_fit_config_bad_values(kwargs, match):
    base = {"steps": 3, "batch_size": 2, "lr": 0.1}
    with pytest.raises(ValueError, match=match):
        FitConfig(**{**base, **kwargs})


def test_fit_bad_data():
    model = torch.nn.Linear(3, 1)
    cfg = FitConfig(steps=1, batch_size=2, lr=0.1)
    with pytest.raises(ValueError, match="first dimension"):
        fit(model, mse, (torch.zeros(4, 3), torch.zeros(5, 1)), cfg)
    with pytest.raises(ValueError, match="empty"):
        fit(model, mse, (torch.zeros(0, 3), torch.zeros(0, 1)), cfg)
    with pytest.raises(ValueError, match="size"):
        fit(model, mse, 0, cfg)
    with pytest.raises(ValueError, match="scalar"):
        fit(model, lambda m, b, g: m(b[0]), (torch.zeros(4, 3), torch.zeros(4, 1)), cfg)


def test_checkpoint_roundtrip_bit_exact_with_tied_weights_and_config(tmp_path):
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Cfg:
        width: int = 4
        sizes: tuple[int, ...] = (1, 2)

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(5, 4)
            self.head = torch.nn.Linear(4, 5, bias=False)
            self.head.weight = self.emb.weight
            self.register_buffer("count", torch.tensor(3))

    torch.manual_seed(0)
    a = Tied()
    path = save_checkpoint(tmp_path / "m.safetensors", a, config=Cfg(), metadata={"seed": "0"})
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]  # no temp file left behind
    b = Tied()
    ck = load_checkpoint(path, b)
    for k, v in a.state_dict().items():
        assert torch.equal(b.state_dict()[k], v)
    assert b.head.weight.data_ptr() == b.emb.weight.data_ptr()
    assert ck.config == {"width": 4, "sizes": [1, 2]} and ck.metadata == {"seed": "0"}
    assert ck.module_class.endswith(
        ":test_checkpoint_roundtrip_bit_exact_with_tied_weights_and_config.<locals>.Tied"
    )
    (tmp_path / "bad.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable"):
        load_checkpoint(tmp_path / "bad.safetensors")
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError, match="metadata"):
        save_checkpoint(tmp_path / "x.safetensors", a, metadata={"icml25.config": "x"})


def test_match_width_is_closest_and_tolerance_errors():
    def build(w):
        return torch.nn.Sequential(torch.nn.Linear(10, w), torch.nn.Linear(w, 10))

    target = count_parameters(build(37)) + 5
    assert match_width(build, target) == 37
    assert match_width(build, target, step=4) == 36
    with pytest.raises(ValueError, match="within"):
        match_width(build, 3, tolerance=0.1)
    with pytest.raises(ValueError, match="target_params"):
        match_width(build, 0)
