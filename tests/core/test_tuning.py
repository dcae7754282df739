"""The shared rule for picking a hyperparameter on validation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml25.core.tuning import best_on_validation


def test_lowest_score_wins_and_diverged_runs_count_as_worst() -> None:
    runs = {1e-3: 2.5, 2e-3: math.nan, 4e-3: 2.1, 8e-3: math.inf}
    assert best_on_validation(runs, lambda v: v) == 4e-3


def test_ties_go_to_the_first_candidate_and_all_diverged_picks_the_first() -> None:
    assert best_on_validation({"a": 1.0, "b": 1.0}, lambda v: v) == "a"
    assert best_on_validation({"a": math.nan, "b": math.inf}, lambda v: v) == "a"


def test_empty_sweep_is_refused() -> None:
    with pytest.raises(ValueError, match="runs"):
        best_on_validation({}, lambda v: v)


@given(st.dictionaries(st.integers(), st.floats(allow_nan=False, allow_infinity=False), min_size=1))
def test_matches_a_naive_argmin(runs: dict[int, float]) -> None:
    best = best_on_validation(runs, lambda v: v)
    assert runs[best] == min(runs.values())
    assert best == next(k for k, v in runs.items() if v == min(runs.values()))
