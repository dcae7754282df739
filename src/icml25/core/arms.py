"""The declarative layer of a trained check: arms, one sweep for each chosen on validation, references.

Most checks train several systems (ours, baselines, references) on the same data, give each the same
hyperparameter sweep, keep the setting with the best validation score, and score the kept model on
the test items. :class:`Arm` says how one system trains and scores; :func:`run_arms` runs the sweep
for every arm of one seed with :func:`icml25.core.tuning.best_on_validation`; :class:`ArmsCheck` is a
:class:`~icml25.core.check.ClaimCheck` whose ``run_seed`` and standard figure are built from them,
so a paper's ``check.py`` holds only its data, its arms and what is specific to the paper:

    class MyCheck(ArmsCheck[MyConfig]):
        def make_data(self, config, seed, ctx): ...          # the seed's train/validation/test data
        def arms(self, config): return (Arm("ours", fit=..., validation_loss=..., test_items=...,
                                            sweep=({"lr": 1e-3}, {"lr": 3e-3})), ...)

The runner in :mod:`icml25.core.check` then does the seeds, the pairing of per-item scores across
arms, the intervals, the gates and the verdict.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.tuning import best_on_validation

__all__ = ["Arm", "ArmRun", "ArmsCheck", "run_arms"]

C = TypeVar("C")

Setting = Mapping[str, Any]


@dataclass(frozen=True)
class Arm:
    """One measured system.

    Args:
        name: the arm's name in metrics, criteria and figures.
        fit: ``fit(data, setting, seed, earlier) -> model``: train with one sweep setting; ``earlier``
            holds the :class:`ArmRun` of every arm run before this one in the same seed (a student
            distilled from a teacher reads its teacher there).
        validation_loss: ``(data, model) -> float``, lower is better (negate a score); chooses the
            setting. Never sees test data.
        test_items: ``(data, model) -> {metric: rows}``: per-item test scores (first axis = test
            items, the same items in the same order for every arm).
        sweep: the settings tried, in order; ties go to the first. Give every compared arm the same
            sweep (equal effort); a reference arm usually has one setting.
        reference: a trivial floor (constant, untrained, marginals, ...), never a baseline to beat.
    """

    name: str
    fit: Callable[[Any, Setting, int, Mapping[str, ArmRun]], Any]
    validation_loss: Callable[[Any, Any], float]
    test_items: Callable[[Any, Any], Mapping[str, Any]]
    sweep: tuple[Setting, ...] = ({},)
    reference: bool = False

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("Arm.name must be non-empty")
        if not self.sweep:
            raise ValueError(f"Arm {self.name!r}: sweep must hold at least one setting")


@dataclass
class ArmRun:
    """What one arm's sweep produced in one seed: the kept setting and model, its scores."""

    name: str
    setting: Setting
    setting_index: int
    model: Any
    validation_loss: float
    sweep_losses: tuple[float, ...]
    items: dict[str, np.ndarray]
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)


def run_arms(
    arms: Sequence[Arm],
    data: Any,
    seed: int,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, ArmRun]:
    """Run every arm's sweep on ``data`` for one seed; keep each arm's best setting on validation.

    Only the kept model is scored on the test items.

    Raises:
        ValueError: duplicate arm names, or test rows whose item count differs between arms.
    """
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise ValueError(f"arm names must be unique, got {names}")
    runs: dict[str, ArmRun] = {}
    n_items: dict[str, int] = {}
    for arm in arms:
        start = time.perf_counter()
        fitted: dict[int, tuple[Any, float]] = {}
        for i, setting in enumerate(arm.sweep):
            if progress is not None:
                progress(f"{arm.name} {_describe(setting)}".strip(), i, len(arm.sweep))
            model = arm.fit(data, setting, seed, runs)
            fitted[i] = (model, float(arm.validation_loss(data, model)))
        best = best_on_validation(fitted, lambda run: run[1])
        model, loss = fitted[best]
        items = {k: np.asarray(v, dtype=float) for k, v in arm.test_items(data, model).items()}
        for metric, rows in items.items():
            if metric in n_items and rows.shape[0] != n_items[metric]:
                raise ValueError(
                    f"arm {arm.name!r} scored {rows.shape[0]} test items for {metric!r}, others "
                    f"{n_items[metric]}: paired intervals need the same items in every arm"
                )
            n_items[metric] = rows.shape[0]
        runs[arm.name] = ArmRun(
            name=arm.name,
            setting=dict(arm.sweep[best]),
            setting_index=best,
            model=model,
            validation_loss=loss,
            sweep_losses=tuple(f for _, f in fitted.values()),
            items=items,
            seconds=time.perf_counter() - start,
        )
    return runs


