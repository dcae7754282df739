"""Sup-norm risk of mean estimators, exact and by Monte Carlo, for *The Empirical Mean is Minimax
Optimal for Local Glivenko-Cantelli* (Cohen, Kontorovich, Weiss; ICML 2025;
https://arxiv.org/abs/2410.02835).

The risk of an estimator p_hat at the measure with means p after n draws is

    Delta_n(p_hat, p) = E sup_j |p_hat_j - p_j|,     and over a family F:  sup_{p in F} Delta_n.

Exact risk of a coordinatewise estimator (p_hat_j = g(Y_j)): coordinates are independent, so
P(sup_j |g(Y_j) - p_j| <= t) = prod_j F_j(t) with F_j(t) = P(|g(Y_j) - p_j| <= t), a step function
of t that jumps at the errors |g(k) - p_j|, k = 0..n. :func:`exact_sup_risk` sweeps all jumps in
increasing order, keeps log prod_j F_j up to date, and integrates E sup = int_0^1 (1 - F(t)) dt
exactly between jumps. Counts whose binomial tail is below ``tol`` (a Bernstein bound and the
bound P(Y >= k) <= (np)^k / k!) are left out, which moves the result by at most about
D * tol; coordinates with equal means are handled once, weighted by their multiplicity.

Monte Carlo (:func:`sup_errors`, :func:`sup_risk`) draws the counts directly, evaluates several
estimators on the same draws, and reports the mean with a percentile-bootstrap interval (the
error of a maximum is skewed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import gammaln

from icml25.core.validate import check_in_range, check_positive

from .estimators import Estimator
from .sequences import check_means

__all__ = [
    "RiskEstimate",
    "WorstCase",
    "bootstrap_mean_ci",
    "exact_sup_risk",
    "sup_error",
    "sup_errors",
    "sup_risk",
    "worst_case_risk",
]


@dataclass(frozen=True)
class RiskEstimate:
    """A Monte Carlo risk: ``mean`` with a bootstrap interval ``[ci_low, ci_high]`` over ``reps``."""

    mean: float
    ci_low: float
    ci_high: float
    reps: int


@dataclass(frozen=True)
class WorstCase:
    """Worst-case risk over a family: the risk, the member attaining it, every member's risk."""

    risk: float
    member: int
    per_member: tuple[float, ...]


def sup_error(p_hat: Any, p: Any) -> float:
    """sup_j |p_hat_j - p_j| for two ``(D,)`` vectors."""
    a, b = check_means(p_hat, "p_hat"), check_means(p)
    if a.shape != b.shape:
        raise ValueError(f"p_hat has shape {a.shape} but p has shape {b.shape}")
    return float(np.abs(a - b).max())


def _check_estimator(estimator: Any, name: str = "estimator") -> None:
    if not isinstance(estimator, Estimator):
        raise TypeError(f"{name} must be an Estimator, got {type(estimator).__name__}")


def sup_errors(
    estimators: Sequence[Estimator],
    p: Any,
    n: int,
    *,
    reps: int = 50,
    rng: np.random.Generator | int | None = None,
    dims: Sequence[int] | None = None,
) -> np.ndarray:
    """Sup-norm errors of several estimators on the same ``reps`` draws of the counts.

    Args:
        estimators: the estimators compared (each sees the same counts).
        p: ``(D,)`` means.
        n: number of draws, >= 1.
        reps: Monte Carlo repetitions, >= 1.
        rng: a generator or a seed.
        dims: optional truncation dimensions d <= D: every estimator is also run on the prefix
            ``p[:d]`` of the same draw (nested truncations of one infinite sample).

    Returns:
        ``(len(estimators), len(dims), reps)`` errors (``dims`` defaults to ``(D,)``).
    """
    means = check_means(p)
    check_positive("n", n, integer=True)
    check_positive("reps", reps, integer=True)
    if len(estimators) == 0:
        raise ValueError("estimators is empty")
    for est in estimators:
        _check_estimator(est, "estimators[i]")
    sizes = [means.size] if dims is None else [int(d) for d in dims]
    if not sizes or any(d < 1 or d > means.size for d in sizes):
        raise ValueError(f"dims must be in [1, D={means.size}], got {dims}")
    gen = np.random.default_rng(rng)
    out = np.empty((len(estimators), len(sizes), reps))
    for r in range(reps):
        Y = gen.binomial(int(n), means)
        for di, d in enumerate(sizes):
            for ei, est in enumerate(estimators):
                out[ei, di, r] = np.abs(est.estimate(Y[:d], int(n)) - means[:d]).max()
    return out


