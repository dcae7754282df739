"""A 2-D drop simulator with known gravity, the stand-in for the Kubric renders of *PISA Experiments:
Exploring Physics Post-Training for Video Diffusion Models by Watching Stuff Drop* (arXiv 2503.09595,
Sec. 3.2 / 4.1: simulated drop videos for post-training and the simulated PisaBench split).

Side view, grayscale, a floor strip at the bottom. One object (disk, square, triangle or bar) is
released at rest with its lowest point ``h`` metres above the floor and falls with
``y(t) = y0 + g t^2 / 2`` (in pixels: ``g px_per_m``), bounces with restitution ``e`` and comes to
rest. Rendering is anti-aliased (sub-pixel supersampling), so centroids move smoothly; the ground-truth
mask of a frame is the object's coverage >= 1/2.

Domains (:class:`SimDomain`): ``seen`` (disk and square, bright on dark), ``unseen`` (triangle and
bar, new intensities and backgrounds: held-out objects), with any height range (``heights``) so that
an extrapolation split uses drops higher than any training drop. :func:`generic_motion_clips` renders
the generator's pre-training videos: the same objects either still or drifting at constant velocity
(reflecting at the walls), never accelerating (no gravity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.core.validate import check_fields, check_positive

__all__ = [
    "SHAPES",
    "SimConfig",
    "SimDomain",
    "DropClips",
    "DOMAINS",
    "render_frame",
    "simulate_drop",
    "DropSimulator",
    "generic_motion_clips",
]

SHAPES: tuple[str, ...] = ("disk", "square", "triangle", "bar")
# vertical half-extent of each shape relative to its size parameter s (the contact point is s_y below)
_HALF_HEIGHT = {"disk": 1.0, "square": 1.0, "triangle": 1.0, "bar": 0.55}


def _inside(shape: str, dx: np.ndarray, dy: np.ndarray, s: float) -> np.ndarray:
    """Whether the offsets ``(dx, dy)`` from the centre (``dy`` down) fall inside the shape of size ``s``."""
    if shape == "disk":
        return dx * dx + dy * dy <= s * s
    if shape == "square":
        return (np.abs(dx) <= s) & (np.abs(dy) <= s)
    if shape == "triangle":  # apex up, base of width 2s at the bottom
        return (dy <= s) & (dy >= -s) & (np.abs(dx) <= (dy + s) / 2)
    if shape == "bar":
        return (np.abs(dx) <= 1.7 * s) & (np.abs(dy) <= 0.55 * s)
    raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")


@dataclass(frozen=True)
class SimConfig:
    """Frame geometry and physics.

    Args:
        size: frame height = width in pixels.
        frames: frames per clip ``T``.
        fps: frame rate.
        px_per_m: pixels per metre.
        g: gravity in m/s^2.
        floor_rows: rows of floor at the bottom (the object rests on row ``size - floor_rows``).
        obj_size: range of the object size parameter ``s`` (half-width) in pixels.
        restitution: range of the bounce coefficient ``e``.
        supersample: sub-pixels per pixel side for anti-aliasing.
    """

    size: int = 16
    frames: int = 10
    fps: float = 16.0
    px_per_m: float = 8.0
    g: float = 9.81
    floor_rows: int = 2
    obj_size: tuple[float, float] = (1.2, 2.0)
    restitution: tuple[float, float] = (0.0, 0.4)
    supersample: int = 4

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("size", "frames", "supersample"), positive=("fps", "px_per_m", "g"))
        check_fields(self, non_negative_int=("floor_rows",))
        if self.frames < 3:
            raise ValueError(f"SimConfig.frames must be >= 3, got {self.frames}")
        if self.floor_rows >= self.size // 2:
            raise ValueError(f"SimConfig.floor_rows must be < size/2, got {self.floor_rows}")
        lo, hi = self.obj_size
        if not 0 < lo <= hi or 2 * hi >= self.size - self.floor_rows:
            raise ValueError(
                f"SimConfig.obj_size must satisfy 0 < lo <= hi < free height / 2, got {self.obj_size}"
            )
        e0, e1 = self.restitution
        if not 0 <= e0 <= e1 < 1:
            raise ValueError(f"SimConfig.restitution must satisfy 0 <= lo <= hi < 1, got {self.restitution}")

    @property
    def floor_y(self) -> float:
        """Pixel coordinate of the floor's top edge."""
        return float(self.size - self.floor_rows)

    @property
    def g_px(self) -> float:
        """Gravity in pixels per second squared."""
        return self.g * self.px_per_m


