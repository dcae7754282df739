"""The base class of every claim check, and the one runner that turns seeds into a verdict.

A paper's ``check.py`` subclasses :class:`ClaimCheck`: it declares its :class:`Claim`, a frozen
config dataclass with ``tiny``/``small``/``full`` presets, and ``run_seed``, which trains and
evaluates our method and its baselines on one seed and returns measured metrics per arm. The
runner here seeds, times, aggregates over seeds, evaluates the pre-declared criteria, computes
the verdict and stores the result. A check cannot set its own verdict.

    class MyCheck(ClaimCheck[MyConfig]):
        slug = "my_paper"
        claim = CLAIM
        presets = {"tiny": MyConfig(n=10), "small": MyConfig(), "full": MyConfig(n=10_000)}

        def run_seed(self, config, seed, ctx):
            ...
            return SeedOutcome(metrics={"ours": {"acc": 0.9}, "baseline": {"acc": 0.5}})
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from icml25.core.claims import (
    REQUIRED_SCALES,
    SCALES,
    CheckResult,
    Claim,
    Criterion,
    CriterionResult,
    FigureRef,
    MetricSummary,
    claim_to_json,
    compute_verdict,
    evaluate_criterion,
    summarize_metrics,
    to_jsonable,
)
from icml25.core.config import ConfigError, apply_overrides, config_to_dict
from icml25.core.progress import NullReporter, Reporter
from icml25.core.results import ResultStore
from icml25.core.runtime import environment, seed_everything, set_threads, utc_now
from icml25.core.samples import SAMPLES_FILE, collect_samples

MAX_SEEDS = 1000  # more seeds than this in one run is a typo, not an experiment

__all__ = ["ClaimCheck", "SeedOutcome", "RunContext", "NeedsResource", "FIGURE_FAILURE_NOTE"]

#: Prefix of the note a run records when its figure code raised (the measured result is kept).
FIGURE_FAILURE_NOTE = "figures not drawn"

C = TypeVar("C")


class NeedsResource(Exception):  # noqa: N818 - reads as "needs resource"
    """Raised by a check that cannot run here without ``resource`` (e.g. ``"gpu"``)."""

    def __init__(self, resource: str, why: str = "") -> None:
        super().__init__(f"needs {resource}" + (f": {why}" if why else ""))
        self.resource = resource
        self.why = why


@dataclass(frozen=True)
class SeedOutcome:
    """What one seed of a check measured.

    Args:
        metrics: ``{arm: {metric: value}}``; the criteria read these.
        series: curves and small arrays for figures and the report (JSON-able).
        notes: remarks worth keeping with the result (e.g. "network arm skipped: budget").
        items: ``{arm: {metric: rows}}``, the per-item scores behind a metric that is a statistic
            over test items (rows: first axis = items, the same items in the same order for every
            arm). Paired criteria bootstrap over them; the metric's value, when not in
            ``metrics``, is the check's ``item_statistics[metric]`` of the rows (the mean by default).
            They are not stored with the result.
    """

    metrics: Mapping[str, Mapping[str, float]]
    series: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    items: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


class RunContext:
    """Handed to ``run_seed``/``make_figures``: progress, logging and figure saving."""

    def __init__(self, *, slug: str, scale: str, run_dir: Path, reporter: Reporter) -> None:
        self.slug = slug
        self.scale = scale
        self.run_dir = run_dir
        self.seed: int | None = None
        self._reporter = reporter
        self.figures: list[FigureRef] = []
        #: the evaluated criteria and gates, set before ``make_figures`` is called
        self.criteria: tuple[CriterionResult, ...] = ()

    def progress(self, task: str, done: int, total: int | None = None) -> None:
        """Report the current task (name it by what it does: ``"train tarflow"``), ``done`` of ``total``."""
        self._reporter.update(task, done, total)

    def start_seed(self, index: int, n_seeds: int, seed: int) -> None:
        self.seed = seed
        starter = getattr(self._reporter, "start_seed", None)
        if starter is not None:  # a reporter written before seeds were announced still works
            starter(index, n_seeds, seed)

    def log(self, message: str) -> None:
        self._reporter.log(message)

    def save_figure(self, fig: Any, name: str, caption: str) -> Path:
        """Save a matplotlib figure as ``<name>.png`` in the run directory and close it."""
        if not name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"figure name must be alphanumeric with - or _, got {name!r}")
        import matplotlib.pyplot as plt

        path = self.run_dir / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.figures.append(FigureRef(file=path.name, caption=caption))
        return path


class ClaimCheck(Generic[C]):
    """Base class of a paper's claim check. Subclasses set the class attributes and ``run_seed``."""

    slug: ClassVar[str]
    claim: ClassVar[Claim]
    presets: ClassVar[Mapping[str, Any]]
    default_seeds: ClassVar[Mapping[str, int]] = {"tiny": 1, "small": 2, "full": 3}
    #: metric -> function of one arm's item rows, for metrics that are not a mean over items
    item_statistics: ClassVar[Mapping[str, Callable[[np.ndarray], float]]] = {}
    #: bootstrap draws per paired interval (fewer for an expensive item statistic)
    bootstrap_resamples: ClassVar[int] = 2000
    #: the seeds of the run in progress, in the order they run (empty outside :meth:`run`); a check
    #: that queues later seeds' work on worker processes while one seed evaluates reads it
    planned_seeds: tuple[int, ...] = ()

    # -- what subclasses implement ------------------------------------------------------------

    def run_seed(self, config: C, seed: int, ctx: RunContext) -> SeedOutcome:
        raise NotImplementedError

    def make_figures(self, config: C, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        """Optional: draw figures from all seeds' outcomes with ``ctx.save_figure``."""

    def claim_for(self, config: C) -> Claim:
        """The claim judged for ``config``; override when criteria depend on the config.

        A check whose criteria name preset-dependent quantities (grid sizes, sample counts,
        sequence lengths) builds them here from the config, so that ``--set`` on a size changes
        the criteria with it instead of leaving them unevaluable. The default is :attr:`claim`.
        """
        return self.claim

    def begin_run(self, config: C) -> None:
        """Optional: called once at the start of every :meth:`run`, before the first seed.

        Reset here what the seeds of one run share (a learning rate chosen on the first seed, a
        cache of seed-independent evaluations), so that a second run starts clean. The run's seeds
        are in :attr:`planned_seeds` from here until the run ends.
        """

    def end_run(self) -> None:
        """Optional: called once at the end of every :meth:`run`, also when it failed; release
        per-run resources (worker pools, caches) here."""

    # -- the runner ---------------------------------------------------------------------------

    def config(self, scale: str = "small", overrides: Mapping[str, Any] | None = None) -> C:
        """The preset for ``scale`` with ``overrides`` applied (type-checked)."""
        if scale not in SCALES:
            raise ConfigError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
        missing = [s for s in REQUIRED_SCALES if s not in self.presets]
        if missing:
            raise TypeError(f"{type(self).__name__} lacks presets for {missing}")
        if scale not in self.presets:  # medium: only where small cannot pass its gates on a CPU
            raise ConfigError(
                f"{self.slug} has no {scale} preset; its scales are {', '.join(self.scales())}"
            )
        return apply_overrides(self.presets[scale], overrides or {})

    def scales(self) -> tuple[str, ...]:
        """The scales this check has a preset for, smallest first."""
        return tuple(s for s in SCALES if s in self.presets)

    def run(
        self,
        scale: str = "small",
        *,
        seeds: Sequence[int] | None = None,
        n_seeds: int | None = None,
        overrides: Mapping[str, Any] | None = None,
        store: ResultStore | None = None,
        reporter: Reporter | None = None,
    ) -> CheckResult:
        """Run the check for every seed, evaluate the criteria and (if ``store``) save the result."""
        config = self.config(scale, overrides)
        if seeds is None:
            count = n_seeds if n_seeds is not None else self.default_seeds.get(scale, 1)
            if not 1 <= count <= MAX_SEEDS:
                raise ConfigError(f"n_seeds must be between 1 and {MAX_SEEDS}, got {count}")
            seeds = list(range(count))
        seeds = [int(s) for s in seeds]
        if not seeds or len(seeds) > MAX_SEEDS:
            raise ConfigError(f"seeds must hold between 1 and {MAX_SEEDS} seeds, got {len(seeds)}")
        if any(s < 0 for s in seeds):
            raise ConfigError(f"seeds must be non-negative, got {seeds}")
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"seeds must be distinct, got {seeds}")
        reporter = reporter or NullReporter()
        run_id = ResultStore.new_run_id()
        started_at = utc_now()
        set_threads()

        scratch: tempfile.TemporaryDirectory[str] | None = None
        if store is not None:
            store.ensure_writable()
            run_dir = store.staging_dir(self.slug, scale, run_id)
        else:
            scratch = tempfile.TemporaryDirectory(prefix=f"icml25-{self.slug}-")
            run_dir = Path(scratch.name)
        ctx = RunContext(slug=self.slug, scale=scale, run_dir=run_dir, reporter=reporter)
        try:
            self.planned_seeds = tuple(seeds)
            try:
                self.begin_run(config)
                try:
                    result = self._run(config, scale, seeds, ctx, run_id, started_at)
                finally:
                    self.end_run()
            finally:
                self.planned_seeds = ()
        except BaseException:
            if store is not None:
                store.discard(run_dir)
            raise
        finally:
            if scratch is not None:
                scratch.cleanup()
        if store is not None:
            store.commit(result, run_dir)
        return result

    def _claim_record(self, claim: Claim, config: C, scale: str) -> dict[str, Any]:
        """The claim as stored with a result; "our setup" says which preset settings this run changed."""
        record = claim_to_json(claim)
        preset = self.presets.get(scale)
        if preset is not None and dataclasses.is_dataclass(config) and dataclasses.is_dataclass(preset):
            changed = _changed_settings(config_to_dict(preset), config_to_dict(config))
            if changed:
                record["setup_notes"] = (
                    f"{record.get('setup_notes') or ''} This run changed the {scale} preset: "
                    + ", ".join(changed)
                    + "."
                ).strip()
        return record

    def _run(
        self, config: C, scale: str, seeds: list[int], ctx: RunContext, run_id: str, started_at: str
    ) -> CheckResult:
        start = time.perf_counter()
        outcomes: list[SeedOutcome] = []
        missing: str | None = None
        notes: list[str] = []
        n_samples = 0
        for index, seed in enumerate(seeds):
            ctx.start_seed(index, len(seeds), seed)
            seed_everything(seed)
            try:
                with collect_samples() as samples:
                    outcome = self.run_seed(config, seed, ctx)
                n_samples += _append_samples(ctx.run_dir, seed, samples)
            except NeedsResource as need:
                missing = need.resource
                notes.append(str(need))
                break
            if not isinstance(outcome, SeedOutcome):
                raise TypeError(f"{type(self).__name__}.run_seed must return a SeedOutcome")
            outcomes.append(outcome)
            notes.extend(outcome.notes)
        ctx.seed = None
        claim = self.claim_for(config)
        items = _collect_items(outcomes)
        per_seed = [dict(o.metrics) for o in outcomes]
        for seed_metrics, outcome in zip(per_seed, outcomes, strict=True):
            for arm, arm_items in outcome.items.items():
                filled = dict(seed_metrics.get(arm, {}))
                for metric, rows in arm_items.items():
                    if metric not in filled:
                        stat = self.item_statistics.get(metric)
                        arr = np.asarray(rows, dtype=float)
                        filled[metric] = float(stat(arr)) if stat is not None else float(arr.mean())
                seed_metrics[arm] = filled
        metrics = summarize_metrics(per_seed)
        for arm in claim.arms:  # every declared arm appears, even one that measured nothing
            metrics.setdefault(arm, {})
        counts = {f"{a}.{m}": len(s.values) for a, ms in metrics.items() for m, s in ms.items()}
        partial = sorted(k for k, n in counts.items() if n != len(outcomes))
        if partial:
            notes.append("measured on fewer seeds than were run: " + ", ".join(partial))
        applicable = (*claim.gates_at(scale), *claim.criteria_at(scale))
        criteria = tuple(
            evaluate_criterion(
                c,
                metrics,
                items=items,
                statistics=self.item_statistics,
                role=claim.role_of(c.name),
                resamples=self.bootstrap_resamples,
            )
            for c in applicable
        )
        ctx.criteria = criteria
        if outcomes and missing is None:
            try:
                self.make_figures(config, outcomes, ctx)
                if any(c.interval is not None for c in criteria):
                    from icml25.core.plotting import draw_paired_intervals

                    draw_paired_intervals(criteria, ctx)
            except Exception as exc:  # a figure never costs the measured result
                notes.append(f"{FIGURE_FAILURE_NOTE}: {type(exc).__name__}: {exc}")
        if outcomes:
            notes.extend(_unmeasured_notes(applicable, metrics))
        if n_samples:
            notes.append(f"{SAMPLES_FILE}: {n_samples} model requests and replies, beside result.json")
        verdict = compute_verdict(
            criteria,
            n_seeds=len(outcomes),
            min_seeds=claim.min_seeds,
            missing_resource=missing,
            scale=scale,
        )
        return CheckResult(
            slug=self.slug,
            scale=scale,
            seeds=tuple(seeds[: len(outcomes)]),
            claim=self._claim_record(claim, config, scale),
            metrics=metrics,
            criteria=criteria,
            verdict=verdict,
            config=config_to_dict(config) if dataclasses.is_dataclass(config) else {},
            wall_time_s=time.perf_counter() - start,
            environment=environment(),
            started_at=started_at,
            figures=tuple(ctx.figures),
            series=to_jsonable({str(s): o.series for s, o in zip(seeds, outcomes, strict=False)}),
            notes=tuple(dict.fromkeys(notes)),
            run_id=run_id,
        )


