"""Average Gradient Outer Product (AGOP) for *Emergence in non-neural models: grokking modular
arithmetic via average gradient outer product* (Mallinar et al., ICML 2025,
https://arxiv.org/abs/2407.20199).

For a predictor f: R^d → R^c with Jacobian J(x) ∈ R^{c×d}, the AGOP over points x_1..x_m is

    G = (1/m) Σ_i J(x_i)ᵀ J(x_i)                                   (Alg. 1, AGOP step)

optionally with the Jacobians centred across the points first (J ← J − mean_i J, the official
code's ``centering=True``). RFM sets M_{t+1} = G^s with s = 1/2.

Implements: the generic AGOP of stacked Jacobians, the exact Jacobian of a Mahalanobis-kernel
predictor f(x) = Σ_j α_j k_M(x, z_j), a fast exact AGOP of that predictor that never forms the
(m, c, d) Jacobian tensor, and the PSD matrix power.

Fast AGOP. With ∇_x k_M(x_i, z_j) = M (A_ij z_j + B_ij x_i) (see ``kernels.py``) the gradient of
output c at x_i is g_ic = M w_ic with w_ic = Σ_j A_ij α_jc z_j + b_ic x_i and b = B α. Writing
W_c = A diag(α_c) Z + diag(b_c) X and P for the centring projector (or I),

    Σ_c W_cᵀ P W_c = Zᵀ[(AᵀPA) ∘ ααᵀ]Z + Zᵀ[(PA)ᵀ ∘ αbᵀ]X + (same)ᵀ + Xᵀ[P ∘ bbᵀ]X,

so G = M (Σ_c W_cᵀ P W_c) Mᵀ / m costs one (n×m)(m×n) product plus O(n²(c + d)) work, all in
BLAS, where the direct route costs m·n·c·d and m·c·d memory.

Notation: m evaluation points, n centres, c outputs, d input dimension.
"""

from __future__ import annotations

import numpy as np

from icml25.core.validate import check_numeric_array, check_positive

from .kernels import MahalanobisKernel


def agop(J: np.ndarray, center: bool = False) -> np.ndarray:
    """AGOP of stacked Jacobians.

    Args:
        J: (m, c, d) Jacobians of f at m points (or (m, d) for a scalar output).
        center: subtract the mean Jacobian over the m points first.

    Returns:
        (d, d) symmetric PSD matrix G = (1/m) Σ_i J_iᵀ J_i.
    """
    J = np.asarray(J, dtype=np.float64)
    if J.ndim == 2:
        J = J[:, None, :]
    if J.ndim != 3:
        raise ValueError(f"J must have shape (m, c, d) or (m, d), got {J.shape}")
    m, _, d = J.shape
    if center:
        J = J - J.mean(axis=0, keepdims=True)
    flat = J.reshape(-1, d)
    # Alg. 1 (AGOP): G = (1/m) sum_i J(x_i)^T J(x_i)
    return flat.T @ flat / m


