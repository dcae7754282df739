"""The check protocol: criteria, metric summaries, the verdict function, JSON round trip."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml25.core.claims import (
    CheckResult,
    Claim,
    Criterion,
    CriterionResult,
    MetricSummary,
    Verdict,
    VerdictKind,
    claim_to_json,
    compute_verdict,
    evaluate_criterion,
    paired_criterion,
    summarize_metrics,
    to_jsonable,
)


def _metrics(**arms: dict[str, list[float]]) -> dict[str, dict[str, MetricSummary]]:
    return {arm: {m: MetricSummary.of(v) for m, v in ms.items()} for arm, ms in arms.items()}


def _result(passed: bool | None, name: str = "c") -> CriterionResult:
    return CriterionResult(
        name=name, description="", formula="", value=1.0, threshold=0.0, op=">", passed=passed
    )


class TestCriterion:
    def test_threshold_comparison(self) -> None:
        c = Criterion("acc", arm="ours", metric="acc", op=">=", threshold=0.9)
        assert evaluate_criterion(c, _metrics(ours={"acc": [0.95, 0.91]})).passed is True
        assert evaluate_criterion(c, _metrics(ours={"acc": [0.95, 0.80]})).passed is False  # mean 0.875

    def test_reduce_min_is_worst_seed_for_ge(self) -> None:
        c = Criterion("acc", arm="ours", metric="acc", op=">=", threshold=0.9, reduce="min")
        r = evaluate_criterion(c, _metrics(ours={"acc": [0.99, 0.89, 0.99]}))
        assert r.passed is False and r.value == pytest.approx(0.89)

    def test_other_arm_with_factor(self) -> None:
        c = Criterion("bpd", arm="ours", metric="bpd", op="<", other_arm="base", factor=0.9)
        m = _metrics(ours={"bpd": [1.7]}, base={"bpd": [2.0]})
        r = evaluate_criterion(c, m)
        assert r.passed is True and r.threshold == pytest.approx(1.8)
        m = _metrics(ours={"bpd": [1.85]}, base={"bpd": [2.0]})
        assert evaluate_criterion(c, m).passed is False

    def test_other_metric(self) -> None:
        c = Criterion("x", arm="a", metric="m1", op="<", other_arm="b", other_metric="m2")
        assert evaluate_criterion(c, _metrics(a={"m1": [1.0]}, b={"m2": [2.0]})).passed is True

    def test_missing_metric_is_not_evaluable(self) -> None:
        c = Criterion("acc", arm="ours", metric="acc", op=">", threshold=0.5)
        r = evaluate_criterion(c, _metrics(ours={"loss": [0.1]}))
        assert r.passed is None and "not measured" in r.reason

    def test_nan_is_not_evaluable(self) -> None:
        c = Criterion("acc", arm="ours", metric="acc", op=">", threshold=0.5)
        assert evaluate_criterion(c, _metrics(ours={"acc": [float("nan"), 1.0]})).passed is None

    @pytest.mark.parametrize(
        "kwargs",
        [
            dict(op="=>", threshold=1.0),  # bad operator
            dict(op=">"),  # neither threshold nor other arm
            dict(op=">", threshold=1.0, other_arm="b"),  # both
            dict(op=">", threshold=1.0, reduce="sum"),
            dict(op=">", threshold=1.0, scales=("huge",)),
        ],
    )
    def test_malformed_criteria_raise(self, kwargs: dict) -> None:
        with pytest.raises(ValueError):
            Criterion("c", arm="a", metric="m", **kwargs)

    def test_describe(self) -> None:
        c = Criterion("c", arm="a", metric="m", op="<", other_arm="b", factor=0.5)
        assert c.describe() == "mean(a.m) < 0.5 x mean(b.m)"


class TestClaim:
    def test_unknown_arm_rejected(self) -> None:
        with pytest.raises(ValueError, match="arm"):
            Claim(
                "s",
                "Fig 1",
                ours="a",
                baselines=("b",),
                criteria=(Criterion("c", arm="zzz", metric="m", op=">", threshold=0),),
            )

    def test_duplicate_criterion_names_rejected(self) -> None:
        c = Criterion("c", arm="a", metric="m", op=">", threshold=0)
        with pytest.raises(ValueError, match="unique"):
            Claim("s", "Fig 1", ours="a", baselines=(), criteria=(c, c))

    def test_criteria_at_scale(self) -> None:
        tiny = Criterion("t", arm="a", metric="m", op=">", threshold=0, scales=("tiny",))
        small = Criterion("s", arm="a", metric="m", op=">", threshold=0)
        claim = Claim("s", "Fig 1", ours="a", baselines=(), criteria=(tiny, small))
        assert [c.name for c in claim.criteria_at("tiny")] == ["t"]
        assert [c.name for c in claim.criteria_at("small")] == ["s"]
        assert claim.headline_criterion().name == "s"  # the default headline is judged at small

    def test_timed_metrics_match_names_and_patterns(self) -> None:
        c = Criterion("c", arm="a", metric="m", op=">", threshold=0)
        claim = Claim(
            "s", "Fig 1", ours="a", baselines=(), criteria=(c,), timed_metrics=("wall", "total_s_*")
        )
        assert claim.is_timed("wall") and claim.is_timed("total_s_257")
        assert not claim.is_timed("m") and not claim.is_timed("wall_x") and not claim.is_timed("total_s")


class TestVerdict:
    def test_all_pass_is_reproduced(self) -> None:
        v = compute_verdict([_result(True), _result(True, "d")], n_seeds=2)
        assert v.kind is VerdictKind.REPRODUCED and v.reproduced

    def test_any_fail_is_not_reproduced(self) -> None:
        v = compute_verdict([_result(True), _result(False, "bad")], n_seeds=3)
        assert v.kind is VerdictKind.NOT_REPRODUCED and "bad" in v.reason

    def test_failure_beats_unknown(self) -> None:
        v = compute_verdict([_result(None), _result(False, "bad")], n_seeds=3)
        assert v.kind is VerdictKind.NOT_REPRODUCED

    def test_unknown_is_inconclusive(self) -> None:
        assert (
            compute_verdict([_result(True), _result(None, "u")], n_seeds=3).kind is VerdictKind.INCONCLUSIVE
        )

    def test_too_few_seeds_is_inconclusive(self) -> None:
        v = compute_verdict([_result(True)], n_seeds=1, min_seeds=3)
        assert v.kind is VerdictKind.INCONCLUSIVE and "seed" in v.reason

    def test_too_few_seeds_is_inconclusive_even_when_a_criterion_fails(self) -> None:
        v = compute_verdict([_result(True), _result(False, "bad")], n_seeds=1, min_seeds=2)
        assert v.kind is VerdictKind.INCONCLUSIVE
        assert "needs at least 2" in v.reason and "bad" in v.reason

    def test_no_criteria_is_inconclusive(self) -> None:
        assert compute_verdict([], n_seeds=3).kind is VerdictKind.INCONCLUSIVE

    def test_missing_resource_wins(self) -> None:
        v = compute_verdict([_result(True)], n_seeds=3, missing_resource="gpu")
        assert str(v) == "needs gpu" and not v.reproduced

    def test_tiny_never_judges_the_claim(self) -> None:
        ok = compute_verdict([_result(True)], n_seeds=3, scale="tiny")
        bad = compute_verdict([_result(False, "smoke")], n_seeds=3, scale="tiny")
        assert ok.kind is VerdictKind.INCONCLUSIVE and "smoke criteria hold" in ok.reason
        assert bad.kind is VerdictKind.INCONCLUSIVE and "not met: smoke" in bad.reason
        with pytest.raises(ValueError, match="scale"):
            compute_verdict([_result(True)], n_seeds=1, scale="huge")

    def test_needs_without_resource_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="resource"):
            Verdict.parse("needs ")

    @pytest.mark.parametrize("text", ["reproduced", "not reproduced", "inconclusive", "needs llm endpoint"])
    def test_parse_round_trip(self, text: str) -> None:
        assert str(Verdict.parse(text)) == text

    def test_parse_rejects_unknown(self) -> None:
        with pytest.raises(ValueError):
            Verdict.parse("great success")


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=8))
def test_metric_summary_bounds(values: list[float]) -> None:
    s = MetricSummary.of(values)
    assert s.min <= s.mean + 1e-9 and s.mean <= s.max + 1e-9
    assert s.std >= 0 and (len(values) > 1 or s.std == 0)
    assert s.reduced("min") == min(values) and s.reduced("max") == max(values)


def test_summarize_metrics_collects_per_seed() -> None:
    per_seed = [{"a": {"x": 1.0, "y": 2.0}}, {"a": {"x": 3.0}, "b": {"x": 0.0}}]
    out = summarize_metrics(per_seed)
    assert out["a"]["x"].values == (1.0, 3.0) and out["a"]["x"].mean == 2.0
    assert out["a"]["y"].values == (2.0,) and out["b"]["x"].values == (0.0,)


def test_metric_summary_nan_propagates() -> None:
    assert math.isnan(MetricSummary.of([1.0, float("inf")]).mean)


def test_check_result_json_round_trip() -> None:
    crit = Criterion("c", arm="a", metric="m", op=">", threshold=0.5, description="m is big")
    claim = Claim("s", "Fig 1", ours="a", baselines=("b",), criteria=(crit,))
    metrics = _metrics(a={"m": [0.6, 0.7]}, b={"m": [0.1, 0.2]})
    results = (evaluate_criterion(crit, metrics),)
    r = CheckResult(
        slug="x",
        scale="small",
        seeds=(0, 1),
        claim=claim_to_json(claim),
        metrics=metrics,
        criteria=results,
        verdict=compute_verdict(results, n_seeds=2),
        config={"n": 3},
        wall_time_s=1.5,
        environment={"python": "3"},
        started_at="now",
        run_id="r1",
    )
    back = CheckResult.from_json(r.to_json())
    assert back == r


def test_check_result_from_malformed_json_raises_value_error() -> None:
    with pytest.raises(ValueError, match="malformed"):
        CheckResult.from_json({"slug": "x"})


def _stored_result() -> CheckResult:
    crit = Criterion("c", arm="a", metric="m", op=">", threshold=0.5)
    claim = Claim("s", "Fig 1", ours="a", baselines=("b",), criteria=(crit,))
    metrics = _metrics(a={"m": [0.6, float("nan")]}, b={"m": [0.1]})
    results = (evaluate_criterion(crit, metrics),)
    return CheckResult(
        slug="x",
        scale="small",
        seeds=(0, 1),
        claim=claim_to_json(claim),
        metrics=metrics,
        criteria=results,
        verdict=compute_verdict(results, n_seeds=2),
        config={},
        wall_time_s=1.0,
        environment={},
        started_at="now",
        run_id="r",
    )


def test_nan_is_stored_as_null_in_strict_json() -> None:
    import json

    data = _stored_result().to_json()
    text = json.dumps(data, allow_nan=False)  # raises on NaN
    back = CheckResult.from_json(json.loads(text))
    assert math.isnan(back.metrics["a"]["m"].mean) and back.metrics["a"]["m"].values[0] == 0.6


@pytest.mark.parametrize(
    "path, value",
    [
        (("claim",), {}),
        (("claim", "baselines"), 5),
        (("criteria", 0, "value"), "abc"),
        (("criteria", 0, "passed"), "yes"),
        (("metrics", "a", "m", "mean"), "1.0"),
        (("figures",), [{"file": "/etc/passwd", "caption": "x"}]),
        (("figures",), [{"file": "../up.png", "caption": "x"}]),
        (("seeds",), "01"),
    ],
)
def test_from_json_rejects_wrong_types(path: tuple, value: object) -> None:
    import copy

    data = copy.deepcopy(_stored_result().to_json())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError, match="malformed"):
        CheckResult.from_json(data)


@pytest.mark.parametrize("name", ["fig.png", "a-b_c.png"])
def test_figure_ref_accepts_plain_png_names(name: str) -> None:
    from icml25.core.claims import FigureRef

    assert FigureRef(name, "c").file == name


# -- to_jsonable: the one converter to strict JSON ------------------------------------------------


def test_to_jsonable_numpy_scalars_and_arrays() -> None:
    import numpy as np

    out = to_jsonable(
        {
            "a": np.float32(1.5),
            "b": (np.arange(2),),
            "i": np.int64(3),
            "t": np.bool_(True),
            "f": np.float64(2),
        }
    )
    assert out == {"a": 1.5, "b": [[0, 1]], "i": 3, "t": True, "f": 2.0}
    assert type(out["i"]) is int and type(out["t"]) is bool and type(out["f"]) is float
    assert to_jsonable(np.array([[1.0, np.nan], [np.inf, -np.inf]])) == [[1.0, None], [None, None]]


def test_to_jsonable_non_finite_nested_tuples_paths_and_keys() -> None:
    from pathlib import Path

    data = {"nan": float("nan"), "inf": math.inf, "deep": ((1, (2.0, -math.inf)), [Path("a/b")]), 3: "x"}
    out = to_jsonable(data)
    assert out == {"nan": None, "inf": None, "deep": [[1, [2.0, None]], ["a/b"]], "3": "x"}
    json.dumps(out, allow_nan=False)  # strict JSON


def test_to_jsonable_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    w = torch.tensor([1.0, float("nan")], requires_grad=True)
    assert to_jsonable({"w": w, "s": torch.tensor(2), "h": torch.ones(2, dtype=torch.bfloat16)}) == {
        "w": [1.0, None],
        "s": 2,
        "h": [1.0, 1.0],
    }


@pytest.mark.parametrize("bad", [object(), {1, 2}, {"x": [object()]}])
def test_to_jsonable_rejects_what_json_cannot_hold(bad: object) -> None:
    import numpy as np

    with pytest.raises(TypeError, match="cannot store"):
        to_jsonable(bad)
    with pytest.raises(TypeError, match="cannot store"):
        to_jsonable(np.array([bad], dtype=object))


def test_there_is_one_json_converter() -> None:
    import icml25.core.check as check
    import icml25.core.claims as claims

    assert not hasattr(claims, "json_safe")
    assert "to_jsonable" not in check.__all__ and check.to_jsonable is claims.to_jsonable


def test_headline_baseline_must_report_the_headline_metric() -> None:
    crit = Criterion("wins", arm="ours", metric="cells_won_frac", op=">=", threshold=0.5)
    kw = dict(statement="s", source="x", ours="ours", baselines=("base",), criteria=(crit,))
    with pytest.raises(ValueError, match="like with like|same quantity"):
        Claim(**kw, headline_baseline="base.mean_log_err")  # type: ignore[arg-type]
    assert Claim(**kw, headline_baseline="base.cells_won_frac").headline_baseline  # type: ignore[arg-type]


def test_paired_criterion_is_the_keyword_criterion() -> None:
    short = paired_criterion("wins", "ours", "acc", ">", "base", 0.05, "half the gap", description="d")
    full = Criterion(
        "wins",
        arm="ours",
        metric="acc",
        op=">",
        other_arm="base",
        smallest_effect=0.05,
        effect_source="half the gap",
        description="d",
    )
    assert short == full and short.paired
    with pytest.raises(ValueError, match="effect_source"):
        paired_criterion("wins", "ours", "acc", ">", "base", 0.05, " ")