@dataclass(frozen=True)
class SimDomain:
    """Which objects and looks a split draws: shapes, object and background intensity, heights (m)."""

    name: str
    shapes: tuple[str, ...]
    obj_intensity: tuple[float, float] = (0.75, 1.0)
    background: tuple[float, float] = (0.0, 0.15)
    floor_intensity: tuple[float, float] = (0.35, 0.5)
    heights: tuple[float, float] = (0.3, 1.0)

    def __post_init__(self) -> None:
        if not self.shapes or any(s not in SHAPES for s in self.shapes):
            raise ValueError(f"SimDomain.shapes must be a non-empty subset of {SHAPES}, got {self.shapes}")
        for name in ("obj_intensity", "background", "floor_intensity", "heights"):
            lo, hi = getattr(self, name)
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi or lo < 0:
                raise ValueError(f"SimDomain.{name} must be a range 0 <= lo <= hi, got {(lo, hi)}")

    def with_heights(self, lo: float, hi: float, name: str | None = None) -> SimDomain:
        return SimDomain(
            name or self.name,
            self.shapes,
            self.obj_intensity,
            self.background,
            self.floor_intensity,
            (lo, hi),
        )


DOMAINS: dict[str, SimDomain] = {
    "seen": SimDomain("seen", ("disk", "square")),
    "unseen": SimDomain(
        "unseen",
        ("triangle", "bar"),
        obj_intensity=(0.6, 0.8),
        background=(0.1, 0.22),
        floor_intensity=(0.45, 0.6),
    ),
}


@dataclass(frozen=True)
class DropClips:
    """A batch of rendered clips.

    Attributes:
        video: ``[N, T, H, W]`` float32 in [0, 1].
        masks: ``[N, T, H, W]`` bool, the moving object's ground-truth mask.
        centroid: ``[N, T, 2]`` float64 exact (x, y) centre of the object in pixels.
        meta: per clip: shape, size, height (m), restitution, impact time (s), object and background
            intensities, first floor row.
        fps: frame rate; ``px_per_m``: scale.
    """

    video: np.ndarray
    masks: np.ndarray
    centroid: np.ndarray
    meta: list[dict[str, Any]] = field(default_factory=list)
    fps: float = 16.0
    px_per_m: float = 8.0

    def __len__(self) -> int:
        return int(self.video.shape[0])