def bootstrap_mean_ci(
    values: Any, *, level: float = 0.95, n_boot: int = 500, rng: np.random.Generator | int | None = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of ``values`` (1-D, finite)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("values contains NaN or infinite values")
    check_in_range("level", level, 0.0, 1.0, low_open=True, high_open=True)
    check_positive("n_boot", n_boot, integer=True)
    gen = np.random.default_rng(rng)
    means = x[gen.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def sup_risk(
    estimator: Estimator, p: Any, n: int, *, reps: int = 50, rng: np.random.Generator | int | None = 0
) -> RiskEstimate:
    """Monte Carlo estimate of E sup_j |p_hat_j - p_j| with a 95 % bootstrap interval."""
    _check_estimator(estimator)
    errs = sup_errors([estimator], p, n, reps=reps, rng=rng)[0, 0]
    lo, hi = bootstrap_mean_ci(errs, rng=0)
    return RiskEstimate(float(errs.mean()), lo, hi, int(reps))


def _count_windows(p: np.ndarray, n: int, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Per mean, the count range [lo, hi] outside which the binomial mass is below ~tol."""
    lam = n * p
    var = lam * (1.0 - p)
    L = math.log(2.0 / tol)
    x = L / 3.0 + np.sqrt(L * L / 9.0 + 2.0 * var * L)  # Bernstein, both tails
    hi = np.minimum(n, np.ceil(lam + x))
    lo = np.maximum(0, np.floor(lam - x))

    def poisson_hi(rate: np.ndarray) -> np.ndarray:
        # smallest k with rate^(k+1)/(k+1)! <= tol, which bounds P(Y >= k + 1); capped at 200
        out = np.full(rate.shape, np.inf)
        small = rate < 20.0
        log_rate = np.log(np.maximum(rate[small], 1e-300))
        log_tol = math.log(tol)
        found = np.full(log_rate.shape, np.inf)
        for k in range(0, 200):
            term = (k + 1) * log_rate - gammaln(k + 2.0)
            found = np.where(np.isinf(found) & (term <= log_tol), k, found)
            if np.isfinite(found).all():
                break
        out[small] = found
        return out

    hi = np.minimum(hi, poisson_hi(lam))
    lo = np.maximum(lo, n - poisson_hi(n * (1.0 - p)))
    return lo.astype(np.int64), hi.astype(np.int64)


def _jump_events(
    values: np.ndarray, mult: np.ndarray, lo: np.ndarray, hi: np.ndarray, g: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For distinct means ``values`` with count windows [lo, hi]: every jump of every F_j, as
    (error, change of log prod_j F_j, whether it is the coordinate's first jump), flattened."""
    width = int((hi - lo).max()) + 1
    k = lo[:, None] + np.arange(width)[None, :]  # (U, W): each distinct mean's count window
    valid = k <= hi[:, None]
    k = np.minimum(k, n)
    pj = values[:, None]
    log_fact = gammaln(np.arange(n + 2, dtype=np.float64))  # log k! = log_fact[k + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p, log_q = np.log(pj), np.log1p(-pj)
        log_pmf = log_fact[n + 1] - log_fact[k + 1] - log_fact[n - k + 1]
        log_pmf = log_pmf + np.where(k > 0, k * log_p, 0.0) + np.where(k < n, (n - k) * log_q, 0.0)
    pmf = np.where(valid, np.exp(log_pmf), 0.0)
    # binomial mass below / above each count inside the window (the rest is below tol)
    below_k = np.cumsum(pmf, axis=1) - pmf
    above_k = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1] - pmf
    err = np.where(valid, np.abs(g[k] - pj), np.inf)
    # F_j(err) = P(a <= Y_j <= b), {a..b} = the counts whose error is <= err (g is monotone)
    slack = 1e-12
    a = np.searchsorted(g, (pj - err - slack).ravel(), side="left").reshape(k.shape)
    b = np.searchsorted(g, (pj + err + slack).ravel(), side="right").reshape(k.shape) - 1
    rows = np.arange(values.size)[:, None]
    ia = np.clip(a - lo[:, None], 0, width - 1)
    ib = np.clip(b - lo[:, None], 0, width - 1)
    outside = np.where(a > lo[:, None], below_k[rows, ia], 0.0)
    outside = outside + np.where(b < hi[:, None], above_k[rows, ib], 0.0)
    outside = np.clip(np.where(valid, outside, 0.0), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        log_new = np.maximum(np.log1p(-outside), -745.0)
    # per coordinate, in order of the error: the change of log F_j at each jump
    order = np.argsort(err, axis=1, kind="stable")
    err = np.take_along_axis(err, order, axis=1)
    log_new = np.take_along_axis(log_new, order, axis=1)
    log_old = np.zeros_like(log_new)
    log_old[:, 1:] = log_new[:, :-1]
    first = np.zeros(k.shape, dtype=bool)
    first[:, 0] = True  # the first jump of a coordinate takes F_j from 0; counted by ``first``
    dlog = mult[:, None] * (log_new - log_old)
    keep = np.isfinite(err)
    return err[keep], dlog[keep], first[keep]


def exact_sup_risk(estimator: Estimator, p: Any, n: int, *, tol: float = 1e-15) -> float:
    """E sup_j |g(Y_j) - p_j| exactly (up to tail mass ``tol``) for a coordinatewise estimator.

    Args:
        estimator: an estimator with ``coordinatewise = True`` (EME, add-beta, thresholded).
        p: ``(D,)`` means.
        n: number of draws, >= 1.
        tol: binomial tail mass left out per coordinate, in (0, 1e-6].

    Returns:
        The risk as a float.
    """
    _check_estimator(estimator)
    if not estimator.coordinatewise:
        raise TypeError(f"exact_sup_risk needs a coordinatewise estimator, got {type(estimator).__name__}")
    means = check_means(p)
    check_positive("n", n, integer=True)
    check_in_range("tol", tol, 0.0, 1e-6, low_open=True)
    n = int(n)
    g = estimator.count_map(n)
    if (np.diff(g) < 0).any():
        raise ValueError("exact_sup_risk needs a count map g(k) that is non-decreasing in k")
    values, mult = np.unique(means, return_counts=True)
    lo, hi = _count_windows(values, n, tol)
    widths = hi - lo + 1
    # windows of similar width are processed together (padding costs at most a factor 2)
    bucket = np.ceil(np.log2(widths)).astype(np.int64)
    parts = [
        _jump_events(values[sel], mult[sel], lo[sel], hi[sel], g, n)
        for sel in (bucket == b for b in np.unique(bucket))
    ]
    err = np.concatenate([part[0] for part in parts])
    dlog = np.concatenate([part[1] for part in parts])
    first = np.concatenate([part[2] for part in parts])
    # all coordinates together, in order of the error
    order = np.argsort(err, kind="stable")
    err, dlog, first = err[order], dlog[order], first[order]
    log_F = np.cumsum(dlog)
    started = np.cumsum(first)
    F = np.where(started == values.size, np.exp(np.minimum(log_F, 0.0)), 0.0)
    # E sup = int_0^inf P(sup > t) dt; P(sup > t) = 1 - F_i between jumps i and i+1
    risk = err[0] + float(np.sum(np.diff(err) * (1.0 - F[:-1])))
    risk += (1.0 - F[-1]) * max(0.0, 1.0 - err[-1])  # left-out tail mass, at most error 1
    return float(risk)


def worst_case_risk(
    estimator: Estimator,
    family: Sequence[Any],
    n: int,
    *,
    reps: int = 50,
    rng: np.random.Generator | int | None = 0,
    exact: bool | None = None,
) -> WorstCase:
    """max over the family's members of the estimator's risk (exact when ``exact``, default:
    whenever the estimator is coordinatewise; Monte Carlo means otherwise)."""
    _check_estimator(estimator)
    if len(family) == 0:
        raise ValueError("family is empty")
    use_exact = estimator.coordinatewise if exact is None else bool(exact)
    gen = np.random.default_rng(rng)
    risks = []
    for member in family:
        if use_exact:
            risks.append(exact_sup_risk(estimator, member, n))
        else:
            risks.append(float(sup_errors([estimator], member, n, reps=reps, rng=gen)[0, 0].mean()))
    idx = int(np.argmax(risks))
    return WorstCase(risks[idx], idx, tuple(risks))
