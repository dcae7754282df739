"""The runner: seeds, aggregation, verdict from criteria, storage, failure paths."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from icml25.core.check import FIGURE_FAILURE_NOTE, ClaimCheck, NeedsResource, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion, VerdictKind
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


def test_a_failing_figure_keeps_the_result_and_says_why(toy_check, tmp_path, monkeypatch) -> None:
    def broken(self, config, outcomes, ctx):
        raise KeyError("clean_leaked")  # a figure reading a metric the run could not measure

    monkeypatch.setattr(type(toy_check), "make_figures", broken)
    store = ResultStore(tmp_path)
    r = toy_check.run("small", n_seeds=2, store=store)
    assert r.verdict.kind is VerdictKind.REPRODUCED
    assert any(n.startswith(FIGURE_FAILURE_NOTE) and "clean_leaked" in n for n in r.notes)
    assert store.latest("toy", "small") is not None


def test_fewer_seeds_than_the_claim_needs_is_inconclusive(toy_check, monkeypatch) -> None:
    monkeypatch.setattr(type(toy_check), "claim", dataclasses.replace(toy_check.claim, min_seeds=3))
    r = toy_check.run("small", n_seeds=1, overrides={"effect": -1.0})
    assert r.verdict.kind is VerdictKind.INCONCLUSIVE and "needs at least 3" in r.verdict.reason


def test_run_seed_must_return_outcome(toy_check, monkeypatch) -> None:
    monkeypatch.setattr(type(toy_check), "run_seed", lambda *a: {"ours": {}})
    with pytest.raises(TypeError, match="SeedOutcome"):
        toy_check.run("tiny")


def test_seed_outcome_is_frozen() -> None:
    o = SeedOutcome(metrics={})
    with pytest.raises(AttributeError):
        o.metrics = {}  # type: ignore[misc]


# -- criteria that depend on the config (ClaimCheck.claim_for) -----------------------------------


@dataclass(frozen=True)
class SizedConfig:
    size: int = 32


def sized_claim(size: int) -> Claim:
    """Criteria whose metric names carry the problem size, as many papers' checks do."""
    return Claim(
        statement="ours solves the size-n problem more accurately than the baseline",
        source="toy",
        ours="ours",
        baselines=("baseline",),
        criteria=(
            Criterion("beats", arm="ours", metric=f"acc_n{size}", op=">", other_arm="baseline"),
            Criterion("high", arm="ours", metric=f"acc_n{size}", op=">=", threshold=0.9),
        ),
    )


