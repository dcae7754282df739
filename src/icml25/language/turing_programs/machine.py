"""Turing machines, their traces and the Turing-Program rendering of a trace.

Hou, Brandfonbrener, Kakade, Jelassi & Malach, *Universal Length Generalization with Turing
Programs* (ICML 2025, https://arxiv.org/abs/2407.03310), Sec. 3: a Turing Program is the chain of
thought that writes out the successive configurations (tape, head, state) of a Turing machine
that solves the task, each configuration a copy of the previous one with a few local edits.

We allow a machine with k heads on one tape (k = 1 is the textbook machine): the transition
``δ(q, (a₁ … a_k)) = (q', (a'₁ … a'_k), (m₁ … m_k))`` reads the symbols under the heads, writes
one symbol under each head (head 1 first) and moves each head ``L``, ``R`` or ``S`` (stay). Several
heads let the addition and multiplication programs advance one digit per configuration, so a
program has O(n) lines of O(n) tokens, as in the paper's addition program. The tape grows with
blanks when a head moves past either end.

Rendering (:func:`render_config`): the tape cells in order, the cell under a *marked* head written
with its marked symbol (digit d → the letter ``"abcdefghij"[d]``, the paper's marked digits), the
state token emitted just before the cell of the *state head*, and blank cells optionally hidden.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "MOVES",
    "DIGIT_MARKS",
    "TuringMachine",
    "Config",
    "step",
    "trace",
    "render_config",
    "render_program",
    "random_turing_machine",
]

MOVES = {"L": -1, "R": 1, "S": 0}
DIGIT_MARKS: dict[str, str] = {str(d): "abcdefghij"[d] for d in range(10)}  # 0→a … 9→j

Transition = tuple[str, tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Config:
    """One configuration: the tape (cells left to right), the head positions and the state."""

    tape: tuple[str, ...]
    heads: tuple[int, ...]
    state: str

    def __post_init__(self) -> None:
        if not self.heads:
            raise ValueError("Config.heads must name at least one head position")
        for h in self.heads:
            if not 0 <= h < len(self.tape):
                raise ValueError(f"Config.heads: position {h} is outside the tape of length {len(self.tape)}")


@dataclass(frozen=True)
class TuringMachine:
    """A (multi-head, single-tape) Turing machine.

    Args:
        states: the finite state set Q (start and halt states included).
        alphabet: the tape alphabet Γ (blank included).
        blank: the blank symbol.
        delta: ``{(q, (a₁ … a_k)): (q', (a'₁ … a'_k), (m₁ … m_k))}``; with one head the symbols may
            be given bare: ``{(q, a): (q', a', m)}``. A missing entry halts the machine.
        start: the start state.
        halt: the halting states.
        n_heads: k.
    """

    states: tuple[str, ...]
    alphabet: tuple[str, ...]
    blank: str
    delta: Mapping[tuple[str, tuple[str, ...]], Transition]
    start: str
    halt: frozenset[str]
    n_heads: int = 1
    _table: dict[tuple[str, tuple[str, ...]], Transition] = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        states: Sequence[str],
        alphabet: Sequence[str],
        *,
        blank: str = "_",
        delta: Mapping[tuple[str, object], tuple[str, object, object]],
        start: str,
        halt: Sequence[str] | frozenset[str] = (),
        n_heads: int = 1,
    ) -> None:
        if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
            raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
        states_t, alphabet_t = tuple(states), tuple(alphabet)
        if not states_t or not alphabet_t:
            raise ValueError("states and alphabet must be non-empty")
        if blank not in alphabet_t:
            raise ValueError(f"blank {blank!r} must be in the alphabet {alphabet_t}")
        if start not in states_t:
            raise ValueError(f"start state {start!r} is not in states {states_t}")
        halt_set = frozenset(halt)
        if not halt_set <= set(states_t):
            raise ValueError(f"halt states {sorted(halt_set - set(states_t))} are not in states")
        table: dict[tuple[str, tuple[str, ...]], Transition] = {}
        for key, value in delta.items():
            q, read = key
            q2, write, move = value
            r = _as_tuple(read, n_heads, "read symbols")
            w = _as_tuple(write, n_heads, "written symbols")
            m = _as_tuple(move, n_heads, "moves")
            if q not in states_t or q2 not in states_t:
                raise ValueError(f"delta entry {key!r} -> {value!r} names a state outside {states_t}")
            bad = [s for s in (*r, *w) if s not in alphabet_t]
            if bad:
                raise ValueError(f"delta entry {key!r} -> {value!r} uses symbols {bad} outside the alphabet")
            if any(mv not in MOVES for mv in m):
                raise ValueError(f"delta entry {key!r}: moves must be 'L', 'R' or 'S', got {m}")
            table[(q, r)] = (q2, w, m)
        object.__setattr__(self, "states", states_t)
        object.__setattr__(self, "alphabet", alphabet_t)
        object.__setattr__(self, "blank", blank)
        object.__setattr__(self, "delta", table)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "halt", halt_set)
        object.__setattr__(self, "n_heads", n_heads)
        object.__setattr__(self, "_table", table)

    def initial(self, tape: Sequence[str], heads: Sequence[int] | int = 0) -> Config:
        """The start configuration on ``tape`` (an empty tape is one blank cell) with the given heads."""
        cells = tuple(tape) or (self.blank,)
        bad = [s for s in cells if s not in self.alphabet]
        if bad:
            raise ValueError(f"tape symbols {sorted(set(bad))} are not in the alphabet {self.alphabet}")
        pos = (heads,) * self.n_heads if isinstance(heads, int) else tuple(heads)
        if len(pos) != self.n_heads:
            raise ValueError(f"heads must give {self.n_heads} positions, got {pos}")
        return Config(cells, pos, self.start)

    def transition(self, state: str, read: tuple[str, ...]) -> Transition | None:
        return self._table.get((state, read))


def _as_tuple(value: object, k: int, what: str) -> tuple[str, ...]:
    out = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if len(out) != k:
        raise ValueError(f"delta: {what} {value!r} must have one entry per head ({k})")
    return tuple(str(v) for v in out)


def step(tm: TuringMachine, config: Config) -> Config | None:
    """One transition from ``config``; None when the machine halts (halt state or no entry)."""
    if config.state in tm.halt:
        return None
    read = tuple(config.tape[h] for h in config.heads)
    move = tm.transition(config.state, read)
    if move is None:
        return None
    q2, write, moves = move
    tape = list(config.tape)
    for h, sym in zip(config.heads, write, strict=True):
        tape[h] = sym
    heads = [h + MOVES[m] for h, m in zip(config.heads, moves, strict=True)]
    shift = max(0, -min(heads))  # a head stepped left of cell 0: prepend blanks
    if shift:
        tape = [tm.blank] * shift + tape
        heads = [h + shift for h in heads]
    if max(heads) >= len(tape):
        tape += [tm.blank] * (max(heads) - len(tape) + 1)
    return Config(tuple(tape), tuple(heads), q2)


def trace(
    tm: TuringMachine, config: Config, *, max_steps: int = 1000, truncate: bool = False
) -> list[Config]:
    """The configurations ``config, δ(config), …`` up to and including the halting one.

    Args:
        max_steps: the most transitions taken.
        truncate: return the first ``max_steps + 1`` configurations of a machine that has not halted
            by then (random machines) instead of raising.

    Raises:
        ValueError: ``max_steps`` < 1, or the machine ran ``max_steps`` steps without halting and
            ``truncate`` is False.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    if len(config.heads) != tm.n_heads:
        raise ValueError(f"config has {len(config.heads)} heads, the machine {tm.n_heads}")
    out = [config]
    for _ in range(max_steps):
        nxt = step(tm, out[-1])
        if nxt is None:
            return out
        out.append(nxt)
    if truncate or step(tm, out[-1]) is None:
        return out
    raise ValueError(f"the machine did not halt within max_steps={max_steps}")


def render_config(
    config: Config,
    *,
    marks: Mapping[str, str] | None = None,
    marked_heads: Sequence[int] | None = None,
    state_head: int | None = 0,
    hide: Sequence[str] = (),
    start: int = 0,
    state_tokens: Mapping[str, str] | None = None,
) -> list[str]:
    """The tokens of one configuration line.

    Args:
        marks: symbol → marked symbol for cells under a marked head (default: ``"^" + symbol``).
        marked_heads: which heads mark their cell (default all).
        state_head: the head before whose cell the state token is written (None: no state).
        hide: symbols not written (e.g. the blank), so blank padding costs no tokens.
        start: first tape cell written (a format that omits a prefix of the tape).
        state_tokens: state → token (default: the state's own name).
    """
    heads = config.heads
    marked = set(range(len(heads)) if marked_heads is None else marked_heads)
    marked_cells = {heads[i] for i in marked}
    state_cell = None if state_head is None else heads[state_head]
    out: list[str] = []
    for pos in range(start, len(config.tape)):
        sym = config.tape[pos]
        if pos == state_cell:
            out.append((state_tokens or {}).get(config.state, config.state))
        if sym in hide:
            continue
        if pos in marked_cells:
            sym = marks.get(sym, sym) if marks is not None else "^" + sym
        out.append(sym)
    return out


def render_program(
    configs: Sequence[Config],
    *,
    sep: str = "SEP",
    mark_head: bool = True,
    show_state: bool = True,
    **kwargs: object,
) -> list[str]:
    """All configuration lines, each followed by ``sep`` (the scratchpad part of a Turing Program).

    ``mark_head=False`` writes no marked cells, ``show_state=False`` no state tokens; other keywords
    go to :func:`render_config`.
    """
    if not configs:
        raise ValueError("configs must be a non-empty sequence of Config")
    opts = dict(kwargs)
    if not mark_head:
        opts["marked_heads"] = ()
    if not show_state:
        opts["state_head"] = None
    out: list[str] = []
    for c in configs:
        out += render_config(c, **opts)  # type: ignore[arg-type]
        out.append(sep)
    return out


def random_turing_machine(
    n_states: int, alphabet: Sequence[str] = ("0", "1", "_"), *, blank: str = "_", seed: int = 0
) -> TuringMachine:
    """A random one-head machine (Sec. 4 of the paper, "random Turing programs").

    States ``q0 … q{n−1}`` plus the halt state ``qH``; every (state, symbol) pair gets a random
    written symbol, move (L/R) and next state, the next state being ``qH`` with probability
    1/(n_states + 1). Runs that do not halt are cut by :func:`trace`'s ``max_steps``.
    """
    if isinstance(n_states, bool) or not isinstance(n_states, int) or n_states < 1:
        raise ValueError(f"n_states must be a positive integer, got {n_states!r}")
    rng = random.Random(seed)
    states = [f"q{i}" for i in range(n_states)]
    delta: dict[tuple[str, object], tuple[str, object, object]] = {}
    for q in states:
        for a in alphabet:
            delta[(q, a)] = (rng.choice([*states, "qH"]), rng.choice(list(alphabet)), rng.choice("LR"))
    return TuringMachine([*states, "qH"], alphabet, blank=blank, delta=delta, start="q0", halt=("qH",))
