"""Seed code and core-set selection, after *EpiCoder: Encompassing Diversity and Complexity in Code
Generation* (Wang et al., ICML 2025, arXiv 2501.04694), Sec. 2.1.

The paper draws raw code from The Stack v2 and keeps a diverse core set chosen by k-center greedy
over embeddings. Here the raw code is the Python standard library of the running interpreter
(:func:`stdlib_functions`: every function of a given length, in a fixed order) and the embedding
is TF-IDF over code tokens (:func:`code_embeddings`); :func:`k_center_greedy` is the selection
rule (repeatedly add the point farthest from its nearest chosen centre).
"""

from __future__ import annotations

import ast
import os
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from icml25.core.validate import check_finite_array

__all__ = ["CodeSnippet", "stdlib_functions", "code_embeddings", "k_center_greedy", "CODE_TOKEN_PATTERN"]

#: Identifiers, numbers and single punctuation characters.
CODE_TOKEN_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*|\d+|[^\sA-Za-z0-9_]"
_SKIP_DIRS = {
    "test",
    "tests",
    "idlelib",
    "site-packages",
    "lib2to3",
    "turtledemo",
    "__pycache__",
    "ensurepip",
}


@dataclass(frozen=True)
class CodeSnippet:
    """One seed function: ``module`` (dotted), ``name`` (qualified) and its ``source``."""

    module: str
    name: str
    source: str


def _stdlib_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)  # never descend into skipped folders
        out.extend(Path(folder) / f for f in files if f.endswith(".py") and not f.startswith("test_"))
    return sorted(out)


def stdlib_functions(
    *, min_lines: int = 5, max_lines: int = 80, max_files: int | None = None, root: str | Path | None = None
) -> list[CodeSnippet]:
    """Every function (and method) of ``min_lines``..``max_lines`` lines in the standard library.

    Args:
        min_lines, max_lines: inclusive bounds on a function's line count.
        max_files: use only this many source files, spread evenly over the sorted file list.
        root: the library folder (default ``sysconfig.get_paths()["stdlib"]``); ``test``,
            ``idlelib`` and ``site-packages`` are skipped.

    The order is deterministic (sorted files, source order inside a file).
    """
    for name, value in (("min_lines", min_lines), ("max_lines", max_lines)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if max_lines < min_lines:
        raise ValueError(f"max_lines ({max_lines}) must be >= min_lines ({min_lines})")
    if max_files is not None and (
        not isinstance(max_files, int) or isinstance(max_files, bool) or max_files < 1
    ):
        raise ValueError(f"max_files must be a positive integer or None, got {max_files!r}")
    base = Path(root) if root is not None else Path(sysconfig.get_paths()["stdlib"])
    if not base.is_dir():
        raise ValueError(f"root: {str(base)!r} is not a directory")
    files = _stdlib_files(base)
    if max_files is not None and max_files < len(files):
        idx = np.unique(np.linspace(0, len(files) - 1, max_files).round().astype(int))
        files = [files[int(i)] for i in idx]
    out: list[CodeSnippet] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
            module_ast = ast.parse(text)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = text.splitlines()
        module = ".".join(path.relative_to(base).with_suffix("").parts)
        stack: list[tuple[ast.AST, str]] = [(module_ast, "")]
        found: list[tuple[int, CodeSnippet]] = []
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    stack.append((child, f"{prefix}{child.name}."))
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    end = child.end_lineno or child.lineno
                    if min_lines <= end - start + 1 <= max_lines:
                        src = "\n".join(lines[start - 1 : end])
                        indent = len(src) - len(src.lstrip(" "))
                        src = "\n".join(
                            line[indent:] if line[:indent].isspace() else line for line in src.splitlines()
                        )
                        found.append((start, CodeSnippet(module, f"{prefix}{child.name}", src)))
        out.extend(s for _, s in sorted(found, key=lambda x: x[0]))
    return out


def code_embeddings(
    texts: Sequence[str],
    *,
    fit_texts: Sequence[str] | None = None,
    max_features: int = 4096,
    sparse: bool = False,
) -> Any:
    """L2-normalised TF-IDF vectors of code tokens (:data:`CODE_TOKEN_PATTERN`).

    ``fit_texts`` (default ``texts``) fixes the vocabulary and IDF, so several groups of texts can
    be embedded in one space. Dense float64 array, or a scipy CSR matrix with ``sparse=True``.
    """
    from scipy import sparse as sp
    from sklearn.feature_extraction.text import TfidfVectorizer

    if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
        raise ValueError("texts must be a non-empty sequence of strings")
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must hold strings")
    if not isinstance(max_features, int) or isinstance(max_features, bool) or max_features < 1:
        raise ValueError(f"max_features must be a positive integer, got {max_features!r}")
    fit = list(fit_texts) if fit_texts is not None else list(texts)
    vectorizer = TfidfVectorizer(token_pattern=CODE_TOKEN_PATTERN, lowercase=False, max_features=max_features)
    try:
        vectorizer.fit(fit)
    except ValueError:  # empty vocabulary: every text is empty
        return sp.csr_matrix((len(texts), 1)) if sparse else np.zeros((len(texts), 1))
    matrix = vectorizer.transform(list(texts)).astype(float)
    return matrix.tocsr() if sparse else np.asarray(matrix.toarray(), dtype=float)


def k_center_greedy(X: np.ndarray, k: int, *, first: int = 0) -> np.ndarray:
    """Indices of a k-center greedy core set of the rows of ``X`` (Euclidean; dense or scipy sparse).

    Starts from row ``first`` and repeatedly adds the row whose distance to its nearest chosen
    centre is largest (ties: lowest index). Returns ``min(k, n)`` distinct indices in the order
    chosen.
    """
    from scipy import sparse as sp

    if sp.issparse(X):
        arr: Any = sp.csr_matrix(X, dtype=float)
        if arr.ndim != 2 or arr.shape[0] == 0 or not np.all(np.isfinite(arr.data)):
            raise ValueError(f"X must be a finite, non-empty 2-D matrix, got shape {arr.shape}")
        sq = np.asarray(arr.multiply(arr).sum(axis=1)).ravel()
    else:
        check_finite_array("X", X, ndim=2)
        arr = np.asarray(X, dtype=float)
        sq = np.einsum("ij,ij->i", arr, arr)
    n = arr.shape[0]

    def dots(i: int) -> np.ndarray:
        row = arr[i]
        prod = arr @ (row.T if sp.issparse(arr) else row)
        return np.asarray(prod.toarray() if sp.issparse(prod) else prod).ravel()

    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not isinstance(first, int) or not 0 <= first < n:
        raise ValueError(f"first must be a row index in [0, {n}), got {first!r}")
    chosen = [first]
    dist = np.maximum(sq + sq[first] - 2.0 * dots(first), 0.0)
    dist[first] = -1.0
    for _ in range(min(k, n) - 1):
        nxt = int(np.argmax(dist))
        chosen.append(nxt)
        d_new = np.maximum(sq + sq[nxt] - 2.0 * dots(nxt), 0.0)
        dist = np.minimum(dist, d_new)
        dist[chosen] = -1.0
    return np.asarray(chosen, dtype=int)
