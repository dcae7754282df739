"""Exploration agents for multi-reward multi-policy evaluation (repo ``multireward_ope/tabular/agents``).

Part of our implementation of *Adaptive Exploration for Multi-Reward Multi-Policy Evaluation* (Russo
& Pacchiano, ICML 2025, https://arxiv.org/abs/2502.02516). Implements MR-NaS-PE (Alg. 1) with the PAC
stopping rule, and the exploration baselines of the paper's experiments (Sec. 5).

Every agent keeps visit counts ``N(s,a,s')``, estimates each target policy's values by exact policy
evaluation on the Dirichlet(1)-smoothed model ``P_hat`` and exposes ``act(s)`` / ``observe(s, a, s')``.

* :class:`MRNaSPE` - MR-NaS-PE (paper Alg. 1, repo ``mr_nas_pe.py``): every ``update_every`` steps solve
  ``omega_t = argmin U_eps(omega; P_hat_t)`` (LP, :func:`solve_allocation`) and play
  ``pi_t(.|s) ∝ (1 - eps_t(s)) omega_t(s, .) + eps_t(s) pi_f(.|s)`` with forced-exploration rate
  ``eps_t(s) = max(1e-3, N(s)^-alpha)`` and ``pi_f(a|s) ∝ exp(-beta_t(s) N(s,a)/N(s))``,
  ``beta_t(s) = beta N(s) log N(s) / max(1, max_a N(s,a) - min_a N(s,a))``. The repo mixes the
  *joint* ``omega(s, .)`` (default here, ``conditional=False``); ``conditional=True`` uses
  ``omega(a|s)``. Passing ``fixed_omega`` gives the "oracle-omega" reference that tracks a given
  allocation (e.g. ``omega*`` of the true model).
* :class:`NoisyPolicyAgent` - ``(1 - noise) pi_mix + noise * nu`` with ``nu`` uniform
  (``kind="uniform"``) or ``∝ max_a N(s,a) - N(s,a) + 1`` (``kind="visitation"``). ``pi_mix(a|s)`` is
  the share of target policies that take ``a`` at ``s`` (``mix="count"``, the default: the repo's
  ``mixture_policy``, ``base_agent.py`` line 72, which produced the paper's figures), or uniform over
  the distinct actions they take (``mix="uniform"``, this package's earlier form).
* :class:`GVFExplorerAgent` - GVFExplorer (arXiv 2405.07838 as in the repo): behaviour
  ``∝ sqrt(sum_{(p, r): pi_p(s) = a} M_{p,r}(s)) + 1e-7`` mixed with uniform noise, where ``M`` is the
  return variance (policy evaluation of ``gamma^2 Var_{P_hat}[V_hat]`` at discount ``gamma^2``).

Per-step work is plain Python on small lists (the chains have 2-3 actions); uniforms come from the
agent's own generator in blocks, so runs are reproducible from the seed.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from icml25.rl.mdp import check_discount, check_policy, policy_transition_matrix

from .bounds import (
    effective_bound,
    empirical_transitions,
    solve_allocation,
    stopping_statistic,
    stopping_threshold,
)
from .reward_sets import BoxRewardSet, FiniteRewardSet, RewardSet

__all__ = ["PolicyEvaluationAgent", "MRNaSPE", "NoisyPolicyAgent", "GVFExplorerAgent"]

_BLOCK = 1 << 15


class PolicyEvaluationAgent:
    """Counts, estimates and the PAC stopping rule shared by every exploration agent.

    Args:
        n_states, n_actions: sizes of the MDP.
        policies: deterministic target policies, each (S,).
        reward_sets: one :class:`RewardSet` per policy.
        gamma: discount in [0, 1); eps: accuracy > 0; delta: confidence in (0, 1).
        rng: the generator every random choice of the agent uses.
    """

    name = "agent"

    def __init__(
        self,
        n_states: int,
        n_actions: int,
        policies: Sequence[np.ndarray],
        reward_sets: Sequence[RewardSet],
        *,
        gamma: float = 0.9,
        eps: float = 0.1,
        delta: float = 0.01,
        rng: np.random.Generator,
    ) -> None:
        if n_states < 1 or n_actions < 1:
            raise ValueError(f"n_states and n_actions must be >= 1, got {n_states}, {n_actions}")
        if not policies or len(policies) != len(reward_sets):
            raise ValueError("give at least one policy and exactly one reward set per policy")
        self.S, self.A = int(n_states), int(n_actions)
        self.policies = [
            check_policy(pi, self.S, self.A, name=f"policies[{i}]") for i, pi in enumerate(policies)
        ]
        for i, rs in enumerate(reward_sets):
            if rs.n_states != self.S:
                raise ValueError(f"reward_sets[{i}] is over {rs.n_states} states, expected {self.S}")
        self.reward_sets = list(reward_sets)
        self.gamma = check_discount(gamma)
        if eps <= 0:
            raise ValueError(f"eps must be positive, got {eps}")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {delta}")
        self.eps, self.delta = float(eps), float(delta)
        self.rng = rng
        self.t = 0
        self._n_s = [0] * self.S
        self._n_sa = [[0] * self.A for _ in range(self.S)]
        self._n_sas = np.zeros((self.S, self.A, self.S), dtype=np.int64)
        self._u: list[float] = []
        self._ui = 0
        # how many target policies take each action at s (pi_mix and its support)
        self._target_counts = np.zeros((self.S, self.A), dtype=np.int64)
        for pi in self.policies:
            self._target_counts[np.arange(self.S), pi] += 1

    # -- randomness ---------------------------------------------------------------------------

    def _uniform(self) -> float:
        if self._ui >= len(self._u):
            self._u = self.rng.random(_BLOCK).tolist()
            self._ui = 0
        u = self._u[self._ui]
        self._ui += 1
        return u

    def _sample(self, weights: Sequence[float]) -> int:
        total = 0.0
        cum = []
        for w in weights:
            total += w
            cum.append(total)
        return min(bisect.bisect_right(cum, self._uniform() * total), len(cum) - 1)

    # -- the agent API ------------------------------------------------------------------------

    def act(self, s: int) -> int:
        raise NotImplementedError

    def observe(self, s: int, a: int, s_next: int) -> None:
        """Record the transition ``(s, a, s')`` and run the agent's periodic update."""
        self._n_s[s] += 1
        self._n_sa[s][a] += 1
        self._n_sas[s, a, s_next] += 1
        self.t += 1
        self._after_step()

    def _after_step(self) -> None:
        """Hook for periodic updates (called after the counts include step ``t``)."""

    @property
    def counts_sa(self) -> np.ndarray:
        """``N(s, a)`` as an (S, A) array."""
        return np.asarray(self._n_sa, dtype=np.float64)

    @property
    def counts_sas(self) -> np.ndarray:
        return self._n_sas.copy()

    def model(self) -> np.ndarray:
        """Empirical model ``P_hat`` with a Dirichlet(1) prior, (S, A, S)."""
        return empirical_transitions(self._n_sas, prior=1.0)

    def resolvents(self, P_hat: np.ndarray | None = None) -> list[np.ndarray]:
        """``G_hat^pi = (I - gamma P_hat^pi)^{-1}`` for every target policy."""
        P_hat = self.model() if P_hat is None else P_hat
        eye = np.eye(self.S)
        return [
            np.linalg.solve(eye - self.gamma * policy_transition_matrix(P_hat, pi), eye)
            for pi in self.policies
        ]

    def estimates(self) -> list[np.ndarray]:
        """Value estimates per policy: (S, n_rewards) for a finite set, (S, S) (basis rewards) for a box."""
        out = []
        for G, rs in zip(self.resolvents(), self.reward_sets, strict=True):
            out.append(G @ rs.rewards.T if isinstance(rs, FiniteRewardSet) else G)
        return out

    def stopping_ratio(self) -> float:
        """``Z_t / beta(N_t, delta)``; the PAC stopping rule fires when this reaches 1."""
        A_eff = effective_bound(self.model(), self.policies, self.reward_sets, self.gamma)
        Z = stopping_statistic(self.counts_sa, A_eff, self.gamma, self.eps)
        return Z / stopping_threshold(self.counts_sa, self.delta)

    def should_stop(self) -> bool:
        """The stopping rule ``t / U_eps(N_t/t; P_hat_t) >= beta(N_t, delta)``."""
        return self.stopping_ratio() >= 1.0


class MRNaSPE(PolicyEvaluationAgent):
    """MR-NaS-PE: track the allocation minimising the convex bound on the empirical model.

    Extra args:
        update_every: ``T_upd``, steps between allocation solves (repo 500).
        alpha: forced-exploration exponent (0.99); beta: exploration temperature scale (0.01).
        averaged: use the running (Cesaro) mean of the solved allocations (repo yaml: False).
        conditional: mix ``omega(a|s)`` instead of the joint ``omega(s, a)`` (repo form: False).
        fixed_omega: track this allocation and never re-solve (the oracle-omega reference).
    """

    name = "mr_nas"

    def __init__(
        self,
        n_states: int,
        n_actions: int,
        policies: Sequence[np.ndarray],
        reward_sets: Sequence[RewardSet],
        *,
        gamma: float = 0.9,
        eps: float = 0.1,
        delta: float = 0.01,
        rng: np.random.Generator,
        update_every: int = 500,
        alpha: float = 0.99,
        beta: float = 0.01,
        averaged: bool = False,
        conditional: bool = False,
        fixed_omega: np.ndarray | None = None,
    ) -> None:
        super().__init__(
            n_states, n_actions, policies, reward_sets, gamma=gamma, eps=eps, delta=delta, rng=rng
        )
        if update_every < 1:
            raise ValueError(f"update_every must be >= 1, got {update_every}")
        if not 0 < alpha + beta <= 1 or alpha <= 0 or beta < 0:
            raise ValueError(f"need alpha > 0, beta >= 0 and 0 < alpha + beta <= 1, got {alpha}, {beta}")
        self.update_every, self.alpha, self.beta = int(update_every), float(alpha), float(beta)
        self.averaged, self.conditional = bool(averaged), bool(conditional)
        self.fixed = fixed_omega is not None
        if fixed_omega is not None:
            om = np.asarray(fixed_omega, dtype=np.float64)
            if om.shape != (self.S, self.A) or np.any(om < 0) or om.sum() <= 0:
                raise ValueError(f"fixed_omega must be non-negative with shape ({self.S}, {self.A})")
            self.omega = om / om.sum()
        else:
            self.omega = np.ones((self.S, self.A))  # repo initialisation: all ones
        self.n_updates = 0
        self._set_rows()

    def _set_rows(self) -> None:
        om = self.omega
        if self.conditional:
            om = om / np.maximum(om.sum(axis=1, keepdims=True), 1e-300)
        self._rows: list[list[float]] = om.tolist()

    def _after_step(self) -> None:
        if not self.fixed and self.t % self.update_every == 0:
            self.update_allocation()

    def update_allocation(self) -> None:
        """Solve ``omega_t = argmin_omega U_eps(omega; P_hat_t)`` and (optionally) average it."""
        P_hat = self.model()
        A_eff = effective_bound(P_hat, self.policies, self.reward_sets, self.gamma)
        omega = solve_allocation(P_hat, A_eff, self.gamma, self.eps).omega
        if self.averaged and self.n_updates > 0:
            k = self.n_updates
            omega = (k * self.omega + omega) / (k + 1)
        self.omega = omega
        self.n_updates += 1
        self._set_rows()

    def act(self, s: int) -> int:
        n_s = self._n_s[s]
        row = self._n_sa[s]
        if n_s == 0:
            eps_t = 1.0
            pf = [1.0] * self.A
            z = float(self.A)
        else:
            eps_t = max(1e-3, n_s ** (-self.alpha))  # forced exploration eps_t(s) = max(1e-3, N(s)^-alpha)
            spread = max(1, max(row) - min(row))
            beta_t = self.beta * n_s * math.log(n_s) / spread  # beta_t(s)
            logits = [-beta_t * n / n_s for n in row]  # pi_f ∝ exp(-beta_t N(s,a)/N(s)) via log-sum-exp
            m = max(logits)
            pf = [math.exp(v - m) for v in logits]
            z = sum(pf)
        om = self._rows[s]
        return self._sample([(1 - eps_t) * om[a] + eps_t * pf[a] / z for a in range(self.A)])


class NoisyPolicyAgent(PolicyEvaluationAgent):
    """Noisy target policies: ``(1 - noise) pi_mix(.|s) + noise nu(.|s)`` (repo ``noisy_policy.py``).

    The baseline of the paper's experiments (Sec. 5). Extra args:
        kind: noise ``nu``: ``"uniform"`` (repo yaml: noise 0.3) or ``"visitation"``,
            ``nu ∝ max_a N(s,a) - N(s,a) + 1`` with N floored at 1 (repo yaml: noise 0.15).
        noise: the mixing weight of ``nu``, in [0, 1].
        mix: the noise-free part ``pi_mix``. ``"count"`` (default, the repo's ``mixture_policy`` in
            ``base_agent.py``, which produced the paper's figures): ``pi_mix(a|s) = #{p: pi_p(s) = a} /
            #policies``, so an action two of three policies take gets 2/3. ``"uniform"``: equal weight
            on each distinct action the target policies take at ``s`` (1/2 each in that example).
            The two agree with one target policy, or where the policies all differ or all agree.
    """

    def __init__(
        self,
        n_states: int,
        n_actions: int,
        policies: Sequence[np.ndarray],
        reward_sets: Sequence[RewardSet],
        *,
        gamma: float = 0.9,
        eps: float = 0.1,
        delta: float = 0.01,
        rng: np.random.Generator,
        kind: Literal["uniform", "visitation"] = "uniform",
        noise: float = 0.3,
        mix: Literal["count", "uniform"] = "count",
    ) -> None:
        super().__init__(
            n_states, n_actions, policies, reward_sets, gamma=gamma, eps=eps, delta=delta, rng=rng
        )
        if kind not in ("uniform", "visitation"):
            raise ValueError(f"kind must be 'uniform' or 'visitation', got {kind!r}")
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must lie in [0, 1], got {noise}")
        if mix not in ("count", "uniform"):
            raise ValueError(f"mix must be 'count' (the repo's) or 'uniform', got {mix!r}")
        self.kind, self.noise, self.mix = kind, float(noise), mix
        self.name = f"noisy_{kind}"
        self._mix = self.behaviour_without_noise().tolist()

    def behaviour_without_noise(self) -> np.ndarray:
        """``pi_mix`` (S, A), the noise-free part of the behaviour (paper Sec. 5 baseline).

        ``mix="count"``: ``pi_mix(a|s) = #{p: pi_p(s) = a} / #policies`` (repo ``base_agent.py``,
        ``mixture_policy = policies.sum(0) / policies.sum(0).sum(-1)``); ``mix="uniform"``: equal
        weight on each distinct action some target policy takes at ``s``.
        """
        counts = self._target_counts.astype(np.float64)
        if self.mix == "uniform":
            counts = (counts > 0).astype(np.float64)
        return counts / counts.sum(axis=1, keepdims=True)

    def stationary_behaviour(self) -> np.ndarray:
        """The behaviour with uniform noise (the visitation noise tends to it as counts even out)."""
        return (1 - self.noise) * self.behaviour_without_noise() + self.noise / self.A

    def act(self, s: int) -> int:
        mix = self._mix[s]
        if self.kind == "uniform":
            nu = [1.0 / self.A] * self.A
        else:
            row = [max(n, 1) for n in self._n_sa[s]]
            top = max(row)
            w = [top - n + 1 for n in row]  # nu ∝ max_a N(s,a) - N(s,a) + 1
            tot = float(sum(w))
            nu = [v / tot for v in w]
        return self._sample([(1 - self.noise) * mix[a] + self.noise * nu[a] for a in range(self.A)])


class GVFExplorerAgent(PolicyEvaluationAgent):
    """GVFExplorer: behaviour ∝ sqrt of the summed return variances of the target GVFs, plus noise."""

    name = "gvf_explorer"

    def __init__(
        self,
        n_states: int,
        n_actions: int,
        policies: Sequence[np.ndarray],
        reward_sets: Sequence[RewardSet],
        *,
        gamma: float = 0.9,
        eps: float = 0.1,
        delta: float = 0.01,
        rng: np.random.Generator,
        noise: float = 0.3,
        update_every: int = 500,
    ) -> None:
        super().__init__(
            n_states, n_actions, policies, reward_sets, gamma=gamma, eps=eps, delta=delta, rng=rng
        )
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must lie in [0, 1], got {noise}")
        if update_every < 1:
            raise ValueError(f"update_every must be >= 1, got {update_every}")
        self.noise, self.update_every = float(noise), int(update_every)
        self._rewards = [
            rs.rewards if isinstance(rs, FiniteRewardSet) else np.eye(self.S)  # box: canonical basis
            for rs in self.reward_sets
        ]
        if not all(isinstance(rs, FiniteRewardSet | BoxRewardSet) for rs in self.reward_sets):
            raise ValueError("GVFExplorer needs finite (or box, read as its basis) reward sets")
        self.behaviour = np.full((self.S, self.A), 1.0 / self.A)
        self._rows = self.behaviour.tolist()

    def _after_step(self) -> None:
        if self.t % self.update_every == 0:
            self.update_behaviour()

    def update_behaviour(self) -> None:
        """Recompute the variance-driven behaviour from the empirical model."""
        P_hat = self.model()
        g2 = self.gamma**2
        eye = np.eye(self.S)
        score = np.zeros((self.S, self.A))
        for pi, R in zip(self.policies, self._rewards, strict=True):
            P_pi = policy_transition_matrix(P_hat, pi)
            V = np.linalg.solve(eye - self.gamma * P_pi, R.T)  # (S, k) value of each GVF
            var = P_pi @ V**2 - (P_pi @ V) ** 2  # Var_{P_hat}[V(s')]
            M = np.linalg.solve(eye - g2 * P_pi, g2 * np.clip(var, 0, None))  # return variance
            score[np.arange(self.S), pi] += M.sum(axis=1)
        w = np.sqrt(score) + 1e-7
        beh = w / w.sum(axis=1, keepdims=True)
        self.behaviour = (1 - self.noise) * beh + self.noise / self.A
        self._rows = self.behaviour.tolist()

    def act(self, s: int) -> int:
        return self._sample(self._rows[s])
