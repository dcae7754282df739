"""A numerical minimax lower bound by multiple testing, for *The Empirical Mean is Minimax Optimal
for Local Glivenko-Cantelli* (Cohen, Kontorovich, Weiss; ICML 2025; https://arxiv.org/abs/2410.02835).

In the style of the paper's Fano/testing lower bounds (its exact construction is not reproduced
here). Hypotheses h_1..h_K: a block of K coordinates at level q, with coordinate k raised to
q + eps under h_k (all other coordinates 0). Any estimator whose sup-error is below eps/2
identifies k, so for every estimator

    max_k E_k sup_j |p_hat_j - h_k,j| >= (eps / 2) * P*_err(q, eps, K, n),

where P*_err is the Bayes error of identifying k under a uniform prior. The likelihood ratio is
increasing in Y_k, so the Bayes test picks the largest count (ties at random), and its success
probability is exact:

    P_correct = sum_y f1(y) * (F0(y)^K - F0(y - 1)^K) / (K f0(y)),

with f1 the Bin(n, q + eps) pmf and f0, F0 the Bin(n, q) pmf and cdf. :func:`multiple_testing_bound`
maximises (eps/2) P*_err over a grid of (q, eps, K) whose hypotheses stay inside a class
{S(h) <= s_max, T(h) <= t_max} (S and T of ``complexity``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import gammaln, xlog1py, xlogy

from icml25.core.validate import check_in_range, check_positive

__all__ = ["LowerBound", "bayes_error", "bound_hypotheses", "multiple_testing_bound", "two_level_complexity"]


@dataclass(frozen=True)
class LowerBound:
    """The best bound on the grid and the (q, eps, K) attaining it (value 0 if nothing qualified)."""

    value: float
    q: float
    eps: float
    k: int
    bayes_error: float


def _binom_pmf(n: int, p: np.ndarray) -> np.ndarray:
    """Bin(n, p) pmf at y = 0..n for every p: shape ``p.shape + (n + 1,)``."""
    y = np.arange(n + 1, dtype=np.float64)
    log_fact = gammaln(np.arange(n + 2, dtype=np.float64))
    pp = np.asarray(p, dtype=np.float64)[..., None]
    log_c = log_fact[n + 1] - log_fact[1 : n + 2] - log_fact[n + 1 : 0 : -1]
    return np.exp(log_c + xlogy(y, pp) + xlog1py(n - y, -pp))


def _success_terms(q: float, ks: np.ndarray, n: int) -> np.ndarray:
    """(len(ks), n + 1): (F0(y)^K - F0(y - 1)^K) / (K f0(y)) for Bin(n, q), written stably."""
    f0 = _binom_pmf(n, np.asarray(q))
    F0 = np.clip(np.cumsum(f0), 0.0, 1.0)
    K = ks.astype(np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(F0 > 0, np.minimum(f0 / np.where(F0 > 0, F0, 1.0), 1.0), 0.0)
        frac = -np.expm1(K * np.log1p(-ratio))  # 1 - (F0(y-1)/F0(y))^K
        term = np.where(f0 > 0, F0**K * frac / (K * np.where(f0 > 0, f0, 1.0)), F0 ** (K - 1))
    return np.nan_to_num(term, nan=0.0, posinf=0.0)


def bayes_error(q: float, eps: float, k: int, n: int) -> float:
    """Bayes error of identifying which of ``k`` Bin(n, q) coordinates is Bin(n, q + eps)."""
    check_in_range("q", q, 0.0, 1.0, low_open=True, high_open=True)
    check_in_range("eps", eps, 0.0, 1.0 - q, low_open=True)
    check_positive("k", k, integer=True)
    check_positive("n", n, integer=True)
    if k == 1:
        return 0.0
    f1 = _binom_pmf(n, np.asarray(q + eps))
    p_correct = float(f1 @ _success_terms(q, np.array([k]), n)[0])
    return float(min(1.0, max(0.0, 1.0 - p_correct)))


def two_level_complexity(q: float, eps: float, k: int) -> tuple[float, float]:
    """(S, T) of the sequence with one coordinate at q + eps and k - 1 at q (q + eps <= 1/2)."""
    top = min(q + eps, 1.0 - q - eps)
    s = max(top * math.log(2.0), q * math.log(k + 1.0) if k > 1 else 0.0)
    t = max(math.log(2.0) / math.log(1.0 / top), math.log(k + 1.0) / math.log(1.0 / q) if k > 1 else 0.0)
    return s, t


def bound_hypotheses(q: float, eps: float, k: int) -> np.ndarray:
    """The hypothesis h_1 (the others are its permutations): ``(k,)`` means."""
    check_positive("k", k, integer=True)
    h = np.full(int(k), float(q))
    h[0] = q + eps
    return h


def multiple_testing_bound(
    n: int,
    *,
    q_grid: Sequence[float],
    eps_grid: Sequence[float],
    k_grid: Sequence[int],
    s_max: float = math.inf,
    t_max: float = math.inf,
) -> LowerBound:
    """max over the grid of (eps/2) * Bayes error, over hypotheses with S <= s_max and T <= t_max.

    ``eps_grid`` holds ratios: the raise is ``eps = ratio * q`` (kept when q + eps <= 1/2).
    """
    check_positive("n", n, integer=True)
    grids: dict[str, Any] = {"q_grid": q_grid, "eps_grid": eps_grid, "k_grid": k_grid}
    for name, grid in grids.items():
        arr = np.asarray(grid, dtype=np.float64)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D sequence")
        if not np.isfinite(arr).all() or (arr <= 0).any():
            raise ValueError(f"{name} must hold finite positive values")
    best = LowerBound(0.0, math.nan, math.nan, 0, math.nan)
    ks = np.asarray(sorted({int(k) for k in k_grid if int(k) >= 2}), dtype=np.int64)
    for q in (float(x) for x in q_grid):
        if q >= 0.5 or ks.size == 0:
            continue
        eps = np.array([float(r) * q for r in eps_grid if q + float(r) * q <= 0.5])
        if eps.size == 0:
            continue
        top = np.minimum(q + eps, 1.0 - q - eps)[:, None]  # (E, 1)
        log_k1 = np.log(ks + 1.0)[None, :]  # (1, K)
        s_h = np.maximum(top * math.log(2.0), q * log_k1)
        t_h = np.maximum(math.log(2.0) / np.log(1.0 / top), log_k1 / math.log(1.0 / q))
        allowed = (s_h <= s_max) & (t_h <= t_max)  # two_level_complexity on the whole grid
        if not allowed.any():
            continue
        f1 = _binom_pmf(n, q + eps)  # (E, n + 1)
        p_err = np.clip(1.0 - f1 @ _success_terms(q, ks, n).T, 0.0, 1.0)  # (E, K)
        value = np.where(allowed, 0.5 * eps[:, None] * p_err, -1.0)
        i, j = np.unravel_index(int(np.argmax(value)), value.shape)
        if value[i, j] > best.value:
            best = LowerBound(float(value[i, j]), q, float(eps[i]), int(ks[j]), float(p_err[i, j]))
    return best
