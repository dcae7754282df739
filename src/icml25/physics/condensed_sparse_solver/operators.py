"""Grid operators and their split into per-patch matrices ``alpha`` (``A = sum_p P_p^T alpha_p P_p``).

Part of our implementation of *Schwarz–Schur Involution: Lightspeed Differentiable Sparse Linear
Solvers* (Wang et al., ICML 2025, https://openreview.net/forum?id=RKbanvzycr). Implements the
condensed tensor ``alpha`` of a sparse grid operator, the input of every step of Algorithm 1.

Two ways in:

* :class:`GridLaplacian`: a weighted graph Laplacian on the grid's 4- or 8-neighbour edges plus a
  diagonal mass term, with optional Dirichlet nodes (eliminated as identity rows whose couplings
  are lifted into the right-hand side). Built from per-edge coefficients as torch tensors, so
  ``alpha`` is differentiable in them. :func:`poisson`, :func:`darcy` and :func:`image_laplacian`
  build the three problem families of our check (P1 Poisson, P2 Darcy flow, P3 image-affinity
  Laplacian; the paper's experiments use Darcy flow and matting Laplacians).
* :func:`alpha_from_scipy`: any SciPy sparse matrix whose couplings stay inside a patch (5- and
  9-point stencils, not necessarily symmetric).

Splitting rule (the official code's "top-down" split, stated per entry): an entry ``A[u, v]`` is
divided equally among all patches that contain both nodes (1, 2 or 4), so re-assembly is exact. Edge
terms of a Laplacian (both diagonal and off-diagonal parts) go to the patches containing the edge;
mass terms to the patches containing the node. Padded nodes get a unit diagonal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from icml25.core.validate import check_positive

from .layout import PatchLayout

__all__ = [
    "GridLaplacian",
    "STENCILS",
    "poisson",
    "darcy",
    "image_laplacian",
    "gaussian_random_field",
    "alpha_from_scipy",
    "alpha_to_scipy",
    "patch_node_ids",
    "check_alpha",
]

Offset = tuple[int, int]
STENCILS: dict[str, tuple[Offset, ...]] = {
    "5pt": ((0, 1), (1, 0)),
    "9pt": ((0, 1), (1, 0), (1, 1), (1, -1)),
}


# ------------------------------------------------------------------------------ patch bookkeeping


def _common_patches(x: np.ndarray, y: np.ndarray, a: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """First patch index and count of patches (along one axis) containing both coordinates."""
    lo_c, hi_c = np.minimum(x, y), np.maximum(x, y)
    hi = np.minimum(lo_c // (w - 1), a - 1)
    lo = np.maximum(-((-(hi_c - (w - 1))) // (w - 1)), 0)
    return lo, np.maximum(hi - lo + 1, 0)


def _patch_entries(
    layout: PatchLayout,
    row: tuple[np.ndarray, np.ndarray],
    col: tuple[np.ndarray, np.ndarray],
    where: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat ``alpha`` indices of entry ``(row node, col node)`` in every patch holding the pair.

    ``where`` = (i0, j0, i1, j1): the node pair that selects the patches (default: row and col).

    Returns:
        (k, flat, count): for each returned entry the index of the input pair, its flat index into
        ``alpha[a0, a1, w*w, w*w]``, and the number of patches sharing it (0 never appears).
    """
    w, a0, a1 = layout.w, layout.a0, layout.a1
    r0, r1 = row
    c0, c1 = col
    if where is None:
        where = (r0, r1, c0, c1)
    p0, k0 = _common_patches(where[0], where[2], a0, w)
    p1, k1 = _common_patches(where[1], where[3], a1, w)
    ks, flats, counts = [], [], []
    for o0 in (0, 1):
        for o1 in (0, 1):
            ok = (o0 < k0) & (o1 < k1)
            idx = np.nonzero(ok)[0]
            q0, q1 = p0[idx] + o0, p1[idx] + o1
            lr = (r0[idx] - q0 * (w - 1)) * w + (r1[idx] - q1 * (w - 1))
            lc = (c0[idx] - q0 * (w - 1)) * w + (c1[idx] - q1 * (w - 1))
            flats.append(((q0 * a1 + q1) * (w * w) + lr) * (w * w) + lc)
            ks.append(idx)
            counts.append((k0 * k1)[idx])
    return np.concatenate(ks), np.concatenate(flats).astype(np.int64), np.concatenate(counts)


