"""GSM-style arithmetic word problems generated in code, and answer parsing.

The ECON paper (Xie et al., ICML 2025, arXiv 2506.08292) evaluates on GSM8K, GSM-Hard and MATH;
none of them is available offline here, so the check uses templated multi-step arithmetic word
problems with exact integer answers (our substitute, in the spirit of GSM8K). Executors and the
coordinator are asked to end with ``\\boxed{answer}`` as in the paper's prompts (Sec. 3.1).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from icml25.core.validate import check_positive

__all__ = ["ArithmeticProblem", "make_arithmetic_problems", "parse_answer", "answers_match"]

_NAMES = ("Tom", "Ana", "Liu", "Sara", "Omar", "Mia", "Ben", "Nora", "Ravi", "Ella")
_ITEMS = ("apples", "pencils", "stickers", "books", "marbles", "cookies", "coins", "cards")


@dataclass(frozen=True)
class ArithmeticProblem:
    """One word problem with its exact integer answer and the number of arithmetic steps."""

    question: str
    answer: int
    steps: int


def _one(rng: random.Random, steps: int) -> ArithmeticProblem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    total = rng.randint(2, 20)
    text = [f"{name} has {total} {item}."]
    for _ in range(steps):
        kind = rng.choice(("buy", "give", "double") if total < 40 else ("give",))
        if kind == "buy":
            k = rng.randint(2, 15)
            total += k
            text.append(f"Then {name} buys {k} more {item}.")
        elif kind == "give" and total > 2:
            k = rng.randint(1, total - 1)
            total -= k
            text.append(f"Then {name} gives {k} {item} to a friend.")
        else:
            total *= 2
            text.append(f"Then the number of {item} {name} has doubles.")
    text.append(f"How many {item} does {name} have now?")
    return ArithmeticProblem(" ".join(text), total, steps)


def make_arithmetic_problems(
    n: int, *, seed: int = 0, min_steps: int = 1, max_steps: int = 3
) -> list[ArithmeticProblem]:
    """``n`` word problems with ``min_steps``-``max_steps`` operations each (seeded, reproducible)."""
    check_positive("n", n, integer=True)
    check_positive("min_steps", min_steps, integer=True)
    check_positive("max_steps", max_steps, integer=True)
    if max_steps < min_steps:
        raise ValueError(f"max_steps ({max_steps}) must be >= min_steps ({min_steps})")
    rng = random.Random(seed)
    return [_one(rng, rng.randint(min_steps, max_steps)) for _ in range(n)]


_BOXED = re.compile(r"\\boxed\{\s*([^{}]*)\}")
_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")


def parse_answer(text: str) -> float | None:
    """The final numeric answer of a response: the last ``\\boxed{}`` number, else the last number.

    Returns ``None`` when the text holds no number.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    for inner in reversed(_BOXED.findall(text)):
        nums = _NUMBER.findall(inner)
        if nums:
            return float(nums[-1].replace(",", ""))
    nums = _NUMBER.findall(text)
    return float(nums[-1].replace(",", "")) if nums else None


def answers_match(a: float | None, b: float | None, tol: float = 1e-6) -> bool:
    """Whether two parsed answers are the same number (``None`` matches nothing)."""
    return a is not None and b is not None and abs(a - b) <= tol
