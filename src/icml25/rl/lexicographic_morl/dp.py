"""Exact lexicographic planning on a known finite-horizon model: ground truth for regret.

Part of our implementation of *Multi-objective Linear Reinforcement Learning with Lexicographic
Rewards* (Xue et al., ICML 2025, https://openreview.net/forum?id=RTHTyTsRT3). Implements the
lexicographically optimal policy pi* of the paper's problem setting, against which the
per-objective regret of Theorem 1 is measured, and the trade-off constant of Assumption 1.

Lexicographic backward induction: at each ``(h, x)`` compute ``Q^1`` by dynamic programming and keep
``A^1_h(x) = argmax Q^1`` (ties within ``tol``); compute ``Q^2`` from the continuation values of the
lexicographic policy and keep its argmax inside ``A^1``; and so on. This is valid when ties are
exact (as in the generator); our reconstructed form of Assumption 1 is measured by
:func:`tradeoff_lambda`.
"""

from __future__ import annotations

import numpy as np

from icml25.core.validate import check_numeric_array
from icml25.rl.mdp import check_transitions

__all__ = ["lexicographic_optimal_policy", "evaluate_policy", "tradeoff_lambda"]


def _check_PR(P: np.ndarray, R: np.ndarray, H: int) -> tuple[np.ndarray, np.ndarray]:
    P = check_transitions(P)
    check_numeric_array("R", R)
    R = np.asarray(R, dtype=np.float64)
    if R.ndim != 3 or R.shape[1:] != P.shape[:2]:
        raise ValueError(f"R must have shape (m, {P.shape[0]}, {P.shape[1]}), got {R.shape}")
    if not np.isfinite(R).all():
        raise ValueError("R contains NaN or infinite values")
    if H < 1:
        raise ValueError(f"H must be >= 1, got {H}")
    return P, R


def lexicographic_optimal_policy(
    P: np.ndarray, R: np.ndarray, H: int, tol: float = 1e-9
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lexicographically optimal deterministic policy by backward induction.

    Args:
        P: transitions (S, A, S); R: mean rewards (m, S, A); H: horizon; tol: tie tolerance.

    Returns:
        ``(pi, V, Q)``: ``pi`` (H, S) (lowest index among lexicographic ties), ``V`` (m, H+1, S) the
        values of ``pi`` (``V[:, H] = 0``), ``Q`` (m, H, S, A) the action values with ``pi`` followed
        afterwards (the ``Q^i`` of Assumption 1).
    """
    P, R = _check_PR(P, R, H)
    m, S, A = R.shape
    V = np.zeros((m, H + 1, S))
    Q = np.zeros((m, H, S, A))
    pi = np.zeros((H, S), dtype=np.int64)
    for h in range(H - 1, -1, -1):
        cand = np.ones((S, A), dtype=bool)
        for i in range(m):
            Q[i, h] = R[i] + P @ V[i, h + 1]
            masked = np.where(cand, Q[i, h], -np.inf)
            cand &= masked >= masked.max(axis=1, keepdims=True) - tol  # A^i_h(x)
        pi[h] = np.argmax(cand, axis=1)
        V[:, h] = Q[:, h][:, np.arange(S), pi[h]]
    return pi, V, Q


def evaluate_policy(P: np.ndarray, R: np.ndarray, H: int, pi_probs: np.ndarray) -> np.ndarray:
    """Exact per-objective values of a (stochastic, non-stationary) policy.

    Args:
        pi_probs: (H, S, A) action probabilities, or (H, S) deterministic actions.

    Returns:
        ``V`` (m, S): values at step 1 from every state.
    """
    P, R = _check_PR(P, R, H)
    m, S, A = R.shape
    probs = check_numeric_array("pi_probs", pi_probs)
    if probs.shape == (H, S):
        if (
            not np.isfinite(probs).all()
            or (probs != np.round(probs)).any()
            or (probs < 0).any()
            or (probs >= A).any()
        ):
            raise ValueError(f"pi_probs as deterministic actions must be integers in [0, {A})")
        probs = np.eye(A)[probs.astype(np.int64)]
    if probs.shape != (H, S, A):
        raise ValueError(f"pi_probs must have shape ({H}, {S}, {A}) or ({H}, {S}), got {probs.shape}")
    if (
        not np.isfinite(probs).all()
        or (probs < 0).any()
        or not np.allclose(probs.sum(axis=2), 1.0, atol=1e-6)
    ):
        raise ValueError(
            "pi_probs must be finite, non-negative action probabilities that sum to 1 in every state"
        )
    return _evaluate(P, R, probs)


def _evaluate(P: np.ndarray, R: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """:func:`evaluate_policy` without input checks; probs (H, S, A)."""
    m, S, A = R.shape
    P2 = P.reshape(S * A, S)
    V = np.zeros((m, S))
    for h in range(probs.shape[0] - 1, -1, -1):
        Qh = R + (V @ P2.T).reshape(m, S, A)  # Q^i_h = r^i + P V^i_{h+1}
        V = (Qh * probs[h]).sum(axis=2)
    return V


def tradeoff_lambda(Q: np.ndarray, pi: np.ndarray, tol: float = 1e-9) -> float:
    """Smallest ``lambda`` with ``Q^i(x,a) - Q^i(x,pi*) <= lambda max_{j<i} [Q^j(x,pi*) - Q^j(x,a)]``.

    Args:
        Q: (m, H, S, A) from :func:`lexicographic_optimal_policy`; pi: (H, S).

    Returns:
        ``lambda*`` (``inf`` if a lower-priority gain comes with no higher-priority loss; 0 if never
        any gain).
    """
    m, H, S, A = Q.shape
    q_star = np.take_along_axis(Q, pi[None, :, :, None].repeat(m, 0), axis=3)  # (m, H, S, 1)
    loss = q_star - Q  # Q^j(pi*) - Q^j(a)
    lam = 0.0
    for i in range(1, m):
        gain = -loss[i]
        worst = loss[:i].max(axis=0)
        hit = gain > tol
        if np.any(hit & (worst <= tol)):
            return float("inf")
        if hit.any():
            lam = max(lam, float((gain[hit] / worst[hit]).max()))
    return lam