def patch_node_ids(layout: PatchLayout) -> np.ndarray:
    """Global (padded-grid) node id of every local patch node: ``[a0, a1, w*w]``."""
    w, (_, N1) = layout.w, layout.padded_shape
    P0, P1, r, c = np.meshgrid(
        np.arange(layout.a0), np.arange(layout.a1), np.arange(w), np.arange(w), indexing="ij"
    )
    ids = (P0 * (w - 1) + r) * N1 + (P1 * (w - 1) + c)
    return ids.reshape(layout.a0, layout.a1, w * w).astype(np.int64)


def _padding_alpha(layout: PatchLayout) -> np.ndarray:
    """Flat indices/values that put a unit diagonal on every padded node: returns ``[n, 2]``."""
    N0, N1 = layout.padded_shape
    I, J = np.meshgrid(np.arange(N0), np.arange(N1), indexing="ij")
    pad = (layout.n0 <= I) | (layout.n1 <= J)
    i, j = I[pad], J[pad]
    _, flat, count = _patch_entries(layout, (i, j), (i, j))
    return np.stack([flat.astype(np.float64), 1.0 / count], axis=1)


def check_alpha(alpha: Tensor, layout: PatchLayout) -> None:
    """Validate ``alpha``'s shape ``[B, a0, a1, w*w, w*w]`` and finiteness."""
    if not isinstance(alpha, Tensor):
        raise ValueError(f"alpha must be a torch.Tensor, got {type(alpha).__name__}")
    ww = layout.w * layout.w
    want = (layout.a0, layout.a1, ww, ww)
    if alpha.ndim != 5 or tuple(alpha.shape[1:]) != want:
        raise ValueError(f"alpha must have shape [B, {', '.join(map(str, want))}], got {list(alpha.shape)}")
    if alpha.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"alpha must be float32 or float64, got {alpha.dtype}")
    if not bool(torch.isfinite(alpha.sum())) and not bool(torch.isfinite(alpha).all()):
        raise ValueError("alpha contains NaN or infinite entries (check the coefficients)")


# ------------------------------------------------------------------------------ scipy in and out


