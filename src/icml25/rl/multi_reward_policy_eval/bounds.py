"""The convex upper bound on the characteristic time, its optimal allocation, and the stopping rule.

Part of our implementation of *Adaptive Exploration for Multi-Reward Multi-Policy Evaluation* (Russo
& Pacchiano, ICML 2025, https://arxiv.org/abs/2502.02516). Implements the value-deviation
term and the convex relaxation U_eps(omega) of the instance-dependent lower bound (Sec. 3-4), its
minimising allocation omega*, and the threshold of the stopping rule.

Notation (paper Sec. 3-4, repo ``characteristic_time.py``): ``G^pi = (I - gamma P^pi)^{-1}``;
``K_s = I - 1 P(.|s, pi(s))^T``; the value deviation of ``pi`` at ``s`` is ``rho^pi_r(s) = K_s G^pi r``
and ``A^pi(s) = max_i [max_{r in R_pi} |(K_s G^pi)_i r|]^2``. The relaxed bound is

    U_eps(omega) = gamma^2 / (4 eps^2 (1-gamma)^2) * max_pi max_s A^pi(s) / omega(s, pi(s)),

minimised over the stationary state-action distributions ``Omega(M)`` (navigation constraints).
Several policies that take the same action at ``s`` share ``omega(s, a)``, so the bound only needs
``A_eff(s, a) = max_{pi : pi(s) = a} A^pi(s)`` (zero where no target policy plays ``a``).

The minimisation is solved as a linear program (our derivation, the repo uses cvxpy's ``inv_pos``):
maximise ``z`` subject to ``omega(s, a) >= z A_eff(s, a)`` and ``omega in Omega(M)``; then
``min U = const / z*``. The bound's constant could not be checked against the paper text and is a
parameter (``constant``); it changes the stopping threshold, never the allocation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from icml25.rl.mdp import check_discount, check_policy, check_transitions, policy_transition_matrix

from .reward_sets import RewardSet

__all__ = [
    "Allocation",
    "bound_constant",
    "value_deviation_bound",
    "effective_bound",
    "characteristic_time_ub",
    "solve_allocation",
    "navigation_residual",
    "empirical_transitions",
    "stopping_threshold",
    "stopping_statistic",
]


def bound_constant(gamma: float, eps: float) -> float:
    """``gamma^2 / (4 eps^2 (1 - gamma)^2)``, the repo's constant in front of the max."""
    gamma = check_discount(gamma)
    if eps <= 0:
        raise ValueError(f"eps must be positive, got {eps}")
    return gamma**2 / (4 * eps**2 * (1 - gamma) ** 2)


def value_deviation_bound(P: np.ndarray, pi: np.ndarray, reward_set: RewardSet, gamma: float) -> np.ndarray:
    """``A^pi(s) = max_i [max_{r in R} |(K_s G^pi)_{i,:} r|]^2`` for every state; returns (S,)."""
    P = check_transitions(P)
    S, A = P.shape[:2]
    pi = check_policy(pi, S, A)
    gamma = check_discount(gamma)
    if reward_set.n_states != S:
        raise ValueError(f"reward_set is over {reward_set.n_states} states, the MDP has {S}")
    P_pi = policy_transition_matrix(P, pi)
    G = np.linalg.solve(np.eye(S) - gamma * P_pi, np.eye(S))
    # (K_s G)[i, :] = G[i, :] - P(.|s, pi(s))^T G   -> C[s, i, :]
    C = G[None, :, :] - (P_pi @ G)[:, None, :]
    support = reward_set.max_abs(C.reshape(S * S, S)).reshape(S, S)
    return support.max(axis=1) ** 2


def effective_bound(
    P: np.ndarray, policies: Sequence[np.ndarray], reward_sets: Sequence[RewardSet], gamma: float
) -> np.ndarray:
    """``A_eff(s, a) = max_{pi : pi(s) = a} A^pi(s)``, shape (S, A)."""
    P = check_transitions(P)
    S, A = P.shape[:2]
    if len(policies) != len(reward_sets) or not policies:
        raise ValueError(
            f"need one reward set per policy (and at least one policy), got {len(policies)} policies "
            f"and {len(reward_sets)} reward sets"
        )
    A_eff = np.zeros((S, A))
    for pi, rs in zip(policies, reward_sets, strict=True):
        pi = check_policy(pi, S, A)
        Api = value_deviation_bound(P, pi, rs, gamma)
        A_eff[np.arange(S), pi] = np.maximum(A_eff[np.arange(S), pi], Api)
    return A_eff


def characteristic_time_ub(omega: np.ndarray, A_eff: np.ndarray, gamma: float, eps: float) -> float:
    """``U_eps(omega) = const * max_{s,a: A_eff > 0} A_eff(s,a) / omega(s,a)``; inf if a needed pair is 0"""
    omega = np.asarray(omega, dtype=np.float64)
    A_eff = np.asarray(A_eff, dtype=np.float64)
    if omega.shape != A_eff.shape:
        raise ValueError(f"omega must have shape {A_eff.shape}, got {omega.shape}")
    if np.any(omega < 0):
        raise ValueError("omega must be non-negative")
    need = A_eff > 0
    if not need.any():
        return 0.0
    if np.any(omega[need] <= 0):
        return math.inf
    return bound_constant(gamma, eps) * float(np.max(A_eff[need] / omega[need]))


@dataclass(frozen=True)
class Allocation:
    """The LP solution: ``omega`` (S, A) in Omega(M), the bound value ``U`` at it, and ``z*``."""

    omega: np.ndarray
    value: float
    z: float


