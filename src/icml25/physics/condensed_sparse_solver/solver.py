"""The Schwarz-Schur factorisation, its solves (plain and transposed) and the differentiable solve.

Part of our implementation of *Schwarz–Schur Involution: Lightspeed Differentiable Sparse Linear
Solvers* (Wang et al., ICML 2025, https://openreview.net/forum?id=RKbanvzycr). Implements
Algorithm 1 (numerical factorisation and back-substitution) with the Schwarz step (Alg. 2) and
the Schur steps (Alg. 4), and the backward pass (Alg. 3 and 5) as one transposed solve.

Notation: ``B`` independent systems, ``C`` right-hand-side columns, ``N`` padded-grid nodes; per
step ``K = [[X, Y], [Z, W]]`` over ``[R, G]`` (kept, eliminated) for each of ``n_sub`` subdomains.

Forward (Alg. 1):
    Schwarz step   K = alpha_p in [ring, interior] order; DtN = X - Y W^-1 Z          (Alg. 2)
    Schur steps    K = scatter-add of two children's DtN over [R, G]; D = X - Y W^-1 Z  (Alg. 4)
    top            factor what is left (Cholesky/LU); see "outer-boundary nodes"
    RHS            f_R -= Y W^-1 f_G at every step, then top solve, then
                   x_G = W^-1 f_G - W^-1 Z x_R top-down                     (back-substitution)
                   (Cholesky path: y = L^-1 f_G, f_R -= V^T y; x_G = L^-T (y - V x_R))
The right-hand side lives in one node-major vector ``f`` (gather ``f_G``, batched matmul,
``scatter_add_`` into ``f_R``), so no per-patch ``beta`` split is needed: every node is eliminated
exactly once and ``f_G`` is final when its step runs.

Implementation for speed on CPUs (same maths): on the symmetric (Cholesky) path no explicit
``W^-1`` is formed: ``W = L L^T``, ``V = L^-1 Z`` and ``D = X - V^T V``, one fused batched gemm
(``baddbmm_`` with beta = 1) writing in place into ``X``; the factors kept are ``L^-1`` and ``V``,
so a solve is gathers, batched matmuls and scatter-adds. Merges copy the two children's DtN blocks
straight into preallocated ``X``/``Z``/``W`` buffers (add only on the shared edge, zero only the
blocks neither child covers; the block plan is computed once per level shape), the ``X`` buffers
ping-pong between levels and the scratch space is reused, so children are freed as soon as they
are merged. Symmetry is tested once per factorisation. Per-level seconds and flops are recorded
(``SchurFactor.level_stats``). Small CPU problems run on one thread.

Choices beyond the paper: symmetric input uses Cholesky (``cholesky_ex``) for every block and fails
with a clear error if a block is not positive definite (indefinite or singular operators are
reported, never solved silently); non-symmetric input (or ``spd=False``) uses LU with pivoting
inside each block only. A pivot ratio below ``100 eps`` is reported as numerically singular.
Outer-boundary nodes: the official "Neumann-scatter" eliminates unshared outer ring nodes in the
Schwarz step. Here the many-subdomain levels keep full rings (one shape per level, fully batched)
and the last levels (at most ``individual_below`` subdomains, where the big matrices are) run one
subdomain at a time and eliminate every node no other subdomain shares; the last step then
eliminates what is left, so there is no separate perimeter system at the top (``individual_below=0``
gives the plain variant whose top system is the grid's perimeter). The backward's
``dL/dalpha_p = -(P_p lam)(P_p x)^T`` (Alg. 3 and 5) is returned dense (``w^2 x w^2`` per patch);
builders that map edge coefficients into ``alpha`` (:class:`GridLaplacian`) carry it on to the
coefficients by autograd.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from .layout import EliminationPlan, LevelPlan, PatchLayout, SingleStep, elimination_plan
from .operators import alpha_from_scipy, check_alpha, patch_node_ids

__all__ = [
    "SchurFactor",
    "MemoryEstimate",
    "InsufficientMemoryError",
    "SingularOperatorError",
    "estimate_memory",
    "factorize",
    "sinv_solve",
    "solve_grid_system",
    "merge_flops",
]

SPD = bool | Literal["auto"]


class InsufficientMemoryError(MemoryError):
    """The factorisation would not fit; the message states the estimate and the limit."""


class SingularOperatorError(ValueError):
    """A block or the top system is singular, or (Cholesky path) not positive definite."""


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes needed by :func:`factorize` (factors kept, and peak including temporaries)."""

    factor_bytes: int
    peak_bytes: int

    def __str__(self) -> str:
        return f"{self.factor_bytes / 2**30:.2f} GiB of factors, {self.peak_bytes / 2**30:.2f} GiB peak"


