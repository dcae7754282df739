"""Parameter counting, the unit every size-matched baseline comparison is stated in."""

from __future__ import annotations

from torch import nn

__all__ = ["count_parameters"]


def count_parameters(module: nn.Module, *, trainable_only: bool = True) -> int:
    """Number of (by default trainable) scalar parameters of ``module``; shared tensors count once."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)
