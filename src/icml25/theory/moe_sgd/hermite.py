"""Hermite tools for *Mixture of Experts Provably Detect and Learn the Latent Cluster Structure in
Gradient-Based Learning* (Kawata, Matsutani, Kinoshita, Nishikawa, Suzuki; ICML 2025;
https://arxiv.org/abs/2506.01656).

The paper's link functions are expansions in normalised probabilists' Hermite polynomials
``He_i(z) / sqrt(i!)``, orthonormal under ``z ~ N(0, 1)``; the *information exponent* of a link is
the index of its first non-zero coefficient (Sec. 3, following Ben Arous et al., 2021). This
module computes those coefficients by Gauss-Hermite quadrature, the information exponent, links
built from coefficients, and Hermite activations with their derivatives.

Notation: ``z`` a standard-normal scalar (or array of them); ``c_i = E[h(z) He_i(z)] / sqrt(i!)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
from numpy.polynomial import hermite_e

from icml25.core.validate import check_positive

__all__ = [
    "hermite_coeffs",
    "information_exponent",
    "normalized_hermite",
    "HermiteLink",
]


def normalized_hermite(k: int, z: np.ndarray) -> np.ndarray:
    """``He_k(z) / sqrt(k!)`` elementwise (orthonormal under N(0, 1))."""
    check_positive("k", k + 1, integer=True)  # k >= 0
    coef = np.zeros(k + 1)
    coef[k] = 1.0 / math.sqrt(math.factorial(k))
    return np.asarray(hermite_e.hermeval(z, coef))


def hermite_coeffs(fn: Callable[[np.ndarray], np.ndarray], max_k: int, *, n_quad: int = 80) -> np.ndarray:
    """Normalised Hermite coefficients ``c_0..c_max_k`` of ``fn`` under ``N(0, 1)``.

    ``c_i = E[fn(z) He_i(z)] / sqrt(i!)``, computed with ``n_quad``-point Gauss-Hermite
    quadrature (exact for polynomials of degree below ``2 n_quad - max_k``).

    Args:
        fn: a vectorised function of a 1-D array.
        max_k: highest index (>= 0).
        n_quad: quadrature points.

    Returns:
        array of shape ``(max_k + 1,)``.
    """
    check_positive("max_k", max_k + 1, integer=True)
    check_positive("n_quad", n_quad, integer=True)
    nodes, weights = hermite_e.hermegauss(n_quad)
    weights = weights / math.sqrt(2.0 * math.pi)  # the weight exp(-z^2/2) integrates to sqrt(2 pi)
    values = np.asarray(fn(nodes), dtype=np.float64)
    if values.shape != nodes.shape:
        raise ValueError(f"fn must map an array of shape {nodes.shape} to the same shape, got {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("fn returned NaN or infinite values at the quadrature nodes")
    return np.array(
        [float(np.sum(weights * values * normalized_hermite(k, nodes))) for k in range(max_k + 1)]
    )


def information_exponent(
    fn: Callable[[np.ndarray], np.ndarray], max_k: int = 8, *, tol: float = 1e-8, n_quad: int = 80
) -> int:
    """The smallest ``i >= 1`` with ``|E[fn(z) He_i(z)]| > tol`` (Sec. 3; Ben Arous et al., 2021).

    Raises:
        ValueError: no coefficient ``1..max_k`` exceeds ``tol`` (the link is constant up to that order).
    """
    check_positive("max_k", max_k, integer=True)
    check_positive("tol", tol)
    coeffs = hermite_coeffs(fn, max_k, n_quad=n_quad)
    for k in range(1, max_k + 1):
        if abs(coeffs[k]) > tol:
            return k
    raise ValueError(f"fn has no Hermite coefficient above tol={tol} up to max_k={max_k}")


class HermiteLink:
    """A link ``h(z) = sum_i coeffs[i] He_i(z) / sqrt(i!)`` (the paper's f_c and g, Sec. 3).

    Args:
        coeffs: ``{degree: coefficient}``; degrees are non-negative integers.
    """

    def __init__(self, coeffs: Mapping[int, float]) -> None:
        if not coeffs:
            raise ValueError("coeffs must name at least one degree")
        items = {}
        for k, v in coeffs.items():
            if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
                raise ValueError(f"coeffs degrees must be integers >= 0, got {k!r}")
            if not math.isfinite(float(v)):
                raise ValueError(f"coeffs[{k}] must be finite, got {v!r}")
            items[int(k)] = float(v)
        self.coeffs = dict(sorted(items.items()))
        degree = max(self.coeffs)
        raw = np.zeros(degree + 1)
        for k, v in self.coeffs.items():
            raw[k] = v / math.sqrt(math.factorial(k))
        self._raw = raw
        self._draw = hermite_e.hermeder(raw) if degree > 0 else np.zeros(1)

    @property
    def degree(self) -> int:
        return int(max(self.coeffs))

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return np.asarray(hermite_e.hermeval(z, self._raw))

    def derivative(self, z: np.ndarray) -> np.ndarray:
        return np.asarray(hermite_e.hermeval(z, self._draw))

    def __repr__(self) -> str:
        return f"HermiteLink({self.coeffs})"
