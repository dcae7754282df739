"""Where check results live on disk, written atomically, history kept.

Layout (file names are deterministic apart from the run id, which sorts by time)::

    <root>/<slug>/<scale>/<run_id>/result.json
    <root>/<slug>/<scale>/<run_id>/<figure>.png

A run is first assembled in ``<root>/<slug>/<scale>/.tmp-<run_id>/`` and renamed into place
once its ``result.json`` is complete, so an interrupted check leaves nothing that readers see.
Staging folders left by a killed run are removed by the next write to the same folder once they
are older than :data:`STALE_STAGING_S` (longer than any run takes).

Reading trusts nothing on disk: only real directories and regular files (no symlinks, FIFOs or
devices) are read, ``result.json`` is capped at :data:`MAX_RESULT_BYTES`, deeply nested JSON is an
error, the stored slug, scale and run id must match the folders the file sits in (and the catalog,
when the store is given the known slugs), seeds must be JSON integers, and the verdict is
recomputed from the stored criteria (each criterion's pass/fail from its stored value, threshold
and operator) with :func:`~icml25.core.claims.compute_verdict`. A disagreement is flagged in
:attr:`StoredResult.warnings` and the recomputed verdict is the one returned. Every message names
the offending file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icml25.core.claims import SCALES, CheckResult, Verdict, VerdictKind, compute_verdict, rejudge

__all__ = ["DEFAULT_RESULTS_DIR", "ResultStore", "StoredResult", "ResultsError", "atomic_write_text"]

DEFAULT_RESULTS_DIR = Path("results")
RESULT_FILE = "result.json"
MAX_RESULT_BYTES = 32 * 1024 * 1024  # a result.json is a few KiB; anything this big is not one
STALE_STAGING_S = 3 * 24 * 3600  # a staging folder this old belongs to a run that was killed
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")


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
    warnings: tuple[str, ...] = ()


class ResultStore:
    """Results of claim checks under one root directory."""

    def __init__(
        self, root: Path | str = DEFAULT_RESULTS_DIR, known_slugs: Collection[str] | None = None
    ) -> None:
        """``known_slugs``: when given (the catalog's), results of other slugs are skipped as unreadable."""
        self.root = Path(root)
        self.known_slugs = None if known_slugs is None else frozenset(known_slugs)

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
        for name in (slug, scale, run_id):
            if not _SAFE_NAME.match(name) or name in (".", ".."):
                raise ValueError(f"not a safe folder name for a result: {name!r}")
        path = self.root / slug / scale / f".tmp-{run_id}"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.clean_stale_staging(path.parent)
        path.mkdir(exist_ok=False)
        return path

    @staticmethod
    def clean_stale_staging(folder: Path, older_than_s: float = STALE_STAGING_S) -> list[Path]:
        """Remove ``.tmp-*`` staging folders in ``folder`` untouched for ``older_than_s``; returns them."""
        removed = []
        now = time.time()
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if not entry.name.startswith(".tmp-"):
                    continue
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > older_than_s:
                        if entry.is_dir(follow_symlinks=False):
                            shutil.rmtree(entry.path, ignore_errors=True)
                        else:
                            os.unlink(entry.path)
                        removed.append(Path(entry.path))
        return removed

    def commit(self, result: CheckResult, staging: Path) -> Path:
        """Write ``result.json`` into ``staging`` and move the directory into place.

        Anything that interrupts it (an error, Ctrl-C, SIGTERM turned into an exception) before the
        rename removes the staging folder: a run is either wholly visible or not at all."""
        final = staging.parent / result.run_id
        try:
            atomic_write_text(
                staging / RESULT_FILE,
                json.dumps(result.to_json(), indent=2, sort_keys=True, allow_nan=False) + "\n",
            )
            os.replace(staging, final)
        except BaseException:
            if not final.exists():
                self.discard(staging)
            raise
        return final

    def discard(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)

    # -- reading ------------------------------------------------------------------------------

    def _run_dirs(self, slug: str, scale: str) -> list[Path]:
        base = self.root / slug / scale
        try:
            entries = list(os.scandir(base))
        except OSError:
            return []
        dirs = []
        for entry in entries:
            with contextlib.suppress(OSError):
                if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                    dirs.append(Path(entry.path))
        return sorted(dirs, reverse=True)

    def load(self, run_dir: Path) -> StoredResult:
        """Read one run; raises ValueError, naming the file, if it is missing, malformed or misplaced."""
        path = run_dir / RESULT_FILE
        data = _read_json_object(path)
        try:
            _check_place(data, run_dir, self.known_slugs)
            result = CheckResult.from_json(data)
        except (ValueError, RecursionError) as err:
            raise ValueError(f"cannot read {path}: {err}") from err
        result, warnings = _recheck_verdict(result, path)
        return StoredResult(result, run_dir, warnings)

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
        slug_dirs = []
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.root):
                with contextlib.suppress(OSError):
                    if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                        slug_dirs.append(entry.name)
        for slug in sorted(slug_dirs):
            for scale in SCALES:
                latest_found = False
                for run_dir in self._run_dirs(slug, scale):
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


