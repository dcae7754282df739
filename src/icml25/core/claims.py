"""The claim-check protocol: claims, criteria declared in advance, results and verdicts.

A paper's headline claim becomes a :class:`Claim` with a tuple of :class:`Criterion` objects,
written in the paper's ``check.py`` before any number is seen. A run measures metrics for
every *arm* (our method and each baseline) over one or more seeds; :func:`evaluate_criterion`
turns those measurements into a :class:`CriterionResult`, and :func:`compute_verdict` is the
only function that turns criterion results into a :class:`Verdict`. No check sets a verdict
by hand.

Vocabulary:
    arm      one system being measured (``"rfm"``, ``"fixed_kernel"``, ...)
    metric   a named scalar measured once per seed for an arm (``"add/final_test_acc"``)
    reduce   how per-seed values become the one number a criterion tests (mean, median, min, max)
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import PurePath
from typing import Any, Literal

import numpy as np

from icml25.core.stats import (
    DEFAULT_RESAMPLES,
    Comparison,
    Interval,
    judge,
    paired_interval,
    resolving_factor,
)
from icml25.core.validate import check_positive

__all__ = [
    "REQUIRED_SCALES",
    "SCALES",
    "Claim",
    "Criterion",
    "CriterionResult",
    "MetricSummary",
    "Verdict",
    "VerdictKind",
    "CheckResult",
    "ROLES",
    "closing_gates",
    "compute_verdict",
    "paired_criterion",
    "evaluate_criterion",
    "rejudge",
    "summarize_metrics",
    "to_jsonable",
]

#: Every scale a check may run at, smallest first. ``medium`` is optional: a preset sized for one
#: GPU in at most 30 minutes, declared only where ``small`` cannot pass its gates on the CPU.
SCALES: tuple[str, ...] = ("tiny", "small", "medium", "full")
#: The scales every check must have a preset for.
REQUIRED_SCALES: tuple[str, ...] = ("tiny", "small", "full")

Op = Literal["<", "<=", ">", ">="]
Role = Literal["headline", "supporting", "gate", "smoke"]
ROLES: tuple[str, ...] = ("headline", "supporting", "gate", "smoke")
Reduce = Literal["mean", "median", "min", "max"]

_OPS: dict[str, Any] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
_REDUCERS: dict[str, Any] = {
    "mean": statistics.fmean,
    "median": statistics.median,
    "min": min,
    "max": max,
}


# ----------------------------------------------------------------------------------------------
# Strict JSON
# ----------------------------------------------------------------------------------------------


def to_jsonable(obj: Any) -> Any:
    """``obj`` as plain, strict JSON types: the one converter for everything a result stores.

    Mappings become dicts with string keys; lists and tuples (nested too) become lists; numpy
    scalars and arrays and torch tensors (any device, dtype or ``requires_grad``) become Python
    numbers and nested lists; paths become strings; every non-finite float (NaN, +-inf) becomes
    ``None``, since strict JSON has no NaN.

    Raises:
        TypeError: ``obj`` holds something with no JSON form (an arbitrary object, a set, ...).
    """
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float):  # before int/str checks: covers float subclasses such as np.float64
        return float(obj) if math.isfinite(obj) else None
    if obj is None or isinstance(obj, bool | str):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, PurePath):
        return str(obj)
    if type(obj).__module__.startswith("torch") and hasattr(obj, "detach"):
        return to_jsonable(obj.detach().cpu().tolist())  # tolist handles bfloat16, which numpy lacks
    if hasattr(obj, "__array__"):  # other array-likes
        array = np.asarray(obj)
        if array.dtype != object:
            return to_jsonable(array.tolist())
    raise TypeError(f"cannot store {type(obj).__name__} in a result (not JSON-able)")


# ----------------------------------------------------------------------------------------------
# Criteria and claims (declared in advance)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Criterion:
    """One pre-declared condition on measured metrics.

    The tested value is ``reduce(arm.metric over seeds)``. It is compared with ``op`` against
    either a constant ``threshold`` or ``factor * reduce(other_arm.other_metric)`` (another arm's
    measurement, e.g. "ours' bits/dim < 0.98 x the baseline's"). Exactly one of ``threshold``
    and ``other_arm`` must be given.

    Args:
        name: short unique identifier within the claim (``"groks_by_30"``).
        arm: the arm whose metric is tested.
        metric: the metric name as reported by the check.
        op: one of ``<``, ``<=``, ``>``, ``>=``.
        threshold: constant right-hand side.
        other_arm: arm whose metric forms the right-hand side.
        other_metric: that arm's metric; defaults to ``metric``.
        factor: multiplies the other arm's value (``1.0`` is a plain comparison).
        reduce: how per-seed values are reduced to one number.
        scales: the scales at which this criterion is evaluated (``tiny`` criteria are smoke
            conditions; a claim is only judged at ``small`` and ``full``).
        description: the condition in words, for the report.
        guards: for a gate only: the names of the criteria it alone closes. A gate with no
            ``guards`` closes the whole verdict when it fails; a scoped gate leaves the verdict to
            the other criteria and reports the guarded ones as not judged (for example, the claim
            about a language model's quality behind "the embedded model can do the task", beside a
            mechanism test with scripted components that stays judged).
    """

    name: str
    arm: str
    metric: str
    op: Op
    threshold: float | None = None
    other_arm: str | None = None
    other_metric: str | None = None
    factor: float = 1.0
    reduce: Reduce = "mean"
    scales: tuple[str, ...] = ("small", "medium", "full")
    description: str = ""
    smallest_effect: float | None = None
    effect_source: str = ""
    comparison: Comparison = "superiority"
    needs: str | None = None
    guards: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.guards, str) or len(set(self.guards)) != len(self.guards):
            raise ValueError(f"Criterion {self.name!r}: guards must be a tuple of distinct criterion names")
        if self.op not in _OPS:
            raise ValueError(f"Criterion {self.name!r}: op must be one of {sorted(_OPS)}, got {self.op!r}")
        if self.reduce not in _REDUCERS:
            raise ValueError(
                f"Criterion {self.name!r}: reduce must be one of {sorted(_REDUCERS)}, got {self.reduce!r}"
            )
        if (self.threshold is None) == (self.other_arm is None):
            raise ValueError(f"Criterion {self.name!r}: give exactly one of threshold= and other_arm=")
        unknown = set(self.scales) - set(SCALES)
        if unknown or not self.scales:
            raise ValueError(f"Criterion {self.name!r}: scales must be a non-empty subset of {SCALES}")
        if self.comparison not in ("superiority", "non_inferiority"):
            raise ValueError(
                f"Criterion {self.name!r}: comparison must be 'superiority' or 'non_inferiority', "
                f"got {self.comparison!r}"
            )
        if self.smallest_effect is not None:
            if self.other_arm is None:
                raise ValueError(
                    f"Criterion {self.name!r}: smallest_effect applies to an arm-vs-arm comparison "
                    "(other_arm=); a threshold criterion has no paired interval"
                )
            if not (math.isfinite(self.smallest_effect) and self.smallest_effect > 0):
                raise ValueError(
                    f"Criterion {self.name!r}: smallest_effect must be positive, got {self.smallest_effect}"
                )
            if not self.effect_source.strip():
                raise ValueError(
                    f"Criterion {self.name!r}: say where smallest_effect comes from (effect_source=), "
                    "e.g. the paper's reported gap or a stated fraction of it"
                )
        elif self.comparison == "non_inferiority":
            raise ValueError(
                f"Criterion {self.name!r}: a non-inferiority comparison needs its margin as smallest_effect="
            )

    @property
    def paired(self) -> bool:
        """Whether this criterion is judged by a paired interval against its smallest effect."""
        return self.smallest_effect is not None

    @property
    def rhs_metric(self) -> str:
        return self.other_metric or self.metric

    def describe(self) -> str:
        """The condition as a formula, e.g. ``mean(rfm.acc) >= 0.99``."""
        if self.smallest_effect is not None:
            diff = f"{self.arm}.{self.metric} - "
            diff += f"{self.factor:g} x " if self.factor != 1.0 else ""
            diff += f"{self.other_arm}.{self.rhs_metric}"
            sign = 1 if self.op in (">", ">=") else -1
            if self.comparison == "non_inferiority":
                margin = -sign * self.smallest_effect
                return f"paired CI of ({diff}) {self.op} {margin:g} (non-inferiority margin)"
            return f"paired CI of ({diff}) {self.op} 0 (smallest effect {sign * self.smallest_effect:g})"
        lhs = f"{self.reduce}({self.arm}.{self.metric})"
        if self.other_arm is None:
            rhs = f"{self.threshold:g}"
        else:
            rhs = f"{self.reduce}({self.other_arm}.{self.rhs_metric})"
            if self.factor != 1.0:
                rhs = f"{self.factor:g} x {rhs}"
        return f"{lhs} {self.op} {rhs}"

    def applies_at(self, scale: str) -> bool:
        return scale in self.scales


def paired_criterion(
    name: str,
    arm: str,
    metric: str,
    op: Op,
    other_arm: str,
    smallest_effect: float,
    effect_source: str,
    **kwargs: Any,
) -> Criterion:
    """An arm-vs-arm criterion judged by a paired interval: ``arm.metric - other_arm.metric``
    compared with ``op`` against 0, resolved by ``smallest_effect`` (whose origin
    ``effect_source`` states). The positional form most claims write many times over; any
    other :class:`Criterion` field (``scales``, ``description``, ``comparison``, ...) passes
    through ``kwargs``."""
    return Criterion(
        name,
        arm=arm,
        metric=metric,
        op=op,
        other_arm=other_arm,
        smallest_effect=smallest_effect,
        effect_source=effect_source,
        **kwargs,
    )


@dataclass(frozen=True)
class Claim:
    """A paper's headline claim and the criteria that decide whether we reproduce it.

    Args:
        statement: the claim in one sentence.
        source: where the paper makes it (``"Fig. 2, Sec. 3"``).
        ours: the arm that implements the paper's method.
        baselines: the arms the paper beats (and controls), in display order.
        criteria: the pre-declared conditions. All applicable ones must hold for ``reproduced``.
        headline: name of the criterion shown in the report's summary table (default: first).
        headline_baseline: ``"arm.metric"`` shown beside the headline when that criterion tests a
            threshold (default: the first baseline reporting the same metric); its metric must be
            the headline criterion's, so the summary row compares like with like.
        min_seeds: fewer seeds than this makes the verdict ``inconclusive``.
        setup_notes: how our setup differs from the paper's (scale, data, budget).
        requires: resources without which the check cannot run here (``"gpu"``, ``"llm endpoint"``).
        timed_metrics: metric names or ``fnmatch`` patterns (``"total_s_*"``), any arm, computed
            from wall-clock time (seconds, speed-ups, GFLOP/s). They differ between identical
            runs; every other metric must be deterministic given the seed, and the contract
            tests hold checks to that.
        references: arms measured on the same data that show what "learned nothing" scores (a
            constant or prevalence predictor, an untrained model, marginals, random selection) or,
            when also listed in ``controls``, what the setup allows (an oracle). Never a baseline:
            a criterion may not compare ours with one; a gate may.
        gates: point conditions under which the criteria are informative ("the trained arms beat the
            floor by m on validation"). A gate that fails makes the verdict ``inconclusive`` (or
            ``needs <resource>`` when it names one with ``needs=``), never ``not reproduced``.
        controls: the references that are positive controls (oracles, ceilings), not floors.
    """

    statement: str
    source: str
    ours: str
    baselines: tuple[str, ...]
    criteria: tuple[Criterion, ...]
    headline: str | None = None
    headline_baseline: str | None = None
    min_seeds: int = 1
    setup_notes: str = ""
    requires: tuple[str, ...] = ()
    timed_metrics: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    gates: tuple[Criterion, ...] = ()
    controls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = [c.name for c in (*self.criteria, *self.gates)]
        if len(set(names)) != len(names):
            raise ValueError(f"Claim: criterion and gate names must be unique, got {names}")
        if not self.criteria:
            raise ValueError("Claim: at least one criterion is required")
        overlap = set(self.references) & {self.ours, *self.baselines}
        if overlap:
            raise ValueError(
                f"Claim: {sorted(overlap)} are declared both as compared arms and as references; a "
                "reference shows what learning nothing scores and is never a baseline to beat"
            )
        stray = set(self.controls) - set(self.references)
        if stray:
            raise ValueError(
                f"Claim: controls {sorted(stray)} must also be references (a positive control is measured "
                "beside the floors, never beaten as a baseline)"
            )
        arms = {self.ours, *self.baselines, *self.references}
        for g in self.gates:
            if g.paired:
                raise ValueError(f"Claim: gate {g.name!r} is a point condition; give it no smallest_effect")
        criterion_names = [c.name for c in self.criteria]
        headline_name = self.headline if self.headline is not None else criterion_names[0]
        for g in self.gates:
            stray_names = set(g.guards) - set(criterion_names)
            if stray_names:
                raise ValueError(
                    f"Claim: gate {g.name!r} guards {sorted(stray_names)}, which are not criteria "
                    f"({criterion_names})"
                )
            if headline_name in g.guards:
                raise ValueError(
                    f"Claim: gate {g.name!r} guards the headline {headline_name!r}; a gate that closes "
                    "the headline closes the verdict, so give it no guards="
                )
        for c in self.criteria:
            if c.guards:
                raise ValueError(f"Claim: criterion {c.name!r} names guards=; only a gate can guard criteria")
        for c in (*self.criteria, *self.gates):
            for arm in (c.arm, c.other_arm):
                if arm is not None and arm not in arms:
                    raise ValueError(f"Claim: criterion {c.name!r} names arm {arm!r}, not in {sorted(arms)}")
        for c in self.criteria:
            if c.needs is not None:
                raise ValueError(f"Claim: criterion {c.name!r} names needs=; only a gate can need a resource")
            if c.other_arm in self.references and c.arm not in self.references and c.paired:
                raise ValueError(
                    f"Claim: criterion {c.name!r} compares with the reference {c.other_arm!r}; beating a "
                    "floor is a gate (Claim.gates), not a claim criterion"
                )
        names = [c.name for c in self.criteria]
        if self.headline is not None and self.headline not in names:
            raise ValueError(f"Claim: headline {self.headline!r} is not a criterion name ({names})")
        check_positive("Claim.min_seeds", self.min_seeds, integer=True)
        if self.headline_baseline is not None:
            arm, dot, metric = self.headline_baseline.partition(".")
            if not dot or not metric or arm not in self.baselines:
                raise ValueError(
                    f"Claim: headline_baseline must be 'baseline_arm.metric', got {self.headline_baseline!r}"
                )
            head = self.headline_criterion()
            if metric != head.metric:  # the summary row sets the two side by side: like with like
                raise ValueError(
                    f"Claim: headline_baseline {self.headline_baseline!r} reports {metric!r}, but the "
                    f"headline criterion {head.name!r} measures {head.metric!r}; name a baseline metric "
                    "of the same quantity or leave headline_baseline unset"
                )

    @property
    def arms(self) -> tuple[str, ...]:
        """Every measured arm: ours, the baselines, then the references."""
        return (self.ours, *self.baselines, *self.references)

    def role_of(self, name: str) -> Role:
        """``gate``, ``headline``, ``smoke`` (judged only at tiny) or ``supporting``."""
        if any(g.name == name for g in self.gates):
            return "gate"
        if name == self.headline_criterion().name:
            return "headline"
        c = next((c for c in self.criteria if c.name == name), None)
        if c is not None and c.scales == ("tiny",):
            return "smoke"
        return "supporting"

    def gates_at(self, scale: str) -> tuple[Criterion, ...]:
        return tuple(g for g in self.gates if g.applies_at(scale))

    def is_timed(self, metric: str) -> bool:
        """Whether ``metric`` is declared as measured from wall-clock time."""
        return any(fnmatch.fnmatchcase(metric, pattern) for pattern in self.timed_metrics)

    def criteria_at(self, scale: str) -> tuple[Criterion, ...]:
        return tuple(c for c in self.criteria if c.applies_at(scale))

    def headline_criterion(self) -> Criterion:
        """The named headline, else the first criterion judged at small scale."""
        if self.headline is None:
            return next((c for c in self.criteria if c.applies_at("small")), self.criteria[0])
        return next(c for c in self.criteria if c.name == self.headline)


# ----------------------------------------------------------------------------------------------
# Measurements and their evaluation
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSummary:
    """Per-seed values of one metric of one arm, with mean and spread."""

    values: tuple[float, ...]
    mean: float
    std: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float]) -> MetricSummary:
        vals = tuple(float(v) for v in values)
        if not vals:
            raise ValueError("MetricSummary.of: no values")
        finite = [v for v in vals if math.isfinite(v)]
        if len(finite) != len(vals):
            nan = float("nan")
            return cls(vals, nan, nan, nan, nan)
        std = statistics.stdev(vals) if len(vals) > 1 else 0.0
        return cls(vals, statistics.fmean(vals), std, min(vals), max(vals))

    def reduced(self, how: str) -> float:
        if any(not math.isfinite(v) for v in self.values):
            return float("nan")
        return float(_REDUCERS[how](self.values))


def summarize_metrics(
    per_seed: Sequence[Mapping[str, Mapping[str, float]]],
) -> dict[str, dict[str, MetricSummary]]:
    """Collect ``[{arm: {metric: value}}, ...]`` (one mapping per seed) into summaries.

    A metric missing from some seeds is summarised over the seeds that report it.
    """
    collected: dict[str, dict[str, list[float]]] = {}
    for seed_metrics in per_seed:
        for arm, metrics in seed_metrics.items():
            for name, value in metrics.items():
                collected.setdefault(arm, {}).setdefault(name, []).append(float(value))
    return {
        arm: {name: MetricSummary.of(vals) for name, vals in sorted(metrics.items())}
        for arm, metrics in collected.items()
    }


@dataclass(frozen=True)
class CriterionResult:
    """A criterion (or gate) evaluated on measurements.

    ``value`` and ``threshold`` are the two sides as point estimates (for an arm-vs-arm criterion,
    the reduced metric of each arm, the other side times ``factor``). ``passed`` is True/False for
    holds/fails and None when the criterion could not be decided (undetermined or not evaluable).

    For a paired criterion (one with a smallest effect of interest) ``effect`` is the paired
    difference's estimate, ``interval`` its confidence interval, ``interval_text`` the same in
    words with its method and units, and ``resolve_factor`` (undetermined only) about how many
    times the current units would resolve it.
    """

    name: str
    description: str
    formula: str
    value: float | None
    threshold: float | None
    op: str
    passed: bool | None
    reason: str = ""
    outcome: str = "n/a"
    role: str = "supporting"
    effect: float | None = None
    interval: tuple[float, float] | None = None
    interval_text: str = ""
    smallest_effect: float | None = None
    comparison: str = "superiority"
    resolve_factor: float | None = None
    needs: str | None = None
    guards: tuple[str, ...] = ()

    @property
    def below_smallest_effect(self) -> bool:
        """A superiority criterion that holds (its interval excludes 0 in the claimed direction) while
        its whole interval lies short of the smallest effect of interest: the difference is real but
        smaller than the effect declared worth finding. The outcome stays ``holds`` (the rule of
        :func:`icml25.core.stats.judge`); reports say so beside it."""
        if self.outcome != "holds" or self.comparison != "superiority" or self.interval is None:
            return False
        if self.smallest_effect is None:
            return False
        sign = 1.0 if self.op in (">", ">=") else -1.0
        return max(sign * self.interval[0], sign * self.interval[1]) < self.smallest_effect

    def summary(self) -> str:
        """One line: name, outcome and, where there is one, the interval."""
        text = f"{self.name} {self.outcome}"
        if self.below_smallest_effect:
            text += ", whole interval below the smallest effect"
        if self.interval_text:
            text += f" ({self.interval_text}"
            if self.smallest_effect is not None:
                kind = "margin" if self.comparison == "non_inferiority" else "smallest effect"
                text += f"; {kind} {self.smallest_effect:g}"
            text += ")"
        elif self.value is not None and self.threshold is not None:
            text += f" ({self.value:.4g} {self.op} {self.threshold:.4g})"
        resolve = self.resolve_factor
        if self.outcome == "undetermined" and resolve is not None and math.isfinite(resolve):
            text += f"; about {self.resolve_factor:.1f}x the units would resolve it"
        return text


ItemScores = Mapping[str, Mapping[str, Sequence[Any]]]  # arm -> metric -> one item array per seed


def evaluate_criterion(
    criterion: Criterion,
    metrics: Mapping[str, Mapping[str, MetricSummary]],
    *,
    items: ItemScores | None = None,
    statistics: Mapping[str, Any] | None = None,
    role: str = "supporting",
    resamples: int = DEFAULT_RESAMPLES,
) -> CriterionResult:
    """Evaluate one criterion. Missing or non-finite measurements give ``passed=None``.

    A threshold criterion (and a legacy arm-vs-arm one without ``smallest_effect``) is decided by
    its point estimates. A paired criterion is decided by :func:`icml25.core.stats.judge` on the
    interval of the paired difference: over seeds and items where both arms reported per-item
    scores for the metric (``items``; ``statistics[metric]`` maps item rows to the metric, the
    mean by default), else a paired t interval over seeds.
    """

    def lookup(arm: str, metric: str) -> tuple[float | None, str]:
        summary = metrics.get(arm, {}).get(metric)
        if summary is None:
            return None, f"metric {arm}.{metric} was not measured"
        value = summary.reduced(criterion.reduce)
        if not math.isfinite(value):
            return None, f"metric {arm}.{metric} is not finite ({summary.values})"
        return value, ""

    base: dict[str, Any] = dict(
        name=criterion.name,
        description=criterion.description,
        formula=criterion.describe(),
        op=criterion.op,
        role=role,
        smallest_effect=criterion.smallest_effect,
        comparison=criterion.comparison,
        needs=criterion.needs,
        guards=tuple(criterion.guards),
    )
    value, reason = lookup(criterion.arm, criterion.metric)
    if value is None:
        return CriterionResult(**base, value=None, threshold=None, passed=None, reason=reason)
    if criterion.other_arm is None:
        threshold = float(criterion.threshold)  # type: ignore[arg-type]
    else:
        other, reason = lookup(criterion.other_arm, criterion.rhs_metric)
        if other is None:
            return CriterionResult(**base, value=value, threshold=None, passed=None, reason=reason)
        threshold = criterion.factor * other
    if not criterion.paired:
        passed = bool(_OPS[criterion.op](value, threshold))
        return CriterionResult(
            **base, value=value, threshold=threshold, passed=passed, outcome="holds" if passed else "fails"
        )
    assert criterion.other_arm is not None and criterion.smallest_effect is not None
    a_items = (items or {}).get(criterion.arm, {}).get(criterion.metric)
    b_items = (items or {}).get(criterion.other_arm, {}).get(criterion.rhs_metric)
    statistic = (statistics or {}).get(criterion.metric)
    try:
        interval: Interval | None = paired_interval(
            a_items,
            b_items,
            metrics[criterion.arm][criterion.metric].values,
            metrics[criterion.other_arm][criterion.rhs_metric].values,
            statistic=statistic,
            factor=criterion.factor,
            resamples=resamples,
        )
    except ValueError as err:  # the two arms' measurements do not pair up (seeds or items differ)
        return CriterionResult(
            **base, value=value, threshold=threshold, passed=None, reason=f"cannot pair the arms: {err}"
        )
    outcome = judge(interval, criterion.op, criterion.smallest_effect, criterion.comparison)
    resolve = (
        resolving_factor(interval, criterion.op, criterion.smallest_effect, criterion.comparison)
        if interval is not None and outcome == "undetermined"
        else None
    )
    return CriterionResult(
        **base,
        value=value,
        threshold=threshold,
        passed={"holds": True, "fails": False}.get(outcome),
        reason="" if interval is not None else "one seed and no per-item scores: no interval",
        outcome=outcome,
        effect=interval.estimate if interval is not None else value - threshold,
        interval=(interval.low, interval.high) if interval is not None else None,
        interval_text=interval.describe() if interval is not None else "",
        resolve_factor=resolve,
    )


def rejudge(result: CriterionResult) -> CriterionResult:
    """The same criterion result with ``passed``/``outcome`` recomputed from its stored numbers.

    Used on stored results, which are untrusted: a paired result is re-judged from its interval
    and smallest effect, a point result from its value, operator and threshold.
    """
    if result.smallest_effect is not None and result.role != "gate":
        if result.interval is None:
            outcome = "undetermined" if result.value is not None and result.threshold is not None else "n/a"
        else:
            lo, hi = result.interval
            est = result.effect if result.effect is not None else (lo + hi) / 2
            interval = Interval(est, lo, hi, 0.95, "stored", 1)
            outcome = judge(interval, result.op, result.smallest_effect, result.comparison)  # type: ignore[arg-type]
        passed = {"holds": True, "fails": False}.get(outcome)
        return dataclasses.replace(result, outcome=outcome, passed=passed)
    passed = None
    known = result.op in _OPS and result.value is not None and result.threshold is not None
    if known and math.isfinite(result.value) and math.isfinite(result.threshold):  # type: ignore[arg-type]
        passed = bool(_OPS[result.op](result.value, result.threshold))
    outcome = "n/a" if passed is None else ("holds" if passed else "fails")
    return dataclasses.replace(result, passed=passed, outcome=outcome)


# ----------------------------------------------------------------------------------------------
# Verdicts
# ----------------------------------------------------------------------------------------------


class VerdictKind(StrEnum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive"
    NEEDS = "needs"


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check. ``needs`` verdicts name the missing resource."""

    kind: VerdictKind
    resource: str | None = None
    reason: str = ""

    def __str__(self) -> str:
        if self.kind is VerdictKind.NEEDS:
            return f"needs {self.resource}"
        return self.kind.value

    @property
    def reproduced(self) -> bool:
        return self.kind is VerdictKind.REPRODUCED

    @classmethod
    def parse(cls, text: str, reason: str = "") -> Verdict:
        if text.startswith("needs "):
            resource = text.removeprefix("needs ").strip()
            if not resource:
                raise ValueError("a 'needs' verdict must name its resource")
            return cls(VerdictKind.NEEDS, resource, reason)
        return cls(VerdictKind(text), None, reason)


