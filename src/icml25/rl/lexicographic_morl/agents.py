"""LLRL (Lexicographic Linear RL, Alg. 1) with LAE (Alg. 2), and the LSVI-UCB-style baselines.

Part of our implementation of *Multi-objective Linear Reinforcement Learning with Lexicographic
Rewards* (Xue et al., ICML 2025, https://openreview.net/forum?id=RTHTyTsRT3).
Implements: Alg. 1 (LLRL: phased action refinement, ridge regression per step), Alg. 2 (LAE, the
tolerance ``(2 + 4 lam + ... + 4 lam^(i-1)) beta C``) and the baselines of our check.

Notation: ``H`` steps, ``S`` states (finite; features given as a table ``phi (S, A, d)``), ``m``
objectives, Gram matrices ``U_h = I + sum phi phi^T`` (ridge 1), widths ``w(x,a) = ||phi||_{U_h^-1}``.

Every agent turns its current estimates into an episode policy ``(H, S, A)`` of action probabilities
(:meth:`episode_policy`): the estimates only change between episodes, so this table is exactly what
per-step ``act(h, x)`` would do, and it lets the runner compute regret exactly.

Reconstructed parts (the paper's full text was not available to us; these follow a third-party
summary of Alg. 1-2, completed by our own choices):
the multi-phase loop of Alg. 1 (explore the widest candidate whose width exceeds ``2^-s``, else
eliminate with LAE at scale ``2^-s``; exploit uniformly from ``LAE(A_s, 1/sqrt K)`` once every
candidate is narrower than ``1/sqrt K``); one Gram matrix per step ``h`` (no per-phase data split);
the next-state value ``V_{h+1}(x') = clip(Q_{h+1}(x', a_hat(x')), 0, H-h)`` with ``a_hat`` the
lowest-index survivor of ``LAE(x', A, 1/sqrt K)`` (:func:`next_state_action`); the radius
``beta = c_beta d H sqrt(log(2 d H K / delta))`` with a tuned ``c_beta`` (theory constants are far
too large to learn at feasible K).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from icml25.core.validate import check_numeric_array

__all__ = [
    "lae_tolerances",
    "lexicographic_action_elimination",
    "next_state_action",
    "confidence_radius",
    "LinearRegressionState",
    "LLRL",
    "LSVIUCB",
    "LexGreedyLSVI",
    "UniformAgent",
]


def lae_tolerances(m: int, lam: float) -> np.ndarray:
    """Per-objective multipliers ``2 + 4 lam + ... + 4 lam^(i-1)`` (Alg. 2), shape (m,)."""
    if m < 1 or lam < 0:
        raise ValueError(f"need m >= 1 and lam >= 0, got m={m}, lam={lam}")
    return np.array([2.0 + 4.0 * sum(lam**j for j in range(1, i + 1)) for i in range(m)])


def lexicographic_action_elimination(
    q_hat: np.ndarray, cand: np.ndarray, lam: float, beta: float, C: float | np.ndarray
) -> np.ndarray:
    """LAE (Alg. 2): for ``i = 1..m`` keep ``a`` with ``max_{a'} Q^i(a') - Q^i(a) <= tol_i beta C``.

    Args:
        q_hat: (..., A, m) estimated Q-values of the candidate actions.
        cand: (..., A) boolean candidate mask (at least one True per row).
        lam: trade-off bound; beta: confidence radius; C: scale, scalar or broadcastable to ``...``.

    Returns:
        The surviving mask (..., A); never empty where ``cand`` was not.
    """
    q_hat = np.asarray(q_hat, dtype=np.float64)
    cand = np.asarray(cand, dtype=bool)
    if q_hat.shape[:-1] != cand.shape:
        raise ValueError(f"q_hat must have shape cand.shape + (m,) = {cand.shape} + (m,), got {q_hat.shape}")
    return _lae(q_hat, cand, lae_tolerances(q_hat.shape[-1], lam) * beta, C)


def _lae(q_hat: np.ndarray, cand: np.ndarray, tol_beta: np.ndarray, C: float | np.ndarray) -> np.ndarray:
    """LAE without input checks; ``tol_beta`` (m,) are the multipliers times beta."""
    C_arr = np.asarray(C, dtype=np.float64)[..., None]
    keep = cand.copy()
    for i in range(q_hat.shape[-1]):
        q = np.where(keep, q_hat[..., i], -np.inf)
        best = q.max(axis=-1, keepdims=True)
        keep &= best - q <= tol_beta[i] * C_arr  # Alg. 2: tolerance (2 + 4 lam + ... ) beta C
    return keep


def next_state_action(q_next: np.ndarray, lam: float, beta: float, K: int) -> np.ndarray:
    """[reconstructed] ``a_hat(x')``: lowest-index survivor of ``LAE(x', A, 1/sqrt K)``; q_next (S, A, m)."""
    full = np.ones(q_next.shape[:-1], dtype=bool)
    keep = _lae(q_next, full, lae_tolerances(q_next.shape[-1], lam) * beta, 1.0 / math.sqrt(K))
    return np.argmax(keep, axis=-1)


def confidence_radius(d: int, H: int, K: int, delta: float, c_beta: float) -> float:
    """[reconstructed] ``beta = c_beta d H sqrt(log(2 d H K / delta))`` (theory: O~(dH))."""
    if not 0 < delta < 1 or c_beta <= 0:
        raise ValueError(f"need delta in (0, 1) and c_beta > 0, got {delta}, {c_beta}")
    return c_beta * d * H * math.sqrt(math.log(2 * d * H * K / delta))


class LinearRegressionState:
    """Per-step ridge-regression statistics, updated by Sherman-Morrison.

    Holds, for each step h: ``U_inv[h] = U_h^{-1}`` (d, d), ``b[h] = sum phi r^T`` (d, m) and
    ``M[h] = sum phi e_{x'}^T`` (d, S) so that ``sum phi V(x')^T = M[h] V`` for any table V (S, m).
    """

    def __init__(self, H: int, d: int, m: int, S: int) -> None:
        self.U_inv = np.repeat(np.eye(d)[None], H, axis=0)
        self.b = np.zeros((H, d, m))
        self.M = np.zeros((H, d, S))
        self.logdet = np.zeros(H)

    def add_batch(self, hs: np.ndarray, phis: np.ndarray, rs: np.ndarray, x_next: np.ndarray) -> None:
        """One sample for each of the distinct steps ``hs`` (the usual episode), updated together."""
        Ui = self.U_inv[hs]  # (n, d, d)
        u = np.einsum("nde,ne->nd", Ui, phis)
        denom = 1.0 + np.einsum("nd,nd->n", phis, u)
        self.U_inv[hs] = Ui - u[:, :, None] * u[:, None, :] / denom[:, None, None]  # Sherman-Morrison
        self.logdet[hs] += np.log(denom)
        self.b[hs] += phis[:, :, None] * rs[:, None, :]
        self.M[hs, :, x_next] += phis

    def add(self, h: int, phi: np.ndarray, r: np.ndarray, x_next: int) -> None:
        Ui = self.U_inv[h]
        u = Ui @ phi
        denom = 1.0 + float(phi @ u)
        self.U_inv[h] = Ui - np.outer(u, u) / denom  # Sherman-Morrison
        self.logdet[h] += math.log(denom)
        self.b[h] += np.outer(phi, r)
        self.M[h][:, x_next] += phi


class _LinearAgent:
    """Shared bookkeeping: features, regression statistics, episode counter, RNG."""

    def __init__(self, phi: np.ndarray, H: int, m: int, K: int, rng: np.random.Generator) -> None:
        check_numeric_array("phi", phi)
        phi = np.asarray(phi, dtype=np.float64)
        if phi.ndim != 3:
            raise ValueError(f"phi must be a feature table (S, A, d), got shape {phi.shape}")
        if phi.size == 0 or not np.isfinite(phi).all():
            raise ValueError(
                f"phi must be a non-empty table of finite features (no NaN/inf), got shape {phi.shape}"
            )
        if H < 1 or m < 1 or K < 1:
            raise ValueError(f"need H, m, K >= 1, got {H}, {m}, {K}")
        self.phi = phi
        self.S, self.A, self.d = phi.shape
        self._F = phi.reshape(self.S * self.A, self.d)
        self.H, self.m, self.K = int(H), int(m), int(K)
        self.rng = rng
        self.stats = LinearRegressionState(self.H, self.d, self.m, self.S)
        self.episode = 0
        self._policy: np.ndarray | None = None
        self._pending: list[tuple[int, int, int, np.ndarray, int]] = []

    def widths(self) -> np.ndarray:
        """``w_h(x, a) = sqrt(phi^T U_h^{-1} phi)``, (H, S, A)."""
        quad = ((self._F @ self.stats.U_inv) * self._F).sum(axis=2)  # (H, S A)
        return np.sqrt(np.clip(quad, 0, None)).reshape(self.H, self.S, self.A)

    def observe(self, h: int, x: int, a: int, r: np.ndarray, x_next: int) -> None:
        """Record one transition; ``r`` is the reward vector (m,)."""
        r = np.asarray(r, dtype=np.float64)
        if r.shape != (self.m,):
            raise ValueError(f"reward vector must have shape ({self.m},), got {r.shape}")
        if not (0 <= h < self.H and 0 <= x < self.S and 0 <= a < self.A and 0 <= x_next < self.S):
            raise ValueError(f"(h, x, a, x') = {(h, x, a, x_next)} out of range")
        self._pending.append((h, x, a, r, x_next))

    def _flush(self) -> None:
        if not self._pending:
            return
        hs = np.array([p[0] for p in self._pending])
        if np.unique(hs).size == hs.size:
            xs = np.array([p[1] for p in self._pending])
            acts = np.array([p[2] for p in self._pending])
            rs = np.array([p[3] for p in self._pending])
            nxt = np.array([p[4] for p in self._pending])
            self.stats.add_batch(hs, self.phi[xs, acts], rs, nxt)
        else:
            for h, x, a, r, x_next in self._pending:
                self.stats.add(h, self.phi[x, a], r, x_next)
        self._pending = []

    def end_episode(self) -> None:
        """Fold the episode's transitions into the regressions and refit (Alg. 1, end of episode)."""
        self._flush()
        self.episode += 1
        self._refit()
        self._policy = None

    def _refit(self) -> None:
        raise NotImplementedError

    def _compute_policy(self) -> np.ndarray:
        raise NotImplementedError

    def episode_policy(self) -> np.ndarray:
        """Action probabilities (H, S, A) used for the current episode."""
        if self._policy is None:
            self._policy = self._compute_policy()
        return self._policy

    def act(self, h: int, x: int) -> int:
        p = self.episode_policy()[h, x]
        return int(min(np.searchsorted(np.cumsum(p), self.rng.random(), side="right"), self.A - 1))


