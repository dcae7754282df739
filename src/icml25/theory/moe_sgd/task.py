"""The clustered single-index regression task of *Mixture of Experts Provably Detect and Learn the
Latent Cluster Structure in Gradient-Based Learning* (Kawata et al., ICML 2025,
https://arxiv.org/abs/2506.01656), Sec. 3 (data model) and Assumption 3.3 (low correlation).

A sample draws a cluster ``c ~ Unif{0..C-1}``, an input ``x | c ~ N(rho v_c, I_d)`` and a label

    y = f_c(w_c . x) + s_c g(w_g . x) + nu,     nu ~ N(0, zeta^2),   sum_c s_c = 0,

where ``f_c`` and ``g`` are Hermite expansions that start at degree ``k*`` (information exponent
``k*``). Because the signs cancel, a learner that sees the pooled task gets no low-order signal
along ``w_g``. Here {v_c}, {w_c} and w_g are mutually orthonormal (the first 2C+1 columns of a
random orthogonal matrix), the simplest instance of the low-correlation assumption.

Notation: d input dimension, C clusters, n samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from icml25.core.validate import check_finite_array, check_non_negative, check_positive

from .hermite import HermiteLink, normalized_hermite

__all__ = ["ClusteredSIMTask", "TaskSample", "hermite_correlation"]


class TaskSample:
    """``n`` samples: inputs ``X`` (n, d), labels ``y`` (n,), clusters ``c`` (n,) of dtype int64."""

    __slots__ = ("X", "y", "c")

    def __init__(self, X: np.ndarray, y: np.ndarray, c: np.ndarray) -> None:
        self.X, self.y, self.c = X, y, c

    def __iter__(self):  # allows ``X, y, c = task.sample(n, rng)``
        return iter((self.X, self.y, self.c))

    def __len__(self) -> int:
        return int(self.y.shape[0])


class ClusteredSIMTask:
    """The data model of Sec. 3 with orthonormal directions (Assumption 3.3 in its simplest form).

    Args:
        d: input dimension (at least ``2 * n_clusters + 1``).
        n_clusters: C >= 2.
        rho: cluster-mean norm (``x | c ~ N(rho v_c, I)``).
        k_star: information exponent of every link (> 2 in the paper; >= 1 allowed here).
        signs: ``s_c``, one per cluster, summing to zero (default: alternating +1/-1 for even C).
        noise: label-noise standard deviation ``zeta``.
        local_coeffs: Hermite coefficients of every ``f_c`` (default ``{k*: 1}``, i.e. ``He_k*/sqrt(k*!)``).
        global_coeffs: Hermite coefficients of ``g`` (default the same).
        seed: seeds the random orthogonal matrix that fixes the directions.

    Attributes:
        V: (C, d) unit cluster-mean directions ``v_c``.
        W_local: (C, d) local directions ``w_c``.
        w_global: (d,) global direction ``w_g``.
        w_null: (d,) a unit direction orthogonal to all of the above, on which the label does not
            depend (a reference for overlaps at the noise level); None when ``d = 2C + 1``.
    """

    def __init__(
        self,
        d: int,
        n_clusters: int = 2,
        *,
        rho: float = 3.0,
        k_star: int = 3,
        signs: Sequence[float] | None = None,
        noise: float = 0.1,
        local_coeffs: Mapping[int, float] | None = None,
        global_coeffs: Mapping[int, float] | None = None,
        seed: int = 0,
    ) -> None:
        check_positive("n_clusters", n_clusters, integer=True)
        if n_clusters < 2:
            raise ValueError(f"n_clusters must be at least 2 (a cluster structure), got {n_clusters}")
        check_positive("d", d, integer=True)
        if d < 2 * n_clusters + 1:
            raise ValueError(f"d must be at least 2 * n_clusters + 1 = {2 * n_clusters + 1}, got {d}")
        check_non_negative("rho", rho)
        check_positive("k_star", k_star, integer=True)
        check_non_negative("noise", noise)
        if signs is None:
            if n_clusters % 2:
                raise ValueError("signs must be given for an odd number of clusters (they must sum to 0)")
            signs = [1.0 if c % 2 == 0 else -1.0 for c in range(n_clusters)]
        s = np.asarray(signs, dtype=np.float64)
        if s.shape != (n_clusters,):
            raise ValueError(f"signs must hold n_clusters={n_clusters} values, got shape {s.shape}")
        if not np.isfinite(s).all():
            raise ValueError("signs must be finite")
        if abs(s.sum()) > 1e-9:
            raise ValueError(
                f"signs must sum to zero (the global signal cancels in the pooled task), got {s}"
            )
        self.d, self.n_clusters, self.rho, self.k_star = int(d), int(n_clusters), float(rho), int(k_star)
        self.noise, self.seed = float(noise), int(seed)
        self.signs = s
        self.local_link = HermiteLink(local_coeffs if local_coeffs is not None else {self.k_star: 1.0})
        self.global_link = HermiteLink(global_coeffs if global_coeffs is not None else {self.k_star: 1.0})
        # mutually orthonormal directions: columns of a random orthogonal matrix (QR of a Gaussian)
        k = min(2 * n_clusters + 2, d)  # one spare column, when d allows, is a no-signal direction
        q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, k)))
        q = q * np.sign(np.diag(r))
        self.V = np.ascontiguousarray(q[:, :n_clusters].T)
        self.W_local = np.ascontiguousarray(q[:, n_clusters : 2 * n_clusters].T)
        self.w_global = np.ascontiguousarray(q[:, 2 * n_clusters])
        self.w_null = np.ascontiguousarray(q[:, -1]) if k > 2 * n_clusters + 1 else None

    def labels(self, X: np.ndarray, c: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """``y`` for inputs ``X`` (n, d) of clusters ``c`` (n,); noise added when ``rng`` is given."""
        check_finite_array("X", X, ndim=2)
        if X.shape[1] != self.d:
            raise ValueError(f"X must have d={self.d} columns, got shape {X.shape}")
        c = np.asarray(c)
        if c.shape != (X.shape[0],) or c.dtype.kind not in "iu":
            raise ValueError(f"c must be an integer array of shape ({X.shape[0]},), got {c.dtype} {c.shape}")
        if c.size and (c.min() < 0 or c.max() >= self.n_clusters):
            raise ValueError(f"c must lie in [0, {self.n_clusters}), got values in [{c.min()}, {c.max()}]")
        return self._labels(X, c, rng)

    def _labels(self, X: np.ndarray, c: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        local = np.einsum("nd,nd->n", X, self.W_local[c])  # w_c . x
        y = self.local_link(local) + self.signs[c] * self.global_link(X @ self.w_global)
        if rng is not None and self.noise > 0:
            y = y + self.noise * rng.standard_normal(X.shape[0])
        return y

    def sample(self, n: int, rng: np.random.Generator, *, cluster: int | None = None) -> TaskSample:
        """``n`` fresh samples (of one ``cluster`` if given): ``X`` (n, d), ``y`` (n,), ``c`` (n,)."""
        check_positive("n", n, integer=True)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if cluster is None:
            c = rng.integers(0, self.n_clusters, size=n)
        else:
            if not 0 <= cluster < self.n_clusters:
                raise ValueError(f"cluster must lie in [0, {self.n_clusters}), got {cluster}")
            c = np.full(n, cluster, dtype=np.int64)
        X = rng.standard_normal((n, self.d)) + self.rho * self.V[c]
        return TaskSample(X, self._labels(X, c, rng), c.astype(np.int64))

    def label_variance(self) -> float:
        """``Var(y)``: the sum of squared link coefficients of degree >= 1 plus ``zeta^2``."""
        var = sum(v * v for k, v in self.local_link.coeffs.items() if k > 0)
        var += sum(v * v for k, v in self.global_link.coeffs.items() if k > 0)
        return float(var + self.noise**2)

    def __repr__(self) -> str:
        return (
            f"ClusteredSIMTask(d={self.d}, n_clusters={self.n_clusters}, rho={self.rho}, "
            f"k_star={self.k_star}, signs={self.signs.tolist()}, noise={self.noise}, seed={self.seed})"
        )


def hermite_correlation(
    task: ClusteredSIMTask,
    direction: np.ndarray,
    k: int,
    n: int,
    rng: np.random.Generator,
    *,
    cluster: int | None = None,
) -> tuple[float, float]:
    """Monte Carlo ``E[y He_k(u . x) / sqrt(k!)]`` along unit ``direction`` u, pooled or in one cluster.

    Returns:
        ``(estimate, standard_error)``. For the pooled task and ``u = w_g`` the population value is
        zero at every ``k`` (the signs cancel); inside one cluster it is ``s_c gamma_k``.
    """
    u = np.asarray(direction, dtype=np.float64)
    check_finite_array("direction", u, ndim=1)
    if u.shape != (task.d,):
        raise ValueError(f"direction must have shape ({task.d},), got {u.shape}")
    norm = float(np.linalg.norm(u))
    if not math.isfinite(norm) or norm == 0.0:
        raise ValueError("direction must be non-zero")
    X, y, _ = task.sample(n, rng, cluster=cluster)
    values = y * normalized_hermite(k, X @ (u / norm))
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else float("inf")
