"""A sandbox for generated Python code: run it as a hostile program and survive whatever it does.

:func:`run_python` writes ``code`` into a fresh temporary directory and runs it with the project's
interpreter in isolated mode (``python -I``), in a new session (its own process group) with

* resource limits (``setrlimit`` before ``exec``): CPU seconds, address space (``memory_mb``),
  process count (``max_processes``), file size, open files, no core dumps;
* a wall-clock deadline enforced by the harness, and a cap on the bytes read from stdout and
  stderr (a flood is cut off and the program killed);
* an environment stripped of every variable of the parent (only ``PATH``, ``HOME``/``TMPDIR``
  pointing into its own directory, ``LANG``);
* when the harness runs as root and ``unshare``/``setpriv`` (util-linux) work: a fresh network
  namespace (only a loopback that is down: every connection fails), a fresh PID namespace (when
  its first process ends the kernel kills every process left in it, including orphans that
  ``setsid`` away from the process group), and a drop to a fresh unprivileged uid/gid with no
  supplementary groups, no capabilities and ``no_new_privs``. That uid owns nothing on the
  machine, so the program cannot write into the project, read other users' ``/proc/<pid>/environ``
  or signal the harness; its process limit counts only its own processes.

Fallbacks (probed once per interpreter and recorded in every result as ``isolation``):

* ``"namespaces"``: the full setup above (root with util-linux; the default here).
* ``"userns"``: not root, but unprivileged user namespaces work: fresh network and PID
  namespaces, no privilege drop (the program runs with the caller's file permissions).
* ``"process"``: neither works. The program runs in its own session with the rlimits and the
  stripped environment, and a prelude installs an audit hook (PEP 578) that refuses socket
  ``connect``/``bind``/``sendto`` and ``getaddrinfo``. This is a speed bump, not a wall (``ctypes``
  can bypass audit hooks); processes that leave the process group survive the final kill.

Status values: ``ok`` (exit code 0), ``error`` (non-zero exit), ``timeout`` (wall clock or CPU
seconds), ``memory`` (``MemoryError`` or an allocation failure), ``killed`` (a signal, or the
output cap). Every process the program started is gone when :func:`run_python` returns.

Choice: the PID-namespace init is ``/bin/sh`` running the program as its child, so the program
keeps normal signal semantics (a PID-namespace init ignores signals it has no handler for). A
program killed by signal ``n`` therefore reports ``returncode = -n``; an explicit ``exit(128 + n)``
for ``n`` in :data:`_SIGNALS_SEEN` reads the same.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["ExecutionResult", "Status", "run_python", "isolation_mode", "sandbox_python"]

Status = Literal["ok", "error", "timeout", "memory", "killed"]
Isolation = Literal["namespaces", "userns", "process"]

_UID_RANGE = (1_500_000_000, 1_600_000_000)  # fresh uids: no account, no files on the machine
_SIGNALS_SEEN = (
    signal.SIGKILL,
    signal.SIGXCPU,
    signal.SIGXFSZ,
    signal.SIGSEGV,
    signal.SIGABRT,
    signal.SIGTERM,
)
_CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

# Installed before the program in "process" mode (no network namespace available).
_NET_GUARD = """import sys as _s
def _icml25_guard(event, args):
    if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo"):
        raise PermissionError("network access is disabled in the icml25 sandbox")
