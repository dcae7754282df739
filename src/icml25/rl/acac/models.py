"""Actors and critics of ACAC (Jung et al., ICML 2025, Sec. 4.1) and the padded baselines.

Jung et al., *Agent-Centric Actor-Critic for Asynchronous Multi-Agent Reinforcement Learning*,
ICML 2025, https://openreview.net/forum?id=323GZNnGqe.

Dimension letters: ``b`` episodes, ``t`` primitive steps, ``n`` agents, ``d`` observation size,
``h`` hidden width, ``k`` entries of one agent's own history (its decision points).

Every critic maps a batch of episodes to values at every primitive step ``(b, t)``; the learner reads
them at the joint steps. Inputs shared by all critics:

* ``obs (b, t, n, d)``: agent ``i``'s latest macro-observation at time ``t`` (stale while it is busy);
* ``starts (b, t, n)`` bool: agent ``i`` made a decision (received a new observation) at ``t``;
* ``joint (b, t)`` bool: ``t`` starts a joint step (some agent decided);
* ``t_index (b, t)`` long: the primitive time, for the fixed sinusoidal time embedding.

:class:`AgentCentricCritic` (ours): one encoder (MLP + GRU) per agent that runs *only over that
agent's own macro-observations*; at each joint step the latest encodings of all agents, plus a
learned agent-position embedding, go through one pre-norm self-attention block (no causal mask),
a final LayerNorm, a mean over agents and a linear PopArt head. With ``duplicate=True`` (the
paper's ACAC-Duplicate ablation) the encoders run at every joint step on the stale observations.
:class:`PaddedJointCritic` (MAPPO / Naive Mac-IACC style): one GRU over the concatenation of all
agents' latest observations at every joint step -- the padding the paper removes.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from icml25.core.validate import check_positive
from icml25.nn import TransformerBlock

from .gae import compact, latest_index

__all__ = [
    "AgentCentricCritic",
    "AgentGRUActor",
    "PaddedJointCritic",
    "PopArt",
    "TimeEmbedding",
    "exploration_log_probs",
]


class TimeEmbedding(nn.Module):
    """Fixed sinusoidal table of primitive time indices (``max_t`` rows, ``dim`` columns).

    Row ``t`` is ``[sin(t w_j), cos(t w_j)]`` with ``w_j = 10000^{-2j/dim}`` (the transformer's table;
    the paper uses ``dim = 2`` and ``horizon + 5`` rows).
    """

    table: Tensor

    def __init__(self, max_t: int, dim: int = 2) -> None:
        super().__init__()
        check_positive("max_t", max_t, integer=True)
        check_positive("dim", dim, integer=True)
        pos = torch.arange(max_t, dtype=torch.float32)[:, None]
        freq = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        table = torch.zeros(max_t, dim)
        table[:, 0::2] = torch.sin(pos * freq)
        table[:, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
        self.register_buffer("table", table)
        self.max_t, self.dim = max_t, dim

    def forward(self, t: Tensor) -> Tensor:
        if t.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"t_index must be an integer tensor, got {t.dtype}")
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= self.max_t):
            raise ValueError(
                f"t_index must lie in [0, {self.max_t}), got range [{int(t.min())}, {int(t.max())}]"
            )
        out: Tensor = self.table[t]
        return out


OFFICIAL_POPART_VAR_FLOOR = 1e-2  # popart.py, debiased_mean_var: the variance is clamped at 1e-2


class PopArt(nn.Module):
    """Linear value head with adaptive target normalisation (PopArt, van Hasselt et al. 2016).

    The head predicts normalised values; :meth:`update` moves the running mean and second moment of
    the targets (``beta`` per update, with a debiasing term) and rescales the weights so that the
    denormalised predictions are unchanged. ``enabled=False`` gives a plain linear head.

    ``official=True`` computes the statistics as the official ``popart.py`` (from MAPPO's code) does:
    the debiasing term is floored at ``eps`` and the variance at 1e-2, so before the first update the
    scale is 0.1 (not 1) and the first update rescales the weights by ``0.1 / sigma``. Otherwise the
    scale is 1 before the first update and the variance is floored at ``eps``.
    """

    mean: Tensor
    mean_sq: Tensor
    debias: Tensor

    def __init__(
        self,
        in_dim: int,
        beta: float = 0.99999,
        enabled: bool = True,
        eps: float = 1e-5,
        *,
        official: bool = False,
    ) -> None:
        super().__init__()
        check_positive("in_dim", in_dim, integer=True)
        self.linear = nn.Linear(in_dim, 1)
        self.beta, self.enabled, self.eps, self.official = beta, enabled, eps, official
        self.register_buffer("mean", torch.zeros(()))
        self.register_buffer("mean_sq", torch.zeros(()))
        self.register_buffer("debias", torch.zeros(()))

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.linear(x).squeeze(-1)
        return out

    def stats(self) -> tuple[Tensor, Tensor]:
        if not self.enabled:
            return torch.zeros(()), torch.ones(())
        if self.official:
            debias = self.debias.clamp_min(self.eps)
            mu = self.mean / debias
            var = (self.mean_sq / debias - mu**2).clamp_min(OFFICIAL_POPART_VAR_FLOOR)
            return mu, var.sqrt()
        if float(self.debias) == 0.0:
            return torch.zeros(()), torch.ones(())
        mu = self.mean / self.debias
        var = (self.mean_sq / self.debias - mu**2).clamp_min(self.eps)
        return mu, var.sqrt()

    def normalize(self, y: Tensor) -> Tensor:
        mu, sigma = self.stats()
        return (y - mu) / sigma

    def denormalize(self, y: Tensor) -> Tensor:
        mu, sigma = self.stats()
        return y * sigma + mu

    @torch.no_grad()
    def update(self, targets: Tensor) -> None:
        if not self.enabled:
            return
        old_mu, old_sigma = self.stats()
        b = self.beta
        self.mean.mul_(b).add_((1 - b) * targets.mean())
        self.mean_sq.mul_(b).add_((1 - b) * (targets**2).mean())
        self.debias.mul_(b).add_(1 - b)
        mu, sigma = self.stats()
        self.linear.weight.mul_(old_sigma / sigma)
        self.linear.bias.mul_(old_sigma).add_(old_mu - mu).div_(sigma)


def _mlp(in_dim: int, width: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, width), nn.LeakyReLU(), nn.Linear(width, width), nn.LeakyReLU())


def _check_batch(obs: Tensor, starts: Tensor, joint: Tensor, t_index: Tensor, n: int, d: int) -> None:
    if not isinstance(obs, Tensor) or obs.ndim != 4 or obs.shape[2:] != (n, d):
        raise ValueError(f"obs must have shape (b, t, {n}, {d}), got {tuple(getattr(obs, 'shape', ()))}")
    if not obs.is_floating_point():
        raise TypeError(f"obs must be a floating tensor, got {obs.dtype}")
    if obs.numel() == 0:
        raise ValueError("obs is empty")
    if not torch.isfinite(obs).all():
        raise ValueError("obs contains NaN or infinite values")
    b, t = obs.shape[:2]
    for name, x, shape in (("starts", starts, (b, t, n)), ("joint", joint, (b, t))):
        if not isinstance(x, Tensor) or x.dtype != torch.bool:
            raise TypeError(f"{name} must be a bool tensor")
        if tuple(x.shape) != shape:
            raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
    if not isinstance(t_index, Tensor) or tuple(t_index.shape) != (b, t):
        raise ValueError(f"t_index must have shape {(b, t)}")


class _HistoryEncoder(nn.Module):
    """MLP + one-layer GRU over one agent's (compacted) sequence of observations."""

    def __init__(self, in_dim: int, mlp: int, rnn: int) -> None:
        super().__init__()
        self.mlp = _mlp(in_dim, mlp)
        self.gru = nn.GRU(mlp, rnn, batch_first=True)

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        out, h = self.gru(self.mlp(x), h0)
        return out, h


class AgentCentricCritic(nn.Module):
    """ACAC's centralised critic over agent-centric histories (Sec. 4.1).

    Args:
        n_agents, obs_dim: sizes.
        mlp, rnn: encoder widths (``c_mlp``, ``c_rnn``).
        n_heads: attention heads of the aggregator (2 in the paper).
        time_dim, max_t: time-embedding width and table rows (``horizon + 5``).
        popart: PopArt value head; ``popart_official`` computes its statistics as the official
            ``popart.py`` does (:class:`PopArt`).
        duplicate: the ACAC-Duplicate ablation (encoders also run on stale observations).
        attention: ``False`` replaces the attention block by an MLP on the concatenated tokens
            (the paper's ``no_sa`` ablation).
    """

    def __init__(
        self,
        n_agents: int,
        obs_dim: int,
        *,
        mlp: int = 32,
        rnn: int = 32,
        n_heads: int = 2,
        time_dim: int = 2,
        max_t: int = 105,
        popart: bool = True,
        popart_official: bool = False,
        duplicate: bool = False,
        attention: bool = True,
    ) -> None:
        super().__init__()
        for name, value in (
            ("n_agents", n_agents),
            ("obs_dim", obs_dim),
            ("mlp", mlp),
            ("rnn", rnn),
            ("n_heads", n_heads),
        ):
            check_positive(name, value, integer=True)
        if rnn % n_heads:
            raise ValueError(f"rnn ({rnn}) must be divisible by n_heads ({n_heads})")
        self.n_agents, self.obs_dim, self.duplicate = n_agents, obs_dim, duplicate
        self.time = TimeEmbedding(max_t, time_dim)
        self.encoders = nn.ModuleList(_HistoryEncoder(obs_dim + time_dim, mlp, rnn) for _ in range(n_agents))
        self.agent_pos = nn.Parameter(torch.randn(n_agents, rnn) * 0.02)
        self.block: nn.Module = (
            TransformerBlock(rnn, n_heads, mlp_ratio=4.0, activation="gelu_tanh")
            if attention
            else nn.Sequential(nn.Linear(n_agents * rnn, n_agents * rnn), nn.GELU())
        )
        self.attention = attention
        self.final_norm = nn.LayerNorm(rnn)
        self.head = PopArt(rnn, enabled=popart, official=popart_official)

    def tokens(self, obs: Tensor, starts: Tensor, joint: Tensor, t_index: Tensor) -> Tensor:
        """``(b, t, n, h)``: each agent's latest history encoding at every time (the alignment step)."""
        _check_batch(obs, starts, joint, t_index, self.n_agents, self.obs_dim)
        emb = self.time(t_index)
        out = []
        for i, enc in enumerate(self.encoders):
            own = joint if self.duplicate else starts[..., i]
            seq, _ = compact(torch.cat([obs[:, :, i], emb], -1), own)  # (b, k, d + time_dim)
            enc_out, _ = enc(seq)  # (b, k, h): the GRU sees only agent i's own observations
            idx = latest_index(own)  # (b, t)
            out.append(torch.gather(enc_out, 1, idx[..., None].expand(-1, -1, enc_out.shape[-1])))
        return torch.stack(out, 2)

    def forward(self, obs: Tensor, starts: Tensor, joint: Tensor, t_index: Tensor) -> Tensor:
        """Normalised values ``(b, t)`` (use ``head.denormalize`` for returns)."""
        tok = self.tokens(obs, starts, joint, t_index) + self.agent_pos  # (b, t, n, h)
        # Between joint steps no agent decides, so every agent's token (and hence the value) equals
        # the one at the latest joint step: aggregate at the joint steps only and broadcast.
        tok, _ = compact(tok, joint)  # (b, k, n, h)
        b, k, n, h = tok.shape
        if self.attention:
            x = self.block(tok.reshape(b * k, n, h))
        else:
            x = self.block(tok.reshape(b * k, n * h)).reshape(b * k, n, h)
        x = self.final_norm(x).mean(1)  # value_head = "mean_linear"
        v = self.head(x).reshape(b, k)
        out: Tensor = torch.gather(v, 1, latest_index(joint))
        return out


class PaddedJointCritic(nn.Module):
    """Padded centralised critic (MAPPO / Naive Mac-IACC style; the baseline of Sec. 5).

    At every joint step the input is ``concat_i(latest z_i) + time embedding``, i.e. busy agents'
    stale observations are repeated (padding), and one GRU runs over the joint steps.
    """

    def __init__(
        self,
        n_agents: int,
        obs_dim: int,
        *,
        mlp: int = 32,
        rnn: int = 32,
        time_dim: int = 2,
        max_t: int = 105,
        popart: bool = True,
        popart_official: bool = False,
    ) -> None:
        super().__init__()
        for name, value in (("n_agents", n_agents), ("obs_dim", obs_dim), ("mlp", mlp), ("rnn", rnn)):
            check_positive(name, value, integer=True)
        self.n_agents, self.obs_dim = n_agents, obs_dim
        self.time = TimeEmbedding(max_t, time_dim)
        self.encoder = _HistoryEncoder(n_agents * obs_dim + time_dim, mlp, rnn)
        self.head = PopArt(rnn, enabled=popart, official=popart_official)

    def forward(self, obs: Tensor, starts: Tensor, joint: Tensor, t_index: Tensor) -> Tensor:
        _check_batch(obs, starts, joint, t_index, self.n_agents, self.obs_dim)
        b, t = obs.shape[:2]
        x = torch.cat([obs.reshape(b, t, -1), self.time(t_index)], -1)
        seq, _ = compact(x, joint)
        enc_out, _ = self.encoder(seq)
        idx = latest_index(joint)
        feats = torch.gather(enc_out, 1, idx[..., None].expand(-1, -1, enc_out.shape[-1]))
        out: Tensor = self.head(feats)
        return out


def exploration_log_probs(logits: Tensor, eps: float) -> Tensor:
    """``log((1 - eps) softmax(logits) + eps / A)``, computed in log space (Sec. 3.3 of the repo's actor)."""
    logp = torch.log_softmax(logits, -1)
    if eps <= 0.0:
        return logp
    n_actions = logits.shape[-1]
    mix = torch.stack(
        [
            logp + math.log1p(-eps) if eps < 1.0 else torch.full_like(logp, -math.inf),
            torch.full_like(logp, math.log(eps / n_actions)),
        ],
        0,
    )
    return torch.logsumexp(mix, 0)


class AgentGRUActor(nn.Module):
    """Decentralised recurrent actor of one agent, queried only at its own decision points.

    ``[z_i, time]`` -> Linear -> LeakyReLU -> Linear -> LeakyReLU -> GRU -> Linear -> LeakyReLU ->
    LayerNorm -> Linear logits (the repo's ``AgentCentricGRUActor`` with ``use_actor_ln``).
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        *,
        mlp: int = 32,
        rnn: int = 32,
        time_dim: int = 2,
        max_t: int = 105,
    ) -> None:
        super().__init__()
        for name, value in (("obs_dim", obs_dim), ("n_actions", n_actions), ("mlp", mlp), ("rnn", rnn)):
            check_positive(name, value, integer=True)
        self.obs_dim, self.n_actions, self.rnn = obs_dim, n_actions, rnn
        self.time = TimeEmbedding(max_t, time_dim)
        self.encoder = _HistoryEncoder(obs_dim + time_dim, mlp, rnn)
        self.out = nn.Sequential(
            nn.Linear(rnn, mlp), nn.LeakyReLU(), nn.LayerNorm(mlp), nn.Linear(mlp, n_actions)
        )

    def forward(self, obs: Tensor, t_index: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Logits ``(b, k, A)`` and final hidden ``(1, b, h)`` for own-history sequences ``obs (b, k, d)``."""
        if not isinstance(obs, Tensor) or obs.ndim != 3 or obs.shape[-1] != self.obs_dim:
            raise ValueError(
                f"obs must have shape (b, k, {self.obs_dim}), got {tuple(getattr(obs, 'shape', ()))}"
            )
        if not obs.is_floating_point():
            raise TypeError(f"obs must be a floating tensor, got {obs.dtype}")
        if obs.numel() == 0:
            raise ValueError("obs is empty")
        if not torch.isfinite(obs).all():
            raise ValueError("obs contains NaN or infinite values")
        return self.step(obs, self.time(t_index), h0)

    def step(self, obs: Tensor, time_emb: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """:meth:`forward` on already-checked inputs and looked-up time embeddings ``(b, k, time_dim)``
        (the rollout's hot path: one call per primitive step)."""
        feats, h = self.encoder(torch.cat([obs, time_emb], -1), h0)
        return self.out(feats), h
