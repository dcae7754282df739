"""The results store: atomic writes, history, latest, corrupt files, unwritable directories."""

from __future__ import annotations

import json
import os

import pytest

from icml25.core.results import ResultsError, ResultStore, atomic_write_text


def test_history_newest_first(toy_check, tmp_path) -> None:
    store = ResultStore(tmp_path)
    first = toy_check.run("tiny", seeds=[0], store=store)
    second = toy_check.run("tiny", seeds=[1], store=store)
    hist = store.history("toy", "tiny")
    assert [h.result.run_id for h in hist] == [second.run_id, first.run_id]
    assert store.latest("toy", "tiny").result.run_id == second.run_id


def test_latest_prefers_largest_scale(toy_check, tmp_path) -> None:
    store = ResultStore(tmp_path)
    toy_check.run("small", seeds=[0], store=store)
    toy_check.run("tiny", seeds=[0], store=store)
    assert store.latest("toy").result.scale == "small"
    assert store.latest("missing") is None


def test_corrupt_result_is_skipped_and_reported(toy_check, tmp_path) -> None:
    store = ResultStore(tmp_path)
    good = toy_check.run("tiny", store=store)
    bad_dir = tmp_path / "toy" / "tiny" / "99999999T999999999999Z-ffffff"
    bad_dir.mkdir()
    (bad_dir / "result.json").write_text("{not json")
    other = tmp_path / "other" / "small" / "20200101T000000000000Z-aaaaaa"
    other.mkdir(parents=True)
    (other / "result.json").write_text(json.dumps({"slug": "other"}))
    assert store.latest("toy", "tiny").result.run_id == good.run_id
    found, problems = store.scan()
    assert [f.result.run_id for f in found] == [good.run_id]
    assert len(problems) == 2 and all("cannot read" in p for p in problems)


def test_atomic_write_replaces_whole_file(tmp_path) -> None:
    path = tmp_path / "a" / "x.json"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two")
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere; covered by the file case")
def test_unwritable_directory_read_only(tmp_path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.raises(ResultsError, match="not writable"):
        ResultStore(ro / "results").ensure_writable()


def test_results_path_that_is_a_file(tmp_path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ResultsError, match="not writable"):
        ResultStore(f).ensure_writable()