class LLRL(_LinearAgent):
    """Lexicographic Linear RL (Alg. 1) with lexicographic action elimination (Alg. 2).

    Args:
        phi: features (S, A, d); H: horizon; m: objectives; K: number of episodes.
        lam: the trade-off bound given to the algorithm (>= lambda*).
        beta: confidence radius; default :func:`confidence_radius` with ``c_beta`` and ``delta``.
        refit: "every" episode (default) or "doubling" (when some ``det U_h`` has doubled).
        rng: generator for the uniform choice in the exploitation branch.
    """

    def __init__(
        self,
        phi: np.ndarray,
        *,
        H: int,
        m: int,
        K: int,
        lam: float,
        beta: float | None = None,
        c_beta: float = 0.003,
        delta: float = 0.05,
        refit: Literal["every", "doubling"] = "every",
        rng: np.random.Generator,
    ) -> None:
        super().__init__(phi, H, m, K, rng)
        if lam < 0:
            raise ValueError(f"lam must be >= 0, got {lam}")
        if refit not in ("every", "doubling"):
            raise ValueError(f"refit must be 'every' or 'doubling', got {refit!r}")
        self.lam = float(lam)
        self.beta = float(beta) if beta is not None else confidence_radius(self.d, H, K, delta, c_beta)
        if self.beta <= 0:
            raise ValueError(f"beta must be positive, got {self.beta}")
        self.refit = refit
        self._tol = lae_tolerances(self.m, self.lam) * self.beta
        self.W = np.zeros((self.H, self.d, self.m))  # w_hat_h^i
        self._logdet_at_refit = np.zeros(self.H)

    def q_hat(self) -> np.ndarray:
        """``Q_hat_h^i(x, a) = <w_hat_h^i, phi(x, a)>``, (H, S, A, m)."""
        return (self._F @ self.W).reshape(self.H, self.S, self.A, self.m)

    def _refit(self) -> None:
        if self.refit == "doubling" and not np.any(self.stats.logdet >= self._logdet_at_refit + math.log(2)):
            return
        self._logdet_at_refit = self.stats.logdet.copy()
        V_next = np.zeros((self.S, self.m))  # V_hat_{H+1} = 0
        for h in range(self.H - 1, -1, -1):
            # w_hat_h^i = U_h^{-1} sum phi [r^i + V_hat_{h+1}^i(x')]
            self.W[h] = self.stats.U_inv[h] @ (self.stats.b[h] + self.stats.M[h] @ V_next)
            q = self.phi @ self.W[h]  # (S, A, m)
            keep = _lae(q, np.ones((self.S, self.A), dtype=bool), self._tol, 1.0 / math.sqrt(self.K))
            a_hat = np.argmax(keep, axis=1)  # next_state_action
            V_next = np.clip(q[np.arange(self.S), a_hat], 0.0, self.H - h)  # clip to [0, H - h + 1]

    def _compute_policy(self) -> np.ndarray:
        H, S, A = self.H, self.S, self.A
        widths = self.widths()
        q = self.q_hat()
        thr_final = 1.0 / math.sqrt(self.K)
        cand = np.ones((H, S, A), dtype=bool)
        policy = np.zeros((H, S, A))
        open_ = np.ones((H, S), dtype=bool)
        s = 1
        while open_.any():
            w = np.where(cand, widths, -np.inf)
            wmax = w.max(axis=2)
            # (a) every candidate is narrow: exploit uniformly among LAE(A_s, 1/sqrt K)
            fin = open_ & (wmax <= thr_final)
            if fin.any():
                keep = _lae(q, cand, self._tol, thr_final)
                probs = keep / keep.sum(axis=2, keepdims=True)
                policy[fin] = probs[fin]
                open_ &= ~fin
            # (b) some candidate is wider than 2^-s: explore the widest one
            exp_ = open_ & (wmax > 2.0**-s)
            if exp_.any():
                idx = np.argmax(w, axis=2)
                policy[exp_] = np.eye(A)[idx[exp_]]
                open_ &= ~exp_
            # (c) otherwise eliminate at scale 2^-s and refine
            if open_.any():
                cand = np.where(open_[..., None], _lae(q, cand, self._tol, 2.0**-s), cand)
                s += 1
        return policy


