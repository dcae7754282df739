"""Data schema of the three AAAR-1.0 tasks and a loader for the released files.

Paper: *AAAR-1.0: Assessing AI's Potential to Assist Research* (Lou et al., ICML 2025,
arXiv 2410.22394). Sec. 3 of the paper defines the tasks:

* EquationInference: a masked display equation in a paper, its LaTeX context before and after,
  and candidate equations of which exactly one is the original (four in the release: one human
  equation and three LLM-written wrong ones).
* ExperimentDesign: the pre-experiment part of a paper; the experts' experiment list and one
  explanation per experiment (why it is needed).
* PaperWeakness: a submission's text and several reviewers' weakness lists (a list of lists).

:func:`load_records` reads the released JSON / JSON-lines files a user has locally; the field
names of the release (``context_before``, ``context_after``, ``options_list``, ``answer``;
``experiments`` / ``explanations``; ``weaknesses``) and a few spellings of them are accepted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "EquationInstance",
    "ExperimentInstance",
    "WeaknessInstance",
    "load_records",
]

LETTERS = "ABCDEFGHIJ"
Task = Literal["equation", "experiment", "weakness"]


def _text(name: str, value: Any, *, allow_empty: bool = True) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _texts(name: str, value: Any, *, allow_empty: bool = False) -> tuple[str, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of strings, got {type(value).__name__}")
    items = tuple(_text(f"{name}[{i}]", v, allow_empty=False) for i, v in enumerate(value))
    if not items and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    return items


@dataclass(frozen=True)
class EquationInstance:
    """One EquationInference item (paper Sec. 3.1).

    Args:
        paper_id: identifier of the source paper.
        context_before, context_after: the LaTeX text around the masked equation.
        options: candidate equations (at least two); exactly one is the original.
        answer: index of the original equation in ``options``.
    """

    paper_id: str
    context_before: str
    context_after: str
    options: tuple[str, ...]
    answer: int

    def __post_init__(self) -> None:
        _text("EquationInstance.paper_id", self.paper_id)
        _text("EquationInstance.context_before", self.context_before)
        _text("EquationInstance.context_after", self.context_after)
        object.__setattr__(self, "options", _texts("EquationInstance.options", self.options))
        if len(self.options) < 2 or len(self.options) > len(LETTERS):
            raise ValueError(
                f"EquationInstance.options must hold 2 to {len(LETTERS)} equations, got {len(self.options)}"
            )
        if isinstance(self.answer, bool) or not isinstance(self.answer, int):
            raise TypeError(f"EquationInstance.answer must be an int, got {type(self.answer).__name__}")
        if not 0 <= self.answer < len(self.options):
            raise ValueError(f"EquationInstance.answer must index options, got {self.answer}")

    @property
    def letter(self) -> str:
        """The answer as a letter (A, B, ...), as in the release."""
        return LETTERS[self.answer]

    @property
    def labels(self) -> tuple[int, ...]:
        """Binary labels of the options (1 = original), for the ICML version's binary protocol."""
        return tuple(int(i == self.answer) for i in range(len(self.options)))

    @classmethod
    def from_record(cls, record: Mapping[str, Any], index: int = 0) -> EquationInstance:
        options = record.get("options_list", record.get("options"))
        if options is None:
            raise ValueError(f"record {index}: no 'options_list' (or 'options') field")
        answer = record.get("answer")
        if isinstance(answer, str):
            key = answer.strip().strip("()").upper()[:1]
            if key not in LETTERS:
                raise ValueError(f"record {index}: answer must be a letter A-J or an index, got {answer!r}")
            answer = LETTERS.index(key)
        return cls(
            paper_id=str(record.get("paper_id", record.get("id", index))),
            context_before=record.get("context_before", ""),
            context_after=record.get("context_after", ""),
            options=tuple(options),
            answer=answer,  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class ExperimentInstance:
    """One ExperimentDesign item (paper Sec. 3.2).

    Args:
        paper_id: identifier of the paper.
        text: the paper's pre-experiment text (experiment sections and leaking sentences removed).
        experiments: the experts' experiment list.
        explanations: one explanation per experiment (same length as ``experiments``).
    """

    paper_id: str
    text: str
    experiments: tuple[str, ...]
    explanations: tuple[str, ...]

    def __post_init__(self) -> None:
        _text("ExperimentInstance.paper_id", self.paper_id)
        _text("ExperimentInstance.text", self.text, allow_empty=False)
        object.__setattr__(self, "experiments", _texts("ExperimentInstance.experiments", self.experiments))
        object.__setattr__(self, "explanations", _texts("ExperimentInstance.explanations", self.explanations))
        if len(self.experiments) != len(self.explanations):
            raise ValueError(
                "ExperimentInstance.explanations must have one entry per experiment, got "
                f"{len(self.explanations)} for {len(self.experiments)}"
            )

    @classmethod
    def from_record(cls, record: Mapping[str, Any], index: int = 0) -> ExperimentInstance:
        text = record.get("text", record.get("input", record.get("paper")))
        if text is None:
            raise ValueError(f"record {index}: no 'text' (or 'input') field")
        return cls(
            paper_id=str(record.get("paper_id", record.get("id", index))),
            text=text,
            experiments=tuple(record.get("experiments", record.get("experiment", ()))),
            explanations=tuple(record.get("explanations", record.get("explanation", ()))),
        )


@dataclass(frozen=True)
class WeaknessInstance:
    """One PaperWeakness item (paper Sec. 3.3).

    Args:
        paper_id: identifier of the submission.
        text: the submission's text.
        reviews: one weakness list per reviewer (each non-empty).
    """

    paper_id: str
    text: str
    reviews: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        _text("WeaknessInstance.paper_id", self.paper_id)
        _text("WeaknessInstance.text", self.text, allow_empty=False)
        if isinstance(self.reviews, str | bytes) or not isinstance(self.reviews, Sequence):
            raise TypeError("WeaknessInstance.reviews must be a sequence of weakness lists")
        reviews = tuple(_texts(f"WeaknessInstance.reviews[{i}]", r) for i, r in enumerate(self.reviews))
        if not reviews:
            raise ValueError("WeaknessInstance.reviews must hold at least one reviewer's list")
        object.__setattr__(self, "reviews", reviews)

    @classmethod
    def from_record(cls, record: Mapping[str, Any], index: int = 0) -> WeaknessInstance:
        text = record.get("text", record.get("input", record.get("paper")))
        if text is None:
            raise ValueError(f"record {index}: no 'text' (or 'input') field")
        reviews = record.get("weaknesses", record.get("reviews"))
        if reviews is None:
            raise ValueError(f"record {index}: no 'weaknesses' (or 'reviews') field")
        return cls(
            paper_id=str(record.get("paper_id", record.get("id", index))),
            text=text,
            reviews=tuple(tuple(r) for r in reviews),
        )


_KINDS: dict[str, Any] = {
    "equation": EquationInstance,
    "experiment": ExperimentInstance,
    "weakness": WeaknessInstance,
}


def load_records(
    path: str | Path, task: Task
) -> list[EquationInstance] | list[ExperimentInstance] | list[WeaknessInstance]:
    """Read AAAR-1.0 records of one task from a local ``.json`` (a list, or a mapping id -> record)
    or ``.jsonl`` file.

    Args:
        path: the file.
        task: ``"equation"``, ``"experiment"`` or ``"weakness"``.
    """
    if task not in _KINDS:
        raise ValueError(f"task must be one of {sorted(_KINDS)}, got {task!r}")
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"path: no file at {str(file)!r}")
    raw = file.read_text(encoding="utf-8")
    if file.suffix == ".jsonl":
        records: list[Any] = [json.loads(line) for line in raw.splitlines() if line.strip()]
    else:
        data = json.loads(raw)
        if isinstance(data, Mapping):
            records = [{"paper_id": str(k), **v} for k, v in data.items()]
        elif isinstance(data, list):
            records = data
        else:
            raise ValueError(f"path: {str(file)!r} holds neither a list nor a mapping of records")
    if not records:
        raise ValueError(f"path: {str(file)!r} holds no records")
    kind = _KINDS[task]
    out = []
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise ValueError(f"record {i} of {str(file)!r} is not an object")
        out.append(kind.from_record(record, i))
    return out
