"""A sandbox for generated Python code: run it as a hostile program and survive whatever it does.

:func:`run_python` runs ``code`` with the project's interpreter in isolated mode (``python -I``),
in a new session (its own process group), and returns an :class:`ExecutionResult`.

What is isolated (the default here: root with util-linux ``unshare``/``setpriv``, mode
``"namespaces"`` with a private filesystem and a cgroup):

* **Files.** A fresh mount namespace with one size-capped ``tmpfs`` (``disk_limit_mb``, also an
  inode cap) that is bind-mounted over ``/tmp``, ``/var/tmp`` and ``/dev/shm``; the work folder
  (cwd, ``HOME``, ``TMPDIR``) is ``/tmp/work`` inside it. ``/run`` is covered by an empty read-only
  ``tmpfs`` (no host sockets or lock files there). Everything written is gone when the call ends,
  and the total written is capped (single files also by ``file_limit_mb``). The host copy of the
  program lives in a 0700 folder as 0600 files, so another sandbox (another uid, another mount
  namespace) cannot read it.
* **IPC.** A fresh IPC namespace (SysV shared memory, semaphores, message queues and POSIX
  message queues die with the call) and a fresh network namespace whose loopback is down: no
  TCP/UDP, and no abstract Unix sockets of the host. Filesystem Unix sockets in ``/tmp``,
  ``/dev/shm`` and ``/run`` are hidden by the mounts above.
* **Processes.** A fresh PID namespace with its own ``/proc`` (the program sees only its own
  processes; when the namespace's first process ends the kernel kills every process left in it),
  and a drop to a fresh unprivileged uid/gid with no supplementary groups, no capabilities and
  ``no_new_privs``. That uid owns nothing, so the program cannot write into the project, signal
  the harness or read other users' files.
* **Memory and processes of the whole tree.** A memory cgroup (v1 or v2) nested under the
  harness's own cgroup caps the resident memory of all the program's processes together, tmpfs
  pages included, at ``memory_mb``; a pids cgroup caps their number. Every process in the cgroup
  is killed at the end. Each process is also limited by ``setrlimit``: CPU seconds, address space
  (``memory_mb``), process count (``max_processes``), file size, open files, no core dumps.
* **System calls.** A seccomp filter (built with libseccomp through ``ctypes``, installed by the
  harness before ``exec``) refuses creating user namespaces (``unshare``/``clone`` with
  ``CLONE_NEWUSER``; ``clone3`` reports ``ENOSYS`` so libc falls back to ``clone``) and syscalls
  generated code never needs: ``ptrace``, ``process_vm_*``, ``setns``, ``keyctl``/``add_key``/
  ``request_key``, ``bpf``, ``perf_event_open``, ``userfaultfd``, module and ``kexec`` loading, the
  new mount API, ``pivot_root``, ``umount2``, ``swapon``/``swapoff``.
* **Time and output.** A wall-clock deadline, and a cap on the bytes read from stdout and stderr
  (a flood is cut off and the program killed). The environment is stripped of every variable of
  the parent (only ``PATH``, ``HOME``/``TMPDIR`` pointing into its work folder, ``LANG``).

What is *not* isolated: the rest of the host filesystem is readable wherever its permissions let
any user read (``/etc``, ``/usr``, world-readable files; never writable); ``/sys`` is the host's
(read-only for the sandbox uid); filesystem Unix sockets outside ``/tmp``, ``/var/tmp``,
``/dev/shm`` and ``/run`` that are world-writable stay reachable; the kernel is shared (the seccomp
filter is a deny list, not an allow list: a bug in an allowed syscall is an escape); CPU time is
limited per process, not shared fairly.

Fallbacks (probed once per interpreter; ``isolation`` names the mode and every missing feature
adds a sentence to ``warnings`` in the result):

* ``"namespaces"``: root with util-linux, everything above.
* ``"userns"``: not root, but unprivileged user namespaces work: the same namespaces, mounts and
  ``/proc``, no privilege drop (the program runs with the caller's file permissions).
* ``"process"``: neither works. The program runs in its own session with the rlimits and the
  stripped environment in a 0700 host folder, and a prelude installs an audit hook (PEP 578) that
  refuses socket ``connect``/``bind``/``sendto`` and ``getaddrinfo``. This is a speed bump, not a
  wall (``ctypes`` can bypass audit hooks); ``/tmp``, ``/dev/shm``, IPC and ``/proc`` are the host's.
* No usable cgroup (not writable, controller missing): the memory bound is per process, so the
  tree may hold up to ``memory_mb * max_processes`` (the address-space limit times the process
  limit); the result's ``warnings`` says so.
* No libseccomp, or not root (``"userns"``/``"process"``): no seccomp filter; the program may
  create user namespaces where the kernel allows unprivileged ones (inside them it still owns
  nothing on the host); the result's ``warnings`` says so.
* Mounts not allowed: the work folder is a 0700 host folder, only single files are capped, and
  ``/tmp``, ``/dev/shm``, IPC and ``/proc`` are the host's; the result's ``warnings`` says so.

Status values: ``ok`` (exit code 0), ``error`` (non-zero exit), ``timeout`` (wall clock or CPU
seconds), ``memory`` (``MemoryError``, an allocation failure, or the cgroup's OOM killer),
``killed`` (a signal, or the output cap). Every process the program started is gone when
:func:`run_python` returns.

Choice: the PID-namespace init is ``/bin/sh`` (which also sets up the mounts, as root, before the
privilege drop) running the program as its child, so the program keeps normal signal semantics (a
PID-namespace init ignores signals it has no handler for). A program killed by signal ``n``
therefore reports ``returncode = -n``; an explicit ``exit(128 + n)`` for ``n`` in
:data:`_SIGNALS_SEEN` reads the same.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
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
        warnings: one sentence per isolation feature this machine lacks (empty when none is missing).
    """

    status: Status
    stdout: str
    stderr: str
    returncode: int | None
    wall_time_s: float
    reason: str = ""
    truncated: bool = False
    isolation: str = ""
    warnings: tuple[str, ...] = ()

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


