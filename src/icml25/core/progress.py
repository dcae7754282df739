"""Progress display for long runs: one overall bar on a terminal, sparse log lines otherwise.

Checks and training loops report through a :class:`Reporter`; they never print directly. The
runner announces each seed (:meth:`Reporter.start_seed`); the check reports its current task
(``"train tarflow"``, done, total). The display shows one line per check: the seed position, the
task by name, the elapsed time and an estimate of the time left (from the fraction of seeds done,
counting the current task's fraction within its seed). Display timing never influences computation.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

__all__ = [
    "ProgressFn",
    "Reporter",
    "NullReporter",
    "LineReporter",
    "RichReporter",
    "OverallProgress",
    "make_reporter",
]


ProgressFn = Callable[[int, int], None]
"""The one progress callback of library code: ``progress(done, total)`` after each unit of work.

Library functions take ``progress: ProgressFn | None = None``; a check passes
``lambda done, total: ctx.progress("task", done, total)``.
"""


class Reporter(Protocol):
    def start_seed(self, index: int, n_seeds: int, seed: int) -> None: ...

    def update(self, task: str, done: int, total: int | None = None) -> None: ...

    def log(self, message: str) -> None: ...

    def close(self) -> None: ...


class NullReporter:
    """Reports nothing (tests, library use)."""

    def start_seed(self, index: int, n_seeds: int, seed: int) -> None:
        pass

    def update(self, task: str, done: int, total: int | None = None) -> None:
        pass

    def log(self, message: str) -> None:
        pass

    def close(self) -> None:
        pass


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class OverallProgress:
    """The state behind one check's display: which seed, which task, how far, how long.

    ``fraction`` = (seeds finished + the current task's done/total) / seeds; it may step back when
    a seed moves to its next task, so the estimate of the time left is a rough one and says so.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.start = clock()
        self.index, self.n_seeds, self.seed = 0, 1, None  # type: tuple[int, int, int | None]
        self.task, self.done, self.total = "", 0, None  # type: tuple[str, int, int | None]

    def start_seed(self, index: int, n_seeds: int, seed: int) -> None:
        self.index, self.n_seeds, self.seed = index, max(1, n_seeds), seed
        self.task, self.done, self.total = "", 0, None

    def update(self, task: str, done: int, total: int | None) -> None:
        self.task, self.done, self.total = task, done, total

    @property
    def fraction(self) -> float:
        within = min(1.0, self.done / self.total) if self.total else 0.0
        return min(1.0, (self.index + within) / self.n_seeds)

    def elapsed(self) -> float:
        return self._clock() - self.start

    def eta(self) -> float | None:
        f = self.fraction
        return self.elapsed() * (1 - f) / f if f > 0.02 else None

    def describe(self) -> str:
        seed = f"seed {self.seed} ({self.index + 1}/{self.n_seeds})" if self.seed is not None else ""
        count = f" {self.done}/{self.total}" if self.total is not None else ""
        task = f"{self.task}{count}" if self.task else "starting"
        return " · ".join(x for x in (seed, task) if x)

    def status(self) -> str:
        eta = self.eta()
        left = f", ~{_clock(eta)} left" if eta is not None else ""
        return f"{self.fraction:4.0%} {self.describe()} [{_clock(self.elapsed())}{left}]"


class LineReporter:
    """Plain lines on a stream (logs, CI): at most one every ``interval_s`` seconds, plus one per seed."""

    def __init__(
        self,
        prefix: str = "",
        stream: TextIO | None = None,
        interval_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.prefix = prefix
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self._clock = clock
        self._state = OverallProgress(clock)
        self._last = -1e9

    def _emit(self) -> None:
        self._last = self._clock()
        print(f"{self.prefix}{self._state.status()}", file=self.stream, flush=True)

    def start_seed(self, index: int, n_seeds: int, seed: int) -> None:
        self._state.start_seed(index, n_seeds, seed)
        self._emit()

    def update(self, task: str, done: int, total: int | None = None) -> None:
        self._state.update(task, done, total)
        if self._clock() - self._last >= self.interval_s:
            self._emit()

    def log(self, message: str) -> None:
        print(f"{self.prefix}{message}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichReporter:
    """One live rich bar for the whole check on stderr: seed, task by name, elapsed, time left."""

    def __init__(self, prefix: str = "") -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.prefix = prefix
        self._state = OverallProgress()
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[left]}"),
            console=Console(stderr=True),
            transient=True,
        )
        self._task: Any = self._progress.add_task(prefix + "starting", total=1000, left="")
        self._progress.start()

    def _refresh(self) -> None:
        eta = self._state.eta()
        self._progress.update(
            self._task,
            completed=int(1000 * self._state.fraction),
            description=f"{self.prefix}{self._state.describe()}",
            left=f"~{_clock(eta)} left" if eta is not None else "",
        )

    def start_seed(self, index: int, n_seeds: int, seed: int) -> None:
        self._state.start_seed(index, n_seeds, seed)
        self._refresh()

    def update(self, task: str, done: int, total: int | None = None) -> None:
        self._state.update(task, done, total)
        self._refresh()

    def log(self, message: str) -> None:
        self._progress.console.print(f"{self.prefix}{message}", markup=False, highlight=False)

    def close(self) -> None:
        self._progress.stop()


def make_reporter(prefix: str = "", *, quiet: bool = False) -> Reporter:
    """A RichReporter on an interactive terminal, a LineReporter otherwise, nothing if quiet."""
    if quiet:
        return NullReporter()
    if sys.stderr.isatty():
        return RichReporter(prefix)
    return LineReporter(prefix)
