"""Measurements for *Mixture of Experts Provably Detect and Learn the Latent Cluster Structure in
Gradient-Based Learning* (Kawata et al., ICML 2025, https://arxiv.org/abs/2506.01656).

Weak recovery (Sec. 4) is read off the neuron overlaps ``max_j |u_j . w|`` with the global
direction ``w_g`` and every local direction ``w_c``; routing quality is the cluster x expert
confusion matrix and its purity; the router's alignment is the cosine of every row ``Theta_m``
with the cluster means ``v_c`` (the quantity of the paper's Figs. 1-2). The final second-layer
fit is a ridge regression on frozen features (the convex step after feature learning), and
``loglog_slope`` fits the growth exponent of a sample-complexity curve ``n*(d)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_finite_array, check_non_negative, check_positive

from .models import MoE, TwoLayerNet
from .task import ClusteredSIMTask

__all__ = [
    "OverlapReport",
    "overlaps",
    "overlap_report",
    "routing_confusion",
    "routing_purity",
    "router_alignment",
    "ridge_refit",
    "evaluate_mse",
    "loglog_slope",
]


def overlaps(directions: np.ndarray, task: ClusteredSIMTask) -> tuple[float, np.ndarray]:
    """``(max_j |u_j . w_g|, [max_j |u_j . w_c| for c])`` for unit rows ``directions`` (N, d)."""
    check_finite_array("directions", directions, ndim=2)
    if directions.shape[1] != task.d:
        raise ValueError(f"directions must have shape (N, {task.d}), got {directions.shape}")
    norms = np.linalg.norm(directions, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("directions must be non-zero rows")
    U = directions / norms
    return float(np.max(np.abs(U @ task.w_global))), np.max(np.abs(U @ task.W_local.T), axis=0)


def routing_confusion(
    assign: np.ndarray, clusters: np.ndarray, n_clusters: int, n_experts: int
) -> np.ndarray:
    """(C, M) counts of samples of cluster c sent to expert m."""
    assign, clusters = np.asarray(assign), np.asarray(clusters)
    if assign.shape != clusters.shape or assign.ndim != 1:
        raise ValueError(
            f"assign and clusters must be 1-D of equal shape, got {assign.shape}, {clusters.shape}"
        )
    if assign.size == 0:
        raise ValueError("assign is empty")
    out = np.zeros((n_clusters, n_experts), dtype=np.int64)
    np.add.at(out, (clusters, assign), 1)
    return out


def routing_purity(confusion: np.ndarray) -> float:
    """Fraction of samples routed to an expert whose majority cluster is their own.

    Every expert that receives samples is labelled by its majority cluster; purity is the share of
    samples that land on an expert labelled with their cluster (1/C for a router that ignores the
    cluster, 1 for a perfect one).
    """
    conf = np.asarray(confusion, dtype=np.float64)
    check_finite_array("confusion", conf, ndim=2)
    total = conf.sum()
    if total <= 0:
        raise ValueError("confusion holds no samples")
    return float(conf.max(axis=0).sum() / total)


def router_alignment(theta: np.ndarray, task: ClusteredSIMTask) -> np.ndarray:
    """(M, C) cosine between every router row ``Theta_m`` and every cluster mean ``v_c``."""
    check_finite_array("theta", theta, ndim=2)
    norms = np.linalg.norm(theta, axis=1, keepdims=True)
    return (theta @ task.V.T) / np.maximum(norms, 1e-300)


@dataclass(frozen=True)
class OverlapReport:
    """Overlaps and routing of one model on one task (routing fields are None for a vanilla net).

    ``null_overlap`` is ``max_j |u_j . w_null|`` for a direction the label ignores: the level that
    noise alone reaches with the same neurons and training.
    """

    global_overlap: float
    local_overlaps: tuple[float, ...]
    null_overlap: float | None = None
    confusion: tuple[tuple[int, ...], ...] | None = None
    purity: float | None = None
    router_alignment: tuple[tuple[float, ...], ...] | None = None


def overlap_report(
    model: TwoLayerNet | MoE, task: ClusteredSIMTask, *, n_route: int = 4096, rng: np.random.Generator
) -> OverlapReport:
    """Global and local overlaps of every neuron; for a MoE also the top-1 routing confusion on
    ``n_route`` fresh samples, its purity and the router-mean alignment."""
    U = model.neuron_directions()
    g, loc = overlaps(U, task)
    null = None if task.w_null is None else float(np.max(np.abs(U @ task.w_null)))
    if isinstance(model, TwoLayerNet):
        return OverlapReport(g, tuple(float(v) for v in loc), null)
    X, _, c = task.sample(n_route, rng)
    conf = routing_confusion(model.route(X), c, task.n_clusters, model.n_experts)
    align = router_alignment(model.Theta, task)
    return OverlapReport(
        g,
        tuple(float(v) for v in loc),
        null,
        tuple(tuple(int(v) for v in row) for row in conf),
        routing_purity(conf),
        tuple(tuple(float(v) for v in row) for row in align),
    )


def _ridge(Phi: np.ndarray, y: np.ndarray, ridge: float) -> tuple[np.ndarray, float]:
    """Ridge weights and intercept of ``y ~ Phi w + c`` (intercept unpenalised)."""
    mu_x, mu_y = Phi.mean(axis=0), float(y.mean())
    Z = Phi - mu_x
    A = Z.T @ Z + ridge * len(y) * np.eye(Phi.shape[1])
    w = np.linalg.solve(A, Z.T @ (y - mu_y))
    return w, mu_y - float(mu_x @ w)


def ridge_refit(
    model: TwoLayerNet | MoE,
    task: ClusteredSIMTask,
    *,
    n: int,
    ridge: float = 1e-4,
    rng: np.random.Generator,
    assign_fn=None,
) -> None:
    """Refit the second layer(s) by ridge regression on ``n`` fresh samples, features frozen.

    A vanilla net fits all its neurons at once; a MoE fits each expert on the samples its top-1
    router (or ``assign_fn(X, c)``, e.g. an oracle) sends to it. An expert that receives fewer than
    two samples keeps its weights.
    """
    check_positive("n", n, integer=True)
    check_non_negative("ridge", ridge)
    X, y, c = task.sample(n, rng)
    if isinstance(model, TwoLayerNet):
        model.a, model.c0 = _ridge(model.features(X), y, ridge)
        return
    assign = model.route(X) if assign_fn is None else assign_fn(X, c)
    Phi = model.expert_features(X)
    for m in range(model.n_experts):
        idx = np.flatnonzero(assign == m)
        if idx.size >= 2:
            model.a[m], model.c0[m] = _ridge(Phi[idx, m], y[idx], ridge)


def evaluate_mse(
    model: TwoLayerNet | MoE, task: ClusteredSIMTask, *, n: int, rng: np.random.Generator, assign_fn=None
) -> float:
    """Mean squared error on ``n`` fresh samples (top-1 routing, or ``assign_fn(X, c)``)."""
    check_positive("n", n, integer=True)
    X, y, c = task.sample(n, rng)
    if isinstance(model, TwoLayerNet):
        pred = model(X)
    else:
        assign = model.route(X) if assign_fn is None else assign_fn(X, c)
        pred = model.expert_outputs(X)[np.arange(n), assign]
    return float(np.mean((pred - y) ** 2))


def loglog_slope(dims: Sequence[float], counts: Sequence[float]) -> float:
    """Least-squares slope of ``log counts`` against ``log dims`` (NaN if a count is not finite).

    Raises:
        ValueError: fewer than two dimensions, or a non-positive dimension or count.
    """
    x = np.asarray(dims, dtype=np.float64)
    y = np.asarray(counts, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"dims and counts must be 1-D of equal length, got {x.shape}, {y.shape}")
    if x.size < 2 or np.unique(x).size < 2:
        raise ValueError(f"dims must hold at least two distinct values, got {x.tolist()}")
    if not np.isfinite(x).all() or np.any(x <= 0):
        raise ValueError(f"dims must be finite and positive, got {x.tolist()}")
    if not np.isfinite(y).all():
        return math.nan
    if np.any(y <= 0):
        raise ValueError(f"counts must be positive, got {y.tolist()}")
    slope, _ = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope)
