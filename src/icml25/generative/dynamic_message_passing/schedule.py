"""The Dynamic Message Passing (DMP) resolution/range schedule.

Pao-Huang, Black, Qiu, *Geometric Generative Modeling with Noise-Conditioned Graph Networks*,
ICML 2025 (arXiv 2507.09391), Sec. 4 (DMP) and the official ``src/schedules.py``.

Notation: N nodes, base k neighbours, ``s = sqrt(k N)``, ``tau`` the clean fraction of the sample
(flow-matching time; tau = 0 is pure noise, tau = 1 is data), ``c`` the curvature. The number of
coarse nodes ``n(tau)`` grows from ``s`` at pure noise to ``N`` at clean data:

    exp     n = s + (N - s) (e^{c tau} - 1) / (e^c - 1)
    linear  n = (1 - tau) s + tau N
    log     n = s + (N - s) log(1 + c tau) / log(1 + c)
    relu    n = s for tau <= knee, then linear from s to N

and the coarse kNN uses ``k(tau) = ceil(k N / n(tau))`` neighbours, so ``n(tau) k(tau) ~ k N``: the
edge budget of a static kNN graph. At pure noise about ``sqrt(kN)`` clusters see about ``sqrt(kN)``
neighbours each (nearly fully connected: long range, coarse); at clean data every node is its own
cluster with k neighbours (local, fine).

The schedule is a function of an explicit clean fraction; a DDPM-style solver whose time runs the
other way (t = 1 noise, as in the official ModelNet scripts) must pass ``tau = 1 - t``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from icml25.core.validate import check_fields, check_positive

__all__ = [
    "ScheduleKind",
    "GraphSchedule",
    "exp_schedule",
    "linear_schedule",
    "log_schedule",
    "relu_schedule",
]

ScheduleKind = Literal["exp", "linear", "log", "relu", "static_knn", "fully_connected", "random"]
ADAPTIVE_KINDS = ("exp", "linear", "log", "relu")
STATIC_KINDS = ("static_knn", "fully_connected", "random")


def _start(n_nodes: int, base_k: int) -> float:
    return min(math.sqrt(base_k * n_nodes), float(n_nodes))


def exp_schedule(tau: Tensor, n_nodes: int, base_k: int, curvature: float = 10.0) -> Tensor:
    """``n(tau) = s + (N - s)(e^{c tau} - 1)/(e^c - 1)``, the official default (c = 10)."""
    s = _start(n_nodes, base_k)
    return s + (n_nodes - s) * torch.expm1(curvature * tau) / math.expm1(curvature)


def linear_schedule(tau: Tensor, n_nodes: int, base_k: int, curvature: float = 10.0) -> Tensor:
    """``n(tau) = (1 - tau) s + tau N`` (``curvature`` unused)."""
    s = _start(n_nodes, base_k)
    return (1.0 - tau) * s + tau * n_nodes


def log_schedule(tau: Tensor, n_nodes: int, base_k: int, curvature: float = 10.0) -> Tensor:
    """``n(tau) = s + (N - s) log(1 + c tau) / log(1 + c)``."""
    s = _start(n_nodes, base_k)
    return s + (n_nodes - s) * torch.log1p(curvature * tau) / math.log1p(curvature)


def relu_schedule(tau: Tensor, n_nodes: int, base_k: int, knee: float = 0.6) -> Tensor:
    """``n(tau) = s`` for ``tau <= knee``, then linear up to ``N`` at ``tau = 1``."""
    s = _start(n_nodes, base_k)
    return s + (n_nodes - s) * torch.clamp((tau - knee) / (1.0 - knee), min=0.0)


@dataclass(frozen=True)
class GraphSchedule:
    """Noise level -> (number of clusters, neighbours per coarse node).

    Args:
        kind: an adaptive DMP schedule (``exp``, ``linear``, ``log``, ``relu``) or a
            noise-independent baseline: ``static_knn`` (N clusters, k neighbours), ``fully_connected``
            (N clusters, N - 1 neighbours) or ``random`` (N clusters, k uniformly random neighbours:
            long range at the kNN budget; the official ``long_short``).
        base_k: k of the static graph; it fixes the edge budget ``k N``.
        curvature: c of the exp and log schedules.
        relu_knee: where the relu schedule starts to refine.
        reverse: ablation: evaluate the schedule at ``1 - tau`` (fine and local at noise, coarse at
            data), the direction the paper argues against.
    """

    kind: ScheduleKind = "exp"
    base_k: int = 5
    curvature: float = 10.0
    relu_knee: float = 0.6
    reverse: bool = False

    def __post_init__(self) -> None:
        if self.kind not in (*ADAPTIVE_KINDS, *STATIC_KINDS):
            raise ValueError(
                f"GraphSchedule.kind must be one of {(*ADAPTIVE_KINDS, *STATIC_KINDS)}, got {self.kind!r}"
            )
        check_fields(self, positive_int=("base_k",), positive=("curvature",))
        if not 0.0 <= self.relu_knee < 1.0:
            raise ValueError(f"GraphSchedule.relu_knee must lie in [0, 1), got {self.relu_knee!r}")
        if self.reverse and self.kind not in ADAPTIVE_KINDS:
            raise ValueError("GraphSchedule.reverse applies to adaptive kinds only")

    @property
    def adaptive(self) -> bool:
        """Whether the graph depends on the noise level."""
        return self.kind in ADAPTIVE_KINDS

    def target_clusters(self, clean_frac: Tensor, n_nodes: int) -> Tensor:
        """The real-valued ``n(tau)`` per sample, ``[B]`` (``N`` for the static kinds)."""
        check_positive("n_nodes", n_nodes, integer=True)
        tau = _check_tau(clean_frac)
        if not self.adaptive:
            return torch.full_like(tau, float(n_nodes))
        if self.reverse:
            tau = 1.0 - tau
        if self.kind == "exp":
            return exp_schedule(tau, n_nodes, self.base_k, self.curvature)
        if self.kind == "linear":
            return linear_schedule(tau, n_nodes, self.base_k)
        if self.kind == "log":
            return log_schedule(tau, n_nodes, self.base_k, self.curvature)
        return relu_schedule(tau, n_nodes, self.base_k, self.relu_knee)

    def resolution(self, clean_frac: Tensor, n_nodes: int) -> tuple[Tensor, Tensor]:
        """``(n_clusters, k)`` per sample, both ``[B]`` int64.

        ``n_clusters = ceil(n(tau))`` clipped to [1, N] and ``k = ceil(k N / n(tau))``; the static kinds
        give ``(N, k)`` (``(N, N - 1)`` fully connected). The graph builder clips ``k`` to the real
        number of coarse nodes minus one.
        """
        n = self.target_clusters(clean_frac, n_nodes)
        if self.kind == "fully_connected":
            k = torch.full_like(n, float(max(n_nodes - 1, 1)))
        elif not self.adaptive:
            k = torch.full_like(n, float(self.base_k))
        else:
            k = torch.ceil(self.base_k * n_nodes / n - 1e-6)
        clusters = torch.clamp(torch.ceil(n - 1e-6), 1, n_nodes)
        return clusters.to(torch.int64), k.to(torch.int64)


def _check_tau(clean_frac: Tensor) -> Tensor:
    if not isinstance(clean_frac, Tensor):
        raise TypeError(f"clean_frac must be a torch.Tensor of shape [B], got {type(clean_frac).__name__}")
    if clean_frac.ndim != 1 or clean_frac.numel() == 0:
        raise ValueError(f"clean_frac must have shape [B] with B >= 1, got {tuple(clean_frac.shape)}")
    if not clean_frac.is_floating_point():
        raise TypeError(f"clean_frac must be a floating-point tensor, got {clean_frac.dtype}")
    if not torch.isfinite(clean_frac).all() or (clean_frac < 0).any() or (clean_frac > 1).any():
        raise ValueError("clean_frac must lie in [0, 1] (0 = pure noise, 1 = clean data)")
    return clean_frac.to(torch.float64)
