"""Mahalanobis kernels for the Recursive Feature Machine of *Emergence in non-neural models:
grokking modular arithmetic via average gradient outer product* (Mallinar et al., ICML 2025,
https://arxiv.org/abs/2407.20199).

A kernel k_M(x, z) depends on the data only through the feature matrix M (Alg. 1 of the paper).
Each kernel gives its Gram matrix and the coefficients of its input gradient in the form

    ∇_x k_M(x_i, z_j) = M (A_ij z_j + B_ij x_i),

which is all that the AGOP of the kernel predictor f(x) = Σ_j α_j k_M(x, z_j) needs (see
``agop.kernel_agop``). A new kernel only has to supply ``matrix`` and ``gradient_coefficients``.

Implements: the Gaussian kernel exp(−‖x−z‖²_M / (2L²)) of the official code (the paper writes the
exponent as ‖·‖²_M / L; we follow the code, L = 2.5) and the quadratic kernel s·(xᵀMz)².
Left out: the Laplace, "general quadratic" and NTK kernels of the official code.

Notation: m evaluation points x (rows of X), n centres z (rows of Z), d input dimension.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from icml25.core.validate import check_fields


@runtime_checkable
class MahalanobisKernel(Protocol):
    """What RFM needs from a kernel."""

    def matrix(self, X: np.ndarray, Z: np.ndarray, M: np.ndarray) -> np.ndarray:
        """Gram matrix K[i, j] = k_M(x_i, z_j), shape (m, n)."""
        ...

    def gradient_coefficients(
        self, X: np.ndarray, Z: np.ndarray, M: np.ndarray, K: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(A, B), each (m, n), with ∇_x k_M(x_i, z_j) = M (A_ij z_j + B_ij x_i); B None means 0."""
        ...


def mahalanobis_sq_distances(X: np.ndarray, Z: np.ndarray, M: np.ndarray) -> np.ndarray:
    """‖x_i − z_j‖²_M = x_iᵀMx_i + z_jᵀMz_j − 2 x_iᵀMz_j, clipped at 0 against round-off. (m, n)."""
    XM = X @ M
    x_sq = np.einsum("id,id->i", XM, X)
    z_sq = np.einsum("jd,jd->j", Z @ M, Z)
    D2 = x_sq[:, None] + z_sq[None, :] - 2.0 * (XM @ Z.T)
    return np.maximum(D2, 0.0, out=D2)


class _NestedParams:
    """scikit-learn's nested-parameter protocol for a frozen dataclass kernel, so a search can tune
    ``kernel__bandwidth`` of an :class:`~.rfm.RFM` (``rfm__kernel__bandwidth`` inside a pipeline).

    ``set_params`` validates the new values through the constructor and then updates this instance
    in place, which is what scikit-learn expects of a nested parameter (it calls it on a clone; a
    kernel shared between estimators changes in all of them, as any scikit-learn parameter would).
    """

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def set_params(self, **params: Any) -> Any:
        names = {f.name for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        unknown = sorted(set(params) - names)
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameters {unknown}; it has {sorted(names)}")
        checked = dataclasses.replace(self, **params)  # type: ignore[type-var]
        for name in params:
            object.__setattr__(self, name, getattr(checked, name))
        return self


@dataclass(frozen=True)
class GaussianMahalanobisKernel(_NestedParams):
    """k_M(x, z) = exp(−‖x − z‖²_M / (2L²)), as in the official ``gaussian_kernel.py``.

    Attributes:
        bandwidth: L (2.5 in the paper's code).
    """

    bandwidth: float = 2.5

    def __post_init__(self) -> None:
        check_fields(self, positive=("bandwidth",))

    def matrix(self, X: np.ndarray, Z: np.ndarray, M: np.ndarray) -> np.ndarray:
        # Alg. 1 (kernel): K_M(x, z) = exp(-||x - z||_M^2 / (2 L^2))
        D2 = mahalanobis_sq_distances(X, Z, M)
        D2 *= -1.0 / (2.0 * self.bandwidth**2)
        return np.exp(D2, out=D2)

    def gradient_coefficients(
        self, X: np.ndarray, Z: np.ndarray, M: np.ndarray, K: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        # ∇_x K_M(x, z) = K_M(x, z) M (z - x) / L^2, i.e. A = K / L^2 and B = -K / L^2
        if K is None:
            K = self.matrix(X, Z, M)
        A = K / self.bandwidth**2
        return A, -A


@dataclass(frozen=True)
class QuadraticMahalanobisKernel(_NestedParams):
    """k_M(x, z) = s · (xᵀ M z)².

    The official ``quadratic_kernel.py`` uses s = 3, which is our default. For the ridgeless
    solve s cancels (α scales by 1/s, the predictor and its AGOP do not change); it only matters
    together with a positive ridge.

    Attributes:
        scale: s > 0.
    """

    scale: float = 3.0

    def __post_init__(self) -> None:
        check_fields(self, positive=("scale",))

    def matrix(self, X: np.ndarray, Z: np.ndarray, M: np.ndarray) -> np.ndarray:
        # K_M(x, z) = s (x^T M z)^2
        return self.scale * ((X @ M) @ Z.T) ** 2

    def gradient_coefficients(
        self, X: np.ndarray, Z: np.ndarray, M: np.ndarray, K: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        # ∇_x K_M(x, z) = 2 s (x^T M z) M z, i.e. A = 2 s X M Z^T and B = 0
        return 2.0 * self.scale * ((X @ M) @ Z.T), None
