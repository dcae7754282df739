"""The tiny image-to-video generator, its post-training stages and the object rewards of *PISA Experiments:
Exploring Physics Post-Training for Video Diffusion Models by Watching Stuff Drop* (arXiv 2503.09595).

* :class:`TinyI2V` - a first-frame-conditioned rectified-flow video generator in pixel space, the
  stand-in for Open-Sora v1.2 (Sec. 4). The ``T - 1`` frames after the first are generated jointly as
  the channels of one :class:`icml25.nn.diffusion.SmallUNet`, with the clean first frame concatenated
  as an extra channel: the first frame is never noised and never in the loss (Open-Sora's mask
  strategy "0" used by the paper for image-to-video).
* training loss: :func:`rectified_flow_loss` = :func:`icml25.nn.flow_matching.flow_matching_loss` with
  logit-normal times (Open-Sora's rectified-flow scheduler); pre-training on generic motion and PSFT
  (Sec. 4.2, physics supervised fine-tuning) both use :func:`train_flow` (``icml25.nn.fit`` with EMA
  and gradient clipping, as in the paper's PSFT recipe: EMA 0.99, clip 1.0).
* :func:`generate` - Euler sampling (``icml25.nn.diffusion.flow_euler_sample``), optionally keeping
  the autograd graph through every step (the paper's ORO back-propagates through all sampling steps).
* :class:`TinySeg` - a frozen segmenter prompted with the first-frame mask, standing in for SAM 2's
  video predictor initialised with the first-frame masks (Sec. 3.1 evaluation, Sec. 4.3 reward).
* rewards (Sec. 4.3, object reward optimisation, ORO): :class:`SegReward`, the paper's segmentation
  reward ``1 - softIoU(sigmoid(seg(gen)), gt)`` with ``IoU = sum pq / (sum p + sum q - sum pq + 1e-6)``;
  :class:`TrajectoryReward`, an L1 between soft centroids (our trajectory analogue of the flow reward).
  A reward is any ``reward(video [B, T, H, W], gt_masks [B, T, H, W]) -> scalar loss``, so SAM 2, RAFT
  or depth adapters can replace these where such models exist.
* :func:`oro` - reward fine-tuning: sample with gradients, score, back-propagate into the generator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.progress import ProgressFn
from icml25.core.validate import check_fields, check_finite_tensor, check_positive
from icml25.nn.diffusion import EMA, SmallUNet, flow_euler_sample
from icml25.nn.flow_matching import flow_matching_loss
from icml25.nn.train import FitConfig, FitHistory, fit

__all__ = [
    "TinyI2V",
    "TinySeg",
    "StageConfig",
    "rectified_flow_loss",
    "generate",
    "train_flow",
    "train_tinyseg",
    "segment_video",
    "soft_iou",
    "SegReward",
    "TrajectoryReward",
    "Reward",
    "oro",
    "as_tensor",
]

Reward = Callable[[Tensor, Tensor], Tensor]


def _check_video(name: str, video: Any, size_of: nn.Module | None = None) -> None:
    check_finite_tensor(name, video, ndim=4, floating=True)
    if (
        size_of is not None
        and getattr(size_of, "frames", None) is not None
        and video.shape[1] != size_of.frames
    ):
        raise ValueError(f"{name} must have {size_of.frames} frames (dim 1), got shape {tuple(video.shape)}")


class TinyI2V(nn.Module):
    """Velocity net ``v(x_t [B, T-1, H, W], t [B], first [B, H, W]) -> [B, T-1, H, W]``, pixels in [-1, 1].

    Args:
        frames: clip length ``T`` (the first frame is the condition).
        channels: SmallUNet widths per level (``H`` must be divisible by ``2^(levels-1)``).
    """

    def __init__(self, frames: int, channels: Sequence[int] = (32, 64, 64)) -> None:
        super().__init__()
        check_positive("frames", frames, integer=True)
        if frames < 2:
            raise ValueError(f"frames must be >= 2, got {frames}")
        self.frames = int(frames)
        self.unet = SmallUNet(frames, frames - 1, channels)

    def forward(self, x_t: Tensor, t: Tensor, cond: Tensor) -> Tensor:
        if x_t.ndim != 4 or x_t.shape[1] != self.frames - 1:
            raise ValueError(f"x_t must be [B, {self.frames - 1}, H, W], got {tuple(x_t.shape)}")
        if not isinstance(cond, Tensor) or cond.shape != (x_t.shape[0], *x_t.shape[2:]):
            raise ValueError(f"cond must be the first frame [B, H, W] = {(x_t.shape[0], *x_t.shape[2:])}")
        return self.unet(torch.cat([x_t, cond[:, None]], dim=1), t * 1000.0, None)


class TinySeg(nn.Module):
    """Prompted segmenter: ``(frames [B, H, W] in [0, 1], first-frame mask [B, H, W]) -> logits``."""

    def __init__(self, channels: Sequence[int] = (16, 32)) -> None:
        super().__init__()
        self.unet = SmallUNet(2, 1, channels, time=False)

    def forward(self, frames: Tensor, prompt: Tensor) -> Tensor:
        check_finite_tensor("frames", frames, ndim=3, floating=True)
        if prompt.shape != frames.shape:
            raise ValueError(
                f"prompt must have the frames' shape {tuple(frames.shape)}, got {tuple(prompt.shape)}"
            )
        return self.unet(torch.stack([frames, prompt.to(frames.dtype)], dim=1))[:, 0]


@dataclass(frozen=True)
class StageConfig:
    """One training stage: optimiser steps, batch, learning rate, EMA decay, gradient clip.

    The EMA decay after step ``k`` is ``min(ema, (1 + k) / (10 + k))`` (a warm-up, as in diffusers'
    ``EMAModel``); ``ema = 0`` trains without an average."""

    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    ema: float = 0.99
    grad_clip: float = 1.0
    warmup_steps: int = 0

    def __post_init__(self) -> None:
        check_fields(
            self, positive_int=("steps", "batch_size"), positive=("lr",), non_negative=("grad_clip",)
        )
        check_fields(self, non_negative_int=("warmup_steps",))
        if not 0 <= self.ema < 1:
            raise ValueError(f"StageConfig.ema must lie in [0, 1), got {self.ema}")

    def fit_config(self) -> FitConfig:
        return FitConfig(
            steps=self.steps,
            batch_size=self.batch_size,
            lr=self.lr,
            schedule="constant",
            warmup_steps=self.warmup_steps,
            optimizer="adam",
            grad_clip=self.grad_clip,
            sampling="shuffle_drop_last" if self.batch_size > 1 else "shuffle",
        )


def rectified_flow_loss(model: nn.Module, video: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """Velocity loss on frames ``1..T-1`` given the clean first frame; ``video [B, T, H, W]`` in [0, 1]."""
    _check_video("video", video, model)
    x1 = video[:, 1:] * 2 - 1
    return flow_matching_loss(
        model, x1, cond=video[:, 0] * 2 - 1, generator=generator, time_kind="logit_normal"
    )


def generate(
    model: nn.Module,
    first: Tensor,
    *,
    steps: int = 8,
    generator: torch.Generator | None = None,
    noise: Tensor | None = None,
    differentiable: bool = False,
) -> Tensor:
    """A clip ``[B, T, H, W]`` (values around [0, 1]) whose frame 0 is ``first [B, H, W]``; Euler sampling."""
    check_finite_tensor("first", first, ndim=3, floating=True)
    check_positive("steps", steps, integer=True)
    frames = int(getattr(model, "frames", 0))
    if frames < 2:
        raise ValueError("model must expose its clip length as .frames (>= 2)")
    shape = (first.shape[0], frames - 1, *first.shape[1:])
    if noise is None:
        noise = torch.randn(shape, generator=generator, dtype=first.dtype)
    elif noise.shape != shape:
        raise ValueError(f"noise must have shape {shape}, got {tuple(noise.shape)}")
    x = flow_euler_sample(model, noise, steps=steps, cond=first * 2 - 1, differentiable=differentiable)
    return torch.cat([first[:, None], (x + 1) / 2], dim=1)


def _with_ema(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, Any, torch.Generator], Tensor],
    data: Any,
    cfg: StageConfig,
    seed: int,
    progress: ProgressFn | None,
) -> FitHistory:
    # with the warm-up min(decay, (1 + k) / (10 + k)) at step k: over a few hundred steps a fixed 0.99
    # would keep a visible share of the starting (e.g. random) weights in the average
    ema = EMA(model, cfg.ema, warmup=True) if cfg.ema > 0 else None

    def post(m: nn.Module, step: int) -> None:
        if ema is not None:
            ema.update(m)

    hist = fit(model, loss_fn, data, cfg.fit_config(), seed=seed, post_step=post, progress=progress)
    if ema is not None:
        ema.copy_to(model)
    model.eval()
    return hist


def train_flow(
    model: nn.Module, videos: Tensor, cfg: StageConfig, *, seed: int = 0, progress: ProgressFn | None = None
) -> FitHistory:
    """Rectified-flow training (pre-training or PSFT) on ``videos [N, T, H, W]``; keeps the EMA weights."""
    _check_video("videos", videos, model)

    def loss_fn(m: nn.Module, batch: Tensor, gen: torch.Generator) -> Tensor:
        return rectified_flow_loss(m, batch, gen)

    return _with_ema(model, loss_fn, videos, cfg, seed, progress)


def _blur(x: Tensor) -> Tensor:
    k = torch.tensor([0.25, 0.5, 0.25], dtype=x.dtype)
    k2 = (k[:, None] * k[None, :])[None, None]
    return F.conv2d(F.pad(x[:, None], (1, 1, 1, 1), mode="replicate"), k2)[:, 0]


def train_tinyseg(
    seg: TinySeg,
    frames: Tensor,
    prompts: Tensor,
    targets: Tensor,
    cfg: StageConfig,
    *,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> FitHistory:
    """Fit the segmenter with BCE on ``(frame, first-frame mask) -> mask`` triples (``[M, H, W]`` each).

    Frames are augmented with a random blur mix and pixel noise, so the frozen segmenter also reads the
    softer frames a small generator produces."""
    check_finite_tensor("frames", frames, ndim=3, floating=True)
    if prompts.shape != frames.shape or targets.shape != frames.shape:
        raise ValueError("prompts and targets must have the frames' shape")

    def loss_fn(m: nn.Module, batch: tuple[Tensor, ...], gen: torch.Generator) -> Tensor:
        x, p, y = batch
        a = torch.rand(x.shape[0], 1, 1, generator=gen)
        x = (1 - a) * x + a * _blur(x)
        x = x + 0.04 * torch.rand(x.shape[0], 1, 1, generator=gen) * torch.randn(x.shape, generator=gen)
        return F.binary_cross_entropy_with_logits(m(x, p), y.float())

    cfg = StageConfig(cfg.steps, cfg.batch_size, cfg.lr, ema=0.0, grad_clip=cfg.grad_clip)
    hist = _with_ema(seg, loss_fn, (frames, prompts.float(), targets.float()), cfg, seed, progress)
    seg.requires_grad_(False)
    return hist


def segment_video(seg: nn.Module, video: Tensor, first_mask: Tensor) -> Tensor:
    """Mask logits ``[B, T, H, W]`` of every frame of ``video``, prompted by ``first_mask [B, H, W]``."""
    check_finite_tensor("video", video, ndim=4, floating=True)
    B, T, H, W = video.shape
    if tuple(first_mask.shape) != (B, H, W):
        raise ValueError(f"first_mask must be [B, H, W] = {(B, H, W)}, got {tuple(first_mask.shape)}")
    prompt = first_mask.to(video.dtype)[:, None].expand(B, T, H, W).reshape(B * T, H, W)
    return seg(video.reshape(B * T, H, W), prompt).reshape(B, T, H, W)


def soft_iou(p: Tensor, q: Tensor) -> Tensor:
    """``sum pq / (sum p + sum q - sum pq + 1e-6)`` over the last two axes."""
    if p.shape != q.shape:
        raise ValueError(f"p and q must have one shape, got {tuple(p.shape)} and {tuple(q.shape)}")
    inter = (p * q).sum((-2, -1))
    return inter / (p.sum((-2, -1)) + q.sum((-2, -1)) - inter + 1e-6)


class SegReward:
    """ORO(Seg): ``mean_t (1 - softIoU(sigmoid(seg(gen_t | gt_0)), gt_t))`` over frames ``1..T-1``."""

    def __init__(self, seg: nn.Module) -> None:
        self.seg = seg

    def __call__(self, video: Tensor, gt_masks: Tensor) -> Tensor:
        _check_video("video", video)
        if gt_masks.shape != video.shape:
            raise ValueError(
                f"gt_masks must have the video's shape {tuple(video.shape)}, got {tuple(gt_masks.shape)}"
            )
        gt = gt_masks.to(video.dtype)
        p = torch.sigmoid(segment_video(self.seg, video, gt[:, 0]))
        return (1 - soft_iou(p[:, 1:], gt[:, 1:])).mean()


class TrajectoryReward:
    """ORO(Traj): mean ``|c_soft(gen_t) - c(gt_t)| / H`` per coordinate (soft centroids of sigmoid(seg))."""

    def __init__(self, seg: nn.Module) -> None:
        self.seg = seg

    @staticmethod
    def centroids(p: Tensor) -> Tensor:
        H, W = p.shape[-2:]
        ys = torch.arange(H, dtype=p.dtype)[:, None]
        xs = torch.arange(W, dtype=p.dtype)[None, :]
        mass = p.sum((-2, -1)).clamp_min(1e-6)
        return torch.stack([(p * xs).sum((-2, -1)) / mass, (p * ys).sum((-2, -1)) / mass], dim=-1)

    def __call__(self, video: Tensor, gt_masks: Tensor) -> Tensor:
        _check_video("video", video)
        if gt_masks.shape != video.shape:
            raise ValueError(
                f"gt_masks must have the video's shape {tuple(video.shape)}, got {tuple(gt_masks.shape)}"
            )
        gt = gt_masks.to(video.dtype)
        p = torch.sigmoid(segment_video(self.seg, video, gt[:, 0]))
        err = (self.centroids(p[:, 1:]) - self.centroids(gt[:, 1:])).abs()
        return err.mean() / video.shape[-2]


def oro(
    model: nn.Module,
    videos: Tensor,
    masks: Tensor,
    reward: Reward,
    cfg: StageConfig,
    *,
    sample_steps: int = 8,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> FitHistory:
    """Object reward optimisation: each step generates clips from the batch's first frames with the
    autograd graph kept through all ``sample_steps`` Euler steps, scores them with ``reward`` against the
    simulated ground-truth masks and takes a clipped Adam step; the EMA weights are left in ``model``."""
    _check_video("videos", videos, model)
    if masks.shape != videos.shape:
        raise ValueError(f"masks must have the videos' shape {tuple(videos.shape)}, got {tuple(masks.shape)}")
    check_positive("sample_steps", sample_steps, integer=True)

    def loss_fn(m: nn.Module, batch: tuple[Tensor, Tensor], gen: torch.Generator) -> Tensor:
        v, mk = batch
        out = generate(m, v[:, 0], steps=sample_steps, generator=gen, differentiable=True)
        return reward(out, mk)

    return _with_ema(model, loss_fn, (videos, masks.float()), cfg, seed, progress)


def as_tensor(x: np.ndarray) -> Tensor:
    """float32 tensor of a numpy array (masks become 0/1 floats)."""
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