def closing_gates(results: Sequence[CriterionResult]) -> list[CriterionResult]:
    """The gates in ``results`` that close the whole verdict: those that failed or could not be
    evaluated, except scoped ones (a gate with ``guards`` that do not name the headline), which set
    aside only the criteria they guard. :func:`compute_verdict` and the report both use this rule."""
    headline_names = {r.name for r in results if r.role == "headline"}
    return [
        g
        for g in results
        if g.role == "gate" and g.passed is not True and not (g.guards and not headline_names & set(g.guards))
    ]


def compute_verdict(
    results: Sequence[CriterionResult],
    *,
    n_seeds: int,
    min_seeds: int = 1,
    missing_resource: str | None = None,
    scale: str = "small",
) -> Verdict:
    """The one function that decides a verdict.

    ``results`` holds the claim's criteria and its gates (``role == "gate"``). Order of precedence:
        1. a missing resource             -> ``needs <resource>``
        2. no applicable criterion        -> ``inconclusive``
        3. scale ``tiny``                 -> ``inconclusive`` (a smoke run never judges the claim;
                                             the reason says whether its smoke criteria held)
        4. fewer seeds than ``min_seeds`` -> ``inconclusive``
        5. a gate failed or could not be evaluated -> ``inconclusive`` (the setup cannot show the
           effect; the reason names the gate, its value and threshold), or ``needs <resource>``
           when the gate declares that only a resource can pass it. A scoped gate (one with
           ``guards``) instead sets aside only the criteria it guards: they are reported as not
           judged (with the resource they need, where the gate names one) and the rest decide.
        6. the headline criterion fails   -> ``not reproduced``
        7. the headline is undetermined or not evaluable -> ``inconclusive`` (underpowered: the
           reason gives the interval and about how many times the units would resolve it)
        8. a supporting criterion fails   -> ``not reproduced``
        9. a supporting criterion is undetermined or not evaluable -> ``inconclusive``
       10. otherwise                      -> ``reproduced``
    The reason leads with the headline's outcome and interval, then counts the supporting ones.
    Results without roles (stored before roles existed) are all supporting: then any failure gives
    ``not reproduced``, as before.
    """
    if scale not in SCALES:
        raise ValueError(f"compute_verdict: scale must be one of {SCALES}, got {scale!r}")
    if missing_resource:
        return Verdict(VerdictKind.NEEDS, missing_resource, f"this check needs {missing_resource}")
    gates = [r for r in results if r.role == "gate"]
    criteria = [r for r in results if r.role != "gate"]
    if not criteria:
        return Verdict(VerdictKind.INCONCLUSIVE, reason="no criterion applies at this scale")
    if scale == "tiny":
        bad = [r.name for r in results if r.passed is not True]
        smoke = "smoke criteria hold" if not bad else "smoke criteria not met: " + ", ".join(bad)
        return Verdict(
            VerdictKind.INCONCLUSIVE, reason=f"tiny is a smoke run, not a test of the claim; {smoke}"
        )
    failed = [r.name for r in criteria if r.passed is False]
    if n_seeds < min_seeds:
        also = f"; on these seeds failed: {', '.join(failed)}" if failed else ""
        return Verdict(
            VerdictKind.INCONCLUSIVE,
            reason=f"{n_seeds} seed(s) run, the claim needs at least {min_seeds}{also}",
        )
    closed = closing_gates(results)
    scoped = [g for g in gates if g.guards and g not in closed]
    if closed:
        what = "; ".join(_gate_text(g) for g in closed)
        needs = next((g.needs for g in closed if g.needs and g.passed is False), None)
        if needs:
            return Verdict(VerdictKind.NEEDS, needs, f"gate failed, the claim cannot be judged here: {what}")
        return Verdict(
            VerdictKind.INCONCLUSIVE, reason=f"gate failed, the setup cannot show the effect: {what}"
        )
    set_aside: list[str] = []
    for g in scoped:
        if g.passed is not True:
            guarded = [r.name for r in criteria if r.name in g.guards]
            if guarded:
                need = f", needs {g.needs}" if g.needs and g.passed is False else ""
                set_aside.append(f"{', '.join(guarded)} not judged ({_gate_text(g)}{need})")
            criteria = [r for r in criteria if r.name not in g.guards]
    failed = [r.name for r in criteria if r.passed is False]
    if not criteria:
        return Verdict(VerdictKind.INCONCLUSIVE, reason="; ".join(set_aside))
    headline = next((r for r in criteria if r.role == "headline"), None)
    supporting = [r for r in criteria if r is not headline]
    parts = []
    if headline is not None:
        parts.append(f"headline {headline.summary()}")
    if supporting:
        n_hold = sum(r.passed is True for r in supporting)
        parts.append(f"{n_hold} of {len(supporting)} supporting hold")
        s_failed = [r.name for r in supporting if r.passed is False]
        s_open = [r.name for r in supporting if r.passed is None]
        if s_failed:
            parts.append("fails: " + ", ".join(s_failed))
        if s_open:
            parts.append("undecided: " + ", ".join(s_open))
    parts.extend(set_aside)
    reason = "; ".join(parts)
    if headline is not None:
        if headline.passed is False:
            return Verdict(VerdictKind.NOT_REPRODUCED, reason=reason)
        if headline.passed is None:
            kind = "underpowered" if headline.outcome == "undetermined" else "headline not evaluable"
            why = f" ({headline.reason})" if headline.reason else ""
            return Verdict(VerdictKind.INCONCLUSIVE, reason=f"{kind}: {reason}{why}")
    if headline is None and failed:
        return Verdict(VerdictKind.NOT_REPRODUCED, reason="failed: " + ", ".join(failed))
    if any(r.passed is False for r in supporting):
        return Verdict(VerdictKind.NOT_REPRODUCED, reason=reason)
    unknown = [r for r in criteria if r.passed is None]
    if unknown:
        if headline is None:
            return Verdict(
                VerdictKind.INCONCLUSIVE, reason="could not evaluate: " + ", ".join(r.name for r in unknown)
            )
        return Verdict(VerdictKind.INCONCLUSIVE, reason=reason)
    if headline is None:
        return Verdict(VerdictKind.REPRODUCED, reason=f"all {len(criteria)} criteria hold")
    return Verdict(VerdictKind.REPRODUCED, reason=reason)