class LSVIUCB(_LinearAgent):
    """LSVI-UCB (Jin et al. 2020) on the scalarised reward ``sum_i weights_i r^i``.

    ``weights = (1, 0, ...)`` is the objective-1-only baseline; ``(1, 1)`` the scalarised one.
    Greedy on ``min(<w, phi> + beta ||phi||_{U^-1}, H max r)``, ties broken uniformly at random.
    """

    def __init__(
        self,
        phi: np.ndarray,
        *,
        H: int,
        m: int,
        K: int,
        weights: Sequence[float],
        beta: float,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(phi, H, m, K, rng)
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (m,) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights must be non-negative with shape ({m},) and a positive sum, got {w}")
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        self.weights, self.beta = w, float(beta)
        self.Q = np.zeros((self.H, self.S, self.A))
        self._refit()

    def _refit(self) -> None:
        widths = self.widths()
        cap = self.H * float(self.weights.sum())
        V_next = np.zeros(self.S)
        for h in range(self.H - 1, -1, -1):
            w = self.stats.U_inv[h] @ (self.stats.b[h] @ self.weights + self.stats.M[h] @ V_next)
            self.Q[h] = np.minimum(self.phi @ w + self.beta * widths[h], cap)  # optimistic Q
            V_next = self.Q[h].max(axis=1)

    def _compute_policy(self) -> np.ndarray:
        best = self.Q.max(axis=2, keepdims=True) - 1e-12 <= self.Q
        return best / best.sum(axis=2, keepdims=True)


class LexGreedyLSVI(_LinearAgent):
    """Naive lexicographic-greedy LSVI-UCB: optimistic Q-vectors compared lexicographically, no tolerance."""

    def __init__(
        self, phi: np.ndarray, *, H: int, m: int, K: int, beta: float, rng: np.random.Generator
    ) -> None:
        super().__init__(phi, H, m, K, rng)
        self.beta = float(beta)
        self.best = np.ones((self.H, self.S, self.A), dtype=bool)
        self._refit()

    def _refit(self) -> None:
        widths = self.widths()
        V_next = np.zeros((self.S, self.m))
        for h in range(self.H - 1, -1, -1):
            W = self.stats.U_inv[h] @ (self.stats.b[h] + self.stats.M[h] @ V_next)  # (d, m)
            Q = np.minimum(self.phi @ W + self.beta * widths[h][..., None], self.H - h)  # (S, A, m)
            keep = np.ones((self.S, self.A), dtype=bool)
            for i in range(self.m):
                q = np.where(keep, Q[..., i], -np.inf)
                keep &= q >= q.max(axis=1, keepdims=True) - 1e-12
            self.best[h] = keep
            a_hat = np.argmax(keep, axis=1)
            V_next = Q[np.arange(self.S), a_hat]

    def _compute_policy(self) -> np.ndarray:
        return self.best / self.best.sum(axis=2, keepdims=True)


class UniformAgent(_LinearAgent):
    """The uniform random policy (a reference for regret)."""

    def _refit(self) -> None:
        pass

    def _compute_policy(self) -> np.ndarray:
        return np.full((self.H, self.S, self.A), 1.0 / self.A)
