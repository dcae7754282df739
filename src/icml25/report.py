"""``icml25 report``: REPORT.md and a self-contained index.html from stored results only.

Both files are rendered from one list of blocks (headings, paragraphs, tables, figures), so
they always say the same thing. Figures are copied to ``<out>/figures/`` with deterministic
names for the Markdown file and embedded as base64 in the HTML page. Nothing is rerun.

The report leads with a forest plot of every paper's headline (:func:`draw_forest_plot`: paired
effects standardised by their smallest effect of interest, point criteria on their own axis), then
the verdicts table. The verdict shown is :func:`displayed_verdict`: never ``reproduced`` or ``not
reproduced`` past a gate that did not pass.

Stored results are untrusted input: only results whose slug is a catalog paper are shown (the
store checks slug, scale and run id against their folders and recomputes each verdict), a figure
is copied only when it is a regular file inside its run folder (no symlinks) of bounded size, text
from results cannot carry HTML tags into ``REPORT.md`` (``<tag`` is written ``&lt;tag``) and is
escaped in ``index.html``. Two reports into the same folder may run at once: stale figures are
removed tolerantly and every file is written through a temporary name and a rename.
"""

from __future__ import annotations

import base64
import contextlib
import html
import math
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml25.catalog import PAPERS
from icml25.core.claims import SCALES, CheckResult, CriterionResult, VerdictKind, closing_gates
from icml25.core.results import ResultStore, StoredResult, atomic_write_text
from icml25.core.runtime import environment
from icml25.core.samples import SAMPLES_FILE

__all__ = [
    "ReportOutput",
    "write_report",
    "build_blocks",
    "displayed_verdict",
    "failed_gates",
    "verdict_kind",
    "verdict_row",
    "reference_floor",
    "ForestRow",
    "forest_row",
    "forest_rows",
    "draw_forest_plot",
    "RESULT_BEGIN",
    "RESULT_END",
    "paper_result_table",
    "small_result_block",
    "replace_result_block",
    "sync_paper_readmes",
]

_ARROW = {"<": "↓", "<=": "↓", ">": "↑", ">=": "↑"}
_MARK = {True: "pass", False: "FAIL", None: "n/a"}


@dataclass(frozen=True)
class ReportOutput:
    markdown: Path
    html: Path
    n_results: int
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


# -- blocks ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2
    anchor: str = ""


@dataclass(frozen=True)
class Para:
    text: str
    kind: str = "p"  # p | quote | small


@dataclass(frozen=True)
class Table:
    header: Sequence[str]
    rows: Sequence[Sequence[str]]


@dataclass(frozen=True)
class Figure:
    source: Path
    name: str  # deterministic file name under figures/
    caption: str


@dataclass
class _Doc:
    blocks: list[Any] = field(default_factory=list)

    def add(self, *blocks: Any) -> None:
        self.blocks.extend(blocks)


# -- formatting helpers ---------------------------------------------------------------------------


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
        return f"{x:.3e}"
    return f"{x:.{digits}g}"


def _signed(x: float) -> str:
    return f"{x:+.3g}"


