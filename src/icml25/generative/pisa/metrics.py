"""PisaBench trajectory metrics of *PISA Experiments: Exploring Physics Post-Training for Video Diffusion
Models by Watching Stuff Drop* (arXiv 2503.09595, Sec. 3.1 / Table 1), behaving like the official
``eval.py`` and ``utils/metrics.py``, plus the gravity fit used as a physics diagnostic.

Per video (masks ``[F, N, H, W]`` or ``[F, H, W]``, resolution ``R = H``):

* frame alignment: prediction frame ``i`` is compared with ground-truth frame ``floor(i fps_gt / fps_pd)``
  when that index exists; the prediction is cut to the common length (:func:`align_frames`);
* the dropping object: the last object for simulated videos, the object whose highest positive click
  is topmost for real ones (:func:`dropping_object_index`);
* centroid ``c_t`` = mean (x, y) of the mask's pixels (NaN when empty);
* **L2** = nanmean over frames *and both coordinates* of ``|c_gt - c_pd|``, times ``(1/sqrt 2)/R``
  (the per-coordinate absolute difference, not a Euclidean norm);
* **Chamfer** = per frame, mean nearest-neighbour distance from predicted to ground-truth pixels plus
  the reverse (``scipy.spatial.cKDTree``), times ``(1/sqrt 2)/R``, nanmean over frames; a frame where
  either mask is empty gives NaN (as the official code does through an empty tree);
* **IoU** = per frame ``|A and B| / |A or B|``, 1 when both are empty; nanmean over frames.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from icml25.core.validate import check_numeric_array, check_positive

__all__ = [
    "align_frames",
    "mask_centroids",
    "scaled_l2",
    "chamfer",
    "mask_iou",
    "dropping_object_index",
    "pisabench_metrics",
    "fit_gravity",
]

SCALE = 1.0 / math.sqrt(2.0)


def _masks(name: str, m: Any) -> np.ndarray:
    arr = check_numeric_array(name, m)
    arr = np.asarray(arr)
    if arr.ndim not in (3, 4):
        raise ValueError(f"{name} must be [F, H, W] or [F, N, H, W], got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr if arr.ndim == 4 else arr[:, None]


def align_frames(n_gt: int, n_pd: int, gt_fps: float, pd_fps: float) -> tuple[np.ndarray, int]:
    """Ground-truth frame indices for each kept prediction frame, and the number of prediction frames kept.

    Prediction frame ``i`` maps to ``int(i gt_fps / pd_fps)`` while that is ``< n_gt``.
    """
    check_positive("n_gt", n_gt, integer=True)
    check_positive("n_pd", n_pd, integer=True)
    check_positive("gt_fps", gt_fps)
    check_positive("pd_fps", pd_fps)
    idx = [int(i * (gt_fps / pd_fps)) for i in range(n_pd) if int(i * (gt_fps / pd_fps)) < n_gt]
    return np.asarray(idx, dtype=np.int64), min(len(idx), n_pd)


def mask_centroids(masks: Any) -> np.ndarray:
    """``[F, N, 2]`` mean (x, y) = (column, row) of each mask's pixels; NaN where a mask is empty."""
    m = _masks("masks", masks).astype(bool)
    F_, N = m.shape[:2]
    out = np.full((F_, N, 2), np.nan)
    for i in range(F_):
        for j in range(N):
            ys, xs = np.nonzero(m[i, j])
            if len(xs):
                out[i, j] = xs.mean(), ys.mean()
    return out


def scaled_l2(c_gt: Any, c_pd: Any, resolution: int) -> float:
    """nanmean of ``|c_gt - c_pd|`` over every entry, times ``(1/sqrt 2)/resolution``."""
    a = np.asarray(check_numeric_array("c_gt", c_gt), dtype=np.float64)
    b = np.asarray(check_numeric_array("c_pd", c_pd), dtype=np.float64)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"c_gt and c_pd must have one non-empty shape, got {a.shape} and {b.shape}")
    check_positive("resolution", resolution, integer=True)
    diff = np.abs(a - b)
    if np.isnan(diff).all():
        return float("nan")
    return float(np.nanmean(diff) * SCALE / resolution)


