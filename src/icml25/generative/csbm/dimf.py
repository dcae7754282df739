"""Exact (tabular) discrete-time Iterative Markovian Fitting and the static Schrödinger bridge for
*Categorical Schrödinger Bridge Matching* (CSBM; Ksenofontov and Korotin, ICML 2025, arXiv 2502.01416).

On a 1-D state space with ``S`` states every object of D-IMF (Sec. 3) is a small matrix:

* a coupling ``π(x_0, x_{N+1})`` (``S x S``) of the two ends;
* its reciprocal projection ``π · q_ref(x_{1:N} | x_0, x_{N+1})`` whose neighbouring-pair marginals are
  ``p_t(a, b) = Q[a, b] · (Qbar_{t-1}^T W Qbar_{N+1-t}^T)[a, b]`` with ``W = π / Qbar_{N+1}``
  (``a = x_{t-1}``, ``b = x_t``);
* the Markovian projection: the Markov chain with those pairwise marginals, run from the end
  ``x_{N+1}`` towards ``x_0`` ("forward", the translation direction) or from ``x_0`` towards ``x_{N+1}``
  ("backward"); its end coupling is the next iterate.

The SB's static coupling is the entropic OT plan with cost ``-log Qbar_{N+1}`` and ε = 1
(Sec. 2): ``π* = diag(u) Qbar_{N+1} diag(v)`` with the given marginals, found here by log-domain
Sinkhorn in float64. The paper proves the D-IMF iterates converge to ``π*`` (Theorem 3.1 and its
corollary); :func:`tabular_dimf` runs the exact iteration and reports ``KL(π* || π^l)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from icml25.core.validate import check_positive

from .process import CategoricalReference

__all__ = ["sinkhorn_coupling", "coupling_kl", "markovian_projection", "tabular_dimf", "DIMFTrace"]


def _distribution(name: str, p: Tensor, size: int | None = None) -> Tensor:
    if not isinstance(p, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(p).__name__}")
    if not p.is_floating_point():
        raise TypeError(f"{name} must be floating point, got {p.dtype}")
    if p.ndim != 1 or p.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D probability vector, got shape {tuple(p.shape)}")
    if size is not None and p.numel() != size:
        raise ValueError(f"{name} must have {size} entries, got {p.numel()}")
    if not torch.isfinite(p).all() or (p < 0).any() or float(p.sum()) <= 0:
        raise ValueError(f"{name} must be finite, non-negative and have positive mass")
    p = p.double()
    return p / p.sum()


def _coupling(name: str, pi: Tensor) -> Tensor:
    if not isinstance(pi, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(pi).__name__}")
    if not pi.is_floating_point():
        raise TypeError(f"{name} must be floating point, got {pi.dtype}")
    if pi.ndim != 2 or pi.numel() == 0 or pi.shape[0] != pi.shape[1]:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {tuple(pi.shape)}")
    if not torch.isfinite(pi).all() or (pi < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    return pi.double()


def sinkhorn_coupling(
    kernel: Tensor, p_start: Tensor, p_end: Tensor, *, n_iter: int = 20_000, tol: float = 1e-14
) -> Tensor:
    """The coupling ``diag(u) K diag(v)`` with row sums ``p_start`` and column sums ``p_end`` (float64).

    Log-domain Sinkhorn; ``kernel`` (``S0 x S1``, non-negative) is the reference's end-to-end
    transition ``Qbar_{N+1}``, i.e. entropic OT with cost ``-log K`` and ε = 1.
    """
    if not isinstance(kernel, Tensor) or not kernel.is_floating_point():
        raise TypeError("kernel must be a floating-point torch.Tensor")
    if kernel.ndim != 2 or kernel.numel() == 0:
        raise ValueError(f"kernel must be a non-empty matrix, got shape {tuple(kernel.shape)}")
    if not torch.isfinite(kernel).all() or (kernel < 0).any():
        raise ValueError("kernel must be finite and non-negative")
    check_positive("n_iter", n_iter, integer=True)
    check_positive("tol", tol)
    a = _distribution("p_start", p_start, kernel.shape[0])
    b = _distribution("p_end", p_end, kernel.shape[1])
    logk = kernel.double().clamp_min(1e-300).log()
    loga, logb = a.clamp_min(1e-300).log(), b.clamp_min(1e-300).log()
    f = torch.zeros_like(a)
    g = torch.zeros_like(b)
    for _ in range(n_iter):
        f = loga - torch.logsumexp(logk + g[None, :], dim=1)
        g = logb - torch.logsumexp(logk + f[:, None], dim=0)
        rows = torch.logsumexp(logk + f[:, None] + g[None, :], dim=1).exp()
        if float((rows - a).abs().sum()) < tol:
            break
    pi = (logk + f[:, None] + g[None, :]).exp()
    pi[a == 0] = 0.0
    pi[:, b == 0] = 0.0
    return pi / pi.sum()


def coupling_kl(p: Tensor, q: Tensor, *, eps: float = 0.0) -> float:
    """``KL(p || q)`` of two couplings (or any non-negative arrays of equal shape), normalised first."""
    if not isinstance(p, Tensor) or not isinstance(q, Tensor):
        raise TypeError("p and q must be torch.Tensors")
    if p.shape != q.shape or p.numel() == 0:
        raise ValueError(
            f"p and q must be non-empty and of the same shape, got {tuple(p.shape)}, {tuple(q.shape)}"
        )
    if not (p.is_floating_point() and q.is_floating_point()):
        raise TypeError("p and q must be floating point")
    if not (torch.isfinite(p).all() and torch.isfinite(q).all()) or (p < 0).any() or (q < 0).any():
        raise ValueError("p and q must be finite and non-negative")
    pp = p.double() / p.double().sum()
    qq = (q.double() + eps) / (q.double() + eps).sum()
    mask = pp > 0
    return float((pp[mask] * (pp[mask].log() - qq[mask].clamp_min(1e-300).log())).sum())


def _pair_marginals(ref: CategoricalReference, pi: Tensor) -> list[Tensor]:
    """``p_t(x_{t-1}, x_t)`` of the reciprocal process of ``pi``, for ``t = 1..N+1`` (index t-1)."""
    n1 = ref.N + 1
    w = pi / ref.Qbar[n1].clamp_min(1e-300)
    w[pi == 0] = 0.0
    return [ref.Q * (ref.Qbar[t - 1].T @ w @ ref.Qbar[n1 - t].T) for t in range(1, n1 + 1)]


def markovian_projection(ref: CategoricalReference, pi: Tensor, direction: str = "forward") -> Tensor:
    """End coupling of the Markovian projection of ``pi``'s reciprocal process (both marginals kept).

    ``direction="forward"`` runs the chain from ``x_{N+1}`` (marginal ``pi.sum(0)``) down to ``x_0``;
    ``"backward"`` from ``x_0`` up to ``x_{N+1}``. Both give a Markov process with the reciprocal
    process's one-step marginals; their end couplings coincide in exact arithmetic.
    """
    if not isinstance(ref, CategoricalReference):
        raise TypeError(f"ref must be a CategoricalReference, got {type(ref).__name__}")
    pi = _coupling("pi", pi)
    if pi.shape[0] != ref.S:
        raise ValueError(f"pi must be {ref.S} x {ref.S}, got {tuple(pi.shape)}")
    pi = pi / pi.sum()
    pairs = _pair_marginals(ref, pi)
    tiny = 1e-300
    if direction == "forward":
        joint = torch.diag(pi.sum(0))  # (x_{N+1}, x_t) at t = N+1
        for t in range(ref.N + 1, 0, -1):
            p = pairs[t - 1]  # (x_{t-1}, x_t)
            trans = (p / p.sum(0, keepdim=True).clamp_min(tiny)).T  # (x_t -> x_{t-1})
            joint = joint @ trans
        return joint.T  # (x_0, x_{N+1})
    if direction == "backward":
        joint = torch.diag(pi.sum(1))  # (x_0, x_t) at t = 0
        for t in range(1, ref.N + 2):
            p = pairs[t - 1]
            trans = p / p.sum(1, keepdim=True).clamp_min(tiny)  # (x_{t-1} -> x_t)
            joint = joint @ trans
        return joint
    raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")


@dataclass(frozen=True)
class DIMFTrace:
    """``kl[l] = KL(π* || π^l)`` (``l = 0`` is the initial coupling), the last coupling, ``π*``, and
    the marginal errors ``max |π^l 1 - p_start|, max |1^T π^l - p_end|`` after every iteration."""

    kl: list[float]
    coupling: Tensor
    target: Tensor
    marginal_error: list[float]


def tabular_dimf(
    ref: CategoricalReference,
    p_start: Tensor,
    p_end: Tensor,
    n_iterations: int,
    *,
    init: Tensor | None = None,
) -> DIMFTrace:
    """Exact D-IMF from ``init`` (default the independent coupling ``p_start ⊗ p_end``).

    One iteration = forward Markovian projection then backward Markovian projection (each preceded
    by the reciprocal projection), as in the paper's convergence experiment.
    """
    if not isinstance(ref, CategoricalReference):
        raise TypeError(f"ref must be a CategoricalReference, got {type(ref).__name__}")
    check_positive("n_iterations", n_iterations, integer=True)
    a = _distribution("p_start", p_start, ref.S)
    b = _distribution("p_end", p_end, ref.S)
    pi = torch.outer(a, b) if init is None else _coupling("init", init)
    if pi.shape != (ref.S, ref.S):
        raise ValueError(f"init must be {ref.S} x {ref.S}, got {tuple(pi.shape)}")
    target = sinkhorn_coupling(ref.Qbar[ref.N + 1], a, b)
    kls = [coupling_kl(target, pi)]
    merr: list[float] = []
    for _ in range(n_iterations):
        pi = markovian_projection(ref, pi, "forward")
        pi = markovian_projection(ref, pi, "backward")
        kls.append(coupling_kl(target, pi))
        merr.append(max(float((pi.sum(1) - a).abs().max()), float((pi.sum(0) - b).abs().max())))
    return DIMFTrace(kl=kls, coupling=pi, target=target, marginal_error=merr)
