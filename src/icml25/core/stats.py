"""Paired intervals for arm-vs-arm criteria, and how an interval decides a comparison.

A criterion that compares two arms is judged on the *paired* differences over every independent
unit the run has: seeds, and test items wherever the metric is a statistic over items. Three
interval constructions, chosen by what the run measured:

* :func:`cluster_bootstrap_interval` — per-item scores on the same items for both arms in each
  seed: a two-stage percentile bootstrap (seeds drawn with replacement, then items within each
  drawn seed), so the interval carries both the seed-to-seed and the item-to-item spread. The
  statistic over items defaults to the mean; any function of the item rows (macro-AP, say) works.
* :func:`paired_t_interval` — one value per seed and arm: Student's t interval of the paired
  differences (``scipy.stats.t``).
* nothing — one seed and no items: no interval exists, and the comparison is ``undetermined``.

:func:`judge` turns an interval into an outcome against a declared *smallest effect of interest*
(SESOI). For a superiority claim ("ours beats the baseline by at least delta"):

    holds         the interval excludes 0 in the claimed direction
    fails         the interval excludes delta: the data rule out the effect the claim needs
    undetermined  neither: the run cannot tell

For a non-inferiority claim ("ours is at most m worse"), m is the margin: ``holds`` when the
interval excludes -m, ``fails`` when it lies wholly below -m. :func:`resolving_factor` estimates
how many times more units (items, or seeds) would make an undetermined interval narrow enough to
resolve, assuming the half-width shrinks as 1/sqrt(n) and the estimate stays where it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as _scipy_stats

__all__ = [
    "Comparison",
    "Interval",
    "Outcome",
    "cluster_bootstrap_interval",
    "judge",
    "paired_interval",
    "paired_t_interval",
    "resolving_factor",
]

Outcome = Literal["holds", "fails", "undetermined", "n/a"]
Comparison = Literal["superiority", "non_inferiority"]

#: Bootstrap resamples per interval: enough for stable 2.5 / 97.5 % percentiles (about +-0.1 sd).
DEFAULT_RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    """A confidence interval of a paired difference ``a - factor * b``.

    Attributes:
        estimate: the point estimate (mean over seeds of each seed's difference).
        low, high: the interval's ends.
        level: its nominal coverage (0.95).
        method: ``"cluster bootstrap"`` or ``"paired t"``.
        n_seeds: independent seeds (clusters) behind it.
        n_items: items per seed (their mean where seeds differ), or ``None`` without items.
    """

    estimate: float
    low: float
    high: float
    level: float
    method: str
    n_seeds: int
    n_items: float | None = None

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def describe(self, digits: int = 3) -> str:
        units = f"{self.n_seeds} seed(s)"
        if self.n_items is not None:
            units += f" x {self.n_items:.0f} items"
        pct = f"{100 * self.level:g} %"
        return (
            f"{self.estimate:+.{digits}g}, {pct} CI [{self.low:+.{digits}g}, {self.high:+.{digits}g}] "
            f"({self.method}, {units})"
        )


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")


def paired_t_interval(differences: Sequence[float], level: float = 0.95) -> Interval:
    """Student's t interval for the mean of paired per-seed differences.

    Raises:
        ValueError: fewer than two differences, or a non-finite one.
    """
    _check_level(level)
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or d.size < 2:
        raise ValueError(f"differences must hold at least two values (one per seed), got {d.size}")
    if not np.all(np.isfinite(d)):
        raise ValueError("differences must be finite")
    mean = float(d.mean())
    sem = float(d.std(ddof=1) / math.sqrt(d.size))
    if sem == 0.0:
        return Interval(mean, mean, mean, level, "paired t", int(d.size))
    low, high = _scipy_stats.t.interval(level, df=d.size - 1, loc=mean, scale=sem)
    return Interval(mean, float(low), float(high), level, "paired t", int(d.size))


def _as_rows(x: np.ndarray | Sequence[float], what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise ValueError(f"{what} must hold at least one item")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} must be finite")
    return arr


def cluster_bootstrap_interval(
    a: Sequence[np.ndarray | Sequence[float]],
    b: Sequence[np.ndarray | Sequence[float]],
    *,
    statistic: Callable[[np.ndarray], float] | None = None,
    factor: float = 1.0,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """Two-stage percentile bootstrap of ``statistic(a) - factor * statistic(b)``, paired by item.

    ``a[s]`` and ``b[s]`` are the two arms' item rows in seed (cluster) ``s``: the same items in the
    same order, first axis = items. Each resample draws seeds with replacement (when there are
    several), then items with replacement within each drawn seed, the *same* item indices for both
    arms; the resampled difference is the mean over drawn seeds of their per-seed differences.

    Args:
        statistic: maps one arm's item rows to a number; ``None`` is the mean over items (done in
            closed form over all resamples at once).
        resamples: bootstrap draws.
        seed: the generator's seed: the interval is deterministic.

    Raises:
        ValueError: no seeds, mismatched item counts between arms, empty or non-finite rows.
    """
    _check_level(level)
    if resamples < 100:
        raise ValueError(f"resamples must be at least 100, got {resamples}")
    if len(a) == 0 or len(a) != len(b):
        raise ValueError(f"a and b must hold the same non-zero number of seeds, got {len(a)} and {len(b)}")
    rows_a = [_as_rows(x, f"a[{s}]") for s, x in enumerate(a)]
    rows_b = [_as_rows(x, f"b[{s}]") for s, x in enumerate(b)]
    for s, (ra, rb) in enumerate(zip(rows_a, rows_b, strict=True)):
        if ra.shape[0] != rb.shape[0]:
            raise ValueError(
                f"seed {s}: a has {ra.shape[0]} items but b has {rb.shape[0]}; pairing needs the same"
            )
    rng = np.random.default_rng(seed)
    n_seeds = len(rows_a)
    stat = statistic
    per_seed = np.array(
        [
            (float(np.mean(ra)) - factor * float(np.mean(rb)))
            if stat is None
            else (float(stat(ra)) - factor * float(stat(rb)))
            for ra, rb in zip(rows_a, rows_b, strict=True)
        ]
    )
    estimate = float(per_seed.mean())
    # stage 2 first: each seed's resampled differences, (resamples,) per seed
    boot_per_seed = np.empty((n_seeds, resamples))
    for s, (ra, rb) in enumerate(zip(rows_a, rows_b, strict=True)):
        n = ra.shape[0]
        idx = rng.integers(0, n, size=(resamples, n))
        if stat is None:
            diff = ra.reshape(n, -1).mean(axis=1) - factor * rb.reshape(n, -1).mean(axis=1)
            boot_per_seed[s] = diff[idx].mean(axis=1)
        else:
            boot_per_seed[s] = [float(stat(ra[i])) - factor * float(stat(rb[i])) for i in idx]
    # stage 1: which seeds each resample draws
    if n_seeds > 1:
        drawn = rng.integers(0, n_seeds, size=(resamples, n_seeds))
        boot = boot_per_seed[drawn, np.arange(resamples)[:, None]].mean(axis=1)
    else:
        boot = boot_per_seed[0]
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    n_items = float(np.mean([r.shape[0] for r in rows_a]))
    return Interval(estimate, float(low), float(high), level, "cluster bootstrap", n_seeds, n_items)


def paired_interval(
    a_items: Sequence[np.ndarray] | None,
    b_items: Sequence[np.ndarray] | None,
    a_values: Sequence[float],
    b_values: Sequence[float],
    *,
    statistic: Callable[[np.ndarray], float] | None = None,
    factor: float = 1.0,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
) -> Interval | None:
    """The best interval the measurements allow: bootstrap over items when both arms have them on
    every seed, else a paired t over seeds (two or more), else ``None``."""
    if a_items is not None and b_items is not None and len(a_items) == len(b_items) and len(a_items) > 0:
        return cluster_bootstrap_interval(
            a_items, b_items, statistic=statistic, factor=factor, level=level, resamples=resamples
        )
    if len(a_values) != len(b_values):
        raise ValueError(f"a_values and b_values must pair up, got {len(a_values)} and {len(b_values)}")
    diffs = [x - factor * y for x, y in zip(a_values, b_values, strict=True)]
    if len(diffs) < 2 or not all(math.isfinite(d) for d in diffs):
        return None
    return paired_t_interval(diffs, level)


def _direction(op: str) -> float:
    if op in (">", ">="):
        return 1.0
    if op in ("<", "<="):
        return -1.0
    raise ValueError(f"op must be one of <, <=, >, >=, got {op!r}")


def judge(
    interval: Interval | None,
    op: str,
    smallest_effect: float,
    comparison: Comparison = "superiority",
) -> Outcome:
    """``holds`` / ``fails`` / ``undetermined`` for a claimed difference ``op 0``.

    Args:
        interval: of the difference ``a - factor * b``; ``None`` gives ``undetermined``.
        op: the claimed direction: ``>``/``>=`` (a above b) or ``<``/``<=`` (a below b).
        smallest_effect: positive; for superiority the smallest difference in the claimed direction
            that matters, for non-inferiority the margin m.
        comparison: ``"superiority"`` or ``"non_inferiority"``.
    """
    if not (math.isfinite(smallest_effect) and smallest_effect > 0):
        raise ValueError(f"smallest_effect must be positive and finite, got {smallest_effect}")
    sign = _direction(op)
    if interval is None:
        return "undetermined"
    # the difference in the claimed direction: larger is better for the claim
    low, high = sorted((sign * interval.low, sign * interval.high))
    if comparison == "superiority":
        if low > 0.0:
            return "holds"
        if high < smallest_effect:
            return "fails"
        return "undetermined"
    if comparison == "non_inferiority":
        if low > -smallest_effect:
            return "holds"
        if high < -smallest_effect:
            return "fails"
        return "undetermined"
    raise ValueError(f"comparison must be 'superiority' or 'non_inferiority', got {comparison!r}")


def resolving_factor(
    interval: Interval, op: str, smallest_effect: float, comparison: Comparison = "superiority"
) -> float:
    """How many times the current units would resolve an undetermined comparison.

    With the estimate fixed and the half-width shrinking as 1/sqrt(n), the interval resolves once
    the half-width falls below the distance from the estimate to the farther of the decisive
    boundaries (0 and delta for superiority, -m for non-inferiority). Returns ``inf`` when the
    estimate sits exactly on the only boundary.
    """
    sign = _direction(op)
    est = sign * interval.estimate
    boundaries = (0.0, smallest_effect) if comparison == "superiority" else (-smallest_effect,)
    distance = max(abs(est - b) for b in boundaries)
    if distance == 0.0:
        return math.inf
    return max(1.0, (interval.half_width / distance) ** 2)
