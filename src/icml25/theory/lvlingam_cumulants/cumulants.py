"""Higher-order cross-cumulants: streaming sample moments, plug-in cumulants, k-statistics.

Part of our implementation of *Causal Effect Identification in lvLiNGAM from Higher-Order Cumulants*
(Tramontano et al., ICML 2025, https://arxiv.org/abs/2506.05202). Implements the sample cumulants
every estimator of the paper is built from, and the population cumulant tensors
``C^(k) = sum_s omega_s^(k) b'_s (x) ... (x) b'_s`` of the lvLiNGAM model used to test the
estimators' algebra exactly.

Notation: ``X`` is ``(n, p)`` (n samples, p observed variables); an index tuple ``idx`` of length
k names the k-th order cross-cumulant ``kappa(x_idx[0], ..., x_idx[k-1])``; ``alpha`` is an exponent
vector (``E[prod_v x_v ** alpha_v]``).

Sample cumulants follow the paper's construction as released (``get_cumulant_formula``): centre the
data, then sum over set partitions of the index positions with no singleton block, weight
``(-1)^(m-1) (m-1)!`` for ``m`` blocks, times the product of block moments. These plug-in cumulants
are multilinear in the data, so a linear change of variables acts on them exactly as on population
cumulants (:meth:`Cumulants.transform`). Unbiased multivariate k-statistics are offered for orders
2-4 (closed forms by polarisation of Fisher's univariate k-statistics); higher orders raise.

Moments are streamed over row chunks: per chunk, the monomials of all but the last variable
(``H``, degree <= K) and the powers of the last one (``R``) give every needed moment at once as
``H^T R`` (one BLAS product), so no ``n x p^k`` tensor is ever built.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from icml25.core.validate import check_numeric_array

__all__ = [
    "Cumulants",
    "GaussianNoiseError",
    "check_data",
    "gaussianity_pvalues",
    "sample_cumulant",
    "sample_moments",
    "set_partitions_no_singletons",
]

CHUNK_SIZE = 1 << 15  # rows per streamed chunk
_CONSTANT_TOL = 1e-12  # a column whose std is below this fraction of its scale is constant
_COLLINEAR_TOL = 1e-10  # |corr| above 1 - this is collinear


class GaussianNoiseError(ValueError):
    """The data (or model) carries no usable non-Gaussian signal: the effect is not identifiable."""


# ----------------------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------------------


def check_data(X: np.ndarray, *, min_samples: int, n_cols: int | None = None, name: str = "X") -> np.ndarray:
    """Validate an ``(n, p)`` sample and return it as float64.

    Raises ``ValueError`` for a wrong shape, too few rows, NaN/inf, constant columns and
    (near-)collinear column pairs.
    """
    check_numeric_array(name, X)
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_variables), got shape {arr.shape}")
    n, p = arr.shape
    if n_cols is not None and p != n_cols:
        raise ValueError(f"{name} must have {n_cols} columns, got {p}")
    if n < min_samples:
        raise ValueError(
            f"{name} has {n} samples; cumulants of the order needed here require at least {min_samples}"
        )
    if not (np.isfinite(arr.sum(axis=0)).all() and np.isfinite(arr).all()):
        raise ValueError(f"{name} contains NaN or inf values")
    mean = arr.mean(axis=0)
    centred = arr - mean
    gram = centred.T @ centred / n  # one BLAS pass gives variances and correlations
    var = np.diag(gram).copy()
    scale = np.maximum(np.abs(mean), np.abs(centred[:64]).max(axis=0))
    const = np.flatnonzero(np.sqrt(np.maximum(var, 0.0)) <= _CONSTANT_TOL * np.maximum(scale, 1e-300))
    if const.size:
        raise ValueError(f"{name} has constant column(s) {const.tolist()}: no causal information")
    if p > 1:
        corr = gram / np.sqrt(np.outer(var, var))
        iu = np.triu_indices(p, k=1)
        bad = np.abs(corr[iu]) > 1.0 - _COLLINEAR_TOL
        if bad.any():
            pairs = [(int(a), int(b)) for a, b, x in zip(iu[0], iu[1], bad, strict=True) if x]
            raise ValueError(f"{name} has collinear column pair(s) {pairs}: effects are not separable")
    return arr


# ----------------------------------------------------------------------------------------------
# moments
# ----------------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _exponents(p: int, max_degree: int) -> tuple[tuple[int, ...], ...]:
    """All exponent vectors of length ``p`` with total degree <= ``max_degree``."""
    if p == 0:
        return ((),)
    return tuple(
        alpha for alpha in itertools.product(range(max_degree + 1), repeat=p) if sum(alpha) <= max_degree
    )


def sample_moments(
    X: np.ndarray, max_order: int, *, center: bool = True, chunk_size: int = CHUNK_SIZE
) -> dict[tuple[int, ...], float]:
    """All moments ``E_n[prod_v x_v ** alpha_v]`` with ``|alpha| <= max_order``, streamed in chunks.

    Args:
        X: ``(n, p)`` float array.
        max_order: the largest total degree.
        center: subtract the column means first (the paper's convention).
        chunk_size: rows per chunk; memory is ``O(chunk_size * #monomials)``.

    Returns:
        ``{alpha: moment}`` for every exponent vector ``alpha`` of length ``p``.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    if max_order < 1:
        raise ValueError(f"max_order must be >= 1, got {max_order}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    n, p = X.shape
    K = max_order
    mean = X.mean(axis=0) if center else np.zeros(p)
    head = sorted(_exponents(p - 1, K), key=sum)  # monomials of x_0..x_{p-2}, by degree
    pos = {alpha: c for c, alpha in enumerate(head)}
    # each monomial = parent monomial (one degree lower) times one variable
    parents = []
    for alpha in head[1:]:
        v = max(u for u, e in enumerate(alpha) if e)
        parents.append((pos[alpha[:v] + (alpha[v] - 1,) + alpha[v + 1 :]], v))
    S = np.zeros((len(head), K + 1))
    for start in range(0, n, chunk_size):
        block = np.ascontiguousarray((X[start : start + chunk_size] - mean).T)  # (p, chunk)
        m = block.shape[1]
        H = np.empty((len(head), m))
        H[0] = 1.0
        for c, (parent, v) in enumerate(parents, start=1):
            np.multiply(H[parent], block[v], out=H[c])
        R = np.empty((K + 1, m))  # powers of the last variable
        R[0] = 1.0
        for e in range(1, K + 1):
            np.multiply(R[e - 1], block[p - 1], out=R[e])
        S += H @ R.T
    S /= n
    out: dict[tuple[int, ...], float] = {}
    for c, alpha in enumerate(head):
        for e in range(K + 1 - sum(alpha)):
            out[(*alpha, e)] = float(S[c, e])
    return out


# ----------------------------------------------------------------------------------------------
# cumulants from moments
# ----------------------------------------------------------------------------------------------


def _partitions(items: list[int]) -> Iterator[list[list[int]]]:
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        yield [[first], *part]
        for b in range(len(part)):
            yield [*part[:b], [first, *part[b]], *part[b + 1 :]]


@lru_cache(maxsize=16)
def set_partitions_no_singletons(k: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Set partitions of ``{0, ..., k-1}`` whose blocks all have size >= 2 (cached)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    return tuple(
        tuple(tuple(sorted(b)) for b in part)
        for part in _partitions(list(range(k)))
        if all(len(b) >= 2 for b in part)
    )


def _alpha(idx: Sequence[int], p: int) -> tuple[int, ...]:
    counts = [0] * p
    for i in idx:
        counts[i] += 1
    return tuple(counts)


def _plugin_cumulant(moments: Mapping[tuple[int, ...], float], idx: Sequence[int], p: int) -> float:
    """Plug-in cumulant: sum over no-singleton partitions of (-1)^(m-1) (m-1)! prod_blocks E[block]."""
    total = 0.0
    for part in set_partitions_no_singletons(len(idx)):
        m = len(part)
        term = (-1.0) ** (m - 1) * math.factorial(m - 1)
        for block in part:
            term *= moments[_alpha([idx[b] for b in block], p)]
        total += term
    return total


def _k_statistic(moments: Mapping[tuple[int, ...], float], idx: Sequence[int], p: int, n: int) -> float:
    """Unbiased multivariate k-statistic of order 2-4 from centred (divisor-n) sample moments."""
    k = len(idx)

    def m(*ix: int) -> float:
        return moments[_alpha(ix, p)]

    if k == 2:
        return n / (n - 1) * m(*idx)
    if k == 3:
        return n * n / ((n - 1) * (n - 2)) * m(*idx)
    if k == 4:
        a, b, c, d = idx
        pairs = m(a, b) * m(c, d) + m(a, c) * m(b, d) + m(a, d) * m(b, c)
        return n * n * ((n + 1) * m(a, b, c, d) - (n - 1) * pairs) / ((n - 1) * (n - 2) * (n - 3))
    raise ValueError(f"unbiased k-statistics are implemented for orders 2-4, got order {k}")


def _symmetric_fill(p: int, k: int, value_of: dict[tuple[int, ...], float]) -> np.ndarray:
    T = np.empty((p,) * k)
    for idx in itertools.product(range(p), repeat=k):
        T[idx] = value_of[tuple(sorted(idx))]
    return T


# ----------------------------------------------------------------------------------------------
# the cumulant container
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Cumulants:
    """Cross-cumulant tensors of orders 2..max_order of p variables (sample or population).

    Args:
        tensors: ``{k: array of shape (p,) * k}``, symmetric, for every k in 2..max_order.
        n_samples: the sample size they were estimated from; ``None`` for exact population values.
        unbiased: whether the sample values are k-statistics.
    """

    tensors: Mapping[int, np.ndarray]
    n_samples: int | None = None
    unbiased: bool = False

    def __post_init__(self) -> None:
        orders = sorted(self.tensors)
        if not orders or orders != list(range(2, orders[-1] + 1)):
            raise ValueError(f"tensors must hold every order 2..K, got orders {orders}")
        p = self.tensors[2].shape[0]
        for k, T in self.tensors.items():
            if T.shape != (p,) * k:
                raise ValueError(f"order-{k} tensor must have shape {(p,) * k}, got {T.shape}")

    @property
    def p(self) -> int:
        return int(self.tensors[2].shape[0])

    @property
    def max_order(self) -> int:
        return max(self.tensors)

    def __getitem__(self, idx: Sequence[int]) -> float:
        idx = tuple(idx)
        k = len(idx)
        if k not in self.tensors:
            raise ValueError(f"cumulant of order {k} requested; these cumulants go up to {self.max_order}")
        return float(self.tensors[k][idx])

    @property
    def covariance(self) -> np.ndarray:
        return self.tensors[2]

    # -- constructors -----------------------------------------------------------------------

    @classmethod
    def from_data(
        cls, X: np.ndarray, max_order: int, *, unbiased: bool = False, chunk_size: int = CHUNK_SIZE
    ) -> Cumulants:
        """Sample cumulants of the (centred) columns of ``X`` up to ``max_order``.

        Args:
            X: ``(n, p)`` sample; validated by :func:`check_data` (needs ``n > max_order``).
            max_order: highest cumulant order (>= 2).
            unbiased: k-statistics instead of plug-in cumulants (orders <= 4 only).
            chunk_size: rows per streamed chunk.
        """
        if max_order < 2:
            raise ValueError(f"max_order must be >= 2, got {max_order}")
        if unbiased and max_order > 4:
            raise ValueError(f"unbiased=True supports max_order <= 4, got {max_order}")
        X = check_data(X, min_samples=max_order + 1)
        n, p = X.shape
        moments = sample_moments(X, max_order, chunk_size=chunk_size)
        tensors: dict[int, np.ndarray] = {}
        for k in range(2, max_order + 1):
            values = {
                idx: (_k_statistic(moments, idx, p, n) if unbiased else _plugin_cumulant(moments, idx, p))
                for idx in itertools.combinations_with_replacement(range(p), k)
            }
            tensors[k] = _symmetric_fill(p, k, values)
        return cls(tensors, n_samples=n, unbiased=unbiased)

    @classmethod
    def from_mixing(cls, B: np.ndarray, source_cumulants: np.ndarray) -> Cumulants:
        """Exact population cumulants of ``x = B s`` with independent sources (multilinearity).

        ``C^(k) = sum_s omega_s^(k) B[:, s]^{(x) k}``.

        Args:
            B: ``(p, q)`` mixing matrix (total effects of the q sources on the p observed variables).
            source_cumulants: ``(q, K + 1)``; column k holds the k-th cumulant of each source
                (columns 0 and 1 are ignored).
        """
        B = np.asarray(B, dtype=np.float64)
        omega = np.asarray(source_cumulants, dtype=np.float64)
        if B.ndim != 2 or omega.ndim != 2 or omega.shape[0] != B.shape[1] or omega.shape[1] < 3:
            raise ValueError(
                f"B must be (p, q) and source_cumulants (q, K+1) with K >= 2; got {B.shape}, {omega.shape}"
            )
        p, q = B.shape
        tensors: dict[int, np.ndarray] = {}
        outer = [np.ones(()) for _ in range(q)]
        for k in range(1, omega.shape[1]):
            outer = [np.multiply.outer(o, B[:, s]) for s, o in enumerate(outer)]
            if k >= 2:
                tensors[k] = sum((omega[s, k] * outer[s] for s in range(q)), start=np.zeros((p,) * k))
        return cls(tensors, n_samples=None)

    # -- algebra ----------------------------------------------------------------------------

    def transform(self, M: np.ndarray) -> Cumulants:
        """Cumulants of ``y = M x`` (exact, also for sample cumulants: they are multilinear)."""
        M = np.asarray(M, dtype=np.float64)
        if M.ndim != 2 or M.shape[1] != self.p:
            raise ValueError(f"M must have shape (p', {self.p}), got {M.shape}")
        out = {}
        for k, T in self.tensors.items():
            for _ in range(k):  # contract the leading axis; it re-appears transformed at the end
                T = np.tensordot(T, M, axes=([0], [1]))
            out[k] = T
        return Cumulants(out, n_samples=self.n_samples, unbiased=self.unbiased)

    def subset(self, cols: Sequence[int]) -> Cumulants:
        """Cumulants of the variables ``cols`` (in that order)."""
        sel = np.eye(self.p)[list(cols)]
        return self.transform(sel)

    def standardized(self, order: int) -> np.ndarray:
        """Per-variable standardized cumulants ``kappa_k(x_v) / var(x_v)^(k/2)``, shape ``(p,)``."""
        diag = np.array([self[(v,) * order] for v in range(self.p)])
        var = np.diag(self.covariance)
        return diag / var ** (order / 2)


def sample_cumulant(X: np.ndarray, idx: Sequence[int], *, unbiased: bool = False) -> float:
    """One cross-cumulant ``kappa(x_idx[0], ..., x_idx[k-1])`` of the columns of ``X`` (any order >= 2)."""
    idx = tuple(int(i) for i in idx)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, p), got shape {X.shape}")
    if len(idx) < 2 or any(not 0 <= i < X.shape[1] for i in idx):
        raise ValueError(f"idx must hold >= 2 column indices in [0, {X.shape[1]}), got {idx}")
    cols = sorted(set(idx))
    local = tuple(cols.index(i) for i in idx)
    return Cumulants.from_data(X[:, cols], len(idx), unbiased=unbiased)[local]


def gaussianity_pvalues(cum: Cumulants) -> np.ndarray:
    """Per-variable evidence that the variable is Gaussian, shape ``(p,)``.

    For sample cumulants: the Jarque-Bera p-value ``exp(-JB / 2)``, with
    ``JB = n (skew^2 / 6 + exkurt^2 / 24)`` (chi-square with 2 d.o.f. under Gaussianity). For
    population cumulants: 1.0 where every standardized cumulant of order 3..K vanishes (exactly
    Gaussian up to 1e-12), else 0.0.
    """
    if cum.max_order < 4:
        raise ValueError("the Gaussianity check needs cumulants up to order 4")
    if cum.n_samples is None:
        higher = np.stack([np.abs(cum.standardized(k)) for k in range(3, cum.max_order + 1)])
        return (higher.max(axis=0) < 1e-12).astype(float)
    skew, exkurt = cum.standardized(3), cum.standardized(4)
    jb = cum.n_samples * (skew**2 / 6.0 + exkurt**2 / 24.0)
    return np.exp(-jb / 2.0)
