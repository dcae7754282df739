"""``icml25 report``: REPORT.md and a self-contained index.html from stored results only.

Both files are rendered from one list of blocks (headings, paragraphs, tables, figures), so
they always say the same thing. Figures are copied to ``<out>/figures/`` with deterministic
names for the Markdown file and embedded as base64 in the HTML page. Nothing is rerun.

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
from icml25.core.claims import SCALES, CheckResult
from icml25.core.results import ResultStore, StoredResult, atomic_write_text
from icml25.core.runtime import environment

__all__ = [
    "ReportOutput",
    "write_report",
    "build_blocks",
    "HeadlineMargin",
    "headline_margins",
    "draw_summary_figure",
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


def _mean_sd(result: CheckResult, arm: str | None, metric: str) -> str:
    if arm is None:
        return "-"
    s = result.metrics.get(arm, {}).get(metric)
    if s is None:
        return "-"
    return _fmt(s.mean) + (f" ± {_fmt(s.std, 2)}" if len(s.values) > 1 else "")


def _criteria_table(result: CheckResult) -> Table:
    """Each evaluated criterion: condition, value, threshold, pass/fail and what it means."""
    return Table(
        ["criterion", "condition", "value", "threshold", "result", "meaning"],
        [
            [c.name, c.formula, _fmt(c.value), _fmt(c.threshold), _MARK[c.passed], c.description or c.reason]
            for c in result.criteria
        ],
    )


def _headline_row(stored: StoredResult, title: str) -> list[str]:
    r = stored.result
    claim = r.claim
    crit_decl = next((c for c in claim["criteria"] if c["name"] == claim["headline"]), claim["criteria"][0])
    metric, arm, op = crit_decl["metric"], crit_decl["arm"], crit_decl["op"]
    base_arm: str | None = crit_decl.get("other_arm")
    base_metric = crit_decl.get("other_metric") or metric
    stored_base = str(claim.get("headline_baseline") or "")
    if base_arm is None and stored_base.partition(".")[2] == metric:  # like with like only
        base_arm, _, base_metric = stored_base.partition(".")
    elif base_arm is None:
        base_arm = next((b for b in claim["baselines"] if metric in r.metrics.get(b, {})), None)
    ours_s = r.metrics.get(arm, {}).get(metric)
    base_s = r.metrics.get(base_arm, {}).get(base_metric) if base_arm else None
    delta = _fmt(ours_s.mean - base_s.mean) if ours_s is not None and base_s is not None else "-"
    evaluated = next((c for c in r.criteria if c.name == crit_decl["name"]), None)
    threshold = _fmt(evaluated.threshold) if evaluated and evaluated.threshold is not None else "-"
    return [
        f"[{r.slug}](#{r.slug})",
        title,
        f"{arm}.{metric} {_ARROW.get(op, '')}",
        f"{base_arm}: {_mean_sd(r, base_arm, base_metric)}" if base_arm else "-",
        _mean_sd(r, arm, metric),
        delta,
        f"{op} {threshold}",
        f"**{r.verdict}**",
        r.scale,
        f"{r.wall_time_s:.0f} s",
    ]


def _safe_headline_row(stored: StoredResult, title: str) -> list[str]:
    try:
        return _headline_row(stored, title)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        r = stored.result
        return [
            r.slug,
            title,
            f"unreadable claim ({err!r})",
            "-",
            "-",
            "-",
            "-",
            f"**{r.verdict}**",
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
            f"Verdict at scale {r.scale}: {r.verdict} ({r.verdict.reason}). Seeds {list(r.seeds)}, "
            f"wall time {r.wall_time_s:.1f} s, run {r.run_id}, commit "
            f"{r.environment.get('git_commit') or 'unknown'}."
        ),
        _criteria_table(r),
    )
    arms = [claim["ours"], *claim["baselines"]]
    names = sorted({m for a in arms for m in r.metrics.get(a, {})})
    doc.add(
        Table(
            ["metric"] + [a + (" (ours)" if a == claim["ours"] else "") for a in arms],
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
                f"Also stored: scale {o.scale}, verdict {o.verdict}, {o.wall_time_s:.1f} s, run {o.run_id}.",
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


@dataclass(frozen=True)
class HeadlineMargin:
    """How far ours clears (> 0) or misses (< 0) the headline criterion, relative to its threshold.

    For ``ours < baseline`` the threshold is the baseline's mean (times the criterion's factor), so
    the margin reads "ours is 12 % below the baseline"; ``spread`` is ours' seed standard deviation
    on the same relative scale.
    """

    slug: str
    label: str
    margin: float
    spread: float
    verdict: str


def headline_margins(stored: Sequence[StoredResult]) -> list[HeadlineMargin]:
    """One :class:`HeadlineMargin` per paper (largest-scale run) whose headline criterion was evaluated."""
    out = []
    for slug, runs in sorted(_pick(stored).items()):
        r = runs[0].result
        claim = r.claim
        try:
            criteria = claim["criteria"]
            head = next((c for c in criteria if c["name"] == claim["headline"]), criteria[0])
        except (KeyError, IndexError, TypeError):
            continue
        evaluated = next((c for c in r.criteria if c.name == head["name"]), None)
        if evaluated is None and r.criteria:  # e.g. a tiny run: its first smoke criterion stands in
            evaluated = r.criteria[0]
            head = next((c for c in claim["criteria"] if c["name"] == evaluated.name), head)
        if evaluated is None or evaluated.value is None or evaluated.threshold is None:
            continue
        value, threshold, op = evaluated.value, evaluated.threshold, evaluated.op
        scale = abs(threshold) if threshold != 0 else max(abs(value), 1e-12)
        sign = 1.0 if op in (">", ">=") else -1.0
        margin = sign * (value - threshold) / scale
        summary = r.metrics.get(head.get("arm", ""), {}).get(head.get("metric", ""))
        spread = summary.std / scale if summary is not None and len(summary.values) > 1 else 0.0
        other = head.get("other_arm")
        versus = f"vs {other}" if other else f"{op} {threshold:.3g}"
        label = f"{slug}\n{head['arm']} {versus}"
        out.append(HeadlineMargin(slug, label, float(margin), float(spread), str(r.verdict)))
    return out


_VERDICT_COLORS = {"reproduced": "#27ae60", "not reproduced": "#c0392b"}


def draw_summary_figure(margins: Sequence[HeadlineMargin], path: Path) -> Path:
    """A bar per paper: its headline margin (clipped to ±100 %, the true value printed), seed spread
    as an error bar, coloured by verdict. Written to ``path`` (PNG)."""
    from icml25.core.plotting import new_figure

    height = 0.9 + 0.42 * max(len(margins), 1)
    fig, ax = new_figure(width=7.5, height=height)
    ys = list(range(len(margins)))[::-1]
    for y, m in zip(ys, margins, strict=True):
        shown = max(-1.0, min(1.0, m.margin))
        color = _VERDICT_COLORS.get(m.verdict, "#7f8c8d")
        ax.barh(y, shown, color=color, height=0.6)
        if m.spread > 0:
            ax.errorbar(shown, y, xerr=min(m.spread, 1.0), color="black", capsize=3, lw=1)
        ax.annotate(
            f"{m.margin:+.1%}",
            (shown, y),
            xytext=(4 if shown >= 0 else -4, 0),
            textcoords="offset points",
            ha="left" if shown >= 0 else "right",
            va="center",
            fontsize=7,
        )
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(ys, [m.label for m in margins], fontsize=7)
    ax.set_xlim(-1.25, 1.25)
    ax.set_xlabel("headline margin: how far ours clears (+) or misses (−) the criterion, relative")
    from matplotlib.patches import Patch

    handles = [
        Patch(color=c, label=v) for v, c in (*_VERDICT_COLORS.items(), ("inconclusive / other", "#7f8c8d"))
    ]
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


SUMMARY_FIGURE = "summary.png"


def build_blocks(
    stored: Sequence[StoredResult], problems: Sequence[str] = (), summary_figure: Path | None = None
) -> list[Any]:
    doc = _Doc()
    by_slug = _pick(stored)
    titles = {p.slug: p.title for p in PAPERS}
    n_checked = len(by_slug)
    verdicts = [runs[0].result.verdict for runs in by_slug.values()]
    n_repro = sum(v.reproduced for v in verdicts)
    doc.add(
        Heading("icml25: claim checks of ICML 2025 papers", 1),
        Para(
            f"{len(PAPERS)} papers in the catalog; {n_checked} with stored results, {n_repro} reproduced at "
            "the largest scale run. Every verdict is computed from criteria declared in the paper's "
            "check before the numbers were measured; nothing here was rerun to build this page."
        ),
        Heading("Verdicts", 2, "verdicts"),
        Table(
            [
                "paper",
                "title",
                "headline metric",
                "baseline",
                "ours",
                "delta",
                "criterion",
                "verdict",
                "scale",
                "runtime",
            ],
            [_safe_headline_row(runs[0], titles.get(slug, slug)) for slug, runs in sorted(by_slug.items())],
        ),
    )
    if summary_figure is not None:
        doc.blocks.insert(
            2,
            Figure(
                summary_figure,
                SUMMARY_FIGURE,
                "Every checked paper at a glance: how far our method clears (+) or misses (−) its "
                "headline criterion (against the named baseline, or the threshold), relative to that "
                "baseline or threshold; error bars are our seed standard deviation; colour is the verdict.",
            ),
        )
    status_rows = []
    for p in PAPERS:
        runs = by_slug.get(p.slug)
        last = f"{runs[0].result.verdict} ({runs[0].result.scale})" if runs else "not run"
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
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:1em 0;font-size:.88em}
th,td{border:1px solid #ddd;padding:.3em .55em;
text-align:left;vertical-align:top}th{background:#f4f4f4}
blockquote{border-left:4px solid #c0392b;margin:1em 0;
padding:.2em 1em;background:#fbf3f2}small{color:#666}figure{margin:1em 0}figure img{max-width:100%}
figcaption{font-size:.85em;color:#555}.pass{color:#1e8449;font-weight:600}.FAIL{color:#c0392b;font-weight:600}
"""


