"""Feature trees: counting, pruning, frequencies, sampling and merging, after *EpiCoder: Encompassing
Diversity and Complexity in Code Generation* (Wang et al., ICML 2025, arXiv 2501.04694), Sec. 2.

A feature tree is a nested ``dict[str, dict]``: keys are feature names, a leaf maps to ``{}``. The
root's children are the coarse categories ("data processing", "file operation", ...), deeper levels
are finer features ("string manipulation" -> "split"). A node is named by its path, a tuple of keys.

What each piece implements (Sec. 2.1-2.3 of the paper and its released pipeline):

* :func:`build_frequency_tree`: count the leaf paths of many extracted feature trees, prune every
  node to its ``top_n`` most frequent children and collapse sub-dicts with fewer than
  ``dict_min_size`` children into leaves (Sec. 2.1, "feature tree construction"), and return the
  bare tree with its :class:`FrequencyMap`.
* :func:`sample_subtree`: draw ``conditions[k-1]`` distinct children at depth ``k`` with
  probabilities ``softmax(log p / t)`` of the nodes' frequencies (:func:`smooth_probs`; Sec. 2.3,
  "task generation", where ``t`` trades frequent features for the long tail), fixed depth-1
  features always included.
* :func:`merge_trees` and :func:`new_node_frequencies`: fold an evolved subtree back into the tree;
  a new node inherits the mean frequency of its sampled siblings, else its parent's mean child
  frequency (Sec. 2.2, "feature tree evolution").
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "FeatureTree",
    "Path",
    "FrequencyMap",
    "validate_tree",
    "leaf_paths",
    "node_paths",
    "tree_depth",
    "tree_stats",
    "count_leaf_paths",
    "prune_top_n",
    "build_frequency_tree",
    "descendant_counts",
    "smooth_probs",
    "sample_subtree",
    "sample_mandatory_leaves",
    "merge_trees",
    "new_node_frequencies",
    "subtree_at",
]

FeatureTree = dict[str, Any]  # nested dict[str, FeatureTree]; a leaf maps to {}
Path = tuple[str, ...]


def _norm(name: str) -> str:
    return " ".join(name.lower().replace("_", " ").split())


def validate_tree(name: str, tree: Any, *, nonempty: bool = True) -> FeatureTree:
    """Check that ``tree`` is a nested ``dict`` with non-empty string keys; raise naming ``name``."""
    if not isinstance(tree, Mapping):
        raise TypeError(f"{name} must be a nested dict of feature names, got {type(tree).__name__}")
    if nonempty and not tree:
        raise ValueError(f"{name} must hold at least one feature")
    stack: list[Mapping[Any, Any]] = [tree]
    while stack:
        node = stack.pop()
        for key, child in node.items():
            if not isinstance(key, str) or not key.strip():
                raise TypeError(f"{name}: feature names must be non-empty strings, got {key!r}")
            if not isinstance(child, Mapping):
                raise TypeError(f"{name}: the children of {key!r} must be a dict, got {type(child).__name__}")
            stack.append(child)
    return dict(tree)


def leaf_paths(tree: Mapping[str, Any], prefix: Path = ()) -> list[Path]:
    """Every root-to-leaf path, depth-first in key order."""
    out: list[Path] = []
    for key, child in tree.items():
        path = (*prefix, key)
        if child:
            out.extend(leaf_paths(child, path))
        else:
            out.append(path)
    return out


def node_paths(tree: Mapping[str, Any], prefix: Path = ()) -> list[Path]:
    """Every node's path (internal nodes and leaves), depth-first."""
    out: list[Path] = []
    for key, child in tree.items():
        path = (*prefix, key)
        out.append(path)
        out.extend(node_paths(child, path))
    return out


def tree_depth(tree: Mapping[str, Any]) -> int:
    """Number of levels (a tree with only root children has depth 1; the empty tree 0)."""
    return max((1 + tree_depth(c) for c in tree.values()), default=0)


def subtree_at(tree: Mapping[str, Any], path: Path) -> FeatureTree:
    """The children dict under ``path`` (``{}`` if the path is absent)."""
    node: Mapping[str, Any] = tree
    for key in path:
        if key not in node:
            return {}
        node = node[key]
    return dict(node)


