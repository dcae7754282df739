"""Choosing a hyperparameter on a validation split, the same way for every arm of a check.

Equal effort means ours and every baseline get the same sweep and the same rule for picking from it;
:func:`best_on_validation` is that rule: the candidate with the lowest validation score, where a
non-finite score (a diverged run) counts as worst and ties go to the first candidate in sweep order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def best_on_validation(runs: Mapping[K, V], score: Callable[[V], float]) -> K:
    """The key of ``runs`` whose ``score(run)`` is lowest (lower is better).

    Args:
        runs: candidate -> its run (e.g. learning rate -> trained arm), in sweep order.
        score: the validation score of one run; NaN or infinite counts as worst.

    Raises:
        ValueError: if ``runs`` is empty.
    """
    if not runs:
        raise ValueError("runs must hold at least one candidate to choose from")

    def finite_or_worst(key: K) -> float:
        value = float(score(runs[key]))
        return value if math.isfinite(value) else math.inf

    return min(runs, key=finite_or_worst)
