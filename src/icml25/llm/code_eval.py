"""Functional correctness of generated code: the unbiased pass@k estimator and a sandboxed evaluator.

From *Evaluating Large Language Models Trained on Code* (Chen et al., 2021, arXiv 2107.03374):
with ``n`` samples per problem of which ``c`` pass the unit tests,

    pass@k = E_problems[ 1 - C(n - c, k) / C(n, k) ]                       (Chen et al., Eq. 1)

computed stably as ``1 - prod_{i = n - c + 1}^{n} (1 - k / i)`` (their Fig. 3), and 1 when
``n - c < k``.

A completion is judged by running ``prompt + completion + test + check(entry_point)`` in
:func:`icml25.llm.sandbox.run_python` (3 s, as in DyCodeEval's ``eval_pass_K.py``); it passes iff
the program exits with status 0. A chat reply is first reduced to code by :func:`extract_code`
(the first fenced block, else the whole reply); a reply that redefines the entry function is
appended after the prompt (the later definition wins, helpers from the prompt stay defined), a
bare body is appended directly.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from icml25.llm.sandbox import ExecutionResult, run_python

__all__ = [
    "CodeProblem",
    "CompletionResult",
    "CorrectnessReport",
    "pass_at_k",
    "estimate_pass_at_k",
    "extract_code",
    "build_program",
    "check_completion",
    "evaluate_functional_correctness",
]


class CodeProblem(Protocol):
    """Anything with a prompt to complete, the function the tests call and a ``check`` test."""

    @property
    def task_id(self) -> str: ...
    @property
    def prompt(self) -> str: ...
    @property
    def entry_point(self) -> str: ...
    @property
    def test(self) -> str: ...


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with ``n`` samples, ``c`` of them correct (Chen et al., Eq. 1)."""
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in [1, n={n}], got {k}")
    if n - c < k:
        return 1.0
    # 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k/i)
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def estimate_pass_at_k(num_samples: Sequence[int] | int, num_correct: Sequence[int], k: int) -> np.ndarray:
    """pass@k of every problem (``num_samples`` may be one int shared by all problems)."""
    correct = list(num_correct)
    samples = [num_samples] * len(correct) if isinstance(num_samples, int) else list(num_samples)
    if len(samples) != len(correct):
        raise ValueError(f"num_samples has {len(samples)} entries, num_correct {len(correct)}")
    return np.array([pass_at_k(n, c, k) for n, c in zip(samples, correct, strict=True)])


_FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_code(reply: str) -> str:
    """The code in a model reply: the first fenced block (an unclosed one runs to the end), else all."""
    match = _FENCE.search(reply)
    return match.group(1) if match else reply


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return bool(re.search(rf"^\s*def\s+{re.escape(name)}\s*\(", code, re.MULTILINE))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name for n in tree.body)


def build_program(problem: CodeProblem, completion: str) -> str:
    """The program whose exit status judges ``completion`` (prompt, completion, test, call of check)."""
    code = extract_code(completion)
    if _defines(code, problem.entry_point):
        body = problem.prompt + "    pass\n\n" + code
    else:
        body = problem.prompt + code
    return f"{body}\n\n{problem.test}\n\ncheck({problem.entry_point})\n"


@dataclass(frozen=True)
class CompletionResult:
    """One completion judged: ``passed`` and the sandbox's status and reason."""

    task_id: str
    passed: bool
    status: str
    reason: str

    @classmethod
    def of(cls, task_id: str, result: ExecutionResult) -> CompletionResult:
        reason = result.reason
        if result.status == "error" and "AssertionError" in result.stderr:
            reason = "failed a test assertion"
        return cls(task_id, result.ok, result.status, reason)


def check_completion(
    problem: CodeProblem, completion: str, *, timeout_s: float = 3.0, memory_mb: int = 512
) -> CompletionResult:
    """Run one completion against the problem's tests in the sandbox."""
    result = run_python(build_program(problem, completion), timeout_s=timeout_s, memory_mb=memory_mb)
    return CompletionResult.of(problem.task_id, result)


@dataclass(frozen=True)
class CorrectnessReport:
    """pass@k per k (mean over problems), per-problem pass counts and every judged completion."""

    pass_at: dict[int, float]
    per_task: dict[str, tuple[int, int]]  # task_id -> (n, c)
    results: tuple[CompletionResult, ...] = field(default_factory=tuple)

    @property
    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.results:
            counts[r.status] = counts.get(r.status, 0) + 1
        return counts


def evaluate_functional_correctness(
    problems: Sequence[CodeProblem],
    completions: Mapping[str, Sequence[str]],
    *,
    ks: Sequence[int] = (1,),
    timeout_s: float = 3.0,
    memory_mb: int = 512,
) -> CorrectnessReport:
    """Judge every completion in the sandbox and average the unbiased pass@k over problems.

    Args:
        problems: the problems (``task_id``, ``prompt``, ``entry_point``, ``test``).
        completions: ``task_id -> completions``; every problem needs at least ``max(ks)``.
        ks: the k values; ``k`` larger than a problem's sample count raises ``ValueError``.
    """
    if not problems:
        raise ValueError("problems must not be empty")
    per_task: dict[str, tuple[int, int]] = {}
    results: list[CompletionResult] = []
    for problem in problems:
        samples = completions.get(problem.task_id)
        if not samples:
            raise ValueError(f"no completions for {problem.task_id}")
        judged = [check_completion(problem, s, timeout_s=timeout_s, memory_mb=memory_mb) for s in samples]
        results.extend(judged)
        per_task[problem.task_id] = (len(judged), sum(r.passed for r in judged))
    pass_at = {}
    for k in ks:
        ns, cs = zip(*per_task.values(), strict=True)
        pass_at[k] = float(estimate_pass_at_k(list(ns), list(cs), k).mean())
    return CorrectnessReport(pass_at=pass_at, per_task=per_task, results=tuple(results))
