"""Data made in code for the noise-conditioned graph network experiments.

Pao-Huang, Black, Qiu, *Geometric Generative Modeling with Noise-Conditioned Graph Networks*,
ICML 2025 (arXiv 2507.09391), Sec. 5 and the official ``data/st_generator.py``.

Three families of spatial graphs, all with a fixed node count per sample so that a batch is a dense
``[B, N, F]`` tensor:

* :func:`turing_st_dataset`: the paper's synthetic "spatio-temporal transcriptomics" data (Sec. 5.2
  and its appendix): a 1-D Turing reaction-diffusion system of three genes (Sox9 ``s``, BMP ``b``,
  WNT ``w``) integrated by explicit Euler with Neumann boundaries, read out on a grid of time points
  x space points. Node positions (space, time) are fixed conditions; the 3 gene values are the
  generated features.
* :func:`primitive_point_clouds`: 3-D point clouds on the surfaces of random primitives (sphere,
  torus, cylinder, box, cone, helix tube) with random anisotropic scaling and rotation; a
  download-free stand-in for ModelNet40, where the positions themselves are generated.
* :func:`digit_pixel_graphs`: scikit-learn's 8x8 digits as pixel graphs (fixed pixel positions,
  intensity as the generated feature), a small stand-in for the paper's image experiments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_finite_array, check_positive

__all__ = [
    "STData",
    "turing_st_dataset",
    "minmax_per_time",
    "standardise_per_node",
    "primitive_point_clouds",
    "digit_pixel_graphs",
    "PRIMITIVES",
]

PRIMITIVES: tuple[str, ...] = ("sphere", "torus", "cylinder", "box", "cone", "helix")


@dataclass(frozen=True)
class STData:
    """Turing spatio-temporal samples.

    Attributes:
        values: ``[n_sim, n_times * n_space, 3]`` raw gene values, time-major node order.
        pos: ``[n_times * n_space, 2]`` node positions ``(x / x_max, t / t_max)`` in [0, 1].
        time_index: ``[n_times * n_space]`` which time point each node belongs to.
    """

    values: np.ndarray
    pos: np.ndarray
    time_index: np.ndarray


def turing_st_dataset(
    n_sim: int,
    *,
    n_times: int = 10,
    n_space: int = 10,
    length: float = 60.0,
    ds: float = 0.2,
    dt: float = 0.005,
    t_max: float = 100.0,
    seed: int = 0,
) -> STData:
    """Simulate the three-gene Turing system and read it out on a ``n_times x n_space`` grid.

    The system (official ``st_generator``; 1-D space [0, length), Neumann boundaries, initial values
    U(-0.01, 0.01))::

        s_t = b - w - s^3
        b_t = 1.27 s - 0.1 b + 1.0 b_xx
        w_t = 1.59 s - 0.1 w + 2.5 w_xx

    Read-out follows the official generator: time steps ``0, T/n_times, ...`` (step counts) and every
    ``(length/ds)/n_space``-th grid point, so with the defaults positions are x = 0, 6, ..., 54 and
    t = 0, 10, ..., 90. Explicit Euler needs ``dt < ds^2 / (2 * 2.5)``; the defaults (ds 0.2, dt 0.005)
    are the paper's, a coarser ds 0.4 with dt 0.02 is 8x cheaper.

    Args:
        n_sim: number of independent simulations (samples).
        n_times, n_space: read-out grid.
        length, ds, dt, t_max: domain length, space step, time step, horizon.
        seed: seed of the initial values.

    Returns:
        :class:`STData` with raw (unnormalised) values.
    """
    for name, value in (("n_sim", n_sim), ("n_times", n_times), ("n_space", n_space)):
        check_positive(name, value, integer=True)
    for fname, fvalue in (("length", length), ("ds", ds), ("dt", dt), ("t_max", t_max)):
        check_positive(fname, fvalue)
    if dt >= ds**2 / 5.0:
        raise ValueError(f"dt must be < ds^2 / 5 = {ds**2 / 5:g} for a stable explicit scheme, got {dt!r}")
    n_grid = int(round(length / ds))
    n_steps = int(round(t_max / dt))
    if n_grid < 3 * n_space or n_steps < n_times:
        raise ValueError(
            f"length/ds ({n_grid} points) must be >= 3 * n_space and t_max/dt ({n_steps} steps) >= n_times"
        )
    rng = np.random.default_rng(seed)
    init = rng.uniform(-0.01, 0.01, size=(3, n_sim, n_grid))
    s, b, w = (np.ascontiguousarray(v) for v in init)
    time_steps = np.arange(0, n_steps, n_steps // n_times)[:n_times]
    space_idx = np.arange(0, n_grid, n_grid // n_space)[:n_space]
    out = np.empty((n_sim, n_times, n_space, 3))
    lap_b, lap_w = np.zeros_like(b), np.zeros_like(w)
    inv = 1.0 / ds**2
    slot = 0
    for step in range(n_steps):
        # Laplacians on the interior, then one explicit Euler step of the three equations
        np.subtract(b[:, :-2] + b[:, 2:], 2.0 * b[:, 1:-1], out=lap_b[:, 1:-1])
        np.subtract(w[:, :-2] + w[:, 2:], 2.0 * w[:, 1:-1], out=lap_w[:, 1:-1])
        ds_ = b - w - s**3
        db = 1.27 * s - 0.1 * b + inv * lap_b
        dw = 1.59 * s - 0.1 * w + 2.5 * inv * lap_w
        s += dt * ds_
        b += dt * db
        w += dt * dw
        for v in (s, b, w):  # Neumann: zero derivative at both ends
            v[:, 0] = v[:, 1]
            v[:, -1] = v[:, -2]
        if slot < n_times and step == time_steps[slot]:
            out[:, slot] = np.stack([s[:, space_idx], b[:, space_idx], w[:, space_idx]], axis=-1)
            slot += 1
    xs = space_idx * ds
    ts = (time_steps + 1) * dt
    grid_t, grid_x = np.meshgrid(ts, xs, indexing="ij")
    pos = np.stack([grid_x / max(xs[-1], 1e-12), grid_t / max(ts[-1], 1e-12)], axis=-1).reshape(-1, 2)
    time_index = np.repeat(np.arange(n_times), n_space)
    return STData(values=out.reshape(n_sim, n_times * n_space, 3), pos=pos, time_index=time_index)


def minmax_per_time(
    train: np.ndarray, others: tuple[np.ndarray, ...], time_index: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Min-max normalise gene values per time point with the training set's range (to [0, 1] on train).

    Args:
        train: ``[n, N, F]`` training values.
        others: further ``[m, N, F]`` arrays normalised with the training range.
        time_index: ``[N]`` time point of each node.
    """
    check_finite_array("train", train, ndim=3)
    time_index = np.asarray(time_index)
    if time_index.shape != (train.shape[1],):
        raise ValueError(f"time_index must have shape ({train.shape[1]},), got {time_index.shape}")
    lo = np.zeros(train.shape[1])
    hi = np.ones(train.shape[1])
    for t in np.unique(time_index):
        nodes = time_index == t
        lo[nodes] = train[:, nodes].min()
        hi[nodes] = train[:, nodes].max()
    span = np.maximum(hi - lo, 1e-12)[None, :, None]

    def norm(a: np.ndarray) -> np.ndarray:
        return (a - lo[None, :, None]) / span

    return norm(train), tuple(norm(o) for o in others)


