"""Vectorised runner: many LLRL / LSVI-UCB agents advanced together, one episode at a time.

Part of our implementation of *Multi-objective Linear Reinforcement Learning with Lexicographic
Rewards* (Xue et al., ICML 2025, https://openreview.net/forum?id=RTHTyTsRT3). It computes exactly
what :func:`~.experiment.run_regret_experiment` computes for each agent of :mod:`.agents` (LLRL,
Alg. 1 with LAE, Alg. 2; LSVI-UCB; lexicographic-greedy LSVI-UCB; uniform), the same estimator
and the same random numbers, but for a batch of ``B`` agents at once, so that numpy's per-call
overhead (which dominates at these tiny sizes) is paid once per episode rather than once per agent:

* every agent's ridge statistics are stacked: ``FU (B, H, S A, d)``, the feature table times
  ``U_h^{-1}`` (with ``phi`` a feature row, ``U_h^{-1} phi`` is one of its rows, so ``U_h^{-1}``
  itself is never stored), the squared widths ``||phi||^2_{U_h^-1}``, and ``[b_h | M_h]``
  (``sum phi r^T`` and ``sum phi e_{x'}^T``); an episode's ``H`` samples enter all agents through one
  batched Sherman-Morrison rank-1 update (no re-solve);
* the backward ridge solves ``Q_h = Phi U_h^{-1} (b_h + M_h V_{h+1})`` of all agents and all kinds
  run together, one batched product per step ``h`` (objectives stacked as columns; LSVI-UCB's
  scalarised reward ``r . w`` lives in column 0);
* LLRL's phased action refinement (explore the widest candidate / LAE at scale ``2^-s``) runs on
  all ``(agent, h, x)`` rows together, with the action axis first (numpy reduces a short leading
  axis much faster than a short trailing one);
* environment steps, Bernoulli rewards and the exact per-objective policy evaluation (regret) are
  batched over agents.

Agents with fewer actions, objectives or features than the widest one are zero-padded, which
leaves their computation unchanged: a padded feature coordinate has zero weight, a padded
objective has zero reward and an infinite selection tolerance (it keeps every candidate), and a
padded action is never a candidate and has probability 0.
Random numbers: as in the per-agent runner, every agent's environment draws from its own stream
started at ``env_seed``; agents with the same ``m`` draw identical numbers, so one draw per distinct
``m`` serves them all. The naive per-agent path stays in :mod:`.agents`/:mod:`.experiment`; the
tests check that both give the same regret to float tolerance (summation order differs).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from icml25.core.progress import ProgressFn

from .agents import lae_tolerances
from .dp import lexicographic_optimal_policy
from .env import LinearMOMDP
from .experiment import RegretRun

__all__ = ["ArmSpec", "run_regret_batch"]

Kind = Literal["llrl", "lsvi", "lex_greedy", "uniform"]
_KINDS: tuple[Kind, ...] = ("llrl", "lsvi", "lex_greedy", "uniform")


@dataclass(frozen=True)
class ArmSpec:
    """One agent of a batch.

    Args:
        kind: "llrl" (:class:`~.agents.LLRL`, ``refit="every"``), "lsvi" (:class:`~.agents.LSVIUCB`),
            "lex_greedy" (:class:`~.agents.LexGreedyLSVI`) or "uniform" (:class:`~.agents.UniformAgent`).
        mdp: the environment it runs in (its own features ``mdp.phi``).
        beta: confidence radius (ignored by "uniform").
        lam: the trade-off bound given to LLRL (ignored otherwise).
        weights: LSVI-UCB's scalarisation weights (m,) (required for "lsvi" only).
    """

    kind: Kind
    mdp: LinearMOMDP
    beta: float = 0.0
    lam: float = 0.0
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {self.kind!r}")
        if not math.isfinite(self.beta) or self.beta < 0:
            raise ValueError(f"beta must be finite and >= 0, got {self.beta}")
        if self.kind == "llrl" and self.beta <= 0:
            raise ValueError(f"beta must be positive for LLRL, got {self.beta}")
        if not math.isfinite(self.lam) or self.lam < 0:
            raise ValueError(f"lam must be finite and >= 0, got {self.lam}")
        if self.kind == "lsvi":
            w = np.asarray(self.weights if self.weights is not None else (), dtype=np.float64)
            m = self.mdp.n_objectives
            if w.shape != (m,) or np.any(w < 0) or w.sum() <= 0 or not np.isfinite(w).all():
                raise ValueError(
                    f"weights must be non-negative with shape ({m},) and a positive sum, got {self.weights}"
                )


def _lae_actions_first(q: np.ndarray, cand: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """LAE (Alg. 2) on action-major arrays: ``q (m, A, *rows)``, ``cand (A, *rows)``.

    ``tol (m, ...)`` broadcasts against ``rows`` (multiplier x beta x scale). The action axis comes
    first because numpy reduces a short leading axis far faster than a short trailing one.
    """
    keep = cand.copy()
    for i in range(q.shape[0]):
        qi = np.where(keep, q[i], -np.inf)
        keep &= qi.max(axis=0) - qi <= tol[i]
    return keep


def run_regret_batch(
    arms: Sequence[ArmSpec],
    *,
    K: int,
    env_seed: int | Sequence[int],
    episodes: int | None = None,
    progress: ProgressFn | None = None,
) -> list[RegretRun]:
    """Run ``K`` episodes of every arm together; per-arm exact regret, as :func:`run_regret_experiment`.

    Args:
        arms: the agents; all must share ``S`` and ``H`` (``A``, ``m`` and ``d`` may differ).
        K: episodes (also the ``K`` the agents are told, e.g. LLRL's final scale ``1/sqrt K``).
        env_seed: seed of each arm's environment stream (``np.random.default_rng(env_seed)``).
        episodes: how many of the ``K`` episodes to run (default all; a prefix for timing).
        progress: ``progress(done, episodes)`` every 500 episodes.

    Returns:
        One :class:`RegretRun` per arm, in order; ``regret`` has the arm's own ``m`` rows and
        ``seconds`` is the batch's wall time.
    """
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"K must be a positive integer, got {K!r}")
    n_ep = int(K) if episodes is None else episodes
    if isinstance(n_ep, bool) or not isinstance(n_ep, (int, np.integer)) or not 1 <= n_ep <= K:
        raise ValueError(f"episodes must be an integer in [1, K={K}], got {episodes!r}")
    n_ep = int(n_ep)
    if len(arms) == 0:
        raise ValueError("arms must be a non-empty sequence of ArmSpec")
    for i, spec in enumerate(arms):
        if not isinstance(spec, ArmSpec):
            raise TypeError(f"arms[{i}] must be an ArmSpec, got {type(spec).__name__}")
    S, H = arms[0].mdp.n_states, arms[0].mdp.H
    for i, spec in enumerate(arms):
        if (spec.mdp.n_states, spec.mdp.H) != (S, H):
            raise ValueError(
                f"arms[{i}] has (S, H) = {(spec.mdp.n_states, spec.mdp.H)}, arms[0] has {(S, H)}: "
                "a batch needs one state space and horizon"
            )
    start = time.perf_counter()
    K = int(K)
    # LLRL agents first (a contiguous slice, so its rows are views), then every other kind
    order = sorted(range(len(arms)), key=lambda i: _KINDS.index(arms[i].kind))
    specs = [arms[i] for i in order]
    B = len(specs)
    nL = sum(s.kind == "llrl" for s in specs)
    nV = sum(s.kind == "lsvi" for s in specs)
    Lsl, Vsl, Osl = slice(0, nL), slice(nL, nL + nV), slice(nL, B)
    ms = np.array([s.mdp.n_objectives for s in specs])
    As = np.array([s.mdp.n_actions for s in specs])
    M, A, D = int(ms.max()), int(As.max()), max(s.mdp.dim for s in specs)

    # zero-padded model and features; padded actions are never candidates
    phi = np.zeros((B, S, A, D))
    R = np.zeros((B, M, S, A))
    P = np.zeros((B, S, A, S))
    valid = np.zeros((B, A), dtype=bool)
    v_star = np.zeros((B, M))
    x1 = np.array([s.mdp.x1 for s in specs])
    bonus_coef = np.zeros(B)  # beta for the optimistic LSVI kinds, 0 for LLRL and uniform
    q_cap = np.full((B, H), np.inf)  # LSVI: H sum(w); lex-greedy: H - h; LLRL: uncapped
    v_lo = np.full(B, -np.inf)
    v_hi = np.full((B, H), np.inf)  # LLRL: V_{h+1} clipped to [0, H - h]
    tol = np.full((B, M), np.inf)  # per-objective selection tolerance; inf keeps every candidate
    r_map = np.zeros((B, M, M))  # rewards fed to the regressions: r @ r_map (LSVI: r . w in column 0)
    thr_final = 1.0 / math.sqrt(K)
    hs = np.arange(H)
    for b, s in enumerate(specs):
        m, d, a_n = s.mdp.n_objectives, s.mdp.dim, s.mdp.n_actions
        phi[b, :, :a_n, :d] = s.mdp.phi
        R[b, :m, :, :a_n] = s.mdp.R
        P[b, :, :a_n] = s.mdp.P
        valid[b, :a_n] = True
        _, V, _ = lexicographic_optimal_policy(s.mdp.P, s.mdp.R, H)
        v_star[b, :m] = V[:, 0, s.mdp.x1]
        if s.kind == "llrl":
            tol[b, :m] = lae_tolerances(m, s.lam) * s.beta * thr_final  # LAE at 1/sqrt K
            v_lo[b], v_hi[b] = 0.0, H - hs
            r_map[b, :m, :m] = np.eye(m)
        elif s.kind == "lex_greedy":
            tol[b, :m] = 1e-12  # lexicographic argmax (ties within 1e-12)
            bonus_coef[b], q_cap[b] = s.beta, H - hs
            r_map[b, :m, :m] = np.eye(m)
        elif s.kind == "lsvi":
            w = np.asarray(s.weights, dtype=np.float64)
            tol[b, 0] = 0.0  # exact argmax of the scalarised optimistic Q (column 0): V = max_a Q
            bonus_coef[b], q_cap[b] = s.beta, H * float(w.sum())
            r_map[b, :m, 0] = w
    tol_l = tol[Lsl] / thr_final  # LLRL multipliers x beta, rescaled per phase
    F = phi.reshape(B, S * A, D)
    Ft = F[:, None]  # (B, 1, S A, D)
    cumP = np.cumsum(P, axis=3).reshape(B * S * A, S)
    a_max = As - 1
    ar = np.arange(B)
    ar_s = np.arange(S)
    rows = np.arange(B)[:, None]

    # FU[b, h] = Phi U_h^{-1} (every feature row times the inverse Gram matrix, (S A, D)), updated by
    # Sherman-Morrison; with phi a feature row, U_h^{-1} phi is one of its rows, so U^{-1} is not stored
    FU = np.repeat(F[:, None], H, axis=1)  # U_h = I at the start (a copy)
    wsq = (FU * Ft).sum(axis=3)  # ||phi||^2_{U_h^-1}, (B, H, S A)
    stats = np.zeros((B, H, D, M + S))  # [b_h | M_h]: sum phi r^T and sum phi e_{x'}^T
    Qt = np.zeros((M, A, B, H, S))  # each agent's (optimistic / capped) Q-vectors, action-major
    keep_t = np.zeros((A, B, H, S), dtype=bool)  # selected sets at tolerance ``tol``
    widths_t = np.zeros((A, B, H, S))
    valid_t = np.ascontiguousarray(valid.T)  # (A, B)
    cand0_t = np.broadcast_to(valid_t[:, :, None], (A, B, S))
    tol_t = np.ascontiguousarray(tol.T)[:, :, None]  # (M, B, 1)
    tol_lt = np.ascontiguousarray(tol_l.T)[:, :, None, None]  # (M, nL, 1, 1)
    eye = np.eye(A)

    def refit() -> None:
        """Backward ridge solves of every agent: ``Q_h = phi U_h^-1 (b_h + M_h V_{h+1})`` (+ bonus)."""
        widths = np.sqrt(np.clip(wsq, 0, None)).reshape(B, H, S, A)
        widths_t[:] = widths.transpose(3, 0, 1, 2)
        QAG = FU @ stats  # (B, H, S A, M + S): Phi U_h^-1 b_h and Phi U_h^-1 M_h
        QA = QAG[..., :M].reshape(B, H, S, A, M) + (bonus_coef[:, None, None, None] * widths)[..., None]
        QG = QAG[..., M:]
        V_next = np.zeros((B, S, M))
        for h in range(H - 1, -1, -1):
            q = np.minimum(QA[:, h] + (QG[:, h] @ V_next).reshape(B, S, A, M), q_cap[:, h, None, None, None])
            qt = np.ascontiguousarray(q.transpose(3, 2, 0, 1))  # (M, A, B, S)
            Qt[:, :, :, h] = qt
            keep = _lae_actions_first(qt, cand0_t, tol_t)
            keep_t[:, :, h] = keep
            sel = q[rows, ar_s[None, :], np.argmax(keep, axis=0)]  # lowest-index survivor (B, S, M)
            V_next = np.clip(sel, v_lo[:, None, None], v_hi[:, h, None, None])
        if nV:  # LSVI-UCB acts greedily with ties within 1e-12 broken uniformly (column 0)
            q0 = np.where(valid_t[:, Vsl, None, None], Qt[0, :, Vsl], -np.inf)
            keep_t[:, Vsl] = q0.max(axis=0) - 1e-12 <= q0

    def llrl_policy() -> np.ndarray:
        """Alg. 1's phases on every (LLRL agent, h, x) row at once; returns (A, nL, H, S)."""
        widths_l = widths_t[:, Lsl]
        q = Qt[:, :, Lsl]
        cand = np.broadcast_to(valid_t[:, Lsl, None, None], (A, nL, H, S)).copy()
        policy_t = np.zeros((A, nL, H, S))
        open_ = np.ones((nL, H, S), dtype=bool)
        s = 1
        while True:
            w = np.where(cand, widths_l, -np.inf)
            wmax = w.max(axis=0)
            fin = open_ & (wmax <= thr_final)  # (a) every candidate narrow: exploit LAE(A_s, 1/sqrt K)
            if fin.any():
                keep = _lae_actions_first(q, cand, tol_lt * thr_final)
                policy_t[:, fin] = (keep / keep.sum(axis=0))[:, fin]
                open_ &= ~fin
            exp_ = open_ & (wmax > 2.0**-s)  # (b) explore the widest candidate
            if exp_.any():
                policy_t[:, exp_] = eye[np.argmax(w, axis=0)[exp_]].T
                open_ &= ~exp_
            if not open_.any():
                return policy_t
            # (c) eliminate at scale 2^-s and refine
            cand = np.where(open_, _lae_actions_first(q, cand, tol_lt * 2.0**-s), cand)
            s += 1

    policy_t = np.zeros((A, B, H, S))
    gaps = np.zeros((B, M, n_ep))
    ms_unique = sorted(set(ms.tolist()))
    gens = {m: np.random.default_rng(env_seed) for m in ms_unique}
    rows_of = {m: ms == m for m in ms_unique}
    u = np.full((B, H, 2 + M), 2.0)  # padded reward draws stay above every mean (reward 0)
    bh = np.arange(H)[None, :]
    refit()
    for k in range(n_ep):
        if nL:
            policy_t[:, Lsl] = llrl_policy()
        policy_t[:, Osl] = keep_t[:, Osl] / keep_t[:, Osl].sum(axis=0)
        policy = np.ascontiguousarray(policy_t.transpose(1, 2, 3, 0))  # (B, H, S, A)
        # exact per-objective value of this episode's policies (regret): V_h = r_pi + P_pi V_{h+1}
        r_pi = np.einsum("bmsa,bhsa->bhms", R, policy)
        P_piT = np.einsum("bsat,bhsa->bhts", P, policy)  # transposed: (B, H, S', S)
        V = np.zeros((B, M, S))
        for h in range(H - 1, -1, -1):
            V = r_pi[:, h] + V @ P_piT[:, h]
        gaps[:, :, k] = v_star - V[ar, :, x1]
        # one episode in every environment (inverse-CDF draws, as the per-agent runner)
        for m in ms_unique:
            u[rows_of[m], :, : 2 + m] = gens[m].random((H, 2 + m))
        cumpi = np.cumsum(policy, axis=3).reshape(B * H * S, A)
        x = x1.copy()
        rs = np.empty((B, H, M))
        xa = np.empty((B, H), dtype=np.intp)  # feature row x A + a of each step
        xn_all = np.empty((B, H), dtype=np.intp)
        for h in range(H):
            a = np.minimum((cumpi[(ar * H + h) * S + x] <= u[:, h, 0, None]).sum(axis=1), a_max)
            rs[:, h] = u[:, h, 2:] < R[ar, :, x, a]
            xa[:, h] = x * A + a
            xn = np.minimum((cumP[(ar * S + x) * A + a] <= u[:, h, 1, None]).sum(axis=1), S - 1)
            xn_all[:, h] = xn
            x = xn
        phis = F[ar[:, None], xa]  # (B, H, D)
        # batched Sherman-Morrison rank-1 updates: U^-1 phi is the row xa of FU
        uvec = FU[ar[:, None], bh, xa]  # (B, H, D)
        Fu = (FU @ phis[..., None])[..., 0]  # (B, H, S A): Phi U^-1 phi
        denom = 1.0 + Fu[ar[:, None], bh, xa]
        Fu_d = Fu / denom[..., None]
        FU -= Fu_d[..., :, None] * uvec[..., None, :]
        wsq -= Fu_d * Fu
        stats[..., :M] += phis[..., :, None] * (rs @ r_map)[:, :, None, :]
        stats[ar[:, None], bh, :, M + xn_all] += phis
        refit()
        if progress is not None and (k + 1) % 500 == 0:
            progress(k + 1, n_ep)
    seconds = time.perf_counter() - start
    regret = np.cumsum(gaps, axis=2)
    out: list[RegretRun | None] = [None] * B
    for pos, i in enumerate(order):
        out[i] = RegretRun(regret=regret[pos, : ms[pos]], v_star=v_star[pos, : ms[pos]], seconds=seconds)
    return [r for r in out if r is not None]
