"""Autoformulation of Mathematical Optimization Models Using LLMs (Astorga, Liu, Xiao, van der Schaar;
ICML 2025, https://arxiv.org/abs/2411.01679; code: https://github.com/jumpynitro/AutoFormulator).

Autoformulation turns a word problem into a solver-ready LP/MILP. The paper searches the space of
formulations with Monte-Carlo tree search over the modelling hierarchy (variables, objective,
equality constraints, inequality constraints): an LLM proposes candidates for each level, symbolic
checks merge trivially equivalent candidates, LLM rankings of partial formulations act as priors
in UCT, and complete formulations are solved and scored.

Implements: a line-based formulation DSL parsed with ``ast``/``sympy`` and solved with HiGHS
(``dsl``); objective and constraint-set equivalence and greedy clustering (``equivalence``);
generated NL4OPT-style problems and a loader for NL4OPT/IndustryOR files (``data``); the
formulator, ranker and judge roles over any ``ChatModel`` with budget accounting, and a labelled
scripted control model (``roles``); MCTS with priors and pruning, and flat best-of-N (``search``).
"""

from __future__ import annotations

from .data import FAMILIES, ORProblem, is_correct, load_problem_file, synthetic_problems
from .dsl import (
    LEVELS,
    VAR_TYPES,
    Formulation,
    LinearModel,
    SolveResult,
    compile_formulation,
    linear_form,
    parse_formulation_text,
    parse_section,
    solve,
)
from .equivalence import (
    cluster_equivalent,
    components_equivalent,
    constraint_sets_equivalent,
    objectives_equivalent,
)
from .roles import (
    Budget,
    BudgetExhausted,
    LLMRoles,
    harmful_corruption,
    rank_priors,
    scripted_control_model,
)
from .search import AutoformulationMCTS, FlatSampler, Node, SearchResult, uct_score

__all__ = [
    "FAMILIES",
    "LEVELS",
    "VAR_TYPES",
    "AutoformulationMCTS",
    "Budget",
    "BudgetExhausted",
    "FlatSampler",
    "Formulation",
    "LLMRoles",
    "LinearModel",
    "Node",
    "ORProblem",
    "SearchResult",
    "SolveResult",
    "cluster_equivalent",
    "compile_formulation",
    "components_equivalent",
    "constraint_sets_equivalent",
    "harmful_corruption",
    "is_correct",
    "linear_form",
    "load_problem_file",
    "objectives_equivalent",
    "parse_formulation_text",
    "parse_section",
    "rank_priors",
    "scripted_control_model",
    "solve",
    "synthetic_problems",
    "uct_score",
]