def render_frame(
    config: SimConfig, shape: str, cx: float, cy: float, s: float, obj: float, bg: float, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """An anti-aliased frame ``[H, W]`` float32 and its mask (coverage >= 1/2), object centre ``(cx, cy)``."""
    n, ss = config.size, config.supersample
    sub = (np.arange(n * ss) + 0.5) / ss
    dx = sub[None, :] - cx
    dy = sub[:, None] - cy
    inside = _inside(shape, dx, dy, s).astype(np.float32)
    cover = inside.reshape(n, ss, n, ss).mean(axis=(1, 3))
    img = np.full((n, n), bg, dtype=np.float32)
    img[n - config.floor_rows :, :] = floor
    img = img * (1 - cover) + obj * cover
    return img.astype(np.float32), cover >= 0.5


def simulate_drop(config: SimConfig, y0: float, half_height: float, e: float) -> tuple[np.ndarray, float]:
    """Centre heights ``y(t_k)`` (pixels, down is positive) at the frame times and the first impact time (s).

    Released at rest at ``y0``; free fall ``y = y0 + g_px t^2 / 2`` until the lowest point touches the
    floor, then the velocity flips with factor ``-e``; bounces repeat (exact between contacts) until the
    rebound speed is below 2 % of the impact speed, after which the object rests.
    """
    g = config.g_px
    rest = config.floor_y - half_height
    times = np.arange(config.frames) / config.fps
    d = max(rest - y0, 0.0)
    t_hit = math.sqrt(2 * d / g)
    v_hit = g * t_hit
    # piecewise parabolas: segment k starts at time t_k on the floor with upward speed v_k
    segments: list[tuple[float, float]] = []  # (start time, launch speed)
    t, v = t_hit, e * v_hit
    while v > 0.02 * v_hit and t < times[-1] + 1:
        segments.append((t, v))
        t, v = t + 2 * v / g, e * v
    ys = np.empty_like(times)
    for k, tk in enumerate(times):
        if tk <= t_hit:
            ys[k] = y0 + 0.5 * g * tk * tk
            continue
        ys[k] = rest
        for start, speed in segments:
            dt = tk - start
            if 0 <= dt <= 2 * speed / g:
                ys[k] = rest - (speed * dt - 0.5 * g * dt * dt)
                break
    return ys, t_hit


class DropSimulator:
    """Renders drop clips of a :class:`SimDomain` (the free-fall post-training and test videos)."""

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()

    def sample(self, n: int, domain: SimDomain | str = "seen", *, seed: int = 0) -> DropClips:
        """``n`` clips, a deterministic function of ``seed``.

        A height that would put the object above the frame is clipped to the highest start that
        keeps it fully visible (``meta["height"]`` records the height actually used).
        """
        check_positive("n", n, integer=True)
        dom = DOMAINS[domain] if isinstance(domain, str) and domain in DOMAINS else domain
        if not isinstance(dom, SimDomain):
            raise ValueError(f"domain must be a SimDomain or one of {sorted(DOMAINS)}, got {domain!r}")
        cfg = self.config
        rng = np.random.default_rng(seed)
        T, H = cfg.frames, cfg.size
        video = np.empty((n, T, H, H), np.float32)
        masks = np.empty((n, T, H, H), bool)
        cents = np.empty((n, T, 2))
        meta: list[dict[str, Any]] = []
        for i in range(n):
            shape = str(rng.choice(dom.shapes))
            s = float(rng.uniform(*cfg.obj_size))
            hh = _HALF_HEIGHT[shape] * s
            height = float(rng.uniform(*dom.heights))
            y0 = cfg.floor_y - hh - height * cfg.px_per_m
            if y0 - hh < 0.5:  # keep the whole object in view
                y0 = 0.5 + hh
                height = (cfg.floor_y - hh - y0) / cfg.px_per_m
            half_w = (1.7 if shape == "bar" else 1.0) * s
            cx = float(rng.uniform(half_w + 0.5, H - half_w - 0.5))
            e = float(rng.uniform(*cfg.restitution))
            obj, bg, fl = (
                float(rng.uniform(*r)) for r in (dom.obj_intensity, dom.background, dom.floor_intensity)
            )
            ys, t_hit = simulate_drop(cfg, y0, hh, e)
            for k in range(T):
                video[i, k], masks[i, k] = render_frame(cfg, shape, cx, float(ys[k]), s, obj, bg, fl)
            cents[i, :, 0], cents[i, :, 1] = cx, ys
            meta.append(
                dict(
                    shape=shape,
                    size=s,
                    height=height,
                    restitution=e,
                    impact_time=t_hit,
                    obj=obj,
                    bg=bg,
                    floor_row=H - cfg.floor_rows,
                    domain=dom.name,
                )
            )
        return DropClips(video, masks, cents, meta, cfg.fps, cfg.px_per_m)


def generic_motion_clips(
    config: SimConfig,
    n: int,
    *,
    seed: int = 0,
    domain: SimDomain | str = "seen",
    p_static: float = 0.3,
    max_speed: float = 1.2,
) -> DropClips:
    """Pre-training clips without gravity: still objects (probability ``p_static``) or constant-velocity
    drift in a random direction at up to ``max_speed`` px/frame, reflected at the frame edges and floor."""
    check_positive("n", n, integer=True)
    check_positive("max_speed", max_speed)
    if not 0 <= p_static <= 1:
        raise ValueError(f"p_static must lie in [0, 1], got {p_static}")
    dom = DOMAINS[domain] if isinstance(domain, str) else domain
    rng = np.random.default_rng(seed)
    T, H = config.frames, config.size
    video = np.empty((n, T, H, H), np.float32)
    masks = np.empty((n, T, H, H), bool)
    cents = np.empty((n, T, 2))
    meta: list[dict[str, Any]] = []
    for i in range(n):
        shape = str(rng.choice(dom.shapes))
        s = float(rng.uniform(*config.obj_size))
        hh = _HALF_HEIGHT[shape] * s
        hw = (1.7 if shape == "bar" else 1.0) * s
        lo = np.array([hw + 0.5, hh + 0.5])
        hi = np.array([H - hw - 0.5, config.floor_y - hh])
        pos = rng.uniform(lo, hi)
        speed = 0.0 if rng.random() < p_static else float(rng.uniform(0.2, max_speed))
        ang = rng.uniform(0, 2 * np.pi)
        vel = speed * np.array([np.cos(ang), np.sin(ang)])
        obj, bg, fl = (
            float(rng.uniform(*r)) for r in (dom.obj_intensity, dom.background, dom.floor_intensity)
        )
        for k in range(T):
            video[i, k], masks[i, k] = render_frame(
                config, shape, float(pos[0]), float(pos[1]), s, obj, bg, fl
            )
            cents[i, k] = pos
            pos = pos + vel
            for a in range(2):  # reflect at the walls
                if pos[a] < lo[a]:
                    pos[a], vel[a] = 2 * lo[a] - pos[a], -vel[a]
                elif pos[a] > hi[a]:
                    pos[a], vel[a] = 2 * hi[a] - pos[a], -vel[a]
        meta.append(
            dict(
                shape=shape,
                size=s,
                speed=speed,
                obj=obj,
                bg=bg,
                floor_row=H - config.floor_rows,
                domain=dom.name,
            )
        )
    return DropClips(video, masks, cents, meta, config.fps, config.px_per_m)
