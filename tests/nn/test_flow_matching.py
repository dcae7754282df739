"""Tests for icml25.nn.flow_matching: the linear conditional flow-matching path, loss and Euler sampler."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.nn.flow_matching import (
    euler_sample,
    flow_matching_loss,
    linear_path,
    sample_times,
    target_velocity,
)


def test_path_endpoints_and_velocity_is_its_derivative() -> None:
    gen = torch.Generator().manual_seed(0)
    x0, x1 = torch.randn(4, 3, 2, generator=gen), torch.randn(4, 3, 2, generator=gen)
    assert torch.equal(linear_path(x0, x1, torch.zeros(4)), x0)
    assert torch.allclose(linear_path(x0, x1, torch.ones(4)), x1)
    t, h = torch.full((4,), 0.3, dtype=torch.float64), 1e-6
    x0d, x1d = x0.double(), x1.double()
    fd = (linear_path(x0d, x1d, t + h) - linear_path(x0d, x1d, t - h)) / (2 * h)
    assert torch.allclose(fd, target_velocity(x0d, x1d), atol=1e-8)


@settings(max_examples=30, deadline=None)
@given(t=st.floats(0.0, 1.0), seed=st.integers(0, 10_000))
def test_path_is_a_convex_combination(t: float, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    x0, x1 = torch.randn(2, 5, generator=gen), torch.randn(2, 5, generator=gen)
    xt = linear_path(x0, x1, torch.full((2,), t))
    lo, hi = torch.minimum(x0, x1), torch.maximum(x0, x1)
    assert ((xt >= lo - 1e-6) & (xt <= hi + 1e-6)).all()


def test_oracle_velocity_has_zero_loss_and_euler_lands_on_the_data() -> None:
    # one data point x1: the exact velocity of the path through x_t is (x1 - x_t) / (1 - t)
    gen = torch.Generator().manual_seed(1)
    x1 = torch.randn(6, 4, generator=gen, dtype=torch.float64)

    def oracle(x: torch.Tensor, t: torch.Tensor, cond: object) -> torch.Tensor:
        return (x1 - x) / (1 - t).view(-1, 1)

    t = torch.rand(6, generator=gen, dtype=torch.float64) * 0.9
    assert float(flow_matching_loss(oracle, x1, t=t, generator=gen)) < 1e-20
    out = euler_sample(oracle, torch.randn(6, 4, generator=gen, dtype=torch.float64), steps=7)
    assert torch.allclose(out, x1, atol=1e-12)


def test_euler_constant_velocity_and_path() -> None:
    c = torch.tensor([[1.0, -2.0]])
    out, path = euler_sample(
        lambda x, t, cond: c.expand_as(x) + cond, torch.zeros(3, 2), steps=4, cond=0.5, return_path=True
    )
    assert torch.allclose(out, torch.tensor([[1.5, -1.5]]).expand(3, 2))
    assert len(path) == 5 and torch.equal(path[0], torch.zeros(3, 2))


def test_known_entries_are_clamped() -> None:
    known = torch.arange(6.0).view(2, 3)
    mask = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    out = euler_sample(
        lambda x, t, c: torch.zeros_like(x), torch.randn(2, 3), steps=3, known=known, known_mask=mask
    )
    assert torch.equal(out[mask.bool()], known[mask.bool()])


def test_masked_loss_is_the_weighted_mean_and_gradients_flow() -> None:
    gen = torch.Generator().manual_seed(2)
    x1, x0, t = (
        torch.randn(3, 4, generator=gen),
        torch.randn(3, 4, generator=gen),
        torch.rand(3, generator=gen),
    )
    w = torch.nn.Parameter(torch.tensor(0.5))
    mask = torch.tensor([[1.0, 1.0, 0.0, 0.0]])

    def f(x: torch.Tensor, tt: torch.Tensor, cond: object) -> torch.Tensor:
        return w * x

    loss = flow_matching_loss(f, x1, t=t, x0=x0, mask=mask)
    xt = (1 - t).view(-1, 1) * x0 + t.view(-1, 1) * x1
    ref = ((w * xt - (x1 - x0)) ** 2)[:, :2].mean()
    assert torch.allclose(loss, ref)
    loss.backward()
    assert w.grad is not None and torch.isfinite(w.grad)


def test_sample_times_range_and_determinism() -> None:
    for kind in ("uniform", "logit_normal"):
        a = sample_times(500, generator=torch.Generator().manual_seed(3), kind=kind, eps=0.01)
        b = sample_times(500, generator=torch.Generator().manual_seed(3), kind=kind, eps=0.01)
        assert torch.equal(a, b) and a.min() >= 0.01 and a.max() <= 0.99


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: linear_path(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2)), "same shape"),
        (lambda: linear_path(torch.zeros(2, 3), torch.zeros(2, 3), torch.full((2,), 1.5)), "t must"),
        (lambda: linear_path(torch.zeros(2, 3), torch.full((2, 3), float("nan")), torch.zeros(2)), "x1"),
        (lambda: sample_times(0), "n"),
        (lambda: euler_sample(lambda x, t, c: x, torch.zeros(2, 2), steps=0), "steps"),
        (lambda: flow_matching_loss(lambda x, t, c: x[:, :1], torch.zeros(2, 3)), "velocity must return"),
    ],
)
def test_bad_input(call, match) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()
