"""Problem instances (target policies and reward sets of the paper's regimes) and the evaluation loop.

Part of our implementation of *Adaptive Exploration for Multi-Reward Multi-Policy Evaluation* (Russo
& Pacchiano, ICML 2025, https://arxiv.org/abs/2502.02516). Implements the
experimental protocol of Sec. 5: the single- and multi-policy regimes, and the max value-estimation
error over every (policy, reward) pair that the paper's figures plot.

Regimes (repo ``tabular_sim.py`` / ``run.sh``):
    ``single_rewardfree``  one policy, optimal for the one-hot reward on the last state under its
                           "forward" action, evaluated on the whole box [0, 1]^S;
    ``multi_finite``       three policies, each optimal for a random one-hot (s, a) reward, each with
                           one random canonical reward ``e_j``;
    ``multi_rewardfree``   the same three policies, each with the box.

The error of an estimate is the worst case over the reward set: ``max_{pi, r in R_pi}
||V_hat^pi_r - V^pi_r||_inf = max_pi max_i max_{r in R_pi} |(G_hat^pi - G^pi)_i r|``. For the box this
is the exact supremum (closed form); the repo evaluates the S basis rewards, a lower bound on it.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core.progress import ProgressFn
from icml25.rl.mdp import TabularEnv, TabularMDP, check_discount, resolvent, value_iteration

from .agents import PolicyEvaluationAgent
from .reward_sets import BoxRewardSet, RewardSet, canonical_rewards

__all__ = ["PEProblem", "REGIMES", "make_problem", "max_estimation_error", "PERun", "run_pe_experiment"]

REGIMES = ("single_rewardfree", "multi_finite", "multi_rewardfree")

# the action that moves "forward" in each environment (RIGHT; double_chain orders RIGHT first)
_FORWARD = {"riverswim": 1, "forked_riverswim": 1, "double_chain": 0, "n_arms": 0}


@dataclass(frozen=True)
class PEProblem:
    """One evaluation task: an MDP, target policies, one reward set per policy, gamma."""

    mdp: TabularMDP
    policies: tuple[np.ndarray, ...]
    reward_sets: tuple[RewardSet, ...]
    gamma: float
    regime: str = "custom"

    def __post_init__(self) -> None:
        check_discount(self.gamma)
        if not self.policies or len(self.policies) != len(self.reward_sets):
            raise ValueError("give at least one policy and exactly one reward set per policy")


def make_problem(
    mdp: TabularMDP,
    regime: str,
    *,
    gamma: float = 0.9,
    rng: np.random.Generator,
    env_name: str = "",
    distinct_draws: bool = True,
) -> PEProblem:
    """Target policies and reward sets of one of :data:`REGIMES` on ``mdp``.

    In the multi-policy regimes each of the three target policies is optimal for a one-hot reward on
    a random (state, action) pair, and in ``multi_finite`` its reward set is one canonical reward
    ``e_j`` of a random state ``j`` (Section 5 of the paper). ``distinct_draws=True`` (the default)
    draws the three pairs, and the three states, without replacement, as the official
    ``tabular_sim.setup_rewards`` does; ``False`` draws each independently (our earlier rule, under
    which two policies or two reward sets can coincide).
    """
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    S, A = mdp.n_states, mdp.n_actions
    if regime == "single_rewardfree":
        R = np.zeros((S, A))
        R[S - 1, _FORWARD.get(env_name, A - 1)] = 1.0
        policies: list[np.ndarray] = [value_iteration(mdp.P, R, gamma)[1]]
        sets: list[RewardSet] = [BoxRewardSet(S)]
    elif distinct_draws:
        if S * A < 3 or (regime == "multi_finite" and S < 3):
            raise ValueError(
                f"distinct_draws needs at least 3 (state, action) pairs and 3 states, got S={S}, A={A}"
            )
        policies = []
        for flat in rng.choice(S * A, size=3, replace=False):
            R = np.zeros((S, A))
            R[int(flat) // A, int(flat) % A] = 1.0
            policies.append(value_iteration(mdp.P, R, gamma)[1])
        if regime == "multi_finite":
            sets = [canonical_rewards(S, [int(j)]) for j in rng.choice(S, size=3, replace=False)]
        else:
            sets = [BoxRewardSet(S) for _ in policies]
    else:
        policies = []
        for _ in range(3):
            R = np.zeros((S, A))
            R[rng.integers(S), rng.integers(A)] = 1.0
            policies.append(value_iteration(mdp.P, R, gamma)[1])
        if regime == "multi_finite":
            sets = [canonical_rewards(S, [int(rng.integers(S))]) for _ in policies]
        else:
            sets = [BoxRewardSet(S) for _ in policies]
    return PEProblem(mdp, tuple(policies), tuple(sets), gamma, regime)


def max_estimation_error(
    P_true: np.ndarray,
    P_hat: np.ndarray,
    policies: Sequence[np.ndarray],
    reward_sets: Sequence[RewardSet],
    gamma: float,
) -> float:
    """``max_{pi, r in R_pi} ||V_hat^pi_r - V^pi_r||_inf`` with ``V_hat`` evaluated exactly on ``P_hat``."""
    worst = 0.0
    for pi, rs in zip(policies, reward_sets, strict=True):
        D = resolvent(P_hat, pi, gamma) - resolvent(P_true, pi, gamma)
        worst = max(worst, float(rs.max_abs(D).max()))
    return worst


@dataclass(frozen=True)
class PERun:
    """Curves of one run, recorded every ``eval_every`` steps."""

    steps: np.ndarray
    max_error: np.ndarray
    alloc_l1: np.ndarray  # ||N_t/t - omega_ref||_1 (NaN without a reference)
    stop_ratio: np.ndarray  # Z_t / beta(N_t, delta) (NaN when not recorded)
    final_counts: np.ndarray
    seconds: float


def run_pe_experiment(
    env: TabularMDP | TabularEnv,
    agent: PolicyEvaluationAgent,
    *,
    horizon: int,
    eval_every: int,
    rng: np.random.Generator,
    omega_ref: np.ndarray | None = None,
    record_stopping: bool = False,
    stop_at_rule: bool = False,
    progress: ProgressFn | None = None,
) -> PERun:
    """Run one continuing trajectory of ``agent`` from the initial state and record its errors.

    Args:
        env: a :class:`TabularMDP` (fast inverse-CDF sampling with uniforms from ``rng``) or a
            :class:`TabularEnv` (stepped through the gymnasium API, reset with a seed from ``rng``).
        agent: the exploration agent (built for the same MDP).
        horizon: number of steps; eval_every: steps between evaluations.
        omega_ref: allocation whose L1 distance to ``N_t/t`` is tracked (e.g. omega* of the true MDP).
        record_stopping: also record ``Z_t / beta`` at each evaluation.
        stop_at_rule: end the run at the first evaluation where the stopping rule fires.
    """
    if horizon < 1 or eval_every < 1:
        raise ValueError(f"horizon and eval_every must be >= 1, got {horizon}, {eval_every}")
    P_true = env.P
    if P_true.shape[:2] != (agent.S, agent.A):
        raise ValueError(f"agent is for (S, A) = {(agent.S, agent.A)}, env has {P_true.shape[:2]}")
    start = time.perf_counter()
    if isinstance(env, TabularMDP):
        cum = np.cumsum(P_true, axis=2)
        cum[..., -1] = 1.0 + 1e-12
        cum_rows = cum.tolist()
        s = env.initial_state

        def step(s: int, a: int, u: float) -> int:
            return bisect.bisect_right(cum_rows[s][a], u)

    else:
        s, _ = env.reset(seed=int(rng.integers(2**31)))

        def step(s: int, a: int, u: float) -> int:
            return int(env.step(a)[0])

    steps, errs, l1s, ratios = [], [], [], []
    t = 0
    while t < horizon:
        n = min(eval_every, horizon - t)
        us = rng.random(n).tolist()
        for u in us:
            a = agent.act(s)
            s_next = step(s, a, u)
            agent.observe(s, a, s_next)
            s = s_next
        t += n
        steps.append(t)
        errs.append(
            max_estimation_error(P_true, agent.model(), agent.policies, agent.reward_sets, agent.gamma)
        )
        Nsa = agent.counts_sa
        l1s.append(float(np.abs(Nsa / Nsa.sum() - omega_ref).sum()) if omega_ref is not None else np.nan)
        ratio = agent.stopping_ratio() if (record_stopping or stop_at_rule) else np.nan
        ratios.append(ratio)
        if progress is not None:
            progress(t, horizon)
        if stop_at_rule and ratio >= 1.0:
            break
    return PERun(
        steps=np.asarray(steps),
        max_error=np.asarray(errs),
        alloc_l1=np.asarray(l1s),
        stop_ratio=np.asarray(ratios, dtype=float),
        final_counts=agent.counts_sa,
        seconds=time.perf_counter() - start,
    )
