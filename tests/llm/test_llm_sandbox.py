"""The sandbox survives hostile programs: every test here runs one, with short limits."""

from __future__ import annotations

import contextlib
import os
import socket
import textwrap
import threading
from pathlib import Path

import pytest

from icml25.llm.sandbox import ExecutionResult, isolation_mode, run_python

FAST = dict(timeout_s=2.0, memory_mb=256)
ISOLATED = isolation_mode() in ("namespaces", "userns")
ROOT_DROP = isolation_mode() == "namespaces"


def run(code: str, **kw: object) -> ExecutionResult:
    args = {**FAST, **kw}
    return run_python(textwrap.dedent(code), **args)  # type: ignore[arg-type]


def _uid_processes_alive(marker: str) -> list[int]:
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    alive.append(int(entry.name))
            except OSError:
                continue
    return alive


def test_ok_stdout_stdin_and_returncode() -> None:
    r = run("import sys\nprint(sys.stdin.read().upper())", stdin="hello")
    assert r.status == "ok" and r.ok and r.returncode == 0
    assert r.stdout.strip() == "HELLO"
    assert r.wall_time_s >= 0 and r.isolation == isolation_mode()


def test_error_status_and_reason() -> None:
    r = run("raise ValueError('boom')")
    assert r.status == "error" and r.returncode == 1
    assert "ValueError: boom" in r.reason
    r = run("import sys; sys.exit(7)")
    assert r.status == "error" and r.returncode == 7


def test_syntax_error_is_an_error() -> None:
    r = run("def f(:\n  pass")
    assert r.status == "error" and "SyntaxError" in r.stderr


def test_infinite_loop_times_out() -> None:
    r = run("while True:\n    pass", timeout_s=0.5)
    assert r.status == "timeout"
    assert r.wall_time_s < 5


def test_sleeping_program_times_out_on_wall_clock() -> None:
    r = run("import time\ntime.sleep(60)", timeout_s=0.5)
    assert r.status == "timeout" and r.returncode is None


def test_memory_bomb() -> None:
    r = run("x = bytearray(8 * 1024**3)")
    assert r.status == "memory"
    r = run("a = []\nwhile True:\n    a.append(' ' * 10**7)")
    assert r.status == "memory"


def test_fork_bomb_is_contained() -> None:
    r = run(
        """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """,
        timeout_s=1.0,
        max_processes=8,
    )
    assert r.status in ("timeout", "error", "killed")
    assert not _uid_processes_alive("icml25-sandbox-")


def test_orphaned_children_are_killed() -> None:
    r = run(
        """
        import os, subprocess, sys, time
        for _ in range(2):
            subprocess.Popen(["sleep", "61.5"], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
        print("parent leaves")
        """
    )
    assert r.status == "ok" and "parent leaves" in r.stdout
    assert not _uid_processes_alive("61.5")


def test_output_flood_is_capped() -> None:
    r = run("while True:\n    print('x' * 4096)", output_limit=10_000)
    assert r.status == "killed" and r.truncated
    assert len(r.stdout.encode()) <= 10_000
    r = run("import sys\nwhile True:\n    sys.stderr.write('e' * 4096)", output_limit=5_000)
    assert r.status == "killed" and len(r.stderr) <= 5_000


def test_cannot_kill_the_harness() -> None:
    me = os.getpid()
    r = run(
        f"""
        import os, signal
        for target in ({me}, os.getppid(), -1, 0):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError as err:
                print("refused", target, type(err).__name__)
        print("done")
        """
    )
    assert os.getpid() == me  # we are still here
    assert r.status in ("ok", "killed")


def test_environment_secrets_are_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICML25_TEST_SECRET", "hunter2")
    r = run(
        f"""
        import os
        print(os.environ.get("ICML25_TEST_SECRET"))
        try:
            print(open("/proc/{os.getpid()}/environ", "rb").read())
        except OSError as err:
            print("denied", type(err).__name__)
        """
    )
    assert r.status == "ok"
    assert "hunter2" not in r.stdout
    assert r.stdout.splitlines()[0] == "None"


@pytest.mark.skipif(not ROOT_DROP, reason="writes are only denied when privileges can be dropped")
def test_cannot_write_outside_its_directory(tmp_path: Path) -> None:
    target = tmp_path / "protected"
    target.mkdir()
    os.chmod(tmp_path, 0o755)
    before = Path(__file__).read_bytes()
    r = run(
        f"""
        import os
        open("mine.txt", "w").write("ok")
        print(os.listdir("."))
        for path in ({str(target / "x.txt")!r}, {str(Path(__file__).resolve())!r}):
            try:
                open(path, "a").write("pwned")
                print("WROTE", path)
            except OSError as err:
                print("denied", type(err).__name__)
        """
    )
    assert r.status == "ok", r.stderr
    assert "WROTE" not in r.stdout and "mine.txt" in r.stdout
    assert not (target / "x.txt").exists()
    assert Path(__file__).read_bytes() == before


def test_network_connect_fails() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(3)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            accepted.append(server.accept())

    t = threading.Thread(target=accept)
    t.start()
    r = run(
        f"""
        import socket
        for host in ("127.0.0.1", "1.1.1.1"):
            try:
                socket.create_connection((host, {port}), timeout=0.5)
                print("CONNECTED", host)
            except OSError as err:
                print("blocked", host, type(err).__name__)
        """
    )
    t.join()
    server.close()
    assert "CONNECTED" not in r.stdout
    assert not accepted


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        run_python("pass", timeout_s=0, memory_mb=256)
    with pytest.raises(ValueError, match="memory_mb"):
        run_python("pass", timeout_s=1, memory_mb=1)
    with pytest.raises(ValueError, match="code"):
        run_python(b"pass", timeout_s=1, memory_mb=256)  # type: ignore[arg-type]


@pytest.mark.skipif(not ISOLATED, reason="needs namespaces")
def test_runs_in_fresh_namespaces() -> None:
    r = run("import os\nprint(os.getpid() < 10, os.getuid())")
    first, uid = r.stdout.split()
    assert first == "True"
    if ROOT_DROP:
        assert int(uid) != 0


def test_process_fallback_mode_still_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where namespaces are unavailable: rlimits, stripped env, and the audit-hook network guard."""
    import icml25.llm.sandbox as sandbox

    monkeypatch.setattr(sandbox, "isolation_mode", lambda: "process")
    monkeypatch.setenv("ICML25_TEST_SECRET", "hunter2")
    r = run(
        """
        import os, socket
        print(os.environ.get("ICML25_TEST_SECRET"))
        try:
            socket.create_connection(("127.0.0.1", 9), timeout=0.5)
        except OSError as err:
            print("blocked", type(err).__name__)
        """
    )
    assert r.isolation == "process" and r.status == "ok"
    assert r.stdout.split() == ["None", "blocked", "PermissionError"]
    assert run("while True:\n    pass", timeout_s=0.5).status == "timeout"
    assert run("x = bytearray(8 * 1024**3)").status == "memory"
