"""Linear multi-objective MDPs with lexicographic structure, generated in code.

Part of our implementation of *Multi-objective Linear Reinforcement Learning with Lexicographic
Rewards* (Xue et al., ICML 2025, https://openreview.net/forum?id=RTHTyTsRT3). Implements the
episodic linear MOMDP of the paper's problem setting (transitions and every reward linear in a
known feature map, or eps-close to linear for Theorem 2) and, since the paper has no experiments,
our own test instances.

``LinearMOMDP`` is a finite, time-homogeneous, episodic MDP with ``m`` reward functions and a
feature map ``phi (S, A, d)``. With one-hot features (``d = S A``) every tabular MDP is an exact
linear MDP; :func:`misspecify` swaps in low-rank random-projection features, for which the model is
only ``eps``-linear (``eps`` measured as the sup-norm / total-variation residual of the best linear
fit). :func:`make_lex_tabular_mdp` is our generator: exact objective-1 ties between actions
0 and 1, a "tempting" action 2 that trades a loss ``gap`` on objective 1 for a gain ``lam0 * gap`` on
objective 2 (same continuation, so the trade-off ratio is exactly ``lam0``), and a dominated action
3 with its own transition row. With ``m = 3`` a fifth action copies action 1 on objectives 1-2 and
wins on objective 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icml25.core.validate import check_in_range, check_positive
from icml25.rl.mdp import check_transitions

__all__ = ["LinearMOMDP", "LexEpisodeEnv", "make_lex_tabular_mdp", "misspecify", "one_hot_features"]


def one_hot_features(S: int, A: int) -> np.ndarray:
    """Tabular features ``phi(x, a) = e_{x A + a}``, shape (S, A, S A)."""
    check_positive("S", S, integer=True)
    check_positive("A", A, integer=True)
    return np.eye(S * A).reshape(S, A, S * A)


@dataclass(frozen=True)
class LinearMOMDP:
    """Episodic multi-objective MDP with features.

    Args:
        P: transitions (S, A, S), the same at every step.
        R: mean rewards (m, S, A) in [0, 1]; observed rewards are Bernoulli with these means.
        phi: features (S, A, d) with ``||phi(x, a)|| <= 1``.
        H: horizon; x1: initial state.
        misspecification: the measured ``eps`` (0 for exact linear features).
    """

    P: np.ndarray
    R: np.ndarray
    phi: np.ndarray
    H: int
    x1: int = 0
    misspecification: float = 0.0

    def __post_init__(self) -> None:
        P = check_transitions(self.P)
        S, A = P.shape[:2]
        R = np.asarray(self.R, dtype=np.float64)
        if R.ndim != 3 or R.shape[1:] != (S, A) or R.shape[0] < 1:
            raise ValueError(f"R must have shape (m, {S}, {A}), got {R.shape}")
        if R.min() < 0 or R.max() > 1:
            raise ValueError("reward means R must lie in [0, 1]")
        phi = np.asarray(self.phi, dtype=np.float64)
        if phi.ndim != 3 or phi.shape[:2] != (S, A):
            raise ValueError(f"phi must have shape ({S}, {A}, d), got {phi.shape}")
        if np.linalg.norm(phi, axis=2).max() > 1 + 1e-9:
            raise ValueError("features must satisfy ||phi(x, a)|| <= 1")
        check_positive("LinearMOMDP.H", self.H, integer=True)
        check_in_range("LinearMOMDP.x1", self.x1, 0, S, high_open=True)
        for name, arr in (("P", P), ("R", R), ("phi", phi)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def n_states(self) -> int:
        return int(self.P.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.P.shape[1])

    @property
    def n_objectives(self) -> int:
        return int(self.R.shape[0])

    @property
    def dim(self) -> int:
        return int(self.phi.shape[2])

    def step(self, h: int, x: int, a: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """Sample the reward vector (m,) and the next state of ``(x, a)`` at step ``h``."""
        r = (rng.random(self.n_objectives) < self.R[:, x, a]).astype(np.float64)
        idx = int(np.searchsorted(np.cumsum(self.P[x, a]), rng.random(), side="right"))
        x_next = min(idx, self.n_states - 1)
        return r, x_next

    def to_env(self) -> LexEpisodeEnv:
        return LexEpisodeEnv(self)


class LexEpisodeEnv(gym.Env[int, int]):
    """gymnasium view of a :class:`LinearMOMDP`: ``reward`` is objective 1, ``info["rewards"]`` the vector.

    The episode terminates after ``H`` steps; ``info["h"]`` is the step index of the next action.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, mdp: LinearMOMDP) -> None:
        self.mdp = mdp
        self.observation_space = spaces.Discrete(mdp.n_states)  # type: ignore[assignment]
        self.action_space = spaces.Discrete(mdp.n_actions)  # type: ignore[assignment]
        self._rng = np.random.default_rng()
        self.h, self.x = 0, mdp.x1

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.h, self.x = 0, self.mdp.x1
        return self.x, {"h": 0}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        if not 0 <= int(action) < self.mdp.n_actions:
            raise ValueError(f"action must lie in [0, {self.mdp.n_actions}), got {action}")
        if self.h >= self.mdp.H:
            raise RuntimeError("episode is over: call reset()")
        r, x_next = self.mdp.step(self.h, self.x, int(action), self._rng)
        self.h += 1
        self.x = x_next
        return x_next, float(r[0]), self.h >= self.mdp.H, False, {"rewards": r, "h": self.h}


