"""Per-objective regret of an agent on a known :class:`LinearMOMDP`, computed exactly each episode.

Part of our implementation of *Multi-objective Linear Reinforcement Learning with Lexicographic
Rewards* (Xue et al., ICML 2025, https://openreview.net/forum?id=RTHTyTsRT3). Implements the
per-objective regret ``Reg^i(K) = sum_k [V^i_pi*(x_1) - V^i_pi_k(x_1)]`` that Theorems 1-2 bound,
evaluated on the true model for the policy each episode executes (never from realised returns),
and the log-log slope from which our check reads sublinear growth.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from icml25.core.progress import ProgressFn

from .agents import _LinearAgent
from .dp import _evaluate, lexicographic_optimal_policy
from .env import LinearMOMDP

__all__ = ["RegretRun", "run_regret_experiment", "loglog_slope"]


@dataclass(frozen=True)
class RegretRun:
    """Cumulative per-objective regret ``Reg^i(k)``, shape (m, K), and the optimal values (m,)."""

    regret: np.ndarray
    v_star: np.ndarray
    seconds: float


def run_regret_experiment(
    mdp: LinearMOMDP,
    agent: _LinearAgent,
    *,
    K: int,
    rng: np.random.Generator,
    progress: ProgressFn | None = None,
) -> RegretRun:
    """Run ``K`` episodes; regret uses the exact value of each executed policy (not realised returns)."""
    if K < 1:
        raise ValueError(f"K must be >= 1, got {K}")
    if (agent.S, agent.A, agent.H, agent.m) != (mdp.n_states, mdp.n_actions, mdp.H, mdp.n_objectives):
        raise ValueError("agent and MDP disagree on (S, A, H, m)")
    start = time.perf_counter()
    _, V, _ = lexicographic_optimal_policy(mdp.P, mdp.R, mdp.H)
    v_star = V[:, 0, mdp.x1]
    gaps = np.zeros((mdp.n_objectives, K))
    cumP = np.cumsum(mdp.P, axis=2)
    m, S = mdp.n_objectives, mdp.n_states
    for k in range(K):
        policy = agent.episode_policy()
        gaps[:, k] = v_star - _evaluate(mdp.P, mdp.R, policy)[:, mdp.x1]
        cumpi = np.cumsum(policy, axis=2)
        u = rng.random((mdp.H, 2 + m))
        x = mdp.x1
        for h in range(mdp.H):
            a = int(min(np.searchsorted(cumpi[h, x], u[h, 0], side="right"), mdp.n_actions - 1))
            r = (u[h, 2:] < mdp.R[:, x, a]).astype(np.float64)  # Bernoulli rewards
            x_next = int(min(np.searchsorted(cumP[x, a], u[h, 1], side="right"), S - 1))
            agent.observe(h, x, a, r, x_next)
            x = x_next
        agent.end_episode()
        if progress is not None and (k + 1) % 500 == 0:
            progress(k + 1, K)
    return RegretRun(regret=np.cumsum(gaps, axis=1), v_star=v_star, seconds=time.perf_counter() - start)


def loglog_slope(regret: np.ndarray, frac: float = 0.1, points: int = 20) -> float:
    """Slope of log Reg(k) against log k over the last decade ``[frac K, K]`` (log-spaced points).

    A curve that ends at or below zero has no positive growth: its slope is reported as 0.
    """
    reg = np.asarray(regret, dtype=np.float64)
    K = reg.size
    if K < 10:
        raise ValueError(f"need at least 10 episodes, got {K}")
    if reg[-1] <= 0:
        return 0.0
    ks = np.unique(np.geomspace(max(1, int(frac * K)), K, points).astype(int))
    y = np.log(np.clip(reg[ks - 1], 1e-12, None))
    return float(np.polyfit(np.log(ks), y, 1)[0])
