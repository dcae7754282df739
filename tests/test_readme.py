"""The README's usage snippet is the contract: it must run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_snippet_runs(capsys) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert snippets, "README has no python snippet"
    for code in snippets:
        exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    accs = [float(x) for x in re.findall(r"[\d.]+", printed)]
    assert accs[0] <= 0.05 and max(accs) > accs[0]


def test_readme_names_two_commands() -> None:
    text = README.read_text()
    assert "bash scripts/main.sh" in text and "bash scripts/test.sh" in text