def _gate_text(gate: CriterionResult) -> str:
    if gate.value is None or gate.threshold is None:
        return f"{gate.name} could not be evaluated ({gate.reason or 'not measured'})"
    return f"{gate.name}: {gate.value:.4g}, needs {gate.op} {gate.threshold:.4g}"


# ----------------------------------------------------------------------------------------------
# The stored record of one check run
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureRef:
    """A figure saved beside a result: file name relative to the run directory, and caption."""

    file: str
    caption: str

    def __post_init__(self) -> None:
        name = self.file
        if not name or "/" in name or "\\" in name or name.startswith(".") or not name.endswith(".png"):
            raise ValueError(f"figure file must be a plain .png name inside the run directory, got {name!r}")


@dataclass(frozen=True)
class CheckResult:
    """Everything one run of a claim check produced. Serialises to and from JSON."""

    slug: str
    scale: str
    seeds: tuple[int, ...]
    claim: dict[str, Any]
    metrics: dict[str, dict[str, MetricSummary]]
    criteria: tuple[CriterionResult, ...]
    verdict: Verdict
    config: dict[str, Any]
    wall_time_s: float
    environment: dict[str, Any]
    started_at: str
    figures: tuple[FigureRef, ...] = ()
    series: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    run_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """A strict-JSON dict (non-finite numbers become ``null``)."""
        return to_jsonable(
            {
                "schema": 1,
                "run_id": self.run_id,
                "slug": self.slug,
                "scale": self.scale,
                "seeds": list(self.seeds),
                "verdict": str(self.verdict),
                "verdict_reason": self.verdict.reason,
                "claim": self.claim,
                "references": list(self.claim.get("references", [])),
                "gates": [
                    {
                        "name": c.name,
                        "value": c.value,
                        "threshold": c.threshold,
                        "op": c.op,
                        "passed": c.passed,
                        "needs": c.needs,
                        "guards": list(c.guards),
                        "description": c.description,
                    }
                    for c in self.criteria
                    if c.role == "gate"
                ],
                "criteria": [asdict(c) for c in self.criteria],
                "metrics": {
                    arm: {name: asdict(s) for name, s in ms.items()} for arm, ms in self.metrics.items()
                },
                "config": self.config,
                "wall_time_s": self.wall_time_s,
                "environment": self.environment,
                "started_at": self.started_at,
                "figures": [asdict(f) for f in self.figures],
                "series": self.series,
                "notes": list(self.notes),
            }
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckResult:
        """Rebuild a result; raises ``ValueError`` on anything malformed (types included)."""
        try:
            metrics = {
                _str(arm): {
                    _str(name): MetricSummary(
                        values=tuple(_num(v) for v in _list(s["values"])),
                        mean=_num(s["mean"]),
                        std=_num(s["std"]),
                        min=_num(s["min"]),
                        max=_num(s["max"]),
                    )
                    for name, s in _dict(ms).items()
                }
                for arm, ms in _dict(data["metrics"]).items()
            }
            criteria = tuple(
                CriterionResult(
                    name=_str(c["name"]),
                    description=_str(c.get("description", "")),
                    formula=_str(c["formula"]),
                    value=_opt_num(c["value"]),
                    threshold=_opt_num(c["threshold"]),
                    op=_str(c["op"]),
                    passed=_opt_bool(c["passed"]),
                    reason=_str(c.get("reason", "")),
                    outcome=_choice(c.get("outcome", "n/a"), ("holds", "fails", "undetermined", "n/a")),
                    role=_choice(c.get("role", "supporting"), ROLES),
                    effect=_opt_num(c.get("effect")),
                    interval=_opt_pair(c.get("interval")),
                    interval_text=_str(c.get("interval_text", "")),
                    smallest_effect=_opt_num(c.get("smallest_effect")),
                    comparison=_choice(
                        c.get("comparison", "superiority"), ("superiority", "non_inferiority")
                    ),
                    resolve_factor=_opt_num(c.get("resolve_factor")),
                    needs=_opt_str(c.get("needs")),
                    guards=tuple(_str(g) for g in _list(c.get("guards", []))),
                )
                for c in map(_dict, _list(data["criteria"]))
            )
            return cls(
                slug=_str(data["slug"]),
                scale=_str(data["scale"]),
                seeds=tuple(int(s) for s in _list(data["seeds"])),
                claim=_check_claim(_dict(data["claim"])),
                metrics=metrics,
                criteria=criteria,
                verdict=Verdict.parse(_str(data["verdict"]), _str(data.get("verdict_reason", ""))),
                config=_dict(data["config"]),
                wall_time_s=_num(data["wall_time_s"]),
                environment=_dict(data["environment"]),
                started_at=_str(data["started_at"]),
                figures=tuple(
                    FigureRef(file=_str(f["file"]), caption=_str(f["caption"]))
                    for f in map(_dict, _list(data.get("figures", [])))
                ),
                series=_dict(data.get("series", {})),
                notes=tuple(_str(n) for n in _list(data.get("notes", []))),
                run_id=_str(data.get("run_id", "")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"malformed check result: {err!r}") from err


# -- strict readers for stored JSON ---------------------------------------------------------------


def _str(x: Any) -> str:
    if not isinstance(x, str):
        raise TypeError(f"expected a string, got {x!r}")
    return x


def _list(x: Any) -> list[Any]:
    if not isinstance(x, list):
        raise TypeError(f"expected a list, got {type(x).__name__}")
    return x


def _dict(x: Any) -> dict[str, Any]:
    if not isinstance(x, dict):
        raise TypeError(f"expected an object, got {type(x).__name__}")
    return x


def _num(x: Any) -> float:
    """A stored number; ``null`` stands for a non-finite value (NaN)."""
    if x is None:
        return float("nan")
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise TypeError(f"expected a number, got {x!r}")
    return float(x)


def _opt_num(x: Any) -> float | None:
    return None if x is None else _num(x)


def _opt_str(x: Any) -> str | None:
    return None if x is None else _str(x)


def _choice(x: Any, allowed: Sequence[str]) -> str:
    if _str(x) not in allowed:
        raise ValueError(f"expected one of {list(allowed)}, got {x!r}")
    return str(x)


def _opt_pair(x: Any) -> tuple[float, float] | None:
    if x is None:
        return None
    pair = _list(x)
    if len(pair) != 2:
        raise ValueError(f"expected [low, high], got {x!r}")
    return (_num(pair[0]), _num(pair[1]))


def _opt_bool(x: Any) -> bool | None:
    if x is not None and not isinstance(x, bool):
        raise TypeError(f"expected true, false or null, got {x!r}")
    return x


def _check_claim(claim: dict[str, Any]) -> dict[str, Any]:
    for key in ("statement", "source", "ours", "headline"):
        _str(claim[key])
    for arm in _list(claim["baselines"]):
        _str(arm)
    for c in map(_dict, _list(claim["criteria"])):
        for key in ("name", "arm", "metric", "op"):
            _str(c[key])
    if claim.get("headline_baseline") is not None:
        _str(claim["headline_baseline"])
    return claim


def claim_to_json(claim: Claim) -> dict[str, Any]:
    """The claim as stored in every result, so a report needs no code import."""
    return {
        "statement": claim.statement,
        "source": claim.source,
        "ours": claim.ours,
        "baselines": list(claim.baselines),
        "headline": claim.headline_criterion().name,
        "headline_baseline": claim.headline_baseline,
        "min_seeds": claim.min_seeds,
        "setup_notes": claim.setup_notes,
        "requires": list(claim.requires),
        "timed_metrics": list(claim.timed_metrics),
        "references": list(claim.references),
        "controls": list(claim.controls),
        "criteria": [
            {
                **{k: v for k, v in asdict(c).items() if k != "guards"},  # only gates guard criteria
                "scales": list(c.scales),
                "formula": c.describe(),
                "role": claim.role_of(c.name),
            }
            for c in claim.criteria
        ],
        "gates": [
            {
                **asdict(g),
                "scales": list(g.scales),
                "guards": list(g.guards),
                "formula": g.describe(),
                "role": "gate",
            }
            for g in claim.gates
        ],
    }
