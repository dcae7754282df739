"""SynthPath: procedural H&E-like tissue tiles with exact masks, for *L-Diffusion: Laplace Diffusion for
Efficient Pathology Image Segmentation* (ICML 2025, OpenReview 2veJwf07RN).

Real pathology sets (PUMA, CRCD, BCSS, PanNuke) cannot be downloaded here, so tiles are painted in
code: a warped nearest-seed (Voronoi) partition into tissue classes with long-tailed area shares,
per-class haematoxylin / eosin / DAB concentration maps (texture, nuclei drawn with
``skimage.draw``), converted to RGB with ``skimage.color.hed2rgb``, then stain jitter, blur and noise.

Classes (tissue task): 0 background (near white), 1 stroma (eosin, oriented fibres, spindle nuclei),
2 tumour (purple, dense large irregular nuclei), 3 lymphocytes (many small dark round nuclei),
4 necrosis (pale eosin, nuclear debris), 5 vessel (dark eosin with red-cell dots; rarest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_fields

__all__ = ["TISSUE_CLASSES", "TISSUE_SHARES", "SynthPathConfig", "SynthPath", "make_synthpath", "render_tile"]

TISSUE_CLASSES = ("background", "stroma", "tumour", "lymphocyte", "necrosis", "vessel")
TISSUE_SHARES = (0.40, 0.25, 0.15, 0.10, 0.06, 0.04)


@dataclass(frozen=True)
class SynthPathConfig:
    """Tile size, split sizes and the number of Voronoi seeds per tile (more seeds = smaller regions)."""

    size: int = 32
    n_unlabeled: int = 128
    n_train: int = 48
    n_val: int = 24
    n_test: int = 64
    n_regions: int = 7
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("size", "n_train", "n_val", "n_test", "n_regions"))
        check_fields(self, non_negative_int=("n_unlabeled", "seed"))
        if self.size < 8:
            raise ValueError(f"SynthPathConfig.size must be >= 8, got {self.size}")


@dataclass(frozen=True)
class SynthPath:
    """Images ``[N, 3, H, W]`` float32 in ``[-1, 1]`` and masks ``[N, H, W]`` int64 per split."""

    config: SynthPathConfig
    unlabeled: np.ndarray
    train_x: np.ndarray
    train_y: np.ndarray
    val_x: np.ndarray
    val_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray

    @property
    def n_classes(self) -> int:
        return len(TISSUE_CLASSES)


def _smooth(
    rng: np.random.Generator, shape: tuple[int, int], sigma: float | tuple[float, float]
) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    f = gaussian_filter(rng.standard_normal(shape), sigma, mode="wrap")
    return f / (f.std() + 1e-8)


def _nuclei(
    rng: np.random.Generator, size: int, density: float, radius: tuple[float, float], elong: float
) -> np.ndarray:
    from skimage.draw import ellipse

    out = np.zeros((size, size))
    n = rng.poisson(density * size * size)
    for _ in range(n):
        r0, c0 = rng.uniform(0, size, 2)
        a = rng.uniform(*radius)
        b = a * (1 + elong * rng.uniform(0.5, 1.5))
        rr, cc = ellipse(r0, c0, a, b, shape=(size, size), rotation=rng.uniform(0, np.pi))
        out[rr, cc] = np.maximum(out[rr, cc], rng.uniform(0.7, 1.0))
    return out


def render_tile(rng: np.random.Generator, size: int, n_regions: int) -> tuple[np.ndarray, np.ndarray]:
    """One tile: RGB ``[3, size, size]`` in ``[-1, 1]`` and its mask ``[size, size]``."""
    from scipy.ndimage import gaussian_filter
    from skimage.color import hed2rgb

    shares = np.asarray(TISSUE_SHARES)
    seeds = rng.uniform(0, size, (n_regions, 2))
    labels = rng.choice(len(shares), size=n_regions, p=shares)
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    warp = size / 8
    wy = yy + warp * _smooth(rng, (size, size), size / 6)
    wx = xx + warp * _smooth(rng, (size, size), size / 6)
    d = (wy[None] - seeds[:, 0, None, None]) ** 2 + (wx[None] - seeds[:, 1, None, None]) ** 2
    mask = labels[np.argmin(d, axis=0)].astype(np.int64)

    h = np.zeros((size, size))
    e = np.zeros((size, size))
    dab = np.zeros((size, size))
    fine = _smooth(rng, (size, size), 0.7)
    for c in range(len(shares)):
        m = mask == c
        if not m.any():
            continue
        if c == 0:  # background: near white, faint texture
            hc, ec = 0.002 + 0.002 * fine, 0.004 + 0.003 * fine
        elif c == 1:  # stroma: eosin fibres along a random direction, sparse spindle nuclei
            fib = _smooth(rng, (size, size), (0.4, 3.0) if rng.random() < 0.5 else (3.0, 0.4))
            ec = 0.11 + 0.04 * fib
            hc = 0.015 + 0.12 * _nuclei(rng, size, 0.006, (0.6, 0.9), 2.0)
        elif c == 2:  # tumour: purple cytoplasm, dense large irregular nuclei
            ec = 0.06 + 0.015 * fine
            hc = 0.05 + 0.13 * _nuclei(rng, size, 0.03, (1.2, 2.0), 0.6)
        elif c == 3:  # lymphocytes: many small dark round nuclei
            ec = 0.04 + 0.01 * fine
            hc = 0.03 + 0.20 * _nuclei(rng, size, 0.07, (0.6, 1.0), 0.1)
        elif c == 4:  # necrosis: pale eosin, fragmented debris
            ec = 0.07 + 0.02 * fine
            hc = 0.01 + 0.09 * (_smooth(rng, (size, size), 0.5) > 1.6).astype(float)
        else:  # vessel: dark eosin with red-cell dots
            ec = 0.15 + 0.03 * fine
            hc = 0.01 + 0.0 * fine
            dab = np.where(m, 0.03 * _nuclei(rng, size, 0.05, (0.5, 0.8), 0.3), dab)
        h = np.where(m, hc, h)
        e = np.where(m, ec, e)
    # per-image stain jitter, then RGB, blur and noise
    h = h * rng.uniform(0.8, 1.2)
    e = e * rng.uniform(0.8, 1.2)
    rgb = hed2rgb(np.stack([h, e, dab], axis=-1))
    sigma = rng.uniform(0.0, 0.8)
    if sigma > 0.05:
        rgb = gaussian_filter(rgb, (sigma, sigma, 0))
    rgb = rgb + rng.normal(0.0, 0.02, rgb.shape)
    img = np.clip(rgb, 0.0, 1.0).transpose(2, 0, 1) * 2.0 - 1.0
    return img.astype(np.float32), mask


def _batch(rng: np.random.Generator, n: int, cfg: SynthPathConfig) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for _ in range(n):
        x, y = render_tile(rng, cfg.size, cfg.n_regions)
        xs.append(x)
        ys.append(y)
    if not xs:
        return np.zeros((0, 3, cfg.size, cfg.size), np.float32), np.zeros((0, cfg.size, cfg.size), np.int64)
    return np.stack(xs), np.stack(ys)


def make_synthpath(config: SynthPathConfig | None = None) -> SynthPath:
    """All splits from one seed (each split from its own child stream, so sizes do not shift others)."""
    cfg = config or SynthPathConfig()
    streams = np.random.SeedSequence(cfg.seed).spawn(4)
    un, _ = _batch(np.random.default_rng(streams[0]), cfg.n_unlabeled, cfg)
    tx, ty = _batch(np.random.default_rng(streams[1]), cfg.n_train, cfg)
    vx, vy = _batch(np.random.default_rng(streams[2]), cfg.n_val, cfg)
    sx, sy = _batch(np.random.default_rng(streams[3]), cfg.n_test, cfg)
    return SynthPath(cfg, un, tx, ty, vx, vy, sx, sy)
