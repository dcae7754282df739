"""Every module of an implemented paper cites that paper; no module points at planning notes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from icml25.catalog import PAPERS

SRC = Path(__file__).resolve().parents[1] / "src" / "icml25"
IMPLEMENTED = [p for p in PAPERS if p.status != "planned"]


def _paper_id(url: str) -> str:
    """The arXiv number or OpenReview id in a paper's url (what a citation must contain)."""
    match = re.search(r"(\d{4}\.\d{4,5})|id=([\w-]+)", url)
    assert match, url
    return match.group(1) or match.group(2)


@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.slug)
def test_every_module_cites_its_paper(paper) -> None:
    folder = SRC / paper.domain / paper.slug
    ident = _paper_id(paper.url)
    missing = []
    for path in sorted(folder.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if ident not in doc and paper.title.split(":")[0].lower() not in " ".join(doc.split()).lower():
            missing.append(path.name)
    assert not missing, f"{paper.slug}: docstrings citing neither {ident} nor the title: {missing}"


def test_no_module_refers_to_the_planning_brief() -> None:
    hits = [
        f"{path.relative_to(SRC)}:{n}"
        for path in SRC.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bthe brief\b|\bbrief's\b", line, re.IGNORECASE)
    ]
    assert not hits, hits
