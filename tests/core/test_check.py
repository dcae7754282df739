"""The runner: seeds, aggregation, verdict from criteria, storage, failure paths."""

from __future__ import annotations

import pytest

from icml25.core.check import NeedsResource, SeedOutcome, to_jsonable
from icml25.core.claims import VerdictKind
from icml25.core.config import ConfigError
from icml25.core.results import ResultStore


def test_run_aggregates_seeds_and_computes_verdict(toy_check) -> None:
    r = toy_check.run("small", n_seeds=3)
    assert r.seeds == (0, 1, 2)
    assert len(r.metrics["ours"]["mean"].values) == 3
    assert [c.name for c in r.criteria] == ["beats_baseline", "positive"]
    assert r.verdict.kind is VerdictKind.REPRODUCED
    assert r.config == {"n": 200, "effect": 1.0}


def test_failing_effect_is_not_reproduced(toy_check) -> None:
    r = toy_check.run("small", n_seeds=2, overrides={"effect": -1.0})
    assert r.verdict.kind is VerdictKind.NOT_REPRODUCED


def test_tiny_uses_tiny_criteria_only(toy_check) -> None:
    r = toy_check.run("tiny")
    assert [c.name for c in r.criteria] == ["beats_baseline"]


def test_same_seed_same_numbers(toy_check) -> None:
    a, b = toy_check.run("tiny", seeds=[7]), toy_check.run("tiny", seeds=[7])
    assert a.metrics == b.metrics


def test_bad_scale_and_seeds(toy_check) -> None:
    with pytest.raises(ConfigError, match="scale"):
        toy_check.run("medium")
    with pytest.raises(ConfigError, match="seeds"):
        toy_check.run("tiny", n_seeds=0)
    with pytest.raises(ConfigError, match="distinct"):
        toy_check.run("tiny", seeds=[1, 1])


def test_store_commits_result_and_figures(toy_check, tmp_path) -> None:
    store = ResultStore(tmp_path)
    r = toy_check.run("tiny", store=store)
    stored = store.latest("toy", "tiny")
    assert stored is not None and stored.result == r
    assert (stored.run_dir / "means.png").is_file()
    assert not any(p.name.startswith(".tmp") for p in (tmp_path / "toy" / "tiny").iterdir())


def test_interrupted_run_leaves_nothing(toy_check, tmp_path, monkeypatch) -> None:
    store = ResultStore(tmp_path)

    def boom(*args, **kwargs):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(type(toy_check), "run_seed", boom)
    with pytest.raises(RuntimeError):
        toy_check.run("tiny", store=store)
    assert store.latest("toy") is None
    assert list((tmp_path / "toy" / "tiny").iterdir()) == []


def test_needs_resource_gives_needs_verdict(toy_check, monkeypatch) -> None:
    def needs(*args, **kwargs):
        raise NeedsResource("gpu", "40 GB of activations")

    monkeypatch.setattr(type(toy_check), "run_seed", needs)
    r = toy_check.run("small")
    assert str(r.verdict) == "needs gpu" and r.seeds == ()


def test_run_seed_must_return_outcome(toy_check, monkeypatch) -> None:
    monkeypatch.setattr(type(toy_check), "run_seed", lambda *a: {"ours": {}})
    with pytest.raises(TypeError, match="SeedOutcome"):
        toy_check.run("tiny")


def test_to_jsonable() -> None:
    import numpy as np

    assert to_jsonable({"a": np.float32(1.5), "b": (np.arange(2),), "c": float("nan")}) == {
        "a": 1.5,
        "b": [[0, 1]],
        "c": None,
    }
    with pytest.raises(TypeError):
        to_jsonable({"x": object()})


def test_seed_outcome_is_frozen() -> None:
    o = SeedOutcome(metrics={})
    with pytest.raises(AttributeError):
        o.metrics = {}  # type: ignore[misc]
