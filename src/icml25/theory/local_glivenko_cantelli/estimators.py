"""Estimators of a product-Bernoulli mean vector from n draws, for *The Empirical Mean is Minimax
Optimal for Local Glivenko-Cantelli* (Cohen, Kontorovich, Weiss; ICML 2025;
https://arxiv.org/abs/2410.02835).

n i.i.d. draws X_1..X_n in {0,1}^D enter only through the counts Y_j = sum_i X_ij ~ Bin(n, p_j),
independent across j (they are sufficient), so every estimator maps ``(Y, n)`` to p_hat in [0,1]^D:

    EmpiricalMean     p_hat_j = Y_j / n                                 (the EME the paper studies)
    Zero              p_hat_j = 0                                       (learns nothing: a reference)
    AddBeta           p_hat_j = (Y_j + beta) / (n + 2 beta)              (Beta(beta, beta) posterior mean)
    Thresholded       p_hat_j = Y_j / n * 1{Y_j >= tau}                 (rare counts shrunk to 0)
    IsotonicOrdered   non-increasing least-squares fit of Y/n (PAVA)    (uses the coordinate order)
    PooledTailHybrid  pooled tail mean everywhere if the data look constant, else the EME

Our working proxy for the paper's "non-pathological" learners (its formal definition is not
reproduced here): permutation-equivariant across coordinates, and each output coordinate uses
the data of finitely many coordinates. The first three are coordinatewise maps of the counts
(``coordinatewise = True``; their risk has an exact formula, see ``risk``); the isotonic fit
breaks equivariance; the hybrid, in the style of the paper's pathology-exploiting learners that
learn LGC together with the constant sequences, pools an unbounded tail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from icml25.core.validate import check_in_range, check_numeric_array, check_positive

from .sequences import check_means

__all__ = [
    "AddBeta",
    "EmpiricalMean",
    "Estimator",
    "IsotonicOrdered",
    "PooledTailHybrid",
    "Thresholded",
    "Zero",
    "check_counts",
    "sample_counts",
]


def sample_counts(p: Any, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Y_j ~ Bin(n, p_j) independently: the sufficient statistic of n draws from the product measure.

    Args:
        p: ``(D,)`` means in [0, 1].
        n: number of draws, >= 1.
        rng: a generator or a seed.

    Returns:
        ``(D,)`` int64 counts in ``[0, n]``.
    """
    means = check_means(p)
    check_positive("n", n, integer=True)
    return np.random.default_rng(rng).binomial(int(n), means).astype(np.int64)


