"""The progress display: one overall line per check, seeds and tasks by name, sparse when logged."""

from __future__ import annotations

import io

from icml25.core.progress import LineReporter, OverallProgress


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_overall_fraction_and_estimate() -> None:
    clock = _Clock()
    state = OverallProgress(clock)
    state.start_seed(1, 4, seed=7)  # second of four seeds
    state.update("train tarflow", 50, 100)
    clock.now = 30.0
    assert state.fraction == (1 + 0.5) / 4
    assert state.eta() == 30.0 * (1 - 0.375) / 0.375
    text = state.status()
    assert "seed 7 (2/4)" in text and "train tarflow 50/100" in text and "left" in text


def test_line_reporter_is_sparse_and_names_the_seed_and_task() -> None:
    clock, out = _Clock(), io.StringIO()
    rep = LineReporter("[x small] ", stream=out, interval_s=10.0, clock=clock)
    rep.start_seed(0, 2, seed=0)
    for step in range(1, 101):  # 100 updates within 5 s: no line beyond the seed's
        clock.now = step * 0.05
        rep.update("train rmt", step, 100)
    clock.now = 12.0
    rep.update("train gpt", 1, 100)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("[x small]") and "seed 0 (1/2)" in lines[0]
    assert "train gpt 1/100" in lines[1] and "0:12" in lines[1]
