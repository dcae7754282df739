"""The report's lead forest plot, its verdicts table and the verdict it shows past a failed gate."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from icml25.core.claims import (
    CheckResult,
    Claim,
    Criterion,
    CriterionResult,
    Verdict,
    claim_to_json,
    compute_verdict,
    evaluate_criterion,
    summarize_metrics,
)
from icml25.core.results import ResultStore
from icml25.report import (
    POINT_NOTE,
    VERDICT_HEADER,
    ForestRow,
    _cell_html,
    displayed_verdict,
    draw_forest_plot,
    forest_row,
    forest_rows,
    paper_result_table,
    reference_floor,
    verdict_row,
    write_report,
)

RUN_ID = "20260101T000000000000Z-abcdef"


def _claim(
    *,
    op: str = ">",
    smallest_effect: float | None = 0.02,
    comparison: str = "superiority",
    gates: tuple[Criterion, ...] = (),
    references: tuple[str, ...] = ("constant", "untrained"),
    supporting: tuple[Criterion, ...] = (),
) -> Claim:
    extra = {} if smallest_effect is None else {"smallest_effect": smallest_effect, "effect_source": "test"}
    head = Criterion(
        "beats_base", arm="ours", metric="acc", op=op, other_arm="base", comparison=comparison, **extra
    )  # type: ignore[arg-type]
    return Claim(
        statement="ours beats base",
        source="Tab. 1",
        ours="ours",
        baselines=("base", "ablation"),
        criteria=(head, *supporting),
        references=references,
        gates=gates,
    )


def _result(
    claim: Claim,
    per_seed: list[dict[str, dict[str, float]]],
    *,
    slug: str = "h_tuning",
    verdict: str | None = None,
    scale: str = "small",
) -> CheckResult:
    metrics = summarize_metrics(per_seed)
    roles = {g.name: "gate" for g in claim.gates}
    criteria = tuple(
        evaluate_criterion(c, metrics, role=roles.get(c.name) or claim.role_of(c.name))
        for c in (*claim.gates_at(scale), *claim.criteria_at(scale))
    )
    computed = compute_verdict(criteria, n_seeds=len(per_seed), scale=scale)
    return CheckResult(
        slug=slug,
        scale=scale,
        seeds=tuple(range(len(per_seed))),
        claim=claim_to_json(claim),
        metrics=metrics,
        criteria=criteria,
        verdict=Verdict.parse(verdict, "stored") if verdict else computed,
        config={},
        wall_time_s=42.0,
        environment={"git_commit": "0123456789abcdef"},
        started_at="2026-01-01T00:00:00Z",
        run_id=RUN_ID,
    )


def _seeds(ours: float, base: float, n: int = 4, **more: float) -> list[dict[str, dict[str, float]]]:
    jitter = (0.0, 0.004, -0.003, 0.002, -0.001)
    rows = []
    for i in range(n):
        row = {"ours": {"acc": ours + jitter[i]}, "base": {"acc": base + jitter[(i + 2) % 5]}}
        row["ablation"] = {"acc": base - 0.05}
        for arm, value in more.items():
            row[arm] = {"acc": value}
        rows.append(row)
    return rows


def _criterion(**kw) -> CriterionResult:
    base = dict(
        name="head",
        description="",
        formula="f",
        value=0.0,
        threshold=0.0,
        op=">",
        passed=True,
        outcome="holds",
        role="headline",
    )
    base.update(kw)
    return CriterionResult(**base)  # type: ignore[arg-type]


def _with_criteria(result: CheckResult, *criteria: CriterionResult) -> CheckResult:
    return dataclasses.replace(result, criteria=criteria)


# -- the verdict shown ---------------------------------------------------------------------------


def test_failed_gate_is_never_shown_as_not_reproduced() -> None:
    gate = Criterion("learns", arm="base", metric="acc", op=">", threshold=0.9)
    claim = _claim(gates=(gate,))
    result = _result(claim, _seeds(0.5, 0.6, constant=0.1), verdict="not reproduced")
    assert str(result.verdict) == "not reproduced"  # as stored: the store would recompute it, we did not
    assert [c.passed for c in result.criteria if c.role == "gate"] == [False]
    assert displayed_verdict(result) == "inconclusive (gate failed: learns)"
    row = verdict_row(result)
    assert "reproduced" not in row[1].replace("inconclusive", "")
    assert row[1] == "**inconclusive (gate failed: learns)**"
    # a gate that could not be evaluated closes the verdict too, even a stored "reproduced" one
    unevaluated = _criterion(name="floor", role="gate", passed=None, outcome="n/a", value=None)
    shown = displayed_verdict(
        dataclasses.replace(
            _with_criteria(result, *result.criteria, unevaluated), verdict=Verdict.parse("reproduced")
        )
    )
    assert shown == "inconclusive (gate failed: learns, floor)"


def test_displayed_verdict_passes_open_gates_and_needs_through() -> None:
    gate = Criterion("learns", arm="base", metric="acc", op=">", threshold=0.5)
    result = _result(_claim(gates=(gate,)), _seeds(0.85, 0.80, constant=0.1))
    assert displayed_verdict(result) == "reproduced" == str(result.verdict)
    closed = _with_criteria(result, _criterion(name="g", role="gate", passed=False, outcome="fails"))
    assert displayed_verdict(dataclasses.replace(closed, verdict=Verdict.parse("needs gpu"))) == "needs gpu"


def test_a_failed_scoped_gate_leaves_the_verdict_to_the_rest() -> None:
    """A scoped gate (``guards=``) that fails sets aside only what it guards: the report shows the
    stored verdict, as the runner decided it, not "inconclusive (gate failed: ...)"."""
    gate = Criterion("learns", arm="base", metric="acc", op=">", threshold=0.5)
    result = _result(_claim(gates=(gate,)), _seeds(0.85, 0.80, constant=0.1))
    scoped = _criterion(name="llm_ok", role="gate", passed=False, outcome="fails", guards=("llm_part",))
    shown = _with_criteria(result, *result.criteria, scoped)
    assert displayed_verdict(shown) == "reproduced"
    # the same gate without guards closes the whole verdict
    unscoped = _criterion(name="llm_ok", role="gate", passed=False, outcome="fails")
    assert displayed_verdict(_with_criteria(result, *result.criteria, unscoped)) == (
        "inconclusive (gate failed: llm_ok)"
    )
    # a gate that guards the headline closes it too
    head = next(c.name for c in result.criteria if c.role == "headline")
    guarding = _criterion(name="llm_ok", role="gate", passed=False, outcome="fails", guards=(head,))
    assert displayed_verdict(_with_criteria(result, *result.criteria, guarding)).startswith("inconclusive")


# -- forest-plot rows ----------------------------------------------------------------------------


def _paired(op: str, interval: tuple[float, float], effect: float, delta: float, **kw) -> CriterionResult:
    return _criterion(
        name="beats_base",
        op=op,
        interval=interval,
        effect=effect,
        smallest_effect=delta,
        interval_text="x",
        **kw,
    )


def test_forest_row_standardises_by_the_smallest_effect() -> None:
    base = _result(_claim(), _seeds(0.85, 0.80))
    row = forest_row(_with_criteria(base, _paired(">", (0.02, 0.06), 0.04, 0.02)))
    assert row.kind == "interval" and row.has_interval and row.standardised
    assert row.x == pytest.approx(2.0) and row.low == pytest.approx(1.0) and row.high == pytest.approx(3.0)
    assert row.outcome == "holds" and row.comparison == "superiority"


def test_forest_row_signs_lower_is_better_criteria_positive() -> None:
    base = _result(_claim(op="<"), _seeds(0.75, 0.80))
    row = forest_row(_with_criteria(base, _paired("<", (-0.06, -0.02), -0.04, 0.02)))
    assert row.x == pytest.approx(2.0)  # ours lower by 2 delta: the claimed direction, so positive
    assert (row.low, row.high) == (pytest.approx(1.0), pytest.approx(3.0))
    worse = forest_row(_with_criteria(base, _paired("<", (0.01, 0.03), 0.02, 0.02, outcome="fails")))
    assert worse.x == pytest.approx(-1.0) and worse.high == pytest.approx(-0.5) and worse.outcome == "fails"


def test_forest_row_non_inferiority_is_scaled_by_its_margin() -> None:
    base = _result(_claim(comparison="non_inferiority"), _seeds(0.80, 0.80))
    c = _paired(">", (-0.01, 0.005), -0.002, 0.02, comparison="non_inferiority")
    row = forest_row(_with_criteria(base, c))
    assert row.comparison == "non_inferiority"
    assert row.x == pytest.approx(-0.1)
    assert (row.low, row.high) == (pytest.approx(-0.5), pytest.approx(0.25))
    assert "m 0.02" in row.detail  # the margin, not a smallest effect


def test_forest_row_from_a_real_evaluation_matches_its_interval() -> None:
    result = _result(_claim(op="<", smallest_effect=0.01), _seeds(0.70, 0.80))
    head = next(c for c in result.criteria if c.role == "headline")
    assert head.interval is not None and head.effect is not None
    row = forest_row(result)
    assert row.kind == "interval"
    assert row.x == pytest.approx(-head.effect / 0.01)
    assert row.low == pytest.approx(-head.interval[1] / 0.01)
    assert row.high == pytest.approx(-head.interval[0] / 0.01)


def test_point_criterion_rows_have_no_interval_and_sort_below() -> None:
    point = _result(_claim(smallest_effect=None), _seeds(0.90, 0.80), slug="rfm_grokking")
    row = forest_row(point)
    assert row.kind == "point" and not row.has_interval and not row.standardised
    assert row.note == POINT_NOTE == "no interval (point criterion: value vs threshold)"
    head = next(c for c in point.criteria if c.name == "beats_base")
    assert row.x == pytest.approx((head.value - head.threshold) / abs(head.threshold))  # type: ignore[operator]
    assert row.low is None and row.high is None
    paired = _result(_claim(), _seeds(0.85, 0.80), slug="moe_sgd")
    one_seed = _result(_claim(), _seeds(0.85, 0.80, n=1), slug="acac")
    estimate = forest_row(one_seed)
    assert estimate.kind == "estimate" and estimate.low is None and estimate.x is not None
    tiny = _result(_claim(), _seeds(0.85, 0.80), slug="slogan", scale="tiny")
    assert forest_row(tiny).kind == "none" and "tiny" in forest_row(tiny).note
    stored = [_stored(r) for r in (point, tiny, one_seed, paired)]
    assert [r.slug for r in forest_rows(stored)] == ["moe_sgd", "acac", "rfm_grokking", "slogan"]


def _stored(result: CheckResult):
    from icml25.core.results import StoredResult

    return StoredResult(result, Path("/nonexistent"))


def test_draw_forest_plot_writes_a_png_for_every_kind_of_row(tmp_path: Path) -> None:
    rows = [
        ForestRow("a", "a\nours vs $b", "reproduced", "holds", "interval", 2.0, 1.0, 3.0),
        ForestRow("b", "b", "not reproduced", "holds", "interval", 40.0, 38.0, 42.0),  # off the axis
        ForestRow("c", "c", "reproduced", "holds", "interval", -0.1, -0.5, 0.2, "non_inferiority"),
        ForestRow("d", "d", "inconclusive", "undetermined", "estimate", 1.5, note="no interval"),
        ForestRow("e", "e", "not reproduced", "fails", "point", -3.0, note=POINT_NOTE),
        ForestRow("f", "f", "needs gpu", "n/a", "none", note="headline not evaluated"),
    ]
    path = draw_forest_plot(rows, tmp_path / "forest.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    only_points = draw_forest_plot(rows[4:], tmp_path / "points.png")
    assert only_points.stat().st_size > 1000


# -- the verdicts table --------------------------------------------------------------------------


def test_verdict_row_has_reference_floor_gates_and_failures() -> None:
    gates = (
        Criterion("learns", arm="base", metric="acc", op=">", other_arm="constant", factor=2.0),
        Criterion("sane", arm="ours", metric="acc", op="<=", threshold=1.0),
    )
    supporting = (Criterion("high", arm="ours", metric="acc", op=">=", threshold=0.99),)
    result = _result(
        _claim(gates=gates, supporting=supporting), _seeds(0.85, 0.80, constant=0.25, untrained=0.1)
    )
    assert reference_floor(result) == ("constant", pytest.approx(0.25))  # the best floor for ">"
    row = verdict_row(result)
    assert len(row) == len(VERDICT_HEADER)
    cells = dict(zip(VERDICT_HEADER, row, strict=True))
    assert cells["reference floor"] == "0.25 (constant)"
    assert cells["gates"] == "2/2 pass"
    assert cells["failed"] == "high"
    assert cells["verdict"] == "**not reproduced**"
    assert cells["headline outcome"].startswith("holds: Δ +0.05")
    assert "δ 0.02" in cells["headline outcome"]
    assert cells["best baseline"].startswith("base: ")  # not the weaker ablation
    assert all(len(c) <= 60 for c in row)  # short enough for the 1400-pixel page

    failing = _result(_claim(gates=gates), _seeds(0.85, 0.40, constant=0.25, untrained=0.1))
    cells = dict(zip(VERDICT_HEADER, verdict_row(failing), strict=True))
    learns = next(c for c in failing.criteria if c.name == "learns")
    assert learns.passed is False and learns.threshold == pytest.approx(0.5)
    assert cells["gates"] == f"FAIL: learns {learns.value:.4g} vs > 0.5"
    assert cells["verdict"] == "**inconclusive (gate failed: learns)**"


def test_reference_floor_for_lower_is_better_and_without_references() -> None:
    result = _result(_claim(op="<"), _seeds(0.75, 0.80, constant=0.9, untrained=0.95))
    assert reference_floor(result) == ("constant", pytest.approx(0.9))
    none = _result(_claim(references=()), _seeds(0.85, 0.80))
    assert reference_floor(none) is None
    assert dict(zip(VERDICT_HEADER, verdict_row(none), strict=True))["reference floor"] == "-"


def test_long_cells_are_cut_and_html_cells_keep_their_links() -> None:
    long = "x" * 80
    claim = _claim(supporting=(Criterion(long, arm="ours", metric="acc", op=">=", threshold=0.99),))
    row = verdict_row(_result(claim, _seeds(0.85, 0.80)))
    failed = dict(zip(VERDICT_HEADER, row, strict=True))["failed"]
    assert failed.endswith("…") and len(failed) <= 34
    cell = _cell_html("[multi_reward_policy_eval](#multi_reward_policy_eval)")
    assert 'href="#multi_reward_policy_eval"' in cell and "<wbr>" in cell
    assert "<wbr>" in _cell_html("z" * 60)  # an unbroken run gets a break opportunity
    assert _cell_html("a &amp; b") == "a &amp;amp; b"  # entities stay whole


# -- tables in sections and READMEs --------------------------------------------------------------


def test_paper_result_table_shows_references_roles_and_intervals() -> None:
    gate = Criterion("learns", arm="base", metric="acc", op=">", other_arm="constant")
    result = _result(_claim(gates=(gate,)), _seeds(0.85, 0.80, constant=0.25, untrained=0.1))
    lines = paper_result_table(result).splitlines()
    arms = "ours (ours) | base | ablation | constant (reference) | untrained (reference)"  # every baseline
    assert lines[0] == f"| metric (mean ± sd over seeds) | {arms} |"
    criteria_header = next(line for line in lines if line.startswith("| criterion"))
    for column in ("role", "outcome", "interval", "smallest effect"):
        assert f"| {column} |" in criteria_header
    head = next(line for line in lines if line.startswith("| beats_base"))
    assert "| headline |" in head and "| holds |" in head and "95 % CI" in head and "| 0.02 |" in head
    assert any(line.startswith("| learns | gate |") for line in lines)


# -- an old result (no roles, outcomes, intervals or references) ----------------------------------


def _strip_to_old_schema(path: Path) -> None:
    data = json.loads(path.read_text())
    for c in data["criteria"]:
        for key in (
            "outcome",
            "role",
            "effect",
            "interval",
            "interval_text",
            "smallest_effect",
            "comparison",
            "resolve_factor",
            "needs",
        ):
            c.pop(key)
    for c in data["claim"]["criteria"]:
        for key in ("role", "smallest_effect", "effect_source", "comparison", "needs"):
            c.pop(key)
    for key in ("references", "gates"):
        data["claim"].pop(key)
        data.pop(key)
    path.write_text(json.dumps(data))


def test_old_style_result_still_renders(tmp_path: Path) -> None:
    results = tmp_path / "results"
    store = ResultStore(results)
    old = _result(_claim(smallest_effect=None, references=()), _seeds(0.85, 0.80), slug="rfm_grokking")
    final = store.commit(old, store.staging_dir(old.slug, old.scale, old.run_id))
    _strip_to_old_schema(final / "result.json")
    loaded = store.load(final).result
    assert all(c.role == "supporting" and c.interval is None for c in loaded.criteria)
    assert "references" not in loaded.claim

    row = forest_row(loaded)
    assert row.kind == "point" and row.note == POINT_NOTE and row.outcome == "holds"
    cells = dict(zip(VERDICT_HEADER, verdict_row(loaded), strict=True))
    assert cells["reference floor"] == "-" and cells["gates"] == "-"
    assert cells["headline outcome"].startswith("holds: 0.85")
    table = paper_result_table(loaded)
    assert "| beats_base | supporting |" in table and "**Verdict at scale small: reproduced**" in table

    out = write_report(store, tmp_path / "report")
    assert out.n_results == 1 and not out.problems
    md = out.markdown.read_text()
    assert "summary.png" in md.split("## Verdicts")[0]  # the report leads with the forest plot
    assert "| [rfm_grokking](#rfm_grokking) | **reproduced** | holds: 0.85" in md
    assert "no interval (point criterion" in md  # the caption says so
    assert (tmp_path / "report" / "figures" / "summary.png").is_file()
    page = out.html.read_text()
    assert "max-width:1360px" in page


def test_positive_controls_never_stand_as_the_floor() -> None:
    claim = dataclasses.replace(_claim(references=("constant", "oracle")), controls=("oracle",))
    result = _result(claim, _seeds(0.85, 0.80, constant=0.25, oracle=0.99))
    assert reference_floor(result) == ("constant", pytest.approx(0.25))  # not the oracle's 0.99
    assert "oracle (control)" in paper_result_table(result).splitlines()[0]
    with pytest.raises(ValueError, match="controls"):
        dataclasses.replace(claim, controls=("base",))
