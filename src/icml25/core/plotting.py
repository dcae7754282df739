"""One figure style for every check: palette, sizes, and a mean-with-seed-band line plot."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: figures are only ever written to files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = [
    "OURS_COLOR",
    "PALETTE",
    "REFERENCE_COLOR",
    "arm_color",
    "draw_paired_intervals",
    "new_figure",
    "plot_arms",
    "plot_band",
]

OURS_COLOR = "#c0392b"
PALETTE = ("#2c3e50", "#2980b9", "#27ae60", "#8e44ad", "#d35400", "#7f8c8d", "#16a085")

_STYLE: dict[str, Any] = {
    "figure.dpi": 110,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
}


def arm_color(arm: str, ours: str, baselines: Sequence[str]) -> str:
    """Our method is always red; baselines take the palette in declaration order.

    Any other arm gets a palette colour from a CRC-32 of its name, the same in every process
    (Python's ``hash`` of a string is salted per process), so reruns draw identical figures.
    """
    if arm == ours:
        return OURS_COLOR
    idx = list(baselines).index(arm) if arm in baselines else zlib.crc32(arm.encode("utf-8"))
    return PALETTE[idx % len(PALETTE)]


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 4.2, height: float = 3.0) -> tuple[Any, Any]:
    """A figure in the shared style; returns ``(fig, axes)`` as ``plt.subplots`` does."""
    with plt.rc_context(_STYLE):  # type: ignore[arg-type]
        fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    for ax in axes.flat:
        for key, value in (("top", False), ("right", False)):
            ax.spines[key].set_visible(value)
        ax.grid(True, alpha=0.3)
    fig.set_layout_engine("constrained")
    if nrows == 1 and ncols == 1:
        return fig, axes[0, 0]
    return fig, axes if nrows > 1 else axes[0]


def plot_band(
    ax: Any,
    x: Sequence[float],
    per_seed: Sequence[Sequence[float]],
    *,
    label: str,
    color: str,
    linestyle: str = "-",
) -> None:
    """Mean over seeds as a line, min-max over seeds as a shaded band."""
    values = np.asarray(per_seed, dtype=float)
    if values.ndim == 1:
        values = values[None]
    mean = values.mean(axis=0)
    ax.plot(x, mean, color=color, label=label, linestyle=linestyle)
    if values.shape[0] > 1:
        ax.fill_between(x, values.min(axis=0), values.max(axis=0), color=color, alpha=0.18, linewidth=0)


REFERENCE_COLOR = "#b0b0b0"


def plot_arms(
    ax: Any,
    values: dict[str, Sequence[float]],
    *,
    ours: str,
    baselines: Sequence[str],
    references: Sequence[str] = (),
    ylabel: str = "",
) -> None:
    """The standard arm comparison: a bar per arm (mean over seeds) with one dot per seed.

    Our arm is red, baselines take the palette, and reference arms (what learning nothing scores)
    are grey and hatched, drawn last, so a reader sees at once whether anything beat the floor.
    """
    order = [a for a in (ours, *baselines) if a in values] + [r for r in references if r in values]
    for i, arm in enumerate(order):
        vals = np.asarray(values[arm], dtype=float)
        is_ref = arm in references
        color = REFERENCE_COLOR if is_ref else arm_color(arm, ours, baselines)
        ax.bar(i, float(np.nanmean(vals)), color=color, hatch="//" if is_ref else None, edgecolor="white")
        ax.scatter([i] * len(vals), vals, color="black", s=9, zorder=3)
    labels = [f"{a}\n(reference)" if a in references else a for a in order]
    ax.set_xticks(range(len(order)), labels, rotation=25, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)


def draw_paired_intervals(criteria: Sequence[Any], ctx: Any) -> None:
    """The runner's standard figure for paired criteria: each criterion's effect (a - b) with its
    confidence interval, the zero line, and its smallest effect of interest (dashed); colour by
    outcome (holds green, fails red, undetermined grey). Saved as ``paired_intervals.png``."""
    rows = [c for c in criteria if c.interval is not None]
    if not rows:
        return
    colors = {"holds": "#27ae60", "fails": "#c0392b"}
    fig, axes = new_figure(ncols=len(rows), width=2.6, height=2.4)
    for ax, c in zip(np.atleast_1d(axes), rows, strict=True):
        low, high = c.interval
        est = c.effect if c.effect is not None else (low + high) / 2
        color = colors.get(c.outcome, "#7f8c8d")
        ax.errorbar([0], [est], yerr=[[est - low], [high - est]], fmt="o", color=color, capsize=5, lw=2)
        ax.axhline(0.0, color="black", lw=0.8)
        if c.smallest_effect is not None:
            sign = 1.0 if c.op in (">", ">=") else -1.0
            level = (
                -sign * c.smallest_effect if c.comparison == "non_inferiority" else sign * c.smallest_effect
            )
            ax.axhline(level, color="black", lw=0.8, ls="--")
        ax.set_xticks([])
        role = " (headline)" if c.role == "headline" else ""
        ax.set_title(f"{c.name}{role}\n{c.outcome}", fontsize=7)
    ctx.save_figure(
        fig,
        "paired_intervals",
        "Paired differences (arm minus the compared arm) with 95 % intervals over seeds and test items; "
        "solid line: no difference, dashed: the smallest effect of interest (or the non-inferiority "
        "margin); green holds, red fails, grey undetermined.",
    )
