"""Reward sets R_pi (repo ``reward_set.py``): finite lists, the box [0,1]^S and polytopes.

Part of our implementation of *Adaptive Exploration for Multi-Reward Multi-Policy Evaluation* (Russo
& Pacchiano, ICML 2025, https://arxiv.org/abs/2502.02516). Implements the finite and
convex reward sets of the paper's setting (the box [0,1]^S is the reward-free case).

A reward is a vector ``r in [0, 1]^S`` read as ``r(s, pi(s))``. The one operation every bound and
metric needs is the *support of |c^T r|*: for each row ``c`` of a matrix ``C`` (k, S),
``max_{r in R} |c^T r|``. It gives ``A^pi(s)`` (rows of ``K_s G^pi``) and the worst-case estimation
error over the set (rows of ``G_hat - G``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from icml25.core.validate import check_positive

__all__ = ["RewardSet", "FiniteRewardSet", "BoxRewardSet", "PolytopeRewardSet", "canonical_rewards"]


class RewardSet:
    """Base class: ``n_states`` and ``max_abs(C)``."""

    n_states: int

    def max_abs(self, C: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """``max_{r in R} |c_k^T r|`` for every row ``c_k`` of ``C`` (k, S); returns (k,)."""
        raise NotImplementedError

    def _check_C(self, C: np.ndarray) -> np.ndarray:
        C = np.asarray(C, dtype=np.float64)
        if C.ndim != 2 or C.shape[1] != self.n_states:
            raise ValueError(f"C must have shape (k, {self.n_states}), got {C.shape}")
        return C


@dataclass(frozen=True)
class FiniteRewardSet(RewardSet):
    """An explicit list of rewards, shape (n_rewards, S), entries in [0, 1]."""

    rewards: np.ndarray

    def __post_init__(self) -> None:
        R = np.atleast_2d(np.asarray(self.rewards, dtype=np.float64))
        if R.ndim != 2 or R.shape[0] < 1 or R.shape[1] < 1:
            raise ValueError(f"rewards must have shape (n_rewards, S), got {np.shape(self.rewards)}")
        if not np.all(np.isfinite(R)) or R.min() < 0.0 or R.max() > 1.0:
            raise ValueError("rewards must lie in [0, 1]")
        R.setflags(write=False)
        object.__setattr__(self, "rewards", R)

    @property
    def n_states(self) -> int:  # type: ignore[override]
        return int(self.rewards.shape[1])

    def max_abs(self, C: np.ndarray) -> np.ndarray:
        C = self._check_C(C)
        return np.abs(C @ self.rewards.T).max(axis=1)  # max over the listed rewards


@dataclass(frozen=True)
class BoxRewardSet(RewardSet):
    """The reward-free set ``[low, high]^S`` (default ``[0, 1]^S``)."""

    n_states: int  # type: ignore[misc]
    low: float = 0.0
    high: float = 1.0

    def __post_init__(self) -> None:
        check_positive("BoxRewardSet.n_states", self.n_states, integer=True)
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError(f"need 0 <= low <= high <= 1, got low={self.low}, high={self.high}")

    def max_abs(self, C: np.ndarray) -> np.ndarray:
        C = self._check_C(C)
        pos, neg = np.clip(C, 0, None), np.clip(-C, 0, None)
        # Closed form (characteristic_time._solve_rewardfree): max(sum_j c_j^+, sum_j c_j^-) on [0,1]^S;
        # on [low, high]^S a linear function peaks at a vertex chosen sign-wise.
        up = pos.sum(1) * self.high - neg.sum(1) * self.low
        down = neg.sum(1) * self.high - pos.sum(1) * self.low
        return np.maximum(up, down)


@dataclass(frozen=True)
class PolytopeRewardSet(RewardSet):
    """``{r : G r + h <= 0, 0 <= r <= 1}`` with ``G`` (m, S) and ``h`` (m,); two LPs per row (HiGHS)."""

    G: np.ndarray
    h: np.ndarray

    def __post_init__(self) -> None:
        G = np.atleast_2d(np.asarray(self.G, dtype=np.float64))
        h = np.atleast_1d(np.asarray(self.h, dtype=np.float64))
        if G.ndim != 2 or h.shape != (G.shape[0],):
            raise ValueError(f"G must be (m, S) and h (m,), got {G.shape} and {h.shape}")
        object.__setattr__(self, "G", G)
        object.__setattr__(self, "h", h)
        res = linprog(np.zeros(G.shape[1]), A_ub=G, b_ub=-h, bounds=(0, 1), method="highs")
        if res.status != 0:
            raise ValueError("the polytope {r : G r + h <= 0, 0 <= r <= 1} is empty")

    @property
    def n_states(self) -> int:  # type: ignore[override]
        return int(self.G.shape[1])

    def max_abs(self, C: np.ndarray) -> np.ndarray:
        C = self._check_C(C)
        out = np.empty(C.shape[0])
        for k, c in enumerate(C):
            best = 0.0
            for sign in (1.0, -1.0):  # max of +c^T r and -c^T r over the polytope
                res = linprog(-sign * c, A_ub=self.G, b_ub=-self.h, bounds=(0, 1), method="highs")
                best = max(best, -float(res.fun))
            out[k] = best
        return out


def canonical_rewards(S: int, states: np.ndarray | list[int]) -> FiniteRewardSet:
    """The finite set of one-hot rewards ``e_j`` for ``j`` in ``states``."""
    idx = np.asarray(states, dtype=np.int64).reshape(-1)
    if np.any(idx < 0) or np.any(idx >= S):
        raise ValueError(f"states must lie in [0, {S}), got {idx}")
    R = np.zeros((idx.size, S))
    R[np.arange(idx.size), idx] = 1.0
    return FiniteRewardSet(R)
