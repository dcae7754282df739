"""L-Diffusion: Laplace Diffusion for Efficient Pathology Image Segmentation (ICML 2025).

OpenReview 2veJwf07RN (https://openreview.net/forum?id=2veJwf07RN; no arXiv version); official code
https://github.com/Lweihan/LDiffusion (not a dependency). A denoiser trained with Laplace noise gives, at
a few diffusion steps, a sequence of reconstructions whose grayscale values form a vector per pixel;
supervised pixel contrastive learning refines the denoiser so these vectors separate the classes, and a
segmentation network trained with a Dice loss classifies them.

Implements: SynthPath procedural H&E-like tiles with long-tailed tissue classes (``data.py``), the
feature extractor, contrastive refinement, Dice segmentation and metrics (``model.py``, built on
:mod:`icml25.nn.diffusion`), and the claim check (``check.py``).

    from icml25.generative.l_diffusion import LDiffusion, LDiffusionConfig, SynthPathConfig, make_synthpath
    from icml25.nn.diffusion import SmallUNet
    data = make_synthpath(SynthPathConfig(seed=0))
    ld = LDiffusion(SmallUNet(3, 3, (32, 64)), LDiffusionConfig(noise="laplace"))
    ld.pretrain(torch.from_numpy(data.unlabeled), steps=400)
    ld.contrastive_finetune(torch.from_numpy(data.train_x), torch.from_numpy(data.train_y), steps=100)
    feats = ld.pixel_features(torch.from_numpy(data.test_x))    # [N, 5, H, W]
"""

from __future__ import annotations

from .data import TISSUE_CLASSES, TISSUE_SHARES, SynthPath, SynthPathConfig, make_synthpath, render_tile
from .model import (
    GRAY_WEIGHTS,
    LDiffusion,
    LDiffusionConfig,
    dice_loss,
    per_image_scores,
    pixel_infonce,
    predict_labels,
    seg_loss,
    seg_metrics,
    to_gray,
    train_segmenter,
)

__all__ = [
    "TISSUE_CLASSES",
    "TISSUE_SHARES",
    "SynthPath",
    "SynthPathConfig",
    "make_synthpath",
    "render_tile",
    "GRAY_WEIGHTS",
    "LDiffusion",
    "LDiffusionConfig",
    "dice_loss",
    "per_image_scores",
    "pixel_infonce",
    "predict_labels",
    "seg_loss",
    "seg_metrics",
    "to_gray",
    "train_segmenter",
]
