"""ECON: belief-driven multi-LLM reasoning via Bayesian Nash equilibrium (Xie et al., ICML 2025).

Paper: *From Debate to Equilibrium: Belief-Driven Multi-Agent LLM Reasoning via Bayesian Nash
Equilibrium*, Xie Yi, Zhanke Zhou, Chentao Cao, Qiyu Niu, Tongliang Liu, Bo Han (arXiv 2506.08292).
Any :class:`icml25.llm.chat.ChatModel` plays the coordinator and the executors.
"""

from __future__ import annotations

from .agents import (
    STYLES,
    DecodingStrategy,
    MethodResult,
    ResponsePool,
    TokenCounter,
    build_response_pool,
    chain_of_thought,
    commitment_messages,
    coordinator_commitment,
    executor_messages,
    majority_vote,
    multi_agent_debate,
    self_consistency,
    strategy_grid,
    strategy_messages,
)
from .game import (
    bayesian_nash_conv,
    deviation_payoffs,
    expected_payoffs,
    nash_conv,
    pure_nash_equilibria,
    support_enumeration,
)
from .networks import BeliefEncoder, BeliefNetwork, ECONMixer, bne_refine_beliefs
from .problems import ArithmeticProblem, answers_match, make_arithmetic_problems, parse_answer
from .rewards import (
    DynamicRewardWeights,
    RewardComponents,
    RewardModel,
    embed_texts,
    format_score,
    shows_reasoning,
)
from .trainer import (
    Decision,
    ECONConfig,
    ECONSystem,
    ECONTrainer,
    EmpiricalGame,
    IndependentLearners,
    TrainLog,
)

__all__ = [
    "STYLES",
    "ArithmeticProblem",
    "BeliefEncoder",
    "BeliefNetwork",
    "Decision",
    "DecodingStrategy",
    "DynamicRewardWeights",
    "ECONConfig",
    "ECONMixer",
    "ECONSystem",
    "ECONTrainer",
    "EmpiricalGame",
    "IndependentLearners",
    "MethodResult",
    "ResponsePool",
    "RewardComponents",
    "RewardModel",
    "TokenCounter",
    "TrainLog",
    "answers_match",
    "bayesian_nash_conv",
    "bne_refine_beliefs",
    "build_response_pool",
    "chain_of_thought",
    "commitment_messages",
    "coordinator_commitment",
    "deviation_payoffs",
    "embed_texts",
    "executor_messages",
    "expected_payoffs",
    "format_score",
    "majority_vote",
    "make_arithmetic_problems",
    "multi_agent_debate",
    "nash_conv",
    "parse_answer",
    "pure_nash_equilibria",
    "self_consistency",
    "shows_reasoning",
    "strategy_grid",
    "strategy_messages",
    "support_enumeration",
]
