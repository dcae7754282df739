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


# -- issue 16: a results folder is untrusted input -------------------------------------------------


def _edit(run_dir, **changes) -> None:
    path = run_dir / "result.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _run_dir(store: ResultStore, result) -> object:
    return store.root / result.slug / result.scale / result.run_id


@pytest.mark.parametrize(
    "field, value",
    [
        ("slug", "../../x"),
        ("slug", "/etc/x"),
        ("slug", "other"),
        ("scale", "small"),
        ("run_id", "../../../y"),
    ],
)
def test_misplaced_slug_scale_or_run_id_is_skipped(toy_check, tmp_path, field, value) -> None:
    store = ResultStore(tmp_path)
    run_dir = _run_dir(store, toy_check.run("tiny", seeds=[0], store=store))
    _edit(run_dir, **{field: value})
    found, problems = store.scan()
    assert found == [] and len(problems) == 1
    assert str(run_dir / "result.json") in problems[0] and field in problems[0]
    assert store.latest("toy") is None


def test_unknown_slug_is_skipped_when_the_catalog_is_given(toy_check, tmp_path) -> None:
    toy_check.run("tiny", seeds=[0], store=ResultStore(tmp_path))
    found, problems = ResultStore(tmp_path, known_slugs={"rfm_grokking"}).scan()
    assert found == [] and "not a paper of the catalog" in problems[0]
    assert len(ResultStore(tmp_path).scan()[0]) == 1


def test_edited_verdict_is_recomputed_and_flagged(toy_check, tmp_path) -> None:
    store = ResultStore(tmp_path)
    result = toy_check.run("small", seeds=[0, 1, 2], store=store)
    run_dir = _run_dir(store, result)
    data = json.loads((run_dir / "result.json").read_text())
    for c in data["criteria"]:
        c.update(value=-1.0, threshold=0.0, op=">", passed=True)  # every criterion fails on its numbers
    _edit(run_dir, criteria=data["criteria"], verdict="reproduced")
    stored = store.latest("toy", "small")
    assert stored is not None
    assert str(stored.result.verdict) == "not reproduced"
    assert all(c.passed is False for c in stored.result.criteria)
    assert any("disagrees" in w and str(run_dir) in w for w in stored.warnings)
    clean = toy_check.run("small", seeds=[0, 1, 2], store=store)
    assert store.load(_run_dir(store, clean)).warnings == ()


def test_fifo_devzero_symlink_and_deep_json_never_hang_or_crash(toy_check, tmp_path) -> None:
    store = ResultStore(tmp_path)
    good = toy_check.run("tiny", seeds=[0], store=store)
    base = tmp_path / "toy" / "tiny"
    fifo, zero, deep = (base / f"2099010{i}T000000000000Z-00000{i}" for i in range(3))
    for d in (fifo, zero, deep):
        d.mkdir()
    os.mkfifo(fifo / "result.json")
    os.symlink("/dev/zero", zero / "result.json")
    (deep / "result.json").write_text("[" * 200_000 + "]" * 200_000)
    found, problems = store.scan()
    assert [f.result.run_id for f in found] == [good.run_id]
    assert len(problems) == 3
    for d in (fifo, zero, deep):
        assert any(str(d / "result.json") in p for p in problems)
    assert store.latest("toy", "tiny").result.run_id == good.run_id


def test_symlinked_run_folder_is_not_followed(toy_check, tmp_path) -> None:
    outside = tmp_path / "outside"
    ResultStore(outside).ensure_writable()
    result = toy_check.run("tiny", seeds=[0], store=ResultStore(outside))
    store = ResultStore(tmp_path / "res")
    (store.root / "toy" / "tiny").mkdir(parents=True)
    os.symlink(outside / "toy" / "tiny" / result.run_id, store.root / "toy" / "tiny" / result.run_id)
    assert store.scan() == ([], [])


@pytest.mark.parametrize("seeds", [[1.7], ["3"], [True], [0, 1.5]])
def test_stored_seeds_must_be_integers(toy_check, tmp_path, seeds) -> None:
    store = ResultStore(tmp_path)
    run_dir = _run_dir(store, toy_check.run("tiny", seeds=[0], store=store))
    _edit(run_dir, seeds=seeds)
    found, problems = store.scan()
    assert found == [] and "seeds" in problems[0]


def test_stale_staging_folders_are_cleaned_on_the_next_write(toy_check, tmp_path) -> None:
    store = ResultStore(tmp_path)
    base = tmp_path / "toy" / "tiny"
    old, fresh = base / ".tmp-old", base / ".tmp-fresh"
    for d in (old, fresh):
        d.mkdir(parents=True)
        (d / "figure.png").write_bytes(b"x")
    week_ago = os.path.getmtime(old) - 7 * 24 * 3600
    os.utime(old, (week_ago, week_ago))
    toy_check.run("tiny", seeds=[0], store=store)
    assert not old.exists() and fresh.exists()


def test_interrupted_commit_leaves_no_staging_folder(toy_check, tmp_path, monkeypatch) -> None:
    import icml25.core.results as results

    store = ResultStore(tmp_path)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(results.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        toy_check.run("tiny", seeds=[0], store=store)
    monkeypatch.undo()
    assert list((tmp_path / "toy" / "tiny").iterdir()) == []


def test_unsafe_names_cannot_stage(tmp_path) -> None:
    with pytest.raises(ValueError, match="safe"):
        ResultStore(tmp_path).staging_dir("../x", "tiny", "r")
