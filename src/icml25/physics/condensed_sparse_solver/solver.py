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
The right-hand side lives in one global vector ``f`` (gather ``f_G``, batched matmul, scatter-add
into ``f_R``), so no per-patch ``beta`` split is needed: every node is eliminated exactly once and
``f_G`` is final when its step runs. Factors are explicit inverses (``W^-1``, ``W^-1 Z``, and
``Y W^-1`` when ``A`` is not symmetric), so a solve is only gathers, matmuls and scatters.

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

import math
import os
import time
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
    peak_tmp = 0
    prev_nb = layout.w * layout.w
    prev_sub = layout.n_patches
    for lvl in plan.levels:
        nR, nG, n = lvl.nR, lvl.nG, lvl.n_sub
        factors += batch * n * (nG * nG + nG * nR * (1 if symmetric else 2)) * e
        factors += n * (nR + nG) * 8  # index tensors
        M = nR + nG
        # new K and product temporaries, plus the previous level's K (its X block is D)
        tmp = batch * (n * (M * M + 2 * nR * nR) + prev_sub * prev_nb * prev_nb) * e
        peak_tmp = max(peak_tmp, tmp)
        prev_nb, prev_sub = M, n
    pool = prev_sub * prev_nb * prev_nb  # the last uniform level's K (holding its DtN) stays alive
    for st in plan.singles:
        nR, nG = st.nR, st.nG
        factors += batch * (nG * nG + nG * nR * (1 if symmetric else 2)) * e + (nR + nG) * 8
        pool += (nR + nG) ** 2
        peak_tmp = max(peak_tmp, batch * (pool + (nR + nG) ** 2 + 2 * nR * nR) * e)
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


def merge_flops(
    layout: PatchLayout, *, batch: int = 1, symmetric: bool = True, individual_below: int = 16
) -> dict[str, float]:
    """Floating-point operations of the Schwarz step, the Schur (merge) steps and the top factorisation.

    Counts per block: Cholesky G^3/3 + inverse 2G^3/3 (LU: 2G^3/3 + 4G^3/3), ``W^-1 Z`` 2 G^2 R,
    ``Y W^-1`` 2 R G^2 (non-symmetric only), ``Y (W^-1 Z)`` 2 R^2 G; top Cholesky n^3/3 (LU 2n^3/3).
    """
    plan = elimination_plan(layout, individual_below)
    out = {"schwarz": 0.0, "merge": 0.0, "top": 0.0}
    all_steps: list[LevelPlan | SingleStep] = [*plan.levels, *plan.singles]
    for k, lvl in enumerate(all_steps):
        R, G = float(lvl.nR), float(lvl.nG)
        inv = G**3 if symmetric else 2 * G**3
        f = inv + 2 * G * G * R + 2 * R * R * G + (0 if symmetric else 2 * R * G * G)
        out["schwarz" if k == 0 else "merge"] += batch * lvl.n_sub * f
    n = float(plan.gid_top.shape[0])
    out["top"] = batch * n**3 * (1 / 3 if symmetric else 2 / 3)
    return out


@dataclass
class _Step:
    gid_r: Tensor  # [n_sub, nR] long
    gid_g: Tensor  # [n_sub, nG] long
    Winv: Tensor  # [B, n_sub, nG, nG]
    WinvZ: Tensor  # [B, n_sub, nG, nR]
    YWinv: Tensor | None  # [B, n_sub, nR, nG]; None when symmetric (= WinvZ^T)


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


def _schur_update(X: Tensor, A: Tensor, B: Tensor) -> Tensor:
    """``D = X - A @ B``.

    For few large blocks in place in K's X block (one gemm with beta = 1, no extra pass over
    memory); for many small blocks out of place (torch's in-place batched gemm on a strided
    output runs one call per matrix, which is slower there).
    """
    n, m = X.shape[-2], X.shape[-1]
    k = A.shape[-1]
    if n == 0 or m == 0:
        return X
    X3 = X.view(-1, n, m)  # a view: the batch dims of a block of a contiguous K merge
    if X3.shape[0] > 64:
        return X - A @ B
    X3.baddbmm_(A.reshape(-1, n, k), B.reshape(-1, k, m), alpha=-1)
    return X