def _navigation_constraints(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equality rows for ``sum omega = 1`` and ``sum_a omega(s,a) = sum_{s',a'} P(s|s',a') omega(s',a')``."""
    S, A = P.shape[:2]
    out_flow = np.kron(np.eye(S), np.ones((1, A)))  # (S, S*A): sum_a omega(s, a)
    in_flow = P.reshape(S * A, S).T  # (S, S*A): sum_{s',a'} P(s | s', a') omega(s', a')
    A_eq = np.vstack([np.ones((1, S * A)), out_flow - in_flow])
    b_eq = np.zeros(S + 1)
    b_eq[0] = 1.0
    return A_eq, b_eq


def navigation_residual(P: np.ndarray, omega: np.ndarray) -> float:
    """Largest violation of ``omega in Omega(M)`` (sum to one, flow balance, non-negativity)."""
    P = check_transitions(P)
    omega = np.asarray(omega, dtype=np.float64)
    A_eq, b_eq = _navigation_constraints(P)
    flow = np.abs(A_eq @ omega.reshape(-1) - b_eq).max()
    return float(max(flow, max(0.0, -float(omega.min()))))


def solve_allocation(P: np.ndarray, A_eff: np.ndarray, gamma: float, eps: float) -> Allocation:
    """``omega* = argmin_{omega in Omega(M)} U_eps(omega)`` as the LP ``max z`` (HiGHS).

    Args:
        P: transitions (S, A, S) (the true or the empirical model).
        A_eff: (S, A) from :func:`effective_bound`.
        gamma, eps: discount and accuracy (only the reported ``value`` depends on them).

    Returns:
        :class:`Allocation`; ``value`` is ``inf`` when no stationary distribution covers every
        needed pair (e.g. an unreachable state).
    """
    P = check_transitions(P)
    S, A = P.shape[:2]
    A_eff = np.asarray(A_eff, dtype=np.float64)
    if A_eff.shape != (S, A) or np.any(A_eff < 0):
        raise ValueError(f"A_eff must be non-negative with shape ({S}, {A}), got {A_eff.shape}")
    scale = float(A_eff.max())
    if scale <= 0:
        raise ValueError("A_eff is zero everywhere: there is nothing to estimate")
    A_n = A_eff / scale  # rescaled by 1/max A for conditioning (as the repo does)
    n = S * A
    A_eq, b_eq = _navigation_constraints(P)
    A_eq = np.hstack([A_eq, np.zeros((S + 1, 1))])
    need = np.flatnonzero(A_n.reshape(-1) > 0)
    # z * A_eff(s, a) - omega(s, a) <= 0 for every needed pair
    A_ub = np.zeros((need.size, n + 1))
    A_ub[np.arange(need.size), need] = -1.0
    A_ub[:, n] = A_n.reshape(-1)[need]
    c = np.zeros(n + 1)
    c[n] = -1.0  # maximise z
    res = linprog(
        c, A_ub=A_ub, b_ub=np.zeros(need.size), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs"
    )
    if res.status != 0:
        raise RuntimeError(f"allocation LP failed: {res.message}")
    omega = np.clip(res.x[:n].reshape(S, A), 0.0, None)
    z = float(res.x[n])
    value = math.inf if z <= 1e-14 else bound_constant(gamma, eps) * scale / z
    return Allocation(omega=omega, value=value, z=z / scale)


def empirical_transitions(counts: np.ndarray, prior: float = 1.0) -> np.ndarray:
    """Dirichlet-smoothed model ``P_hat(s'|s,a) = (N(s,a,s') + prior) / (N(s,a) + prior S)``; (S, A, S)."""
    N = np.asarray(counts, dtype=np.float64)
    if N.ndim != 3 or N.shape[0] != N.shape[2] or np.any(N < 0):
        raise ValueError(f"counts must be non-negative with shape (S, A, S), got {N.shape}")
    if prior <= 0:
        raise ValueError(f"prior must be positive, got {prior}")
    S = N.shape[0]
    return (N + prior) / (N.sum(axis=2, keepdims=True) + prior * S)


def stopping_threshold(counts_sa: np.ndarray, delta: float) -> float:
    """``beta(N, delta) = log(1/delta) + (S-1) sum_{s,a} log(e (1 + N(s,a)/(S-1)))`` (repo ``_beta``)."""
    N = np.asarray(counts_sa, dtype=np.float64)
    if N.ndim != 2 or np.any(N < 0):
        raise ValueError(f"counts_sa must be non-negative with shape (S, A), got {N.shape}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    S = N.shape[0]
    k = max(S - 1, 1)
    return float(math.log(1.0 / delta) + k * np.sum(np.log(math.e * (1.0 + N / k))))


def stopping_statistic(counts_sa: np.ndarray, A_eff_hat: np.ndarray, gamma: float, eps: float) -> float:
    """``Z_t = t / U_eps(N_t / t; P_hat_t)``, which simplifies to ``min N(s,a) / (const A_eff(s,a))``.

    Stop at the first check where ``Z_t >= stopping_threshold(N_t, delta)``.
    """
    N = np.asarray(counts_sa, dtype=np.float64)
    t = float(N.sum())
    if t <= 0:
        return 0.0
    U = characteristic_time_ub(N / t, A_eff_hat, gamma, eps)
    return 0.0 if math.isinf(U) else (math.inf if U == 0 else t / U)
