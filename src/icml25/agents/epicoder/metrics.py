"""Complexity and diversity of synthesized code, after *EpiCoder: Encompassing Diversity and
Complexity in Code Generation* (Wang et al., ICML 2025, arXiv 2501.04694), Sec. 3.3-3.4.

The paper scores its data with software-engineering metrics (cyclomatic complexity, Halstead
measures, lines of code) and counts distinct features. Here:

* :func:`complexity_metrics`: ``radon`` cyclomatic complexity (sum and maximum over blocks),
  Halstead volume, source lines, maximum AST depth, functions, classes and files of one task.
* :func:`diversity_metrics`: over the feature trees *re-extracted from generated code*, the number
  of distinct leaf features, the Shannon entropy of their usage (nats, and normalised by the log of
  the number of distinct features) and the mean pairwise Jaccard distance of the tasks' feature sets.
* :func:`embedding_dispersion`: mean pairwise cosine distance of TF-IDF code embeddings.
"""

from __future__ import annotations

import ast
import contextlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .corpus import code_embeddings
from .extract import salvage_parse
from .tree import leaf_paths, validate_tree

__all__ = ["ast_depth", "complexity_metrics", "diversity_metrics", "embedding_dispersion", "feature_set"]


def ast_depth(node: ast.AST) -> int:
    """Maximum nesting depth of an AST (a lone module node has depth 1)."""
    if not isinstance(node, ast.AST):
        raise TypeError(f"node must be an ast.AST, got {type(node).__name__}")
    best, stack = 0, [(node, 1)]
    while stack:
        cur, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(cur))
    return best


def complexity_metrics(files: Mapping[str, str] | str) -> dict[str, float]:
    """Complexity of one task's code (files or one source string), each file cut to its parsable
    prefix. Keys: ``parsed`` (1 if any code parsed), ``cc_total``, ``cc_max`` (radon cyclomatic
    complexity: module-level code plus every function and method),
    ``halstead_volume``, ``sloc``, ``ast_depth``, ``n_functions``, ``n_classes``, ``n_files``."""
    from radon.metrics import h_visit
    from radon.raw import analyze
    from radon.visitors import ComplexityVisitor

    if isinstance(files, str):
        files = {"solution.py": files}
    if not isinstance(files, Mapping):
        raise TypeError(
            f"files must be a dict of name -> source or a source string, got {type(files).__name__}"
        )
    out = dict.fromkeys(
        (
            "parsed",
            "cc_total",
            "cc_max",
            "halstead_volume",
            "sloc",
            "ast_depth",
            "n_functions",
            "n_classes",
            "n_files",
        ),
        0.0,
    )
    for name, src in files.items():
        if not isinstance(src, str):
            raise TypeError(f"files[{name!r}] must be a string, got {type(src).__name__}")
        module = salvage_parse(src)
        if module is None:
            continue
        code = ast.unparse(module)
        out["parsed"] = 1.0
        out["n_files"] += 1
        visitor = ComplexityVisitor.from_code(code)
        methods = [m for c in visitor.classes for m in c.methods]
        ccs = [float(visitor.complexity)] + [float(f.complexity) for f in (*visitor.functions, *methods)]
        out["cc_total"] += sum(ccs)
        out["cc_max"] = max(out["cc_max"], max(ccs))
        with contextlib.suppress(SyntaxError, ZeroDivisionError, ValueError):
            out["halstead_volume"] += float(h_visit(code).total.volume)
        out["sloc"] += float(analyze(code).sloc)
        out["ast_depth"] = max(out["ast_depth"], float(ast_depth(module)))
        out["n_functions"] += sum(
            isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(module)
        )
        out["n_classes"] += sum(isinstance(n, ast.ClassDef) for n in ast.walk(module))
    return out


def feature_set(tree: Mapping[str, Any]) -> frozenset[str]:
    """The leaf features of a feature tree as ``a > b > c`` strings."""
    validate_tree("tree", tree, nonempty=False)
    return frozenset(" > ".join(p) for p in leaf_paths(tree))


def diversity_metrics(trees: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Diversity of a set of tasks from their (re-extracted) feature trees.

    Keys: ``distinct_features``, ``entropy`` (Shannon, nats, of how often each leaf feature occurs
    over the tasks), ``entropy_norm`` (entropy / log(distinct); 0 when fewer than 2 features),
    ``jaccard_distance`` (mean over task pairs of 1 - |A n B| / |A u B|; pairs of empty sets count 0),
    ``features_per_task``.
    """
    if isinstance(trees, Mapping) or not isinstance(trees, Sequence):
        raise TypeError(f"trees must be a sequence of feature trees, got {type(trees).__name__}")
    if not trees:
        raise ValueError("trees must hold at least one feature tree")
    sets = [feature_set(t) for t in trees]
    counts: Counter[str] = Counter(f for s in sets for f in s)
    total = sum(counts.values())
    # sorted and fsum-ed: the same number whatever the (hash-seeded) set order
    entropy = -math.fsum(sorted((c / total) * math.log(c / total) for c in counts.values())) if total else 0.0
    distinct = len(counts)
    pairs = [
        1.0 - len(a & b) / len(a | b) if (a | b) else 0.0 for i, a in enumerate(sets) for b in sets[i + 1 :]
    ]
    return {
        "distinct_features": float(distinct),
        "entropy": float(entropy),
        "entropy_norm": float(entropy / math.log(distinct)) if distinct > 1 else 0.0,
        "jaccard_distance": float(np.mean(pairs)) if pairs else 0.0,
        "features_per_task": float(np.mean([len(s) for s in sets])),
    }


def embedding_dispersion(texts: Sequence[str], *, fit_texts: Sequence[str] | None = None) -> float:
    """Mean pairwise cosine distance of the texts' TF-IDF code embeddings (0 for fewer than two
    texts); ``fit_texts`` fixes the vocabulary so that several groups are measured in one space.
    Empty texts embed to the zero vector and are at distance 1 from everything."""
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"texts must be a sequence of strings, got {type(texts).__name__}")
    if not texts:
        raise ValueError("texts must hold at least one string")
    if len(texts) < 2:
        return 0.0
    emb = code_embeddings(texts, fit_texts=fit_texts)
    sims = emb @ emb.T
    iu = np.triu_indices(len(texts), k=1)
    return float(np.mean(1.0 - sims[iu]))
