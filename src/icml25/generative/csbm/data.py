"""Categorical toy data, the continuous-space SB baseline and the metrics used to check
*Categorical Schrödinger Bridge Matching* (CSBM; Ksenofontov and Korotin, ICML 2025, arXiv 2502.01416).

* :func:`quantise` / :func:`dequantise`: the official toy grid (``torch.bucketize`` on
  ``linspace(lo, hi, S-1)`` edges) and the bin centres used to decode states back to R^D.
* :func:`gaussian_to_swiss_roll`: 2-D N(0, I) source and scikit-learn's swiss roll (noise 0.8,
  coordinates 0 and 2, divided by 7.5) target, both on the ``S x S`` grid (Sec. 5.1).
* :func:`digits_pair`: two classes of scikit-learn's 8x8 digits, whose 17 intensity levels are the
  categorical states (a stand-in for the paper's coloured-MNIST pixel-level translation).
* :func:`energy_distance` (distribution distance), :func:`entropic_ot_translate` (a static,
  continuous-space SB baseline: entropic OT with squared-Euclidean cost, sampling the plan's
  conditional), :func:`sb_conditional_loglik` (mean ``log q*(y | x)`` under the exact discrete SB).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from icml25.core.validate import check_finite_array, check_positive

__all__ = [
    "quantise",
    "dequantise",
    "gaussian_to_swiss_roll",
    "digits_pair",
    "energy_distance",
    "entropic_ot_translate",
    "sb_conditional_2d",
    "sb_conditional_loglik",
    "sb_conditional_logliks",
    "energy_item_scores",
]


def quantise(x: Tensor, n_states: int, lo: float = -3.0, hi: float = 3.0) -> Tensor:
    """Bucketise real coordinates into ``n_states`` bins (edges ``linspace(lo, hi, S-1)``)."""
    check_finite_array("x", x)
    check_positive("n_states", n_states, integer=True)
    if n_states < 3 or not hi > lo:
        raise ValueError("n_states must be >= 3 and hi > lo")
    edges = torch.linspace(lo, hi, n_states - 1, dtype=torch.float64)
    return torch.bucketize(torch.as_tensor(x, dtype=torch.float64).contiguous(), edges)


def dequantise(x: Tensor, n_states: int, lo: float = -3.0, hi: float = 3.0) -> Tensor:
    """Bin centres of states from :func:`quantise` (the outer bins get a half-width centre)."""
    check_positive("n_states", n_states, integer=True)
    if n_states < 3 or not hi > lo:
        raise ValueError("n_states must be >= 3 and hi > lo")
    w = (hi - lo) / (n_states - 2)
    return lo + (torch.as_tensor(x).double() - 0.5) * w


def gaussian_to_swiss_roll(n: int, n_states: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    """``(source, target)``: ``n`` quantised 2-D Gaussian and swiss-roll points (integer ``(n, 2)``)."""
    from sklearn.datasets import make_swiss_roll

    check_positive("n", n, integer=True)
    gen = torch.Generator().manual_seed(seed)
    src = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    roll = make_swiss_roll(n, noise=0.8, random_state=seed)[0][:, [0, 2]] / 7.5
    return quantise(src, n_states), quantise(torch.from_numpy(np.ascontiguousarray(roll)), n_states)


def digits_pair(source_digit: int = 3, target_digit: int = 2) -> tuple[Tensor, Tensor]:
    """The 8x8 digits of two classes as integer ``(n, 64)`` tensors with 17 levels (0..16)."""
    from sklearn.datasets import load_digits

    if source_digit not in range(10) or target_digit not in range(10):
        raise ValueError("digits must be in 0..9")
    d = load_digits()
    x = torch.from_numpy(d.data.astype(np.int64))
    y = torch.from_numpy(d.target)
    return x[y == source_digit], x[y == target_digit]


def energy_item_scores(a: Tensor, b: Tensor) -> Tensor:
    """Per-row contributions to :func:`energy_distance`: row ``i`` of ``a`` scores
    ``2 mean_j |a_i - b_j| - mean_j |a_i - a_j| - E|B - B'|``; their mean is the energy distance, so
    two samples translated from the same inputs pair up row by row."""
    for name, x in (("a", a), ("b", b)):
        check_finite_array(name, x, ndim=2)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have the same dimension, got {a.shape[1]} and {b.shape[1]}")
    a, b = torch.as_tensor(a).double(), torch.as_tensor(b).double()
    return 2 * torch.cdist(a, b).mean(1) - torch.cdist(a, a).mean(1) - torch.cdist(b, b).mean()


def energy_distance(a: Tensor, b: Tensor) -> float:
    """Squared energy distance ``2E|A-B| - E|A-A'| - E|B-B'|`` between two samples ``(n, d)``, ``(m, d)``."""
    for name, x in (("a", a), ("b", b)):
        check_finite_array(name, x, ndim=2)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have the same dimension, got {a.shape[1]} and {b.shape[1]}")
    a, b = torch.as_tensor(a).double(), torch.as_tensor(b).double()
    return float(2 * torch.cdist(a, b).mean() - torch.cdist(a, a).mean() - torch.cdist(b, b).mean())


def entropic_ot_translate(
    source: Tensor, target_pool: Tensor, reg: float, generator: torch.Generator | None = None
) -> Tensor:
    """Static SB in R^D: entropic OT plan (cost ``|x-y|^2`` divided by its mean, regulariser ``reg``,
    POT's Sinkhorn) between ``source`` and ``target_pool``; each source row draws one pool point
    from its conditional plan."""
    import ot

    check_finite_array("source", source, ndim=2)
    check_finite_array("target_pool", target_pool, ndim=2)
    check_positive("reg", reg)
    xs, yt = torch.as_tensor(source).double(), torch.as_tensor(target_pool).double()
    cost = torch.cdist(xs, yt) ** 2
    cost = cost / cost.mean()
    plan = torch.as_tensor(
        ot.sinkhorn(
            np.full(len(xs), 1 / len(xs)),
            np.full(len(yt), 1 / len(yt)),
            cost.numpy(),
            reg,
            method="sinkhorn_log",
            numItermax=2000,
        )
    )
    plan = plan.clamp_min(0) + 1e-300
    idx = torch.multinomial(plan / plan.sum(1, keepdim=True), 1, generator=generator).squeeze(1)
    return yt[idx]


def sb_conditional_2d(
    kernel_1d: Tensor, p_start: Tensor, p_end: Tensor, *, n_iter: int = 3000, tol: float = 1e-12
) -> Tensor:
    """The exact SB conditional ``q*(x_0 | x_{N+1})`` on an ``S x S`` grid, an ``(S^2, S^2)`` matrix.

    The 2-D reference kernel is the Kronecker square of ``kernel_1d`` (``Qbar_{N+1}`` of one
    coordinate), so Sinkhorn's matrix-vector products cost ``O(S^3)``: ``K v = vec(K1 V K1^T)``.
    ``p_start``/``p_end`` are strictly positive distributions over the ``S^2`` cells (row-major).
    """
    if not isinstance(kernel_1d, Tensor) or not kernel_1d.is_floating_point() or kernel_1d.ndim != 2:
        raise TypeError("kernel_1d must be a floating-point (S, S) torch.Tensor")
    s = kernel_1d.shape[0]
    check_positive("n_iter", n_iter, integer=True)
    for name, p in (("p_start", p_start), ("p_end", p_end)):
        if not isinstance(p, Tensor) or p.shape != (s * s,):
            raise ValueError(f"{name} must be a tensor of shape ({s * s},)")
        if not torch.isfinite(p).all() or (p <= 0).any():
            raise ValueError(f"{name} must be finite and strictly positive")
    k1 = kernel_1d.double()
    a, b = p_start.double() / p_start.sum(), p_end.double() / p_end.sum()

    def kmv(v: Tensor) -> Tensor:  # (K1 ⊗ K1) v
        return (k1 @ v.reshape(s, s) @ k1.T).reshape(-1)

    def ktmv(u: Tensor) -> Tensor:  # (K1 ⊗ K1)^T u
        return (k1.T @ u.reshape(s, s) @ k1).reshape(-1)

    v = torch.ones_like(b)
    u = a / kmv(v)
    for _ in range(n_iter):
        v = b / ktmv(u)
        u = a / kmv(v)
        if float((v * ktmv(u) - b).abs().sum()) < tol:
            break
    pi = u[:, None] * torch.kron(k1, k1) * v[None, :]
    return pi / pi.sum(0, keepdim=True)


def sb_conditional_loglik(cond: Tensor, n_states: int, starts: Tensor, ends: Tensor) -> float:
    """Mean ``log q*(x_0 | x_{N+1})`` of 2-D pairs under the conditional from :func:`sb_conditional_2d`;
    ``starts`` (translations) and ``ends`` (inputs) are ``(n, 2)`` integer tensors."""
    return float(sb_conditional_logliks(cond, n_states, starts, ends).mean())


def sb_conditional_logliks(cond: Tensor, n_states: int, starts: Tensor, ends: Tensor) -> Tensor:
    """Per-pair ``log q*(x_0 | x_{N+1})`` (float64, shape ``(n,)``); see :func:`sb_conditional_loglik`."""
    s = n_states
    for name, x in (("starts", starts), ("ends", ends)):
        if not isinstance(x, Tensor) or x.ndim != 2 or x.shape[1] != 2 or x.shape[0] == 0:
            raise ValueError(f"{name} must be a non-empty (n, 2) tensor")
        if x.dtype.is_floating_point:
            raise TypeError(f"{name} must hold integer states")
    i0 = starts[:, 0].long() * s + starts[:, 1].long()
    i1 = ends[:, 0].long() * s + ends[:, 1].long()
    return cond[i0, i1].clamp_min(1e-30).log()