def _short(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis (details live in the sections)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _mean_sd(result: CheckResult, arm: str | None, metric: str) -> str:
    if arm is None:
        return "-"
    s = result.metrics.get(arm, {}).get(metric)
    if s is None:
        return "-"
    return _fmt(s.mean) + (f" ± {_fmt(s.std, 2)}" if len(s.values) > 1 else "")


# -- verdicts, gates and the headline --------------------------------------------------------------

_VERDICT_COLORS = {
    "reproduced": "#1e8449",
    "not reproduced": "#c0392b",
    "inconclusive": "#d68910",
    "needs": "#2471a3",
}
_ROLE_ORDER = {"headline": 0, "supporting": 1, "gate": 2, "smoke": 3}


def failed_gates(result: CheckResult) -> list[CriterionResult]:
    """The evaluated gates of ``result`` that did not pass (failed or could not be evaluated)."""
    return [c for c in result.criteria if c.role == "gate" and c.passed is not True]


def displayed_verdict(result: CheckResult) -> str:
    """The verdict the report shows: never ``reproduced`` or ``not reproduced`` past a closed gate.

    The store already recomputes verdicts on load; this holds for any result handed to the report
    (a hand-built one too): when a gate's ``passed`` is not True, a stored ``reproduced`` or ``not
    reproduced`` (or ``inconclusive``) is shown as ``inconclusive (gate failed: <names>)``, for the
    gates that close the whole verdict (:func:`icml25.core.claims.closing_gates`: a failed scoped gate
    sets aside only the criteria it guards, and the stored verdict already says which). A
    ``needs <resource>`` verdict is shown as it is: it already says the claim was not judged.
    """
    closed = closing_gates(result.criteria)
    if not closed or result.verdict.kind is VerdictKind.NEEDS:
        return str(result.verdict)
    return f"inconclusive (gate failed: {', '.join(g.name for g in closed)})"


def verdict_kind(displayed: str) -> str:
    """``reproduced``, ``not reproduced``, ``inconclusive`` or ``needs`` for a displayed verdict."""
    if displayed.startswith("needs"):
        return "needs"
    if displayed.startswith("inconclusive"):
        return "inconclusive"
    return displayed if displayed in ("reproduced", "not reproduced") else "inconclusive"


def _outcome(c: CriterionResult) -> str:
    """holds / fails / undetermined / n/a; an old result's point criterion takes it from ``passed``."""
    if c.outcome != "n/a":
        return c.outcome
    return {True: "holds", False: "fails"}.get(c.passed, "n/a")  # type: ignore[arg-type]


def _outcome_text(c: CriterionResult) -> str:
    """:func:`_outcome`, with a note where a criterion holds by less than its smallest effect."""
    if c.below_smallest_effect:
        return f"{_outcome(c)} (whole interval below the smallest effect)"
    return _outcome(c)


def _direction(op: str) -> float:
    """+1 when the claim wants the value large (``>``, ``>=``), -1 when small."""
    return 1.0 if op in (">", ">=") else -1.0


def _headline_of(result: CheckResult) -> tuple[dict[str, Any], CriterionResult | None]:
    """The headline criterion as declared in the claim, and as evaluated (None when not at this scale)."""
    claim = result.claim
    criteria = claim["criteria"]
    decl = next((c for c in criteria if c["name"] == claim["headline"]), criteria[0])
    evaluated = next((c for c in result.criteria if c.name == decl["name"] and c.role != "gate"), None)
    return decl, evaluated


def _smallest_effect_text(c: CriterionResult) -> str:
    if c.smallest_effect is None:
        return "-"
    kind = "margin " if c.comparison == "non_inferiority" else ""
    return f"{kind}{c.smallest_effect:g}"


def _headline_text(result: CheckResult, c: CriterionResult | None) -> str:
    """The headline's outcome with its interval (paired) or value vs threshold (point)."""
    if c is None:
        return f"not judged at {result.scale}" if result.scale == "tiny" else "not evaluated"
    outcome = _outcome_text(c)
    delta = "m" if c.comparison == "non_inferiority" else "δ"
    if c.smallest_effect is not None and c.interval is not None:
        lo, hi = c.interval
        est = c.effect if c.effect is not None else (lo + hi) / 2
        return f"{outcome}: Δ {_signed(est)} [{_signed(lo)}, {_signed(hi)}], {delta} {c.smallest_effect:g}"
    if c.smallest_effect is not None and c.effect is not None:
        return f"{outcome}: Δ {_signed(c.effect)}, no interval, {delta} {c.smallest_effect:g}"
    if c.value is not None and c.threshold is not None:
        return f"{outcome}: {_fmt(c.value)} {c.op} {_fmt(c.threshold)}"
    return f"{outcome}: {c.reason or 'not evaluated'}"


def _gate_text(result: CheckResult) -> str:
    """``2/2 pass``, or ``FAIL: name value vs op threshold`` for each gate that did not pass."""
    gates = [c for c in result.criteria if c.role == "gate"]
    if not gates:
        return "-"
    closed = failed_gates(result)
    if not closed:
        return f"{len(gates)}/{len(gates)} pass"
    parts = []
    for g in closed:
        if g.value is None or g.threshold is None:
            parts.append(f"{g.name} not evaluated")
        else:
            parts.append(f"{g.name} {_fmt(g.value)} vs {g.op} {_fmt(g.threshold)}")
    return "FAIL: " + "; ".join(parts)


def _best_arm(result: CheckResult, arms: Sequence[str], metric: str, op: str) -> tuple[str, float] | None:
    """Among ``arms`` that report ``metric`` (finite mean), the best one in the claimed direction."""
    found = []
    for arm in arms:
        s = result.metrics.get(arm, {}).get(metric)
        if s is not None and math.isfinite(s.mean):
            found.append((arm, s.mean))
    if not found:
        return None
    sign = _direction(op)
    return max(found, key=lambda item: sign * item[1])


def reference_floor(result: CheckResult) -> tuple[str, float] | None:
    """The best value among the claim's trivial floors on the headline metric, and its arm.

    Positive controls (``claim["controls"]``: an oracle, a ceiling) are references too, but they show
    what the setup allows, not what learning nothing scores, so they never stand as the floor."""
    decl, _ = _headline_of(result)
    controls = {str(a) for a in result.claim.get("controls", []) or []}
    refs = [str(a) for a in result.claim.get("references", []) or [] if str(a) not in controls]
    return _best_arm(result, refs, decl["metric"], decl["op"])


def verdict_row(result: CheckResult) -> list[str]:
    """One row of the verdicts table; every cell short enough for a 1400-pixel-wide page."""
    claim = result.claim
    decl, evaluated = _headline_of(result)
    metric, arm, op = decl["metric"], decl["arm"], decl["op"]
    floor = reference_floor(result)
    best = _best_arm(result, [str(b) for b in claim["baselines"]], metric, op)
    failed = [c.name for c in result.criteria if c.role != "gate" and c.passed is False]
    return [
        f"[{result.slug}](#{result.slug})",
        f"**{_short(displayed_verdict(result), 40)}**",
        _short(_headline_text(result, evaluated), 52),
        _short(_gate_text(result), 40),
        _short(", ".join(failed), 34) if failed else "-",
        _short(f"{arm}.{metric}", 28) + "\u00a0" + _ARROW.get(op, ""),  # the arrow stays with its metric
        _short(f"{_fmt(floor[1])} ({floor[0]})", 24) if floor else "-",
        _mean_sd(result, arm, metric),
        _short(f"{best[0]}: {_mean_sd(result, best[0], metric)}", 30) if best else "-",
        result.scale,
        f"{result.wall_time_s:.0f} s",
    ]


VERDICT_HEADER = (
    "paper",
    "verdict",
    "headline outcome",
    "gates",
    "failed",
    "headline metric",
    "reference floor",
    "ours",
    "best baseline",
    "scale",
    "runtime",
)


def _criteria_table(result: CheckResult) -> Table:
    """Each evaluated criterion and gate (headline first): role, condition, value, threshold, pass/fail,
    outcome, the paired interval and smallest effect where there is one, and what it means."""
    ordered = sorted(result.criteria, key=lambda c: _ROLE_ORDER.get(c.role, 9))
    return Table(
        [
            "criterion",
            "role",
            "condition",
            "value",
            "threshold",
            "result",
            "outcome",
            "interval",
            "smallest effect",
            "meaning",
        ],
        [
            [
                c.name,
                c.role,
                c.formula,
                _fmt(c.value),
                _fmt(c.threshold),
                _MARK[c.passed],
                _outcome_text(c),
                c.interval_text or "-",
                _smallest_effect_text(c),
                c.description or c.reason,
            ]
            for c in ordered
        ],
    )


def _safe_verdict_row(stored: StoredResult) -> list[str]:
    try:
        return verdict_row(stored.result)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        r = stored.result
        return [
            r.slug,
            f"**{_short(displayed_verdict(r), 40)}**",
            _short(f"unreadable claim ({err!r})", 52),
            *["-"] * 6,
            r.scale,
            f"{r.wall_time_s:.0f} s",
        ]


def _pick(stored: Sequence[StoredResult]) -> dict[str, list[StoredResult]]:
    """slug -> its results, largest scale first."""
    by_slug: dict[str, list[StoredResult]] = {}
    for s in stored:
        by_slug.setdefault(s.result.slug, []).append(s)
    order = {sc: i for i, sc in enumerate(reversed(SCALES))}
    for runs in by_slug.values():
        runs.sort(key=lambda s: order.get(s.result.scale, 99))
    return by_slug


def _arms_in_order(claim: dict[str, Any]) -> list[str]:
    """Ours, the baselines, then the reference arms (trivial floors), without repeats."""
    refs = [str(a) for a in claim.get("references", []) or []]
    return list(dict.fromkeys([claim["ours"], *claim["baselines"], *refs]))


def _arm_header(claim: dict[str, Any], arm: str) -> str:
    if arm == claim["ours"]:
        return f"{arm} (ours)"
    if arm in (claim.get("controls", []) or []) and arm not in claim["baselines"]:
        return f"{arm} (control)"
    if arm in (claim.get("references", []) or []) and arm not in claim["baselines"]:
        return f"{arm} (reference)"
    return arm


def _paper_section(doc: _Doc, slug: str, runs: list[StoredResult], titles: dict[str, str]) -> None:
    main = runs[0]
    r = main.result
    claim = r.claim
    paper = next((p for p in PAPERS if p.slug == slug), None)
    doc.add(Heading(f"{slug}: {titles.get(slug, slug)}", 2, slug))
    if paper is not None and paper.url:
        doc.add(
            Para(f"Paper: {paper.url}" + (f" · code: {paper.code_url}" if paper.code_url else ""), "small")
        )
    doc.add(Para(f"Claim ({claim['source']}): {claim['statement']}", "quote"))
    if claim.get("setup_notes"):
        doc.add(Para(f"Our setup: {claim['setup_notes']}"))
    doc.add(
        Para(
            f"Verdict at scale {r.scale}: {displayed_verdict(r)} ({r.verdict.reason}). "
            f"Seeds {list(r.seeds)}, wall time {r.wall_time_s:.1f} s, run {r.run_id}, commit "
            f"{r.environment.get('git_commit') or 'unknown'}."
        ),
        _criteria_table(r),
    )
    arms = _arms_in_order(claim)
    names = sorted({m for a in arms for m in r.metrics.get(a, {})})
    doc.add(
        Table(
            ["metric"] + [_arm_header(claim, a) for a in arms],
            [[n] + [_mean_sd(r, a, n) for a in arms] for n in names],
        )
    )
    for warning in main.warnings:
        doc.add(Para(f"Warning: {warning}", "small"))
    for fig in r.figures:
        src = main.run_dir / fig.file
        if _safe_figure(src):
            doc.add(Figure(src, f"{slug}_{r.scale}_{fig.file}", fig.caption))
    for note in r.notes:
        doc.add(Para(f"Note: {note}", "small"))
    samples = main.run_dir / SAMPLES_FILE
    if _safe_figure(samples):  # a regular file inside the run folder, like a figure
        doc.add(Para(f"Every model request and reply of this run (one JSON line each): {samples}", "small"))
    if r.scale != "full":
        doc.add(
            Para(
                f"Caveat: scale {r.scale} is a reduced version of the paper's experiment; "
                "see the setup above for what it cannot show.",
                "small",
            )
        )
    for other in runs[1:]:
        o = other.result
        doc.add(
            Para(
                f"Also stored: scale {o.scale}, verdict {displayed_verdict(o)}, {o.wall_time_s:.1f} s, "
                f"run {o.run_id}.",
                "small",
            )
        )


MAX_FIGURE_BYTES = 64 * 1024 * 1024


def _safe_figure(path: Path) -> bool:
    """A figure is used only if it is a regular file (not a symlink) directly in its run folder."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FIGURE_BYTES and "/" not in path.name


def _copy_atomic(source: Path, target: Path) -> None:
    """Copy without following a symlinked source, through a temporary file and a rename."""
    fd_in = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd_in, "rb") as src, os.fdopen(fd, "wb") as dst:
            if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
                raise OSError(f"{source} is not a regular file")
            shutil.copyfileobj(src, dst)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _run_span(stored: Sequence[StoredResult]) -> str:
    """When the shown results were measured (from the results, never the clock: same input, same bytes)."""
    starts = sorted(s.result.started_at for s in stored if s.result.started_at)
    if not starts:
        return "-"
    return starts[0] if starts[0] == starts[-1] else f"{starts[0]} to {starts[-1]}"


# -- the forest plot that leads the report ----------------------------------------------------------


@dataclass(frozen=True)
class ForestRow:
    """One paper's headline in the forest plot.

    ``kind`` says which scale the numbers are on:

    * ``interval``: a paired headline with its interval. ``x`` is the paired effect divided by the
      smallest effect of interest (the non-inferiority margin for ``comparison ==
      "non_inferiority"``), signed so that the claimed direction is positive; ``low``/``high`` are
      the interval's ends on the same scale. Superiority holds when ``low > 0`` and fails when
      ``high < 1``; non-inferiority holds when ``low > -1`` and fails when ``high < -1``.
    * ``estimate``: a paired headline without an interval (one seed, no per-item scores): ``x`` on
      the same scale, no ``low``/``high``.
    * ``point``: a point criterion (value vs threshold): ``x`` is the relative margin
      ``(value - threshold) / |threshold|`` in the claimed direction, a different scale drawn on
      its own axis.
    * ``none``: the headline was not evaluated (a tiny smoke run, a missing metric): no ``x``.
    """

    slug: str
    label: str
    verdict: str
    outcome: str
    kind: str
    x: float | None = None
    low: float | None = None
    high: float | None = None
    comparison: str = "superiority"
    note: str = ""
    detail: str = ""

    @property
    def has_interval(self) -> bool:
        return self.kind == "interval"

    @property
    def standardised(self) -> bool:
        """On the effect / smallest-effect scale (the upper panel)."""
        return self.kind in ("interval", "estimate")


POINT_NOTE = "no interval (point criterion: value vs threshold)"


def _finite(*xs: float | None) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def forest_row(result: CheckResult) -> ForestRow:
    """The forest-plot row of one result (see :class:`ForestRow` for the scales)."""
    verdict = displayed_verdict(result)
    try:
        decl, c = _headline_of(result)
    except (KeyError, IndexError, TypeError, AttributeError):
        return ForestRow(result.slug, result.slug, verdict, "n/a", "none", note="unreadable claim")
    other = decl.get("other_arm")
    op = str(decl.get("op", ">"))
    metric = f"{decl['metric']} {_ARROW.get(op, '')}".strip()
    versus = f"vs {other}" if other else f"{op} {_fmt(decl.get('threshold'))}"
    label = f"{result.slug}\n{decl['arm']} {versus} · {metric}"
    if c is None:
        why = f"headline not judged at scale {result.scale} (smoke run)" if result.scale == "tiny" else ""
        return ForestRow(result.slug, label, verdict, "n/a", "none", note=why or "headline not evaluated")
    outcome, comparison = _outcome(c), c.comparison
    sign = _direction(c.op)

    def row(kind: str, x: float | None = None, **more: Any) -> ForestRow:
        return ForestRow(result.slug, label, verdict, outcome, kind, x, comparison=comparison, **more)

    d = c.smallest_effect
    if d is not None and math.isfinite(d) and d > 0:
        what = "m" if c.comparison == "non_inferiority" else "δ"
        if c.interval is not None and _finite(*c.interval):
            lo, hi = c.interval
            est = c.effect if c.effect is not None and math.isfinite(c.effect) else (lo + hi) / 2
            a, b = sorted((sign * lo / d, sign * hi / d))
            detail = f"Δ {_signed(est)} [{_signed(lo)}, {_signed(hi)}], {what} {d:g}"
            return row("interval", sign * est / d, low=a, high=b, detail=detail)
        if c.effect is not None and math.isfinite(c.effect):
            note = "no interval (one seed, no per-item scores): estimate only"
            return row(
                "estimate", sign * c.effect / d, note=note, detail=f"Δ {_signed(c.effect)}, {what} {d:g}"
            )
        return row("none", note=f"headline not evaluated: {c.reason or 'no effect'}")
    if c.value is not None and c.threshold is not None and _finite(c.value, c.threshold):
        value, threshold = c.value, c.threshold
        scale = abs(threshold) if threshold != 0 else max(abs(value), 1e-12)
        margin = sign * (value - threshold) / scale
        return row("point", margin, note=POINT_NOTE, detail=f"{_fmt(value)} {c.op} {_fmt(threshold)}")
    return row("none", note=f"headline not evaluated: {c.reason or 'no value'}")


def forest_rows(stored: Sequence[StoredResult]) -> list[ForestRow]:
    """One row per paper (its largest-scale run): interval rows first, then estimate-only, point and
    not-evaluated rows, each group by slug."""
    rows = [forest_row(runs[0].result) for _, runs in sorted(_pick(stored).items())]
    order = {"interval": 0, "estimate": 1, "point": 2, "none": 3}
    return sorted(rows, key=lambda r: (order[r.kind], r.slug))


_OUTCOME_MARKERS = {"holds": ("o", True), "fails": ("X", True), "undetermined": ("o", False)}


def _plain(text: str) -> str:
    """Text for a Matplotlib label: no control characters, no ``$`` (it would start mathtext)."""
    return _CONTROL.sub("", str(text)).replace("$", r"\$")


def _marker(ax: Any, x: float, y: float, outcome: str, color: str, *, shape: str | None = None) -> None:
    marker, filled = _OUTCOME_MARKERS.get(outcome, ("o", False))
    if shape is not None and marker == "o":
        marker = shape
    ax.plot(
        [x],
        [y],
        marker=marker,
        markersize=10.5 if marker == "X" else 8,
        markerfacecolor=color if filled else "white",
        markeredgecolor=color if marker != "X" else "white",
        markeredgewidth=1.6 if not filled else 0.8,
        linestyle="none",
        zorder=4,
        clip_on=False,
    )


def _row_text(ax: Any, y: float, row: ForestRow, color: str) -> None:
    """The verdict and the headline's raw numbers to the right of the plot."""
    second = f"headline {row.outcome}: {row.detail}" if row.outcome != "n/a" and row.detail else row.note
    text = _plain(_short(row.verdict, 48)) + "\n" + _plain(_short(second, 58))
    ax.annotate(
        text,
        xy=(1.0, y),
        xycoords=("axes fraction", "data"),
        xytext=(8, 0),
        textcoords="offset points",
        va="center",
        ha="left",
        fontsize=8,
        color=color,
        annotation_clip=False,
    )


def _draw_standardised(ax: Any, rows: Sequence[ForestRow]) -> None:
    ends = [v for r in rows for v in (r.x, r.low, r.high) if v is not None]
    left = max(-6.0, min([-1.5, *ends]) - 0.3)
    right = min(8.0, max([2.5, *ends]) + 0.3)
    ax.set_xlim(left, right)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.axvline(0, color="black", lw=0.9, zorder=1)
    ax.axvline(1, color="#444", lw=1.0, ls=":", zorder=1)
    ax.annotate(
        "0",
        (0, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(0, 2),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=7.5,
    )
    ax.annotate(
        "+1 = smallest effect δ",
        (1, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(0, 2),
        textcoords="offset points",
        ha="left",
        va="bottom",
        fontsize=7.5,
        color="#444",
    )
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows, strict=True):
        color = _VERDICT_COLORS[verdict_kind(row.verdict)]
        if row.comparison == "non_inferiority":
            ax.plot([-1, -1], [y - 0.38, y + 0.38], color="black", lw=1.4, ls="--", zorder=2)
            ax.annotate(
                "margin −1",
                (-1, y + 0.38),
                xytext=(-3, 0),
                textcoords="offset points",
                ha="right",
                va="top",
                fontsize=6.5,
                color="#333",
            )
        if row.has_interval and row.low is not None and row.high is not None:
            a, b = max(row.low, left), min(row.high, right)
            ax.hlines(y, a, b, color=color, lw=2.6, zorder=3)
            if row.low < left:
                ax.plot([left], [y], marker="<", color=color, markersize=6, zorder=3)
            if row.high > right:
                ax.plot([right], [y], marker=">", color=color, markersize=6, zorder=3)
        if row.x is not None:
            shown = max(left, min(right, row.x))
            _marker(ax, shown, y, row.outcome, color)
            if row.kind == "estimate":
                ax.annotate(
                    "no interval (1 seed)",
                    (shown, y),
                    xytext=(0, -8),
                    textcoords="offset points",
                    ha="center",
                    va="top",
                    fontsize=7,
                    color="#555",
                )
            if shown != row.x:  # off the axis: say where it is
                ax.annotate(
                    f"{row.x:+.1f} {'→' if row.x > 0 else '←'}",
                    (shown, y),
                    xytext=(-8 if row.x > 0 else 8, 7),
                    textcoords="offset points",
                    ha="right" if row.x > 0 else "left",
                    va="bottom",
                    fontsize=7.5,
                    color="#333",
                )
        _row_text(ax, y, row, color)
    ax.set_yticks(ys, [_plain(r.label) for r in rows], fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    ax.grid(False, axis="y")
    ax.set_xlabel(
        "paired effect ÷ smallest effect of interest δ (non-inferiority: ÷ margin m), claimed direction "
        "positive; bar = 95 % interval",
        fontsize=8,
    )
    ax.set_title("Headlines with a paired interval", fontsize=9.5, loc="left", pad=14)


def _draw_point(ax: Any, rows: Sequence[ForestRow]) -> None:
    from matplotlib.ticker import PercentFormatter

    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.axvline(0, color="black", lw=0.9, zorder=1)
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows, strict=True):
        color = _VERDICT_COLORS[verdict_kind(row.verdict)]
        if row.kind == "point" and row.x is not None:
            shown = max(-1.0, min(1.0, row.x))
            _marker(ax, shown, y, row.outcome, color, shape="D")
            ax.annotate(
                f"{row.x:+.0%}",
                (shown, y),
                xytext=(0, 8),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7.5,
                color="#333",
            )
        else:
            ax.annotate(
                _plain(_short(row.note, 60)),
                (0.02, y),
                xycoords=("axes fraction", "data"),
                va="center",
                fontsize=7,
                color="#555",
                style="italic",
            )
        _row_text(ax, y, row, color)
    ax.set_yticks(ys, [_plain(r.label) for r in rows], fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    ax.grid(False, axis="y")
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel(
        "relative margin (value − threshold) / |threshold|, claimed direction positive, clipped at ±100 % "
        "(not the δ scale above)",
        fontsize=8,
    )
    ax.set_title(f"Headlines with {POINT_NOTE}", fontsize=9.5, loc="left")


def draw_forest_plot(rows: Sequence[ForestRow], path: Path) -> Path:
    """The report's lead figure: paired headlines standardised by their smallest effect (upper
    panel) and point headlines by their relative margin (lower panel, its own axis); colour is the
    displayed verdict, the marker is the headline's own outcome. Written to ``path`` (PNG)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from icml25.core.plotting import new_figure

    upper = [r for r in rows if r.standardised]
    lower = [r for r in rows if not r.standardised]
    panels = [(rows_, draw) for rows_, draw in ((upper, _draw_standardised), (lower, _draw_point)) if rows_]
    heights = [0.9 + 0.5 * len(p[0]) for p in panels] or [1.0]
    fig, axes = new_figure(nrows=len(panels) or 1, width=11.0, height=1.0)
    fig.set_size_inches(11.0, 1.3 + sum(heights))
    axes_list = list(axes.flat) if len(panels) > 1 else [axes]  # nrows > 1: a (nrows, 1) array
    if len(panels) > 1:
        axes_list[0].get_gridspec().set_height_ratios(heights)
    for ax, (panel_rows, draw) in zip(axes_list, panels, strict=True):
        draw(ax, panel_rows)
    handles: list[Any] = [Patch(color=c, label=v) for v, c in _VERDICT_COLORS.items()]
    grey = "#555"
    handles += [
        Line2D([], [], marker="o", ls="none", color=grey, markersize=8, label="headline holds"),
        Line2D(
            [],
            [],
            marker="X",
            ls="none",
            color=grey,
            markeredgecolor="white",
            markersize=8,
            label="headline fails",
        ),
        Line2D(
            [],
            [],
            marker="o",
            ls="none",
            markerfacecolor="white",
            markeredgecolor=grey,
            markeredgewidth=1.6,
            markersize=7,
            label="headline undetermined",
        ),
    ]
    if lower:
        handles.append(
            Line2D(
                [], [], marker="D", ls="none", color=grey, markersize=6, label="point criterion (no interval)"
            )
        )
    fig.legend(handles=handles, loc="outside upper center", ncols=4, fontsize=7.5, frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, metadata={"Software": None})  # 1320 px: the page's width
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


SUMMARY_FIGURE = "summary.png"
SUMMARY_CAPTION = (
    "Each checked paper's headline claim at its largest scale run. Upper panel: the paired difference "
    "(ours − comparator) with its 95 % interval, divided by the smallest effect of interest δ declared in "
    "the check and signed so that the claimed direction is positive; the headline holds when the whole "
    "bar lies right of 0 and fails when it lies left of +1 (δ). Non-inferiority rows are divided by their "
    "margin m, marked by the dashed tick at −1: they hold when the bar lies right of it; a hollow marker "
    "without a bar is a one-seed estimate. Lower panel: headlines with no interval (point criterion: value "
    "vs threshold), drawn as diamonds at their relative margin (value − threshold)/|threshold| on their "
    "own axis, not comparable with the upper panel; headlines not evaluated (e.g. a tiny smoke run) have "
    "no marker. "
    "Colour is the verdict shown in the table (green reproduced, red not reproduced, amber inconclusive, "
    "blue needs a resource); the marker is the headline's own outcome (filled = holds, ✕ = fails, "
    "hollow = undetermined), so a filled red marker means the headline holds but another criterion "
    "failed. The text at the right gives the raw numbers."
)


def build_blocks(
    stored: Sequence[StoredResult], problems: Sequence[str] = (), summary_figure: Path | None = None
) -> list[Any]:
    doc = _Doc()
    by_slug = _pick(stored)
    titles = {p.slug: p.title for p in PAPERS}
    n_checked = len(by_slug)
    shown = [displayed_verdict(runs[0].result) for runs in by_slug.values()]
    n_repro = sum(v == "reproduced" for v in shown)
    doc.add(
        Heading("icml25: claim checks of ICML 2025 papers", 1),
        Para(
            f"{len(PAPERS)} papers in the catalog; {n_checked} with stored results, {n_repro} reproduced at "
            "the largest scale run. Every verdict is computed from criteria declared in the paper's "
            "check before the numbers were measured; nothing here was rerun to build this page."
        ),
    )
    if summary_figure is not None:
        doc.add(Figure(summary_figure, SUMMARY_FIGURE, SUMMARY_CAPTION))
    doc.add(
        Heading("Verdicts", 2, "verdicts"),
        Para(
            "One row per paper (largest scale run). Headline outcome: Δ is the paired difference with its "
            "95 % interval against the smallest effect δ (or margin m), else value vs threshold. Gates must "
            "pass for a verdict; a failed gate makes it inconclusive. Reference floor: the best reference "
            "arm (a trivial floor, never a baseline) on the headline metric. Long cells are cut (…); the "
            "paper's section has the details.",
            "small",
        ),
        Table(
            list(VERDICT_HEADER),
            [_safe_verdict_row(runs[0]) for _, runs in sorted(by_slug.items())],
        ),
    )
    status_rows = []
    for p in PAPERS:
        runs = by_slug.get(p.slug)
        last = f"{displayed_verdict(runs[0].result)} ({runs[0].result.scale})" if runs else "not run"
        status_rows.append([p.slug, p.domain, p.status, last, p.title])
    doc.add(
        Heading("All papers", 2, "all-papers"),
        Table(["slug", "domain", "status", "last verdict", "title"], status_rows),
    )

    for slug, runs in sorted(by_slug.items()):
        section = _Doc()
        try:
            _paper_section(section, slug, runs, titles)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OSError) as err:
            section = _Doc(
                [
                    Heading(f"{slug}: {titles.get(slug, slug)}", 2, slug),
                    Para(f"This result could not be rendered: {err!r}", "small"),
                ]
            )
        doc.add(*section.blocks)

    env = environment()
    versions = ", ".join(f"{k} {v}" for k, v in sorted(env["versions"].items()))
    commits = sorted({s.result.environment.get("git_commit") or "unknown" for s in stored})
    doc.add(
        Heading("Environment", 2, "environment"),
        Para(
            f"Built from results started {_run_span(stored)} on {env['platform']} ({env['cpu_count']} "
            f"CPUs, {env['device']}); Python {env['python']}; {versions}. Results measured at commits: "
            f"{', '.join(commits) or '-'}.",
            "small",
        ),
    )
    for problem in problems:
        doc.add(Para(f"Skipped unreadable result: {problem}", "small"))
    return doc.blocks


# -- renderers ------------------------------------------------------------------------------------


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # terminal escapes and other controls


def _no_html(text: str) -> str:
    """Text that cannot open an HTML tag, comment or declaration in Markdown (``<b`` -> ``&lt;b``),
    without control characters (terminal escape sequences)."""
    text = _CONTROL.sub("", str(text))
    return _TAG_START.sub("&lt;", text)


def _md_cell(text: str) -> str:
    return _no_html(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: Sequence[Any]) -> str:
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            lines += [("#" * b.level) + " " + _no_html(b.text).replace("\n", " "), ""]
        elif isinstance(b, Para):
            prefix = "> " if b.kind == "quote" else ""
            body = _no_html(b.text).replace("\n", " ")
            text = f"<sub>{body}</sub>" if b.kind == "small" else body
            lines += [prefix + text, ""]
        elif isinstance(b, Table):
            lines.append("| " + " | ".join(_md_cell(h) for h in b.header) + " |")
            lines.append("|" + "---|" * len(b.header))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            lines.append("")
        elif isinstance(b, Figure):
            lines += [f"![{_md_cell(b.caption)}](figures/{b.name})", "", f"*{_md_cell(b.caption)}*", ""]
    return "\n".join(lines).rstrip() + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1360px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:1em 0;font-size:.86em;max-width:100%}
th,td{border:1px solid #ddd;padding:.3em .5em;
text-align:left;vertical-align:top}th{background:#f4f4f4}
blockquote{border-left:4px solid #c0392b;margin:1em 0;
padding:.2em 1em;background:#fbf3f2}small{color:#666}figure{margin:1em 0}figure img{max-width:100%}
figcaption{font-size:.85em;color:#555}.pass,.holds{color:#1e8449;font-weight:600}
.FAIL,.fails{color:#c0392b;font-weight:600}.undetermined{color:#b9770e;font-weight:600}
"""


_CELL_CLASSES = ("pass", "FAIL", "holds", "fails", "undetermined")


def _inline_md(text: str) -> str:
    """Escape, then turn the two Markdown forms our cells use (**bold**, [x](#a)) into HTML."""
    import re

    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"\[([^\]]+)\]\((#[\w-]+)\)", r'<a href="\2">\1</a>', out)


_TAG_OR_TEXT = re.compile(r"(<[^>]*>)")
_ENTITY_OR_CHAR = re.compile(r"&#?\w+;|.", re.S)
_RUN = 22  # characters without a break opportunity before one is added


def _soft_breaks(text: str) -> str:
    """Escaped text with ``<wbr>`` break opportunities after ``_``, ``/`` and ``.`` before a letter
    (``h_tune.acc``, ``add/final_test_acc``) and inside any longer unbroken run, so a table cell
    never forces the page wider than the window. Entities stay whole."""
    tokens = _ENTITY_OR_CHAR.findall(text)
    out: list[str] = []
    run = 0
    for i, tok in enumerate(tokens):
        out.append(tok)
        if tok.isspace():
            run = 0
            continue
        run += 1
        nxt = tokens[i + 1] if i + 1 < len(tokens) else " "
        separator = tok in ("_", "/") or (tok == "." and nxt.isalpha())
        if not nxt.isspace() and (separator or run >= _RUN):
            out.append("<wbr>")
            run = 0
    return "".join(out)


def _cell_html(text: str) -> str:
    """A table cell: inline Markdown as HTML, with break opportunities in its text (never in tags)."""
    parts = _TAG_OR_TEXT.split(_inline_md(text))
    return "".join(part if part.startswith("<") else _soft_breaks(part) for part in parts)


def render_html(blocks: Sequence[Any]) -> str:
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        "<title>icml25 report</title>",
        f"<style>{_CSS}</style></head><body>",
    ]
    for b in blocks:
        if isinstance(b, Heading):
            anchor = f' id="{html.escape(b.anchor)}"' if b.anchor else ""
            parts.append(f"<h{b.level}{anchor}>{html.escape(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            inner = _inline_md(b.text)
            parts.append(
                {"quote": f"<blockquote>{inner}</blockquote>", "small": f"<p><small>{inner}</small></p>"}.get(
                    b.kind, f"<p>{inner}</p>"
                )
            )
        elif isinstance(b, Table):
            head = "".join(f"<th>{html.escape(h)}</th>" for h in b.header)
            body = "".join(
                "<tr>"
                + "".join(
                    f'<td class="{html.escape(c)}">{_cell_html(c)}</td>'
                    if c in _CELL_CLASSES
                    else f"<td>{_cell_html(c)}</td>"
                    for c in row
                )
                + "</tr>"
                for row in b.rows
            )
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif isinstance(b, Figure):
            data = base64.b64encode(b.source.read_bytes()).decode("ascii")
            parts.append(
                f'<figure><img alt="{html.escape(b.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(b.caption)}</figcaption></figure>"
            )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _draw_summary_atomic(rows: Sequence[ForestRow], fig_dir: Path) -> Path:
    """The summary figure, drawn under a temporary name and renamed (a concurrent report sees old or new)."""
    fd, tmp = tempfile.mkstemp(prefix=".summary.", suffix=".png", dir=fig_dir)
    os.close(fd)
    try:
        draw_forest_plot(rows, Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, fig_dir / SUMMARY_FIGURE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return fig_dir / SUMMARY_FIGURE


def write_report(store: ResultStore, out_dir: Path) -> ReportOutput:
    """Render every stored result into ``out_dir``; unreadable results are skipped and listed."""
    found, problems = store.scan()
    slugs = {p.slug for p in PAPERS}
    stored = [s for s in found if s.result.slug in slugs]
    problems = [
        *problems,
        *(
            f"{s.run_dir / 'result.json'}: slug {s.result.slug!r} is not a paper of the catalog"
            for s in found
            if s.result.slug not in slugs
        ),
    ]
    warnings = [w for s in stored for w in s.warnings]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        fig_dir = out_dir / "figures"
        fig_dir.mkdir(exist_ok=True)
        for old in fig_dir.glob("*.png"):  # remove only figures an earlier report wrote
            if old.name == SUMMARY_FIGURE or any(old.name.startswith(f"{slug}_") for slug in slugs):
                old.unlink(missing_ok=True)  # another report into the same folder may have been first
        rows = forest_rows(stored)
        summary = _draw_summary_atomic(rows, fig_dir) if rows else None
        blocks = build_blocks(stored, problems, summary_figure=summary)
        for b in blocks:
            if isinstance(b, Figure) and b.name != SUMMARY_FIGURE:
                target = fig_dir / b.name
                if target.parent != fig_dir or b.name.startswith("."):
                    continue  # a name that would leave figures/ (never built from validated results)
                with contextlib.suppress(FileNotFoundError):
                    _copy_atomic(b.source, target)
        md, page = out_dir / "REPORT.md", out_dir / "index.html"
        atomic_write_text(md, render_markdown(blocks))
        atomic_write_text(page, render_html(blocks))
    except OSError as err:
        from icml25.core.results import ResultsError

        raise ResultsError(f"cannot write the report to {str(out_dir)!r}: {err.strerror or err}") from err
    return ReportOutput(md, page, len(stored), tuple(problems), tuple(warnings))


# -- the result table in each paper's README.md -----------------------------------------------------

RESULT_BEGIN = "<!-- small-result:begin -->"
RESULT_END = "<!-- small-result:end -->"
_PACKAGE_DIR = Path(__file__).resolve().parent


def _criterion_metrics(result: CheckResult) -> tuple[list[str], list[str]]:
    """Arms and metrics (first-use order) that the evaluated criteria and gates read.

    Arms come in claim order (ours, then every baseline, controls included), then every reference
    arm of the claim, read by a criterion or not: a README shows the trivial floor beside ours."""
    claim = result.claim
    evaluated = {c.name for c in result.criteria}
    refs = [str(a) for a in claim.get("references", []) or []]
    pairs: list[tuple[str, str]] = []
    for c in [*claim["criteria"], *(claim.get("gates", []) or [])]:
        if c["name"] not in evaluated:
            continue
        pairs.append((c["arm"], c["metric"]))
        if c.get("other_arm"):
            pairs.append((c["other_arm"], c.get("other_metric") or c["metric"]))
    metrics = list(dict.fromkeys(m for _, m in pairs))
    used_arms = {a for a, _ in pairs}
    order = [claim["ours"], *claim["baselines"]]
    arms = list(order) + sorted(used_arms - set(order) - set(refs))
    arms += [a for a in refs if a not in arms]
    return arms, metrics


def paper_result_table(result: CheckResult) -> str:
    """One stored check result as Markdown: the metrics its criteria use, each criterion, the verdict.

    The first table has a row per metric that some criterion or gate reads and a column per arm
    that one reads (ours first), then the claim's reference arms (marked ``(reference)``), as
    mean ± sd over seeds; the second lists every evaluated criterion and gate with its role, value,
    threshold, pass/fail, outcome, paired interval and smallest effect (the same table REPORT.md
    shows); a closing line gives the displayed verdict, seeds, wall time, run id, start time and
    commit. Rendered with the report's own Markdown renderer, so a README and REPORT.md agree cell
    for cell.
    """
    claim = result.claim
    arms, metrics = _criterion_metrics(result)
    blocks: list[Any] = []
    if metrics:
        blocks.append(
            Table(
                ["metric (mean ± sd over seeds)"] + [_arm_header(claim, a) for a in arms],
                [[m] + [_mean_sd(result, a, m) for a in arms] for m in metrics],
            )
        )
    blocks.append(_criteria_table(result))
    commit = result.environment.get("git_commit") or "unknown"
    blocks.append(
        Para(
            f"**Verdict at scale {result.scale}: {displayed_verdict(result)}** ({result.verdict.reason}). "
            f"Seeds {list(result.seeds)}; wall time {result.wall_time_s:.0f} s; run {result.run_id or '-'}, "
            f"started {result.started_at or '-'}, commit {str(commit)[:12]}."
        )
    )
    return render_markdown(blocks)


def small_result_block(result: CheckResult | None, slug: str = "") -> str:
    """What goes between the README markers: the table of ``result``, or a line saying there is none."""
    if result is None:
        body = (
            f"No small-scale result is stored yet: run `icml25 check {slug or '<slug>'} --scale small`, "
            "then `icml25 report --sync-readmes`.\n"
        )
    else:
        body = paper_result_table(result)
    note = (
        "<sub>Generated from the stored result by `icml25 report --sync-readmes`; edits here are lost.</sub>"
    )
    return "\n\n" + body + "\n" + note + "\n\n"


def replace_result_block(text: str, block: str, name: str = "README.md") -> str:
    """``text`` with everything between the two marker lines replaced by ``block``.

    Raises:
        ValueError: a marker is missing, repeated, or the end marker comes first (``name`` says where).
    """
    if text.count(RESULT_BEGIN) != 1 or text.count(RESULT_END) != 1:
        raise ValueError(f"{name}: needs exactly one {RESULT_BEGIN!r} line and one {RESULT_END!r} line")
    start = text.index(RESULT_BEGIN) + len(RESULT_BEGIN)
    end = text.index(RESULT_END)
    if end < start:
        raise ValueError(f"{name}: {RESULT_END!r} comes before {RESULT_BEGIN!r}")
    return text[:start] + block + text[end:]


def _has_result_table(text: str) -> bool:
    """Whether the README's result block holds a generated table (it carries a verdict line)."""
    if RESULT_BEGIN not in text or RESULT_END not in text:
        return False
    block = text.split(RESULT_BEGIN, 1)[1].split(RESULT_END, 1)[0]
    return "**Verdict at scale small" in block


def sync_paper_readmes(
    results_dir: Path | str = "results",
    root: Path | str | None = None,
    slugs: Collection[str] | None = None,
) -> list[Path]:
    """Refill the result block of every checked paper's README.md from its latest small result.

    For each catalog paper with status ``checked`` whose folder ``<root>/<domain>/<slug>/`` has a
    README.md, the text between ``RESULT_BEGIN`` and ``RESULT_END`` becomes
    :func:`small_result_block` of the newest readable run under ``<results_dir>/<slug>/small/``.
    Where no run is stored, a table already in the README (from an earlier sync, committed with
    the code) is kept: a clone whose ``results/`` lacks that paper's runs must not erase it; a
    README without a table gets a line saying none is stored. Text outside the markers is
    untouched, files are written atomically and only when they change, so a second call changes
    nothing.

    Args:
        results_dir: the results store to read (``results/`` by default, as ``icml25 check`` writes).
        root: the ``icml25`` package folder holding the paper folders (default: this package).
        slugs: only these papers (default: every checked paper).

    Returns:
        The README files that changed.

    Raises:
        ResultsError: ``results_dir`` is not a directory (nothing is rewritten).
        ValueError: a checked paper's README.md lacks the two marker lines, or a name in
            ``slugs`` is not a checked paper.
    """
    from icml25.core.results import ResultsError

    checked = [p for p in PAPERS if p.status == "checked"]
    if slugs is not None:
        unknown = sorted(set(slugs) - {p.slug for p in checked})
        if unknown:
            raise ValueError(f"slugs: not checked papers of the catalog: {', '.join(unknown)}")
        checked = [p for p in checked if p.slug in set(slugs)]
    store = ResultStore(results_dir)
    if not store.root.is_dir():
        raise ResultsError(f"no results directory at {str(store.root)!r}; no README was changed")
    base = _PACKAGE_DIR if root is None else Path(root)
    changed: list[Path] = []
    for paper in checked:
        path = base / paper.domain / paper.slug / "README.md"
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        stored = store.latest(paper.slug, "small")
        if stored is None and _has_result_table(text):
            continue  # keep the committed table rather than blank it
        block = small_result_block(stored.result if stored else None, paper.slug)
        new = replace_result_block(text, block, str(path))
        if new != text:
            atomic_write_text(path, new)
            changed.append(path)
    return changed
