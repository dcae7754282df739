"""PISA Experiments: Exploring Physics Post-Training for Video Diffusion Models by Watching Stuff Drop
(Chenyu Li, Oscar Michel, Xichen Pan, Sainan Liu, Mike Roberts, Saining Xie; ICML 2025;
https://arxiv.org/abs/2503.09595; official code https://github.com/vision-x-nyu/pisa-experiments, not a
dependency).

Video generators fail at a basic physical task: from a first frame of an object held in mid-air,
generate it falling. The paper post-trains an image-to-video diffusion model (Open-Sora v1.2) in two
stages, supervised fine-tuning on simulated drops (PSFT) and object-reward optimisation (ORO) with
differentiable rewards back-propagated through the sampler, and scores it with mask-based trajectory
metrics (PisaBench: centroid L2, Chamfer distance, IoU).

Implements, on a toy scale: a 2-D drop simulator with known gravity and generic-motion clips
(``sim.py``), the PisaBench metrics and a gravity fit (``metrics.py``), a tiny first-frame-conditioned
rectified-flow video generator, a prompted segmenter, PSFT, the segmentation and trajectory rewards and
ORO through a differentiable Euler sampler (``model.py``), scoring of generated videos (``bench.py``)
and the claim check (``check.py``).

    from icml25.generative.pisa import DropSimulator, SimConfig, TinyI2V, StageConfig, train_flow, generate
    sim = DropSimulator(SimConfig(size=16, frames=10))
    clips = sim.sample(256, "seen", seed=0)
    model = TinyI2V(frames=10)
    train_flow(model, as_tensor(clips.video), StageConfig(steps=100))      # PSFT
    video = generate(model, as_tensor(clips.video[:4, 0]), steps=8)         # [4, 10, 16, 16]
"""

from __future__ import annotations

from .bench import score_videos, static_copy, threshold_masks
from .metrics import (
    align_frames,
    chamfer,
    dropping_object_index,
    fit_gravity,
    mask_centroids,
    mask_iou,
    pisabench_metrics,
    scaled_l2,
)
from .model import (
    Reward,
    SegReward,
    StageConfig,
    TinyI2V,
    TinySeg,
    TrajectoryReward,
    as_tensor,
    generate,
    oro,
    rectified_flow_loss,
    segment_video,
    soft_iou,
    train_flow,
    train_tinyseg,
)
from .sim import (
    DOMAINS,
    SHAPES,
    DropClips,
    DropSimulator,
    SimConfig,
    SimDomain,
    generic_motion_clips,
    render_frame,
    simulate_drop,
)

__all__ = [
    "DOMAINS",
    "SHAPES",
    "DropClips",
    "DropSimulator",
    "SimConfig",
    "SimDomain",
    "generic_motion_clips",
    "render_frame",
    "simulate_drop",
    "align_frames",
    "chamfer",
    "dropping_object_index",
    "fit_gravity",
    "mask_centroids",
    "mask_iou",
    "pisabench_metrics",
    "scaled_l2",
    "Reward",
    "SegReward",
    "StageConfig",
    "TinyI2V",
    "TinySeg",
    "TrajectoryReward",
    "as_tensor",
    "generate",
    "oro",
    "rectified_flow_loss",
    "segment_video",
    "soft_iou",
    "train_flow",
    "train_tinyseg",
    "score_videos",
    "static_copy",
    "threshold_masks",
]
