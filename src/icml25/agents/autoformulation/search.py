"""Monte-Carlo tree search over the formulation hierarchy, and flat best-of-N sampling, for
*Autoformulation of Mathematical Optimization Models Using LLMs* (Astorga et al., ICML 2025,
arXiv 2411.01679), Sec. 3-4 and the official ``MCTS_used.py``.

Tree: the root is the empty formulation; a node at depth ``d`` has its first ``d`` levels
(variables, objective, equalities, inequalities) fixed; leaves are complete formulations.

Expansion (official ``_get_children``): sample ``n_samples`` sections for the next level from the
LLM; drop unparsable ones and ones that do not compile with the levels above (executability);
with ``prune`` merge equivalent candidates (:mod:`.equivalence`), counting the merged ones as
pruned; with ``priors`` score the unique children by LLM ranking (``rank_priors``), else give
every child the uniform prior 0.5; keep the ``n_top`` best.

Selection (official ``_uct``): an unvisited child scores ``r0 + w·sqrt(ln N(parent))``, a visited
one ``λ·r0 + (1 - λ)·Q/N + w·sqrt(ln N(parent) / N)``.

Evaluation: a complete formulation is solved with HiGHS; no optimum gives reward 0; otherwise the
reward is the LLM judge's score (the official ``score`` global mode; the pairwise ``ranking`` mode
with Bradley-Terry is not implemented). Rewards are back-propagated (``N += 1``, ``Q += r``).

Budget: every role charges its completions to a :class:`~.roles.Budget` (which roles count against
its limit is the budget's choice: formulation generations only, as in the paper, or all); the search runs
iterations (select, expand along the path, evaluate, back-propagate) until the budget cannot pay
the next step. The answer is the solved leaf with the highest judge score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .dsl import LEVELS, Formulation, compile_formulation, parse_formulation_text, parse_section, solve
from .equivalence import cluster_equivalent, components_equivalent
from .roles import Budget, BudgetExhausted, LLMRoles

__all__ = ["Node", "SearchResult", "AutoformulationMCTS", "FlatSampler", "uct_score"]


def uct_score(
    prior: float, q: float, n: int, parent_n: int, *, lam: float = 0.5, w_exp: float = 1.0
) -> float:
    """UCT with a prior (official ``_uct``); ``ln 1 = 0`` for a parent visited once or never."""
    if n < 0 or parent_n < 0:
        raise ValueError("visit counts must be non-negative")
    log_parent = math.log(parent_n) if parent_n > 1 else 0.0
    if n == 0:
        return prior + w_exp * math.sqrt(log_parent)
    return lam * prior + (1 - lam) * q / n + w_exp * math.sqrt(log_parent / n)


@dataclass
class Node:
    """A node of the formulation tree."""

    form: Formulation
    prior: float = 1.0
    n: int = 0
    q: float = 0.0
    children: list[Node] = field(default_factory=list)
    expanded: bool = False
    reward: float | None = None
    value: float | None = None
    status: str = ""


@dataclass
class SearchResult:
    """The chosen formulation, its optimal value, and the search's statistics."""

    form: Formulation | None
    value: float | None
    leaves: list[Node]
    stats: dict[str, float]


def _evaluate(node: Node, problem: str, roles: LLMRoles, budget: Budget, n_judge: int) -> float:
    try:
        result = solve(compile_formulation(node.form))
    except ValueError:
        node.status, node.reward = "error", 0.0
        return 0.0
    node.status, node.value = result.status, result.value
    node.reward = roles.judge(problem, node.form, n_judge, budget) if result.optimal else 0.0
    return node.reward


def _select_answer(leaves: list[Node]) -> tuple[Formulation | None, float | None]:
    solved = [leaf for leaf in leaves if leaf.status == "optimal"]
    if not solved:
        return None, None
    best = max(solved, key=lambda leaf: leaf.reward or 0.0)  # first one wins ties
    return best.form, best.value


