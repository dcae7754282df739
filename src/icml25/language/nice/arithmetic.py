"""A verifiable arithmetic instruction pool, built to test *NICE Data Selection for Instruction
Tuning in LLMs with Non-differentiable Evaluation Metric* (Wang et al., ICML 2025,
https://openreview.net/forum?id=2wt8m5HUBs) where validation references are a noisy proxy for the metric.

Target task: additions of ``digits``-digit numbers (3 by default: ``abc+def=``). Metric: 1 when
the last integer of the response equals
the sum (format-agnostic, non-differentiable, and label-free: :func:`addition_reward` recomputes the
sum from the prompt). Answers come in two formats, terse ``579`` and verbose ``the sum is 579 .``;
validation references are verbose (what LESS differentiates).

Pool groups (default shares 30/30/10/30):
    P1 terse, correct target additions (helpful);
    P2 verbose target additions with one digit of the sum changed (harmful, but NTP-similar to the
       verbose references);
    P3 verbose, correct (helpful and NTP-similar);
    P4 distractors: subtraction and copying (neutral).
The base corpus (to pretrain a small LM here) holds additions of shorter numbers in both formats,
a few target-length ones, and the distractors, so the base model emits both formats and solves
target additions only sometimes.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from icml25.core.validate import check_in_range, check_positive

__all__ = [
    "GROUPS",
    "ArithmeticPool",
    "addition_reward",
    "answer_text",
    "base_corpus",
    "flawed_pair",
    "heldout_pair",
    "last_integer",
    "make_pool",
    "target_prompts",
]

GROUPS = ("P1", "P2", "P3", "P4")
Exclude = Callable[[int, int], bool] | set[tuple[int, int]] | None
_PROMPT = re.compile(r"^\s*(\d+)\+(\d+)=\s*$")
_INT = re.compile(r"-?\d+")


def last_integer(text: str) -> int | None:
    """The last integer written in ``text`` (``None`` if there is none)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    found = _INT.findall(text)
    return int(found[-1]) if found else None


def addition_reward(prompt: str, response: str) -> float:
    """1.0 if the last integer of ``response`` is the sum asked by ``prompt`` (``"a+b="``), else 0.0.

    A verifier: it parses the prompt and needs no reference answer.
    """
    if not isinstance(prompt, str) or not isinstance(response, str):
        raise TypeError("prompt and response must be strings")
    m = _PROMPT.match(prompt)
    if m is None:
        raise ValueError(f"prompt must look like 'a+b=', got {prompt!r}")
    return float(last_integer(response) == int(m.group(1)) + int(m.group(2)))


def answer_text(value: int, style: str) -> str:
    """``"579"`` (terse) or ``" the sum is 579 ."`` (verbose)."""
    if style == "terse":
        return str(value)
    if style == "verbose":
        return f" the sum is {value} ."
    raise ValueError(f"style must be 'terse' or 'verbose', got {style!r}")


def _corrupt(value: int, rng: random.Random, corruption: str) -> int:
    digits = list(str(value))
    if corruption == "last_digit_plus_one":
        digits[-1] = str((int(digits[-1]) + 1) % 10)
        return int("".join(digits))
    i = rng.randrange(len(digits))
    choices = [d for d in "0123456789" if d != digits[i] and not (i == 0 and d == "0")]
    digits[i] = rng.choice(choices)
    return int("".join(digits))


def _operands(rng: random.Random, digits: int) -> tuple[int, int]:
    low, high = 10 ** (digits - 1), 10**digits - 1
    return rng.randint(low, high), rng.randint(low, high)


def _excluded(a: int, b: int, exclude: Exclude) -> bool:
    if exclude is None:
        return False
    if callable(exclude):
        return bool(exclude(a, b))
    return (a, b) in exclude


def heldout_pair(a: int, b: int) -> bool:
    """The fixed rule that reserves a fifth of all operand pairs for target prompts: (a + 3b) mod 5 = 0.

    Pools and base corpora built with ``exclude=heldout_pair`` never contain a target pair.
    """
    return (a + 3 * b) % 5 == 0


FLAW_TAIL = " +1"


def flawed_pair(a: int, b: int, share: float) -> bool:
    """Whether the base corpus rambles after ``a + b`` when a ``share`` of pairs is flawed: a fixed
    rule, ``(37a + 11b) mod 100 < 100 * share``, roughly independent of :func:`heldout_pair`."""
    return (37 * a + 11 * b) % 100 < round(100 * share)


def _check_digits(digits: int) -> None:
    if isinstance(digits, bool) or not isinstance(digits, int) or not 2 <= digits <= 9:
        raise ValueError(f"digits must be an int in [2, 9], got {digits!r}")


def target_prompts(
    n: int, *, seed: int, digits: int = 3, keep: Callable[[int, int], bool] | None = heldout_pair
) -> list[tuple[int, int]]:
    """``n`` distinct pairs of ``digits``-digit operands for which ``keep`` holds.

    The default ``keep`` is :func:`heldout_pair`, the fifth of all pairs reserved for target prompts.
    """
    check_positive("n", n, integer=True)
    _check_digits(digits)
    if n > 0.15 * (9 * 10 ** (digits - 1)) ** 2:  # at most 3/4 of the held-out fifth of all pairs
        raise ValueError(f"n={n} is too many distinct {digits}-digit pairs")
    rng = random.Random(seed)
    seen: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    while len(out) < n:
        pair = _operands(rng, digits)
        if pair not in seen and (keep is None or keep(*pair)):
            seen.add(pair)
            out.append(pair)
    return out


