"""Empirical monotonicity verifier, used by the tests and the claim check.

Part of *Advancing Constrained Monotonic Neural Networks: Achieving Universal Approximation Beyond
Bounded Activations* (Sartor, Sinigaglia, Susto, ICML 2025, https://arxiv.org/abs/2505.02537). The
paper's models are monotone by construction; this sampling test (our design) checks that guarantee
empirically for every constrained model.

For each constrained feature i it draws ``n_pairs`` pairs (x, x + δ e_i) with δ > 0 and counts
pairs where f(x + δ e_i) < f(x) − tol (or > f(x) + tol for a decreasing feature), for every
output. Base points are rows of ``X`` (half of the pairs) and uniform draws from the bounding box
of ``X`` widened by 10% on each side (the other half); δ is uniform on (0, range_i]. The model is
evaluated on a float64 copy by default so float32 rounding cannot fake a violation.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .models import parse_monotone

__all__ = ["MonotonicityReport", "check_monotonicity", "monotonicity_report"]


@dataclass(frozen=True)
class MonotonicityReport:
    """Violations per input feature (0 for free features), pairs tested and the worst drop."""

    violations: tuple[int, ...]
    n_pairs: int
    worst: float

    @property
    def total(self) -> int:
        return int(sum(self.violations))


@torch.no_grad()
def monotonicity_report(
    model: nn.Module,
    X: np.ndarray | torch.Tensor,
    monotone: Sequence[int],
    *,
    n_pairs: int = 10_000,
    tol: float = 1e-6,
    seed: int = 0,
    float64: bool = True,
    batch_size: int = 8192,
) -> MonotonicityReport:
    """Count monotonicity violations of ``model`` on random pairs along each constrained feature.

    Args:
        model: maps ``(batch, d)`` to ``(batch,)`` or ``(batch, k)``.
        X: ``(n, d)`` reference inputs (bounds and base points).
        monotone: direction per feature: +1, −1 or 0 (not tested).
        n_pairs: pairs per constrained feature.
        tol: allowed decrease (absolute).
        seed: seed of the pair sampler.
        float64: evaluate a float64 copy of the model.
        batch_size: evaluation chunk size.

    Returns:
        A :class:`MonotonicityReport`; ``report.total`` is the number of violating pairs.
    """
    Xt = torch.as_tensor(X, dtype=torch.float64)
    if Xt.ndim != 2 or Xt.shape[0] < 1:
        raise ValueError(f"X must have shape (n, d) with n >= 1, got {tuple(Xt.shape)}")
    if not bool(torch.isfinite(Xt).all()):
        raise ValueError("X contains NaN or inf")
    d = Xt.shape[1]
    directions = parse_monotone(monotone, d)
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be at least 1, got {n_pairs}")
    if tol < 0:
        raise ValueError(f"tol must be non-negative, got {tol}")
    net = copy.deepcopy(model).double() if float64 else model
    dtype = torch.float64 if float64 else torch.float32
    was_training = net.training
    net.eval()
    gen = torch.Generator().manual_seed(seed)
    lo, hi = Xt.min(dim=0).values, Xt.max(dim=0).values
    span = (hi - lo).clamp_min(1e-3)
    lo, hi = lo - 0.1 * span, hi + 0.1 * span

    def f(z: torch.Tensor) -> torch.Tensor:
        outs = [net(z[i : i + batch_size].to(dtype)) for i in range(0, z.shape[0], batch_size)]
        out = torch.cat(outs).double()
        return out.reshape(z.shape[0], -1)

    violations, worst = [], 0.0
    for i, direction in enumerate(directions):
        if direction == 0:
            violations.append(0)
            continue
        n_data = n_pairs // 2
        rows = Xt[torch.randint(Xt.shape[0], (n_data,), generator=gen)]
        box = lo + (hi - lo) * torch.rand(n_pairs - n_data, d, generator=gen, dtype=torch.float64)
        base = torch.cat([rows, box])
        delta = torch.rand(n_pairs, generator=gen, dtype=torch.float64).clamp_min(1e-6) * span[i]
        moved = base.clone()
        moved[:, i] += delta
        drop = direction * (f(base) - f(moved))  # > 0 means the output moved the wrong way
        bad = (drop > tol).any(dim=1)
        violations.append(int(bad.sum()))
        worst = max(worst, float(drop.max()))
    net.train(was_training)
    return MonotonicityReport(violations=tuple(violations), n_pairs=n_pairs, worst=worst)


def check_monotonicity(
    model: nn.Module,
    X: np.ndarray | torch.Tensor,
    monotone: Sequence[int],
    *,
    n_pairs: int = 10_000,
    tol: float = 1e-6,
    seed: int = 0,
) -> int:
    """The number of violating pairs over all constrained features (0 for a monotone model)."""
    return monotonicity_report(model, X, monotone, n_pairs=n_pairs, tol=tol, seed=seed).total