def _gradient_parts(
    kernel: MahalanobisKernel,
    X: np.ndarray,
    centers: np.ndarray,
    alpha: np.ndarray,
    M: np.ndarray,
    K: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(A, b) with ∇f_c(x_i) = M (Σ_j A_ij α_jc z_j + b_ic x_i)."""
    A, B = kernel.gradient_coefficients(X, centers, M, K)
    b = None if B is None else B @ alpha
    return A, b


def kernel_predictor_jacobian(
    kernel: MahalanobisKernel,
    X: np.ndarray,
    centers: np.ndarray,
    alpha: np.ndarray,
    M: np.ndarray,
) -> np.ndarray:
    """Exact Jacobian of f(x) = Σ_j α_j k_M(x, z_j) at the rows of X (direct, memory m·c·d).

    For the Gaussian kernel ∂f_c/∂x (x_i) = (1/L²) Σ_j α_jc K_ij M (z_j − x_i); for the quadratic
    kernel 2s Σ_j α_jc (x_iᵀMz_j) M z_j.

    Args:
        kernel: a :class:`~icml25.theory.rfm_grokking.kernels.MahalanobisKernel`.
        X: (m, d) evaluation points.
        centers: (n, d) kernel centres z_j (the training inputs).
        alpha: (n, c) coefficients.
        M: (d, d) symmetric feature matrix.

    Returns:
        (m, c, d) array J with J[i, c] = ∇_x f_c(x_i).
    """
    X, centers, alpha, M = (np.asarray(a, dtype=np.float64) for a in (X, centers, alpha, M))
    alpha = alpha.reshape(alpha.shape[0], -1)
    n, c = alpha.shape
    m, d = X.shape
    A, b = _gradient_parts(kernel, X, centers, alpha, M, None)
    # w_ic = sum_j A_ij alpha_jc z_j (+ b_ic x_i)
    W = (A @ (alpha[:, :, None] * centers[:, None, :]).reshape(n, c * d)).reshape(m, c, d)
    if b is not None:
        W += b[:, :, None] * X[:, None, :]
    return W @ M.T


def kernel_agop(
    kernel: MahalanobisKernel,
    X: np.ndarray,
    centers: np.ndarray,
    alpha: np.ndarray,
    M: np.ndarray,
    *,
    center: bool = True,
    K: np.ndarray | None = None,
) -> np.ndarray:
    """AGOP of a kernel predictor over the rows of X, without forming the Jacobian tensor.

    Equal (up to round-off) to ``agop(kernel_predictor_jacobian(...), center)``.

    Args:
        kernel: the kernel.
        X: (m, d) points the AGOP averages over (the training inputs in RFM).
        centers: (n, d) kernel centres.
        alpha: (n, c) coefficients of the predictor.
        M: (d, d) symmetric feature matrix the kernel uses.
        center: centre the Jacobians across the m points (official code: True).
        K: optional precomputed Gram matrix k_M(X, centers), (m, n).

    Returns:
        (d, d) symmetric PSD AGOP.
    """
    X, centers, alpha, M = (np.asarray(a, dtype=np.float64) for a in (X, centers, alpha, M))
    alpha = alpha.reshape(alpha.shape[0], -1)
    m = X.shape[0]
    A, b = _gradient_parts(kernel, X, centers, alpha, M, K)
    PA = A - A.mean(axis=0, keepdims=True) if center else A  # P A, P = I - 11^T/m
    # Z^T [(A^T P A) ∘ α α^T] Z   (P is a projector, so A^T P A = (PA)^T (PA))
    inner = PA.T @ PA
    inner *= alpha @ alpha.T
    H = centers.T @ inner @ centers
    del inner
    if b is not None:
        # Z^T [(PA)^T ∘ α b^T] X and its transpose
        cross = PA.T * (alpha @ b.T)
        ZX = centers.T @ cross @ X
        H += ZX + ZX.T
        # X^T [P ∘ b b^T] X = X^T diag(|b_i|^2) X - (1/m) (X^T b)(X^T b)^T
        H += (X * np.einsum("ic,ic->i", b, b)[:, None]).T @ X
        if center:
            Xb = X.T @ b
            H -= Xb @ Xb.T / m
    # Alg. 1 (AGOP): G = (1/m) sum_i J_i^T J_i with J_i^T = [M w_i1, ..., M w_ic]
    G = M @ H @ M.T / m
    return 0.5 * (G + G.T)


def psd_matrix_power(G: np.ndarray, s: float) -> np.ndarray:
    """G^s for symmetric G via ``eigh``, with negative eigenvalues (round-off) clipped to 0.

    Args:
        G: (d, d) symmetric matrix.
        s: power > 0 (RFM: s = 1/2).

    Returns:
        (d, d) symmetric PSD matrix.
    """
    check_numeric_array("G", G)
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1] or G.shape[0] == 0:
        raise ValueError(f"G must be a non-empty square (d, d) matrix, got shape {G.shape}")
    if not np.isfinite(G).all():
        raise ValueError("G contains NaN or infinite values")
    check_positive("s", s)
    w, V = np.linalg.eigh(0.5 * (G + G.T))
    w = np.clip(w, 0.0, None) ** s
    out = (V * w) @ V.T
    return 0.5 * (out + out.T)