# The init of the namespaces: mounts a size-capped tmpfs over /tmp, /var/tmp and /dev/shm, masks
# /run, copies the program in, then runs it (as a child, so it keeps normal signal semantics).
# Arguments: $1 host folder holding main.py, $2 tmpfs size in KiB, $3 inode cap, $4 owner uid ("" = none).
_INIT_MOUNTS = r"""set -e
base=$1; size=$2; inodes=$3; owner=$4; shift 4
box=$base/box
mount -t tmpfs -o "size=${size}k,nr_inodes=$inodes,mode=0755,nosuid,nodev" icml25-sandbox "$box"
mkdir -m 1777 "$box/tmp" "$box/vartmp" "$box/shm"
mkdir -m 0755 "$box/tmp/.icml25"
mkdir -m 0700 "$box/tmp/work"
cp "$base/main.py" "$box/tmp/.icml25/main.py"
chmod 0644 "$box/tmp/.icml25/main.py"
if [ -n "$owner" ]; then chown "$owner:$owner" "$box/tmp/work"; fi
mount --bind "$box/vartmp" /var/tmp
if [ -d /dev/shm ]; then mount --bind "$box/shm" /dev/shm; fi
mount --bind "$box/tmp" /tmp
if [ -d /run ]; then
  mount -t tmpfs -o size=4k,nr_inodes=16,mode=0755,ro,nosuid,nodev,noexec icml25-run /run
fi
cd /tmp/work
set +e
"$@"; exit $?
"""
_PLAIN_INIT = '"$@"; exit $?'
_INNER_PROGRAM = "/tmp/.icml25/main.py"
_INNER_WORKDIR = "/tmp/work"