def alpha_from_scipy(
    A: sp.spmatrix | sp.sparray,
    layout: PatchLayout,
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> Tensor:
    """Split a sparse matrix on the grid ``layout.grid_shape`` (row-major node order) into patches.

    Args:
        A: ``[n0*n1, n0*n1]`` sparse matrix; every nonzero must couple nodes of a common patch.
        layout: the patch layout (padding allowed: padded nodes become identity rows).

    Returns:
        alpha: ``[1, a0, a1, w*w, w*w]``.

    Raises:
        ValueError: non-square matrix, size not ``n0*n1``, non-finite values, or a coupling that
            spans more than one patch (not a local grid stencil).
    """
    if not sp.issparse(A):
        raise ValueError(f"A must be a scipy sparse matrix, got {type(A).__name__}")
    n0, n1 = layout.grid_shape
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    if A.shape[0] != n0 * n1:
        raise ValueError(f"A has {A.shape[0]} rows but the grid {n0}x{n1} has {n0 * n1} nodes")
    coo = sp.coo_matrix(A)
    coo.sum_duplicates()
    if np.iscomplexobj(coo.data):
        raise ValueError("A is complex; only real matrices are supported")
    if not np.all(np.isfinite(coo.data)):
        raise ValueError("A contains NaN or infinite entries")
    N1 = layout.padded_shape[1]
    ri, rj = np.divmod(coo.row.astype(np.int64), n1)
    ci, cj = np.divmod(coo.col.astype(np.int64), n1)
    k, flat, count = _patch_entries(layout, (ri, rj), (ci, cj))
    covered = np.bincount(k, minlength=coo.nnz) > 0
    if not covered.all():
        bad = int(np.nonzero(~covered)[0][0])
        raise ValueError(
            f"A is not a local grid operator for patches of width {layout.w}: entry "
            f"({coo.row[bad]}, {coo.col[bad]}) couples grid nodes ({ri[bad]}, {rj[bad]}) and "
            f"({ci[bad]}, {cj[bad]}), which share no patch"
        )
    ww = layout.w * layout.w
    size = layout.n_patches * ww * ww
    vals = np.bincount(flat, weights=coo.data[k] / count, minlength=size)
    if layout.is_padded:
        pad = _padding_alpha(layout)
        vals += np.bincount(pad[:, 0].astype(np.int64), weights=pad[:, 1], minlength=size)
    del N1
    out = torch.as_tensor(vals, dtype=dtype, device=device)
    return out.reshape(1, layout.a0, layout.a1, ww, ww)


def alpha_to_scipy(alpha: Tensor, layout: PatchLayout, index: int = 0, crop: bool = True) -> sp.csr_matrix:
    """Re-assemble ``A = sum_p P_p^T alpha_p P_p`` ("bottom-up") for batch entry ``index``.

    With ``crop`` the padded nodes are dropped, giving the ``[n0*n1, n0*n1]`` matrix on the user's grid.
    """
    check_alpha(alpha, layout)
    ids = patch_node_ids(layout)
    ww = layout.w * layout.w
    rows = np.broadcast_to(ids[..., :, None], ids.shape + (ww,)).ravel()
    cols = np.broadcast_to(ids[..., None, :], ids.shape + (ww,)).ravel()
    vals = alpha[index].detach().cpu().double().numpy().ravel()
    N0, N1 = layout.padded_shape
    A = sp.coo_matrix((vals, (rows, cols)), shape=(N0 * N1, N0 * N1)).tocsr()
    A.eliminate_zeros()
    if not crop:
        return A
    I, J = np.meshgrid(np.arange(layout.n0), np.arange(layout.n1), indexing="ij")
    keep = (I * N1 + J).ravel()
    return A[keep][:, keep].tocsr()


# ------------------------------------------------------------------------------ Laplacians


@dataclass(frozen=True)
class GridLaplacian:
    """``A = sum_e c_e (e_u - e_v)(e_u - e_v)^T + diag(mass)`` on a grid, with Dirichlet nodes.

    Attributes:
        weights: per stencil offset ``(d0, d1)`` a tensor ``[B, n0 - d0, n1 - |d1|]`` of edge
            coefficients; entry ``[b, i, j']`` is the edge between ``(i, j)`` and
            ``(i + d0, j + d1)`` with ``j = j' + max(0, -d1)``. Offsets: ``(0,1), (1,0)``
            (5-point) and optionally ``(1,1), (1,-1)`` (9-point).
        mass: ``[B, n0, n1]`` diagonal term (``lambda * M``).
        dirichlet: ``[n0, n1]`` bool mask of nodes with prescribed values, or None (pure natural
            boundary, i.e. Neumann). A Dirichlet node becomes an identity row; its edges lift the
            prescribed value into the neighbours' right-hand side (:meth:`dirichlet_lift`).

    Raises:
        ValueError: bad shapes, NaN/inf/negative coefficients, or a singular operator: a connected
            component (through positive edges) with neither mass nor a Dirichlet node (a pure
            Neumann Laplacian needs a mass term or a fixed node).
    """

    weights: Mapping[Offset, Tensor]
    mass: Tensor
    dirichlet: Tensor | None = None
    _checked: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.mass, Tensor) or self.mass.ndim != 3:
            shape = list(self.mass.shape) if isinstance(self.mass, Tensor) else type(self.mass).__name__
            raise ValueError(f"mass must be a tensor [B, n0, n1], got {shape}")
        B, n0, n1 = self.mass.shape
        if n0 < 2 or n1 < 2:
            raise ValueError(f"grid must be at least 2x2, got {n0}x{n1}")
        if not self.weights:
            raise ValueError("weights must hold at least one stencil offset")
        for off, c in self.weights.items():
            if off not in STENCILS["9pt"]:
                raise ValueError(f"stencil offset {off} not supported; use {STENCILS['9pt']}")
            want = (B, n0 - off[0], n1 - abs(off[1]))
            if not isinstance(c, Tensor) or tuple(c.shape) != want:
                got = list(c.shape) if isinstance(c, Tensor) else type(c).__name__
                raise ValueError(f"weights[{off}] must have shape {list(want)}, got {got}")
        for name, t in [("mass", self.mass), *[(f"weights[{o}]", c) for o, c in self.weights.items()]]:
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"{name} contains NaN or infinite values")
            if bool((t < 0).any()):
                raise ValueError(f"{name} must be non-negative (an SPD Laplacian), got min {float(t.min())}")
        if self.dirichlet is not None:
            d = self.dirichlet
            if not isinstance(d, Tensor) or d.dtype != torch.bool or tuple(d.shape) != (n0, n1):
                raise ValueError(f"dirichlet must be a bool tensor [{n0}, {n1}] or None")
        self._check_nonsingular()

    @property
    def grid_shape(self) -> tuple[int, int]:
        return (int(self.mass.shape[1]), int(self.mass.shape[2]))

    @property
    def batch(self) -> int:
        return int(self.mass.shape[0])

    def _edges(self, off: Offset) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Node coordinates (i, j) -> (i2, j2) of the edges of ``off``, in the weights' order."""
        n0, n1 = self.grid_shape
        d0, d1 = off
        I, J = np.meshgrid(np.arange(n0 - d0), np.arange(n1 - abs(d1)), indexing="ij")
        J = J + max(0, -d1)
        return I.ravel(), J.ravel(), I.ravel() + d0, J.ravel() + d1

    def _check_nonsingular(self) -> None:
        from scipy.sparse.csgraph import connected_components

        n0, n1 = self.grid_shape
        n = n0 * n1
        fixed = np.zeros(n, dtype=bool)
        if self.dirichlet is not None:
            fixed |= self.dirichlet.detach().cpu().numpy().ravel()
        for b in range(self.batch):
            rows, cols = [], []
            for off, c in self.weights.items():
                i, j, i2, j2 = self._edges(off)
                on = c[b].detach().cpu().numpy().ravel() > 0
                rows.append((i * n1 + j)[on])
                cols.append((i2 * n1 + j2)[on])
            r, cc = np.concatenate(rows), np.concatenate(cols)
            graph = sp.coo_matrix((np.ones(r.size), (r, cc)), shape=(n, n))
            ncomp, label = connected_components(graph, directed=False)
            anchored = np.zeros(ncomp, dtype=bool)
            has = fixed | (self.mass[b].detach().cpu().numpy().ravel() > 0)
            anchored[label[has]] = True
            if not anchored.all():
                raise ValueError(
                    f"operator {b} is singular: {int((~anchored).sum())} connected component(s) have "
                    "neither a mass term nor a Dirichlet node (a pure Neumann Laplacian needs mass > 0 "
                    "or a fixed node)"
                )

    def alpha(self, layout: PatchLayout) -> Tensor:
        """Per-patch matrices ``[B, a0, a1, w*w, w*w]``, differentiable in weights and mass."""
        if layout.grid_shape != self.grid_shape:
            raise ValueError(f"layout grid {layout.grid_shape} != operator grid {self.grid_shape}")
        src, dst, coef = _laplacian_map(self, layout)
        theta = torch.cat(
            [self.weights[o].reshape(self.batch, -1) for o in sorted(self.weights)]
            + [self.mass.reshape(self.batch, -1)],
            dim=1,
        )
        dtype, device = self.mass.dtype, self.mass.device
        ww = layout.w * layout.w
        size = layout.n_patches * ww * ww
        src_t = torch.as_tensor(src, device=device)
        dst_t = torch.as_tensor(dst, device=device)
        coef_t = torch.as_tensor(coef, dtype=dtype, device=device)
        out = torch.zeros(self.batch, size, dtype=dtype, device=device)
        out = out.index_add(1, dst_t, theta[:, src_t] * coef_t)
        const = _constant_diagonal(self, layout)  # identity rows: Dirichlet and padded nodes
        if const.size:
            cdst = torch.as_tensor(const[:, 0].astype(np.int64), device=device)
            cval = torch.as_tensor(const[:, 1], dtype=dtype, device=device)
            out = out.index_add(1, cdst, cval.expand(self.batch, -1))
        return out.reshape(self.batch, layout.a0, layout.a1, ww, ww)

    def to_scipy(self, index: int = 0) -> sp.csr_matrix:
        """The assembled ``[n0*n1, n0*n1]`` matrix, built directly (an independent reference)."""
        n0, n1 = self.grid_shape
        n = n0 * n1
        fixed = self._fixed()
        rows, cols, vals = [], [], []
        for off, c in self.weights.items():
            i, j, i2, j2 = self._edges(off)
            u, v = i * n1 + j, i2 * n1 + j2
            cv = c[index].detach().cpu().double().numpy().ravel()
            fu, fv = ~fixed[u], ~fixed[v]
            both = fu & fv
            rows += [u[fu], v[fv], u[both], v[both]]
            cols += [u[fu], v[fv], v[both], u[both]]
            vals += [cv[fu], cv[fv], -cv[both], -cv[both]]
        m = self.mass[index].detach().cpu().double().numpy().ravel()
        m = np.where(fixed, 1.0, m)
        rows.append(np.arange(n))
        cols.append(np.arange(n))
        vals.append(m)
        A = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
        return A.tocsr()

    def _fixed(self) -> np.ndarray:
        n0, n1 = self.grid_shape
        if self.dirichlet is None:
            return np.zeros(n0 * n1, dtype=bool)
        return self.dirichlet.detach().cpu().numpy().ravel().astype(bool)

    def dirichlet_lift(self, f: Tensor, g: Tensor) -> Tensor:
        """Right-hand side for source ``f`` and Dirichlet values ``g`` (both ``[B, n0, n1]`` or with a
        trailing column axis): ``b_u = g_u`` on Dirichlet nodes, ``b_v = f_v + sum c_e g_u`` next to them.
        """
        if f.shape != g.shape or tuple(f.shape[1:3]) != self.grid_shape:
            raise ValueError(f"f and g must both be [B, {self.grid_shape[0]}, {self.grid_shape[1]}(, C)]")
        if self.dirichlet is None:
            return f
        n0, n1 = self.grid_shape
        mask = self.dirichlet
        extra = f.ndim - 3
        fixed_b = mask.reshape((1, n0, n1) + (1,) * extra)
        b = torch.where(fixed_b, g, f)
        for off, c in self.weights.items():
            d0, d1 = off
            j0 = max(0, -d1)
            cc = c.reshape(c.shape + (1,) * extra)
            su = (slice(None), slice(0, n0 - d0), slice(j0, j0 + n1 - abs(d1)))
            sv = (slice(None), slice(d0, n0), slice(j0 + d1, j0 + d1 + n1 - abs(d1)))
            fu, fv = fixed_b[su], fixed_b[sv]
            add_v = torch.where(fu & ~fv, cc * g[su], torch.zeros_like(cc * g[su]))
            add_u = torch.where(fv & ~fu, cc * g[sv], torch.zeros_like(cc * g[sv]))
            b_new = b.clone()
            b_new[sv] = b_new[sv] + add_v
            b_new[su] = b_new[su] + add_u
            b = b_new
        return b