def _eliminate(K: Tensor, nR: int, spd: bool, what: str) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """One batched Schur complement: ``D = X - Y W^-1 Z`` (Schwarz and Schur steps, Alg. 2 and 4)."""
    X, Y = K[..., :nR, :nR], K[..., :nR, nR:]
    Z, W = K[..., nR:, :nR], K[..., nR:, nR:]
    if spd:
        L, info = torch.linalg.cholesky_ex(W)
        if bool((info > 0).any()):
            raise SingularOperatorError(
                f"{what}: a block is not positive definite, so the operator is indefinite or singular; "
                "pass spd=False to factorise it with LU (no pivoting across subdomains)"
            )
        _pivot_check(L.diagonal(dim1=-2, dim2=-1), what, squared=True)
        Winv = torch.cholesky_inverse(L)
        WinvZ = Winv @ Z
        # D = X - Y W^-1 Z with Y = Z^T (Cholesky reads one triangle only)
        return _schur_update(X, Z.mT, WinvZ), Winv, WinvZ, None
    LU, piv, info = torch.linalg.lu_factor_ex(W)
    if bool((info > 0).any()):
        raise SingularOperatorError(f"{what}: a block is exactly singular")
    _pivot_check(LU.diagonal(dim1=-2, dim2=-1), what, squared=False)
    eye = torch.eye(W.shape[-1], dtype=W.dtype, device=W.device).expand_as(W)
    Winv = torch.linalg.lu_solve(LU, piv, eye)
    WinvZ = Winv @ Z
    YWinv = Y @ Winv
    return _schur_update(X, Y, WinvZ), Winv, WinvZ, YWinv


def _scatter_add_blocks(K: Tensor, c: Tensor, runs: tuple[tuple[int, int, int, int], ...]) -> None:
    """``K[pos, pos] += c`` for a child's DtN ``c``, as block copies over runs of consecutive positions.

    A descending run is a child ring that walks the shared edge the other way (the paper's flip ``J``).
    """
    if len(runs) > 8:  # scattered map: one advanced-index scatter instead
        pos = torch.cat([torch.arange(m, m + s * n, s) for _, n, m, s in runs]).to(K.device)
        K[..., pos[:, None], pos[None, :]] += c
        return
    for ci, ni, mi, si in runs:
        rows = slice(mi, mi + ni) if si > 0 else slice(mi - ni + 1, mi + 1)
        for cj, nj, mj, sj in runs:
            cols = slice(mj, mj + nj) if sj > 0 else slice(mj - nj + 1, mj + 1)
            block = c[..., ci : ci + ni, cj : cj + nj]
            flips = [d for d, s in ((-2, si), (-1, sj)) if s < 0]
            if flips:
                block = block.flip(flips)
            K[..., rows, cols] += block


