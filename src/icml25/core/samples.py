"""Logged samples: what a check sent to a model and what came back, stored beside its result.

A model backend calls :func:`log_sample` for every request it answers; the check runner collects
them per seed with :func:`collect_samples` and writes one JSON line per sample to
``samples.jsonl`` in the run folder (as lm-evaluation-harness logs its samples), so a reader can see
why a model scored what it scored. Outside a :func:`collect_samples` block, logging is a no-op.
Samples logged from another thread are not collected (context variables do not cross threads).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["SAMPLES_FILE", "collect_samples", "log_sample"]

#: the file, in a run folder, that holds the logged samples (one JSON object per line)
SAMPLES_FILE = "samples.jsonl"

_COLLECTOR: ContextVar[list[dict[str, Any]] | None] = ContextVar("icml25_samples", default=None)


@contextmanager
def collect_samples() -> Iterator[list[dict[str, Any]]]:
    """Collect every sample logged inside the block (nested blocks collect their own)."""
    samples: list[dict[str, Any]] = []
    token = _COLLECTOR.set(samples)
    try:
        yield samples
    finally:
        _COLLECTOR.reset(token)


def log_sample(sample: Mapping[str, Any]) -> None:
    """Add ``sample`` (JSON-able) to the innermost active :func:`collect_samples` block, if any."""
    samples = _COLLECTOR.get()
    if samples is not None:
        samples.append(dict(sample))
