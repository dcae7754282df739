"""Mean sequences of product-Bernoulli measures for *The Empirical Mean is Minimax Optimal for
Local Glivenko-Cantelli* (Cohen, Kontorovich, Weiss; ICML 2025; https://arxiv.org/abs/2410.02835).

A product-Bernoulli measure on {0,1}^N is given by its mean sequence p = (p_1, p_2, ...). The
infinite sequence cannot be simulated; every function here returns its first ``D`` coordinates
(``D`` is the truncation dimension, a finite stand-in for infinity), with ``j = 1, ..., D``:

    polynomial      p_j = scale * (j + 1)^(-a)              inside the LGC class for every a > 0
    exp_sqrt_log    p_j = scale * exp(-sqrt(log(j + 1)))    decays, yet outside the LGC class
    constant        p_j = c                                 outside the LGC class (the classic
                                                            example a pathological learner handles)

``permutation_family`` builds a finite symmetric family {pi(q)}: the sequence, random
permutations of it and optionally its doubled copy 2q clipped at 1/2, in the style of the paper's
symmetric families (its exact definition of symmetry is not reproduced here).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.core.validate import check_in_range, check_non_negative, check_numeric_array, check_positive

__all__ = [
    "check_means",
    "constant",
    "exp_sqrt_log",
    "permutation_family",
    "polynomial",
]


def check_means(p: Any, name: str = "p") -> np.ndarray:
    """``p`` as a float64 vector of Bernoulli means; refuse anything that is not one.

    Raises:
        TypeError: ``p`` is not numeric.
        ValueError: ``p`` is not 1-D, is empty, holds NaN/inf or a value outside [0, 1].
    """
    arr = check_numeric_array(name, p)
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector of means, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: a measure needs at least one coordinate")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if (arr < 0).any() or (arr > 1).any():
        raise ValueError(f"{name} must lie in [0, 1], got values in [{arr.min():g}, {arr.max():g}]")
    return arr


def _index(D: int) -> np.ndarray:
    check_positive("D", D, integer=True)
    return np.arange(1, int(D) + 1, dtype=np.float64)


def polynomial(D: int, a: float = 1.0, *, scale: float = 0.5) -> np.ndarray:
    """p_j = scale * (j + 1)^(-a), j = 1..D: in the LGC class, T(p) -> 1/a as D grows.

    Args:
        D: number of coordinates.
        a: decay exponent, > 0.
        scale: level in (0, 1]; the default 1/2 keeps every p_j <= 1/2.

    Returns:
        ``(D,)`` float64, non-increasing.
    """
    j = _index(D)
    check_positive("a", a)
    check_in_range("scale", scale, 0.0, 1.0, low_open=True)
    return scale * (j + 1.0) ** (-float(a))


def exp_sqrt_log(D: int, *, scale: float = 0.5) -> np.ndarray:
    """p_j = scale * exp(-sqrt(log(j + 1))): decays to 0 but T(p) grows like sqrt(log D).

    Returns:
        ``(D,)`` float64, non-increasing.
    """
    j = _index(D)
    check_in_range("scale", scale, 0.0, 1.0, low_open=True)
    return scale * np.exp(-np.sqrt(np.log(j + 1.0)))


def constant(D: int, c: float = 0.3) -> np.ndarray:
    """p_j = c for every j: outside the LGC class for every c in (0, 1).

    Returns:
        ``(D,)`` float64.
    """
    _index(D)
    check_in_range("c", c, 0.0, 1.0)
    return np.full(int(D), float(c))


def permutation_family(
    p: Any, k: int = 20, *, rng: np.random.Generator | int | None = 0, include_scaled: bool = True
) -> list[np.ndarray]:
    """A finite symmetric family around ``p``: ``p`` itself, ``k`` random permutations of it and
    (``include_scaled``) ``min(2p, 1/2)`` in the original order.

    Args:
        p: ``(D,)`` base mean sequence.
        k: number of random permutations (>= 0).
        rng: a generator or a seed.
        include_scaled: add the doubled member.

    Returns:
        ``1 + k (+ 1)`` arrays of shape ``(D,)``; the first is ``p``.
    """
    base = check_means(p)
    check_non_negative("k", k, integer=True)
    gen = np.random.default_rng(rng)
    members = [base.copy()]
    members += [base[gen.permutation(base.size)] for _ in range(int(k))]
    if include_scaled:
        members.append(np.minimum(2.0 * base, 0.5))
    return members
