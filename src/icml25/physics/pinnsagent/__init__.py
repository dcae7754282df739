"""PINNsAgent: Automated PDE Surrogation with Large Language Models.

Qingpo Wuwu, Chonghan Gao, Tianyu Chen, Yihang Huang, Yuekai Zhang, Jianing Wang, Jianxin Li,
Haoyi Zhou, Shanghang Zhang. ICML 2025. https://arxiv.org/abs/2501.12053 (official code:
https://github.com/qingpowuwu/PINNsAgent_Codes).

An LLM planner searches a PINN's architecture and training hyperparameters for a new PDE in a few
trainings, helped by Physics-Guided Knowledge Replay (retrieve the best configurations of similar
solved PDEs by cosine similarity of physics-label embeddings) and Memory Tree Reasoning (a UCT/PUCT
tree over configuration edits whose expansions the planner proposes).

Implements: benchmark PDEs with references (``pdes``), the configurable PINN trainer and search
space (``pinn``; the residual's derivatives propagated forward through the network), the
knowledge base, PDE encoders, PGKR and knowledge-base parameter statistics (``knowledge``), the
memory tree, the LLM planner prompt and reply parser, a scripted control proposer, lock-step
batched agent searches, random search and optuna TPE (``agent``).
Not implemented: the code-generation mode and code bank, L-BFGS and MultiAdam, PINNacle's
geometries.

Usage::

    space = SearchSpace(max_width=32)
    ev = Evaluator(PDE_SUITE, space, steps=150)
    kb = build_knowledge_base(list(PDE_SUITE), space, ev, per_pde=6, seed=0)
    loo = kb.without("heat1d")
    hits = PGKR(PDE_SUITE).retrieve(PDE_SUITE["heat1d"], loo, k=1)
    agent = AgentSearch(PDE_SUITE["heat1d"], loo, space, parameter_stats(loo, space), hits,
                        budget=5, proposer="llm", rng=np.random.default_rng(0))
    run_agents([agent], ev, generate)            # generate: conversations -> replies
    agent.trace.best_l2()
"""

from .agent import (
    AgentSearch,
    Evaluator,
    MemoryTree,
    Node,
    SearchTrace,
    build_knowledge_base,
    close_json,
    config_text,
    edit_prior,
    parse_proposal,
    planner_prompt,
    random_search,
    run_agents,
    scripted_edit,
    tpe_search,
)
from .knowledge import (
    PGKR,
    KBRow,
    KnowledgeBase,
    ParamStats,
    Retrieved,
    cosine,
    encode_labels,
    encode_text,
    parameter_stats,
)
from .pdes import LABEL_VALUES, PDE_SUITE, DiffOperator, PDESpec, burgers_reference, get_pde
from .pinn import (
    DEFAULT_CONFIG,
    DEFAULT_SPACE,
    PINNNet,
    SearchSpace,
    TrainResult,
    config_key,
    jet_forward,
    train_pinn,
)

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_SPACE",
    "LABEL_VALUES",
    "PDE_SUITE",
    "PGKR",
    "AgentSearch",
    "DiffOperator",
    "Evaluator",
    "KBRow",
    "KnowledgeBase",
    "MemoryTree",
    "Node",
    "PDESpec",
    "PINNNet",
    "ParamStats",
    "Retrieved",
    "SearchSpace",
    "SearchTrace",
    "TrainResult",
    "build_knowledge_base",
    "burgers_reference",
    "config_key",
    "cosine",
    "edit_prior",
    "encode_labels",
    "encode_text",
    "get_pde",
    "jet_forward",
    "parameter_stats",
    "close_json",
    "config_text",
    "parse_proposal",
    "planner_prompt",
    "random_search",
    "run_agents",
    "scripted_edit",
    "tpe_search",
    "train_pinn",
]