def chamfer(gt: Any, pd: Any, resolution: int) -> float:
    """Symmetric Chamfer distance of the masks' pixel sets per frame, scaled, nanmean over frames."""
    from scipy.spatial import cKDTree

    a, b = _masks("gt", gt).astype(bool), _masks("pd", pd).astype(bool)
    if a.shape != b.shape:
        raise ValueError(f"gt and pd must have the same shape, got {a.shape} and {b.shape}")
    check_positive("resolution", resolution, integer=True)
    vals = []
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            pa = np.argwhere(a[i, j]).astype(np.float32)
            pb = np.argwhere(b[i, j]).astype(np.float32)
            if len(pa) == 0 or len(pb) == 0:
                vals.append(np.nan)
                continue
            d_ab, _ = cKDTree(pa).query(pb)
            d_ba, _ = cKDTree(pb).query(pa)
            vals.append((d_ab.mean() + d_ba.mean()) * SCALE / resolution)
    arr = np.asarray(vals)
    return float("nan") if np.isnan(arr).all() else float(np.nanmean(arr))


def mask_iou(gt: Any, pd: Any) -> float:
    """Per-frame IoU (1 when both masks are empty), nanmean over frames and objects."""
    a, b = _masks("gt", gt).astype(bool), _masks("pd", pd).astype(bool)
    if a.shape != b.shape:
        raise ValueError(f"gt and pd must have the same shape, got {a.shape} and {b.shape}")
    vals = []
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            inter = np.logical_and(a[i, j], b[i, j]).sum()
            union = np.logical_or(a[i, j], b[i, j]).sum()
            vals.append(1.0 if union == 0 else inter / union)
    return float(np.mean(vals))


def dropping_object_index(points: Sequence[dict[str, Any]] | None = None) -> int:
    """``-1`` (the last object) for simulated videos; for real ones (``points`` = per object
    ``{"positive": [[x, y], ...]}``) the object whose topmost positive click has the smallest y."""
    if points is None:
        return -1
    if len(points) == 0:
        raise ValueError("points is empty")
    best, best_y = 0, math.inf
    for i, p in enumerate(points):
        pos = p.get("positive") if isinstance(p, dict) else None
        if not pos:
            raise ValueError(f"points[{i}] must hold a non-empty 'positive' list of [x, y] clicks")
        y = min(float(q[1]) for q in pos)
        if y < best_y:
            best, best_y = i, y
    return best


def pisabench_metrics(
    gt_masks: Any, pd_masks: Any, gt_fps: float, pd_fps: float, drop_idx: int = -1
) -> dict[str, float]:
    """``{"l2", "chamfer_distance", "iou"}`` of one video (masks ``[F, N, H, W]`` or ``[F, H, W]``)."""
    gt, pd = _masks("gt_masks", gt_masks), _masks("pd_masks", pd_masks)
    if gt.shape[2:] != pd.shape[2:]:
        raise ValueError(
            f"gt_masks and pd_masks must have the same frame size, got {gt.shape} and {pd.shape}"
        )
    idx, _ = align_frames(gt.shape[0], pd.shape[0], gt_fps, pd_fps)
    gt = gt[idx]
    pd = pd[: min(len(gt), len(pd))]
    if not -gt.shape[1] <= drop_idx < gt.shape[1] or not -pd.shape[1] <= drop_idx < pd.shape[1]:
        raise ValueError(f"drop_idx {drop_idx} out of range for {gt.shape[1]} / {pd.shape[1]} objects")
    gt, pd = gt[:, drop_idx : drop_idx + 1 or None], pd[:, drop_idx : drop_idx + 1 or None]
    res = int(gt.shape[2])
    return {
        "l2": scaled_l2(mask_centroids(gt), mask_centroids(pd), res),
        "chamfer_distance": chamfer(gt, pd, res),
        "iou": mask_iou(gt, pd),
    }


def fit_gravity(centroids_y: Any, fps: float, px_per_m: float, *, last_frame: int | None = None) -> float:
    """Gravity (m/s^2) from a least-squares parabola ``y = a + b t + c t^2`` through the centroid rows
    of frames ``0..last_frame`` (the pre-impact part): ``g_hat = 2 c / px_per_m``. NaN frames are
    dropped; fewer than 3 finite points give NaN."""
    y = np.asarray(check_numeric_array("centroids_y", centroids_y), dtype=np.float64)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"centroids_y must be a non-empty 1-D array, got shape {y.shape}")
    check_positive("fps", fps)
    check_positive("px_per_m", px_per_m)
    end = len(y) if last_frame is None else int(last_frame) + 1
    t = np.arange(len(y))[:end] / fps
    y = y[:end]
    ok = np.isfinite(y)
    if ok.sum() < 3:
        return float("nan")
    c = np.polyfit(t[ok], y[ok], 2)[0]
    return float(2 * c / px_per_m)
