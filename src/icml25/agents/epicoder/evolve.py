"""Feature tree evolution, after *EpiCoder: Encompassing Diversity and Complexity in Code
Generation* (Wang et al., ICML 2025, arXiv 2501.04694), Sec. 2.2.

One evolution step samples a small subtree (``conditions = (2, 1, 2, 1)``, weights = the number of
nodes below each node, temperature 1), asks an evolver to grow it in *breadth* (new siblings for
every node) and *depth* (finer children for leaves that can be refined), records frequencies for
the new nodes (:func:`~.tree.new_node_frequencies`) and merges the result back
(:func:`~.tree.merge_trees`). The paper's evolver is an LLM (:class:`LLMEvolver`);
:class:`CatalogEvolver` is a deterministic offline stand-in with the same interface that proposes
siblings and children from catalogues of the standard library (module names, their public
functions parsed from source, ``str`` methods, operators).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

import numpy as np

from icml25.llm.chat import ChatModel

from .extract import _MODULE_GROUPS, _STR_METHODS, CATEGORIES, parse_json_block, tree_from_json
from .tree import (
    FeatureTree,
    FrequencyMap,
    Path,
    descendant_counts,
    leaf_paths,
    merge_trees,
    new_node_frequencies,
    node_paths,
    sample_subtree,
    subtree_at,
    tree_stats,
    validate_tree,
)

__all__ = [
    "EVOLVE_CATEGORIES",
    "Evolver",
    "CatalogEvolver",
    "LLMEvolver",
    "EvolutionResult",
    "evolve_tree",
    "default_catalog",
    "public_names",
]


#: The top-level categories the released Python evolution run samples from (``evol/feature_evol.py``).
EVOLVE_CATEGORIES: tuple[str, ...] = (
    "workflow",
    "functionality",
    "resource usage",
    "computation operation",
    "user interaction",
    "data processing",
    "file operation",
    "dependency relations",
    "algorithm",
    "advanced techniques",
)


class Evolver(Protocol):
    """Grows a sampled subtree; returns the subtree with new nodes added."""

    def expand(self, subtree: FeatureTree, rng: np.random.Generator) -> FeatureTree: ...


@cache
def public_names(module: str) -> tuple[str, ...]:
    """Public top-level function and class names of a standard-library module, parsed from its
    source without importing it (built-in modules without source: their ``dir()``)."""
    if not isinstance(module, str) or not module:
        raise ValueError(f"module must be a non-empty module name, got {module!r}")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ()
    origin = getattr(spec, "origin", None) if spec is not None else None
    if origin and origin.endswith(".py"):
        try:
            with open(origin, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, UnicodeDecodeError):
            return ()
        names = [
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
            and not n.name.startswith("_")
        ]
        return tuple(dict.fromkeys(names))
    if module in sys.builtin_module_names or origin:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            return ()
        return tuple(n for n in sorted(dir(mod)) if not n.startswith("_") and callable(getattr(mod, n, None)))
    return ()


@cache
def _catalog() -> dict[str, Any]:
    cat: dict[str, Any] = {c: {} for c in CATEGORIES}

    def put(category: str, sub: str, items: Sequence[str]) -> None:
        node = cat.setdefault(category, {}).setdefault(sub, {})
        for item in items:
            node.setdefault(item, {})

    for module, (category, sub) in sorted(_MODULE_GROUPS.items()):
        put(category, sub, [f"{module}.{n}" for n in public_names(module)[:60]])
    put("data processing", "string manipulation", sorted(_STR_METHODS) + ["f-string"])
    put(
        "data processing",
        "transformation",
        [f"{t} conversion" for t in ("int", "float", "str", "list", "dict", "set", "tuple", "bytes")]
        + ["slicing"],
    )
    put(
        "data processing",
        "validation",
        ["isinstance", "hasattr", "membership test", "identity test", "range check"],
    )
    put(
        "computation operation",
        "mathematical",
        ["power", "modulo", "floor division", "division", "multiplication"],
    )
    put("computation operation", "bitwise", ["bitwise and", "bitwise or", "bitwise xor", "bit shift"])
    put("computation operation", "statistical", ["sum", "min", "max", "len", "abs", "round", "divmod"])
    put(
        "computation operation",
        "algorithmic",
        ["sorted", "reversed", "enumerate", "zip", "range", "any", "all"],
    )
    put(
        "implementation logic",
        "control flow",
        ["for loop", "while loop", "conditional branch", "break", "continue"],
    )
    put(
        "implementation logic",
        "comprehensions",
        ["list comprehension", "dict comprehension", "set comprehension"],
    )
    put(
        "implementation logic",
        "generators",
        ["yield", "yield from", "generator expression", "generator function"],
    )
    put("implementation logic", "recursion", ["recursive call", "memoised recursion", "mutual recursion"])
    put("implementation logic", "context managers", ["with statement", "custom context manager"])
    put(
        "implementation style", "object-oriented", ["methods", "inheritance", "special methods", "properties"]
    )
    put("implementation style", "functional", ["lambda", "map", "filter", "higher-order function"])
    put("implementation style", "procedural", ["module-level functions"])
    put(
        "error handling",
        "exception catching",
        ["ValueError", "KeyError", "TypeError", "IndexError", "OSError", "ZeroDivisionError"],
    )
    put(
        "error handling",
        "raising",
        ["ValueError", "TypeError", "KeyError", "RuntimeError", "custom exception"],
    )
    put("error handling", "cleanup", ["finally", "try else"])
    put("error handling", "assertions", ["assert"])
    put("data structures", "built-in containers", ["list", "dict", "set", "tuple"])
    put("data structures", "user-defined", ["class", "dataclass", "named tuple", "enumeration"])
    put("file operation", "file access", ["open for read", "open for write", "temporary file"])
    put("user interaction", "console", ["print", "input"])
    stdlib = sorted(m for m in sys.stdlib_module_names if not m.startswith("_"))
    put("dependency relations", "standard library", stdlib)
    return cat


def default_catalog() -> FeatureTree:
    """The offline evolver's catalogue: the extractor's categories and subcategories, filled with
    public names of the grouped standard-library modules, ``str`` methods, operators, builtins and
    every standard-library module name (a fresh copy)."""
    return merge_trees({}, _catalog())


@dataclass
class CatalogEvolver:
    """Offline evolver: siblings and children proposed from a catalogue instead of an LLM.

    Breadth: every node of the subtree gets up to ``breadth`` new siblings drawn (uniformly, without
    replacement) from the catalogue's children of its parent that the subtree lacks (at the top
    level only categories the catalogue has features for: an empty category is not a feature). Depth: every
    leaf gets up to ``depth`` children from the catalogue's children of the same path, or, for a
    standard-library module name, from the module's public functions (:func:`public_names`).
    """

    catalog: FeatureTree | None = None
    breadth: int = 2
    depth: int = 2

    def __post_init__(self) -> None:
        for name in ("breadth", "depth"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if self.catalog is not None:
            validate_tree("catalog", self.catalog)

    def _children(self, path: Path) -> list[str]:
        cat = self.catalog if self.catalog is not None else _catalog()
        kids = list(subtree_at(cat, path)) if path else list(cat)
        if not kids and path and path[-1] in sys.stdlib_module_names:
            kids = list(public_names(path[-1]))
        return kids

    def expand(self, subtree: FeatureTree, rng: np.random.Generator) -> FeatureTree:
        validate_tree("subtree", subtree)
        additions: FeatureTree = {}

        def put(path: Path) -> None:
            node = additions
            for key in path:
                node = node.setdefault(key, {})

        parents = {p[:-1] for p in node_paths(subtree)}
        for parent in sorted(parents):
            have = set(subtree_at(subtree, parent)) if parent else set(subtree)
            pool = [k for k in self._children(parent) if k not in have]
            if not parent:  # a new category must bring features: the catalogue's empty ones are not
                pool = [k for k in pool if self._children((k,))]
            if pool and self.breadth:
                for i in rng.choice(len(pool), size=min(self.breadth, len(pool)), replace=False):
                    put((*parent, pool[int(i)]))
        for leaf in leaf_paths(subtree):
            pool = self._children(leaf)
            if pool and self.depth:
                for i in rng.choice(len(pool), size=min(self.depth, len(pool)), replace=False):
                    put((*leaf, pool[int(i)]))
        return merge_trees(subtree, additions)


class LLMEvolver:
    """The paper's evolver: a chat model grows the subtree in breadth and depth (Sec. 2.2).

    The reply's JSON (between ``<begin>``/``<end>``, released list-or-dict format accepted) is merged
    over the sampled subtree, so sampled nodes are never lost; a reply that does not parse leaves
    the subtree unchanged (counted in :attr:`failures`).
    """

    def __init__(self, model: ChatModel, *, max_tokens: int = 512, temperature: float = 0.7) -> None:
        if not isinstance(model, ChatModel):
            raise TypeError(f"model must be a ChatModel, got {type(model).__name__}")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.failures = 0

    @staticmethod
    def prompt(subtree: FeatureTree) -> list[dict[str, str]]:
        text = (
            "Below is part of a tree of programming features, as JSON (coarse categories at the top, "
            "specific features at the leaves). Expand it:\n"
            "1. Breadth: add at least two new sibling features next to every node.\n"
            "2. Depth: add finer child features under leaves that can be refined.\n"
            "Keep every existing node. Return the whole expanded tree as JSON between <begin> and <end>.\n\n"
            f"{json.dumps(subtree, indent=1)}"
        )
        return [{"role": "user", "content": text}]

    def expand(self, subtree: FeatureTree, rng: np.random.Generator) -> FeatureTree:
        validate_tree("subtree", subtree)
        seed = int(rng.integers(0, 2**31 - 1))
        reply = self.model.chat(
            self.prompt(subtree), max_tokens=self.max_tokens, temperature=self.temperature, seed=seed
        )[0]
        obj = parse_json_block(reply)
        grown = tree_from_json(obj) if isinstance(obj, Mapping) else {}
        if not grown:
            self.failures += 1
        return merge_trees(subtree, grown)


@dataclass
class EvolutionResult:
    """The evolved tree, its frequencies and :func:`~.tree.tree_stats` before and after each round.

    ``proposed`` counts the nodes the evolver added to its sampled subtrees (Sec. 2.2: new siblings
    and finer children), summed over the steps; ``proposed_new`` counts those that were not already
    in the tree when their step merged (names equal up to case, spaces and underscores are one
    node, as in :func:`~.tree.merge_trees`).
    """

    tree: FeatureTree
    freq: FrequencyMap
    stats: list[dict[str, float]] = field(default_factory=list)
    proposed: int = 0
    proposed_new: int = 0

    @property
    def new_share(self) -> float:
        """Share of the evolver's proposed nodes that were new to the tree (0 when it proposed
        none): whether the evolver can grow the tree at all, the ability the paper's evolution
        (Sec. 2.2) asks of its LLM."""
        return self.proposed_new / self.proposed if self.proposed else 0.0


def evolve_tree(
    tree: FeatureTree,
    freq: FrequencyMap,
    evolver: Evolver,
    *,
    rounds: int,
    samples_per_round: int,
    rng: np.random.Generator,
    conditions: Sequence[int] = (2, 1, 2, 1),
    temperature: float = 1.0,
    categories: Sequence[str] | None = EVOLVE_CATEGORIES,
    descendant_match: str = "string",
    siblings: str = "descendants",
) -> EvolutionResult:
    """Run ``rounds`` rounds of ``samples_per_round`` evolution steps (Sec. 2.2).

    Within a round every step samples from the tree as it was at the start of the round (the
    paper's steps run in parallel), with weights = :func:`~.tree.descendant_counts` (``match =
    descendant_match``), restricted to the top-level ``categories`` (the released Python run's ten,
    :data:`EVOLVE_CATEGORIES`; ``None`` = every category). New nodes get frequencies by
    :func:`~.tree.new_node_frequencies` (``siblings``). The result counts the nodes the evolver
    proposed and how many of them were new to the tree (:attr:`EvolutionResult.new_share`).
    """
    validate_tree("tree", tree)
    if not isinstance(freq, FrequencyMap):
        raise TypeError(f"freq must be a FrequencyMap, got {type(freq).__name__}")
    for name, value in (("rounds", rounds), ("samples_per_round", samples_per_round)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if categories is not None and not any(c in tree for c in categories):
        raise ValueError(f"categories: none of {list(categories)} is a top-level node of the tree")
    result = EvolutionResult(merge_trees({}, tree), freq.copy(), [tree_stats(tree)])
    for _ in range(rounds):
        weights = descendant_counts(result.tree, match=descendant_match)
        start = result.tree
        if categories is not None:
            start = {k: v for k, v in start.items() if k in categories}
        for _ in range(samples_per_round):
            sub = sample_subtree(start, conditions, rng=rng, weights=weights, temperature=temperature)
            grown = evolver.expand(sub, rng)
            result.freq = new_node_frequencies(sub, grown, result.freq, siblings=siblings)
            before = len(node_paths(result.tree))
            result.tree = merge_trees(result.tree, grown)
            result.proposed += len(node_paths(grown)) - len(node_paths(sub))
            result.proposed_new += len(node_paths(result.tree)) - before
        result.stats.append(tree_stats(result.tree))
    return result
