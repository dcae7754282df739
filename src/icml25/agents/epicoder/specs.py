"""Task specifications without an LLM: what a task generator is *asked* to combine, after
*EpiCoder: Encompassing Diversity and Complexity in Code Generation* (Wang et al., ICML 2025,
arXiv 2501.04694), Sec. 2.3 and 3.4.

A *spec* is the set of leaf features (paths) a synthesis prompt hands the generator: the leaves of
a sampled feature subtree (:func:`tree_specs`), or features of one seed snippet for the
OSS-Instruct-style baseline (:func:`snippet_specs`). Comparing specs separates the paper's
mechanism (what the feature tree lets a prompt ask for) from the quality of the LLM that writes the
code. Two references bracket the diversity metrics: :func:`uniform_specs` (features drawn uniformly
from a vocabulary: the most spread a spec set of the same sizes can be) and :func:`top_specs` (every
spec = the most frequent features: the least).

Metrics: :func:`block_diversity` (distinct features and Shannon entropy of their use in
consecutive blocks of specs, the per-item scores the runner pairs across arms) and
:func:`combination_novelty` (share of specs whose features no single corpus snippet holds
together).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .tree import FrequencyMap, Path, leaf_paths, sample_mandatory_leaves, sample_subtree, validate_tree

__all__ = [
    "TASK_CATEGORIES",
    "Spec",
    "tree_specs",
    "snippet_specs",
    "uniform_specs",
    "top_specs",
    "block_diversity",
    "combination_novelty",
]

#: The top-level categories the released Python task generator samples from (``gen/gen_question.py``).
TASK_CATEGORIES: tuple[str, ...] = (
    "workflow",
    "implementation style",
    "functionality",
    "resource usage",
    "computation operation",
    "user interaction",
    "data processing",
    "file operation",
    "dependency relations",
    "algorithm",
    "data structures",
)

Spec = frozenset[Path]


def _keep(tree: Mapping[str, Any], categories: Sequence[str] | None) -> dict[str, Any]:
    return dict(tree) if categories is None else {k: v for k, v in tree.items() if k in categories}


def tree_specs(
    tree: Mapping[str, Any],
    n: int,
    *,
    rng: np.random.Generator,
    conditions: Sequence[int] = (5, 2, 1, 1),
    weights: FrequencyMap | None = None,
    temperature: float = 10.0,
    fixed: Sequence[str] = ("computation operation",),
    categories: Sequence[str] | None = TASK_CATEGORIES,
    n_mandatory: int = 2,
) -> list[Spec]:
    """``n`` specs, each the leaf paths of a subtree sampled as the released task generator does.

    The tree is cut to ``categories`` (``None`` = all); ``fixed`` features absent from it are
    dropped. The mandatory leaves (``n_mandatory``) are drawn to keep the random stream aligned
    with the prompt-building path; they are leaves of the subtree, so they add no feature.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    kept = validate_tree("tree", _keep(tree, categories))
    fix = [f for f in fixed if f in kept]
    out: list[Spec] = []
    for _ in range(n):
        sub = sample_subtree(kept, conditions, rng=rng, weights=weights, temperature=temperature, fixed=fix)
        sample_mandatory_leaves(sub, n_mandatory, rng=rng)
        out.append(frozenset(leaf_paths(sub)))
    return out


def snippet_specs(
    snippet_features: Sequence[Mapping[str, Any]],
    sizes: Sequence[int],
    *,
    rng: np.random.Generator,
    categories: Sequence[str] | None = TASK_CATEGORIES,
) -> list[Spec]:
    """One spec per entry of ``sizes``: a uniformly drawn snippet's leaf features (in
    ``categories``), a random subset of ``size`` of them where the snippet has more, else all."""
    if not snippet_features:
        raise ValueError("snippet_features must hold at least one feature tree")
    leaves = [sorted(leaf_paths(_keep(t, categories))) for t in snippet_features]
    out: list[Spec] = []
    for size in sizes:
        feats = leaves[int(rng.integers(len(leaves)))]
        if len(feats) > size:
            idx = rng.choice(len(feats), size=int(size), replace=False)
            feats = [feats[int(i)] for i in idx]
        out.append(frozenset(feats))
    return out


def uniform_specs(
    vocabulary: Sequence[Path], sizes: Sequence[int], *, rng: np.random.Generator
) -> list[Spec]:
    """Reference (ceiling): each spec = ``size`` features drawn uniformly without replacement."""
    vocab = sorted(set(vocabulary))
    if not vocab:
        raise ValueError("vocabulary must hold at least one feature")
    return [
        frozenset(vocab[int(i)] for i in rng.choice(len(vocab), size=min(int(s), len(vocab)), replace=False))
        for s in sizes
    ]


def top_specs(counts: Mapping[Path, float], sizes: Sequence[int]) -> list[Spec]:
    """Reference (floor): each spec = the ``size`` most frequent features (ties by name)."""
    if not counts:
        raise ValueError("counts must hold at least one feature")
    ranked = sorted(counts, key=lambda p: (-counts[p], p))
    return [frozenset(ranked[: int(s)]) for s in sizes]


def block_diversity(specs: Sequence[Spec], block: int) -> dict[str, np.ndarray]:
    """Per block of ``block`` consecutive specs (a trailing partial block is dropped): the number of
    distinct features (``distinct``), the Shannon entropy in nats of how often each is used
    (``entropy``) and the number of feature mentions (``mentions``, the summed spec sizes)."""
    if not isinstance(block, int) or isinstance(block, bool) or block < 1:
        raise ValueError(f"block must be a positive integer, got {block!r}")
    n_blocks = len(specs) // block
    if n_blocks == 0:
        raise ValueError(f"need at least one block of {block} specs, got {len(specs)} specs")
    distinct, entropy, mentions = [], [], []
    for b in range(n_blocks):
        counts: Counter[Path] = Counter(f for s in specs[b * block : (b + 1) * block] for f in s)
        total = sum(counts.values())
        distinct.append(float(len(counts)))
        mentions.append(float(total))
        entropy.append(
            -math.fsum(sorted((c / total) * math.log(c / total) for c in counts.values())) if total else 0.0
        )
    return {
        "distinct": np.asarray(distinct),
        "entropy": np.asarray(entropy),
        "mentions": np.asarray(mentions),
    }


def combination_novelty(specs: Sequence[Spec], corpus: Sequence[Mapping[str, Any]]) -> float:
    """Share of specs whose features are not all nodes of any single corpus snippet's feature tree
    (a snippet "holds" a feature path when the path, or a longer one through it, is in its tree)."""
    if not specs:
        raise ValueError("specs must hold at least one spec")
    index: dict[Path, int] = {}  # node path -> bitset of the snippets that hold it
    for i, tree in enumerate(corpus):
        nodes = {p[:k] for p in leaf_paths(tree) for k in range(1, len(p) + 1)}
        for node in nodes:
            index[node] = index.get(node, 0) | (1 << i)
    novel = 0
    for spec in specs:
        holders = -1  # all ones
        for f in spec:
            holders &= index.get(f, 0)
            if not holders:
                break
        novel += bool(spec) and holders == 0
    return novel / len(specs)
