"""Turing Programs for addition, multiplication by a digit and random machines; tokenizer, tasks, verifier.

Hou et al., *Universal Length Generalization with Turing Programs* (ICML 2025,
https://arxiv.org/abs/2407.03310), Sec. 3–4. Every program here is the rendered trace of a
:class:`~icml25.language.turing_programs.machine.TuringMachine`, so a new task is a new machine.

Addition (our instance of the paper's addition program; its exact figure is not reproduced). The
tape is ``_ A + B | _ … _``; a three-head machine whose state is the carry (``C0``/``C1``) reads
the digits of A and B under heads 1 and 2 from the right, writes the sum digit under head 3 (in the
output region after ``|``) and moves all three heads left; at the left end it writes the final
carry and halts (``H``). Heads 1 and 2 mark their digit (0→a … 9→j), the state token stands
before head 3, and blank cells are not written. For 57 + 68 the sequence is::

    BOS 5 7 + 6 8 SEP
    5 h + 6 i | C0 SEP          (initial configuration)
    f 7 + g 8 | C1 5 SEP
    5 7 + 6 8 | C1 2 5 SEP
    5 7 + 6 8 | H 1 2 5 SEP     (halted)
    1 2 5 EOS

Each line copies the previous one with O(1) local edits (markers moved, carry replaced, one
digit prepended). Baseline formats: ``"scratchpad"`` keeps only the part after ``|`` (carry and
partial sum, no copy of the operands) and ``"direct_reversed"`` writes the answer at once, least
significant digit first.

Notation: n operand length (digits), b batch, T tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import torch
from torch import Tensor

from icml25.core.validate import check_positive

from .machine import DIGIT_MARKS, Config, TuringMachine, random_turing_machine, render_program, trace

__all__ = [
    "SPECIALS",
    "ADDITION_SYMBOLS",
    "Tokenizer",
    "addition_machine",
    "addition_trace",
    "addition_program",
    "multiplication_machine",
    "multiplication_program",
    "random_tm_program",
    "random_tm_example",
    "parse_answer",
    "ProgramCheck",
    "verify_addition_program",
    "TokenBatch",
    "AdditionTask",
    "FORMATS",
]

PAD, BOS, SEP, EOS = "PAD", "BOS", "SEP", "EOS"
SPECIALS = (PAD, BOS, SEP, EOS)
DIGITS = tuple(str(d) for d in range(10))
MARKED = tuple("abcdefghij")
ADDITION_SYMBOLS = (*DIGITS, *MARKED, "+", "*", "|", "_", "C0", "C1", "H")
Format = Literal["turing", "scratchpad", "direct_reversed"]
FORMATS: tuple[str, ...] = ("turing", "scratchpad", "direct_reversed")


class Tokenizer:
    """Token strings ↔ ids; ``PAD`` is 0, then ``BOS``, ``SEP``, ``EOS``, then ``symbols``."""

    def __init__(self, symbols: Sequence[str] = ADDITION_SYMBOLS) -> None:
        vocab = list(SPECIALS) + [s for s in symbols if s not in SPECIALS]
        if len(set(vocab)) != len(vocab):
            raise ValueError("symbols must be distinct")
        self.vocab: tuple[str, ...] = tuple(vocab)
        self.index = {s: i for i, s in enumerate(vocab)}
        self.pad, self.bos, self.sep, self.eos = (self.index[s] for s in SPECIALS)

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        unknown = sorted({t for t in tokens if t not in self.index})
        if unknown:
            raise ValueError(f"tokens {unknown} are not in the vocabulary")
        return [self.index[t] for t in tokens]

    def decode(self, ids: Sequence[int] | Tensor) -> list[str]:
        values = ids.tolist() if isinstance(ids, Tensor) else list(ids)
        bad = [i for i in values if not 0 <= int(i) < len(self.vocab)]
        if bad:
            raise ValueError(f"ids {bad[:5]} are outside the vocabulary of {len(self.vocab)}")
        return [self.vocab[int(i)] for i in values]


def _check_number(name: str, value: str) -> None:
    if not isinstance(value, str) or not value or not value.isascii() or not value.isdigit():
        raise ValueError(f"{name} must be a non-empty string of decimal digits, got {value!r}")


def _digit_machine(kind: Literal["add", "mul"]) -> TuringMachine:
    """Three heads (operand, second operand or multiplier, output); the state is the carry."""
    carries = range(2) if kind == "add" else range(10)
    states = [f"C{c}" for c in carries] + ["H"]
    delta: dict[tuple[str, object], tuple[str, object, object]] = {}
    for c in carries:
        for a in DIGITS:
            for b in DIGITS:
                s = int(a) + int(b) + c if kind == "add" else int(a) * int(b) + c
                if s // 10 not in carries:
                    continue
                delta[(f"C{c}", (a, b, "_"))] = (
                    f"C{s // 10}",
                    (a, b, str(s % 10)),
                    ("L", "L" if kind == "add" else "S", "L"),
                )
        final = str(c) if c else "_"
        if kind == "add":
            delta[(f"C{c}", ("_", "+", "_"))] = ("H", ("_", "+", final), ("S", "S", "S"))
        else:
            for b in DIGITS:
                delta[(f"C{c}", ("_", b, "_"))] = ("H", ("_", b, final), ("S", "S", "S"))
    alphabet = (*DIGITS, "+", "*", "|", "_")
    return TuringMachine(states, alphabet, blank="_", delta=delta, start="C0", halt=("H",), n_heads=3)


_ADD_TM: TuringMachine | None = None
_MUL_TM: TuringMachine | None = None


def addition_machine() -> TuringMachine:
    """The three-head addition machine of the module docstring (built once)."""
    global _ADD_TM
    if _ADD_TM is None:
        _ADD_TM = _digit_machine("add")
    return _ADD_TM


def multiplication_machine() -> TuringMachine:
    """n×1 multiplication: tape ``_ A * m | _ …``; head 2 stays on the digit m, the state is the carry."""
    global _MUL_TM
    if _MUL_TM is None:
        _MUL_TM = _digit_machine("mul")
    return _MUL_TM


def addition_trace(a: str, b: str) -> list[Config]:
    """The addition machine's configurations on ``a + b`` (the shorter operand padded with zeros)."""
    _check_number("a", a)
    _check_number("b", b)
    n = max(len(a), len(b))
    a, b = a.zfill(n), b.zfill(n)
    tape = ["_", *a, "+", *b, "|"] + ["_"] * (n + 1)
    tm = addition_machine()
    return trace(tm, tm.initial(tape, (n, 2 * n + 1, len(tape) - 1)), max_steps=n + 2)


