"""Hidden progress measures of *Emergence in non-neural models: grokking modular arithmetic via
average gradient outer product* (Mallinar et al., ICML 2025, https://arxiv.org/abs/2407.20199).

Sec. 3 of the paper tracks two measures that improve steadily while test accuracy is flat:

- circulant deviation D(B) of the bottom-left p×p block B of the feature matrix: build S(B) by
  shifting row ℓ left by ℓ places (wrapping), so each column of S(B) is one wrapped diagonal;
  D(B) = Σ_j Var(S(B)[:, j]) / ‖B‖²_F with Var the sum of squared deviations from the mean.
  D = 0 exactly for circulants. Hankel matrices (constant anti-diagonals) count as circulant too,
  so we also shift by −ℓ and report the smaller value.
- AGOP alignment ρ(M_t, M*) = ⟨M_t, M*⟩_F / (‖M_t‖_F ‖M*‖_F), with M* the final feature matrix.

For x·y and x/y the block is circulant only after reordering residues by the discrete logarithm
h = g^i ↦ i with g the smallest generator of Z_p^* (the choice of g does not matter, Lemma J.1);
the residue 0 is dropped, leaving a (p−1)×(p−1) block.

Implements: ``circulant_deviation``, ``primitive_root``, ``discrete_log_reorder`` (and its
inverse), ``block_circulant_deviation`` (the measure applied to a 2p×2p feature matrix),
``agop_alignment`` and ``pearson_correlation`` (for NFM vs sqrt(AGOP) in Sec. 4).
"""

from __future__ import annotations

import numpy as np

from .data import check_op, check_prime

_LOG_OPS = ("mul", "div")


def _square(matrix: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(matrix, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square 2-D array, got shape {a.shape}")
    return a


def _shifted(B: np.ndarray, sign: int) -> np.ndarray:
    """S(B)[ℓ, j] = B[ℓ, (j + sign·ℓ) mod p]: column j of S is the j-th wrapped (anti-)diagonal."""
    p = B.shape[0]
    ell = np.arange(p)[:, None]
    return B[ell, (np.arange(p)[None, :] + sign * ell) % p]


def circulant_deviation(block: np.ndarray, allow_hankel: bool = True) -> float:
    """Circulant deviation D(B) of a square matrix (Sec. 3).

    Args:
        block: (p, p) matrix, e.g. the bottom-left block of a feature matrix.
        allow_hankel: also measure the deviation from a Hankel (anti-circulant) matrix and
            return the minimum of the two.

    Returns:
        D(B) ≥ 0, invariant to scaling B; 0 for an exact circulant (or Hankel with
        ``allow_hankel``); NaN for the zero matrix.
    """
    B = _square(block, "block")
    norm_sq = float(np.sum(B * B))
    if norm_sq == 0.0:
        return float("nan")
    signs = (1, -1) if allow_hankel else (1,)
    devs = []
    for sign in signs:
        S = _shifted(B, sign)
        # D(B) = (1/||B||_F^2) sum_j sum_l (S_lj - mean_l S_lj)^2
        devs.append(float(np.sum((S - S.mean(axis=0, keepdims=True)) ** 2)) / norm_sq)
    return min(devs)


def primitive_root(p: int) -> int:
    """Smallest generator g of the multiplicative group Z_p^* (p prime)."""
    p = check_prime(p)
    if p == 2:
        return 1
    order = p - 1
    factors = [q for q in range(2, order + 1) if order % q == 0 and all(q % r for r in range(2, q))]
    for g in range(2, p):
        if all(pow(g, order // q, p) != 1 for q in factors):
            return g
    raise AssertionError("unreachable: every prime has a primitive root")


def discrete_log_order(p: int) -> np.ndarray:
    """Residues in discrete-log order: entry i is g^i mod p, i = 0..p−2 (length p−1)."""
    g = primitive_root(p)
    return np.array([pow(g, i, p) for i in range(p - 1)], dtype=np.int64)


def discrete_log_reorder(matrix: np.ndarray, p: int) -> np.ndarray:
    """Reorder a p×p matrix indexed by residues into discrete-log order, dropping residue 0.

    Args:
        matrix: (p, p) array indexed by residues 0..p−1.
        p: the prime.

    Returns:
        (p−1, p−1) array R with R[i, j] = matrix[g^i mod p, g^j mod p].
    """
    p = check_prime(p)
    a = np.asarray(matrix)
    if a.shape != (p, p):
        raise ValueError(f"matrix must have shape (p, p) = ({p}, {p}), got {a.shape}")
    idx = discrete_log_order(p)
    return a[np.ix_(idx, idx)]


def inverse_discrete_log_reorder(matrix: np.ndarray, p: int) -> np.ndarray:
    """Inverse of :func:`discrete_log_reorder`: (p−1, p−1) in log order → (p, p), residue 0 zero."""
    p = check_prime(p)
    a = np.asarray(matrix)
    if a.shape != (p - 1, p - 1):
        raise ValueError(f"matrix must have shape (p-1, p-1) = ({p - 1}, {p - 1}), got {a.shape}")
    out = np.zeros((p, p), dtype=a.dtype)
    idx = discrete_log_order(p)
    out[np.ix_(idx, idx)] = a
    return out


def bottom_left_block(M: np.ndarray) -> np.ndarray:
    """The bottom-left p×p block M[p:, :p] of a 2p×2p feature matrix."""
    M = _square(M, "M")
    if M.shape[0] % 2:
        raise ValueError(f"M must be 2p × 2p, got shape {M.shape}")
    p = M.shape[0] // 2
    return M[p:, :p]


def block_circulant_deviation(M: np.ndarray, op: str, allow_hankel: bool = True) -> float:
    """Circulant deviation of the bottom-left block of a 2p×2p feature matrix.

    For ``op`` in {"mul", "div"} the block is first put in discrete-log order (Sec. 3).

    Args:
        M: (2p, 2p) feature matrix over inputs e_a ⊕ e_b.
        op: the task, ``"add"``, ``"sub"``, ``"mul"`` or ``"div"``.
        allow_hankel: see :func:`circulant_deviation`.

    Returns:
        D of the (reordered) block; NaN if the block is zero (e.g. M = I).
    """
    op = check_op(op)
    B = bottom_left_block(M)
    if op in _LOG_OPS:
        B = discrete_log_reorder(B, B.shape[0])
    return circulant_deviation(B, allow_hankel=allow_hankel)


def agop_alignment(M_t: np.ndarray, M_star: np.ndarray) -> float:
    """ρ(M_t, M*) = ⟨vec M_t, vec M*⟩ / (‖M_t‖ ‖M*‖) (Sec. 3); 1 for M_t ∝ M* with a positive factor."""
    a = np.asarray(M_t, dtype=np.float64)
    b = np.asarray(M_star, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"M_t and M_star must have the same shape, got {a.shape} and {b.shape}")
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    if denom == 0.0:
        return float("nan")
    return float(np.sum(a * b)) / denom


def pearson_correlation(A: np.ndarray, B: np.ndarray) -> float:
    """Pearson correlation of the entries of two equally shaped arrays (NFM vs sqrt(AGOP), Sec. 4)."""
    a = np.asarray(A, dtype=np.float64).ravel()
    b = np.asarray(B, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"A and B must have the same number of entries, got {a.size} and {b.size}")
    a = a - a.mean()
    b = b - b.mean()
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    if denom == 0.0:
        return float("nan")
    return float(a @ b) / denom