@dataclass
class AutoformulationMCTS:
    """MCTS with LLM expansions, LLM priors (``priors``) and symbolic pruning (``prune``).

    Defaults follow the official code: ``n_samples = 8``, ``n_top = 3``, ``n_rank = 5``,
    ``lam = 0.5``, ``w_exp = 1``; ``n_judge`` judge samples per solved leaf.
    """

    roles: LLMRoles
    n_samples: int = 8
    n_top: int = 3
    n_rank: int = 5
    n_judge: int = 3
    lam: float = 0.5
    w_exp: float = 1.0
    prune: bool = True
    priors: bool = True
    max_idle: int = 200

    def __post_init__(self) -> None:
        for name in ("n_samples", "n_top", "n_rank", "n_judge"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0 <= self.lam <= 1:
            raise ValueError(f"lam must lie in [0, 1], got {self.lam!r}")
        if not self.w_exp >= 0:
            raise ValueError(f"w_exp must be non-negative, got {self.w_exp!r}")

    def _uct(self, child: Node, parent_n: int) -> float:
        return uct_score(child.prior, child.q, child.n, parent_n, lam=self.lam, w_exp=self.w_exp)

    def _expand(self, node: Node, problem: str, budget: Budget, stats: dict[str, float]) -> None:
        level = LEVELS[node.form.depth]
        samples = self.roles.propose(problem, node.form, self.n_samples, budget)
        node.expanded = True
        children: list[Formulation] = []
        for text in samples:
            try:
                child = node.form.with_component(level, parse_section(level, text))
                if level != "variables":
                    compile_formulation(child)
            except (ValueError, TypeError):
                stats["invalid"] += 1
                continue
            children.append(child)
        stats["valid"] += len(children)
        if self.prune and children:
            groups = cluster_equivalent(children, lambda a, b: _equivalent(level, a, b))
            stats["pruned"] += len(children) - len(groups)
            children = [children[g[0]] for g in groups]
        else:  # only exact textual duplicates are ever merged without pruning
            stats["textual_duplicates"] += len(children) - len(set(children))
        if not children:
            return
        if self.priors and len(children) > 1:
            prior = self.roles.rank(problem, node.form, children, self.n_rank, budget)
        else:
            prior = np.full(len(children), 0.5 if len(children) > 1 else 1.0)
        keep = np.argsort(-prior, kind="stable")[: self.n_top]
        node.children = [Node(children[i], float(prior[i])) for i in keep]

    def search(self, problem: str, budget: Budget) -> SearchResult:
        """Iterate select / expand / evaluate / back-propagate until ``budget`` is spent."""
        if not isinstance(problem, str) or not problem.strip():
            raise ValueError("problem must be a non-empty string")
        root = Node(Formulation())
        leaves: list[Node] = []
        stats = dict.fromkeys(
            ("invalid", "valid", "pruned", "textual_duplicates", "iterations", "dead_ends"), 0.0
        )
        idle = 0  # iterations in a row that spent nothing (the reachable tree is exhausted)
        while idle < self.max_idle:
            spent = budget.total
            path = [root]
            node = root
            try:
                while not node.form.complete:
                    if not node.expanded:
                        self._expand(node, problem, budget, stats)
                    if not node.children:
                        break
                    parent_n = node.n
                    node = max(node.children, key=lambda c: self._uct(c, parent_n))
                    path.append(node)
                if node.form.complete:
                    if node.reward is None:
                        _evaluate(node, problem, self.roles, budget, self.n_judge)
                        leaves.append(node)
                    reward = node.reward or 0.0
                else:
                    stats["dead_ends"] += 1
                    reward = 0.0
            except BudgetExhausted:
                break
            for visited in path:
                visited.n += 1
                visited.q += reward
            stats["iterations"] += 1
            idle = idle + 1 if budget.total == spent else 0
        form, value = _select_answer(leaves)
        stats["leaves"] = float(len(leaves))
        stats["solved_leaves"] = float(sum(leaf.status == "optimal" for leaf in leaves))
        return SearchResult(form, value, leaves, stats)


def _equivalent(level: str, a: Formulation, b: Formulation) -> bool:
    try:
        return a == b or components_equivalent(level, a, b)
    except ValueError:
        return False


@dataclass
class FlatSampler:
    """Flat best-of-N: complete formulations in one shot each, solved, the best by judge score.

    Each sample counts as ``len(LEVELS)`` field generations against the budget. Samples are drawn
    in batches of ``batch`` until the budget cannot pay the next sample and its judging.
    """

    roles: LLMRoles
    batch: int = 4
    n_judge: int = 3

    def search(self, problem: str, budget: Budget) -> SearchResult:
        if not isinstance(problem, str) or not problem.strip():
            raise ValueError("problem must be a non-empty string")
        leaves: list[Node] = []
        stats = dict.fromkeys(
            ("invalid", "valid", "pruned", "textual_duplicates", "iterations", "dead_ends"), 0.0
        )
        per_sample = len(LEVELS) + (self.n_judge if budget.counts("judge") else 0)
        while budget.remaining() >= per_sample:
            n = int(min(self.batch, budget.remaining() // per_sample))
            try:
                texts = self.roles.propose_flat(problem, n, budget)
            except BudgetExhausted:
                break
            stats["iterations"] += 1
            for text in texts:
                try:
                    candidate = parse_formulation_text(text)
                except ValueError:
                    stats["invalid"] += 1
                    continue
                stats["valid"] += 1
                node = Node(candidate)
                try:
                    _evaluate(node, problem, self.roles, budget, self.n_judge)
                except BudgetExhausted:
                    break
                leaves.append(node)
        form, value = _select_answer(leaves)
        stats["leaves"] = float(len(leaves))
        stats["solved_leaves"] = float(sum(leaf.status == "optimal" for leaf in leaves))
        return SearchResult(form, value, leaves, stats)
