"""The built wheel carries what a non-editable install needs: the paper READMEs (``icml25 show``)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_ships_the_readmes_and_show_works_from_it(tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheel"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if build.returncode != 0 and "setuptools" in build.stderr:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip()[-200:]}")
    assert build.returncode == 0, build.stderr
    (wheel,) = wheel_dir.glob("icml25-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "icml25/life/h_tuning/README.md" in names and "icml25/py.typed" in names
    # install the wheel alone into a folder and run `icml25 show` from it (dependencies from this venv)
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = (
        "import icml25, sys; from icml25.cli import main; "
        f"assert icml25.__file__.startswith({str(target)!r}), icml25.__file__; "
        "sys.exit(main(['show', 'h_tuning', '--results', '/nonexistent']))"
    )
    show = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert show.returncode == 0, show.stderr[-2000:]
    assert "# H-Tuning" in show.stdout  # the README, read from the installed wheel
