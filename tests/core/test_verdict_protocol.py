"""Gates, roles, paired criteria and the headline-first verdict (core.claims, core.check, core.arms)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np
import pytest

from icml25.core.arms import Arm, ArmsCheck, run_arms
from icml25.core.check import ClaimCheck, SeedOutcome
from icml25.core.claims import (
    CheckResult,
    Claim,
    Criterion,
    CriterionResult,
    MetricSummary,
    VerdictKind,
    compute_verdict,
    evaluate_criterion,
    rejudge,
)
from icml25.core.results import ResultStore


def _paired(name: str = "beats", **kw) -> Criterion:
    args = dict(
        arm="ours",
        metric="acc",
        op=">",
        other_arm="base",
        smallest_effect=0.05,
        effect_source="paper: +5 points",
    )
    args.update(kw)
    return Criterion(name, **args)  # type: ignore[arg-type]


def _gate(name: str = "learns", **kw) -> Criterion:
    args = dict(arm="base", metric="acc", op=">", other_arm="constant", factor=1.0)
    args.update(kw)
    return Criterion(name, **args)  # type: ignore[arg-type]


def _claim(**kw) -> Claim:
    args = dict(
        statement="s",
        source="x",
        ours="ours",
        baselines=("base",),
        references=("constant",),
        criteria=(_paired(),),
        gates=(_gate(),),
    )
    args.update(kw)
    return Claim(**args)  # type: ignore[arg-type]


def _r(
    name: str, passed: bool | None, role: str = "supporting", outcome: str | None = None, **kw
) -> CriterionResult:
    if outcome is None:
        outcome = {True: "holds", False: "fails", None: "undetermined"}[passed]
    return CriterionResult(
        name=name,
        description="",
        formula="",
        value=1.0,
        threshold=0.0,
        op=">",
        passed=passed,
        outcome=outcome,
        role=role,
        **kw,
    )


class TestDeclarations:
    def test_smallest_effect_needs_its_source_and_an_other_arm(self) -> None:
        with pytest.raises(ValueError, match="effect_source"):
            Criterion("c", arm="a", metric="m", op=">", other_arm="b", smallest_effect=0.1)
        with pytest.raises(ValueError, match="arm-vs-arm"):
            Criterion("c", arm="a", metric="m", op=">", threshold=0.0, smallest_effect=0.1, effect_source="x")
        with pytest.raises(ValueError, match="positive"):
            Criterion(
                "c", arm="a", metric="m", op=">", other_arm="b", smallest_effect=-1.0, effect_source="x"
            )
        with pytest.raises(ValueError, match="margin"):
            Criterion("c", arm="a", metric="m", op=">=", other_arm="b", comparison="non_inferiority")

    def test_references_are_never_baselines_and_floors_are_gates(self) -> None:
        with pytest.raises(ValueError, match="both"):
            _claim(references=("base",))
        with pytest.raises(ValueError, match="gate"):
            _claim(criteria=(_paired(other_arm="constant"),))
        with pytest.raises(ValueError, match="unique"):
            _claim(gates=(_gate("beats"),))
        with pytest.raises(ValueError, match="needs"):
            _claim(criteria=(_paired(needs="a gpu"),))

    def test_roles(self) -> None:
        claim = _claim(criteria=(_paired(), _paired("second")), headline="beats")
        assert claim.role_of("beats") == "headline"
        assert claim.role_of("second") == "supporting"
        assert claim.role_of("learns") == "gate"
        assert claim.arms == ("ours", "base", "constant")


def _summaries(**arms: dict[str, list[float]]) -> dict[str, dict[str, MetricSummary]]:
    return {a: {m: MetricSummary.of(v) for m, v in ms.items()} for a, ms in arms.items()}


class TestEvaluate:
    def test_paired_over_seeds(self) -> None:
        m = _summaries(ours={"acc": [0.80, 0.82, 0.81]}, base={"acc": [0.70, 0.71, 0.70]})
        r = evaluate_criterion(_paired(), m)
        assert r.outcome == "holds" and r.passed is True
        assert r.interval is not None and r.interval[0] > 0
        assert "paired t" in r.interval_text

    def test_paired_over_items_beats_seeds_alone(self) -> None:
        rng = np.random.default_rng(0)
        base = [rng.binomial(1, 0.6, 2000).astype(float) for _ in range(2)]
        ours = [np.where(rng.random(2000) < 0.1, 1.0, b) for b in base]  # ~+4 points
        m = _summaries(ours={"acc": [x.mean() for x in ours]}, base={"acc": [x.mean() for x in base]})
        r = evaluate_criterion(
            _paired(smallest_effect=0.02), m, items={"ours": {"acc": ours}, "base": {"acc": base}}
        )
        assert "cluster bootstrap" in r.interval_text and "2000 items" in r.interval_text
        assert r.outcome == "holds"

    def test_one_seed_without_items_is_undetermined(self) -> None:
        r = evaluate_criterion(_paired(), _summaries(ours={"acc": [0.9]}, base={"acc": [0.1]}))
        assert r.outcome == "undetermined" and r.passed is None and r.interval is None

    def test_rejudge_recomputes_from_stored_interval(self) -> None:
        r = evaluate_criterion(_paired(), _summaries(ours={"acc": [0.8, 0.82]}, base={"acc": [0.7, 0.71]}))
        tampered = dataclasses.replace(r, passed=False, outcome="fails")
        assert rejudge(tampered).passed is r.passed and rejudge(tampered).outcome == r.outcome


def _stored(crits: tuple[CriterionResult, ...], **claim_extra) -> CheckResult:
    """A small-scale result of ``crits`` as a check would store it (three seeds, no metrics)."""
    claim = {"statement": "s", "source": "x", "ours": "ours", "headline": "h", "baselines": ["base"]}
    return CheckResult(
        slug="h_tuning",
        scale="small",
        seeds=(0, 1, 2),
        claim={**claim, "criteria": [], **claim_extra},
        metrics={},
        criteria=crits,
        verdict=compute_verdict(crits, n_seeds=3),
        config={},
        wall_time_s=1.0,
        environment={},
        started_at="2026-01-01T00:00:00Z",
        run_id=ResultStore.new_run_id(),
    )


class TestVerdict:
    def test_failed_gate_is_inconclusive_never_not_reproduced(self) -> None:
        v = compute_verdict([_r("g", False, "gate"), _r("h", False, "headline")], n_seeds=3)
        assert v.kind is VerdictKind.INCONCLUSIVE and "gate" in v.reason and "g: 1" in v.reason

    def test_gate_with_a_resource_gives_needs(self) -> None:
        v = compute_verdict(
            [_r("g", False, "gate", needs="a larger language model"), _r("h", True, "headline")], n_seeds=3
        )
        assert v.kind is VerdictKind.NEEDS and v.resource == "a larger language model"

    def test_headline_first(self) -> None:
        head = _r(
            "h",
            True,
            "headline",
            interval=(0.1, 0.3),
            interval_text="+0.2, 95 % CI [+0.1, +0.3]",
            smallest_effect=0.05,
        )
        v = compute_verdict([_r("g", True, "gate"), head, _r("s1", True), _r("s2", False)], n_seeds=3)
        assert v.kind is VerdictKind.NOT_REPRODUCED
        assert v.reason.startswith("headline h holds (+0.2, 95 % CI [+0.1, +0.3]")
        assert "1 of 2 supporting hold" in v.reason and "fails: s2" in v.reason

    def test_undetermined_headline_is_underpowered(self) -> None:
        head = _r(
            "h",
            None,
            "headline",
            interval=(-0.1, 0.3),
            interval_text="iv",
            smallest_effect=0.05,
            resolve_factor=4.0,
        )
        v = compute_verdict([head, _r("s", False)], n_seeds=3)
        assert v.kind is VerdictKind.INCONCLUSIVE and v.reason.startswith("underpowered")
        assert "4.0x" in v.reason

    def test_failing_headline_is_not_reproduced(self) -> None:
        v = compute_verdict([_r("g", True, "gate"), _r("h", False, "headline"), _r("s", True)], n_seeds=3)
        assert v.kind is VerdictKind.NOT_REPRODUCED

    def test_all_hold(self) -> None:
        v = compute_verdict([_r("g", True, "gate"), _r("h", True, "headline"), _r("s", True)], n_seeds=3)
        assert v.kind is VerdictKind.REPRODUCED and "1 of 1 supporting hold" in v.reason

    def test_scoped_gate_sets_aside_only_what_it_guards(self) -> None:
        llm_gate = _r("llm_can", False, "gate", needs="a larger language model", guards=("llm_beats",))
        rows = [
            _r("g", True, "gate"),
            llm_gate,
            _r("h", True, "headline"),
            _r("s", True),
            _r("llm_beats", False),
        ]
        v = compute_verdict(rows, n_seeds=3)
        # without the scope the failed gate would close everything; with it the rest decides
        assert v.kind is VerdictKind.REPRODUCED
        assert "llm_beats not judged (llm_can" in v.reason and "needs a larger language model" in v.reason
        assert "1 of 1 supporting hold" in v.reason
        unscoped = dataclasses.replace(llm_gate, guards=())
        assert compute_verdict([*rows[:1], unscoped, *rows[2:]], n_seeds=3).kind is VerdictKind.NEEDS

    def test_passing_scoped_gate_lets_its_criteria_decide(self) -> None:
        rows = [
            _r("llm_can", True, "gate", guards=("llm_beats",)),
            _r("h", True, "headline"),
            _r("llm_beats", False),
        ]
        v = compute_verdict(rows, n_seeds=3)
        assert v.kind is VerdictKind.NOT_REPRODUCED and "fails: llm_beats" in v.reason

    def test_scoped_gate_is_declared_on_gates_and_never_guards_the_headline(self) -> None:
        extra = _paired("llm_beats", other_arm="base")
        ok = _claim(criteria=(_paired(), extra), gates=(_gate(), _gate("llm_can", guards=("llm_beats",))))
        assert ok.gates[1].guards == ("llm_beats",)
        with pytest.raises(ValueError, match="guards the headline"):
            _claim(criteria=(_paired(), extra), gates=(_gate("llm_can", guards=("beats",)),))
        with pytest.raises(ValueError, match="not criteria"):
            _claim(gates=(_gate("llm_can", guards=("nope",)),))
        with pytest.raises(ValueError, match="only a gate can guard"):
            _claim(criteria=(_paired(), _paired("other", guards=("beats",))))
        with pytest.raises(ValueError, match="tuple of distinct"):
            _gate("llm_can", guards="beats")

    def test_guards_survive_the_stored_result(self) -> None:
        crits = (
            _r("llm_can", False, "gate", guards=("llm_beats",)),
            _r("h", True, "headline"),
            _r("llm_beats", False),
        )
        result = _stored(crits)
        data = json.loads(json.dumps(result.to_json()))
        assert data["gates"][0]["guards"] == ["llm_beats"]
        back = CheckResult.from_json(data)
        assert back.criteria[0].guards == ("llm_beats",)
        assert compute_verdict(back.criteria, n_seeds=3).kind is VerdictKind.REPRODUCED

    def test_stored_result_with_failed_gate_is_never_shown_as_not_reproduced(self, tmp_path) -> None:
        store = ResultStore(tmp_path)
        crits = (
            dataclasses.replace(_r("g", False, "gate"), value=0.4, threshold=0.5),
            dataclasses.replace(_r("h", False, "headline"), value=0.4, threshold=0.5),
        )
        result = _stored(crits, references=["constant"])
        data = result.to_json()
        data["verdict"] = "not reproduced"  # a tampered or stale verdict
        assert data["gates"][0]["passed"] is False and data["references"] == ["constant"]
        run_dir = store.staging_dir("h_tuning", "small", result.run_id)
        loaded = CheckResult.from_json(json.loads(json.dumps(data)))
        store.commit(loaded, run_dir)
        back = store.latest("h_tuning", "small")
        assert back is not None and str(back.result.verdict) == "inconclusive"


@dataclass(frozen=True)
class _Cfg:
    n: int = 400
    effect: float = 0.15


class _Toy(ArmsCheck[_Cfg]):
    """Ours predicts a label right with p = 0.6 + effect, the baseline with 0.6, the constant 0.5."""

    slug = "toy"
    claim = Claim(
        statement="ours beats base",
        source="toy",
        ours="ours",
        baselines=("base",),
        references=("constant",),
        criteria=(_paired("beats", smallest_effect=0.05),),
        gates=(_gate("base_learns", threshold=None),),
    )
    presets = {"tiny": _Cfg(), "small": _Cfg(), "full": _Cfg()}
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def make_data(self, config, seed, ctx):
        rng = np.random.default_rng(seed)
        return {"u": rng.random(config.n), "u_ours": rng.random(config.n)}

    def arms(self, config):
        def arm(name, p, reference=False):
            return Arm(
                name,
                fit=lambda data, setting, seed, earlier: p + setting.get("bonus", 0.0) * (name != "constant"),
                validation_loss=lambda data, model: -model,
                test_items=lambda data, model: {
                    "acc": (data["u_ours" if name == "ours" else "u"] < model).astype(float)
                },
                sweep=({"bonus": 0.0}, {"bonus": 0.02}) if not reference else ({},),
                reference=reference,
            )

        return (arm("ours", 0.6 + config.effect), arm("base", 0.6), arm("constant", 0.5, True))


class TestArmsCheck:
    def test_sweep_is_chosen_on_validation_for_every_arm(self) -> None:
        runs = run_arms(_Toy().arms(_Cfg()), _Toy().make_data(_Cfg(), 0, None), seed=0)
        assert runs["ours"].setting == {"bonus": 0.02} and runs["base"].setting_index == 1
        assert runs["constant"].setting == {}

    def test_runner_pairs_items_gates_and_verdict(self) -> None:
        result = _Toy().run("small", seeds=[0, 1, 2])
        crit = {c.name: c for c in result.criteria}
        assert crit["base_learns"].role == "gate" and crit["base_learns"].passed is True
        assert crit["beats"].role == "headline" and crit["beats"].outcome == "holds"
        assert "cluster bootstrap" in crit["beats"].interval_text
        assert result.verdict.kind is VerdictKind.REPRODUCED
        assert "constant" in result.metrics and result.metrics["ours"]["acc"].mean > 0.7
        assert {f.file for f in result.figures} >= {"arms.png", "paired_intervals.png"}

    def test_no_effect_is_not_reproduced_at_large_n(self) -> None:
        result = _Toy().run("small", seeds=[0, 1, 2], overrides={"effect": 0.0, "n": 20000})
        assert result.verdict.kind is VerdictKind.NOT_REPRODUCED

    def test_no_effect_is_underpowered_at_small_n(self) -> None:
        result = _Toy().run("small", seeds=[0, 1], overrides={"effect": 0.0, "n": 30})
        assert result.verdict.kind is VerdictKind.INCONCLUSIVE and "underpowered" in result.verdict.reason

    def test_gate_failure_blocks_the_verdict(self) -> None:
        class Broken(_Toy):
            def arms(self, config):
                ours, base, const = super().arms(config)
                return (ours, dataclasses.replace(base, fit=lambda *a: 0.5), const)

        result = Broken().run("small", seeds=[0, 1, 2])
        assert result.verdict.kind is VerdictKind.INCONCLUSIVE and "base_learns" in result.verdict.reason


class TestItemsOnPlainCheck:
    def test_metric_filled_from_items(self) -> None:
        class Plain(ClaimCheck[_Cfg]):
            slug = "plain"
            claim = _claim()
            presets = {"tiny": _Cfg(), "small": _Cfg(), "full": _Cfg()}

            def run_seed(self, config, seed, ctx):
                rng = np.random.default_rng(seed)
                return SeedOutcome(
                    metrics={},
                    items={
                        "ours": {"acc": rng.binomial(1, 0.9, 500)},
                        "base": {"acc": rng.binomial(1, 0.6, 500)},
                        "constant": {"acc": np.full(500, 0.5)},
                    },
                )

        result = Plain().run("small", seeds=[0, 1])
        assert result.metrics["ours"]["acc"].mean == pytest.approx(0.9, abs=0.05)
        assert result.verdict.kind is VerdictKind.REPRODUCED


def test_model_requests_are_logged_beside_the_result(tmp_path) -> None:
    from icml25.core.samples import SAMPLES_FILE
    from icml25.llm.cache import CachedChatModel
    from icml25.llm.chat import ScriptedChatModel

    class Asks(ClaimCheck[_Cfg]):
        slug = "asks"
        claim = _claim()
        presets = {"tiny": _Cfg(), "small": _Cfg(), "full": _Cfg()}

        def run_seed(self, config, seed, ctx):
            backend = ScriptedChatModel(lambda messages, cfg, i: f"answer {seed}")
            model = CachedChatModel(backend, tmp_path / f"cache{seed}.sqlite")  # logged once, not twice
            reply = model.chat([{"role": "user", "content": "2+2?"}])[0]
            return SeedOutcome(metrics={"ours": {"acc": float(reply == f"answer {seed}")}})

    store = ResultStore(tmp_path / "results")
    result = Asks().run("tiny", seeds=[0, 1], store=store)
    run_dir = store.latest("asks", "tiny")
    assert run_dir is not None
    lines = [json.loads(x) for x in (run_dir.run_dir / SAMPLES_FILE).read_text().splitlines()]
    assert [(x["seed"], x["replies"]) for x in lines] == [(0, ["answer 0"]), (1, ["answer 1"])]
    assert lines[0]["messages"] == [{"role": "user", "content": "2+2?"}] and lines[0]["model"] == "scripted"
    assert any(SAMPLES_FILE in n for n in result.notes)


def test_unpaired_measurements_are_not_evaluable_not_a_crash() -> None:
    m = _summaries(ours={"acc": [0.8, 0.82, 0.81]}, base={"acc": [0.7, 0.71]})  # a seed missing
    r = evaluate_criterion(_paired(), m)
    assert r.passed is None and r.outcome == "n/a" and "cannot pair" in r.reason


@pytest.mark.parametrize(
    ("op", "interval", "expected"),
    [
        (">", (0.01, 0.025), True),  # real, but the whole interval is short of delta = 0.05
        (">", (0.01, 0.08), False),  # could still reach delta
        ("<", (-0.025, -0.01), True),  # the same in the other direction
        (">", (-0.01, 0.02), False),  # undetermined, not holds
    ],
)
def test_a_holds_below_the_smallest_effect_is_said_beside_the_outcome(op, interval, expected) -> None:
    from icml25.core.stats import Interval, judge
    from icml25.report import _criteria_table

    outcome = judge(Interval(sum(interval) / 2, interval[0], interval[1], 0.95, "paired t", 3), op, 0.05)
    c = CriterionResult(
        name="gain",
        description="",
        formula="",
        value=None,
        threshold=None,
        op=op,
        passed={"holds": True, "fails": False}.get(outcome),
        outcome=outcome,
        interval=interval,
        interval_text="x",
        smallest_effect=0.05,
    )
    assert c.below_smallest_effect is expected
    assert ("below the smallest effect" in c.summary()) is expected
    noninf = dataclasses.replace(c, comparison="non_inferiority")
    assert not noninf.below_smallest_effect
    result = type("R", (), {"criteria": [c]})()
    row = _criteria_table(result).rows[0]  # type: ignore[arg-type]
    assert ("whole interval below the smallest effect" in row[6]) is expected
