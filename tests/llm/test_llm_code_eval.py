"""pass@k estimator (against the combinatorial definition) and the sandboxed functional-correctness check."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml25.data.humaneval import load_humaneval
from icml25.llm.code_eval import (
    build_program,
    check_completion,
    estimate_pass_at_k,
    evaluate_functional_correctness,
    extract_code,
    pass_at_k,
)


@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_matches_binomial_definition(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    expected = 1.0 - comb(n - c, k) / comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_is_monotone_in_k_and_c(nc: tuple[int, int]) -> None:
    n, c = nc
    vals = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(a <= b + 1e-12 for a, b in zip(vals, vals[1:], strict=False))
    if c < n:
        assert pass_at_k(n, c, 1) <= pass_at_k(n, c + 1, 1)


def test_pass_at_k_special_cases() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 3, 3) == 1.0  # n - c < k
    np.testing.assert_allclose(estimate_pass_at_k(4, [0, 2, 4], 1), [0, 0.5, 1])
    with pytest.raises(ValueError, match="k must"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError, match="num_samples"):
        estimate_pass_at_k([1, 2], [1], 1)


def test_extract_code() -> None:
    assert extract_code("text\n```python\nx = 1\n```\nmore") == "x = 1\n"
    assert extract_code("```\ny = 2\n```") == "y = 2\n"
    assert extract_code("```python\nz = 3\n") == "z = 3\n"  # unclosed fence
    assert extract_code("    return 1\n") == "    return 1\n"


def test_canonical_solutions_pass_and_wrong_ones_fail() -> None:
    problems = load_humaneval(["HumanEval/0", "HumanEval/2", "HumanEval/53"])
    for p in problems:
        assert check_completion(p, p.canonical_solution).passed
        full = f"```python\n{p.prompt}{p.canonical_solution}```\nExplanation."
        assert check_completion(p, full).passed  # a whole function in a fenced reply
        bad = check_completion(p, "    return None\n")
        assert not bad.passed and bad.status == "error"


def test_hostile_and_invalid_completions_are_recorded() -> None:
    p = load_humaneval(["HumanEval/53"])[0]
    syntax = check_completion(p, "    return x +\n")
    assert not syntax.passed and syntax.status == "error"
    loop = check_completion(p, "    while True:\n        pass\n", timeout_s=0.5)
    assert loop.status == "timeout"
    assert "check(add)" in build_program(p, "    return x + y\n")


def test_evaluate_functional_correctness() -> None:
    problems = load_humaneval(["HumanEval/53", "HumanEval/23"])
    completions = {
        "HumanEval/53": ["    return x + y\n", "    return x - y\n"],
        "HumanEval/23": ["    return 0\n", "    return 0\n"],
    }
    report = evaluate_functional_correctness(problems, completions, ks=(1, 2))
    assert report.per_task == {"HumanEval/53": (2, 1), "HumanEval/23": (2, 0)}
    assert report.pass_at[1] == pytest.approx(0.25)
    assert report.pass_at[2] == pytest.approx(0.5)
    assert sum(report.status_counts.values()) == 4
    with pytest.raises(ValueError, match="no completions"):
        evaluate_functional_correctness(problems, {"HumanEval/53": ["x"]})
