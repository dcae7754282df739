"""Adaptive Exploration for Multi-Reward Multi-Policy Evaluation.

Alessio Russo, Aldo Pacchiano. ICML 2025. https://arxiv.org/abs/2502.02516 ·
official code https://github.com/rssalessio/multi-reward-multi-policy-eval

Online (epsilon, delta)-PAC evaluation of several deterministic target policies, each under a finite
or convex set of rewards, from one continuing trajectory in a finite discounted MDP with unknown
transitions. The instance-dependent lower bound is non-convex; the paper replaces it by a convex
upper bound driven by the value deviation ``rho^pi_r(s) = V^pi_r - P(.|s,pi(s))^T V^pi_r``, and
MR-NaS-PE explores by tracking the state-action allocation that minimises it, with forced
exploration and a PAC stopping rule.

Implements: the value-deviation term A^pi(s) for finite, box ([0,1]^S, closed form) and polytope
reward sets (Sec. 4, repo ``characteristic_time.py``); the convex bound U_eps(omega) and its optimal
allocation over the navigation-constrained set Omega(M), solved as a linear program with HiGHS
(our reformulation of the repo's cvxpy ``inv_pos`` problem); MR-NaS-PE (Alg. 1, repo
``mr_nas_pe.py``) with its oracle-omega variant; the stopping rule ``t / U_eps(N_t/t; P_hat_t) >=
beta(N_t, delta)`` (repo ``base_agent.py``; never exercised by the repo's experiments); the
noisy-policy and GVFExplorer baselines; Riverswim, ForkedRiverswim, DoubleChain and NArms.

Choices where the paper leaves room: the constant ``gamma^2 / (4 eps^2 (1-gamma)^2)`` is the repo's
and only affects stopping; transition numbers follow the repo (Riverswim/ForkedRiverswim move right
with 0.3); the box error metric is the exact supremum over [0,1]^S (the repo checks basis rewards);
A^pi uses deterministic policies only; l_p-ball sets (cvxpy) and SF-NR are not implemented.

Usage::

    mdp = riverswim(10)
    problem = make_problem(mdp, "multi_finite", gamma=0.9, rng=np.random.default_rng(0))
    agent = MRNaSPE(mdp.n_states, mdp.n_actions, problem.policies, problem.reward_sets,
                    gamma=0.9, eps=0.1, delta=0.01, rng=np.random.default_rng(1))
    run = run_pe_experiment(mdp, agent, horizon=20_000, eval_every=1000, rng=np.random.default_rng(2))
"""

from .agents import GVFExplorerAgent, MRNaSPE, NoisyPolicyAgent, PolicyEvaluationAgent
from .bounds import (
    Allocation,
    bound_constant,
    characteristic_time_ub,
    effective_bound,
    empirical_transitions,
    navigation_residual,
    solve_allocation,
    stopping_statistic,
    stopping_threshold,
    value_deviation_bound,
)
from .envs import ENVIRONMENTS, double_chain, forked_riverswim, make_env, n_arms, riverswim
from .experiment import REGIMES, PEProblem, PERun, make_problem, max_estimation_error, run_pe_experiment
from .reward_sets import BoxRewardSet, FiniteRewardSet, PolytopeRewardSet, RewardSet, canonical_rewards

__all__ = [
    "Allocation",
    "BoxRewardSet",
    "ENVIRONMENTS",
    "FiniteRewardSet",
    "GVFExplorerAgent",
    "MRNaSPE",
    "NoisyPolicyAgent",
    "PEProblem",
    "PERun",
    "PolicyEvaluationAgent",
    "PolytopeRewardSet",
    "REGIMES",
    "RewardSet",
    "bound_constant",
    "canonical_rewards",
    "characteristic_time_ub",
    "double_chain",
    "effective_bound",
    "empirical_transitions",
    "forked_riverswim",
    "make_env",
    "make_problem",
    "max_estimation_error",
    "n_arms",
    "navigation_residual",
    "riverswim",
    "run_pe_experiment",
    "solve_allocation",
    "stopping_statistic",
    "stopping_threshold",
    "value_deviation_bound",
]
