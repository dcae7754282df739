"""Run several claim checks at once: in local processes, or through ``submitit`` (SLURM or local).

``icml25 check --all --jobs N`` hands each check to a ``concurrent.futures`` process pool of N
workers, each limited to ``cpu_count // N`` torch threads; ``--executor submitit`` submits each
check as one ``submitit`` job instead (a SLURM cluster when there is one, else submitit's local
executor). Every worker writes into the same results store (its writes are atomic), and the parent
collects the results. The local pool takes the checks longest first (:func:`longest_first`, by
each check's last recorded wall time), which shortens the whole run when the longest check would
otherwise start last; results still come back in the order asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from icml25.core.claims import CheckResult

__all__ = [
    "CheckJob",
    "PoolProgress",
    "estimate_remaining",
    "longest_first",
    "run_check_job",
    "run_in_processes",
    "run_with_submitit",
    "threads_per_job",
]

EXECUTORS = ("local", "submitit")


@dataclass(frozen=True)
class CheckJob:
    """One check to run: everything a worker process needs, and nothing that cannot be pickled."""

    slug: str
    scale: str
    n_seeds: int | None
    overrides: Mapping[str, Any]
    results_dir: str
    threads: int


def threads_per_job(jobs: int, cpus: int | None = None) -> int:
    """Torch threads for each of ``jobs`` concurrent checks: the cores shared out, at least one."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    return max(1, (cpus or os.cpu_count() or 1) // jobs)


def longest_first(slugs: Sequence[str], last_wall_s: Mapping[str, float]) -> list[str]:
    """``slugs`` ordered for a process pool: longest last recorded wall time first.

    Greedy longest-first is the classic list-scheduling rule for a short makespan. A check with no
    recorded time goes first (its length is unknown, so it should not be the one that starts last);
    ties keep the order given.
    """
    rank = {s: i for i, s in enumerate(slugs)}
    return sorted(slugs, key=lambda s: (-last_wall_s.get(s, float("inf")), rank[s]))


def run_check_job(job: CheckJob) -> dict[str, Any]:
    """Run one check in this process and store its result; returns the result as JSON (picklable)."""
    os.environ["ICML25_THREADS"] = str(job.threads)
    from icml25.catalog import get_paper
    from icml25.core.results import ResultStore

    check = get_paper(job.slug).load_check()
    store = ResultStore(Path(job.results_dir))
    result = check.run(job.scale, n_seeds=job.n_seeds, overrides=dict(job.overrides), store=store)
    return result.to_json()


@dataclass(frozen=True)
class PoolProgress:
    """Where a pool of checks stands: sent to ``on_tick`` every few seconds while it runs."""

    running: tuple[str, ...]
    done: int
    total: int
    elapsed_s: float
    remaining_s: float | None  # from the expected times; None when some job has none

    def line(self) -> str:
        eta = "?" if self.remaining_s is None else f"~{_clock(self.remaining_s)} left"
        running = ", ".join(self.running) or "-"
        return f"[{self.done}/{self.total} done, {_clock(self.elapsed_s)} elapsed, {eta}] running: {running}"


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def estimate_remaining(
    expected_s: Sequence[float | None],
    started_at: Mapping[int, float],
    done: set[int],
    now: float,
    workers: int,
) -> float | None:
    """Seconds until a pool of ``workers`` finishes: the expected time left of every unfinished job
    (a running one's expectation less what it has run, at least 0), shared among the workers, and at
    least the longest single job's time left."""
    left = []
    for i, expected in enumerate(expected_s):
        if i in done:
            continue
        if expected is None:
            return None
        ran = now - started_at[i] if i in started_at else 0.0
        left.append(max(expected - ran, 0.0))
    if not left:
        return 0.0
    return max(sum(left) / max(workers, 1), max(left))


def run_in_processes(
    jobs: Sequence[CheckJob],
    workers: int,
    on_done: Callable[[CheckResult], None] | None = None,
    *,
    on_tick: Callable[[PoolProgress], None] | None = None,
    tick_s: float = 15.0,
    expected_s: Sequence[float | None] | None = None,
) -> list[CheckResult]:
    """Run ``jobs`` in a pool of ``workers`` fresh (spawned) processes; results in the jobs' order.

    ``on_tick`` receives a :class:`PoolProgress` every ``tick_s`` seconds (which checks run, how many
    are done, elapsed time, and an estimate from ``expected_s``, each job's expected seconds).
    """
    import time

    results: dict[int, CheckResult] = {}
    expected = list(expected_s) if expected_s is not None else [None] * len(jobs)
    start = time.monotonic()
    started_at: dict[int, float] = {}
    # At most ``workers`` jobs are submitted at a time, the next one when one finishes: the executor
    # queues one call beyond its workers and reports it as running, so submitting everything at once
    # would name a job as running (and start its clock) before a worker has taken it.
    waiting = iter(range(len(jobs)))
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        futures: dict[Future[dict[str, Any]], int] = {}

        def submit_next() -> None:
            i = next(waiting, None)
            if i is not None:
                futures[pool.submit(run_check_job, jobs[i])] = i
                started_at[i] = time.monotonic()

        for _ in range(min(workers, len(jobs))):
            submit_next()
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=tick_s, return_when=FIRST_COMPLETED)
            now = time.monotonic()
            for future in finished:
                result = CheckResult.from_json(future.result())
                results[futures[future]] = result
                if on_done is not None:
                    on_done(result)
                before = set(futures)
                submit_next()
                pending |= set(futures) - before
            if on_tick is not None and pending:
                running = tuple(jobs[futures[f]].slug for f in futures if f in pending)
                remaining = estimate_remaining(expected, started_at, set(results), now, workers)
                on_tick(PoolProgress(running, len(results), len(jobs), now - start, remaining))
    return [results[i] for i in range(len(jobs))]


def run_with_submitit(
    jobs: Sequence[CheckJob],
    folder: str | os.PathLike[str],
    *,
    cluster: str | None = None,
    timeout_min: int = 60,
    on_done: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Submit each job through ``submitit.AutoExecutor`` (SLURM if present; ``cluster="local"`` forces
    the local executor) and wait for all; results in the jobs' order. Logs go to ``folder``."""
    try:
        import submitit
    except ImportError as err:
        raise ImportError("--executor submitit needs the submitit package: pip install submitit") from err
    executor = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
    threads = max((job.threads for job in jobs), default=1)
    executor.update_parameters(timeout_min=timeout_min, cpus_per_task=threads, name="icml25-check")
    handles = [executor.submit(run_check_job, job) for job in jobs]
    results = []
    for handle in handles:
        result = CheckResult.from_json(handle.result())
        results.append(result)
        if on_done is not None:
            on_done(result)
    return results