def _describe(setting: Setting) -> str:
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in setting.items())


class ArmsCheck(ClaimCheck[C], Generic[C]):
    """A claim check whose arms are :class:`Arm` declarations.

    Subclasses implement :meth:`make_data` and :meth:`arms`, and may add paper-specific metrics in
    :meth:`extra_metrics`. Each arm reports ``validation_loss``, ``setting_index`` and one metric
    per test-item score (the mean of its rows, or ``item_statistics[metric]``); the standard
    figure shows every item metric per arm with the references greyed.
    """

    #: item metrics drawn in the standard figure (default: every item metric of the first seed)
    figure_metrics: ClassVar[tuple[str, ...]] = ()

    def make_data(self, config: C, seed: int, ctx: RunContext) -> Any:
        raise NotImplementedError

    def arms(self, config: C) -> Sequence[Arm]:
        raise NotImplementedError

    def extra_metrics(
        self, config: C, seed: int, data: Any, runs: Mapping[str, ArmRun], ctx: RunContext
    ) -> Mapping[str, Mapping[str, float]]:
        """Optional: further ``{arm: {metric: value}}`` measured from the kept models."""
        return {}

    def run_seed(self, config: C, seed: int, ctx: RunContext) -> SeedOutcome:
        data = self.make_data(config, seed, ctx)
        arms = self.arms(config)
        claim = self.claim_for(config)
        declared = set(claim.arms)
        unknown = [a.name for a in arms if a.name not in declared]
        if unknown:
            raise ValueError(f"{type(self).__name__}: arms {unknown} are not declared in the claim")
        runs = run_arms(arms, data, seed, progress=ctx.progress)
        metrics: dict[str, dict[str, float]] = {}
        items: dict[str, dict[str, np.ndarray]] = {}
        for name, run in runs.items():
            m = metrics.setdefault(name, {})
            m["validation_loss"] = run.validation_loss
            m["setting_index"] = float(run.setting_index)
            m["fit_seconds"] = run.seconds
            for metric, rows in run.items.items():
                stat = self.item_statistics.get(metric)
                m[metric] = float(stat(rows)) if stat is not None else float(rows.mean())
            items[name] = run.items
        for arm, extra in self.extra_metrics(config, seed, data, runs, ctx).items():
            metrics.setdefault(arm, {}).update({k: float(v) for k, v in extra.items()})
        series = {
            "chosen_setting": {n: dict(r.setting) for n, r in runs.items()},
            "sweep_validation_loss": {
                n: [x if math.isfinite(x) else None for x in r.sweep_losses] for n, r in runs.items()
            },
        }
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def make_figures(self, config: C, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import new_figure, plot_arms

        claim = self.claim_for(config)
        names = self.figure_metrics or tuple(
            sorted({m for arm_items in outcomes[0].items.values() for m in arm_items})
        )
        if not names:
            return
        fig, axes = new_figure(ncols=len(names), width=3.8, height=3.2)
        for ax, metric in zip(np.atleast_1d(axes), names, strict=True):
            values = {
                arm: [float(o.metrics[arm][metric]) for o in outcomes if metric in o.metrics.get(arm, {})]
                for arm in claim.arms
            }
            plot_arms(
                ax,
                {a: v for a, v in values.items() if v},
                ours=claim.ours,
                baselines=claim.baselines,
                references=claim.references,
                ylabel=metric,
            )
        ctx.save_figure(
            fig,
            "arms",
            "Test metric per arm (bars: mean over seeds, dots: seeds); grey hatched bars are the reference "
            "arms, which show what learning nothing scores. Each arm kept its best sweep setting on "
            "validation.",
        )
