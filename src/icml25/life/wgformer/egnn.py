"""E(n)-equivariant GNN baseline for conformation refinement (the EGNN row of WGFormer's tables).

WGFormer (Wang, Cheng, Xu, ICML 2025, https://arxiv.org/abs/2410.09795) compares against EGNN
(Satorras, Hoogeboom, Welling, *E(n) Equivariant Graph Neural Networks*, ICML 2021). This is a plain
torch EGNN on the fully connected graph of the atoms (special tokens and padding excluded), with the
input distance as edge attribute (Eq. 3-6 of Satorras et al.)::

    m_ij = φ_e(h_i, h_j, ‖x_i - x_j‖², d⁰_ij)
    x_i ← x_i + Σ_j (x_i - x_j) φ_x(m_ij) / (n - 1)
    h_i ← h_i + φ_h(h_i, Σ_j m_ij)

It takes the same ``(tokens, coords, atom_mask)`` as :class:`~icml25.life.wgformer.model.WGFormer`
and returns the same :class:`~icml25.life.wgformer.model.WGFormerOutput`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from icml25.core.validate import check_fields

from .data import PAD, VOCAB
from .model import WGFormerOutput, centre, check_inputs, pairwise_distances

__all__ = ["EGNNConfig", "EGNNLayer", "EGNN"]


@dataclass(frozen=True)
class EGNNConfig:
    """EGNN shape: ``layers`` equivariant layers of width ``hidden``."""

    vocab_size: int = len(VOCAB)
    hidden: int = 128
    layers: int = 4

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("vocab_size", "hidden", "layers"))


class EGNNLayer(nn.Module):
    """One E(n)-equivariant layer (Satorras et al., Eq. 3-6) on a fully connected masked graph."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.phi_e = nn.Sequential(
            nn.Linear(2 * hidden + 2, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU()
        )
        last = nn.Linear(hidden, 1, bias=False)
        nn.init.xavier_uniform_(last.weight, gain=0.001)  # small initial coordinate steps (official EGNN)
        self.phi_x = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), last)
        self.phi_h = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))

    def forward(self, h: Tensor, x: Tensor, d0: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """``h [b, n, f]``, ``x [b, n, 3]``, ``d0 [b, n, n]``, ``mask [b, n]`` -> ``(h, x)``."""
        n = h.shape[1]
        pair = (mask.unsqueeze(-1) & mask.unsqueeze(-2)).to(h.dtype)
        diff = x.unsqueeze(-2) - x.unsqueeze(-3)  # x_i - x_j  [b, i, j, 3]
        sq = diff.pow(2).sum(-1, keepdim=True)
        hi = h.unsqueeze(2).expand(-1, -1, n, -1)
        hj = h.unsqueeze(1).expand(-1, n, -1, -1)
        m = self.phi_e(torch.cat([hi, hj, sq, d0.unsqueeze(-1)], dim=-1)) * pair.unsqueeze(-1)
        count = mask.sum(-1).to(h.dtype).clamp_min(2.0)[:, None, None]
        x = x + (diff * self.phi_x(m) * pair.unsqueeze(-1)).sum(2) / (count - 1)
        h = h + self.phi_h(torch.cat([h, m.sum(2)], dim=-1)) * mask.unsqueeze(-1).to(h.dtype)
        return h, x


class EGNN(nn.Module):
    """EGNN refinement model: atoms' coordinates in, refined coordinates out (E(3)-equivariant)."""

    def __init__(self, cfg: EGNNConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden, padding_idx=PAD)
        self.layers = nn.ModuleList(EGNNLayer(cfg.hidden) for _ in range(cfg.layers))

    def forward(self, tokens: Tensor, coords: Tensor, atom_mask: Tensor) -> WGFormerOutput:
        """Args: tokens ``[b, n]`` long, coords ``[b, n, 3]``, atom_mask ``[b, n]`` bool (atoms only move)."""
        check_inputs(tokens, coords, atom_mask)
        am = atom_mask.unsqueeze(-1).to(coords.dtype)
        x, c0 = centre(coords, atom_mask)
        x = x * am
        d0 = pairwise_distances(x)
        h = self.embed(tokens)
        for layer in self.layers:
            h, x = layer(h, x, d0, atom_mask)
        x = (x * am + c0) * (tokens != PAD).unsqueeze(-1).to(x.dtype)
        return WGFormerOutput(coords=x, distances=pairwise_distances(x))