# -- reading untrusted files ------------------------------------------------------------------------


def _read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``: a regular file (not a symlink, FIFO or device) of bounded size."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            raise ValueError(f"cannot read {path}: {kind}")
        if info.st_size > MAX_RESULT_BYTES:
            raise ValueError(f"cannot read {path}: {info.st_size} bytes, more than {MAX_RESULT_BYTES}")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ValueError(f"cannot read {path}: not a regular file")
            raw = fh.read(MAX_RESULT_BYTES + 1)
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from err
    if len(raw) > MAX_RESULT_BYTES:
        raise ValueError(f"cannot read {path}: more than {MAX_RESULT_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    except RecursionError as err:
        raise ValueError(f"cannot read {path}: JSON nested too deeply") from err
    if not isinstance(data, dict):
        raise ValueError(f"cannot read {path}: not a JSON object")
    return data


def _check_place(data: dict[str, Any], run_dir: Path, known_slugs: frozenset[str] | None) -> None:
    """The stored slug, scale and run id must be the folders the file sits in; seeds must be integers."""
    slug, scale, run_id = data.get("slug"), data.get("scale"), data.get("run_id")
    folder_scale, folder_slug = run_dir.parent.name, run_dir.parent.parent.name
    for key, value, folder in (
        ("slug", slug, folder_slug),
        ("scale", scale, folder_scale),
        ("run_id", run_id, run_dir.name),
    ):
        if not isinstance(value, str) or not _SAFE_NAME.match(value) or value != folder:
            raise ValueError(f"stored {key} {value!r} does not match its folder {folder!r}")
    if scale not in SCALES:
        raise ValueError(f"stored scale {scale!r} is not one of {SCALES}")
    if known_slugs is not None and slug not in known_slugs:
        raise ValueError(f"stored slug {slug!r} is not a paper of the catalog")
    seeds = data.get("seeds")
    if not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
        raise ValueError(f"seeds must be a list of integers, got {seeds!r}")


def _recheck_verdict(result: CheckResult, path: Path) -> tuple[CheckResult, tuple[str, ...]]:
    """Recompute each criterion's outcome and the verdict from the stored numbers; flag disagreements.

    A paired criterion is re-judged from its stored interval and smallest effect, a point one from
    its value and threshold, and a failed gate makes the verdict ``inconclusive`` whatever the
    stored verdict says.
    """
    warnings: list[str] = []
    criteria = []
    for c in result.criteria:
        fresh = rejudge(c)
        if fresh.passed != c.passed:
            warnings.append(
                f"{path}: criterion {c.name!r} is stored as passed={c.passed} but its stored numbers give "
                f"passed={fresh.passed}"
            )
        criteria.append(fresh)
    stored = result.verdict
    min_seeds = result.claim.get("min_seeds", 1)
    if isinstance(min_seeds, bool) or not isinstance(min_seeds, int):
        min_seeds = 1
    if stored.kind is VerdictKind.NEEDS and not any(c.role == "gate" and c.needs for c in criteria):
        verdict = stored
    else:
        verdict = compute_verdict(
            criteria, n_seeds=len(result.seeds), min_seeds=min_seeds, scale=result.scale
        )
    if str(verdict) != str(stored):
        warnings.append(
            f"{path}: stored verdict {str(stored)!r} disagrees with its criteria, which give {str(verdict)!r}"
        )
        verdict = Verdict(verdict.kind, verdict.resource, f"{verdict.reason} (recomputed; stored: {stored})")
    if not warnings:
        return result, ()
    return dataclasses.replace(result, criteria=tuple(criteria), verdict=verdict), tuple(warnings)
