"""Finite games: expected payoffs, NashConv (exploitability) and exact equilibrium solvers.

ECON (Xie et al., ICML 2025, arXiv 2506.08292, Sec. 3-4) casts multi-LLM reasoning as a Bayesian game whose
players are the executors, whose types are the questions they observe and whose actions are
decoding strategies; a Bayesian Nash equilibrium (BNE) is a profile in which every player's
strategy is a best response, for every type, to the others'. Here:

* :func:`nash_conv` - ``sum_i [max_a u_i(a, sigma_-i) - u_i(sigma)]`` for a mixed profile of an
  N-player normal-form game (zero exactly at a Nash equilibrium), the exploitability measure of
  Lanctot et al. (2017);
* :func:`bayesian_nash_conv` - its type-averaged version for a Bayesian game in which every
  player observes the common type (the question), where best responses decompose per type;
* :func:`pure_nash_equilibria` (exhaustive, N players) and :func:`support_enumeration`
  (all equilibria of a nondegenerate two-player game, exact up to floating point), the exact
  solvers the tests check on games with known equilibria.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from icml25.core.validate import check_finite_array

__all__ = [
    "expected_payoffs",
    "deviation_payoffs",
    "nash_conv",
    "bayesian_nash_conv",
    "pure_nash_equilibria",
    "support_enumeration",
]


def _check_game(payoffs: np.ndarray, name: str = "payoffs") -> np.ndarray:
    arr = np.asarray(payoffs)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim < 2:
        raise ValueError(f"{name} must have shape (A_1, ..., A_N, N), got {arr.shape}")
    n = arr.ndim - 1
    if arr.shape[-1] != n:
        raise ValueError(f"{name}: last axis must hold one payoff per player ({n}), got {arr.shape[-1]}")
    if min(arr.shape) == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    check_finite_array(name, arr)
    return arr


def _check_profile(profile: Sequence[np.ndarray], shape: tuple[int, ...]) -> list[np.ndarray]:
    if len(profile) != len(shape):
        raise ValueError(f"profile must hold one strategy per player ({len(shape)}), got {len(profile)}")
    out = []
    for i, (s, a) in enumerate(zip(profile, shape, strict=True)):
        s = np.asarray(s, dtype=np.float64)
        if s.shape != (a,):
            raise ValueError(f"profile[{i}] must have shape ({a},), got {s.shape}")
        check_finite_array(f"profile[{i}]", s)
        if (s < -1e-12).any() or abs(s.sum() - 1.0) > 1e-6:
            raise ValueError(f"profile[{i}] must be a probability vector, got {s}")
        out.append(s)
    return out


def deviation_payoffs(payoffs: np.ndarray, profile: Sequence[np.ndarray]) -> list[np.ndarray]:
    """For each player i, ``u_i(a, sigma_-i)`` for every own action ``a`` (shape ``(A_i,)``)."""
    arr = _check_game(payoffs)
    n = arr.ndim - 1
    prof = _check_profile(profile, arr.shape[:-1])
    out = []
    for i in range(n):
        u = arr[..., i]
        for j in reversed(range(n)):  # contract the others' axes, last first so indices stay valid
            if j != i:
                u = np.tensordot(u, prof[j], axes=([j], [0]))
        out.append(u)
    return out


def expected_payoffs(payoffs: np.ndarray, profile: Sequence[np.ndarray]) -> np.ndarray:
    """``u_i(sigma)`` for every player (shape ``(N,)``)."""
    prof = _check_profile(profile, _check_game(payoffs).shape[:-1])
    return np.array([float(d @ prof[i]) for i, d in enumerate(deviation_payoffs(payoffs, prof))])


def nash_conv(payoffs: np.ndarray, profile: Sequence[np.ndarray]) -> float:
    """``sum_i [max_a u_i(a, sigma_-i) - u_i(sigma)]``; zero iff ``profile`` is a Nash equilibrium."""
    prof = _check_profile(profile, _check_game(payoffs).shape[:-1])
    devs = deviation_payoffs(payoffs, prof)
    return float(sum(d.max() - d @ prof[i] for i, d in enumerate(devs)))


def bayesian_nash_conv(
    payoffs: np.ndarray, profiles: np.ndarray, type_probs: np.ndarray | None = None
) -> float:
    """NashConv of a Bayesian game whose common type every player observes.

    Args:
        payoffs: ``(K, A_1, ..., A_N, N)``, the payoff tensor of each of ``K`` types.
        profiles: ``(K, N, A)``, each player's mixed strategy per type (equal action counts ``A``).
        type_probs: ``(K,)`` prior over types (default uniform).

    A player's best response to a type-conditional profile can be chosen type by type, so the
    Bayesian NashConv is the prior-weighted mean of the per-type NashConv.
    """
    pay = np.asarray(payoffs)
    prof = np.asarray(profiles, dtype=np.float64)
    if pay.ndim < 3:
        raise ValueError(f"payoffs must have shape (K, A_1, ..., A_N, N), got {pay.shape}")
    if prof.ndim != 3 or prof.shape[0] != pay.shape[0] or prof.shape[1] != pay.ndim - 2:
        raise ValueError(
            f"profiles must have shape (K={pay.shape[0]}, N={pay.ndim - 2}, A), got {prof.shape}"
        )
    k = pay.shape[0]
    if type_probs is None:
        w = np.full(k, 1.0 / k)
    else:
        w = np.asarray(type_probs, dtype=np.float64)
        if w.shape != (k,):
            raise ValueError(f"type_probs must have shape ({k},), got {w.shape}")
        check_finite_array("type_probs", w)
        if (w < 0).any() or abs(w.sum() - 1) > 1e-6:
            raise ValueError("type_probs must be a probability vector")
    return float(sum(w[t] * nash_conv(pay[t], list(prof[t])) for t in range(k)))


def pure_nash_equilibria(payoffs: np.ndarray) -> list[tuple[int, ...]]:
    """Every pure-strategy Nash equilibrium of an N-player game (exhaustive search)."""
    arr = _check_game(payoffs)
    n = arr.ndim - 1
    out = []
    for joint in itertools.product(*(range(a) for a in arr.shape[:-1])):
        stable = True
        for i in range(n):
            idx: list[int | slice] = list(joint)
            idx[i] = slice(None)
            if arr[(*idx, i)].max() > arr[(*joint, i)] + 1e-12:
                stable = False
                break
        if stable:
            out.append(tuple(joint))
    return out


def _indifference(m: np.ndarray, rows: tuple[int, ...], cols: tuple[int, ...]) -> np.ndarray | None:
    """Mixed strategy on ``cols`` making every row in ``rows`` of payoff ``m`` equally good."""
    k = len(cols)
    a = np.zeros((k + 1, k + 1))
    a[:k, :k] = m[np.ix_(rows, cols)]
    a[:k, k] = -1.0  # sum_c m[r, c] y_c - v = 0
    a[k, :k] = 1.0
    b = np.zeros(k + 1)
    b[k] = 1.0
    try:
        sol = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        return None
    return sol[:k]


def support_enumeration(payoffs: np.ndarray, tol: float = 1e-9) -> list[tuple[np.ndarray, np.ndarray]]:
    """All Nash equilibria of a nondegenerate two-player game by support enumeration.

    For every pair of equal-size supports it solves the indifference conditions exactly and keeps
    the solutions that are probability vectors with no profitable deviation outside the support.

    Args:
        payoffs: ``(A_1, A_2, 2)``.
    """
    arr = _check_game(payoffs)
    if arr.ndim != 3:
        raise ValueError(f"support_enumeration needs a two-player game (A_1, A_2, 2), got {arr.shape}")
    a_mat, b_mat = arr[..., 0], arr[..., 1]
    n1, n2 = a_mat.shape
    found: list[tuple[np.ndarray, np.ndarray]] = []
    for size in range(1, min(n1, n2) + 1):
        for rows in itertools.combinations(range(n1), size):
            for cols in itertools.combinations(range(n2), size):
                y_s = _indifference(a_mat, rows, cols)  # column player's mix equalises row payoffs
                x_s = _indifference(b_mat.T, cols, rows)  # row player's mix equalises column payoffs
                if x_s is None or y_s is None or (x_s < -tol).any() or (y_s < -tol).any():
                    continue
                x, y = np.zeros(n1), np.zeros(n2)
                x[list(rows)], y[list(cols)] = x_s, y_s
                x, y = np.clip(x, 0, None), np.clip(y, 0, None)
                if nash_conv(arr, [x / x.sum(), y / y.sum()]) <= 1e-7 and not any(
                    np.allclose(x, fx) and np.allclose(y, fy) for fx, fy in found
                ):
                    found.append((x / x.sum(), y / y.sum()))
    return found