def _elem(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def estimate_memory(
    layout: PatchLayout,
    *,
    batch: int = 1,
    dtype: torch.dtype = torch.float64,
    symmetric: bool = True,
    individual_below: int = 16,
) -> MemoryEstimate:
    """Estimate factor and peak memory for ``batch`` systems on ``layout`` before factorising."""
    plan = elimination_plan(layout, individual_below)
    e = _elem(dtype)
    factors = 0
    ny = 1 if symmetric else 2
    # uniform levels: two ping-pong X buffers and one Z/W(/Y) scratch buffer, sized for the largest level
    x_size = max(lvl.n_sub * lvl.nR * lvl.nR for lvl in plan.levels)
    zw_size = max(lvl.n_sub * lvl.nG * (lvl.nR * ny + lvl.nG) for lvl in plan.levels)
    peak_tmp = batch * ((2 if len(plan.levels) > 1 else 1) * x_size + zw_size) * e
    for lvl in plan.levels:
        nR, nG, n = lvl.nR, lvl.nG, lvl.n_sub
        factors += batch * n * (nG * nG + nG * nR * ny) * e
        factors += n * (nR + nG) * 8  # index tensors
    # single steps: the last uniform X stays alive while its subdomains are merged, plus each live
    # single result and the new step's X, Z, W
    last = plan.levels[-1]
    pool = last.n_sub * last.nR * last.nR
    for st in plan.singles:
        nR, nG = st.nR, st.nG
        factors += batch * (nG * nG + nG * nR * ny) * e + (nR + nG) * 8
        pool += nR * nR
        peak_tmp = max(peak_tmp, batch * (pool + nG * (nR * ny + nG)) * e)
    top = plan.gid_top.shape[0]
    factors += batch * top * top * e
    alpha = batch * layout.n_patches * (layout.w**4) * e
    return MemoryEstimate(factor_bytes=int(factors), peak_bytes=int(factors + peak_tmp + alpha))


def _available_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 2**62


def _step_flops(nR: int, nG: int, symmetric: bool) -> float:
    """Flops of one block elimination (see :func:`merge_flops`)."""
    R, G = float(nR), float(nG)
    if symmetric:  # Cholesky G^3/3, L^-1 G^3/3, V = L^-1 Z 2 G^2 R, X -= V^T V 2 R^2 G
        return 2 * G**3 / 3 + 2 * G * G * R + 2 * R * R * G
    # LU 2G^3/3, W^-1 4G^3/3, W^-1 Z and Y W^-1 2 G^2 R each, X -= Y (W^-1 Z) 2 R^2 G
    return 2 * G**3 + 4 * G * G * R + 2 * R * R * G


def _level_record(
    level: int, n_sub: int, nR: int, nG: int, batch: int, symmetric: bool, seconds: float
) -> dict[str, float]:
    flops = batch * n_sub * _step_flops(nR, nG, symmetric)
    return {
        "level": float(level),
        "n_sub": float(batch * n_sub),
        "nR": float(nR),
        "nG": float(nG),
        "seconds": seconds,
        "flops": flops,
        "gflops": flops / seconds / 1e9 if seconds > 0 else float("nan"),
    }


def merge_flops(
    layout: PatchLayout, *, batch: int = 1, symmetric: bool = True, individual_below: int = 16
) -> dict[str, float]:
    """Floating-point operations of the Schwarz step, the Schur (merge) steps and the top factorisation.

    Counts per block (Cholesky path): Cholesky G^3/3, triangular inverse G^3/3, ``V = L^-1 Z``
    2 G^2 R, ``X -= V^T V`` 2 R^2 G; LU path: LU 2G^3/3 + inverse 4G^3/3, ``W^-1 Z`` and
    ``Y W^-1`` 2 G^2 R each, ``Y (W^-1 Z)`` 2 R^2 G; top Cholesky n^3/3 (LU 2n^3/3).
    """
    plan = elimination_plan(layout, individual_below)
    out = {"schwarz": 0.0, "merge": 0.0, "top": 0.0}
    all_steps: list[LevelPlan | SingleStep] = [*plan.levels, *plan.singles]
    for k, lvl in enumerate(all_steps):
        f = _step_flops(lvl.nR, lvl.nG, symmetric)
        out["schwarz" if k == 0 else "merge"] += batch * lvl.n_sub * f
    n = float(plan.gid_top.shape[0])
    out["top"] = batch * n**3 * (1 / 3 if symmetric else 2 / 3)
    return out


@dataclass
class _Step:
    """Stored factors of one elimination step.

    Cholesky path (``chol``): ``Winv`` holds ``L^-1`` (``W = L L^T``) and ``WinvZ`` holds
    ``V = L^-1 Z``, so ``D = X - V^T V``. LU path: ``W^-1``, ``W^-1 Z`` and ``Y W^-1``.
    """

    gid_r: Tensor  # [n_sub, nR] long
    gid_g: Tensor  # [n_sub, nG] long
    Winv: Tensor  # [B, n_sub, nG, nG]
    WinvZ: Tensor  # [B, n_sub, nG, nR]
    YWinv: Tensor | None  # [B, n_sub, nR, nG]; None on the Cholesky path
    chol: bool = False


def _all_finite(t: Tensor) -> bool:
    """One pass: a NaN or inf anywhere makes the sum non-finite (exact check only if it is)."""
    if bool(torch.isfinite(t.sum())):
        return True
    return bool(torch.isfinite(t).all())


def _pivot_check(diag: Tensor, what: str, squared: bool) -> None:
    """Raise if the smallest |pivot| / largest |pivot| of any block is below 100 eps."""
    d = diag.abs()
    if squared:
        d = d * d
    ratio = d.amin(dim=-1) / d.amax(dim=-1).clamp_min(torch.finfo(d.dtype).tiny)
    worst = float(ratio.min())
    if not math.isfinite(worst) or worst < 100 * torch.finfo(d.dtype).eps:
        raise SingularOperatorError(
            f"{what} is numerically singular (pivot ratio {worst:.2e}); the operator has a null space "
            "(e.g. a pure Neumann Laplacian without mass or a fixed node)"
        )


def _as3(t: Tensor) -> Tensor:
    """``[..., n, m]`` contiguous -> ``[batch, n, m]`` view."""
    return t.view(-1, t.shape[-2], t.shape[-1])


def _eliminate(
    X: Tensor, Z: Tensor, W: Tensor, Y: Tensor | None, spd: bool, what: str
) -> tuple[Tensor, Tensor, Tensor | None]:
    """One batched Schur complement in place: ``X <- X - Y W^-1 Z`` (Schwarz and Schur steps, Alg. 2 and 4).

    ``X [.., R, R]``, ``Z [.., G, R]``, ``W [.., G, G]`` are contiguous; ``Y`` is ``Z^T`` when
    symmetric (None). Cholesky path: ``W = L L^T``, ``V = L^-1 Z``, ``X -= V^T V`` fused into one
    batched gemm with beta = 1 (no explicit ``W^-1``; the paper's explicit inverse costs ``G^3``
    more and needs two products). Returns the stored factors (see :class:`_Step`).
    """
    nG, nR = Z.shape[-2], Z.shape[-1]
    if spd:
        L, info = torch.linalg.cholesky_ex(W)
        if bool((info > 0).any()):
            raise SingularOperatorError(
                f"{what}: a block is not positive definite, so the operator is indefinite or singular; "
                "pass spd=False to factorise it with LU (no pivoting across subdomains)"
            )
        _pivot_check(L.diagonal(dim1=-2, dim2=-1), what, squared=True)
        eye = torch.eye(nG, dtype=W.dtype, device=W.device).expand_as(W)
        Linv = torch.linalg.solve_triangular(L, eye, upper=False)
        V = torch.matmul(Linv, Z)
        if nR > 0:
            _as3(X).baddbmm_(_as3(V).mT, _as3(V), alpha=-1)
        return Linv, V, None
    LU, piv, info = torch.linalg.lu_factor_ex(W)
    if bool((info > 0).any()):
        raise SingularOperatorError(f"{what}: a block is exactly singular")
    _pivot_check(LU.diagonal(dim1=-2, dim2=-1), what, squared=False)
    eye = torch.eye(nG, dtype=W.dtype, device=W.device).expand_as(W)
    Winv = torch.linalg.lu_solve(LU, piv, eye)
    WinvZ = torch.matmul(Winv, Z)
    assert Y is not None
    YWinv = torch.matmul(Y, Winv)
    if nR > 0:
        _as3(X).baddbmm_(_as3(Y), _as3(WinvZ), alpha=-1)
    return Winv, WinvZ, YWinv


# One block operation of a merge: (child, target, row seg, col seg, mode); a segment is
# (child start, length, target start, step); target 0 = X (R,R), 1 = Z (G,R), 2 = W (G,G), 3 = Y (R,G);
# mode 0 = copy, 1 = add, 2 = zero-fill (child unused).
_Seg = tuple[int, int, int, int]
_Op = tuple[int, int, _Seg, _Seg, int]


def _segments(pos: np.ndarray, shared: np.ndarray, nR: int) -> list[tuple[_Seg, int, bool]]:
    """Split a child -> ``[R, G]`` position map into maximal runs (step +-1) inside one part.

    Returns ``((child start, length, start inside its part, step), part (0 = R, 1 = G), shared)``.
    """
    out: list[tuple[_Seg, int, bool]] = []
    i, n = 0, len(pos)
    while i < n:
        part = int(pos[i] >= nR)
        sh = bool(shared[pos[i]])
        j, step = i + 1, 1
        if j < n and abs(int(pos[j] - pos[i])) == 1:
            step = int(pos[j] - pos[i])
        while (
            j < n
            and int(pos[j] - pos[j - 1]) == step
            and int(pos[j] >= nR) == part
            and bool(shared[pos[j]]) == sh
        ):
            j += 1
        out.append(((i, j - i, int(pos[i]) - part * nR, step), part, sh))
        i = j
    return out


@functools.lru_cache(maxsize=256)
def _merge_ops(pos1: bytes, pos2: bytes, nR: int, nG: int, with_y: bool) -> tuple[_Op, ...]:
    """The block copies that assemble a merged ``[R, G]`` matrix from two children (Alg. 4's scatter-add).

    Child 1 is copied, child 2 copied where it alone covers the block and added where both do
    (the shared edge), and only the blocks neither child covers are zero-filled: no full zero fill,
    no full-size scatter-add. Descending runs are the paper's edge flip ``J``.
    """
    p1 = np.frombuffer(pos1, dtype=np.int64)
    p2 = np.frombuffer(pos2, dtype=np.int64)
    shared = np.zeros(nR + nG, dtype=bool)
    shared[np.intersect1d(p1, p2)] = True
    seg1, seg2 = _segments(p1, shared, nR), _segments(p2, shared, nR)
    target = {(0, 0): 0, (1, 0): 1, (1, 1): 2, (0, 1): 3}
    ops: list[_Op] = []
    for child, segs in ((0, seg1), (1, seg2)):
        for si, pi, shi in segs:
            for sj, pj, shj in segs:
                t = target[(pi, pj)]
                if t == 3 and not with_y:
                    continue
                mode = 1 if (child == 1 and shi and shj) else 0
                ops.append((child, t, si, sj, mode))
    for a, b in ((seg1, seg2), (seg2, seg1)):
        for si, pi, shi in a:
            for sj, pj, shj in b:
                if shi or shj:
                    continue
                t = target[(pi, pj)]
                if t == 3 and not with_y:
                    continue
                ops.append((-1, t, si, sj, 2))
    return tuple(ops)


def _target_slice(seg: _Seg) -> slice:
    _, n, m, s = seg
    return slice(m, m + n) if s > 0 else slice(m - n + 1, m + 1)


def _assemble_into(
    children: tuple[Tensor, Tensor], targets: tuple[Tensor, ...], ops: tuple[_Op, ...]
) -> None:
    """Apply :func:`_merge_ops` block operations (children and targets share their leading dims)."""
    for child, t, si, sj, mode in ops:
        tgt = targets[t][..., _target_slice(si), _target_slice(sj)]
        if mode == 2:
            tgt.zero_()
            continue
        c = children[child]
        src = c[..., si[0] : si[0] + si[1], sj[0] : sj[0] + sj[1]]
        flips = [d for d, s in ((-2, si[3]), (-1, sj[3])) if s < 0]
        if flips:
            src = src.flip(flips)
        if mode == 0:
            tgt.copy_(src)
        else:
            tgt.add_(src)


_SMALL_WORK = 2e7  # flops below which one thread is faster than waking a thread pool


@contextlib.contextmanager
def _one_thread_if_small(work: float, device: torch.device) -> Iterator[None]:
    """Run small CPU problems on one thread (restored afterwards).

    A tiny factorisation is hundreds of calls on a few small blocks; each batched torch call opens a
    parallel region, and on a loaded machine waking the other threads costs far more than the work
    (we measured 10x on a 17^2 grid). Large problems keep the caller's setting.
    """
    n = torch.get_num_threads()
    if device.type != "cpu" or work >= _SMALL_WORK or n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class SchurFactor:
    """Stored factors of ``B`` grid systems; solve many right-hand sides with :meth:`solve`.

    Attributes:
        layout: the patch layout; ``symmetric``: Cholesky path (``solve_transposed == solve``).
        stats: timings (``schwarz_s``, ``merge_s``, ``top_s``) and flop counts of the factorisation.
        level_stats: one record per elimination step (``level``, ``n_sub``, ``nR``, ``nG``,
            ``seconds``, ``flops``, ``gflops``; the update shape is ``n_sub`` products
            ``[nR, nG] x [nG, nR]``), for per-level efficiency against a same-shape batched matmul.
    """

    layout: PatchLayout
    alpha: Tensor
    symmetric: bool
    steps: list[_Step]
    gid_top: Tensor
    top: tuple[Tensor, ...]
    stats: dict[str, float] = field(default_factory=dict)
    level_stats: list[dict[str, float]] = field(default_factory=list)

    @property
    def batch(self) -> int:
        return int(self.alpha.shape[0])

    @property
    def dtype(self) -> torch.dtype:
        return self.alpha.dtype

    @property
    def device(self) -> torch.device:
        return self.alpha.device

    # ---------------------------------------------------------------- right-hand sides

    def _to_padded(self, rhs: Tensor, name: str) -> tuple[Tensor, tuple[int, ...]]:
        """``[B, n0, n1(, C)]`` -> padded flat ``[B, N, C]`` (and the original shape)."""
        n0, n1 = self.layout.grid_shape
        if not isinstance(rhs, Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(rhs).__name__}")
        if rhs.ndim not in (3, 4) or tuple(rhs.shape[1:3]) != (n0, n1):
            raise ValueError(
                f"{name} must have shape [B, {n0}, {n1}] or [B, {n0}, {n1}, C], got {list(rhs.shape)}"
            )
        if rhs.shape[0] != self.batch and self.batch != 1:
            raise ValueError(f"{name} has batch {rhs.shape[0]} but the factor holds {self.batch} systems")
        if not _all_finite(rhs):
            raise ValueError(f"{name} contains NaN or infinite values")
        shape = tuple(rhs.shape)
        r = rhs if rhs.ndim == 4 else rhs.unsqueeze(-1)
        r = r.to(dtype=self.dtype, device=self.device)
        if self.layout.is_padded:
            N0, N1 = self.layout.padded_shape
            r = torch.nn.functional.pad(r, (0, 0, 0, N1 - n1, 0, N0 - n0))
        Bb, N0, N1, C = r.shape
        r = r.reshape(Bb, N0 * N1, C)
        if self.batch == 1 and Bb > 1:  # one operator, many systems: fold the batch into columns
            r = r.permute(1, 0, 2).reshape(1, N0 * N1, Bb * C)
        return r, shape

    def _from_padded(self, x: Tensor, shape: tuple[int, ...]) -> Tensor:
        n0, n1 = self.layout.grid_shape
        N0, N1 = self.layout.padded_shape
        Bb = shape[0]
        C = shape[3] if len(shape) == 4 else 1
        if self.batch == 1 and Bb > 1:
            x = x.reshape(N0 * N1, Bb, C).permute(1, 0, 2)
        x = x.reshape(Bb, N0, N1, C)[:, :n0, :n1]
        return x if len(shape) == 4 else x[..., 0]

    def _solve_flat(self, f: Tensor, transposed: bool) -> Tensor:
        """Solve on padded flat ``f [B, N, C]`` (RHS elimination and back-substitution, Alg. 1).

        One node-major vector ``[N, B*C]`` carries everything: the bottom-up pass overwrites each
        step's ``f_G`` with what the back-substitution needs (``L^-1 f_G`` on the Cholesky path),
        and the top-down pass overwrites it with ``x_G`` (each node is eliminated by exactly one
        step). Gathers are row selections and the scatter-add is ``scatter_add_`` (both over whole
        rows of ``B*C`` values), one batched product per step and phase.
        """
        B, N, C = f.shape
        with _one_thread_if_small(40.0 * N * B * C, f.device):
            return self._solve_flat_impl(f, transposed)

    def _solve_flat_impl(self, f: Tensor, transposed: bool) -> Tensor:
        B, N, C = f.shape
        K = B * C
        v = f.permute(1, 0, 2).reshape(N, K).clone()

        def gather(ids: Tensor) -> Tensor:  # [n_sub, k] ids -> [B, n_sub, k, C]
            g = v.index_select(0, ids.reshape(-1)).view(ids.shape[0], ids.shape[1], B, C)
            return g.permute(2, 0, 1, 3)

        def flat(t: Tensor) -> Tensor:  # [B, n_sub, k, C] -> [n_sub * k, B * C]
            return t.permute(1, 2, 0, 3).reshape(-1, K)

        def put(ids: Tensor, t: Tensor) -> None:
            v.index_copy_(0, ids.reshape(-1), flat(t))

        def pieces(st: _Step) -> list[tuple[Tensor, Tensor, Tensor, Tensor, Tensor | None]]:
            """The step's subdomains in pieces whose temporaries stay below ~16 MB (same factors).

            Subdomains of one step never share eliminated nodes, so pieces are independent.
            """
            n_sub, nG, nR = st.WinvZ.shape[1], st.WinvZ.shape[2], st.WinvZ.shape[3]
            k = max(1, min(n_sub, math.ceil(n_sub * (nR + nG) * K / 2**21)))
            if k == 1:
                return [(st.gid_g, st.gid_r, st.Winv, st.WinvZ, st.YWinv)]
            out = []
            for sl in torch.arange(n_sub).tensor_split(k):
                a, b = int(sl[0]), int(sl[-1]) + 1
                Y = None if st.YWinv is None else st.YWinv[:, a:b]
                out.append((st.gid_g[a:b], st.gid_r[a:b], st.Winv[:, a:b], st.WinvZ[:, a:b], Y))
            return out

        keep = K <= 8  # few columns: keep each y (no write-back, no re-gather)
        ys: list[Tensor] = []
        for st in self.steps:  # RHS elimination, bottom-up: f_R -= Y W^-1 f_G
            for gid_g, gid_r, Winv, WinvZ, YWinv in pieces(st):
                fG = gather(gid_g)
                if st.chol:  # y = L^-1 f_G (kept in f_G); f_R -= V^T y
                    fG = torch.matmul(Winv, fG)
                    if keep:
                        ys.append(fG)
                    else:
                        put(gid_g, fG)
                    upd = torch.matmul(WinvZ.mT, fG)
                else:  # (Y W^-1) of A^T is (W^-1 Z)^T
                    M = WinvZ.mT if transposed or YWinv is None else YWinv
                    upd = torch.matmul(M, fG)
                if upd.shape[-2] > 0:
                    u = flat(upd).neg_()
                    ids = gid_r.reshape(-1, 1).expand(-1, K)
                    v.scatter_add_(0, ids, u)
        if self.top:
            fT = v.index_select(0, self.gid_top).view(-1, B, C).permute(1, 0, 2)
            if self.symmetric:
                xT = torch.cholesky_solve(fT, self.top[0])
            else:
                xT = torch.linalg.lu_solve(self.top[0], self.top[1], fT, adjoint=transposed)
            v.index_copy_(0, self.gid_top, xT.permute(1, 0, 2).reshape(-1, K))
        for st in reversed(self.steps):  # back-substitution: x_G = W^-1 f_G - W^-1 Z x_R
            for gid_g, gid_r, Winv, WinvZ, YWinv in reversed(pieces(st)):
                fG = ys.pop() if keep and st.chol else gather(gid_g)
                xR = gather(gid_r)
                if st.chol:  # x_G = L^-T (y - V x_R)
                    xG = torch.matmul(Winv.mT, fG - torch.matmul(WinvZ, xR))
                elif transposed and YWinv is not None:
                    xG = Winv.mT @ fG - YWinv.mT @ xR
                else:
                    xG = Winv @ fG - WinvZ @ xR
                put(gid_g, xG)
        if not _all_finite(v):
            raise SingularOperatorError(
                "the solution is not finite: the operator is singular or badly scaled"
            )
        return v.view(N, B, C).permute(1, 0, 2)

    @torch.no_grad()
    def solve(self, rhs: Tensor) -> Tensor:
        """Solve ``A x = rhs`` with the stored factors.

        Args:
            rhs: ``[B, n0, n1]`` or ``[B, n0, n1, C]`` (a factor of one system accepts any B).

        Returns:
            x with the shape of ``rhs``.
        """
        f, shape = self._to_padded(rhs, "rhs")
        return self._from_padded(self._solve_flat(f, transposed=False), shape)

    @torch.no_grad()
    def solve_transposed(self, rhs: Tensor) -> Tensor:
        """Solve ``A^T x = rhs`` with the same factors (the adjoint solve of the backward pass)."""
        f, shape = self._to_padded(rhs, "rhs")
        return self._from_padded(self._solve_flat(f, transposed=not self.symmetric), shape)

    @torch.no_grad()
    def residual(self, x: Tensor, rhs: Tensor) -> Tensor:
        """Relative residual ``||A x - b|| / ||b||`` per system and column, ``[B(, C)]``."""
        return _relative_residual(self.alpha, self.layout, x, rhs)


def _relative_residual(alpha: Tensor, layout: PatchLayout, x: Tensor, rhs: Tensor) -> Tensor:
    n0, n1 = layout.grid_shape
    N0, N1 = layout.padded_shape
    vec = x.ndim == 3
    xx = (x.unsqueeze(-1) if vec else x).to(alpha.dtype)
    bb = (rhs.unsqueeze(-1) if vec else rhs).to(alpha.dtype)
    Bb, C = xx.shape[0], xx.shape[-1]
    xp = torch.nn.functional.pad(xx, (0, 0, 0, N1 - n1, 0, N0 - n0)).reshape(Bb, N0 * N1, C)
    ids = torch.as_tensor(patch_node_ids(layout).reshape(-1), device=alpha.device)
    ww = layout.w * layout.w
    a = alpha.reshape(alpha.shape[0], -1, ww, ww)
    xP = xp[:, ids].reshape(Bb, -1, ww, C)
    Ax = torch.zeros_like(xp).index_add_(1, ids, (a @ xP).reshape(Bb, -1, C))
    Ax = Ax.reshape(Bb, N0, N1, C)[:, :n0, :n1]
    num = torch.linalg.vector_norm(Ax - bb, dim=(1, 2))
    den = torch.linalg.vector_norm(bb, dim=(1, 2)).clamp_min(torch.finfo(alpha.dtype).tiny)
    out = num / den
    return out[..., 0] if vec else out


def factorize(
    alpha: Tensor,
    layout: PatchLayout,
    *,
    spd: SPD = "auto",
    memory_limit: int | None = None,
    individual_below: int = 16,
) -> SchurFactor:
    """Factorise ``B`` grid systems given as per-patch matrices.

    Args:
        alpha: ``[B, a0, a1, w*w, w*w]`` (see :mod:`.operators`); float32 or float64, any device.
        layout: the patch layout.
        spd: ``"auto"`` uses Cholesky when every ``alpha_p`` is symmetric (the operator must then be
            positive definite, else :class:`SingularOperatorError`); ``False`` forces LU; ``True``
            requires symmetry.
        memory_limit: bytes allowed (default: the device's available memory).
        individual_below: the merge levels leaving at most this many subdomains run one subdomain
            at a time and eliminate unshared outer-boundary nodes (see ``layout.SingleStep``);
            0 keeps every level uniform and the whole perimeter in the top system.

    Raises:
        ValueError: bad ``alpha`` (shape, dtype, NaN) or ``spd=True`` with non-symmetric ``alpha``.
        InsufficientMemoryError: the estimate exceeds the limit (the message states both).
        SingularOperatorError: a singular, indefinite (Cholesky path) or ill-posed operator.
    """
    check_alpha(alpha, layout)
    alpha = alpha.detach()
    dev = alpha.device
    sym = bool(torch.equal(alpha, alpha.mT))
    if spd is True and not sym:
        raise ValueError("spd=True but alpha is not symmetric; pass spd=False or 'auto'")
    if spd not in (True, False, "auto"):
        raise ValueError(f"spd must be True, False or 'auto', got {spd!r}")
    use_chol = sym and spd is not False
    B = alpha.shape[0]
    if individual_below < 0:
        raise ValueError(f"individual_below must be >= 0, got {individual_below}")
    est = estimate_memory(
        layout, batch=B, dtype=alpha.dtype, symmetric=use_chol, individual_below=individual_below
    )
    limit = _available_bytes(dev) if memory_limit is None else int(memory_limit)
    if est.peak_bytes > limit:
        raise InsufficientMemoryError(
            f"factorising {B} system(s) on a {layout.padded_shape[0]}x{layout.padded_shape[1]} grid in "
            f"{alpha.dtype} needs an estimated {est} but only {limit / 2**30:.2f} GiB are available"
        )
    work = sum(merge_flops(layout, batch=B, symmetric=use_chol, individual_below=individual_below).values())
    with _one_thread_if_small(work, dev):
        return _factorize(alpha, layout, use_chol, individual_below, est)


def _factorize(
    alpha: Tensor, layout: PatchLayout, use_chol: bool, individual_below: int, est: MemoryEstimate
) -> SchurFactor:
    """The level loop of :func:`factorize` (inputs already validated)."""
    dev = alpha.device
    B = alpha.shape[0]
    plan: EliminationPlan = elimination_plan(layout, individual_below)
    ww = layout.w * layout.w
    stats: dict[str, float] = {}
    steps: list[_Step] = []
    level_stats: list[dict[str, float]] = []
    dt = alpha.dtype
    # Workspace reused across levels: X (the new DtN, in place) ping-pongs between two buffers
    # (level k reads level k-1's from the other one); Z, W, Y share one scratch buffer.
    x_size = max(B * lvl.n_sub * lvl.nR * lvl.nR for lvl in plan.levels)
    zw_size = max(B * lvl.n_sub * lvl.nG * (lvl.nR * (1 if use_chol else 2) + lvl.nG) for lvl in plan.levels)
    xbuf = [torch.empty(x_size, dtype=dt, device=dev) for _ in range(2 if len(plan.levels) > 1 else 1)]
    zwbuf = torch.empty(zw_size, dtype=dt, device=dev)

    def blocks(k: int, n: int, nR: int, nG: int) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        X = xbuf[k % len(xbuf)][: B * n * nR * nR].view(B, n, nR, nR)
        o1 = B * n * nG * nR
        Z = zwbuf[:o1].view(B, n, nG, nR)
        W = zwbuf[o1 : o1 + B * n * nG * nG].view(B, n, nG, nG)
        Y = None if use_chol else zwbuf[o1 + B * n * nG * nG : 2 * o1 + B * n * nG * nG].view(B, n, nR, nG)
        return X, Z, W, Y

    _sync(dev)
    t_start = t0 = time.perf_counter()
    D = torch.empty(0)
    for k, lvl in enumerate(plan.levels):
        nR, nG, n = lvl.nR, lvl.nG, lvl.n_sub
        X, Z, W, Y = blocks(k, n, nR, nG)
        if k == 0:  # Schwarz step: gather alpha_p's blocks over [ring, interior]
            assert lvl.perm is not None
            r_ids, g_ids = lvl.perm[:nR], lvl.perm[nR:]
            a2 = alpha.reshape(B * n, ww * ww)
            for T, rows, cols in ((X, r_ids, r_ids), (Z, g_ids, r_ids), (W, g_ids, g_ids), (Y, r_ids, g_ids)):
                if T is None:
                    continue
                idx = torch.as_tensor((rows[:, None] * ww + cols[None, :]).reshape(-1), device=dev)
                torch.gather(a2, 1, idx.expand(B * n, -1), out=T.view(B * n, -1))
        else:  # Schur step: the two children's DtN blocks copied (added on the shared edge) over [R, G]
            m0, m1 = plan.levels[k - 1].counts
            if lvl.axis == 0:  # children are strided views of the previous level's X: never copied
                D6 = D.unflatten(1, (m0 // 2, 2, m1))
                c1, c2 = D6[:, :, 0], D6[:, :, 1]
            else:
                D6 = D.unflatten(1, (m0, m1 // 2, 2))
                c1, c2 = D6[:, :, :, 0], D6[:, :, :, 1]
            assert lvl.pos1 is not None and lvl.pos2 is not None
            ops = _merge_ops(lvl.pos1.tobytes(), lvl.pos2.tobytes(), nR, nG, not use_chol)
            shape = (B, *lvl.counts)
            tg = tuple(T.view(*shape, *T.shape[-2:]) if T is not None else X for T in (X, Z, W, Y))
            _assemble_into((c1, c2), tg, ops)
        what = "Schwarz step" if k == 0 else f"Schur step {k}"
        Winv, WinvZ, YWinv = _eliminate(X, Z, W, Y, use_chol, what)
        D = X
        steps.append(
            _Step(
                gid_r=torch.as_tensor(lvl.gid_r, device=dev),
                gid_g=torch.as_tensor(lvl.gid_g, device=dev),
                Winv=Winv,
                WinvZ=WinvZ,
                YWinv=YWinv,
                chol=use_chol,
            )
        )
        _sync(dev)
        t1 = time.perf_counter()
        level_stats.append(_level_record(k, n, nR, nG, B, use_chol, t1 - t0))
        if k == 0:
            stats["schwarz_s"] = t1 - t0
        t0 = t1
    zwbuf = torch.empty(0, dtype=dt, device=dev)  # free the scratch space before the single steps
    if plan.singles:  # the last levels, one subdomain at a time (outer-boundary elimination)
        pool: list[Tensor | None] = [D[:, j] for j in range(D.shape[1])]
        for k, st in enumerate(plan.singles):
            c1, c2 = pool[st.child1], pool[st.child2]
            pool[st.child1] = pool[st.child2] = None  # children are consumed once: free them
            if c1 is None or c2 is None:  # pragma: no cover - the plan consumes each child once
                raise RuntimeError("internal error: a subdomain was merged twice")
            nR, nG = st.nR, st.nG
            X = torch.empty(B, 1, nR, nR, dtype=dt, device=dev)
            Z = torch.empty(B, 1, nG, nR, dtype=dt, device=dev)
            W = torch.empty(B, 1, nG, nG, dtype=dt, device=dev)
            Y = None if use_chol else torch.empty(B, 1, nR, nG, dtype=dt, device=dev)
            ops = _merge_ops(st.pos1.tobytes(), st.pos2.tobytes(), nR, nG, not use_chol)
            _assemble_into(
                (c1[:, None], c2[:, None]), tuple(T if T is not None else X for T in (X, Z, W, Y)), ops
            )
            del c1, c2
            Winv, WinvZ, YWinv = _eliminate(X, Z, W, Y, use_chol, f"Schur step {len(plan.levels) + k}")
            del Z, W, Y
            D = X
            pool.append(D[:, 0])
            steps.append(
                _Step(
                    gid_r=torch.as_tensor(st.gid_r, device=dev),
                    gid_g=torch.as_tensor(st.gid_g, device=dev),
                    Winv=Winv,
                    WinvZ=WinvZ,
                    YWinv=YWinv,
                    chol=use_chol,
                )
            )
            _sync(dev)
            t1 = time.perf_counter()
            level_stats.append(_level_record(len(plan.levels) + k, 1, nR, nG, B, use_chol, t1 - t0))
            t0 = t1
        del pool
    xbuf.clear()  # D (the last X) keeps its buffer alive as long as it is needed
    _sync(dev)
    t0 = time.perf_counter()
    stats["merge_s"] = t0 - t_start - stats["schwarz_s"]
    Dtop = D[:, 0]
    top: tuple[Tensor, ...]
    if Dtop.shape[-1] == 0:  # the last single step eliminated everything
        top = ()
    elif use_chol:
        L, info = torch.linalg.cholesky_ex(Dtop)
        if bool((info > 0).any()):
            raise SingularOperatorError(
                "top system: not positive definite, so the operator is indefinite or singular; "
                "pass spd=False to factorise it with LU"
            )
        _pivot_check(L.diagonal(dim1=-2, dim2=-1), "top system", squared=True)
        top = (L,)
    else:
        LU, piv, info = torch.linalg.lu_factor_ex(Dtop)
        if bool((info > 0).any()):
            raise SingularOperatorError("top system: exactly singular")
        _pivot_check(LU.diagonal(dim1=-2, dim2=-1), "top system", squared=False)
        top = (LU, piv)
    _sync(dev)
    stats["top_s"] = time.perf_counter() - t0
    flops = merge_flops(layout, batch=B, symmetric=use_chol, individual_below=individual_below)
    stats.update({f"{k}_flops": v for k, v in flops.items()})
    stats["memory_estimate_bytes"] = float(est.peak_bytes)
    return SchurFactor(
        layout=layout,
        alpha=alpha,
        symmetric=use_chol,
        steps=steps,
        gid_top=torch.as_tensor(plan.gid_top, device=dev),
        top=top,
        stats=stats,
        level_stats=level_stats,
    )


class _SchurSolve(torch.autograd.Function):
    """``x = A(alpha)^-1 b``; backward: ``lam = A^-T g``, ``db = lam``, ``dalpha_p = -(P_p lam)(P_p x)^T``."""

    @staticmethod
    def forward(ctx: Any, alpha: Tensor, rhs: Tensor, factor: SchurFactor) -> Tensor:  # type: ignore[override]
        f, shape = factor._to_padded(rhs.detach(), "rhs")
        xp = factor._solve_flat(f, transposed=False)
        ctx.factor = factor
        ctx.shape = shape
        ctx.save_for_backward(xp)
        return factor._from_padded(xp, shape)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None]:  # type: ignore[override]
        factor: SchurFactor = ctx.factor
        (xp,) = ctx.saved_tensors
        g, _ = factor._to_padded(grad.contiguous(), "grad")
        lam = factor._solve_flat(g, transposed=not factor.symmetric)  # backward: adjoint solve
        grad_rhs = factor._from_padded(lam, ctx.shape) if ctx.needs_input_grad[1] else None
        grad_alpha = None
        if ctx.needs_input_grad[0]:
            lay = factor.layout
            ww = lay.w * lay.w
            ids = torch.as_tensor(patch_node_ids(lay).reshape(-1), device=xp.device)
            B, _, C = xp.shape
            lamP = lam[:, ids].reshape(B, lay.a0, lay.a1, ww, C)
            xP = xp[:, ids].reshape(B, lay.a0, lay.a1, ww, C)
            grad_alpha = -(lamP @ xP.mT)  # dL/dA_ij = -lam_i x_j, summed over columns
        return grad_alpha, grad_rhs, None


def sinv_solve(
    alpha: Tensor,
    rhs: Tensor,
    layout: PatchLayout,
    *,
    factor: SchurFactor | None = None,
    spd: SPD = "auto",
) -> Tensor:
    """Differentiable solve ``A(alpha) x = rhs`` (gradients w.r.t. ``alpha`` and ``rhs``).

    Args:
        alpha: ``[B, a0, a1, w*w, w*w]`` per-patch matrices (e.g. ``GridLaplacian.alpha(layout)``,
            which carries gradients to edge coefficients).
        rhs: ``[B, n0, n1]`` or ``[B, n0, n1, C]``.
        factor: a factorisation of the same ``alpha`` to reuse (else one is computed).

    Returns:
        x with the shape of ``rhs``; backward runs one transposed solve with the same factors.
    """
    if factor is None:
        factor = factorize(alpha, layout, spd=spd)
    elif factor.layout != layout or factor.alpha.shape != alpha.shape:
        raise ValueError("factor was computed for a different layout or alpha shape")
    out: Tensor = _SchurSolve.apply(alpha, rhs, factor)
    return out


def solve_grid_system(
    A: sp.spmatrix | sp.sparray,
    b: np.ndarray,
    grid_shape: tuple[int, int],
    *,
    w: int = 5,
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
    spd: SPD = "auto",
) -> np.ndarray:
    """SciPy convenience: solve ``A x = b`` for a local stencil on a ``grid_shape`` grid (row-major).

    Args:
        A: ``[n, n]`` sparse, ``n = n0 * n1``; b: ``[n]`` or ``[n, C]``.
        w: patch width of the layout (see :class:`PatchLayout`).
        dtype: float32 or float64, the precision of the factorisation.
        device: where to factorise and solve (``"cuda"`` on a GPU); the answer comes back to numpy.
        spd: as in :func:`factorize`: ``"auto"`` (Cholesky when symmetric), or ``False`` for LU,
            e.g. for a symmetric indefinite operator (Helmholtz-like).

    Returns:
        x with the shape of ``b`` (float64 numpy).
    """
    if (
        not isinstance(grid_shape, tuple | list)
        or len(grid_shape) != 2
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) and v > 0 for v in grid_shape)
    ):
        raise ValueError(f"grid_shape must be two positive integers (n0, n1), got {grid_shape!r}")
    n0, n1 = (int(v) for v in grid_shape)
    if sp.issparse(A) and A.shape[0] != n0 * n1:
        raise ValueError(
            f"grid_shape {(n0, n1)} has {n0 * n1} nodes but A has {A.shape[0]} rows; "
            "give the grid the matrix was assembled on"
        )
    if sp.issparse(A) and np.iscomplexobj(A.data):
        raise ValueError(
            "A is complex; the solver factorises real matrices (solve the real 2x2 block form "
            "[[Re A, -Im A], [Im A, Re A]] instead)"
        )
    if np.iscomplexobj(b):
        raise ValueError("b is complex; solve its real and imaginary parts as two right-hand-side columns")
    layout = PatchLayout.for_grid(n0, n1, w=w)
    alpha = alpha_from_scipy(A, layout, dtype=dtype).to(torch.device(device))
    bb = np.asarray(b, dtype=np.float64)
    if bb.ndim not in (1, 2) or bb.shape[0] != n0 * n1:
        raise ValueError(f"b must have shape [{n0 * n1}] or [{n0 * n1}, C], got {list(bb.shape)}")
    rhs = torch.as_tensor(bb.reshape(1, n0, n1, -1), dtype=dtype, device=alpha.device)
    x = factorize(alpha, layout, spd=spd).solve(rhs)
    return x.reshape(n0 * n1, -1).double().cpu().numpy().reshape(bb.shape)
