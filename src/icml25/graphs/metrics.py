"""Clustering metrics for node clustering: Hungarian accuracy, NMI, ARI, macro-F1, edge homophily.

Cluster ids are arbitrary, so accuracy and F1 first match predicted clusters to classes one-to-one by
the Hungarian algorithm on the contingency table (``scipy.optimize.linear_sum_assignment``); NMI
(arithmetic normalisation) and ARI come from scikit-learn and need no matching. Unmatched predicted
clusters (more clusters than classes) count as wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from icml25.core.validate import check_finite_array, check_positive

__all__ = ["hungarian_match", "cluster_accuracy", "clustering_metrics", "edge_homophily"]


def _labels(name: str, values: Any) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    arr = np.asarray(values)
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must hold integer labels, got dtype {arr.dtype}")
    check_finite_array(name, arr, ndim=1)
    if arr.min() < 0:
        raise ValueError(f"{name} must hold labels >= 0, got min {arr.min()}")
    return arr.astype(np.int64)


def _pair(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    t, p = _labels("y_true", y_true), _labels("y_pred", y_pred)
    if t.shape != p.shape:
        raise ValueError(f"y_true and y_pred must have the same shape, got {t.shape} and {p.shape}")
    return t, p


def hungarian_match(y_true: Any, y_pred: Any) -> dict[int, int]:
    """The one-to-one map predicted cluster -> class maximising the number of agreeing nodes.

    Args:
        y_true: ``[n]`` integer classes; y_pred: ``[n]`` integer cluster ids.
    """
    from scipy.optimize import linear_sum_assignment

    t, p = _pair(y_true, y_pred)
    table = np.zeros((p.max() + 1, t.max() + 1), dtype=np.int64)
    np.add.at(table, (p, t), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return {int(r): int(c) for r, c in zip(rows, cols, strict=True)}


def _relabel(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    mapping = hungarian_match(t, p)
    out = np.full_like(p, -1)
    for r, c in mapping.items():
        out[p == r] = c
    return out


def cluster_accuracy(y_true: Any, y_pred: Any) -> float:
    """Share of nodes whose cluster maps to their class under the Hungarian matching (ACC)."""
    t, p = _pair(y_true, y_pred)
    return float((_relabel(t, p) == t).mean())


def clustering_metrics(y_true: Any, y_pred: Any) -> dict[str, float]:
    """``{"acc", "nmi", "ari", "f1"}`` of a clustering; ``f1`` is macro-F1 over classes after matching."""
    from sklearn.metrics import adjusted_rand_score, f1_score, normalized_mutual_info_score

    t, p = _pair(y_true, y_pred)
    mapped = _relabel(t, p)
    return {
        "acc": float((mapped == t).mean()),
        "nmi": float(normalized_mutual_info_score(t, p)),
        "ari": float(adjusted_rand_score(t, p)),
        "f1": float(f1_score(t, mapped, labels=np.unique(t), average="macro", zero_division=0)),
    }


def edge_homophily(edge_index: torch.Tensor, y: Any, *, num_nodes: int | None = None) -> float:
    """Share of (directed) edges whose endpoints share a class; NaN for a graph without edges."""
    if not isinstance(edge_index, torch.Tensor) or edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(
            f"edge_index must be a [2, m] tensor, got {getattr(edge_index, 'shape', edge_index)}"
        )
    labels = _labels("y", y)
    if num_nodes is not None:
        check_positive("num_nodes", num_nodes, integer=True)
    if edge_index.numel() == 0:
        return float("nan")
    if int(edge_index.max()) >= len(labels) or int(edge_index.min()) < 0:
        raise ValueError(f"edge_index refers to nodes outside y (length {len(labels)})")
    src, dst = edge_index.numpy()
    return float((labels[src] == labels[dst]).mean())
