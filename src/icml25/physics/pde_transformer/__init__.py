"""PDE-Transformer: Efficient and Versatile Transformers for Physics Simulations (ICML 2025).

Holzschuh, Liu, Kohl, Thuerey; https://arxiv.org/abs/2505.24717; reference implementation
https://github.com/tum-pbs/pde-transformer (PyPI ``pdetransformer``, not a dependency).

A transformer surrogate for time-dependent PDEs on regular 2D grids: patch tokens, shifted-window
Swin-v2 attention, a U-shaped multi-scale hierarchy and adaLN conditioning on the PDE type, in a
mixed-channel (:class:`PDETransformer`) and a separate-channel (:class:`PDETransformerSC`) layout;
compared here with a parameter-matched DiT (:class:`DiTBaseline`) on in-package simulations
(:mod:`icml25.data.pde`).

Implements: the MC and SC architectures (``model.py``), the DiT baseline (``dit.py``), next-step
training, nRMSE and autoregressive rollout (``training.py``), multi-family data (``data.py``), the claim
check (``check.py``) and the runtime-scaling benchmark (``bench.py``).

    from icml25.physics.pde_transformer import PDETransformer, PDETransformerConfig
    model = PDETransformer(PDETransformerConfig.preset("S", in_channels=2, out_channels=2))
    y = model(x, pde_label=labels)      # x: [B, 2, H, W] -> [B, 2, H, W], H, W multiples of 128
"""

from __future__ import annotations

from .data import MultiPDEData, make_multi_pde_data
from .dit import DiTBaseline, DiTConfig, match_dit_width
from .model import PRESETS, PDETransformer, PDETransformerConfig, PDETransformerSC
from .training import (
    CopyInput,
    FittedDamping,
    ResidualSurrogate,
    TrainConfig,
    evaluate,
    nrmse,
    rollout,
    train_flops_per_sample,
    train_next_step,
)

__all__ = [
    "PRESETS",
    "CopyInput",
    "DiTBaseline",
    "DiTConfig",
    "FittedDamping",
    "MultiPDEData",
    "PDETransformer",
    "PDETransformerConfig",
    "PDETransformerSC",
    "ResidualSurrogate",
    "TrainConfig",
    "evaluate",
    "make_multi_pde_data",
    "match_dit_width",
    "nrmse",
    "rollout",
    "train_flops_per_sample",
    "train_next_step",
]
