"""Parameter counting and size matching, the unit every size-matched baseline comparison is stated in.

:func:`match_width` finds the width of a baseline whose parameter count is closest to a target
(ours), building candidate models on the ``meta`` device: no memory, no random numbers drawn.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from icml25.core.validate import check_positive

__all__ = ["count_parameters", "match_width"]


def count_parameters(module: nn.Module, *, trainable_only: bool = True) -> int:
    """Number of (by default trainable) scalar parameters of ``module``; shared tensors count once."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def match_width(
    build: Callable[[int], nn.Module],
    target_params: int,
    *,
    step: int = 1,
    max_width: int = 1 << 16,
    tolerance: float = 0.1,
    trainable_only: bool = False,
) -> int:
    """The width ``w`` (a multiple of ``step``) whose ``build(w)`` has the parameter count closest to
    ``target_params``.

    The count must grow with the width (true of every width knob here); bisection finds the
    crossing, and the closer of its two neighbours wins (the smaller on a tie).

    Raises:
        ValueError: no width up to ``max_width`` comes within ``tolerance`` (relative) of the target.
    """
    check_positive("target_params", target_params, integer=True)
    check_positive("step", step, integer=True)
    check_positive("tolerance", tolerance)

    cache: dict[int, int] = {}

    def size(k: int) -> int:
        if k not in cache:
            with torch.device("meta"):
                cache[k] = count_parameters(build(k * step), trainable_only=trainable_only)
        return cache[k]

    lo, hi = 1, 2
    while size(hi) < target_params:
        if hi * step >= max_width:
            break
        lo, hi = hi, min(2 * hi, max_width // step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if size(mid) < target_params else (lo, mid)
    best = min((lo, hi), key=lambda k: (abs(size(k) - target_params), k))
    if abs(size(best) - target_params) > tolerance * target_params:
        raise ValueError(
            f"match_width: no width gives {target_params} parameters within {tolerance:.0%} "
            f"(closest: width {best * step} with {size(best)})"
        )
    return best * step