def tree_stats(tree: Mapping[str, Any]) -> dict[str, float]:
    """Nodes, leaves, depth, nodes per level and mean branching of internal nodes."""
    paths = node_paths(tree)
    per_level = Counter(len(p) for p in paths)
    internal = [p for p in paths if subtree_at(tree, p)]
    stats: dict[str, float] = {
        "nodes": float(len(paths)),
        "leaves": float(len(leaf_paths(tree))),
        "depth": float(tree_depth(tree)),
        "branching": float(np.mean([len(subtree_at(tree, p)) for p in internal])) if internal else 0.0,
    }
    for level, n in sorted(per_level.items()):
        stats[f"nodes_depth{level}"] = float(n)
    return stats


# ---------------------------------------------------------------------------------------------
# Frequencies
# ---------------------------------------------------------------------------------------------


@dataclass
class FrequencyMap:
    """Per-node frequencies of a feature tree (Sec. 2.1-2.2).

    ``history[path]`` lists every frequency the node was given (counted, or inherited when an
    evolution step re-proposes it); the node's frequency is their mean. A node never seen has
    frequency 1 (the released code's default for unknown nodes). ``avg_sub[path]`` is the stored
    mean child frequency of an internal node (the released ``avg_sub_frequency``: set when the
    tree is built, updated by :func:`new_node_frequencies`); without a stored value it is computed
    from the recorded direct children.
    """

    history: dict[Path, list[float]] = field(default_factory=dict)
    avg_sub: dict[Path, float] = field(default_factory=dict)

    def frequency(self, path: Path) -> float:
        values = self.history.get(tuple(path))
        return float(np.mean(values)) if values else 1.0

    def __contains__(self, path: object) -> bool:
        return isinstance(path, tuple) and path in self.history

    def __len__(self) -> int:
        return len(self.history)

    def record(self, path: Path, value: float) -> None:
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise ValueError(f"value must be a positive finite frequency, got {value!r}")
        self.history.setdefault(tuple(path), []).append(float(value))

    def avg_sub_frequency(self, path: Path) -> float:
        """The stored mean child frequency of ``path``, else the mean frequency of its recorded
        direct children (1 when none is recorded)."""
        if tuple(path) in self.avg_sub:
            return self.avg_sub[tuple(path)]
        n = len(path) + 1
        kids = [self.frequency(p) for p in self.history if len(p) == n and p[:-1] == tuple(path)]
        return float(np.mean(kids)) if kids else 1.0

    def copy(self) -> FrequencyMap:
        return FrequencyMap({k: list(v) for k, v in self.history.items()}, dict(self.avg_sub))


def count_leaf_paths(trees: Iterable[Mapping[str, Any]], max_depth: int = 3) -> Counter[Path]:
    """How many of ``trees`` contain each leaf path (paths cut at ``max_depth`` levels), in the
    order the paths are first met (depth-first through the trees in order, as released)."""
    if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive integer, got {max_depth!r}")
    counts: Counter[Path] = Counter()
    for i, tree in enumerate(trees):
        validate_tree(f"trees[{i}]", tree, nonempty=False)
        counts.update(dict.fromkeys(p[:max_depth] for p in leaf_paths(tree)).keys())
    return counts


def _count_tree(counts: Mapping[Path, int]) -> dict[str, Any]:
    """Nested dict whose leaves are integer counts (an internal path's own count is dropped), keys in
    the order of ``counts``."""
    root: dict[str, Any] = {}
    for path, n in counts.items():
        node = root
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child
        if not isinstance(node.get(path[-1]), dict):
            node[path[-1]] = int(node.get(path[-1], 0)) + int(n)
    return root


def _total(node: Any) -> int:
    return int(node) if not isinstance(node, dict) else sum(_total(c) for c in node.values())


