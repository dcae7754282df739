"""Categorical reference processes for *Categorical Schrödinger Bridge Matching* (CSBM; Ksenofontov and
Korotin, ICML 2025, arXiv 2502.01416), Sec. 3-4.

A reference is a time-homogeneous Markov chain on the finite state space ``{0, ..., S-1}`` applied
independently to each of ``D`` coordinates, with ``N`` intermediate steps between the two ends
(indices ``0, ..., N+1``). Index 0 is the "start" side (the target of a translation) and index
``N+1`` the "end" side (the source), as in the official code. Everything the D-IMF projections need
follows from the one-step matrix ``Q`` (row = from-state) and its powers ``Qbar_t = Q^t``:

* the reference bridge ``q(x_t | x_0, x_{N+1}) ∝ Qbar_t[x_0, x_t] Qbar_{N+1-t}[x_t, x_{N+1}]``;
* the D3PM posterior ``q(x_{t-1} | x_t, x_0) ∝ Q[x_{t-1}, x_t] Qbar_{t-1}[x_0, x_{t-1}]``;
* the learned one-step kernel that mixes this posterior over a predicted ``x_0``.

Two one-step kernels (D3PM's): ``uniform(α)`` keeps the state with probability ``1-α`` and otherwise
jumps uniformly; ``gaussian(α)`` is the discretised Gaussian ``Q_ij ∝ exp(-4 (i-j)^2 / (α (S-1))^2)``
off the diagonal, with the remainder on the diagonal. ``skip`` raises ``Q`` to that power.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from icml25.core.validate import check_fields, check_positive

__all__ = ["ReferenceConfig", "CategoricalReference", "one_step_matrix"]

Kind = Literal["uniform", "gaussian"]
_EPS = 1e-300  # floor inside the logs (the official code uses 1e-6 to 1e-20)


def one_step_matrix(kind: str, n_states: int, alpha: float) -> Tensor:
    """The ``(S, S)`` row-stochastic one-step matrix of the ``uniform`` or ``gaussian`` kernel (float64)."""
    check_positive("n_states", n_states, integer=True)
    check_positive("alpha", alpha)
    if n_states < 2:
        raise ValueError(f"n_states must be >= 2, got {n_states}")
    s = n_states
    if kind == "uniform":
        if alpha > 1:
            raise ValueError(f"alpha must be in (0, 1] for the uniform kernel, got {alpha}")
        q = torch.full((s, s), alpha / (s - 1), dtype=torch.float64)
        q.fill_diagonal_(1.0 - alpha)
        return q
    if kind == "gaussian":
        width = alpha * (s - 1)
        k = torch.arange(-(s - 1), s, dtype=torch.float64)
        z = torch.exp(-4.0 * k**2 / width**2).sum()
        i = torch.arange(s, dtype=torch.float64)
        q = torch.exp(-4.0 * (i[:, None] - i[None, :]) ** 2 / width**2) / z
        q.fill_diagonal_(0.0)
        q += torch.diag(1.0 - q.sum(1))
        return q
    raise ValueError(f"kind must be 'uniform' or 'gaussian', got {kind!r}")


@dataclass(frozen=True)
class ReferenceConfig:
    """The reference chain: ``kind``, ``n_states`` S, ``alpha``, ``n_steps`` N (intermediate), ``skip``.

    ``log_eps = 0`` takes exact logs (a 1e-300 floor); the official code's ``log(p + 1e-20)`` is
    ``log_eps=1e-20``. ``raw_first_step`` makes the learned kernel at ``t = 1`` return the predicted
    ``x_0`` distribution unchanged (the official code) instead of the posterior mixed over it.
    """

    kind: Kind = "gaussian"
    n_states: int = 50
    alpha: float = 0.02
    n_steps: int = 10
    skip: int = 10
    log_eps: float = 0.0
    raw_first_step: bool = False

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("n_states", "n_steps", "skip"), positive=("alpha",))
        check_fields(self, non_negative=("log_eps",))
        if self.kind not in ("uniform", "gaussian"):
            raise ValueError(f"ReferenceConfig.kind must be 'uniform' or 'gaussian', got {self.kind!r}")
        if self.n_states < 2:
            raise ValueError(f"ReferenceConfig.n_states must be >= 2, got {self.n_states}")


class CategoricalReference:
    """The reference Markov chain with its cumulative matrices, bridge and D3PM posterior.

    ``Q`` is the one-step matrix (already raised to ``skip``), ``Qbar[t] = Q^t`` for ``t = 0..N+1``,
    all float64. Methods take integer states of any shape and work per coordinate.
    """

    def __init__(self, config: ReferenceConfig) -> None:
        if not isinstance(config, ReferenceConfig):
            raise TypeError(f"config must be a ReferenceConfig, got {type(config).__name__}")
        self.config = config
        self.S = config.n_states
        self.N = config.n_steps
        base = one_step_matrix(config.kind, config.n_states, config.alpha)
        self.Q = torch.linalg.matrix_power(base, config.skip)
        mats = [torch.eye(self.S, dtype=torch.float64)]
        for _ in range(self.N + 1):
            mats.append(mats[-1] @ self.Q)
        self.Qbar = torch.stack(mats)  # (N+2, S, S)
        self._logQ = _log(self.Q, config.log_eps)
        self._logQbar = _log(self.Qbar, config.log_eps)

    # -- validation -----------------------------------------------------------------------------

    def _states(self, name: str, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of integer states, got {type(x).__name__}")
        if x.dtype.is_floating_point or x.dtype == torch.bool or x.is_complex():
            raise TypeError(f"{name} must hold integer states, got dtype {x.dtype}")
        if x.numel() == 0:
            raise ValueError(f"{name} is empty (shape {tuple(x.shape)})")
        if int(x.min()) < 0 or int(x.max()) >= self.S:
            raise ValueError(
                f"{name} must lie in [0, {self.S - 1}], got range [{int(x.min())}, {int(x.max())}]"
            )
        return x.long()

    def _times(self, name: str, t: Tensor | int, shape: torch.Size, low: int, high: int) -> Tensor:
        tt = torch.as_tensor(t)
        if tt.dtype.is_floating_point or tt.dtype == torch.bool:
            raise TypeError(f"{name} must be integer time indices, got dtype {tt.dtype}")
        tt = tt.long()
        if tt.numel() == 0 or int(tt.min()) < low or int(tt.max()) > high:
            raise ValueError(f"{name} must lie in [{low}, {high}]")
        if tt.ndim == 0:
            return tt.expand(shape[:1]) if len(shape) else tt
        if tt.shape != shape[:1]:
            raise ValueError(f"{name} must be a scalar or have shape ({shape[0]},), got {tuple(tt.shape)}")
        return tt

    @staticmethod
    def _bcast(t: Tensor, ref: Tensor) -> Tensor:
        return t.reshape(t.shape + (1,) * (ref.ndim - t.ndim)).expand_as(ref)

    # -- bridge ---------------------------------------------------------------------------------

    def bridge_logits(self, x_start: Tensor, x_end: Tensor, t: Tensor | int) -> Tensor:
        """``log q(x_t = · | x_0, x_{N+1})`` up to a constant, shape ``x_start.shape + (S,)``.

        ``t`` is a scalar or one index per row (first dimension), in ``[0, N+1]``.
        """
        x0 = self._states("x_start", x_start)
        x1 = self._states("x_end", x_end)
        if x0.shape != x1.shape:
            raise ValueError(
                f"x_start and x_end must have the same shape, got {tuple(x0.shape)} and {tuple(x1.shape)}"
            )
        tt = self._bcast(self._times("t", t, x0.shape, 0, self.N + 1), x0)
        left = self._logQbar[tt, x0]  # (..., S): log Qbar_t[x0, ·]
        right = self._logQbar[self.N + 1 - tt, :, x1]  # (..., S): log Qbar_{N+1-t}[·, x1]
        return left + right

    def bridge_probs(self, x_start: Tensor, x_end: Tensor, t: Tensor | int) -> Tensor:
        """The normalised bridge ``q(x_t | x_0, x_{N+1})`` (float64)."""
        return torch.softmax(self.bridge_logits(x_start, x_end, t), dim=-1)

    def sample_bridge(
        self, x_start: Tensor, x_end: Tensor, t: Tensor | int, generator: torch.Generator | None = None
    ) -> Tensor:
        """Draw ``x_t ~ q(x_t | x_0, x_{N+1})`` per coordinate (Gumbel-max over the bridge logits)."""
        logits = self.bridge_logits(x_start, x_end, t)
        return _gumbel_argmax(logits, generator)

    # -- posterior and learned kernel -----------------------------------------------------------

    def posterior_probs(self, x_t: Tensor, x_start: Tensor, t: Tensor | int) -> Tensor:
        """D3PM posterior ``q(x_{t-1} | x_t, x_0) ∝ Q[x_{t-1}, x_t] Qbar_{t-1}[x_0, x_{t-1}]``, t = 1..N+1."""
        xt = self._states("x_t", x_t)
        x0 = self._states("x_start", x_start)
        if xt.shape != x0.shape:
            raise ValueError(
                f"x_t and x_start must have the same shape, got {tuple(xt.shape)} and {tuple(x0.shape)}"
            )
        tt = self._bcast(self._times("t", t, xt.shape, 1, self.N + 1), xt)
        logits = self._logQ[:, xt].movedim(0, -1) + self._logQbar[tt - 1, x0]
        return torch.softmax(logits, dim=-1)

    def model_step_probs(self, x_t: Tensor, start_probs: Tensor, t: Tensor | int) -> Tensor:
        """``p(x_{t-1} | x_t) ∝ Q[x_{t-1}, x_t] Σ_x0 p(x_0 | x_t) Qbar_{t-1}[x_0, x_{t-1}]``.

        ``start_probs`` has shape ``x_t.shape + (S,)`` (the predicted distribution of ``x_0``); the
        result has the same shape and dtype as ``start_probs``.
        """
        xt = self._states("x_t", x_t)
        if not isinstance(start_probs, Tensor) or not start_probs.is_floating_point():
            raise TypeError("start_probs must be a floating-point torch.Tensor")
        if start_probs.shape != xt.shape + (self.S,):
            raise ValueError(
                f"start_probs must have shape {tuple(xt.shape) + (self.S,)}, got {tuple(start_probs.shape)}"
            )
        tt = self._times("t", t, xt.shape, 1, self.N + 1)
        qbar = self.Qbar.to(start_probs.dtype)[tt - 1]  # (B, S, S)
        flat = start_probs.reshape(start_probs.shape[0], -1, self.S)
        mixed = torch.bmm(flat, qbar).reshape(start_probs.shape)  # Σ_x0 p(x0) Qbar_{t-1}[x0, ·]
        lik = self.Q.to(start_probs.dtype)[:, xt].movedim(0, -1)  # Q[·, x_t]
        unnorm = (mixed * lik).clamp_min(0.0)
        out = unnorm / unnorm.sum(-1, keepdim=True).clamp_min(torch.finfo(unnorm.dtype).tiny)
        if self.config.raw_first_step:  # the official kernel at t = 1: the prediction itself
            first = self._bcast(tt == 1, out[..., 0])[..., None]
            out = torch.where(first, start_probs, out)
        return out


def _log(p: Tensor, eps: float) -> Tensor:
    return (p + eps).log() if eps > 0 else p.clamp_min(_EPS).log()


def _gumbel_argmax(logits: Tensor, generator: torch.Generator | None) -> Tensor:
    u = torch.rand(logits.shape, generator=generator, dtype=torch.float64).clamp(1e-20, 1.0 - 1e-12)
    return (logits.double() - torch.log(-torch.log(u))).argmax(-1)