def _assemble(
    c1: Tensor,
    c2: Tensor,
    runs1: tuple[tuple[int, int, int, int], ...],
    runs2: tuple[tuple[int, int, int, int], ...],
    shape: tuple[int, ...],
    view: tuple[int, ...],
) -> Tensor:
    """K over ``[R, G]`` from two children's DtN matrices (the Schur step's scatter-add, Alg. 4)."""
    K = c1.new_zeros(shape)
    _scatter_add_blocks(K.view(view), c1, runs1)
    _scatter_add_blocks(K.view(view), c2, runs2)
    return K


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class SchurFactor:
    """Stored factors of ``B`` grid systems; solve many right-hand sides with :meth:`solve`.

    Attributes:
        layout: the patch layout; ``symmetric``: Cholesky path (``solve_transposed == solve``).
        stats: timings (``schwarz_s``, ``merge_s``, ``top_s``) and flop counts of the factorisation.
    """

    layout: PatchLayout
    alpha: Tensor
    symmetric: bool
    steps: list[_Step]
    gid_top: Tensor
    top: tuple[Tensor, ...]
    stats: dict[str, float] = field(default_factory=dict)

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
        """Solve on padded flat ``f [B, N, C]`` (RHS elimination and back-substitution, Alg. 1)."""
        f = f.clone()
        B, _, C = f.shape

        def gather(v: Tensor, ids: Tensor) -> Tensor:  # [B, N, C] -> [B, n_sub, k, C]
            return v.index_select(1, ids.reshape(-1)).reshape(B, ids.shape[0], ids.shape[1], C)

        for st in self.steps:  # RHS elimination, bottom-up: f_R -= Y W^-1 f_G
            # (Y W^-1) of A^T, or of symmetric A, is (W^-1 Z)^T
            M = st.WinvZ.mT if transposed or st.YWinv is None else st.YWinv
            upd = M @ gather(f, st.gid_g)
            f.index_add_(1, st.gid_r.reshape(-1), upd.reshape(B, -1, C), alpha=-1)
        x = torch.zeros_like(f)
        if self.top:
            fT = f.index_select(1, self.gid_top)
            if self.symmetric:
                xT = torch.cholesky_solve(fT, self.top[0])
            else:
                xT = torch.linalg.lu_solve(self.top[0], self.top[1], fT, adjoint=transposed)
            x.index_copy_(1, self.gid_top, xT)
        for st in reversed(self.steps):  # back-substitution: x_G = W^-1 f_G - W^-1 Z x_R
            fG, xR = gather(f, st.gid_g), gather(x, st.gid_r)
            if transposed and st.YWinv is not None:
                xG = st.Winv.mT @ fG - st.YWinv.mT @ xR
            else:
                xG = st.Winv @ fG - st.WinvZ @ xR
            x.index_copy_(1, st.gid_g.reshape(-1), xG.reshape(B, -1, C))
        if not _all_finite(x):
            raise SingularOperatorError(
                "the solution is not finite: the operator is singular or badly scaled"
            )
        return x

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
    plan: EliminationPlan = elimination_plan(layout, individual_below)
    ww = layout.w * layout.w
    stats: dict[str, float] = {}
    steps: list[_Step] = []
    _sync(dev)
    t0 = time.perf_counter()
    D = torch.empty(0)
    for k, lvl in enumerate(plan.levels):
        if k == 1:
            _sync(dev)
            stats["schwarz_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
        if k == 0:  # Schwarz step: K = alpha_p in [ring, interior] order
            assert lvl.perm is not None
            flat = torch.as_tensor((lvl.perm[:, None] * ww + lvl.perm[None, :]).reshape(-1), device=dev)
            K = alpha.reshape(B, -1, ww * ww)[:, :, flat].reshape(B, -1, ww, ww)
        else:  # Schur step: scatter-add the two children's DtN matrices over [R, G]
            m0, m1 = plan.levels[k - 1].counts
            if lvl.axis == 0:  # D is a strided view of the previous K: split dims, never copy
                D6 = D.unflatten(1, (m0 // 2, 2, m1))
                c1, c2 = D6[:, :, 0], D6[:, :, 1]
            else:
                D6 = D.unflatten(1, (m0, m1 // 2, 2))
                c1, c2 = D6[:, :, :, 0], D6[:, :, :, 1]
            M = lvl.nR + lvl.nG
            K = _assemble(c1, c2, lvl.runs1, lvl.runs2, (B, lvl.n_sub, M, M), (B, *lvl.counts, M, M))
        what = "Schwarz step" if k == 0 else f"Schur step {k}"
        D, Winv, WinvZ, YWinv = _eliminate(K, lvl.nR, use_chol, what)
        del K
        steps.append(
            _Step(
                gid_r=torch.as_tensor(lvl.gid_r, device=dev),
                gid_g=torch.as_tensor(lvl.gid_g, device=dev),
                Winv=Winv,
                WinvZ=WinvZ,
                YWinv=YWinv,
            )
        )
    if plan.singles:  # the last levels, one subdomain at a time (outer-boundary elimination)
        if len(plan.levels) == 1:
            _sync(dev)
            stats["schwarz_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
        pool: list[Tensor | None] = [D[:, j] for j in range(D.shape[1])]
        for k, st in enumerate(plan.singles):
            c1, c2 = pool[st.child1], pool[st.child2]
            pool[st.child1] = pool[st.child2] = None  # children are consumed once: free them
            M = st.nR + st.nG
            if c1 is None or c2 is None:  # pragma: no cover - the plan consumes each child once
                raise RuntimeError("internal error: a subdomain was merged twice")
            K = _assemble(c1[:, None], c2[:, None], st.runs1, st.runs2, (B, 1, M, M), (B, 1, M, M))
            D, Winv, WinvZ, YWinv = _eliminate(K, st.nR, use_chol, f"Schur step {len(plan.levels) + k}")
            del K
            pool.append(D[:, 0])
            steps.append(
                _Step(
                    gid_r=torch.as_tensor(st.gid_r, device=dev),
                    gid_g=torch.as_tensor(st.gid_g, device=dev),
                    Winv=Winv,
                    WinvZ=WinvZ,
                    YWinv=YWinv,
                )
            )
        del pool
    _sync(dev)
    if len(plan.levels) == 1 and not plan.singles:
        stats["schwarz_s"] = time.perf_counter() - t0
        stats["merge_s"] = 0.0
    else:
        stats["merge_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
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
    n0, n1 = grid_shape
    layout = PatchLayout.for_grid(int(n0), int(n1), w=w)
    alpha = alpha_from_scipy(A, layout, dtype=dtype).to(torch.device(device))
    bb = np.asarray(b, dtype=np.float64)
    if bb.ndim not in (1, 2) or bb.shape[0] != n0 * n1:
        raise ValueError(f"b must have shape [{n0 * n1}] or [{n0 * n1}, C], got {list(bb.shape)}")
    rhs = torch.as_tensor(bb.reshape(1, n0, n1, -1), dtype=dtype, device=alpha.device)
    x = factorize(alpha, layout, spd=spd).solve(rhs)
    return x.reshape(n0 * n1, -1).double().cpu().numpy().reshape(bb.shape)
