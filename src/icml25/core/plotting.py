"""One figure style for every check: palette, sizes, and a mean-with-seed-band line plot."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: figures are only ever written to files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["PALETTE", "OURS_COLOR", "arm_color", "new_figure", "plot_band"]

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
