"""Scoring generated drop videos the PisaBench way, for *PISA Experiments: Exploring Physics Post-Training
for Video Diffusion Models by Watching Stuff Drop* (arXiv 2503.09595, Sec. 3.1 and Table 1).

Generated clips are segmented by the frozen prompted segmenter (the paper uses SAM 2 prompted from the
first frame), masks are thresholded at probability 0.5, and every video gets the official L2, Chamfer
and IoU (:func:`icml25.generative.pisa.metrics.pisabench_metrics`), averaged over videos with nanmean.
Physics diagnostic: gravity fitted to the predicted centroid rows of the pre-impact frames (those up
to the simulator's true first impact), reported as the median relative error ``|g_hat - g| / g``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor

from .metrics import fit_gravity, mask_centroids, pisabench_metrics
from .model import as_tensor, segment_video
from .sim import DropClips

__all__ = ["score_videos", "static_copy", "threshold_masks"]


def static_copy(first: Tensor, frames: int) -> Tensor:
    """The control that repeats the first frame ``[B, H, W]`` for all ``frames``."""
    check_finite_tensor("first", first, ndim=3, floating=True)
    if frames < 1:
        raise ValueError(f"frames must be >= 1, got {frames}")
    return first[:, None].expand(-1, frames, -1, -1).clone()


def threshold_masks(videos: np.ndarray, clips: DropClips) -> np.ndarray:
    """A segmenter with nothing learned: pixels above the floor at least as bright as the midpoint of the
    clip's object and background intensities. On clean renders it returns exactly the ground-truth masks
    (a pixel reaches the midpoint iff the object covers at least half of it), so it is an evaluation
    that a generator cannot fool by pleasing the learned segmenter used as the reward."""
    v = np.asarray(videos, dtype=np.float64)
    if v.shape != clips.video.shape:
        raise ValueError(f"videos must have the clips' shape {clips.video.shape}, got {v.shape}")
    out = np.zeros(v.shape, bool)
    for i, m in enumerate(clips.meta):
        mid = 0.5 * (m["obj"] + m["bg"])
        rows = int(m["floor_row"])
        out[i, :, :rows] = v[i, :, :rows] >= mid - 1e-6  # coverage >= 1/2, as the ground truth
    return out


@torch.no_grad()
def score_videos(
    seg: nn.Module, videos: Tensor, clips: DropClips, g: float = 9.81, keep: int = 0
) -> tuple[dict[str, float], dict[str, Any]]:
    """PisaBench metrics of generated ``videos [N, T, H, W]`` against ``clips`` (same first frames).

    Returns ``(metrics, series)``: metrics ``l2``, ``cd``, ``iou`` (nanmean over videos), ``g_err``
    (median relative gravity error over videos with >= 3 pre-impact frames), ``g_hat`` (their median)
    ``l2_thr`` / ``iou_thr`` (the same with :func:`threshold_masks` instead of the learned segmenter) and
    ``empty_frac`` (share of generated frames whose mask is empty); series holds the predicted and
    true centroid rows of the first ``keep`` videos and, per video (same order as ``clips``),
    ``iou_items`` / ``iou_thr_items`` / ``l2_items`` / ``cd_items`` and ``g_err_items`` (the relative
    gravity error ``|g_hat - g| / g`` of each video; NaN where a video's metric is undefined, e.g. a
    mask empty in every frame or fewer than 3 pre-impact frames), the items a paired comparison of
    two generators on the same clips and noise uses.
    """
    check_finite_tensor("videos", videos, ndim=4, floating=True)
    if tuple(videos.shape) != clips.video.shape:
        raise ValueError(f"videos must have the clips' shape {clips.video.shape}, got {tuple(videos.shape)}")
    gt_masks = clips.masks
    logits = segment_video(seg, videos.clamp(0, 1), as_tensor(gt_masks[:, 0]))
    pd_masks = (logits > 0).numpy()
    thr_masks = threshold_masks(videos.numpy(), clips)
    rows: list[dict[str, float]] = []
    g_hats: list[float] = []
    g_err_items = np.full(len(clips), np.nan)
    traj_pd: list[list[float]] = []
    traj_gt: list[list[float]] = []
    thr_rows: list[dict[str, float]] = []
    for i in range(len(clips)):
        rows.append(pisabench_metrics(gt_masks[i], pd_masks[i], clips.fps, clips.fps))
        thr_rows.append(pisabench_metrics(gt_masks[i], thr_masks[i], clips.fps, clips.fps))
        c_pd = mask_centroids(pd_masks[i])[:, 0, 1]
        last = int(math.floor(clips.meta[i]["impact_time"] * clips.fps))
        if last >= 2:
            g_hats.append(fit_gravity(c_pd, clips.fps, clips.px_per_m, last_frame=last))
            g_err_items[i] = abs(g_hats[-1] - g) / g
        if i < keep:
            traj_pd.append([float(v) for v in c_pd])
            traj_gt.append([float(v) for v in mask_centroids(gt_masks[i])[:, 0, 1]])
    gh = np.asarray(g_hats, dtype=np.float64)
    gh_f = gh[np.isfinite(gh)]

    def nanmean(key: str, table: list[dict[str, float]] = rows) -> float:
        vals = np.asarray([r[key] for r in table], dtype=np.float64)
        return float(np.nanmean(vals)) if np.isfinite(vals).any() else float("nan")

    metrics = {
        "l2": nanmean("l2"),
        "cd": nanmean("chamfer_distance"),
        "iou": nanmean("iou"),
        "g_err": float(np.median(np.abs(gh_f - g) / g)) if gh_f.size else float("nan"),
        "g_hat": float(np.median(gh_f)) if gh_f.size else float("nan"),
        "l2_thr": nanmean("l2", thr_rows),
        "iou_thr": nanmean("iou", thr_rows),
        "empty_frac": float(
            (pd_masks[:, 1:].reshape(len(clips), videos.shape[1] - 1, -1).sum(-1) == 0).mean()
        ),
    }
    per_video = {
        "iou_items": np.asarray([r["iou"] for r in rows], dtype=np.float64),
        "iou_thr_items": np.asarray([r["iou"] for r in thr_rows], dtype=np.float64),
        "l2_items": np.asarray([r["l2"] for r in rows], dtype=np.float64),
        "cd_items": np.asarray([r["chamfer_distance"] for r in rows], dtype=np.float64),
        "g_err_items": g_err_items,
    }
    return metrics, {"pred_y": traj_pd, "true_y": traj_gt, **per_video}