def _append_samples(run_dir: Path, seed: int, samples: Sequence[Mapping[str, Any]]) -> int:
    """Append one seed's logged samples to the run folder's samples file; returns how many."""
    if not samples:
        return 0
    import json

    with open(run_dir / SAMPLES_FILE, "a", encoding="utf-8") as fh:
        for sample in samples:
            fh.write(json.dumps(to_jsonable({"seed": seed, **sample}), allow_nan=False) + "\n")
    return len(samples)


def _collect_items(outcomes: Sequence[SeedOutcome]) -> dict[str, dict[str, list[np.ndarray]]]:
    """``{arm: {metric: [rows of seed 1, rows of seed 2, ...]}}`` for item scores every seed reported."""
    if not outcomes:
        return {}
    out: dict[str, dict[str, list[np.ndarray]]] = {}
    for arm, arm_items in outcomes[0].items.items():
        for metric in arm_items:
            rows = [o.items.get(arm, {}).get(metric) for o in outcomes]
            if all(r is not None for r in rows):
                out.setdefault(arm, {})[metric] = [np.asarray(r, dtype=float) for r in rows]
    return out


def _changed_settings(preset: Any, config: Any, prefix: str = "") -> list[str]:
    """``key=value`` for every (nested) config field that differs from the preset."""
    out = []
    for key, value in config.items():
        before = preset.get(key) if isinstance(preset, Mapping) else None
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            out += _changed_settings(before, value, f"{prefix}{key}.")
        elif value != before:
            out.append(f"{prefix}{key}={value!r}")
    return out


def _unmeasured_notes(
    criteria: Sequence[Criterion], metrics: Mapping[str, Mapping[str, MetricSummary]]
) -> list[str]:
    """One note per criterion that names a metric its arm did not report.

    A metric that *no* arm reported usually means the criterion and the check disagree on a
    name (e.g. a ``--set`` override changed a size that the metric name carries, and the check
    does not build its criteria from the config in ``claim_for``); the note says so.
    """
    reported = sorted({m for ms in metrics.values() for m in ms})
    notes = []
    for c in criteria:
        sides = [(c.arm, c.metric)] + ([(c.other_arm, c.rhs_metric)] if c.other_arm is not None else [])
        for arm, metric in sides:
            if metric in metrics.get(arm, {}):
                continue
            if metric in reported:
                notes.append(f"criterion {c.name!r} lacks metric {arm}.{metric}: {arm!r} did not report it")
            else:
                shown = ", ".join(reported[:12]) + (", ..." if len(reported) > 12 else "")
                notes.append(
                    f"criterion {c.name!r} lacks metric {arm}.{metric}: no arm reported {metric!r} "
                    f"(reported: {shown or 'nothing'})"
                )
    return notes