def standardise_per_node(
    train: np.ndarray, others: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Standardise every node's every gene with the training mean and standard deviation.

    An alternative to the official :func:`minmax_per_time`: that one scales each time point by the
    range over all samples, nodes and genes together, so a gene whose values are mostly small next
    to a few extremes is squeezed into a sliver of [0, 1] (standard deviation about 0.06 for Sox9 at
    the late time points), far below the unit noise that flow matching starts from. Here every
    (node, gene) has mean 0 and standard deviation 1 on the training set, the scale of the noise.

    Args:
        train: ``[n, N, F]`` training values (n >= 2).
        others: further ``[m, N, F]`` arrays standardised with the training statistics.
    """
    check_finite_array("train", train, ndim=3)
    if len(train) < 2:
        raise ValueError(f"train needs at least 2 samples to estimate a standard deviation, got {len(train)}")
    mean = train.mean(axis=0, keepdims=True)
    sd = np.maximum(train.std(axis=0, keepdims=True), 1e-12)

    def norm(a: np.ndarray) -> np.ndarray:
        return (a - mean) / sd

    return norm(train), tuple(norm(o) for o in others)


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def _surface(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    u, v = rng.uniform(size=n), rng.uniform(size=n)
    if kind == "sphere":
        z = 2 * u - 1
        phi = 2 * math.pi * v
        r = np.sqrt(1 - z**2)
        return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)
    if kind == "torus":
        a, c = 0.35, 0.65
        th, ph = 2 * math.pi * u, 2 * math.pi * v
        return np.stack(
            [(c + a * np.cos(th)) * np.cos(ph), (c + a * np.cos(th)) * np.sin(ph), a * np.sin(th)], 1
        )
    if kind == "cylinder":
        ph = 2 * math.pi * v
        return np.stack([np.cos(ph), np.sin(ph), 2 * u - 1], axis=1)
    if kind == "box":
        p = rng.uniform(-1, 1, size=(n, 3))
        face = rng.integers(0, 3, size=n)
        p[np.arange(n), face] = np.sign(rng.uniform(-1, 1, size=n))
        return p
    if kind == "cone":
        h = np.sqrt(u)  # uniform on the lateral surface
        ph = 2 * math.pi * v
        return np.stack([h * np.cos(ph), h * np.sin(ph), 1 - 2 * h], axis=1)
    if kind == "helix":
        s = 4 * math.pi * u
        ph = 2 * math.pi * v
        centre = np.stack([0.7 * np.cos(s), 0.7 * np.sin(s), s / (2 * math.pi) - 1], axis=1)
        return centre + 0.2 * np.stack([np.cos(ph) * np.cos(s), np.cos(ph) * np.sin(s), np.sin(ph)], axis=1)
    raise ValueError(f"kind must be one of {PRIMITIVES}, got {kind!r}")


def primitive_point_clouds(
    n_shapes: int, n_points: int = 128, *, seed: int = 0, kinds: tuple[str, ...] = PRIMITIVES
) -> tuple[np.ndarray, np.ndarray]:
    """Random primitive surfaces as point clouds, scaled so that max |coordinate| = 0.5.

    Args:
        n_shapes: number of clouds.
        n_points: points per cloud.
        seed: seed of shapes, scalings and rotations.
        kinds: primitives to draw from (uniformly).

    Returns:
        ``(points [n_shapes, n_points, 3], kind index [n_shapes])``.
    """
    check_positive("n_shapes", n_shapes, integer=True)
    check_positive("n_points", n_points, integer=True)
    if not kinds or any(k not in PRIMITIVES for k in kinds):
        raise ValueError(f"kinds must be a non-empty subset of {PRIMITIVES}, got {kinds!r}")
    rng = np.random.default_rng(seed)
    out = np.empty((n_shapes, n_points, 3))
    labels = rng.integers(0, len(kinds), size=n_shapes)
    for i in range(n_shapes):
        p = _surface(kinds[labels[i]], n_points, rng) * rng.uniform(0.7, 1.3, size=3)
        p = p @ _random_rotation(rng).T
        p = p - p.mean(axis=0)
        out[i] = 0.5 * p / np.abs(p).max()
    return out, labels


def digit_pixel_graphs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits as pixel graphs.

    Returns:
        ``(values [1797, 64, 1] in [0, 1], pos [64, 2] pixel centres in [0, 1], labels [1797])``.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    values = (digits.data / 16.0).reshape(-1, 64, 1)
    rows, cols = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    pos = np.stack([cols, rows], axis=-1).reshape(-1, 2) / 7.0
    return values, pos, digits.target
