"""Complexity parameters and the rate bound of Local Glivenko-Cantelli, as used by *The Empirical
Mean is Minimax Optimal for Local Glivenko-Cantelli* (Cohen, Kontorovich, Weiss; ICML 2025;
https://arxiv.org/abs/2410.02835), which builds on Cohen & Kontorovich (COLT 2023).

With q_j = min(p_j, 1 - p_j) sorted non-increasingly (q_(1) >= q_(2) >= ...), j = 1, 2, ...:

    S(p) = sup_j q_(j) log(j + 1)
    T(p) = sup_j log(j + 1) / log(1 / q_(j))          (a term with q_(j) = 0 counts as 0)

The empirical mean is uniformly consistent in sup-norm iff T(p) < infinity (the LGC class), and
its risk obeys Delta_n(p) <= c (sqrt(S(p)/n) + T(p) log(n)/n) (COLT 2023, for n >= e^3). On a
truncated sequence these are the suprema over its D coordinates; for a sequence outside the LGC
class T grows without bound as D does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml25.core.validate import check_positive

from .sequences import check_means

__all__ = ["complexity_S", "complexity_T", "folded_sorted", "lgc_upper_bound"]


def folded_sorted(p: Any) -> np.ndarray:
    """q_(j): ``min(p, 1 - p)`` sorted non-increasingly, shape ``(D,)``."""
    arr = check_means(p)
    return np.sort(np.minimum(arr, 1.0 - arr))[::-1]


def complexity_S(p: Any) -> float:  # noqa: N802 - the paper's symbol
    """S(p) = max_j q_(j) log(j + 1) over the given coordinates."""
    q = folded_sorted(p)
    j = np.arange(1, q.size + 1, dtype=np.float64)
    return float(np.max(q * np.log1p(j)))


def complexity_T(p: Any) -> float:  # noqa: N802 - the paper's symbol
    """T(p) = max_j log(j + 1) / log(1 / q_(j)) over the given coordinates (q_(j) = 0 gives 0)."""
    q = folded_sorted(p)
    j = np.arange(1, q.size + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        denom = -np.log(q)  # +inf where q == 0, so the term is 0
    return float(np.max(np.log1p(j) / denom))


def lgc_upper_bound(p: Any, n: int, c: float = 1.0) -> float:
    """The LGC rate c (sqrt(S(p)/n) + T(p) log(n) / n) for the empirical mean's sup-norm risk."""
    check_positive("n", n, integer=True)
    check_positive("c", c)
    return float(c) * (math.sqrt(complexity_S(p) / n) + complexity_T(p) * math.log(n) / n)
