"""Multi-objective Linear Reinforcement Learning with Lexicographic Rewards.

Bo Xue, Dake Bu, Ji Cheng, Yuanyu Wan, Qingfu Zhang. ICML 2025 (PMLR 267:70065-70085).
https://openreview.net/forum?id=RTHTyTsRT3 · no official code.

Episodic linear MDPs with ``m`` reward functions ranked by priority. Lexicographic preferences break
the Bellman optimality equation, so greedy optimistic value iteration does not apply; LLRL instead
refines the action set at each step in SupLinUCB-style phases, exploring an uncertain action or
eliminating with a lexicographic rule (LAE) whose tolerance grows with the objective index and
the trade-off constant lambda. Regret on objective i is O~(Lambda^i(lambda) sqrt(d^2 H^4 K)), plus
O~(Lambda^i(lambda) eps d H^2 K) under eps-misspecification.

Implements: LLRL (Alg. 1) and LAE (Alg. 2) with per-step ridge regressions (Sherman-Morrison), the
lexicographic backward induction that gives ground truth on tabular models, exact evaluation of
stochastic policies, the measured trade-off constant of Assumption 1, our generated tabular linear
MOMDP with exact ties and ratio lambda_0 (the paper has no experiments), its low-rank misspecified
variant, and the baselines (objective-1-only / scalarised LSVI-UCB, naive lexicographic-greedy
LSVI-UCB, uniform). ``run_regret_batch`` runs many of these agents together (stacked statistics,
batched Sherman-Morrison updates and backward solves): the same estimator as the per-agent path,
several times faster at these sizes.

Reconstructed (the paper's text was not available): the form of Assumption 1 (``tradeoff_lambda``),
the phase loop details (widest action explored; uniform choice in the exploitation branch), one
Gram matrix per step instead of per-phase data, and the next-state value rule
(``next_state_action``: lowest-index survivor of LAE at 1/sqrt K). The radius uses a tuned
``c_beta`` (default 0.003), not the theoretical constant. Features are a finite table
``phi (S, A, d)`` (any feature map on a finite state set); continuous states are not supported.

Usage::

    mdp = make_lex_tabular_mdp(S=6, H=5, m=2, seed=0)
    agent = LLRL(mdp.phi, H=5, m=2, K=4000, lam=2.0, rng=np.random.default_rng(0))
    run = run_regret_experiment(mdp, agent, K=4000, rng=np.random.default_rng(1))
    run.regret  # (m, K) cumulative per-objective regret
    runs = run_regret_batch([ArmSpec("llrl", mdp, beta=1.5, lam=2.0), ArmSpec("uniform", mdp)],
                            K=4000, env_seed=1)  # one RegretRun per arm
"""

from .agents import (
    LLRL,
    LSVIUCB,
    LexGreedyLSVI,
    LinearRegressionState,
    UniformAgent,
    confidence_radius,
    lae_tolerances,
    lexicographic_action_elimination,
    next_state_action,
)
from .batched import ArmSpec, run_regret_batch
from .dp import evaluate_policy, lexicographic_optimal_policy, tradeoff_lambda
from .env import LexEpisodeEnv, LinearMOMDP, make_lex_tabular_mdp, misspecify, one_hot_features
from .experiment import RegretRun, loglog_slope, run_regret_experiment

__all__ = [
    "ArmSpec",
    "LLRL",
    "LSVIUCB",
    "LexEpisodeEnv",
    "LexGreedyLSVI",
    "LinearMOMDP",
    "LinearRegressionState",
    "RegretRun",
    "UniformAgent",
    "confidence_radius",
    "evaluate_policy",
    "lae_tolerances",
    "lexicographic_action_elimination",
    "lexicographic_optimal_policy",
    "loglog_slope",
    "make_lex_tabular_mdp",
    "misspecify",
    "next_state_action",
    "one_hot_features",
    "run_regret_batch",
    "run_regret_experiment",
    "tradeoff_lambda",
]