def prune_top_n(
    counted: Mapping[str, Any],
    top_n: int = 50,
    dict_min_size: int = 3,
    *,
    collapsed_count: str = "children",
) -> dict[str, Any]:
    """Prune a counted tree (leaves are integer counts) inside each top-level category.

    The root's children are the categories: they are never collapsed and never cut, as in the
    released ``keep_top_n``, which prunes each category separately. Below them, a sub-dict with
    fewer than ``dict_min_size`` children collapses into a leaf, and every node keeps its ``top_n``
    children: sub-dicts first (in their order), then leaves by decreasing count (ties in their
    order), as the released ``custom_compare`` sort does.

    Args:
        collapsed_count: the count a collapsed sub-dict carries: ``"children"`` (its number of
            children, as released) or ``"total"`` (the sum of its counts).
    """
    for name, value in (("top_n", top_n), ("dict_min_size", dict_min_size)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if collapsed_count not in ("children", "total"):
        raise ValueError(f"collapsed_count must be 'children' or 'total', got {collapsed_count!r}")

    def prune(node: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, child in node.items():
            if isinstance(child, dict):
                if len(child) >= dict_min_size:
                    out[key] = prune(child)
                else:
                    out[key] = len(child) if collapsed_count == "children" else _total(child)
            else:
                out[key] = int(child)
        dicts = [k for k in out if isinstance(out[k], dict)]
        ints = sorted((k for k in out if not isinstance(out[k], dict)), key=lambda k: -out[k])  # stable
        return {k: out[k] for k in (dicts + ints)[:top_n]}

    return {key: prune(child) if isinstance(child, dict) else int(child) for key, child in counted.items()}


def _split(counted: Mapping[str, Any], prefix: Path, freq: FrequencyMap) -> FeatureTree:
    tree: FeatureTree = {}
    for key, child in counted.items():
        path = (*prefix, key)
        tree[key] = _split(child, path, freq) if isinstance(child, dict) else {}
        freq.record(path, max(float(_total(child)), 1.0))  # zero counts become 1, as released
        if isinstance(child, dict) and child:  # released avg_sub_frequency: mean child count
            freq.avg_sub[path] = float(np.mean([_total(c) for c in child.values()]))
    return tree


def build_frequency_tree(
    feature_trees: Sequence[Mapping[str, Any]],
    *,
    max_depth: int = 3,
    top_n: int = 50,
    dict_min_size: int = 3,
    collapsed_count: str = "children",
) -> tuple[FeatureTree, FrequencyMap]:
    """Frequency feature tree of many extracted feature trees (Sec. 2.1).

    Leaf paths are counted once per input tree, cut at ``max_depth``, pruned by
    :func:`prune_top_n` (categories are never collapsed; ``collapsed_count`` as there) and split
    into the bare tree and a :class:`FrequencyMap` where a leaf's frequency is its count and an
    internal node's is the sum over its children.
    """
    if isinstance(feature_trees, Mapping) or not isinstance(feature_trees, Sequence):
        raise TypeError(
            f"feature_trees must be a sequence of feature trees, got {type(feature_trees).__name__}"
        )
    if not feature_trees:
        raise ValueError("feature_trees must hold at least one feature tree")
    prune_top_n({}, top_n, dict_min_size, collapsed_count=collapsed_count)  # validates before any work
    counts = count_leaf_paths(feature_trees, max_depth)
    if not counts:
        raise ValueError("feature_trees: no features were extracted from any input")
    counted = prune_top_n(_count_tree(counts), top_n, dict_min_size, collapsed_count=collapsed_count)
    freq = FrequencyMap()
    return _split(counted, (), freq), freq


def descendant_counts(tree: Mapping[str, Any], *, match: str = "string") -> dict[Path, float]:
    """For every node, the number of nodes below it, itself included (the evolution weights).

    Args:
        match: ``"string"`` (as released: the nodes whose ``---``-joined path *string* starts with
            this node's, so ``a---sort`` also counts ``a---sorted`` and its subtree) or ``"path"``
            (the nodes of this node's own subtree).
    """
    if match not in ("string", "path"):
        raise ValueError(f"match must be 'string' or 'path', got {match!r}")
    paths = node_paths(tree)
    if match == "path":
        out: dict[Path, float] = {}

        def walk(node: Mapping[str, Any], prefix: Path) -> int:
            total = 0
            for key, child in node.items():
                path = (*prefix, key)
                n = 1 + walk(child, path)
                out[path] = float(n)
                total += n
            return total

        walk(tree, ())
        return out
    joined = sorted("---".join(p) for p in paths)
    # the strings with a given prefix form one contiguous run of the sorted list
    return {
        p: float(bisect.bisect_left(joined, k + "\U0010ffff") - bisect.bisect_left(joined, k))
        for p in paths
        for k in ("---".join(p),)
    }


# ---------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------


def smooth_probs(p: Sequence[float] | np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(log(p + 1e-9) / t)``: t = 1 keeps the frequencies' proportions, large t flattens
    them towards uniform (``|t| >= 100`` is treated as exactly uniform), Sec. 2.3."""
    arr = np.asarray(p)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"p must hold numbers, got dtype {arr.dtype}")
    arr = arr.astype(float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"p must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("p must hold finite non-negative weights")
    if not isinstance(temperature, int | float) or not math.isfinite(temperature) or temperature == 0:
        raise ValueError(f"temperature must be a finite non-zero number, got {temperature!r}")
    if abs(temperature) >= 100:
        return np.full(arr.size, 1.0 / arr.size)
    logits = np.log(arr / max(arr.sum(), 1e-300) + 1e-9) / temperature
    logits -= logits.max()
    w = np.exp(logits)
    return np.asarray(w / w.sum(), dtype=float)


Weights = FrequencyMap | Mapping[Path, float] | Callable[[Path], float] | None


def _weight_fn(weights: Weights) -> Callable[[Path], float]:
    if weights is None:
        return lambda path: 1.0
    if isinstance(weights, FrequencyMap):
        return weights.frequency
    if isinstance(weights, Mapping):
        table = weights
        return lambda path: float(table.get(path, 1.0))
    if callable(weights):
        return weights
    raise TypeError(
        f"weights must be a FrequencyMap, a dict of path -> weight or a callable, got {weights!r}"
    )


def _truncate(tree: Mapping[str, Any], levels: int | None) -> FeatureTree:
    if levels is None:
        return {k: _truncate(v, None) for k, v in tree.items()}
    if levels <= 0:
        return {}
    return {k: _truncate(v, levels - 1) for k, v in tree.items()}


def sample_subtree(
    tree: Mapping[str, Any],
    conditions: Sequence[int],
    *,
    rng: np.random.Generator,
    weights: Weights = None,
    temperature: float | Sequence[float] = 1.0,
    fixed: Sequence[str] = (),
    max_depth: int | None = None,
) -> FeatureTree:
    """Sample a subtree with ``conditions[k-1]`` distinct nodes drawn under each kept node at depth k.

    Args:
        tree: the feature tree.
        conditions: nodes drawn per kept parent at depths 1, 2, ... (breadth control); below the
            last condition the remaining subtree is kept whole, down to ``max_depth`` levels.
        rng: numpy generator (the only randomness).
        weights: node weights (a :class:`FrequencyMap`, a ``{path: weight}`` dict or a callable);
            ``None`` = uniform.
        temperature: smoothing of :func:`smooth_probs`; a sequence gives one value per depth.
        fixed: depth-1 features always included (they count towards ``conditions[0]``).
        max_depth: cut the sample at this many levels (depth control); ``None`` = no cut.
    """
    validate_tree("tree", tree)
    if isinstance(conditions, str) or not isinstance(conditions, Sequence) or not conditions:
        raise ValueError(f"conditions must be a non-empty sequence of positive integers, got {conditions!r}")
    for c in conditions:
        if not isinstance(c, int | np.integer) or isinstance(c, bool) or c < 1:
            raise ValueError(f"conditions must hold positive integers, got {conditions!r}")
    if max_depth is not None and (
        not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 1
    ):
        raise ValueError(f"max_depth must be a positive integer or None, got {max_depth!r}")
    temps = list(temperature) if isinstance(temperature, Sequence) else [temperature] * len(conditions)
    if not temps:
        raise ValueError("temperature must not be an empty sequence")
    missing = [f for f in fixed if f not in tree]
    if missing:
        raise ValueError(f"fixed: features {missing} are not depth-1 nodes of the tree")
    weight = _weight_fn(weights)

    def draw(node: Mapping[str, Any], prefix: Path, depth: int) -> FeatureTree:
        if max_depth is not None and depth > max_depth:
            return {}
        if depth > len(conditions):
            left = None if max_depth is None else max_depth - depth + 1
            return _truncate(node, left)
        keys = list(node)
        if not keys:
            return {}
        chosen = [k for k in fixed if k in node] if depth == 1 else []
        rest = [k for k in keys if k not in chosen]
        n_more = max(0, min(int(conditions[depth - 1]), len(keys)) - len(chosen))
        if n_more and rest:
            p = np.array([max(weight((*prefix, k)), 0.0) for k in rest], dtype=float)
            if not p.sum() > 0:
                p = np.ones(len(rest))
            t = temps[min(depth - 1, len(temps) - 1)]
            probs = smooth_probs(p, t)
            idx = rng.choice(len(rest), size=min(n_more, len(rest)), replace=False, p=probs)
            chosen += [rest[i] for i in sorted(int(i) for i in idx)]
        return {k: draw(node[k], (*prefix, k), depth + 1) for k in chosen}

    return draw(tree, (), 1)


def sample_mandatory_leaves(subtree: Mapping[str, Any], k: int, *, rng: np.random.Generator) -> list[Path]:
    """``k`` distinct leaf paths of ``subtree`` drawn uniformly (fewer if it has fewer leaves)."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    leaves = leaf_paths(subtree)
    if not leaves or k == 0:
        return []
    idx = rng.choice(len(leaves), size=min(k, len(leaves)), replace=False)
    return [leaves[int(i)] for i in sorted(idx)]


# ---------------------------------------------------------------------------------------------
# Merging evolved subtrees
# ---------------------------------------------------------------------------------------------


def merge_trees(base: Mapping[str, Any], addition: Mapping[str, Any]) -> FeatureTree:
    """Recursive union of two feature trees (Sec. 2.2); names equal up to case, spaces and
    underscores are one node (the first spelling is kept)."""
    validate_tree("base", base, nonempty=False)
    validate_tree("addition", addition, nonempty=False)

    def merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> FeatureTree:
        out: FeatureTree = {k: merge(v, {}) for k, v in a.items()}
        index = {_norm(k): k for k in out}
        for key, child in b.items():
            own = index.get(_norm(key))
            if own is None:
                index[_norm(key)] = key
                out[key] = merge(child, {})
            else:
                out[own] = merge(out[own], child)
        return out

    return merge(base, addition)


def new_node_frequencies(
    sampled: Mapping[str, Any],
    expanded: Mapping[str, Any],
    freq: FrequencyMap,
    *,
    siblings: str = "descendants",
) -> FrequencyMap:
    """Frequencies after an evolution step (Sec. 2.2), returned as a new map.

    Args:
        sampled: the subtree the evolver was shown.
        expanded: the evolver's reply (the grown subtree).
        freq: the frequencies before the step (unchanged).
        siblings: ``"descendants"`` (as released, ``get_new_node_frequencies``): a node of
            ``expanded`` below depth 1 that is not a sampled node with a frequency gets the mean
            frequency of every sampled node with a frequency below its parent (any depth, itself
            excluded), else the parent's stored mean child frequency (1 when the parent has none);
            all values are computed from ``freq``; new depth-1 nodes get no entry (weight 1 when
            sampled); afterwards each touched parent's mean child frequency becomes the mean
            frequency of every node below it. ``"direct"``: every new node, depth 1 included,
            gets the mean frequency of its direct sampled siblings, else its parent's mean child
            frequency computed on the fly.

    A node that already had a frequency appends the new value to its history (its frequency
    becomes the mean of the history).
    """
    validate_tree("sampled", sampled, nonempty=False)
    validate_tree("expanded", expanded, nonempty=False)
    if siblings not in ("descendants", "direct"):
        raise ValueError(f"siblings must be 'descendants' or 'direct', got {siblings!r}")
    out = freq.copy()
    if siblings == "direct":
        sampled_paths = set(node_paths(sampled))
        for path in sorted(node_paths(expanded), key=len):
            if path in sampled_paths:
                continue
            sibs = [(*path[:-1], k) for k in subtree_at(sampled, path[:-1])]
            sib_freqs = [freq.frequency(s) for s in sibs if s in sampled_paths]
            value = float(np.mean(sib_freqs)) if sib_freqs else out.avg_sub_frequency(path[:-1])
            out.record(path, max(value, 1e-9))
        return out

    known_paths: list[Path] = []  # sampled nodes with a frequency (the walk stops at unknown ones)

    def walk(node: Mapping[str, Any], prefix: Path) -> None:
        for key, child in node.items():
            path = (*prefix, key)
            if path in freq:
                known_paths.append(path)
                walk(child, path)

    walk(sampled, ())
    known = set(known_paths)
    values: dict[Path, float] = {}
    for path in node_paths(expanded):
        if len(path) < 2 or path in known:
            continue
        parent = path[:-1]
        below = [
            freq.frequency(p)
            for p in known_paths
            if len(p) > len(parent) and p[: len(parent)] == parent and p != path
        ]
        if below:
            values[path] = float(np.mean(below))
        else:
            values[path] = freq.avg_sub.get(parent, 1.0) if parent in freq else 1.0
    for path, value in values.items():
        out.record(path, max(value, 1e-9))
        parent = path[:-1]
        if parent in out:
            n = len(parent)
            sub = [out.frequency(p) for p in out.history if len(p) > n and p[:n] == parent]
            out.avg_sub[parent] = float(np.mean(sub))
    return out
