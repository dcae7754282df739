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

import fnmatch
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import PurePath
from typing import Any, Literal

import numpy as np

from icml25.core.validate import check_positive

__all__ = [
    "SCALES",
    "Claim",
    "Criterion",
    "CriterionResult",
    "MetricSummary",
    "Verdict",
    "VerdictKind",
    "CheckResult",
    "compute_verdict",
    "evaluate_criterion",
    "summarize_metrics",
    "to_jsonable",
]

SCALES: tuple[str, ...] = ("tiny", "small", "full")

Op = Literal["<", "<=", ">", ">="]
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
    scales: tuple[str, ...] = ("small", "full")
    description: str = ""

    def __post_init__(self) -> None:
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

    @property
    def rhs_metric(self) -> str:
        return self.other_metric or self.metric

    def describe(self) -> str:
        """The condition as a formula, e.g. ``mean(rfm.acc) >= 0.99``."""
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

    def __post_init__(self) -> None:
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise ValueError(f"Claim: criterion names must be unique, got {names}")
        if not self.criteria:
            raise ValueError("Claim: at least one criterion is required")
        arms = {self.ours, *self.baselines}
        for c in self.criteria:
            for arm in (c.arm, c.other_arm):
                if arm is not None and arm not in arms:
                    raise ValueError(f"Claim: criterion {c.name!r} names arm {arm!r}, not in {sorted(arms)}")
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
        return (self.ours, *self.baselines)

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
    """A criterion evaluated on measurements. ``passed`` is None when it could not be evaluated."""

    name: str
    description: str
    formula: str
    value: float | None
    threshold: float | None
    op: str
    passed: bool | None
    reason: str = ""


def evaluate_criterion(
    criterion: Criterion, metrics: Mapping[str, Mapping[str, MetricSummary]]
) -> CriterionResult:
    """Evaluate one criterion. Missing or non-finite measurements give ``passed=None``."""

    def lookup(arm: str, metric: str) -> tuple[float | None, str]:
        summary = metrics.get(arm, {}).get(metric)
        if summary is None:
            return None, f"metric {arm}.{metric} was not measured"
        value = summary.reduced(criterion.reduce)
        if not math.isfinite(value):
            return None, f"metric {arm}.{metric} is not finite ({summary.values})"
        return value, ""

    base = dict(
        name=criterion.name,
        description=criterion.description,
        formula=criterion.describe(),
        op=criterion.op,
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
    passed = bool(_OPS[criterion.op](value, threshold))
    return CriterionResult(**base, value=value, threshold=threshold, passed=passed)


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


def compute_verdict(
    results: Sequence[CriterionResult],
    *,
    n_seeds: int,
    min_seeds: int = 1,
    missing_resource: str | None = None,
    scale: str = "small",
) -> Verdict:
    """The one function that decides a verdict.

    Order of precedence:
        1. a missing resource             -> ``needs <resource>``
        2. no applicable criterion        -> ``inconclusive``
        3. scale ``tiny``                 -> ``inconclusive`` (a smoke run never judges the claim;
                                             the reason says whether its smoke criteria held)
        4. fewer seeds than ``min_seeds`` -> ``inconclusive`` (the claim's spread-based criteria
                                             are not meaningful on fewer seeds, so neither a pass
                                             nor a fail decides; the reason lists what failed)
        5. any criterion failed           -> ``not reproduced``
        6. any criterion not evaluable    -> ``inconclusive``
        7. otherwise                      -> ``reproduced``
    """
    if scale not in SCALES:
        raise ValueError(f"compute_verdict: scale must be one of {SCALES}, got {scale!r}")
    if missing_resource:
        return Verdict(VerdictKind.NEEDS, missing_resource, f"this check needs {missing_resource}")
    if not results:
        return Verdict(VerdictKind.INCONCLUSIVE, reason="no criterion applies at this scale")
    if scale == "tiny":
        bad = [r.name for r in results if r.passed is not True]
        smoke = "smoke criteria hold" if not bad else "smoke criteria not met: " + ", ".join(bad)
        return Verdict(
            VerdictKind.INCONCLUSIVE, reason=f"tiny is a smoke run, not a test of the claim; {smoke}"
        )
    failed = [r.name for r in results if r.passed is False]
    if n_seeds < min_seeds:
        also = f"; on these seeds failed: {', '.join(failed)}" if failed else ""
        return Verdict(
            VerdictKind.INCONCLUSIVE,
            reason=f"{n_seeds} seed(s) run, the claim needs at least {min_seeds}{also}",
        )
    if failed:
        return Verdict(VerdictKind.NOT_REPRODUCED, reason="failed: " + ", ".join(failed))
    unknown = [r.name for r in results if r.passed is None]
    if unknown:
        return Verdict(VerdictKind.INCONCLUSIVE, reason="could not evaluate: " + ", ".join(unknown))
    return Verdict(VerdictKind.REPRODUCED, reason=f"all {len(results)} criteria hold")


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
        "criteria": [
            {**asdict(c), "scales": list(c.scales), "formula": c.describe()} for c in claim.criteria
        ],
    }
