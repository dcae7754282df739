"""A procedural world of coloured shapes: exact scene graphs, deterministic renders, canonical captions.

No vision-language weights can be downloaded here, so the papers that need images with known
content build their small models in this world instead. A :class:`Scene` is a background colour
and a few :class:`ShapeObject` s (shape, colour, size) placed in distinct cells of a ``grid x grid``
layout; the scene graph *is* the ground truth, so every statement about an image can be checked
exactly. Two papers use it:

* *I Think, Therefore I Diffuse* (ThinkDiff; Mi et al., ICML 2025, arXiv:2502.10458) in
  single-object scenes (``grid=1``), for CoBSAT-style in-context generation tasks whose answer is an
  attribute (colour, background) inferred from the demonstrations;
* *Toward Robust Hyper-Detailed Image Captioning: A Multiagent Approach and Dual Evaluation
  Metrics for Factuality and Coverage* (Lee et al., ICML 2025, arXiv:2412.15484) in multi-object
  scenes (``grid=3``) with sizes and left-of/above relations, where factuality and coverage of a
  caption are computed exactly against the scene graph.

Rendering is our own: each shape is an indicator set on its cell's normalised coordinates
``(u, v) in [-1, 1]^2`` (``v`` pointing down), drawn at ``supersample`` times the output
resolution and averaged back down (box-filter anti-aliasing), so an 8x8 render is still a
recognisable, deterministic image.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml25.core.validate import check_positive

__all__ = [
    "BACKGROUNDS",
    "COLOURS",
    "SHAPES",
    "SIZES",
    "Scene",
    "ShapeObject",
    "cell_name",
    "describe",
    "random_scene",
    "render",
    "render_batch",
]

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "diamond", "cross", "ring", "bar")

COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.90, 0.10, 0.10),
    "green": (0.10, 0.75, 0.20),
    "blue": (0.15, 0.30, 0.95),
    "yellow": (0.95, 0.90, 0.10),
    "purple": (0.60, 0.20, 0.80),
    "orange": (1.00, 0.55, 0.00),
}

# every background differs from every object colour by at least 0.3 in some channel
BACKGROUNDS: dict[str, tuple[float, float, float]] = {
    "black": (0.05, 0.05, 0.05),
    "white": (0.95, 0.95, 0.95),
    "gray": (0.50, 0.50, 0.50),
    "teal": (0.00, 0.45, 0.45),
}

SIZES: tuple[str, ...] = ("small", "large")

# fraction of its cell's side an object spans
_SIZE_FRACTION = {"small": 0.45, "large": 0.8}

_ShapeMask = Callable[[np.ndarray, np.ndarray], np.ndarray]

_SHAPE_MASKS: dict[str, _ShapeMask] = {
    "circle": lambda u, v: u**2 + v**2 <= 1.0,
    "square": lambda u, v: np.maximum(np.abs(u), np.abs(v)) <= 0.85,
    # apex at the top (v = -0.9), base at v = 0.8
    "triangle": lambda u, v: (v <= 0.8) & (v >= -0.9) & (np.abs(u) <= 0.95 * (v + 0.9) / 1.7),
    "diamond": lambda u, v: np.abs(u) + np.abs(v) <= 1.0,
    "cross": lambda u, v: (
        ((np.abs(u) <= 0.3) & (np.abs(v) <= 0.95)) | ((np.abs(v) <= 0.3) & (np.abs(u) <= 0.95))
    ),
    "ring": lambda u, v: (u**2 + v**2 <= 1.0) & (u**2 + v**2 >= 0.55**2),
    "bar": lambda u, v: (np.abs(u) <= 0.95) & (np.abs(v) <= 0.3),
}


@dataclass(frozen=True)
class ShapeObject:
    """One object of a scene: ``shape`` in :data:`SHAPES`, ``colour`` in :data:`COLOURS`,
    ``size`` in :data:`SIZES`, and the ``(row, col)`` grid ``cell`` it is centred in."""

    shape: str
    colour: str
    size: str = "large"
    cell: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        if self.shape not in _SHAPE_MASKS:
            raise ValueError(f"shape must be one of {SHAPES}, got {self.shape!r}")
        if self.colour not in COLOURS:
            raise ValueError(f"colour must be one of {tuple(COLOURS)}, got {self.colour!r}")
        if self.size not in _SIZE_FRACTION:
            raise ValueError(f"size must be one of {SIZES}, got {self.size!r}")
        cell = self.cell
        if (
            not isinstance(cell, tuple)
            or len(cell) != 2
            or not all(isinstance(c, int | np.integer) and not isinstance(c, bool) and c >= 0 for c in cell)
        ):
            raise ValueError(f"cell must be a (row, col) pair of integers >= 0, got {cell!r}")


@dataclass(frozen=True)
class Scene:
    """A scene graph: ``objects`` in distinct cells of a ``grid x grid`` layout on a ``background``."""

    objects: tuple[ShapeObject, ...]
    background: str = "black"
    grid: int = 1

    def __post_init__(self) -> None:
        check_positive("grid", self.grid, integer=True)
        if self.background not in BACKGROUNDS:
            raise ValueError(f"background must be one of {tuple(BACKGROUNDS)}, got {self.background!r}")
        if not isinstance(self.objects, tuple) or not all(isinstance(o, ShapeObject) for o in self.objects):
            raise TypeError("objects must be a tuple of ShapeObject")
        cells = [o.cell for o in self.objects]
        if any(r >= self.grid or c >= self.grid for r, c in cells):
            raise ValueError(f"every object's cell must lie inside the {self.grid}x{self.grid} grid: {cells}")
        if len(set(cells)) != len(cells):
            raise ValueError(f"objects must occupy distinct cells, got {cells}")

    def relations(self) -> list[tuple[int, str, int]]:
        """Every true spatial relation ``(i, "left of" | "above", j)`` between objects ``i`` and ``j``.

        Object ``i`` is *left of* ``j`` when its column is smaller and *above* ``j`` when its row is
        smaller (image rows grow downwards), whatever the other coordinate.
        """
        out: list[tuple[int, str, int]] = []
        for i, a in enumerate(self.objects):
            for j, b in enumerate(self.objects):
                if i == j:
                    continue
                if a.cell[1] < b.cell[1]:
                    out.append((i, "left of", j))
                if a.cell[0] < b.cell[0]:
                    out.append((i, "above", j))
        return out


def _choices(name: str, values: Sequence[str], allowed: Sequence[str]) -> tuple[str, ...]:
    values = tuple(values)
    if not values:
        raise ValueError(f"{name} must not be empty")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"{name} has unknown values {bad}; allowed: {tuple(allowed)}")
    return values


def random_scene(
    rng: np.random.Generator,
    *,
    n_objects: int | tuple[int, int] = 1,
    grid: int = 1,
    shapes: Sequence[str] = SHAPES,
    colours: Sequence[str] = tuple(COLOURS),
    backgrounds: Sequence[str] = tuple(BACKGROUNDS),
    sizes: Sequence[str] = SIZES,
) -> Scene:
    """A uniformly random scene: ``n_objects`` (an int, or an inclusive ``(low, high)`` range) objects
    with independent uniform attributes, in distinct uniformly chosen cells of the grid."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    check_positive("grid", grid, integer=True)
    if isinstance(n_objects, tuple):
        if len(n_objects) != 2:
            raise ValueError(f"n_objects range must be (low, high), got {n_objects!r}")
        low, high = n_objects
        check_positive("n_objects low", low, integer=True)
        check_positive("n_objects high", high, integer=True)
        if high < low:
            raise ValueError(f"n_objects range must have low <= high, got {n_objects!r}")
        count = int(rng.integers(low, high + 1))
    else:
        check_positive("n_objects", n_objects, integer=True)
        high = count = int(n_objects)
    if high > grid * grid:
        raise ValueError(f"n_objects ({high}) cannot exceed the {grid * grid} cells of the grid")
    shapes_ = _choices("shapes", shapes, SHAPES)
    colours_ = _choices("colours", colours, tuple(COLOURS))
    backgrounds_ = _choices("backgrounds", backgrounds, tuple(BACKGROUNDS))
    sizes_ = _choices("sizes", sizes, SIZES)
    cells = rng.choice(grid * grid, size=count, replace=False)
    objects = tuple(
        ShapeObject(
            shape=shapes_[int(rng.integers(len(shapes_)))],
            colour=colours_[int(rng.integers(len(colours_)))],
            size=sizes_[int(rng.integers(len(sizes_)))],
            cell=(int(cell) // grid, int(cell) % grid),
        )
        for cell in cells
    )
    background = backgrounds_[int(rng.integers(len(backgrounds_)))]
    return Scene(objects=objects, background=background, grid=grid)


def render(scene: Scene, size: int = 16, *, supersample: int = 4) -> np.ndarray:
    """Render ``scene`` as a ``(size, size, 3)`` float32 RGB image in ``[0, 1]``.

    Each object is centred in its cell and spans :data:`_SIZE_FRACTION` of the cell's side; the
    image is drawn at ``size * supersample`` pixels and box-filtered down.
    """
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be a Scene, got {type(scene).__name__}")
    check_positive("size", size, integer=True)
    check_positive("supersample", supersample, integer=True)
    hi = size * supersample
    canvas = np.empty((hi, hi, 3), dtype=np.float64)
    canvas[:] = BACKGROUNDS[scene.background]
    cell_px = hi / scene.grid
    coords = np.arange(hi) + 0.5
    for obj in scene.objects:
        half = 0.5 * _SIZE_FRACTION[obj.size] * cell_px
        cy, cx = (obj.cell[0] + 0.5) * cell_px, (obj.cell[1] + 0.5) * cell_px
        v = ((coords - cy) / half)[:, None]
        u = ((coords - cx) / half)[None, :]
        mask = _SHAPE_MASKS[obj.shape](np.broadcast_to(u, (hi, hi)), np.broadcast_to(v, (hi, hi)))
        canvas[mask] = COLOURS[obj.colour]
    image = canvas.reshape(size, supersample, size, supersample, 3).mean(axis=(1, 3))
    return image.astype(np.float32)


def render_batch(scenes: Sequence[Scene], size: int = 16, *, supersample: int = 4) -> torch.Tensor:
    """Render several scenes as one ``(N, 3, size, size)`` float32 tensor (channels first)."""
    scenes = list(scenes)
    if not scenes:
        raise ValueError("scenes must not be empty")
    images = np.stack([render(s, size, supersample=supersample) for s in scenes])
    return torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()


_ROW_NAMES = ("top", "middle", "bottom")
_COL_NAMES = ("left", "centre", "right")


def cell_name(cell: tuple[int, int], grid: int) -> str:
    """Where a cell is, in words: ``"top left"``, ``"centre"``, ... on a 3x3 grid, ``"row r, column c"``
    on other grids (1-based), ``"middle"`` on a 1x1 grid."""
    check_positive("grid", grid, integer=True)
    row, col = cell
    if grid == 1:
        return "middle"
    if grid == 3:
        if (row, col) == (1, 1):
            return "centre"
        if row == 1:
            return _COL_NAMES[col]
        if col == 1:
            return _ROW_NAMES[row]
        return f"{_ROW_NAMES[row]} {_COL_NAMES[col]}"
    return f"row {row + 1}, column {col + 1}"


def describe(scene: Scene) -> str:
    """The canonical caption of a scene.

    One object on a 1x1 grid: ``"a red circle on black background"``. Otherwise one sentence per
    object in reading order, then the background: ``"a large red circle at the top left. a small
    blue square in the centre. black background."``
    """
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be a Scene, got {type(scene).__name__}")
    if scene.grid == 1 and len(scene.objects) == 1:
        obj = scene.objects[0]
        return f"a {obj.colour} {obj.shape} on {scene.background} background"
    parts = []
    for obj in sorted(scene.objects, key=lambda o: o.cell):
        where = cell_name(obj.cell, scene.grid)
        preposition = "in the" if where in ("centre", "middle") else "at the"
        if where.startswith("row "):
            preposition = "at"
        parts.append(f"a {obj.size} {obj.colour} {obj.shape} {preposition} {where}.")
    parts.append(f"{scene.background} background.")
    return " ".join(parts)
