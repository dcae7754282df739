"""The catalog: 38 unique papers matching INDEX.md and the seeds, honest statuses, lazy resolution."""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from icml25.catalog import (
    PAPERS,
    REGISTRY,
    Paper,
    Registry,
    UnknownSlugError,
    get_paper,
    markdown_table,
    resolve,
)
from icml25.core.check import ClaimCheck

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
IMPLEMENTED = [p for p in PAPERS if p.implemented]


def test_thirty_eight_unique_papers() -> None:
    slugs = [p.slug for p in PAPERS]
    assert len(slugs) == 38 and len(set(slugs)) == 38
    assert len(REGISTRY) == 38


@pytest.mark.skipif(not (SHARED / "papers" / "INDEX.md").is_file(), reason="shared/ not beside the checkout")
def test_matches_index_md() -> None:
    text = (SHARED / "papers" / "INDEX.md").read_text()
    rows = re.findall(r"^\| (\w+) \| (\d{3}/\d+) \| (\w+) \|", text, flags=re.M)
    assert [(p.slug, p.seed, p.domain) for p in PAPERS] == rows


@pytest.mark.skipif(not (SHARED / "seeds").is_dir(), reason="shared/ not beside the checkout")
def test_seed_files_and_positions_exist() -> None:
    for p in PAPERS:
        path = SHARED / "seeds" / p.seed_file
        assert path.is_file(), p.slug
        assert p.seed == f"{p.seed_file[:3]}/{p.seed_position}"
        abstracts = [a for a in path.read_text().split("\n\n")[1:] if a.strip()]
        assert p.seed_position <= len(abstracts), p.slug


def test_unknown_slug_suggests_close_matches() -> None:
    with pytest.raises(UnknownSlugError, match="did you mean rfm_grokking"):
        get_paper("rfm_grokkin")
    with pytest.raises(UnknownSlugError, match="icml25 list"):
        get_paper("zzzzzz")


def test_registry_rejects_duplicates() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        Registry([("a", 1), ("a", 2)])


def test_resolve_paths() -> None:
    assert resolve("icml25.catalog:get_paper") is get_paper
    with pytest.raises(ValueError):
        resolve("icml25.catalog")
    with pytest.raises(ImportError):
        resolve("icml25.catalog:nope")


def test_paper_validation() -> None:
    base = dict(
        slug="x",
        title="t",
        domain="theory",
        seed="000/1",
        seed_file="f",
        seed_position=1,
        url="",
        code_url="",
        claim="c",
        baseline="b",
    )
    with pytest.raises(ValueError, match="domain"):
        Paper(**{**base, "domain": "poetry"})
    with pytest.raises(ValueError, match="tags"):
        Paper(**{**base, "tags": ("fast",)})
    with pytest.raises(ValueError, match="snake_case"):
        Paper(**{**base, "slug": "Bad-Slug"})


def test_planned_paper_refuses_to_load() -> None:
    # every paper has landed; a planned entry is made from one to test the refusal
    planned = next((p for p in PAPERS if p.status == "planned"), None)
    if planned is None:
        planned = dataclasses.replace(PAPERS[0], status="planned")
    with pytest.raises(NotImplementedError, match="planned"):
        planned.load_check()


def test_status_is_honest_for_planned_papers() -> None:
    src = ROOT / "src" / "icml25"
    for p in PAPERS:
        folder = src / p.domain / p.slug
        if p.status == "planned":
            assert not (folder / "check.py").exists(), f"{p.slug} has a check but is marked planned"


def test_at_least_one_paper_implemented() -> None:
    assert IMPLEMENTED, "the foundation ships with at least one paper"


@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.slug)
def test_implemented_entry_resolves(paper: Paper) -> None:
    check = paper.load_check()
    assert isinstance(check, ClaimCheck) and check.slug == paper.slug
    for scale in ("tiny", "small", "full"):
        check.config(scale)  # every preset constructs
    assert (ROOT / "tests" / paper.domain / f"test_{paper.slug}.py").is_file()
    module = __import__(paper.module, fromlist=["__doc__"])
    doc = (module.__doc__ or "") + (sys.modules[check.__module__].__doc__ or "")
    assert "ICML 2025" in doc
    title_words = paper.title.split(":")[0].lower()
    assert title_words in " ".join(doc.lower().split()), f"{paper.slug}: docstring should name the paper"


def test_listing_imports_no_paper_code() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from icml25.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['list', '--json', '--results', '/nonexistent']) == 0\n"
        "heavy = [m for m in sys.modules if m.split('.')[1:2] and m.split('.')[1] in "
        "('theory','physics','language','agents','generative','rl','graphs','life','robustness')]\n"
        "assert not heavy, heavy\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_readme_table_in_sync() -> None:
    readme = (ROOT / "README.md").read_text()
    assert markdown_table() in readme, "README table is stale: run `python -m icml25.catalog` and paste it"


def test_catalog_module_is_plain_data() -> None:
    tree = ast.parse((ROOT / "src" / "icml25" / "catalog.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "difflib", "importlib", "collections", "dataclasses", "typing", "sys"}


def test_recorded_small_run_is_parsed_from_every_checked_readme() -> None:
    from icml25.catalog import parse_recorded_run

    line = (
        "**Verdict at scale small: inconclusive** (underpowered: headline x undetermined). Seeds [0, 1]; "
        "wall time 523 s; run 20261205T092557854327Z-77e91d, started 2026-12-05T09:25:57Z, commit f5f27d2."
    )
    rec = parse_recorded_run("text\n" + line)
    assert rec is not None and rec.verdict == "inconclusive" and rec.wall_time_s == 523.0
    assert rec.run_id == "20261205T092557854327Z-77e91d"
    assert parse_recorded_run("no table yet") is None
    for paper in PAPERS:
        if paper.status == "checked":  # a fresh clone orders the main job by these times
            recorded = paper.recorded_small_run()
            assert recorded is not None and recorded.wall_time_s > 0, paper.slug