def _lex_dominated_ok(P: np.ndarray, R: np.ndarray, H: int, margin: float) -> np.ndarray:
    """States where action 3 is objective-1-suboptimal by at least ``margin`` at every step."""
    from .dp import lexicographic_optimal_policy

    pi, _, Q = lexicographic_optimal_policy(P, R, H)
    best = Q[0].max(axis=2)  # (H, S)
    return np.all(best - Q[0][:, :, 3] >= margin, axis=0)


def make_lex_tabular_mdp(
    S: int = 6,
    H: int = 5,
    m: int = 2,
    *,
    gap: float = 0.2,
    lam0: float = 2.0,
    dominated_margin: float = 0.05,
    seed: int = 0,
) -> LinearMOMDP:
    """Our tabular linear MOMDP with exact objective-1 ties and trade-off ratio ``lam0``.

    Per state ``x``: ``u ~ U(0.3, 0.7)``; actions 0, 1, 2 share a Dirichlet(0.5) row; action 3 has its
    own. Objective 1: ``(u, u, u - gap, u - 0.3)``; objective 2: ``(0.2, 0.6, 0.6 + lam0 gap, 0.1)``.
    ``m = 3`` adds action 4 (copy of action 1 on objectives 1-2) and objective 3
    ``(0.5, 0.3, 0.5, 0.1, 0.7)``. States where action 3 would be objective-1-optimal (through its
    continuation) or within ``dominated_margin`` of it are resampled. Features are one-hot.
    """
    if S < 2 or H < 1 or m not in (2, 3):
        raise ValueError(f"need S >= 2, H >= 1 and m in (2, 3), got S={S}, H={H}, m={m}")
    if not 0 < gap <= 0.3 or lam0 <= 0 or 0.6 + lam0 * gap > 1.0:
        raise ValueError(f"need 0 < gap <= 0.3, lam0 > 0 and 0.6 + lam0 * gap <= 1, got {gap}, {lam0}")
    rng = np.random.default_rng(seed)
    A = 4 if m == 2 else 5
    P = np.zeros((S, A, S))
    R = np.zeros((m, S, A))

    def draw(x: int) -> None:
        u = rng.uniform(0.3, 0.7)
        row, own = rng.dirichlet(np.full(S, 0.5)), rng.dirichlet(np.full(S, 0.5))
        for a in (0, 1, 2) + ((4,) if m == 3 else ()):
            P[x, a] = row
        P[x, 3] = own
        R[0, x, :4] = (u, u, u - gap, u - 0.3)
        R[1, x, :4] = (0.2, 0.6, 0.6 + lam0 * gap, 0.1)
        if m == 3:
            R[0, x, 4], R[1, x, 4] = u, 0.6
            R[2, x] = (0.5, 0.3, 0.5, 0.1, 0.7)

    for x in range(S):
        draw(x)
    for _ in range(200):
        ok = _lex_dominated_ok(P, R, H, dominated_margin)
        if ok.all():
            break
        for bad in np.flatnonzero(~ok):
            draw(int(bad))
    else:
        raise RuntimeError("could not generate an instance with a dominated action 3; change the seed")
    return LinearMOMDP(P=P, R=R, phi=one_hot_features(S, A), H=H, x1=0)


def misspecify(mdp: LinearMOMDP, d: int = 8, *, seed: int = 0) -> LinearMOMDP:
    """Replace the features by a rank-``d`` random projection of the one-hot features.

    ``misspecification`` is set to the larger of the reward sup-norm residual and the transition
    total-variation residual of the best least-squares linear fit on the new features.
    """
    S, A = mdp.n_states, mdp.n_actions
    if not 1 <= d <= S * A:
        raise ValueError(f"d must lie in [1, {S * A}], got {d}")
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(d, S * A))
    W /= np.linalg.norm(W, axis=0, keepdims=True)  # ||phi(x, a)|| = 1
    phi = W.T.reshape(S, A, d)
    F = phi.reshape(S * A, d)
    proj = F @ np.linalg.pinv(F)  # least-squares fit onto span(phi)
    R = mdp.R.reshape(mdp.n_objectives, S * A)
    eps_r = float(np.abs(R - R @ proj.T).max())
    Pm = mdp.P.reshape(S * A, S)
    eps_p = float(0.5 * np.abs(Pm - proj @ Pm).sum(axis=1).max())
    return LinearMOMDP(P=mdp.P, R=mdp.R, phi=phi, H=mdp.H, x1=mdp.x1, misspecification=max(eps_r, eps_p))