_RENDER = dict(marks=DIGIT_MARKS, marked_heads=(0, 1), state_head=2, hide=("_",))


def _answer_of(config: Config) -> str:
    bar = config.tape.index("|")
    return "".join(s for s in config.tape[bar + 1 :] if s != "_")


def addition_program(a: str, b: str, *, fmt: Format = "turing") -> list[str]:
    """The token strings of ``a + b`` in one format: prompt, scratchpad, answer, ``EOS``.

    Args:
        a, b: the operands as digit strings (the shorter is zero-padded to the longer's length).
        fmt: ``"turing"`` (Turing Program), ``"scratchpad"`` (carry and partial sum only) or
            ``"direct_reversed"`` (the answer, least significant digit first).
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    configs = addition_trace(a, b)
    n = max(len(a), len(b))
    prompt = [BOS, *a.zfill(n), "+", *b.zfill(n), SEP]
    answer = list(_answer_of(configs[-1]))
    if fmt == "direct_reversed":
        return [*prompt, *answer[::-1], EOS]
    if fmt == "turing":
        body = render_program(configs, sep=SEP, **_RENDER)  # type: ignore[arg-type]
    else:
        bar = configs[0].tape.index("|")
        body = render_program(configs, sep=SEP, start=bar, **{**_RENDER, "marked_heads": ()})  # type: ignore[arg-type]
    return [*prompt, *body, *answer, EOS]


def multiplication_program(a: str, m: str) -> list[str]:
    """The Turing Program of ``a × m`` for a single digit ``m`` (the paper's n×1 task)."""
    _check_number("a", a)
    if not (isinstance(m, str) and len(m) == 1 and m.isdigit()):
        raise ValueError(f"m must be a single digit string, got {m!r}")
    n = len(a)
    tape = ["_", *a, "*", m, "|"] + ["_"] * (n + 1)
    tm = multiplication_machine()
    configs = trace(tm, tm.initial(tape, (n, n + 2, len(tape) - 1)), max_steps=n + 2)
    body = render_program(configs, sep=SEP, **{**_RENDER, "marked_heads": (0,)})  # type: ignore[arg-type]
    answer = _answer_of(configs[-1]).lstrip("0") or "0"
    return [BOS, *a, "*", m, SEP, *body, *answer, EOS]


def random_tm_program(tm: TuringMachine, tape: Sequence[str], *, max_steps: int = 64) -> list[str]:
    """The Turing Program of a one-head machine on ``tape``: every configuration, head marked ``^``,
    state before the head cell, blanks written; the run is cut after ``max_steps`` transitions."""
    if tm.n_heads != 1:
        raise ValueError(f"random_tm_program renders one-head machines, got {tm.n_heads} heads")
    configs = trace(tm, tm.initial(tape, 0), max_steps=max_steps, truncate=True)
    return [BOS, *tape, SEP, *render_program(configs, sep=SEP), EOS]


def parse_answer(tokens: Sequence[str], fmt: Format = "turing") -> str | None:
    """The answer digits written after the last ``SEP`` (reversed back for ``direct_reversed``);
    None if the sequence has no ``SEP`` … ``EOS`` answer of digits."""
    toks = list(tokens)
    if EOS not in toks:
        return None
    toks = toks[: toks.index(EOS)]
    if SEP not in toks:
        return None
    last = len(toks) - 1 - toks[::-1].index(SEP)
    ans = toks[last + 1 :]
    if not ans or not all(t in DIGITS for t in ans):
        return None
    return "".join(ans[::-1] if fmt == "direct_reversed" else ans)


@dataclass(frozen=True)
class ProgramCheck:
    """The verdict of :func:`verify_addition_program` on one generated sequence.

    Attributes:
        steps_total: lines (configurations) the reference program has.
        steps_correct: generated lines equal to the reference line at the same index.
        first_error: index of the first wrong or missing line (None if every line is right).
        answer: the parsed answer (None if unreadable).
        answer_correct: the answer equals a + b.
        valid: every line and the answer are right.
    """

    steps_total: int
    steps_correct: int
    first_error: int | None
    answer: str | None
    answer_correct: bool
    valid: bool


def _lines(tokens: Sequence[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for t in tokens:
        if t == SEP:
            out.append([])
        else:
            out[-1].append(t)
    return out


def verify_addition_program(tokens: Sequence[str], *, fmt: Format = "turing") -> ProgramCheck:
    """Parse a generated addition sequence (prompt included) and check each step and the answer.

    The operands are read from the prompt ``BOS A + B SEP``; every scratchpad line is compared with
    the machine's configuration line of the same index (each step is a deterministic function of
    the previous one, so a line equal to the reference is a correct transition from a correct line).

    Raises:
        ValueError: the sequence does not start with a prompt ``BOS digits + digits SEP``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    toks = list(tokens)
    if not toks or toks[0] != BOS or SEP not in toks:
        raise ValueError("tokens must start with a prompt: BOS digits + digits SEP")
    prompt = toks[1 : toks.index(SEP)]
    if "+" not in prompt:
        raise ValueError(f"the prompt {prompt} has no '+'")
    plus = prompt.index("+")
    a, b = "".join(prompt[:plus]), "".join(prompt[plus + 1 :])
    _check_number("prompt operand a", a)
    _check_number("prompt operand b", b)
    ref = addition_program(a, b, fmt=fmt)
    end = toks.index(EOS) + 1 if EOS in toks else len(toks)
    gen_lines = _lines(toks[toks.index(SEP) + 1 : end])
    ref_lines = _lines(ref[ref.index(SEP) + 1 :])
    n_steps = len(ref_lines) - 1  # the last "line" is the answer + EOS
    first_error: int | None = None
    correct = 0
    for i in range(n_steps):
        if i < len(gen_lines) - 1 and gen_lines[i] == ref_lines[i]:
            correct += 1
        elif first_error is None:
            first_error = i
    answer = parse_answer(toks, fmt)
    truth = str(int(a) + int(b))
    answer_ok = answer is not None and answer.lstrip("0") == truth.lstrip("0")
    return ProgramCheck(
        steps_total=n_steps,
        steps_correct=correct,
        first_error=first_error,
        answer=answer,
        answer_correct=answer_ok,
        valid=answer_ok and correct == n_steps and len(gen_lines) - 1 == n_steps,
    )


@dataclass(frozen=True)
class TokenBatch:
    """Padded token ids ``(b, T)`` (PAD = 0, right padding) and per-row prompt and total lengths."""

    tokens: Tensor
    prompt_len: Tensor
    length: Tensor

    def target_mask(self) -> Tensor:
        """``(b, T − 1)`` bool: next-token targets after the prompt (the loss and exact-match positions)."""
        pos = torch.arange(1, self.tokens.shape[1], device=self.tokens.device)[None]
        return (pos >= self.prompt_len[:, None]) & (pos < self.length[:, None])

    def to(self, device: str | torch.device) -> TokenBatch:
        """The same batch on ``device``."""
        return TokenBatch(self.tokens.to(device), self.prompt_len.to(device), self.length.to(device))


@lru_cache(maxsize=1 << 16)
def _program_tokens(a: str, b: str, fmt: Format) -> tuple[str, ...]:
    """:func:`addition_program`, memoised (training at short lengths redraws the same few thousand pairs)."""
    return tuple(addition_program(a, b, fmt=fmt))


def _random_number(n: int, gen: torch.Generator) -> str:
    digits = torch.randint(0, 10, (n,), generator=gen).tolist()
    if n > 1 and digits[0] == 0:
        digits[0] = int(torch.randint(1, 10, (1,), generator=gen))
    return "".join(str(d) for d in digits)


@dataclass(frozen=True)
class AdditionTask:
    """n-digit + n-digit additions in one format, n uniform in ``[min_len, max_len]``.

    Both operands have exactly n digits (leading digit non-zero when n > 1), digits uniform.
    :meth:`sample` draws one n per batch (rows of equal length need almost no padding).
    """

    min_len: int = 1
    max_len: int = 5
    fmt: Format = "turing"

    def __post_init__(self) -> None:
        check_positive("AdditionTask.min_len", self.min_len, integer=True)
        check_positive("AdditionTask.max_len", self.max_len, integer=True)
        if self.max_len < self.min_len:
            raise ValueError(f"AdditionTask.max_len ({self.max_len}) must be >= min_len ({self.min_len})")
        if self.fmt not in FORMATS:
            raise ValueError(f"AdditionTask.fmt must be one of {FORMATS}, got {self.fmt!r}")

    def problems(self, count: int, n: int, generator: torch.Generator) -> list[tuple[str, str]]:
        """``count`` operand pairs of ``n`` digits each."""
        check_positive("count", count, integer=True)
        check_positive("n", n, integer=True)
        return [(_random_number(n, generator), _random_number(n, generator)) for _ in range(count)]

    def encode(self, pairs: Sequence[tuple[str, str]], tokenizer: Tokenizer) -> TokenBatch:
        """The padded programs of ``pairs`` in this task's format."""
        if not pairs:
            raise ValueError("pairs must be non-empty")
        seqs = [tokenizer.encode(_program_tokens(a, b, self.fmt)) for a, b in pairs]
        prompt = [2 * max(len(a), len(b)) + 3 for a, b in pairs]
        width = max(len(s) for s in seqs)
        tokens = torch.tensor([s + [tokenizer.pad] * (width - len(s)) for s in seqs], dtype=torch.long)
        return TokenBatch(tokens, torch.tensor(prompt), torch.tensor([len(s) for s in seqs]))

    def sample(
        self, batch: int, generator: torch.Generator, tokenizer: Tokenizer, n: int | None = None
    ) -> TokenBatch:
        """A batch of ``batch`` problems of one length n (drawn uniformly unless given)."""
        check_positive("batch", batch, integer=True)
        if n is None:
            n = int(torch.randint(self.min_len, self.max_len + 1, (1,), generator=generator))
        return self.encode(self.problems(batch, n, generator), tokenizer)

    def sequence_length(self, n: int) -> int:
        """Tokens in the longest program of n-digit operands (final carry 1)."""
        return len(addition_program("9" * n, "9" * n, fmt=self.fmt))


def random_tm_example(n_states: int = 3, tape_len: int = 6, *, seed: int = 0) -> list[str]:
    """One random machine's program on a random binary tape (for demonstrations and tests)."""
    import random

    rng = random.Random(seed)
    tm = random_turing_machine(n_states, seed=seed)
    return random_tm_program(tm, [rng.choice("01") for _ in range(tape_len)])
