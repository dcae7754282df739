"""Where check results live on disk, written atomically, history kept.

Layout (file names are deterministic apart from the run id, which sorts by time)::

    <root>/<slug>/<scale>/<run_id>/result.json
    <root>/<slug>/<scale>/<run_id>/<figure>.png

A run is first assembled in ``<root>/<slug>/<scale>/.tmp-<run_id>/`` and renamed into place
once its ``result.json`` is complete, so an interrupted check leaves nothing that readers see.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icml25.core.claims import SCALES, CheckResult

__all__ = ["DEFAULT_RESULTS_DIR", "ResultStore", "StoredResult", "ResultsError", "atomic_write_text"]

DEFAULT_RESULTS_DIR = Path("results")
RESULT_FILE = "result.json"


class ResultsError(OSError):
    """The results directory cannot be used (not writable, not a directory, ...)."""


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp creates 0600; give the file ordinary permissions
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class StoredResult:
    """A result read back from disk, with the directory its figures live in."""

    result: CheckResult
    run_dir: Path


class ResultStore:
    """Results of claim checks under one root directory."""

    def __init__(self, root: Path | str = DEFAULT_RESULTS_DIR) -> None:
        self.root = Path(root)

    # -- writing ------------------------------------------------------------------------------

    def ensure_writable(self) -> None:
        """Raise ResultsError, naming the path, if results cannot be written under the root."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".probe-"):
                pass
        except OSError as err:
            raise ResultsError(
                f"results directory {str(self.root)!r} is not writable: {err.strerror or err}"
            ) from err

    @staticmethod
    def new_run_id() -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        return f"{stamp}-{secrets.token_hex(3)}"

    def staging_dir(self, slug: str, scale: str, run_id: str) -> Path:
        """A fresh directory to write a run's figures into before the run is committed."""
        path = self.root / slug / scale / f".tmp-{run_id}"
        path.mkdir(parents=True, exist_ok=False)
        return path

    def commit(self, result: CheckResult, staging: Path) -> Path:
        """Write ``result.json`` into ``staging`` and move the directory into place."""
        atomic_write_text(
            staging / RESULT_FILE,
            json.dumps(result.to_json(), indent=2, sort_keys=True, allow_nan=False) + "\n",
        )
        final = staging.parent / result.run_id
        os.replace(staging, final)
        return final

    def discard(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)

    # -- reading ------------------------------------------------------------------------------

    def _run_dirs(self, slug: str, scale: str) -> list[Path]:
        base = self.root / slug / scale
        if not base.is_dir():
            return []
        return sorted((p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")), reverse=True)

    def load(self, run_dir: Path) -> StoredResult:
        """Read one run; raises ValueError if its JSON is missing or malformed."""
        path = run_dir / RESULT_FILE
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"cannot read {path}: {err}") from err
        if not isinstance(data, dict):
            raise ValueError(f"cannot read {path}: not a JSON object")
        try:
            return StoredResult(CheckResult.from_json(data), run_dir)
        except ValueError as err:
            raise ValueError(f"cannot read {path}: {err}") from err

    def history(self, slug: str, scale: str) -> list[StoredResult]:
        """Readable runs of ``slug`` at ``scale``, newest first (corrupt ones are skipped)."""
        out = []
        for run_dir in self._run_dirs(slug, scale):
            try:
                out.append(self.load(run_dir))
            except ValueError:
                continue
        return out

    def latest(self, slug: str, scale: str | None = None) -> StoredResult | None:
        """The newest readable run of ``slug`` (at ``scale``, or the largest scale that has one)."""
        scales = [scale] if scale else list(reversed(SCALES))
        for sc in scales:
            for run_dir in self._run_dirs(slug, sc):
                try:
                    return self.load(run_dir)
                except ValueError:
                    continue
        return None

    def scan(self) -> tuple[list[StoredResult], list[str]]:
        """The latest readable run of every (slug, scale), and one message per unreadable run."""
        found: list[StoredResult] = []
        problems: list[str] = []
        if not self.root.is_dir():
            return found, problems
        for slug_dir in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            for scale in SCALES:
                latest_found = False
                for run_dir in self._run_dirs(slug_dir.name, scale):
                    try:
                        stored = self.load(run_dir)
                    except ValueError as err:
                        problems.append(str(err))
                        continue
                    if not latest_found:
                        found.append(stored)
                        latest_found = True
        return found, problems

    def __iter__(self) -> Iterator[StoredResult]:
        return iter(self.scan()[0])