class StaticSizedCheck(ClaimCheck[SizedConfig]):
    """Declares its criteria once, for the default size: an override of ``size`` breaks them."""

    slug = "sized"
    claim = sized_claim(32)
    presets = {"tiny": SizedConfig(8), "small": SizedConfig(), "full": SizedConfig(1024)}

    def run_seed(self, config: SizedConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        name = f"acc_n{config.size}"
        return SeedOutcome(metrics={"ours": {name: 0.95}, "baseline": {name: 0.5}})


class SizedCheck(StaticSizedCheck):
    """Builds its criteria from the config, so ``--set size=...`` keeps them evaluable."""

    def claim_for(self, config: SizedConfig) -> Claim:
        return sized_claim(config.size)


def test_claim_for_keeps_an_overridden_size_judged() -> None:
    r = SizedCheck().run("small", n_seeds=1, overrides={"size": 64})
    assert r.verdict.kind is VerdictKind.REPRODUCED, r.verdict.reason
    assert all(c.passed for c in r.criteria)
    assert {c["metric"] for c in r.claim["criteria"]} == {"acc_n64"}  # the stored claim is the one judged
    assert not any("lacks metric" in n for n in r.notes)


def test_criterion_on_a_metric_no_arm_reported_is_named_in_the_notes() -> None:
    r = StaticSizedCheck().run("small", n_seeds=1, overrides={"size": 64})
    assert r.verdict.kind is VerdictKind.INCONCLUSIVE
    notes = " | ".join(r.notes)
    for name in ("beats", "high"):
        assert f"criterion {name!r} lacks metric ours.acc_n32: no arm reported 'acc_n32'" in notes
    assert "reported: acc_n64" in notes


def test_criterion_on_a_metric_one_arm_skipped_is_named_in_the_notes(monkeypatch) -> None:
    def baseline_skipped(self, config, seed, ctx):
        return SeedOutcome(metrics={"ours": {"acc_n32": 0.95}, "baseline": {}})

    monkeypatch.setattr(SizedCheck, "run_seed", baseline_skipped)
    r = SizedCheck().run("small", n_seeds=1)
    assert r.verdict.kind is VerdictKind.INCONCLUSIVE
    assert "criterion 'beats' lacks metric baseline.acc_n32: 'baseline' did not report it" in r.notes
    assert not any("'high'" in n for n in r.notes)


def test_our_setup_names_the_settings_a_run_changed(toy_check) -> None:
    plain = toy_check.run("small", n_seeds=1)
    assert "changed" not in plain.claim.get("setup_notes", "")
    r = toy_check.run("small", n_seeds=1, overrides={"effect": 2.5})
    assert "This run changed the small preset: effect=2.5." in r.claim["setup_notes"]


def test_begin_and_end_run_frame_every_run_even_a_failed_one(toy_check, monkeypatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(toy_check, "begin_run", lambda config: calls.append(f"begin n={config.n}"))
    monkeypatch.setattr(toy_check, "end_run", lambda: calls.append("end"))
    original = toy_check.run_seed

    def run_seed(config, seed, ctx):
        calls.append(f"seed {seed}")
        return original(config, seed, ctx)

    monkeypatch.setattr(toy_check, "run_seed", run_seed)
    toy_check.run("small", n_seeds=2)
    assert calls == ["begin n=200", "seed 0", "seed 1", "end"]

    def broken(config, seed, ctx):
        raise RuntimeError("seed failed")

    calls.clear()
    monkeypatch.setattr(toy_check, "run_seed", broken)
    with pytest.raises(RuntimeError, match="seed failed"):
        toy_check.run("small", n_seeds=2)
    assert calls == ["begin n=200", "end"]


def test_planned_seeds_are_known_from_begin_run_to_the_end_of_the_run(toy_check, monkeypatch) -> None:
    seen: list[tuple[str, tuple[int, ...]]] = []
    monkeypatch.setattr(
        toy_check, "begin_run", lambda config: seen.append(("begin", toy_check.planned_seeds))
    )
    monkeypatch.setattr(toy_check, "end_run", lambda: seen.append(("end", toy_check.planned_seeds)))
    original = toy_check.run_seed

    def run_seed(config, seed, ctx):
        seen.append((f"seed {seed}", toy_check.planned_seeds))
        return original(config, seed, ctx)

    monkeypatch.setattr(toy_check, "run_seed", run_seed)
    assert toy_check.planned_seeds == ()
    toy_check.run("small", seeds=[3, 1])
    assert seen == [("begin", (3, 1)), ("seed 3", (3, 1)), ("seed 1", (3, 1)), ("end", (3, 1))]
    assert toy_check.planned_seeds == ()

    def broken(config, seed, ctx):
        raise RuntimeError("seed failed")

    monkeypatch.setattr(toy_check, "run_seed", broken)
    with pytest.raises(RuntimeError, match="seed failed"):
        toy_check.run("small", n_seeds=2)
    assert toy_check.planned_seeds == ()


# -- the optional medium scale (one GPU, where small cannot pass its gates) ----------------------


class MediumSizedCheck(SizedCheck):
    presets = {**SizedCheck.presets, "medium": SizedConfig(256)}


def test_medium_is_optional_and_judged_like_small() -> None:
    from icml25.core.config import ConfigError

    assert SizedCheck().scales() == ("tiny", "small", "full")
    with pytest.raises(ConfigError, match="sized has no medium preset; its scales are tiny, small, full"):
        SizedCheck().config("medium")
    assert MediumSizedCheck().scales() == ("tiny", "small", "medium", "full")
    r = MediumSizedCheck().run("medium", n_seeds=1)
    assert r.scale == "medium" and r.verdict.kind is VerdictKind.REPRODUCED, r.verdict.reason
    assert {c.name for c in r.criteria} == {"beats", "high"}  # criteria apply at medium by default


def test_a_check_must_have_the_required_presets() -> None:
    class NoFull(SizedCheck):
        presets = {"tiny": SizedConfig(8), "small": SizedConfig(), "medium": SizedConfig(64)}

    with pytest.raises(TypeError, match="lacks presets for \\['full'\\]"):
        NoFull().config("small")
