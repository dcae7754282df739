"""Worst-case risk over one complexity class, for *The Empirical Mean is Minimax Optimal for Local
Glivenko-Cantelli* (Cohen, Kontorovich, Weiss; ICML 2025; https://arxiv.org/abs/2410.02835).

The class is C(s, t) = {p : S(p) <= s, T(p) <= t} (S and T of ``complexity``). It is closed under
permutations of the coordinates, because S and T only see the sorted folded means. The testing lower
bound of ``lower_bound`` is taken over two-level hypotheses inside C(s, t); the worst-case risks of
the estimators are taken over a finite set of members of the same class:

    base      a given sequence q in C (the LGC sequence 1/2 (j+1)^-1 in the check)
    reversed  q in increasing order (the adversarial ordering for an order-exploiting estimator)
    permuted  random permutations of q
    blocks    k coordinates at level r (the rest 0), for every (r, k) of a grid with S, T within (s, t)
    tests     the lower bound's own hypotheses (one coordinate at q0 + eps, k - 1 at q0)

For a permutation-equivariant coordinatewise estimator the risk only depends on the multiset of
the means, so one ordering of each member suffices and the risk is exact. Every member is checked
to lie in C(s, t) (:func:`class_excess`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from icml25.core.validate import check_positive

from .complexity import complexity_S, complexity_T
from .sequences import check_means

__all__ = ["block", "block_members", "class_excess", "in_class"]


def block(level: float, k: int, *, pad: int = 0, increasing: bool = False) -> np.ndarray:
    """``k`` coordinates at ``level`` after (``increasing``) or before ``pad`` zeros."""
    check_positive("k", k, integer=True)
    if not 0.0 < level <= 0.5:
        raise ValueError(f"level must lie in (0, 1/2], got {level}")
    if pad < 0:
        raise ValueError(f"pad must be >= 0, got {pad}")
    ones, zeros = np.full(int(k), float(level)), np.zeros(int(pad))
    return np.concatenate([zeros, ones] if increasing else [ones, zeros])


def block_complexity(level: float, k: int) -> tuple[float, float]:
    """(S, T) of ``k`` coordinates at ``level`` <= 1/2: (r log(k + 1), log(k + 1) / log(1/r))."""
    lk = math.log(k + 1.0)
    return level * lk, lk / math.log(1.0 / level)


def block_members(
    s_max: float, t_max: float, levels: Sequence[float], sizes: Sequence[int]
) -> list[tuple[float, int]]:
    """Every (level, k) of the grid whose block lies in C(s_max, t_max)."""
    out = []
    for r in levels:
        for k in sizes:
            s, t = block_complexity(float(r), int(k))
            if s <= s_max and t <= t_max:
                out.append((float(r), int(k)))
    return out


def class_excess(p: Any, s_max: float, t_max: float) -> float:
    """How far ``p`` lies outside C(s_max, t_max): max(S - s_max, T - t_max), <= 0 inside."""
    means = check_means(p)
    return max(complexity_S(means) - s_max, complexity_T(means) - t_max)


def in_class(p: Any, s_max: float, t_max: float, *, tol: float = 1e-12) -> bool:
    """Whether ``p`` lies in C(s_max, t_max) (up to ``tol``)."""
    return class_excess(p, s_max, t_max) <= tol
