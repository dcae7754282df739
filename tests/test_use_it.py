"""Every checked paper's README has a "## Use it" section whose Python example runs as written.

The example is the library's contract with a researcher (as in lucidrains' ``test_readme``): the
method on the user's own data or model, at tiny sizes, in seconds, with no download and no claim
check. Each runs in a fresh namespace in its own subprocess, so no example leaks state into another.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from icml25.catalog import PAPERS

SRC = Path(__file__).resolve().parents[1] / "src" / "icml25"
CHECKED = [p for p in PAPERS if p.status == "checked"]
# one thread everywhere (torch through ICML25_THREADS, BLAS and OpenMP directly): small examples run
# fastest that way, and their times do not depend on what else shares the machine
ONE_THREAD = {
    "ICML25_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def use_it_code(readme: str) -> str:
    """The Python block(s) of the README's "## Use it" section, joined."""
    match = re.search(r"^## Use it\n(.*?)(?=^## )", readme, flags=re.S | re.M)
    if match is None:
        return ""
    return "\n".join(re.findall(r"```python\n(.*?)```", match.group(1), flags=re.S))


def test_use_it_code_is_read_from_its_section_only() -> None:
    text = (
        "## Method\n```python\nx = 0\n```\n## Use it\nText.\n```python\ny = 1\n```\n## What is implemented\n"
    )
    assert use_it_code(text).strip() == "y = 1"
    assert use_it_code("## Method\n```python\nx = 0\n```\n") == ""


@pytest.mark.parametrize("paper", CHECKED, ids=lambda p: p.slug)
def test_use_it_example_runs(paper, tmp_path: Path) -> None:
    readme = (SRC / paper.domain / paper.slug / "README.md").read_text(encoding="utf-8")
    code = use_it_code(readme)
    assert code.strip(), f"{paper.slug}: README has no '## Use it' section with a ```python example"
    assert "check" not in re.findall(r"import (\w+)", code) and ".check import" not in code, (
        f"{paper.slug}: the example uses the library, not the claim check"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, **ONE_THREAD},
    )
    assert proc.returncode == 0, f"{paper.slug}: the README example failed:\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), f"{paper.slug}: the example should print what it computed"
