"""Progress display for long runs: a rich bar on a terminal, sparse log lines otherwise.

Checks and training loops report through a :class:`Reporter`; they never print directly.
Display timing never influences computation.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

__all__ = ["ProgressFn", "Reporter", "NullReporter", "LineReporter", "RichReporter", "make_reporter"]


ProgressFn = Callable[[int, int], None]
"""The one progress callback of library code: ``progress(done, total)`` after each unit of work.

Library functions take ``progress: ProgressFn | None = None``; a check passes
``lambda done, total: ctx.progress("task", done, total)``.
"""


class Reporter(Protocol):
    def update(self, task: str, done: int, total: int | None = None) -> None: ...

    def log(self, message: str) -> None: ...

    def close(self) -> None: ...


class NullReporter:
    """Reports nothing (tests, library use)."""

    def update(self, task: str, done: int, total: int | None = None) -> None:
        pass

    def log(self, message: str) -> None:
        pass

    def close(self) -> None:
        pass


class LineReporter:
    """Plain lines on a stream, at most one per task every ``interval_s`` seconds (and at the end)."""

    def __init__(self, prefix: str = "", stream: TextIO | None = None, interval_s: float = 5.0) -> None:
        self.prefix = prefix
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self._last: dict[str, float] = {}

    def update(self, task: str, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        finished = total is not None and done >= total
        if not finished and now - self._last.get(task, -1e9) < self.interval_s:
            return
        self._last[task] = now
        count = f"{done}/{total}" if total is not None else str(done)
        print(f"{self.prefix}{task}: {count}", file=self.stream, flush=True)

    def log(self, message: str) -> None:
        print(f"{self.prefix}{message}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichReporter:
    """A live rich progress bar per task, on stderr."""

    def __init__(self, prefix: str = "") -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.prefix = prefix
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._tasks: dict[str, Any] = {}
        self._progress.start()

    def update(self, task: str, done: int, total: int | None = None) -> None:
        if task not in self._tasks:
            self._tasks[task] = self._progress.add_task(f"{self.prefix}{task}", total=total)
        self._progress.update(self._tasks[task], completed=done, total=total)

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
