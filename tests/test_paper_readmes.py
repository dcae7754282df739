"""Every checked paper has a README.md with the team's sections, and its result table matches results/.

The table between the two marker lines is generated (``icml25 report --sync-readmes``); these
tests say when it is stale. ``results/`` is not under version control, so on a fresh checkout
that has no stored small result for a paper the in-sync test skips that paper.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from icml25.catalog import PAPERS
from icml25.cli import main
from icml25.core.claims import (
    CheckResult,
    Claim,
    Criterion,
    claim_to_json,
    compute_verdict,
    evaluate_criterion,
    summarize_metrics,
)
from icml25.core.results import ResultsError, ResultStore
from icml25.report import (
    RESULT_BEGIN,
    RESULT_END,
    paper_result_table,
    replace_result_block,
    small_result_block,
    sync_paper_readmes,
)

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "icml25"
RESULTS = REPO / "results"
CHECKED = [p for p in PAPERS if p.status == "checked"]

# the sections every paper README has, in this order (others may sit between them)
SECTIONS = (
    "## Paper",
    "## Method",
    "## Use it",
    "## What is implemented",
    "## What is not implemented",
    "## How the check differs from the paper",
    "## Latest small result",
)


def _readme(paper) -> Path:
    return SRC / paper.domain / paper.slug / "README.md"


# -- the READMEs in the repository ------------------------------------------------------------------


@pytest.mark.parametrize("paper", CHECKED, ids=lambda p: p.slug)
def test_checked_paper_has_readme_with_sections(paper) -> None:
    path = _readme(paper)
    assert path.is_file(), f"{paper.slug} is checked but has no {path.relative_to(REPO)}"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# "), f"{path.name} of {paper.slug} must open with a '# ' title line"
    headings = [line.rstrip() for line in text.splitlines() if line.startswith("## ")]
    missing = [s for s in SECTIONS if s not in headings]
    assert not missing, f"{paper.slug}: README lacks the sections {missing} (need {list(SECTIONS)})"
    positions = [headings.index(s) for s in SECTIONS]
    assert positions == sorted(positions), f"{paper.slug}: sections out of order, expected {list(SECTIONS)}"
    assert text.count(RESULT_BEGIN) == 1 and text.count(RESULT_END) == 1, f"{paper.slug}: markers"
    assert text.index("\n## Latest small result") < text.index(RESULT_BEGIN) < text.index(RESULT_END)
    assert paper.url in text, f"{paper.slug}: README must link the paper ({paper.url})"
    if paper.code_url:
        assert paper.code_url in text, f"{paper.slug}: README must link the official code ({paper.code_url})"
    assert not re.search(r"\bthe brief\b|\bbrief's\b", text, re.IGNORECASE)


@pytest.mark.parametrize("paper", CHECKED, ids=lambda p: p.slug)
def test_readme_result_block_matches_results(paper) -> None:
    path = _readme(paper)
    if not path.is_file():
        pytest.fail(f"{paper.slug} is checked but has no README.md")
    text = path.read_text(encoding="utf-8")
    # the table names the run it was made from; it is checked against that run, so a newer local run
    # (the main job before the tests) never fails the suite
    recorded = re.search(r"run (\d{8}T\d{12}Z-[0-9a-f]{6})", _result_block(text))
    if recorded is None:
        pytest.skip(f"{paper.slug}: README has no recorded small run")
    history = ResultStore(RESULTS).history(paper.slug, "small")
    stored = next((s for s in history if s.result.run_id == recorded.group(1)), None)
    if stored is None:
        pytest.skip(f"run {recorded.group(1)} of {paper.slug} is not under results/ (not version-controlled)")
    expected = replace_result_block(text, small_result_block(stored.result, paper.slug), str(path))
    assert text == expected, (
        f"{path.relative_to(REPO)}: the result table differs from its run {stored.result.run_id}; "
        "run `icml25 report --sync-readmes`"
    )


def _result_block(text: str) -> str:
    begin, end = text.find(RESULT_BEGIN), text.find(RESULT_END)
    return text[begin:end] if 0 <= begin < end else ""


# -- the table and the sync, on synthetic results ------------------------------------------------


def _result(slug: str = "toy", run_id: str = "20260101T000000000000Z-abcdef") -> CheckResult:
    claim = Claim(
        statement="ours has lower loss than base",
        source="Tab. 1",
        ours="ours",
        baselines=("base", "ablation"),
        criteria=(
            Criterion("beats_base", arm="ours", metric="loss", op="<", other_arm="base", description="lower"),
            Criterion("fast", arm="ours", metric="time_s", op="<=", threshold=1.0),
            Criterion("smoke", arm="ours", metric="loss", op="<", threshold=9.0, scales=("tiny",)),
        ),
    )
    per_seed = [
        {
            "ours": {"loss": 1.0, "time_s": 2.0, "extra": 5.0},
            "base": {"loss": 2.0},
            "ablation": {"loss": 3.0},
        },
        {
            "ours": {"loss": 1.2, "time_s": 2.0, "extra": 5.0},
            "base": {"loss": 2.2},
            "ablation": {"loss": 3.0},
        },
    ]
    metrics = summarize_metrics(per_seed)
    criteria = tuple(evaluate_criterion(c, metrics) for c in claim.criteria_at("small"))
    return CheckResult(
        slug=slug,
        scale="small",
        seeds=(0, 1),
        claim=claim_to_json(claim),
        metrics=metrics,
        criteria=criteria,
        verdict=compute_verdict(criteria, n_seeds=2, scale="small"),
        config={},
        wall_time_s=12.3,
        environment={"git_commit": "0123456789abcdef0123"},
        started_at="2026-01-01T00:00:00Z",
        run_id=run_id,
    )


def test_paper_result_table_rows() -> None:
    lines = paper_result_table(_result()).splitlines()
    # every declared baseline gets a column (a control read by no criterion too)
    assert lines[0] == "| metric (mean ± sd over seeds) | ours (ours) | base | ablation |"
    assert lines[1] == "|---|---|---|---|"
    assert lines[2].startswith("| loss | 1.1 ± 0.14 | 2.1 ± 0.14 | ")
    assert lines[3].startswith("| time_s | 2 ± 0 | - | ")
    assert not any(line.startswith("| extra") for line in lines)  # no criterion reads it
    columns = "role | condition | value | threshold | result | outcome | interval | smallest effect | meaning"
    assert f"| criterion | {columns} |" in lines
    beats = "supporting | mean(ours.loss) < mean(base.loss) | 1.1 | 2.1 | pass | holds | - | - | lower"
    assert f"| beats_base | {beats} |" in lines
    assert "| fast | supporting | mean(ours.time_s) <= 1 | 2 | 1 | FAIL | fails | - | - |  |" in lines
    assert not any(line.startswith("| smoke") for line in lines)  # tiny-only criterion, not evaluated
    verdict = next(line for line in lines if line.startswith("**Verdict"))
    assert verdict.startswith("**Verdict at scale small: not reproduced** (failed: fast)")
    for part in ("Seeds [0, 1]", "wall time 12 s", "20260101T000000000000Z-abcdef", "2026-01-01T00:00:00Z"):
        assert part in verdict
    assert "commit 0123456789ab." in verdict


def _store_result(results: Path, result: CheckResult) -> None:
    store = ResultStore(results)
    store.commit(result, store.staging_dir(result.slug, result.scale, result.run_id))


def _fake_package(root: Path, paper, body: str = "") -> Path:
    path = root / paper.domain / paper.slug / "README.md"
    path.parent.mkdir(parents=True)
    path.write_text(
        f"# {paper.slug}\n\nintro | kept\n\n## Latest small result\n\n"
        f"{RESULT_BEGIN}\nold table\n{RESULT_END}\n\nafter the table{body}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.skipif(not CHECKED, reason="no checked paper in the catalog")
def test_sync_fills_block_idempotently_and_keeps_outside_text(tmp_path: Path) -> None:
    paper = CHECKED[0]
    results, root = tmp_path / "results", tmp_path / "pkg"
    path = _fake_package(root, paper)
    before = path.read_text(encoding="utf-8")
    _store_result(results, _result(paper.slug, "20260101T000000000000Z-000001"))
    newer = _result(paper.slug, "20260102T000000000000Z-000002")
    _store_result(results, newer)

    assert sync_paper_readmes(results, root) == [path]
    after = path.read_text(encoding="utf-8")
    head, tail = before.split(RESULT_BEGIN)[0], before.split(RESULT_END)[1]
    assert after.startswith(head + RESULT_BEGIN) and after.endswith(RESULT_END + tail)
    assert "old table" not in after
    assert paper_result_table(newer) in after  # the newest run's table
    assert "20260102T000000000000Z-000002" in after and "20260101T000000000000Z-000001" not in after
    assert sync_paper_readmes(results, root) == []
    assert path.read_text(encoding="utf-8") == after


@pytest.mark.skipif(not CHECKED, reason="no checked paper in the catalog")
def test_sync_without_stored_result_says_so(tmp_path: Path) -> None:
    paper = CHECKED[0]
    (tmp_path / "results").mkdir()
    path = _fake_package(tmp_path / "pkg", paper)
    assert sync_paper_readmes(tmp_path / "results", tmp_path / "pkg") == [path]
    text = path.read_text(encoding="utf-8")
    assert "No small-scale result is stored yet" in text and f"icml25 check {paper.slug}" in text
    assert sync_paper_readmes(tmp_path / "results", tmp_path / "pkg") == []


@pytest.mark.skipif(len(CHECKED) < 2, reason="needs two checked papers")
def test_sync_keeps_a_committed_table_without_a_stored_run_and_honours_slugs(tmp_path: Path) -> None:
    first, second = CHECKED[0], CHECKED[1]
    results, root = tmp_path / "results", tmp_path / "pkg"
    first_path, second_path = _fake_package(root, first), _fake_package(root, second)
    _store_result(results, _result(first.slug))
    _store_result(results, _result(second.slug))
    assert sorted(sync_paper_readmes(results, root)) == sorted([first_path, second_path])
    synced = first_path.read_text(encoding="utf-8")
    # a clone without that paper's stored runs: its table stays
    shutil.rmtree(results / first.slug)
    assert sync_paper_readmes(results, root) == []
    assert first_path.read_text(encoding="utf-8") == synced
    # only the named paper is touched
    newer = _result(second.slug, "20260103T000000000000Z-000003")
    _store_result(results, newer)
    assert sync_paper_readmes(results, root, slugs=[first.slug]) == []
    assert "20260103T000000000000Z-000003" not in second_path.read_text(encoding="utf-8")
    assert sync_paper_readmes(results, root, slugs=[second.slug]) == [second_path]
    with pytest.raises(ValueError, match="slugs: not checked papers"):
        sync_paper_readmes(results, root, slugs=["no_such_paper"])


@pytest.mark.skipif(not CHECKED, reason="no checked paper in the catalog")
def test_sync_errors_leave_files_alone(tmp_path: Path) -> None:
    paper = CHECKED[0]
    path = _fake_package(tmp_path / "pkg", paper)
    before = path.read_text(encoding="utf-8")
    with pytest.raises(ResultsError, match="no results directory"):
        sync_paper_readmes(tmp_path / "missing", tmp_path / "pkg")
    assert path.read_text(encoding="utf-8") == before
    (tmp_path / "results").mkdir()
    path.write_text(before.replace(RESULT_END, ""), encoding="utf-8")
    with pytest.raises(ValueError, match="small-result:end"):
        sync_paper_readmes(tmp_path / "results", tmp_path / "pkg")


def test_replace_result_block_rejects_misordered_markers() -> None:
    with pytest.raises(ValueError, match="comes before"):
        replace_result_block(f"{RESULT_END}\n{RESULT_BEGIN}\n", "x")


@pytest.mark.skipif(not CHECKED, reason="no checked paper in the catalog")
def test_cli_report_sync_readmes(tmp_path: Path, monkeypatch, capsys) -> None:
    import icml25.report

    paper = CHECKED[0]
    path = _fake_package(tmp_path / "pkg", paper)
    _store_result(tmp_path / "results", _result(paper.slug))
    monkeypatch.setattr(icml25.report, "_PACKAGE_DIR", tmp_path / "pkg")
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--sync-readmes", "--results", str(tmp_path / "results")]) == 0
    assert f"updated {path}" in capsys.readouterr().out
    assert main(["report", "--sync-readmes", "--results", str(tmp_path / "results")]) == 0
    assert "already in sync" in capsys.readouterr().out
    assert not (tmp_path / "report").exists()  # the sync writes no report
