"""Finite-MDP utilities shared by the tabular ``rl`` papers.

Exact policy evaluation (one linear solve), stationary distributions of a behaviour policy,
discounted value iteration, input validation, and :class:`TabularEnv`, a ``gymnasium.Env`` over
a transition tensor so that any finite MDP (ours or a user's) plugs into the same agents.

Notation: ``S`` states, ``A`` actions; ``P`` has shape ``(S, A, S)`` with ``P[s, a, s']`` the
probability of ``s -> s'`` under ``a``; a deterministic policy is an integer array ``(S,)``; a
stochastic behaviour policy is a row-stochastic array ``(S, A)``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icml25.core.validate import check_in_range

__all__ = [
    "TabularMDP",
    "TabularEnv",
    "check_transitions",
    "check_policy",
    "check_discount",
    "policy_transition_matrix",
    "resolvent",
    "evaluate_policy",
    "stationary_distribution",
    "stationary_allocation",
    "value_iteration",
]

_ATOL = 1e-8


def check_transitions(P: np.ndarray, name: str = "P") -> np.ndarray:
    """Return ``P`` as float64 after checking shape ``(S, A, S)``, non-negativity and row sums."""
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 3 or P.shape[0] != P.shape[2] or P.shape[0] < 1 or P.shape[1] < 1:
        raise ValueError(f"{name} must have shape (S, A, S) with S, A >= 1, got {P.shape}")
    if not np.all(np.isfinite(P)) or np.any(P < -_ATOL):
        raise ValueError(f"{name} must be finite and non-negative")
    sums = P.sum(axis=2)
    if not np.allclose(sums, 1.0, atol=1e-6):
        s, a = np.unravel_index(np.argmax(np.abs(sums - 1.0)), sums.shape)
        raise ValueError(f"{name}[s, a, :] must sum to one; P[{s}, {a}, :] sums to {sums[s, a]:.6g}")
    return P


def check_discount(gamma: float) -> float:
    """Return ``gamma`` after checking ``0 <= gamma < 1``."""
    gamma = float(gamma)
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"gamma (discount) must lie in [0, 1), got {gamma}")
    return gamma


def check_policy(pi: np.ndarray, S: int, A: int, name: str = "pi") -> np.ndarray:
    """Return a deterministic policy as an int array ``(S,)`` with entries in ``[0, A)``."""
    arr = np.asarray(pi)
    if arr.shape != (S,):
        raise ValueError(f"{name} must be a deterministic policy of shape ({S},), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer) and not np.all(np.equal(np.mod(arr, 1), 0)):
        raise ValueError(f"{name} must hold integer actions")
    arr = arr.astype(np.int64)
    if np.any(arr < 0) or np.any(arr >= A):
        raise ValueError(f"{name} entries must be actions in [0, {A}), got {arr}")
    return arr


def _check_behaviour(pi: np.ndarray, S: int, A: int, name: str = "behaviour") -> np.ndarray:
    arr = np.asarray(pi, dtype=np.float64)
    if arr.shape != (S, A):
        raise ValueError(f"{name} must have shape ({S}, {A}), got {arr.shape}")
    if np.any(arr < -_ATOL) or not np.allclose(arr.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError(f"{name} rows must be probability distributions over actions")
    return arr


def policy_transition_matrix(P: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """``P^pi[s, s'] = P(s' | s, pi(s))`` for a deterministic ``pi`` (S,); returns (S, S)."""
    S = P.shape[0]
    return P[np.arange(S), pi]


def resolvent(P: np.ndarray, pi: np.ndarray, gamma: float) -> np.ndarray:
    """``G^pi = (I - gamma P^pi)^{-1}``, shape (S, S), so that ``V^pi_r = G^pi r``."""
    P_pi = policy_transition_matrix(P, pi)
    S = P_pi.shape[0]
    return np.linalg.solve(np.eye(S) - gamma * P_pi, np.eye(S))


def evaluate_policy(P: np.ndarray, pi: np.ndarray, r: np.ndarray, gamma: float) -> np.ndarray:
    """Exact discounted value ``V^pi_r = (I - gamma P^pi)^{-1} r``.

    Args:
        P: transitions (S, A, S).
        pi: deterministic policy (S,).
        r: on-policy reward ``r(s, pi(s))`` as (S,) or a batch (S, k).
        gamma: discount in [0, 1).

    Returns:
        Values with the shape of ``r``.
    """
    P = check_transitions(P)
    S, A = P.shape[:2]
    pi = check_policy(pi, S, A)
    gamma = check_discount(gamma)
    r = np.asarray(r, dtype=np.float64)
    if r.shape[0] != S or r.ndim not in (1, 2):
        raise ValueError(f"r must have shape ({S},) or ({S}, k), got {r.shape}")
    P_pi = policy_transition_matrix(P, pi)
    return np.linalg.solve(np.eye(S) - gamma * P_pi, r)


def stationary_distribution(P_pi: np.ndarray) -> np.ndarray:
    """Stationary distribution ``mu`` of a Markov chain (S, S): ``mu^T P_pi = mu^T``, ``sum mu = 1``.

    Solved as the least-squares solution of the stacked linear system (unique for a unichain).
    """
    P_pi = np.asarray(P_pi, dtype=np.float64)
    S = P_pi.shape[0]
    if P_pi.shape != (S, S):
        raise ValueError(f"P_pi must be square, got {P_pi.shape}")
    M = np.vstack([P_pi.T - np.eye(S), np.ones((1, S))])
    b = np.zeros(S + 1)
    b[-1] = 1.0
    mu, *_ = np.linalg.lstsq(M, b, rcond=None)
    mu = np.clip(mu, 0.0, None)
    return mu / mu.sum()


def stationary_allocation(P: np.ndarray, behaviour: np.ndarray) -> np.ndarray:
    """Stationary state-action distribution ``omega(s, a) = mu(s) pi(a|s)`` of a behaviour policy.

    Args:
        P: transitions (S, A, S).
        behaviour: row-stochastic (S, A).

    Returns:
        omega (S, A), a member of the navigation-constrained set Omega(M).
    """
    P = check_transitions(P)
    S, A = P.shape[:2]
    beh = _check_behaviour(behaviour, S, A)
    P_pi = np.einsum("sa,sat->st", beh, P)
    mu = stationary_distribution(P_pi)
    return mu[:, None] * beh


def value_iteration(
    P: np.ndarray, R: np.ndarray, gamma: float, *, tol: float = 1e-10, max_iter: int = 100_000
) -> tuple[np.ndarray, np.ndarray]:
    """Optimal values and a greedy deterministic policy (lowest-index tie-break).

    Args:
        P: transitions (S, A, S); R: rewards (S, A); gamma: discount in [0, 1).

    Returns:
        ``(V, pi)`` with shapes (S,) and (S,).
    """
    P = check_transitions(P)
    gamma = check_discount(gamma)
    R = np.asarray(R, dtype=np.float64)
    if R.shape != P.shape[:2]:
        raise ValueError(f"R must have shape {P.shape[:2]}, got {R.shape}")
    V = np.zeros(P.shape[0])
    for _ in range(max_iter):
        Q = R + gamma * P @ V
        V_new = Q.max(axis=1)
        if np.max(np.abs(V_new - V)) < tol:
            V = V_new
            break
        V = V_new
    Q = R + gamma * P @ V
    pi = np.argmax(Q.max(axis=1, keepdims=True) - 1e-9 <= Q, axis=1)
    return V, pi.astype(np.int64)


@dataclass(frozen=True)
class TabularMDP:
    """A finite MDP given by its transition tensor (rewards are supplied per query).

    Args:
        P: transitions (S, A, S); rows must sum to one.
        name: label for reports.
        initial_state: the state a continuing trajectory starts from.
    """

    P: np.ndarray
    name: str = "mdp"
    initial_state: int = 0

    def __post_init__(self) -> None:
        P = check_transitions(self.P)
        P.setflags(write=False)
        object.__setattr__(self, "P", P)
        check_in_range("TabularMDP.initial_state", self.initial_state, 0, P.shape[0], high_open=True)

    @property
    def n_states(self) -> int:
        return int(self.P.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.P.shape[1])

    def policy_matrix(self, pi: np.ndarray) -> np.ndarray:
        """``P^pi`` (S, S) of a deterministic policy."""
        return policy_transition_matrix(self.P, check_policy(pi, self.n_states, self.n_actions))

    def evaluate(self, pi: np.ndarray, r_state: np.ndarray, gamma: float) -> np.ndarray:
        """Exact ``V^pi_r`` by one linear solve (see :func:`evaluate_policy`)."""
        return evaluate_policy(self.P, pi, r_state, gamma)

    def stationary_allocation(self, behaviour: np.ndarray) -> np.ndarray:
        """Stationary (S, A) distribution of a behaviour policy (see :func:`stationary_allocation`)."""
        return stationary_allocation(self.P, behaviour)

    def to_env(self, rewards: np.ndarray | None = None) -> TabularEnv:
        """A gymnasium environment simulating this MDP."""
        return TabularEnv(self.P, rewards=rewards, initial_state=self.initial_state)


class TabularEnv(gym.Env[int, int]):
    """``gymnasium`` environment of a finite MDP; a continuing task (never terminates).

    ``step`` returns ``(s', reward, False, False, {})`` with ``reward = rewards[s, a]`` (0 when no
    rewards were given). The cumulative transition rows are cached so sampling a step costs one
    uniform draw and a bisection.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, P: np.ndarray, rewards: np.ndarray | None = None, initial_state: int = 0) -> None:
        self.P = check_transitions(P)
        S, A = self.P.shape[:2]
        if rewards is not None:
            rewards = np.asarray(rewards, dtype=np.float64)
            if rewards.shape != (S, A):
                raise ValueError(f"rewards must have shape ({S}, {A}), got {rewards.shape}")
        self.rewards = rewards
        self.initial_state = int(initial_state)
        self.observation_space = spaces.Discrete(S)  # type: ignore[assignment]
        self.action_space = spaces.Discrete(A)  # type: ignore[assignment]
        cum = np.cumsum(self.P, axis=2)
        cum[..., -1] = 1.0 + 1e-12
        self._cum: list[list[list[float]]] = cum.tolist()
        self.state = self.initial_state
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.state = self.initial_state
        return self.state, {}

    def sample_next(self, s: int, a: int, u: float) -> int:
        """Next state of ``(s, a)`` from a uniform ``u`` in [0, 1) (inverse CDF)."""
        return bisect.bisect_right(self._cum[s][a], u)

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        a = int(action)
        if not 0 <= a < self.P.shape[1]:
            raise ValueError(f"action must lie in [0, {self.P.shape[1]}), got {action}")
        s = self.state
        s_next = self.sample_next(s, a, float(self._rng.random()))
        reward = 0.0 if self.rewards is None else float(self.rewards[s, a])
        self.state = s_next
        return s_next, reward, False, False, {}