@functools.cache
def _private_fs() -> bool:
    """Whether mount, IPC and PID namespaces with a fresh ``/proc`` and a tmpfs work here (probed once)."""
    mode = isolation_mode()
    unshare = shutil.which("unshare")
    if mode == "process" or unshare is None:
        return False
    user = ["--user", "--map-root-user"] if mode == "userns" else []
    cmd = [unshare, *user, "--mount", "--ipc", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
    return _works([*cmd, "/bin/sh", "-c", "mount -t tmpfs -o size=1m icml25-probe /tmp && test -d /proc/1"])


def _own_cgroup(controller: str | None) -> Path | None:
    """The folder of this process's cgroup for ``controller`` (v1), or its unified cgroup (None)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if controller is None and controllers == "":
            for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
                if (root / "cgroup.controllers").exists():
                    return root / rel.lstrip("/")
            return None
        if controller is not None and controller in controllers.split(","):
            return Path("/sys/fs/cgroup") / controller / rel.lstrip("/")
    return None


class _Cgroup:
    """A memory + pids cgroup for one run, nested under the harness's own (v1 or v2)."""

    def __init__(self, name: str, memory_bytes: int, pids: int) -> None:
        self.dirs: list[Path] = []
        self.memory_dir: Path | None = None
        self.version = 0
        self.error = ""
        try:
            self._make_v1(name, memory_bytes, pids)
        except OSError as err:
            self.remove()
            self.error = f"cgroup v1: {err}"
            try:
                self._make_v2(name, memory_bytes, pids)
            except OSError as err2:
                self.remove()
                self.error += f"; cgroup v2: {err2}"

    def _make_v1(self, name: str, memory_bytes: int, pids: int) -> None:
        mem, pid = _own_cgroup("memory"), _own_cgroup("pids")
        if mem is None or pid is None or not (mem / "memory.limit_in_bytes").exists():
            raise OSError("no memory/pids hierarchy")
        for parent in (mem, pid):
            (parent / name).mkdir()
            self.dirs.append(parent / name)
        (mem / name / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # only with swap accounting
            (mem / name / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (pid / name / "pids.max").write_text(str(pids))
        self.memory_dir, self.version = mem / name, 1

    def _make_v2(self, name: str, memory_bytes: int, pids: int) -> None:
        own = _own_cgroup(None)
        if own is None:
            raise OSError("no unified hierarchy")
        (own / name).mkdir()
        self.dirs.append(own / name)
        (own / name / "memory.max").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):
            (own / name / "memory.swap.max").write_text("0")
        (own / name / "pids.max").write_text(str(pids))
        self.memory_dir, self.version = own / name, 2

    @property
    def ok(self) -> bool:
        return self.version > 0

    def procs_files(self) -> list[bytes]:
        return [os.fsencode(d / "cgroup.procs") for d in self.dirs]

    def oom_kills(self) -> int:
        if self.memory_dir is None:
            return 0
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in (self.memory_dir / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def kill_all(self) -> None:
        for _ in range(50):
            found = False
            for d in self.dirs:
                with contextlib.suppress(OSError, ValueError):
                    for line in (d / "cgroup.procs").read_text().split():
                        found = True
                        with contextlib.suppress(OSError):
                            os.kill(int(line), signal.SIGKILL)
            if not found:
                return
            time.sleep(0.01)

    def remove(self) -> None:
        for d in self.dirs:
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.dirs = []


_MASKED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run")


def _under_masked_dir(python: str) -> bool:
    """Whether the interpreter (or its installation) lies where the private mounts would hide it."""
    paths = {os.path.realpath(python), os.path.abspath(python)}
    if python == sys.executable:
        paths |= {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    return any(p == d or p.startswith(d + "/") for p in paths for d in _MASKED_DIRS)


# Syscalls generated code never needs; refused with EPERM (clone3 with ENOSYS, so that libc falls
# back to clone, whose flags a filter can read). Unknown names (another architecture) are skipped.
_SECCOMP_DENY = (
    "add_key",
    "bpf",
    "delete_module",
    "finit_module",
    "fsconfig",
    "fsmount",
    "fsopen",
    "init_module",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "move_mount",
    "open_tree",
    "perf_event_open",
    "pivot_root",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "request_key",
    "setns",
    "swapoff",
    "swapon",
    "umount2",
    "userfaultfd",
)
_CLONE_NEWUSER = 0x10000000


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _ScmpArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


@functools.cache
def _seccomp_program() -> tuple[ctypes.Array[ctypes.c_char], _SockFprog] | str:
    """The seccomp BPF program (built once with libseccomp), or why there is none."""
    name = ctypes.util.find_library("seccomp")
    if name is None:
        return "libseccomp is not installed"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        lib.seccomp_rule_add_array.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.POINTER(_ScmpArgCmp),
        ]
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.seccomp_release.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError) as err:
        return f"libseccomp unusable: {err}"
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    ctx = lib.seccomp_init(allow)
    if not ctx:
        return "seccomp_init failed"
    try:
        failed = []
        for syscall in _SECCOMP_DENY:
            nr = lib.seccomp_syscall_resolve_name(syscall.encode())
            if nr >= 0 and lib.seccomp_rule_add_array(ctx, eperm, nr, 0, None) != 0:
                failed.append(syscall)
        newuser = (_ScmpArgCmp * 1)(
            _ScmpArgCmp(0, 7, _CLONE_NEWUSER, _CLONE_NEWUSER)
        )  # 7: SCMP_CMP_MASKED_EQ
        for syscall in ("unshare", "clone"):
            nr = lib.seccomp_syscall_resolve_name(syscall.encode())
            if nr < 0 or lib.seccomp_rule_add_array(ctx, eperm, nr, 1, newuser) != 0:
                failed.append(syscall)
        nr = lib.seccomp_syscall_resolve_name(b"clone3")
        if nr >= 0 and lib.seccomp_rule_add_array(ctx, enosys, nr, 0, None) != 0:
            failed.append("clone3")
        if failed:
            return f"libseccomp refused rules for {', '.join(failed)}"
        with tempfile.TemporaryFile() as fh:
            if lib.seccomp_export_bpf(ctx, fh.fileno()) != 0:
                return "seccomp_export_bpf failed"
            fh.seek(0)
            raw = fh.read()
    finally:
        lib.seccomp_release(ctx)
    if not raw or len(raw) % 8 or len(raw) // 8 > 4096:
        return "libseccomp exported no usable program"
    code = ctypes.create_string_buffer(raw, len(raw))
    return code, _SockFprog(len(raw) // 8, ctypes.addressof(code))


def _install_seccomp(program: _SockFprog) -> None:
    """In the child before exec: ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, program)`` (root: no NNP)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(22, 2, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


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


def _check_args(
    code: str,
    timeout_s: float,
    memory_mb: int,
    max_processes: int,
    output_limit: int,
    file_mb: int,
    disk_mb: int,
) -> None:
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
    if file_mb < 1:
        raise ValueError(f"file_limit_mb must be at least 1, got {file_mb}")
    if disk_mb < 1:
        raise ValueError(f"disk_limit_mb must be at least 1, got {disk_mb}")


def _write_private(path: str, text: str) -> None:
    """Create ``path`` as a 0600 file (never readable by others, not even for an instant)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def run_python(
    code: str,
    *,
    timeout_s: float,
    memory_mb: int,
    stdin: str | None = None,
    max_processes: int = 16,
    output_limit: int = 1 << 20,
    file_limit_mb: int = 16,
    disk_limit_mb: int = 64,
    python: str | None = None,
) -> ExecutionResult:
    """Run ``code`` as ``python -I main.py`` in the sandbox and return what happened.

    Args:
        code: the program text.
        timeout_s: wall-clock limit in seconds (the CPU limit is ``ceil(timeout_s) + 1``).
        memory_mb: memory of the whole process tree (cgroup; tmpfs files count) and address space of
            each process, in MiB. Without a cgroup only the per-process bound holds (see ``warnings``).
        stdin: text fed to the program's standard input (none: an empty stdin).
        max_processes: processes (threads count too) the program may have at once, itself
            included; the PID-namespace init adds one.
        output_limit: bytes kept from stdout and from stderr; beyond that the program is killed.
        file_limit_mb: largest file the program may write.
        disk_limit_mb: everything the program may write in total (its private ``/tmp``, ``/var/tmp``,
            ``/dev/shm`` and work folder share one tmpfs of this size).
        python: interpreter to run (default: the current one, or the system ``python3`` when the
            current one lies where the unprivileged sandbox user cannot reach it, e.g. under ``/root``).

    Returns:
        An :class:`ExecutionResult`; the harness never raises for anything the program does.
    """
    _check_args(code, timeout_s, memory_mb, max_processes, output_limit, file_limit_mb, disk_limit_mb)
    mode = isolation_mode()
    private = mode != "process" and _private_fs()
    python = sandbox_python(python)
    warnings: list[str] = []
    if private and _under_masked_dir(python):
        private = False
        warnings.append(f"the interpreter {python} lives under a folder the private filesystem hides")
    base = tempfile.mkdtemp(prefix="icml25-sandbox-")  # 0700, ours
    uid: int | None = None
    nproc = max_processes + 1  # + the namespace init
    if mode == "namespaces":
        uid = random.SystemRandom().randrange(*_UID_RANGE)
    if private:
        os.mkdir(os.path.join(base, "box"), 0o700)
        workdir, program_run = _INNER_WORKDIR, _INNER_PROGRAM
    else:
        warnings.append(
            "no private filesystem (mount namespaces unavailable): /tmp, /var/tmp, /dev/shm, IPC and "
            "/proc are the host's, files written there outlive the call, only single files are capped"
        )
        workdir = os.path.join(base, "work")
        os.mkdir(workdir, 0o700)
        program_run = os.path.join(base, "main.py")
        if uid is not None:
            os.chmod(base, 0o711)  # the program may enter base/work and read main.py, not list base
            os.chown(workdir, uid, uid)
    if mode != "namespaces":  # the rlimit counts every process of our own uid
        nproc += _user_process_count(os.getuid())
    program = os.path.join(base, "main.py")
    _write_private(program, (_NET_GUARD if mode == "process" else "") + code)
    if uid is not None and not private:
        os.chmod(program, 0o644)  # the sandbox uid reads it from the host folder
    stdin_path = os.path.join(base, "stdin.txt")
    _write_private(stdin_path, stdin or "")

    inner = [python, "-I", "-B", program_run]
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
        ns = ["--mount", "--ipc", "--mount-proc"] if private else []
        if private:
            init = [
                "/bin/sh",
                "-c",
                _INIT_MOUNTS,
                "sh",
                base,
                str(disk_limit_mb * 1024),
                "16384",
                str(uid or ""),
            ]
        else:
            init = ["/bin/sh", "-c", _PLAIN_INIT, "sh"]
        # /bin/sh is the namespace's init; the program runs as its child with normal signal semantics.
        inner = [unshare, *user, *ns, "--net", "--pid", "--fork", "--kill-child", "--", *init, *inner]
    # pids cgroup: + unshare and the namespace init
    cgroup = _Cgroup(os.path.basename(base), memory_mb * 1024 * 1024, max_processes + 2)
    if not cgroup.ok:
        warnings.append(
            f"memory limit is per process (no usable cgroup: {cgroup.error}): the process tree may hold up "
            f"to memory_mb x max_processes = {memory_mb * max_processes} MiB"
        )
    procs_files = cgroup.procs_files()
    seccomp: _SockFprog | None = None
    if mode == "namespaces":  # installed by root before unshare, which needs no user namespace
        built = _seccomp_program()
        if isinstance(built, str):
            warnings.append(f"no seccomp filter ({built}): new user namespaces and rare syscalls are allowed")
        else:
            seccomp = built[1]
    else:
        warnings.append("no seccomp filter (needs root): new user namespaces and rare syscalls are allowed")
    limits = _limits(timeout_s=timeout_s, memory_mb=memory_mb, nproc=nproc, file_mb=file_limit_mb)

    def preexec() -> None:  # runs in the child between fork and exec
        for path in procs_files:  # join the run's cgroup ("0": the writing process)
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        for which, value in limits:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (value, value))
        if seccomp is not None:
            _install_seccomp(seccomp)

    env = {**_CLEAN_ENV, "HOME": workdir, "TMPDIR": workdir}
    start = time.monotonic()
    try:
        with open(stdin_path, "rb") as stdin_fh:
            proc = subprocess.Popen(
                inner,
                stdin=stdin_fh,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=base if private else workdir,
                env=env,
                start_new_session=True,
                preexec_fn=preexec,
                close_fds=True,
            )
    except (OSError, subprocess.SubprocessError) as start_error:
        cgroup.remove()
        shutil.rmtree(base, ignore_errors=True)
        return ExecutionResult(
            "error",
            "",
            "",
            None,
            0.0,
            f"could not start: {start_error}",
            isolation=mode,
            warnings=tuple(warnings),
        )
    try:
        out, err, truncated, killed_for = _collect(proc, start + timeout_s, output_limit)
    finally:
        _kill_group(proc)
        cgroup.kill_all()
        if uid is not None:
            _kill_uid(uid)
        oom = cgroup.oom_kills()
        cgroup.remove()
        shutil.rmtree(base, ignore_errors=True)
    wall = time.monotonic() - start
    rc = proc.returncode
    if mode in ("namespaces", "userns") and rc is not None and rc > 128 and (rc - 128) in _SIGNALS_SEEN:
        rc = -(rc - 128)  # sh reports a child killed by signal n as 128 + n
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    status, reason = _classify(killed_for, rc, stderr, timeout_s)
    if oom and status in ("error", "killed"):
        status, reason = (
            "memory",
            f"memory limit of the process tree ({memory_mb} MiB): {oom} process(es) killed",
        )
    return ExecutionResult(
        status, stdout, stderr, None if killed_for else rc, wall, reason, truncated, mode, tuple(warnings)
    )


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