def _inline_md(text: str) -> str:
    """Escape, then turn the two Markdown forms our cells use (**bold**, [x](#a)) into HTML."""
    import re

    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"\[([^\]]+)\]\((#[\w-]+)\)", r'<a href="\2">\1</a>', out)


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
                    f'<td class="{html.escape(c)}">{_inline_md(c)}</td>'
                    if c in ("pass", "FAIL")
                    else f"<td>{_inline_md(c)}</td>"
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


def _draw_summary_atomic(margins: Sequence[HeadlineMargin], fig_dir: Path) -> Path:
    """The summary figure, drawn under a temporary name and renamed (a concurrent report sees old or new)."""
    fd, tmp = tempfile.mkstemp(prefix=".summary.", suffix=".png", dir=fig_dir)
    os.close(fd)
    try:
        draw_summary_figure(margins, Path(tmp))
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
        margins = headline_margins(stored)
        summary = _draw_summary_atomic(margins, fig_dir) if margins else None
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
    """Arms (claim order) and metrics (first-use order) that the evaluated criteria read."""
    claim = result.claim
    evaluated = {c.name for c in result.criteria}
    pairs: list[tuple[str, str]] = []
    for c in claim["criteria"]:
        if c["name"] not in evaluated:
            continue
        pairs.append((c["arm"], c["metric"]))
        if c.get("other_arm"):
            pairs.append((c["other_arm"], c.get("other_metric") or c["metric"]))
    metrics = list(dict.fromkeys(m for _, m in pairs))
    used_arms = {a for a, _ in pairs}
    order = [claim["ours"], *claim["baselines"]]
    arms = [a for a in order if a in used_arms] + sorted(used_arms - set(order))
    return arms, metrics


def paper_result_table(result: CheckResult) -> str:
    """One stored check result as Markdown: the metrics its criteria use, each criterion, the verdict.

    The first table has a row per metric that some criterion reads and a column per arm that a
    criterion reads (ours first), as mean ± sd over seeds; the second lists every evaluated
    criterion with value, threshold and pass/fail (the same table REPORT.md shows); a closing
    line gives the verdict, seeds, wall time, run id, start time and commit. Rendered with the
    report's own Markdown renderer, so a README and REPORT.md agree cell for cell.
    """
    claim = result.claim
    arms, metrics = _criterion_metrics(result)
    blocks: list[Any] = []
    if metrics:
        blocks.append(
            Table(
                ["metric (mean ± sd over seeds)"]
                + [a + (" (ours)" if a == claim["ours"] else "") for a in arms],
                [[m] + [_mean_sd(result, a, m) for a in arms] for m in metrics],
            )
        )
    blocks.append(_criteria_table(result))
    commit = result.environment.get("git_commit") or "unknown"
    blocks.append(
        Para(
            f"**Verdict at scale {result.scale}: {result.verdict}** ({result.verdict.reason}). "
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