def _distractor(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        a, b = rng.randint(10, 999), rng.randint(0, 99)
        a, b = max(a, b), min(a, b)
        return f"{a}-{b}=", str(a - b)
    digits = str(rng.randint(100, 99999))
    return f"copy {digits}:", digits


@dataclass(frozen=True)
class ArithmeticPool:
    """A pool of (prompt, response) instruction pairs with their group (P1-P4) labels."""

    prompts: tuple[str, ...]
    responses: tuple[str, ...]
    groups: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.prompts)

    def shares(self, indices: Sequence[int]) -> dict[str, float]:
        """Fraction of each group among ``indices``."""
        if not indices:
            raise ValueError("indices must not be empty")
        sel = [self.groups[i] for i in indices]
        return {g: sel.count(g) / len(sel) for g in GROUPS}


def make_pool(
    n: int,
    *,
    shares: tuple[float, float, float, float] = (0.3, 0.3, 0.1, 0.3),
    seed: int = 0,
    digits: int = 3,
    corruption: str = "random_digit",
    exclude: Exclude = heldout_pair,
) -> ArithmeticPool:
    """``n`` pool examples, P1-P4 in proportions ``shares``, shuffled; additions of ``digits``-digit
    operands, none in ``exclude``.

    ``corruption`` makes P2's wrong sums: ``"random_digit"`` changes one digit at random,
    ``"last_digit_plus_one"`` always raises the last digit by one (mod 10), a systematic error that
    fine-tuning can learn and carry over to new prompts.
    """
    check_positive("n", n, integer=True)
    _check_digits(digits)
    if corruption not in ("random_digit", "last_digit_plus_one"):
        raise ValueError(f"corruption must be 'random_digit' or 'last_digit_plus_one', got {corruption!r}")
    if len(shares) != 4 or any(not (0 <= s <= 1) for s in shares) or abs(sum(shares) - 1) > 1e-6:
        raise ValueError(f"shares must be four numbers in [0, 1] summing to 1, got {shares}")
    rng = random.Random(seed)
    counts = [int(round(s * n)) for s in shares]
    counts[-1] = n - sum(counts[:-1])
    if counts[-1] < 0:
        raise ValueError(f"shares {shares} do not fit n={n}")
    rows: list[tuple[str, str, str]] = []
    for group, count in zip(GROUPS, counts, strict=True):
        for _ in range(count):
            if group == "P4":
                p, r = _distractor(rng)
                rows.append((p, r, group))
                continue
            a, b = _operands(rng, digits)
            while _excluded(a, b, exclude):
                a, b = _operands(rng, digits)
            value = a + b if group != "P2" else _corrupt(a + b, rng, corruption)
            style = "terse" if group == "P1" else "verbose"
            rows.append((f"{a}+{b}=", answer_text(value, style), group))
    rng.shuffle(rows)
    return ArithmeticPool(
        prompts=tuple(r[0] for r in rows),
        responses=tuple(r[1] for r in rows),
        groups=tuple(r[2] for r in rows),
    )


def base_corpus(
    n: int,
    *,
    seed: int = 0,
    digits: int = 3,
    target_share: float = 0.15,
    distractor_share: float = 0.25,
    exclude: Exclude = heldout_pair,
    flaw_share: float = 0.0,
) -> list[tuple[str, str]]:
    """``n`` (prompt, response) pairs to pretrain the base model: additions of numbers with fewer
    than ``digits`` digits (and a ``target_share`` of ``digits``-digit ones) in both formats at
    random, plus distractors.

    ``flaw_share`` gives the base model a habit that instruction data can train away: for that share
    of all ``digits``-digit operand pairs (a fixed rule, :func:`flawed_pair`) the correct answer is
    always followed by a rambling ``FLAW_TAIL`` (``" +1"``), whose integer then is the last one in the
    response, so the metric counts it wrong. The pool never rambles.
    """
    check_positive("n", n, integer=True)
    _check_digits(digits)
    check_in_range("target_share", target_share, 0.0, 1.0)
    check_in_range("distractor_share", distractor_share, 0.0, 1.0)
    check_in_range("flaw_share", flaw_share, 0.0, 1.0)
    if target_share + distractor_share > 1:
        raise ValueError("target_share + distractor_share must be at most 1")
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    while len(out) < n:
        u = rng.random()
        if u < distractor_share:
            out.append(_distractor(rng))
            continue
        if u < distractor_share + target_share:
            a, b = _operands(rng, digits)
            if _excluded(a, b, exclude):
                continue
            tail = FLAW_TAIL if flawed_pair(a, b, flaw_share) else ""
        else:
            a, b = rng.randint(0, 10 ** (digits - 1) - 1), rng.randint(0, 10 ** (digits - 1) - 1)
            tail = ""
        style = "terse" if rng.random() < 0.5 else "verbose"
        out.append((f"{a}+{b}=", answer_text(a + b, style) + tail))
    return out
