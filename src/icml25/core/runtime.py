"""Seeding, threads, timing and the environment record stored with every result."""

from __future__ import annotations

import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from icml25.core.validate import check_non_negative

__all__ = [
    "seed_everything",
    "set_threads",
    "Stopwatch",
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


def set_threads(n: int | None = None) -> int:
    """Fix the number of CPU threads torch uses. Returns the number set.

    Default: ``$ICML25_THREADS`` if set (e.g. ``1`` while other jobs share the machine), else all cores.
    """
    env = os.environ.get("ICML25_THREADS", "").strip()
    if n is None and env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"ICML25_THREADS must be a positive integer, got {env!r}")
        n = int(env)
    n = n or os.cpu_count() or 1
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


def environment() -> dict[str, Any]:
    """What a reader needs to know about where a result was measured."""
    versions = {name: v for name in _TRACKED_PACKAGES if (v := _version(name)) is not None}
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
        "git_commit": git_commit(),
    }
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        info["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover
        info["device"] = "cpu"
    return info
