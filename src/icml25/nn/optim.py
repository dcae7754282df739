"""Optimiser parameter groups and the one learning-rate schedule every training run uses.

* Weight decay on matrices only (as in nanoGPT's ``configure_optimizers`` and the GPT-2/3 recipes):
  parameters with ≥ 2 dimensions (linear and convolution weights, embeddings) decay; biases, norm
  gains and other vectors do not.
* Linear warm-up then cosine decay (Loshchilov & Hutter, *SGDR*, ICLR 2017, without restarts)
  with an optional floor: for step s (0-based) of S, warm-up W, peak η and floor η₀,

      η(s) = η₀ + (η − η₀)·(s + 1)/W                       for s < W,
      η(s) = η₀ + (η − η₀)·½(1 + cos(π·min(1, (s − W)/(S − W))))   otherwise.

  With η₀ = 0 the warm-up starts from η/W and the decay ends at 0; with η₀ > 0 both start and end
  at the floor (TarFlow's recipe).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

import torch
from torch import nn

from icml25.core.validate import check_non_negative, check_positive

__all__ = ["param_groups", "warmup_cosine", "make_optimizer"]


def param_groups(
    params: nn.Module | Iterable[nn.Parameter], weight_decay: float, *, decay_vectors: bool = False
) -> list[dict[str, Any]]:
    """Two AdamW groups: matrices (ndim ≥ 2) with ``weight_decay``, the rest with 0.

    Frozen parameters (``requires_grad=False``) are left out. With ``decay_vectors`` every
    parameter decays (one group).
    """
    check_non_negative("weight_decay", weight_decay)
    plist = list(params.parameters() if isinstance(params, nn.Module) else params)
    plist = [p for p in plist if p.requires_grad]
    if decay_vectors:
        return [{"params": plist, "weight_decay": weight_decay}]
    return [
        {"params": [p for p in plist if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in plist if p.ndim < 2], "weight_decay": 0.0},
    ]


def warmup_cosine(
    step: int, *, total_steps: int, warmup_steps: int, peak: float, floor: float = 0.0
) -> float:
    """The learning rate at 0-based ``step`` (module docstring formula)."""
    check_positive("total_steps", total_steps, integer=True)
    check_non_negative("warmup_steps", warmup_steps, integer=True)
    if not 0 <= floor <= peak:
        raise ValueError(f"need 0 <= floor <= peak, got floor={floor}, peak={peak}")
    if step < warmup_steps:
        return floor + (peak - floor) * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * min(progress, 1.0)))


OptimizerName = Literal["adamw", "adam", "sgd"]


def make_optimizer(
    groups: list[dict[str, Any]],
    name: OptimizerName = "adamw",
    *,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    fused: bool = False,
) -> torch.optim.Optimizer:
    """AdamW (decoupled decay), Adam (decay as L2, as ``torch.optim.Adam``) or SGD over ``groups``."""
    check_positive("lr", lr)
    extra: dict[str, Any] = {"fused": True} if fused else {}
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=lr, betas=betas, **extra)
    if name == "adam":
        return torch.optim.Adam(groups, lr=lr, betas=betas, **extra)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr)
    raise ValueError(f"optimizer must be 'adamw', 'adam' or 'sgd', got {name!r}")
