"""Seeding, threads, timing and the environment record stored with every result."""

from __future__ import annotations

import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from icml25.core.validate import check_non_negative, check_positive

__all__ = [
    "matmul_gflops",
    "resolve_precision",
    "seed_everything",
    "set_threads",
    "thread_budget",
    "WorkerPool",
    "Stopwatch",
    "cpu_flags",
    "cpu_model",
    "environment",
    "git_commit",
    "utc_now",
]

# Libraries whose versions go into every result (those not installed are left out).
_TRACKED_PACKAGES = (
    "icml25",
    "numpy",
    "scipy",
    "torch",
    "matplotlib",
    "scikit-learn",
    "transformers",
    "networkx",
    "rdkit",
)


def seed_everything(seed: int, *, deterministic: bool = True) -> None:
    """Seed Python's ``random``, NumPy's legacy global RNG and torch (CPU and CUDA).

    Library code never relies on these global generators (it takes a seed or a generator);
    this is for experiment code and third-party code that does.
    """
    check_non_negative("seed", seed, integer=True)  # bools and floats are rejected, numpy ints taken
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
        if torch.backends.cudnn.is_available():
            torch.backends.cudnn.benchmark = False


_PRECISION_CACHE: dict[tuple[int, int], str] = {}


def matmul_gflops(dtype_name: str, *, size: int = 256, seconds: float = 0.15) -> float:
    """Measured GFLOP/s of a ``size`` x ``size`` torch matmul in ``"fp32"`` or ``"bf16"`` on the CPU,
    at torch's current thread count (a short warm-up, then as many products as fit in ``seconds``)."""
    import torch

    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    if dtype_name not in dtypes:
        raise ValueError(f"dtype_name must be one of {sorted(dtypes)}, got {dtype_name!r}")
    check_positive("size", size, integer=True)
    check_positive("seconds", seconds)
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=gen).to(dtypes[dtype_name])
    b = torch.randn(size, size, generator=gen).to(dtypes[dtype_name])
    a @ b  # warm-up: kernel selection and packing
    count, start = 0, time.perf_counter()
    while True:
        a @ b
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return 2.0 * size**3 * count / elapsed / 1e9


def resolve_precision(precision: str) -> str:
    """``"fp32"``/``"bf16"`` as given; ``"auto"``: bf16 where this CPU runs a bfloat16 matmul faster
    than a float32 one (AVX512-BF16 or AMX), else fp32.

    On a processor without native bfloat16 (AVX2 only) a bfloat16 matmul is emulated and runs several
    times slower than float32, so autocast there costs time instead of saving it. The choice is
    measured once per process and thread count (about half a second) and cached.
    """
    if precision in ("fp32", "bf16"):
        return precision
    if precision != "auto":
        raise ValueError(f"precision must be 'auto', 'fp32' or 'bf16', got {precision!r}")
    import torch

    key = (torch.get_num_threads(), os.getpid())
    if key not in _PRECISION_CACHE:
        fp32, bf16 = matmul_gflops("fp32"), matmul_gflops("bf16")
        _PRECISION_CACHE[key] = "bf16" if bf16 > fp32 else "fp32"
    return _PRECISION_CACHE[key]


def thread_budget() -> int:
    """The cores a run may use: ``$ICML25_THREADS`` if set (e.g. ``1`` while other jobs share the
    machine, as in the main job's two-at-a-time pool), else all cores. A check that trains in worker
    processes starts at most this many, so that a one-thread slot stays one core."""
    env = os.environ.get("ICML25_THREADS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"ICML25_THREADS must be a positive integer, got {env!r}")
        return int(env)
    return os.cpu_count() or 1


class WorkerPool:
    """Keyed jobs run ahead in spawned worker processes, when the run's thread budget allows.

    A check whose training runs are independent, single-threaded and seeded by their own arguments
    (so that where a run trains changes no number) queues them here: with
    ``min(workers, thread_budget())`` > 1 a ``spawn`` process pool of that many workers starts on the
    first :meth:`submit`; otherwise nothing is queued and the caller runs each job itself, in its own
    process, when it needs it (a one-thread slot of the main job stays one core).

    Args:
        workers: the check's worker setting (at most :func:`thread_budget` processes start).
    """

    def __init__(self, workers: int) -> None:
        check_positive("workers", workers, integer=True)
        self.workers = min(int(workers), thread_budget())
        self._pool: Any = None
        self._futures: dict[Hashable, Any] = {}

    @property
    def active(self) -> bool:
        """Whether jobs go to worker processes (more than one worker allowed)."""
        return self.workers > 1

    def submit(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> bool:
        """Queue ``fn(*args)`` (a picklable top-level function) under ``key`` unless the pool is inactive
        or ``key`` is already queued. Returns whether the job is queued."""
        if not self.active:
            return False
        if key in self._futures:
            return True
        if self._pool is None:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(self.workers, mp_context=mp.get_context("spawn"))
        self._futures[key] = self._pool.submit(fn, *args)
        return True

    def queued(self, key: Hashable) -> bool:
        """Whether ``key`` is queued and not yet taken."""
        return key in self._futures

    def take(self, key: Hashable) -> Any:
        """The result of the queued job ``key`` (waiting for it), removed from the queue; ``KeyError``
        when it was never queued (the caller then runs it itself)."""
        return self._futures.pop(key).result()

    def close(self) -> None:
        """Shut the pool down, cancelling queued jobs, and forget them."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None
        self._futures = {}


def set_threads(n: int | None = None) -> int:
    """Fix the number of CPU threads torch uses. Returns the number set.

    Default: :func:`thread_budget` (``$ICML25_THREADS`` if set, else all cores).
    """
    n = n or thread_budget()
    try:
        import torch

        torch.set_num_threads(n)
    except ImportError:  # pragma: no cover
        pass
    return n


@dataclass
class Stopwatch:
    """Accumulates named wall-clock durations: ``with sw("fit"): ...``."""

    totals: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.totals[name] = self.totals.get(name, 0.0) + time.perf_counter() - start


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_commit(path: Path | None = None) -> str | None:
    """The commit of the checkout ``path`` belongs to (with ``+dirty`` if modified), or None."""
    cwd = path or Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpuinfo_value(keys: tuple[str, ...], cpuinfo: Path) -> str | None:
    """The value of the first of ``keys`` (lower-case, in order of preference) that ``cpuinfo`` has on a
    non-empty ``key : value`` line (its first such line); None where the file cannot be read or has none."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key in keys and value.strip():
            found.setdefault(key, value.strip())
    return next((found[key] for key in keys if key in found), None)


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The processor's model name from ``/proc/cpuinfo`` (Linux), else None: wall times measured on
    two machines of one ``platform.machine()`` can differ by a factor of two."""
    return _cpuinfo_value(("model name", "cpu model", "model"), cpuinfo)  # x86 "model" is a number


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The processor's feature flags (``flags`` on x86, ``Features`` on Arm) from ``/proc/cpuinfo``;
    None where the file cannot be read or lists none."""
    value = _cpuinfo_value(("flags", "features"), cpuinfo)
    return frozenset(value.split()) if value is not None else None


def environment() -> dict[str, Any]:
    """What a reader needs to know about where a result was measured."""
    versions = {name: v for name in _TRACKED_PACKAGES if (v := _version(name)) is not None}
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "versions": versions,
        "git_commit": git_commit(),
    }
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        info["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover
        info["device"] = "cpu"
    return info
