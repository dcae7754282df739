"""ECON's trainable parts: belief networks, the belief encoder, the mixer and the BNE refinement.

Paper: Xie et al., *From Debate to Equilibrium: Belief-Driven Multi-Agent LLM Reasoning via
Bayesian Nash Equilibrium*, ICML 2025 (arXiv 2506.08292), Sec. 3 and the public code's modules.

* :class:`BeliefNetwork` - agent i's belief ``b_i`` from its local observation (an embedding of the
  question and the coordinator's strategy) and, as a belief about the others, the mean embedding
  of the other executors' most recent responses. Heads: a per-action value ``Q_i(b_i, a)`` and a
  policy over a discrete grid of decoding strategies (prompt style x temperature x top-p). The
  paper maps ``b_i`` to a continuous prompt embedding ``e_i = [T_i, p_i]``; we discretise e into a
  grid and train a softmax policy (our fix for the public code never optimising e against Q).
  The paper's belief network is a 2-layer transformer over GPT-2 tokens; ours is an MLP over a
  hashing embedding (a CPU choice).
* :class:`BeliefEncoder` - self-attention over the N beliefs, residual + LayerNorm, FFN, mean over
  agents and a linear map: the group representation ``E``.
* :class:`ECONMixer` - self-attention over the prompt embeddings ``e_i`` -> ``w_i``,
  ``F_i = MLP([w_i, E])`` and QMIX monotonic mixing with hypernetworks conditioned on ``E``:
  ``Q_tot = ELU(sum_i Q_i |W1_i(E)| + b1(E)) . |W2(E)| + b2(E)``; ``P F_i`` is projected to the
  commitment-embedding space for the similarity loss ``L_SD``.
* :func:`bne_refine_beliefs` - the public code's two-stage coordination: up to ``iters`` rounds of
  ``b_i <- b_i + step * sum_{j != i} softmax_j(cos(b_i, b_j)) b_j`` until the change is below ``tol``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_positive

__all__ = ["BeliefNetwork", "BeliefEncoder", "ECONMixer", "bne_refine_beliefs"]


def _check(name: str, x: Tensor, shape: tuple[int | None, ...]) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got {x.dtype}")
    if x.ndim != len(shape) or any(s is not None and s != d for s, d in zip(shape, x.shape, strict=True)):
        raise ValueError(f"{name} must have shape {shape} (None = any), got {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name} must be non-empty")
    check_finite_tensor(name, x)


class BeliefNetwork(nn.Module):
    """``b_i = MLP([obs, others])``; heads ``Q_i(b_i, .)`` and policy logits over ``n_actions``.

    Args:
        obs_dim: observation (and response) embedding width.
        n_actions: size of the decoding-strategy grid.
        belief_dim: width of ``b_i``.
        hidden: MLP width.
        use_others: condition on the others' response embedding (else only on ``obs``).
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        *,
        belief_dim: int = 64,
        hidden: int = 128,
        use_others: bool = True,
    ) -> None:
        super().__init__()
        for name, v in (
            ("obs_dim", obs_dim),
            ("n_actions", n_actions),
            ("belief_dim", belief_dim),
            ("hidden", hidden),
        ):
            check_positive(name, v, integer=True)
        self.obs_dim, self.n_actions, self.use_others = obs_dim, n_actions, use_others
        self.body = nn.Sequential(
            nn.Linear(obs_dim * (2 if use_others else 1), hidden),
            nn.GELU(),
            nn.Linear(hidden, belief_dim),
        )
        self.q_head = nn.Sequential(nn.Linear(belief_dim, hidden), nn.GELU(), nn.Linear(hidden, n_actions))
        self.policy_head = nn.Linear(belief_dim, n_actions)

    def belief(self, obs: Tensor, others: Tensor | None = None) -> Tensor:
        """``(B, obs_dim)`` (+ ``(B, obs_dim)``) -> ``(B, belief_dim)``."""
        _check("obs", obs, (None, self.obs_dim))
        if self.use_others:
            if others is None:
                others = torch.zeros_like(obs)
            _check("others", others, (obs.shape[0], self.obs_dim))
            obs = torch.cat([obs, others], dim=-1)
        return self.body(obs)

    def heads(self, belief: Tensor) -> tuple[Tensor, Tensor]:
        """``(Q_i(b, .), policy logits)``, each ``(B, n_actions)``."""
        return self.q_head(belief), self.policy_head(belief)

    def forward(self, obs: Tensor, others: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        b = self.belief(obs, others)
        q, logits = self.heads(b)
        return b, q, logits


def bne_refine_beliefs(
    beliefs: Tensor, *, step: float = 0.1, iters: int = 5, tol: float = 0.01
) -> tuple[Tensor, int]:
    """Two-stage coordination of the public code: pull each belief toward similar beliefs.

    Args:
        beliefs: ``(B, N, D)``.
        step: size of the update (0.1 in the code).
        iters: at most this many rounds (5).
        tol: stop once the largest per-sample change norm is below it (0.01).

    Returns:
        The refined beliefs (differentiable) and the number of rounds run.
    """
    _check("beliefs", beliefs, (None, None, None))
    check_positive("step", step)
    check_positive("iters", iters, integer=True)
    check_positive("tol", tol)
    b = beliefs
    n = b.shape[1]
    off = 1.0 - torch.eye(n, dtype=b.dtype, device=b.device)
    rounds = 0
    for _ in range(iters):
        unit = F.normalize(b, dim=-1)
        w = torch.softmax(unit @ unit.transpose(1, 2), dim=-1) * off
        delta = step * (w @ b)
        b = b + delta
        rounds += 1
        if delta.flatten(1).norm(dim=-1).max().item() < tol:
            break
    return b, rounds


class BeliefEncoder(nn.Module):
    """Group representation ``E`` from the N beliefs (self-attention, FFN, mean, linear)."""

    def __init__(self, belief_dim: int, out_dim: int = 64, *, heads: int = 4) -> None:
        super().__init__()
        check_positive("belief_dim", belief_dim, integer=True)
        check_positive("out_dim", out_dim, integer=True)
        check_positive("heads", heads, integer=True)
        if belief_dim % heads:
            raise ValueError(f"belief_dim ({belief_dim}) must be divisible by heads ({heads})")
        self.belief_dim = belief_dim
        self.attn = nn.MultiheadAttention(belief_dim, heads, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(belief_dim), nn.LayerNorm(belief_dim)
        self.ffn = nn.Sequential(
            nn.Linear(belief_dim, 4 * belief_dim), nn.GELU(), nn.Linear(4 * belief_dim, belief_dim)
        )
        self.out = nn.Linear(belief_dim, out_dim)

    def forward(self, beliefs: Tensor) -> Tensor:
        """``(B, N, belief_dim)`` -> ``(B, out_dim)``."""
        _check("beliefs", beliefs, (None, None, self.belief_dim))
        h = self.norm1(beliefs + self.attn(beliefs, beliefs, beliefs, need_weights=False)[0])
        h = self.norm2(h + self.ffn(h))
        return self.out(h.mean(dim=1))


def _hyper(inp: int, hidden: int, out: int) -> nn.Sequential:
    """A two-layer hypernetwork (Linear, ReLU, LayerNorm, Linear), as in the public mixer."""
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.LayerNorm(hidden), nn.Linear(hidden, out))


class ECONMixer(nn.Module):
    """QMIX-style monotonic mixer conditioned on the group representation ``E``.

    Args:
        n_agents: N.
        group_dim: width of ``E``.
        prompt_dim: width of a prompt embedding ``e_i`` (here [temperature, top-p, style]).
        embed_dim: width of the commitment embedding ``P F_i`` is compared with.
        hidden: width of ``w_i`` and ``F_i``.
        mixing_dim: QMIX hidden width (32 in the code).
    """

    def __init__(
        self,
        n_agents: int,
        group_dim: int,
        prompt_dim: int,
        embed_dim: int,
        *,
        hidden: int = 32,
        mixing_dim: int = 32,
    ) -> None:
        super().__init__()
        for name, v in (
            ("n_agents", n_agents),
            ("group_dim", group_dim),
            ("prompt_dim", prompt_dim),
            ("embed_dim", embed_dim),
            ("hidden", hidden),
            ("mixing_dim", mixing_dim),
        ):
            check_positive(name, v, integer=True)
        self.n_agents, self.group_dim, self.prompt_dim, self.mixing_dim = (
            n_agents,
            group_dim,
            prompt_dim,
            mixing_dim,
        )
        self.prompt_in = nn.Linear(prompt_dim, hidden)
        self.prompt_attn = nn.MultiheadAttention(hidden, 1, batch_first=True)
        self.feature = nn.Sequential(
            nn.Linear(hidden + group_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden)
        )
        self.project = nn.Linear(hidden, embed_dim)
        self.hyper_w1 = _hyper(group_dim, hidden, n_agents * mixing_dim)
        self.hyper_b1 = nn.Linear(group_dim, mixing_dim)
        self.hyper_w2 = _hyper(group_dim, hidden, mixing_dim)
        self.hyper_b2 = nn.Sequential(nn.Linear(group_dim, mixing_dim), nn.ReLU(), nn.Linear(mixing_dim, 1))

    def forward(self, q: Tensor, group: Tensor, prompts: Tensor) -> tuple[Tensor, Tensor]:
        """``Q_i (B, N)``, ``E (B, G)``, ``e (B, N, prompt_dim)`` -> ``Q_tot (B,)``, ``P F_i (B, N, emb)``."""
        bsz = q.shape[0] if q.ndim else 0
        _check("q", q, (None, self.n_agents))
        _check("group", group, (bsz, self.group_dim))
        _check("prompts", prompts, (bsz, self.n_agents, self.prompt_dim))
        h = self.prompt_in(prompts)
        w = h + self.prompt_attn(h, h, h, need_weights=False)[0]
        feats = self.feature(torch.cat([w, group[:, None, :].expand(-1, self.n_agents, -1)], dim=-1))
        w1 = self.hyper_w1(group).abs().view(bsz, self.n_agents, self.mixing_dim)
        hidden = F.elu(torch.einsum("bn,bnm->bm", q, w1) + self.hyper_b1(group))
        q_tot = (hidden * self.hyper_w2(group).abs()).sum(-1) + self.hyper_b2(group).squeeze(-1)
        return q_tot, self.project(feats)
