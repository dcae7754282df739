"""Symbolic pruning of trivially equivalent candidates, for *Autoformulation of Mathematical
Optimization Models Using LLMs* (Astorga et al., ICML 2025, arXiv 2411.01679), Sec. 3.3.

Candidates for one tree level are merged when they are equivalent in meaning though not in text:

* decision variables: the same set of ``(name, type)`` and the same parameter values (the official
  code asks an LLM to group variable sets; we merge only exact matches after normalisation);
* objective: both are expanded with ``sympy`` (parameters substituted) into ``c·x + c0``;
  equivalent iff the senses and the vectors agree (the official code ignores the sense; ``max -f``
  and ``min f`` have the same optimisers but report opposite optimal values, and correctness is
  judged on the value, so we keep them apart);
* constraint sets: equivalent iff they define the same feasible set over the non-negative reals.
  The official code checks ``S1 ∧ ¬S2`` and ``S2 ∧ ¬S1`` with z3; we use linear programming, which
  is exact for linear systems: ``S1 ⊆ S2`` iff every row ``a·x <= b`` of ``S2`` has
  ``max_{x ∈ S1} a·x <= b`` (or ``S1`` is empty). Integrality is ignored, as in the paper.

Clustering is greedy: the first candidate represents every later candidate equivalent to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from .dsl import Formulation, compile_formulation

__all__ = [
    "cluster_equivalent",
    "constraint_sets_equivalent",
    "objectives_equivalent",
    "components_equivalent",
]

T = TypeVar("T")


def objectives_equivalent(a: Formulation, b: Formulation, *, tol: float = 1e-9) -> bool:
    """Whether the objectives of two formulations over the same variables are the same function."""
    ma, mb = compile_formulation(a), compile_formulation(b)
    if ma.names != mb.names or ma.sense != mb.sense:
        return False
    ca, cb = np.append(ma.c, ma.c0), np.append(mb.c, mb.c0)
    return bool(np.allclose(ca, cb, atol=tol, rtol=tol))


def _as_ub(A_ub: np.ndarray, b_ub: np.ndarray, A_eq: np.ndarray, b_eq: np.ndarray):
    return np.vstack([A_ub, A_eq, -A_eq]), np.concatenate([b_ub, b_eq, -b_eq])


def _contained(
    A1: np.ndarray, b1: np.ndarray, A2: np.ndarray, b2: np.ndarray, ub: np.ndarray, tol: float
) -> bool:
    """``{x >= 0, x <= ub, A1 x <= b1} ⊆ {A2 x <= b2}`` by one LP per row of ``A2``."""
    from scipy.optimize import linprog

    bounds = [(0.0, None if not np.isfinite(u) else float(u)) for u in ub]
    for a, b in zip(A2, b2, strict=True):
        res = linprog(
            -a, A_ub=A1 if len(b1) else None, b_ub=b1 if len(b1) else None, bounds=bounds, method="highs"
        )
        if res.status == 2:  # S1 empty: contained in anything
            return True
        if res.status != 0 or -res.fun > b + tol * max(1.0, abs(b)):
            return False
    return True


def constraint_sets_equivalent(a: Formulation, b: Formulation, *, tol: float = 1e-7) -> bool:
    """Whether the equality plus inequality constraints of ``a`` and ``b`` define the same set."""
    ma, mb = compile_formulation(a), compile_formulation(b)
    if ma.names != mb.names or ma.types != mb.types:
        return False
    A1, b1 = _as_ub(ma.A_ub, ma.b_ub, ma.A_eq, ma.b_eq)
    A2, b2 = _as_ub(mb.A_ub, mb.b_ub, mb.A_eq, mb.b_eq)
    ub = ma.upper_bounds
    return _contained(A1, b1, A2, b2, ub, tol) and _contained(A2, b2, A1, b1, ub, tol)


def components_equivalent(level: str, a: Formulation, b: Formulation) -> bool:
    """Equivalence of two formulations that differ only in the component at ``level``."""
    if level == "variables":
        return (sorted(a.variables or ()), sorted(a.parameters)) == (
            sorted(b.variables or ()),
            sorted(b.parameters),
        )
    if level == "objective":
        return objectives_equivalent(a, b)
    if level in ("equalities", "inequalities"):
        return constraint_sets_equivalent(a, b)
    raise ValueError(f"unknown level {level!r}")


def cluster_equivalent(items: Sequence[T], equivalent: Callable[[T, T], bool]) -> list[list[int]]:
    """Greedy clustering: groups of indices, each led by its first (representative) member."""
    if not callable(equivalent):
        raise TypeError("equivalent must be callable")
    groups: list[list[int]] = []
    for i, item in enumerate(items):
        for group in groups:
            if equivalent(items[group[0]], item):
                group.append(i)
                break
        else:
            groups.append([i])
    return groups