def check_counts(Y: Any, n: int) -> np.ndarray:
    """``Y`` as an int64 vector of counts in ``[0, n]``; refuse anything else naming ``Y`` or ``n``."""
    check_positive("n", n, integer=True)
    arr = check_numeric_array("Y", Y)
    arr = np.asarray(arr)
    if arr.ndim != 1:
        raise ValueError(f"Y must be a 1-D vector of counts, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("Y is empty: at least one coordinate is needed")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("Y contains NaN or infinite values")
        if (arr != np.round(arr)).any():
            raise ValueError("Y must hold whole-number counts")
    if arr.dtype.kind == "b":
        raise TypeError("Y must hold integer counts, got booleans")
    out = arr.astype(np.int64)
    if (out < 0).any() or (out > n).any():
        raise ValueError(f"Y must lie in [0, n={n}], got values in [{out.min()}, {out.max()}]")
    return out


class Estimator:
    """Base class: ``estimator(Y, n) -> p_hat`` of shape ``(D,)``.

    Coordinatewise estimators (``coordinatewise = True``) also give ``count_map(n)``: the value
    they output for a coordinate with count k, for k = 0..n, which is all the exact risk needs.
    """

    name: ClassVar[str] = "estimator"
    coordinatewise: ClassVar[bool] = False

    def count_map(self, n: int) -> np.ndarray:
        raise TypeError(f"{type(self).__name__} is not a coordinatewise estimator")

    def estimate(self, Y: np.ndarray, n: int) -> np.ndarray:
        """The estimate from validated counts (subclasses override)."""
        return self.count_map(n)[Y]

    def __call__(self, Y: Any, n: int) -> np.ndarray:
        counts = check_counts(Y, n)
        return self.estimate(counts, int(n))


@dataclass(frozen=True)
class EmpiricalMean(Estimator):
    """The empirical mean estimator p_hat_j = Y_j / n (the EME of the paper)."""

    name: ClassVar[str] = "eme"
    coordinatewise: ClassVar[bool] = True

    def count_map(self, n: int) -> np.ndarray:
        check_positive("n", n, integer=True)
        return np.arange(n + 1, dtype=np.float64) / n


@dataclass(frozen=True)
class Zero(Estimator):
    """p_hat_j = 0 whatever the data: the learn-nothing reference (its risk is max_j p_j)."""

    name: ClassVar[str] = "zero"
    coordinatewise: ClassVar[bool] = True

    def count_map(self, n: int) -> np.ndarray:
        check_positive("n", n, integer=True)
        return np.zeros(n + 1, dtype=np.float64)


@dataclass(frozen=True)
class AddBeta(Estimator):
    """Posterior mean under a Beta(beta, beta) prior: (Y_j + beta) / (n + 2 beta)."""

    beta: float = 0.5
    name: ClassVar[str] = "add_beta"
    coordinatewise: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_positive("beta", self.beta)

    def count_map(self, n: int) -> np.ndarray:
        check_positive("n", n, integer=True)
        return (np.arange(n + 1, dtype=np.float64) + self.beta) / (n + 2.0 * self.beta)


@dataclass(frozen=True)
class Thresholded(Estimator):
    """The EME with counts below ``tau`` set to zero: Y_j / n * 1{Y_j >= tau}.

    ``tau = 1`` is the EME itself (a count of 0 already gives 0), so a competitor needs ``tau >= 2``.
    """

    tau: int = 2
    name: ClassVar[str] = "threshold"
    coordinatewise: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_positive("tau", self.tau, integer=True)

    def count_map(self, n: int) -> np.ndarray:
        check_positive("n", n, integer=True)
        k = np.arange(n + 1, dtype=np.float64)
        return np.where(k >= self.tau, k / n, 0.0)


@dataclass(frozen=True)
class IsotonicOrdered(Estimator):
    """Least-squares non-increasing fit of Y/n in the given coordinate order (pool adjacent
    violators). It exploits a known ordering, so it is not permutation-equivariant: it wins on a
    sorted member of a symmetric family and can lose badly on permuted ones."""

    name: ClassVar[str] = "isotonic"

    def estimate(self, Y: np.ndarray, n: int) -> np.ndarray:
        from scipy.optimize import isotonic_regression

        fit = isotonic_regression(Y / float(n), increasing=False).x
        return np.clip(np.asarray(fit, dtype=np.float64), 0.0, 1.0)


@dataclass(frozen=True)
class PooledTailHybrid(Estimator):
    """A pathology-exploiting learner in the style of the paper's constructions (our proxy).

    The tail ``j > (1 - tail_fraction) D`` is pooled into c_hat = sum_tail Y_j / (n |tail|). If
    c_hat >= n^(-level_exponent) (not near 0) and every coordinate passes a Bernstein test of
    ``Y_j ~ Bin(n, c_hat)`` at level ``delta / D`` (|Y_j - n c_hat| <= L/3 + sqrt(L^2/9 +
    2 n c_hat (1 - c_hat) L), L = log(2D / delta)), it outputs c_hat everywhere; otherwise the EME.
    On a constant sequence its error shrinks as the tail grows (D -> infinity); on a sequence
    decaying to 0 the pooled mean vanishes and it is the EME. Its output uses an unbounded number
    of coordinates, which our proxy definition calls pathological.

    Args:
        tail_fraction: share of the last coordinates pooled, in (0, 1).
        delta: total level of the constancy test, in (0, 1).
        level_exponent: c_hat must be at least n^(-level_exponent); > 0.
    """

    tail_fraction: float = 0.5
    delta: float = 0.01
    level_exponent: float = 1.0
    name: ClassVar[str] = "pooled_hybrid"

    def __post_init__(self) -> None:
        check_in_range("tail_fraction", self.tail_fraction, 0.0, 1.0, low_open=True, high_open=True)
        check_in_range("delta", self.delta, 0.0, 1.0, low_open=True, high_open=True)
        check_positive("level_exponent", self.level_exponent)

    def pooled_level(self, Y: Any, n: int) -> float | None:
        """c_hat when the data pass the constancy test (the hybrid pools), else None."""
        counts = check_counts(Y, n)
        return self._pooled_level(counts, int(n))

    def _pooled_level(self, Y: np.ndarray, n: int) -> float | None:
        D = Y.size
        start = min(D - 1, int(math.floor((1.0 - self.tail_fraction) * D)))
        tail = Y[start:]
        c_hat = float(tail.sum()) / (n * tail.size)
        if c_hat < n ** (-self.level_exponent):
            return None
        L = math.log(2.0 * D / self.delta)
        width = L / 3.0 + math.sqrt(L * L / 9.0 + 2.0 * n * c_hat * (1.0 - c_hat) * L)
        if np.abs(Y - n * c_hat).max() > width:
            return None
        return c_hat

    def estimate(self, Y: np.ndarray, n: int) -> np.ndarray:
        level = self._pooled_level(Y, n)
        if level is None:
            return Y / float(n)
        return np.full(Y.size, level)
