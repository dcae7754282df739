"""Patch layout and the elimination plan (pure index bookkeeping, numpy only).

Part of our implementation of *Schwarz–Schur Involution: Lightspeed Differentiable Sparse Linear
Solvers* (Wang et al., ICML 2025, https://openreview.net/forum?id=RKbanvzycr). Implements the patch
decomposition of the grid behind the tensors ``alpha`` and the order of Algorithm 1's eliminations:
one Schwarz step (Alg. 2) on patch interiors, then the Schur steps (Alg. 4) that merge neighbouring
subdomains pairwise along alternating axes.

Notation (used across this package):
    n0, n1   the user's grid (rows, columns); node (i, j) has flat id ``i * N1 + j`` in the padded grid
    N0, N1   the padded grid, ``N = a (w - 1) + 1`` per axis (the official code's ``ab_wh``)
    a0, a1   patches per axis (powers of two); w: nodes per patch side (default 5)
    R        boundary (ring) nodes of a subdomain, kept after a step
    G        nodes eliminated by a step: patch interiors (Schwarz step) or the inside of the shared
             edge of two merged subdomains (Schur step)

Each subdomain of one level has the same shape, so one local index pattern serves the whole
level: boundary nodes are listed as a clockwise ring walk of their offsets inside the subdomain, which a
translation preserves, so every step is a fixed-shape batch. The positions of each child's ring
in the merged ``[R, G]`` order are precomputed (the official edge flips ``J`` are the descending
runs of that map).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["PatchLayout", "LevelPlan", "SingleStep", "EliminationPlan", "elimination_plan"]


def _is_pow2(k: int) -> bool:
    return k >= 1 and (k & (k - 1)) == 0


@dataclass(frozen=True)
class PatchLayout:
    """``a0 x a1`` patches of ``w x w`` nodes covering a padded ``N0 x N1`` grid.

    Neighbouring patches share one line of nodes, so ``N = a (w - 1) + 1`` per axis. The user's
    grid ``(n0, n1)`` sits in the top-left corner; padded nodes are decoupled identity rows.

    Args:
        a0, a1: patches per axis, powers of two (the recursion halves along the longer axis).
        w: nodes per patch side (>= 3; 5 is the paper's default, 16 ring + 9 interior nodes).
        n0, n1: the user's grid; defaults to the full padded grid.
    """

    a0: int
    a1: int
    w: int = 5
    n0: int = 0
    n1: int = 0

    def __post_init__(self) -> None:
        if not (_is_pow2(self.a0) and _is_pow2(self.a1)):
            raise ValueError(f"patch counts a0, a1 must be powers of two, got ({self.a0}, {self.a1})")
        if self.w < 3:
            raise ValueError(f"patch width w must be >= 3 (a patch needs interior nodes), got {self.w}")
        N0, N1 = self.padded_shape
        if self.n0 == 0 and self.n1 == 0:
            object.__setattr__(self, "n0", N0)
            object.__setattr__(self, "n1", N1)
        if not (2 <= self.n0 <= N0 and 2 <= self.n1 <= N1):
            raise ValueError(
                f"grid ({self.n0}, {self.n1}) does not fit the padded grid ({N0}, {N1}) of "
                f"{self.a0}x{self.a1} patches of width {self.w}"
            )

    @classmethod
    def for_grid(cls, n0: int, n1: int, w: int = 5, pad: bool = True) -> PatchLayout:
        """The smallest layout whose padded grid holds an ``n0 x n1`` grid.

        Raises:
            ValueError: if ``pad`` is False and the grid is not ``a (w - 1) + 1`` with ``a`` a power
                of two on both axes, or if the sizes are invalid.
        """
        if isinstance(n0, bool) or isinstance(n1, bool) or not isinstance(n0, int | np.integer):
            raise ValueError(f"grid shape must be two integers, got ({n0!r}, {n1!r})")
        if n0 < 2 or n1 < 2:
            raise ValueError(f"grid shape must be at least 2 x 2, got ({n0}, {n1})")
        if w < 3:
            raise ValueError(f"patch width w must be >= 3, got {w}")
        counts = []
        for n in (int(n0), int(n1)):
            a = 1
            while a * (w - 1) + 1 < n:
                a *= 2
            if not pad and a * (w - 1) + 1 != n:
                raise ValueError(
                    f"grid size {n} is not a (w-1)+1 = {a * (w - 1) + 1} for w={w} and a power-of-two a; "
                    "pass pad=True to embed it in the next valid grid"
                )
            counts.append(a)
        return cls(counts[0], counts[1], w, int(n0), int(n1))

    @property
    def padded_shape(self) -> tuple[int, int]:
        return (self.a0 * (self.w - 1) + 1, self.a1 * (self.w - 1) + 1)

    @property
    def grid_shape(self) -> tuple[int, int]:
        return (self.n0, self.n1)

    @property
    def n_patches(self) -> int:
        return self.a0 * self.a1

    @property
    def is_padded(self) -> bool:
        return self.grid_shape != self.padded_shape


@dataclass(frozen=True)
class LevelPlan:
    """One elimination step over ``n_sub`` same-shape subdomains.

    Attributes:
        counts: subdomains per axis after the step, ``(m0, m1)``.
        axis: merge axis (-1 for the Schwarz step on patches).
        gid_r: ``[n_sub, nR]`` global ids of the kept boundary nodes.
        gid_g: ``[n_sub, nG]`` global ids of the eliminated nodes.
        perm: Schwarz step only: local patch indices in ``[R, G]`` order.
        pos1, pos2: Schur steps only: position of each child boundary node in ``[R, G]``.
        runs1, runs2: the same maps as runs of consecutive positions (see ``_runs``).
    """

    counts: tuple[int, int]
    axis: int
    gid_r: np.ndarray
    gid_g: np.ndarray
    perm: np.ndarray | None = None
    pos1: np.ndarray | None = None
    pos2: np.ndarray | None = None
    runs1: tuple[tuple[int, int, int, int], ...] = ()
    runs2: tuple[tuple[int, int, int, int], ...] = ()

    @property
    def n_sub(self) -> int:
        return int(self.gid_r.shape[0])

    @property
    def nR(self) -> int:
        return int(self.gid_r.shape[1])

    @property
    def nG(self) -> int:
        return int(self.gid_g.shape[1])


@dataclass(frozen=True)
class SingleStep:
    """A Schur step on one subdomain of the last few levels, where every subdomain has its own shape.

    Here nodes on the grid's outer boundary that no other subdomain shares are eliminated as soon
    as they stop being shared (the official "Neumann-scatter" idea, applied per merge), so the
    kept ring R only holds nodes shared with other subdomains and the last step keeps nothing.

    Attributes:
        gid_r, gid_g: ``[1, nR]`` kept and ``[1, nG]`` eliminated global ids.
        child1, child2: indices of the two children in the pool (the last uniform level's subdomains
            in row-major order, then the results of the single steps in order).
        pos1, pos2, runs1, runs2: each child's ids placed in ``[R, G]`` (as in :class:`LevelPlan`).
    """

    gid_r: np.ndarray
    gid_g: np.ndarray
    child1: int
    child2: int
    pos1: np.ndarray
    pos2: np.ndarray
    runs1: tuple[tuple[int, int, int, int], ...]
    runs2: tuple[tuple[int, int, int, int], ...]

    n_sub = 1

    @property
    def nR(self) -> int:
        return int(self.gid_r.shape[1])

    @property
    def nG(self) -> int:
        return int(self.gid_g.shape[1])


@dataclass(frozen=True)
class EliminationPlan:
    """The Schwarz step, uniform Schur steps, then per-subdomain steps for the last levels.

    The top system is the last step's kept ring (empty when single steps ran: then the last single
    step eliminates everything left and its ``W`` is the top system).
    """

    layout: PatchLayout
    levels: tuple[LevelPlan, ...]
    singles: tuple[SingleStep, ...] = ()

    @property
    def gid_top(self) -> np.ndarray:
        if self.singles:
            return self.singles[-1].gid_r[0]
        return self.levels[-1].gid_r[0]


def _perimeter(s0: int, s1: int) -> np.ndarray:
    """Offsets ``[k, 2]`` of the perimeter of an ``s0 x s1`` rectangle as a clockwise ring walk.

    Top row left to right, right column down, bottom row right to left, left column up (the
    official ring order up to rotation). In this order the shared edge of two merged rings is one
    contiguous arc of each child, so a Schur step assembles its matrix from a few block copies.
    """
    top = [(0, c) for c in range(s1)]
    right = [(r, s1 - 1) for r in range(1, s0)]
    bottom = [(s0 - 1, c) for c in range(s1 - 2, -1, -1)]
    left = [(r, 0) for r in range(s0 - 2, 0, -1)]
    return np.array(top + right + bottom + left, dtype=np.int64)


def _runs(pos: np.ndarray) -> tuple[tuple[int, int, int, int], ...]:
    """Split a child -> merged index map into runs ``(child start, length, merged start, step +-1)``."""
    runs: list[tuple[int, int, int, int]] = []
    i = 0
    while i < len(pos):
        j = i + 1
        step = int(pos[j] - pos[i]) if j < len(pos) and abs(int(pos[j] - pos[i])) == 1 else 1
        while j < len(pos) and int(pos[j] - pos[j - 1]) == step:
            j += 1
        runs.append((i, j - i, int(pos[i]), step))
        i = j
    return tuple(runs)


def _gids(offsets: np.ndarray, corners: np.ndarray, N1: int) -> np.ndarray:
    """Global ids ``[n_sub, k]`` of ``offsets`` placed at each subdomain corner ``[n_sub, 2]``."""
    rows = corners[:, None, 0] + offsets[None, :, 0]
    cols = corners[:, None, 1] + offsets[None, :, 1]
    return (rows * N1 + cols).astype(np.int64)


def _corners(m0: int, m1: int, step0: int, step1: int) -> np.ndarray:
    I0, I1 = np.meshgrid(np.arange(m0), np.arange(m1), indexing="ij")
    return np.stack([I0.ravel() * step0, I1.ravel() * step1], axis=1)


@functools.lru_cache(maxsize=16)
def elimination_plan(layout: PatchLayout, individual_below: int = 16) -> EliminationPlan:
    """Index plan of the Schwarz step and all Schur steps for ``layout`` (cached).

    Args:
        individual_below: merge levels that leave at most this many subdomains run as per-subdomain
            :class:`SingleStep` s with outer-boundary elimination (0: all levels uniform, the top
            system is then the grid's whole perimeter).
    """
    w, (_, N1) = layout.w, layout.padded_shape
    m0, m1 = layout.a0, layout.a1
    ring = _perimeter(w, w)
    r, c = np.meshgrid(np.arange(w), np.arange(w), indexing="ij")
    inside = ~((r == 0) | (r == w - 1) | (c == 0) | (c == w - 1))
    interior = np.stack([r[inside], c[inside]], axis=1)
    perm = np.concatenate([ring[:, 0] * w + ring[:, 1], interior[:, 0] * w + interior[:, 1]])
    corners = _corners(m0, m1, w - 1, w - 1)
    levels = [
        LevelPlan(
            counts=(m0, m1),
            axis=-1,
            gid_r=_gids(ring, corners, N1),
            gid_g=_gids(interior, corners, N1),
            perm=perm.astype(np.int64),
        )
    ]
    s0 = s1 = w  # subdomain size in nodes
    while m0 * m1 > 1 and m0 * m1 // 2 > individual_below:
        axis = 0 if m0 >= m1 else 1  # Schur steps: halve alternately (the longer axis first)
        child = _perimeter(s0, s1)
        if axis == 0:
            t0, t1, m0 = 2 * s0 - 1, s1, m0 // 2
            shift = np.array([s0 - 1, 0])
            gamma = np.stack([np.full(s1 - 2, s0 - 1), np.arange(1, s1 - 1)], axis=1)
        else:
            t0, t1, m1 = s0, 2 * s1 - 1, m1 // 2
            shift = np.array([0, s1 - 1])
            gamma = np.stack([np.arange(1, s0 - 1), np.full(s0 - 2, s1 - 1)], axis=1)
        outer = _perimeter(t0, t1)
        where = {(int(a), int(b)): k for k, (a, b) in enumerate(np.concatenate([outer, gamma]))}
        pos1 = np.array([where[(int(a), int(b))] for a, b in child], dtype=np.int64)
        pos2 = np.array([where[(int(a), int(b))] for a, b in child + shift], dtype=np.int64)
        corners = _corners(m0, m1, t0 - 1, t1 - 1)
        levels.append(
            LevelPlan(
                counts=(m0, m1),
                axis=axis,
                gid_r=_gids(outer, corners, N1),
                gid_g=_gids(gamma, corners, N1),
                pos1=pos1,
                pos2=pos2,
                runs1=_runs(pos1),
                runs2=_runs(pos2),
            )
        )
        s0, s1 = t0, t1
    singles = _single_steps(levels[-1], (m0, m1), (s0, s1), N1)
    return EliminationPlan(layout=layout, levels=tuple(levels), singles=singles)


def _single_steps(
    last: LevelPlan, counts: tuple[int, int], size: tuple[int, int], N1: int
) -> tuple[SingleStep, ...]:
    """Per-subdomain merges from the last uniform level to one domain, eliminating unshared nodes."""
    m0, m1 = counts
    s0, s1 = size
    pool_ids: list[np.ndarray] = [last.gid_r[j] for j in range(last.n_sub)]
    grid = np.arange(m0 * m1).reshape(m0, m1)  # pool index of each current subdomain
    steps: list[SingleStep] = []
    while m0 * m1 > 1:
        axis = 0 if m0 >= m1 else 1
        if axis == 0:
            pairs = np.stack([grid[0::2], grid[1::2]], axis=-1)
            t0, t1, m0 = 2 * s0 - 1, s1, m0 // 2
        else:
            pairs = np.stack([grid[:, 0::2], grid[:, 1::2]], axis=-1)
            t0, t1, m1 = s0, 2 * s1 - 1, m1 // 2
        rings = _gids(_perimeter(t0, t1), _corners(m0, m1, t0 - 1, t1 - 1), N1)
        ids, counts_ = np.unique(rings, return_counts=True)
        shared = set(ids[counts_ > 1].tolist())  # nodes on the ring of another subdomain too
        new_grid = np.empty((m0, m1), dtype=np.int64)
        for k, (c1, c2) in enumerate(pairs.reshape(-1, 2)):
            ring = rings[k]
            keep = np.array([g for g in ring if int(g) in shared], dtype=np.int64)
            kept = set(keep.tolist())
            seen: set[int] = set()
            elim_list: list[int] = []
            for g in np.concatenate([pool_ids[c1], pool_ids[c2]]).tolist():  # children's ring order
                if g not in kept and g not in seen:
                    seen.add(g)
                    elim_list.append(g)
            elim = np.array(elim_list, dtype=np.int64)
            order = np.concatenate([keep, elim])
            where = {int(g): i for i, g in enumerate(order)}
            pos1 = np.array([where[int(g)] for g in pool_ids[c1]], dtype=np.int64)
            pos2 = np.array([where[int(g)] for g in pool_ids[c2]], dtype=np.int64)
            steps.append(
                SingleStep(
                    gid_r=keep[None, :],
                    gid_g=elim[None, :],
                    child1=int(c1),
                    child2=int(c2),
                    pos1=pos1,
                    pos2=pos2,
                    runs1=_runs(pos1),
                    runs2=_runs(pos2),
                )
            )
            new_grid.flat[k] = len(pool_ids)
            pool_ids.append(keep)
        grid = new_grid
        s0, s1 = t0, t1
    return tuple(steps)