def _laplacian_map(op: GridLaplacian, layout: PatchLayout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source index into theta, flat alpha index, coefficient) for every term of the operator."""
    n1 = op.grid_shape[1]
    fixed = op._fixed()
    srcs, dsts, coefs = [], [], []
    start = 0
    for off in sorted(op.weights):
        i, j, i2, j2 = op._edges(off)
        u, v = i * n1 + j, i2 * n1 + j2
        fu, fv = ~fixed[u], ~fixed[v]
        e = np.arange(i.size)
        # (row node, col node, sign, keep): c (e_u - e_v)(e_u - e_v)^T, Dirichlet rows/cols removed
        for (ra, rb), (ca, cb), sign, keep in (
            ((i, j), (i, j), 1.0, fu),
            ((i2, j2), (i2, j2), 1.0, fv),
            ((i, j), (i2, j2), -1.0, fu & fv),
            ((i2, j2), (i, j), -1.0, fu & fv),
        ):
            sel = np.nonzero(keep)[0]
            k, flat, count = _patch_entries(
                layout, (ra[sel], rb[sel]), (ca[sel], cb[sel]), where=(i[sel], j[sel], i2[sel], j2[sel])
            )
            srcs.append(start + e[sel][k])
            dsts.append(flat)
            coefs.append(sign / count)
        start += i.size
    sel = np.nonzero(~fixed)[0]
    si, sj = np.divmod(sel, n1)
    k, flat, count = _patch_entries(layout, (si, sj), (si, sj))
    srcs.append(start + sel[k])
    dsts.append(flat)
    coefs.append(1.0 / count)
    return np.concatenate(srcs), np.concatenate(dsts), np.concatenate(coefs)


def _constant_diagonal(op: GridLaplacian, layout: PatchLayout) -> np.ndarray:
    """Unit diagonal of Dirichlet and padded nodes as ``[n, 2]`` (flat index, value)."""
    parts = [_padding_alpha(layout)] if layout.is_padded else []
    fixed = op._fixed()
    if fixed.any():
        i, j = np.divmod(np.nonzero(fixed)[0], op.grid_shape[1])
        _, flat, count = _patch_entries(layout, (i, j), (i, j))
        parts.append(np.stack([flat.astype(np.float64), 1.0 / count], axis=1))
    return np.concatenate(parts) if parts else np.zeros((0, 2))


# ------------------------------------------------------------------------------ problem families


def _stencil(stencil: str) -> tuple[Offset, ...]:
    if stencil not in STENCILS:
        raise ValueError(f"stencil must be one of {sorted(STENCILS)}, got {stencil!r}")
    return STENCILS[stencil]


def _check_grid(n0: int, n1: int, batch: int) -> None:
    check_positive("n0", n0, integer=True)
    check_positive("n1", n1, integer=True)
    check_positive("batch", batch, integer=True)


def _boundary_mask(n0: int, n1: int, boundary: str, device: torch.device | str | None) -> Tensor | None:
    if boundary == "neumann":
        return None
    if boundary == "dirichlet":
        m = torch.zeros(n0, n1, dtype=torch.bool, device=device)
        m[0, :] = m[-1, :] = m[:, 0] = m[:, -1] = True
        return m
    raise ValueError(f"boundary must be 'neumann' or 'dirichlet', got {boundary!r}")


def poisson(
    n0: int,
    n1: int,
    *,
    mass: float = 1e-2,
    stencil: str = "5pt",
    boundary: str = "neumann",
    batch: int = 1,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> GridLaplacian:
    """P1: unit-weight grid Laplacian (5- or 9-point) plus ``mass * I``.

    The 9-point stencil gives diagonal edges weight 1/2 (a standard isotropic choice).
    """
    _check_grid(n0, n1, batch)
    offs = _stencil(stencil)
    weights = {
        o: torch.full((batch, n0 - o[0], n1 - abs(o[1])), 1.0 if 0 in o else 0.5, dtype=dtype, device=device)
        for o in offs
    }
    m = torch.full((batch, n0, n1), float(mass), dtype=dtype, device=device)
    return GridLaplacian(weights, m, _boundary_mask(n0, n1, boundary, device))


def darcy(
    kappa: Tensor,
    *,
    mass: float = 1e-2,
    boundary: str = "neumann",
) -> GridLaplacian:
    """P2: ``-div(kappa grad u) + mass u`` by 5-point finite differences (unit spacing).

    Args:
        kappa: ``[B, n0, n1]`` positive node permeabilities; the edge coefficient is the
            arithmetic mean of its two end nodes (differentiable in ``kappa``).
    """
    if not isinstance(kappa, Tensor) or kappa.ndim != 3:
        raise ValueError("kappa must be a tensor [B, n0, n1]")
    if not bool(torch.isfinite(kappa).all()) or bool((kappa <= 0).any()):
        raise ValueError("kappa must be finite and positive")
    n0, n1 = kappa.shape[1:]
    weights = {
        (0, 1): 0.5 * (kappa[:, :, 1:] + kappa[:, :, :-1]),
        (1, 0): 0.5 * (kappa[:, 1:, :] + kappa[:, :-1, :]),
    }
    m = torch.full_like(kappa, float(mass))
    return GridLaplacian(weights, m, _boundary_mask(n0, n1, boundary, kappa.device))


def image_laplacian(
    image: Tensor,
    *,
    sigma: float = 0.1,
    mass: float = 1e-2,
    stencil: str = "9pt",
    boundary: str = "neumann",
) -> GridLaplacian:
    """P3: affinity Laplacian ``w_ij = exp(-|I_i - I_j|^2 / sigma^2)`` on 8 (or 4) neighbours + ``mass I``.

    Args:
        image: ``[B, n0, n1]`` grey values (differentiable).
    """
    if not isinstance(image, Tensor) or image.ndim != 3:
        raise ValueError("image must be a tensor [B, n0, n1]")
    if sigma <= 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    n0, n1 = image.shape[1:]
    weights = {}
    for d0, d1 in _stencil(stencil):
        j0 = max(0, -d1)
        u = image[:, 0 : n0 - d0, j0 : j0 + n1 - abs(d1)]
        v = image[:, d0:n0, j0 + d1 : j0 + d1 + n1 - abs(d1)]
        weights[(d0, d1)] = torch.exp(-((u - v) ** 2) / sigma**2)
    m = torch.full_like(image, float(mass))
    return GridLaplacian(weights, m, _boundary_mask(n0, n1, boundary, image.device))


def gaussian_random_field(
    n0: int,
    n1: int,
    *,
    batch: int = 1,
    length_scale: float = 8.0,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
) -> Tensor:
    """Smooth zero-mean unit-variance field ``[B, n0, n1]`` by FFT filtering of white noise."""
    _check_grid(n0, n1, batch)
    if n0 * n1 < 2:
        raise ValueError(f"n0 * n1 must be at least 2 to normalise the field, got {n0} x {n1}")
    check_positive("length_scale", length_scale)
    noise = torch.randn(batch, n0, n1, generator=generator, dtype=torch.float64)
    k0 = torch.fft.fftfreq(n0, dtype=torch.float64)[:, None]
    k1 = torch.fft.fftfreq(n1, dtype=torch.float64)[None, :]
    filt = torch.exp(-0.5 * (2 * math.pi * length_scale) ** 2 * (k0**2 + k1**2))
    field_ = torch.fft.ifft2(torch.fft.fft2(noise) * filt).real
    field_ = (field_ - field_.mean(dim=(1, 2), keepdim=True)) / field_.std(dim=(1, 2), keepdim=True)
    return field_.to(dtype)