_s.addaudithook(_icml25_guard)
del _s, _icml25_guard
"""


@dataclass(frozen=True)
class ExecutionResult:
    """What one sandboxed run did.

    Args:
        status: ``ok``, ``error``, ``timeout``, ``memory`` or ``killed``.
        stdout: decoded standard output, at most ``output_limit`` bytes of it.
        stderr: decoded standard error, likewise capped.
        returncode: the exit code; ``-n`` for signal ``n``; ``None`` when the harness killed it.
        wall_time_s: seconds from start to the end of the run.
        reason: why the status is what it is (e.g. ``"wall-clock limit 2 s"``).
        truncated: True if stdout or stderr hit the output cap.
        isolation: which isolation mode ran it (see the module docstring).
    """

    status: Status
    stdout: str
    stderr: str
    returncode: int | None
    wall_time_s: float
    reason: str = ""
    truncated: bool = False
    isolation: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _works(cmd: list[str]) -> bool:
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=10, env=_CLEAN_ENV, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@functools.cache
def isolation_mode() -> Isolation:
    """The strongest isolation this machine allows (probed once)."""
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if unshare is None:
        return "process"
    ns = [unshare, "--net", "--pid", "--fork", "--kill-child", "--"]
    if os.geteuid() == 0 and setpriv is not None:
        uid = str(_UID_RANGE[0])
        if _works([*ns, setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "true"]):
            return "namespaces"
    if _works([unshare, "--user", "--map-root-user", *ns[1:], "true"]):
        return "userns"
    return "process"


def _world_executable(path: str) -> bool:
    """Whether a user who owns nothing can execute ``path`` (every directory on the way is o+x)."""
    real = Path(os.path.realpath(path))
    try:
        if not real.stat().st_mode & 0o001:
            return False
        return all(parent.stat().st_mode & 0o001 for parent in real.parents)
    except OSError:
        return False


@functools.cache
def sandbox_python(preferred: str | None = None) -> str:
    """The interpreter the sandbox runs: ``preferred`` (default: the current one) if an unprivileged
    user can execute it, else the first ``python3`` on the system path that it can."""
    first = preferred or sys.executable
    if isolation_mode() != "namespaces" or _world_executable(first):
        return first
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"):
        if _world_executable(candidate):
            return candidate
    return first


def _user_process_count(uid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _limits(*, timeout_s: float, memory_mb: int, nproc: int, file_mb: int) -> list[tuple[int, int]]:
    cpu = max(1, int(timeout_s) + 1)
    mem = memory_mb * 1024 * 1024
    return [
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, mem),
        (resource.RLIMIT_DATA, mem),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, file_mb * 1024 * 1024),
        (resource.RLIMIT_NOFILE, 64),
        (resource.RLIMIT_CORE, 0),
    ]


def _check_args(code: str, timeout_s: float, memory_mb: int, max_processes: int, output_limit: int) -> None:
    if not isinstance(code, str):
        raise ValueError(f"code must be a string, got {type(code).__name__}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if memory_mb < 32:
        raise ValueError(f"memory_mb must be at least 32 (the interpreter needs it), got {memory_mb}")
    if max_processes < 1:
        raise ValueError(f"max_processes must be at least 1, got {max_processes}")
    if output_limit < 1:
        raise ValueError(f"output_limit must be at least 1 byte, got {output_limit}")


def run_python(
    code: str,
    *,
    timeout_s: float,
    memory_mb: int,
    stdin: str | None = None,
    max_processes: int = 16,
    output_limit: int = 1 << 20,
    file_limit_mb: int = 16,
    python: str | None = None,
) -> ExecutionResult:
    """Run ``code`` as ``python -I main.py`` in the sandbox and return what happened.

    Args:
        code: the program text.
        timeout_s: wall-clock limit in seconds (the CPU limit is ``ceil(timeout_s) + 1``).
        memory_mb: address-space limit of each process, in MiB.
        stdin: text fed to the program's standard input (none: an empty stdin).
        max_processes: processes (threads count too) the program may have at once, itself
            included; the PID-namespace init adds one.
        output_limit: bytes kept from stdout and from stderr; beyond that the program is killed.
        file_limit_mb: largest file the program may write.
        python: interpreter to run (default: the current one, or the system ``python3`` when the
            current one lies where the unprivileged sandbox user cannot reach it, e.g. under ``/root``).

    Returns:
        An :class:`ExecutionResult`; the harness never raises for anything the program does.
    """
    _check_args(code, timeout_s, memory_mb, max_processes, output_limit)
    mode = isolation_mode()
    python = sandbox_python(python)
    base = tempfile.mkdtemp(prefix="icml25-sandbox-")
    workdir = os.path.join(base, "work")
    os.mkdir(workdir)
    uid: int | None = None
    nproc = max_processes + 1  # + the namespace init
    if mode == "namespaces":
        uid = random.SystemRandom().randrange(*_UID_RANGE)
        os.chmod(base, 0o711)  # the program may enter base/work, not list base
        os.chown(workdir, uid, uid)
        os.chmod(workdir, 0o700)
    else:  # the process limit counts every process of our own uid
        nproc += _user_process_count(os.getuid())
    program = os.path.join(base, "main.py")
    with open(program, "w", encoding="utf-8") as fh:
        fh.write((_NET_GUARD if mode == "process" else "") + code)
    os.chmod(program, 0o644)
    stdin_path = os.path.join(base, "stdin.txt")
    with open(stdin_path, "w", encoding="utf-8") as fh:
        fh.write(stdin or "")
    os.chmod(stdin_path, 0o644)

    inner = [python, "-I", "-B", program]
    if mode == "namespaces":
        assert uid is not None
        setpriv = shutil.which("setpriv") or "setpriv"
        inner = [
            setpriv,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--no-new-privs",
            "--inh-caps=-all",
            *inner,
        ]
    if mode in ("namespaces", "userns"):
        unshare = shutil.which("unshare") or "unshare"
        user = ["--user", "--map-root-user"] if mode == "userns" else []
        # /bin/sh is the namespace's init; the program runs as its child with normal signal semantics.
        inner = [
            unshare,
            *user,
            "--net",
            "--pid",
            "--fork",
            "--kill-child",
            "--",
            "/bin/sh",
            "-c",
            '"$@"; exit $?',
            "sh",
            *inner,
        ]
    limits = _limits(timeout_s=timeout_s, memory_mb=memory_mb, nproc=nproc, file_mb=file_limit_mb)

    def preexec() -> None:  # runs in the child between fork and exec
        for which, value in limits:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (value, value))

    env = {**_CLEAN_ENV, "HOME": workdir, "TMPDIR": workdir}
    start = time.monotonic()
    try:
        with open(stdin_path, "rb") as stdin_fh:
            proc = subprocess.Popen(
                inner,
                stdin=stdin_fh,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=env,
                start_new_session=True,
                preexec_fn=preexec,
                close_fds=True,
            )
    except OSError as start_error:
        shutil.rmtree(base, ignore_errors=True)
        return ExecutionResult("error", "", "", None, 0.0, f"could not start: {start_error}", isolation=mode)
    try:
        out, err, truncated, killed_for = _collect(proc, start + timeout_s, output_limit)
    finally:
        _kill_group(proc)
        if uid is not None:
            _kill_uid(uid)
        shutil.rmtree(base, ignore_errors=True)
    wall = time.monotonic() - start
    rc = proc.returncode
    if mode in ("namespaces", "userns") and rc is not None and rc > 128 and (rc - 128) in _SIGNALS_SEEN:
        rc = -(rc - 128)  # sh reports a child killed by signal n as 128 + n
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    status, reason = _classify(killed_for, rc, stderr, timeout_s)
    return ExecutionResult(status, stdout, stderr, None if killed_for else rc, wall, reason, truncated, mode)


def _collect(proc: subprocess.Popen[bytes], deadline: float, cap: int) -> tuple[bytes, bytes, bool, str]:
    """Read both pipes until EOF, the deadline or the output cap; returns (out, err, truncated, why)."""
    assert proc.stdout is not None and proc.stderr is not None
    bufs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    sel = selectors.DefaultSelector()
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe, selectors.EVENT_READ)
    truncated, killed_for = False, ""
    exited_at: float | None = None
    try:
        while sel.get_map():
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                killed_for = "timeout"
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > 0.5:
                break  # the program ended; what still holds its pipes is killed with the group
            for key, _ in sel.select(timeout=min(left, 0.5)):
                fd = key.fd
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = bufs[fd]
                room = cap - len(buf)
                buf += chunk[: max(room, 0)]
                if len(chunk) > room:
                    truncated, killed_for = True, "output"
            if killed_for:
                break
        if not killed_for:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.05))
            except subprocess.TimeoutExpired:
                killed_for = "timeout"
    finally:
        sel.close()
    return bytes(bufs[proc.stdout.fileno()]), bytes(bufs[proc.stderr.fileno()]), truncated, killed_for


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: the group id is the leader's pid
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _kill_uid(uid: int) -> None:
    """SIGKILL every process still owned by the sandbox uid (normally none: the PID namespace is gone)."""
    for _ in range(3):
        found = False
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid == uid:
                    found = True
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ValueError):
                continue
        if not found:
            return
        time.sleep(0.01)


def _classify(killed_for: str, rc: int | None, stderr: str, timeout_s: float) -> tuple[Status, str]:
    if killed_for == "timeout":
        return "timeout", f"wall-clock limit {timeout_s:g} s"
    if killed_for == "output":
        return "killed", "output limit exceeded"
    if rc == 0:
        return "ok", ""
    tail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
        return "memory", tail or "memory limit"
    if rc == -signal.SIGXCPU:
        return "timeout", "CPU-time limit"
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        if rc == -signal.SIGSEGV or rc == -signal.SIGABRT:
            return "memory", f"killed by {name} (likely an allocation failure under the memory limit)"
        return "killed", f"killed by {name}"
    return "error", tail or f"exit code {rc}"
