"""DiT baseline for PDE-Transformer's claim check: a plain ViT with global attention and adaLN-Zero.

Peebles & Xie, *Scalable Diffusion Models with Transformers* (ICCV 2023), as used by *PDE-Transformer:
Efficient and Versatile Transformers for Physics Simulations* (Holzschuh et al., ICML 2025,
https://arxiv.org/abs/2505.24717) as a baseline in its comparison with computer-vision backbones: patch
embedding with the same patch size, fixed 2D sin-cos absolute positions, blocks of global multi-head
self-attention and MLP modulated by adaLN-Zero (shift, scale and a gate that is zero at
initialisation) on the PDE label and diffusion time, and a linear unpatchify head.

Choice made here: the sin-cos table is computed for whatever token grid the input has (so the same
model runs at any resolution, as the scaling benchmark needs); widths are matched to a PDE-Transformer
by :func:`match_dit_width`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields
from icml25.nn.blocks import TransformerBlock, modulate
from icml25.nn.embeddings import TimestepEmbedder, sincos_2d
from icml25.nn.params import match_width

from .model import _labels, _times

__all__ = ["DiTConfig", "DiTBaseline", "match_dit_width"]


@dataclass(frozen=True)
class DiTConfig:
    """Hyperparameters of the DiT baseline.

    Args:
        in_channels / out_channels: fields in and out.
        hidden_size: token width (divisible by ``num_heads`` and by 4 for the sin-cos table).
        depth: number of blocks.
        num_heads: attention heads.
        mlp_ratio: MLP hidden width / hidden_size.
        patch_size: patch side in grid points.
        num_classes: PDE labels (label ``num_classes`` is the null label).
    """

    in_channels: int = 2
    out_channels: int = 2
    hidden_size: int = 128
    depth: int = 5
    num_heads: int = 4
    mlp_ratio: float = 4.0
    patch_size: int = 4
    num_classes: int = 16

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads or self.hidden_size % 4:
            raise ValueError(
                f"hidden_size must be divisible by num_heads ({self.num_heads}) and by 4, "
                f"got {self.hidden_size}"
            )
        check_fields(
            self,
            positive_int=("in_channels", "out_channels", "depth", "patch_size", "num_classes", "num_heads"),
            positive=("mlp_ratio",),
        )


class DiTBaseline(nn.Module):
    """DiT-style ViT surrogate: ``[B, C_in, H, W] -> [B, C_out, H, W]`` with global attention."""

    def __init__(self, cfg: DiTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        D, p = cfg.hidden_size, cfg.patch_size
        self.x_embedder = nn.Conv2d(cfg.in_channels, D, p, stride=p)
        self.t_embedder = TimestepEmbedder(D)
        self.y_embedder = nn.Embedding(cfg.num_classes + 1, D)
        self.blocks = nn.ModuleList(
            TransformerBlock(
                D,
                cfg.num_heads,
                mlp_ratio=cfg.mlp_ratio,
                norm_eps=1e-6,
                norm_affine=False,
                activation="gelu_tanh",
                cond_dim=D,
            )
            for _ in range(cfg.depth)
        )
        self.norm_final = nn.LayerNorm(D, elementwise_affine=False, eps=1e-6)
        self.adaLN_final = nn.Linear(D, 2 * D)  # applied to SiLU(c)
        self.head = nn.Linear(D, p * p * cfg.out_channels)
        self._pos: dict[tuple[int, int], Tensor] = {}
        self._initialize()

    def _initialize(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Linear | nn.Conv2d):
                nn.init.xavier_uniform_(m.weight.view(m.weight.shape[0], -1))
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        nn.init.normal_(self.y_embedder.weight, std=0.02)
        nn.init.normal_(self.t_embedder.fc1.weight, std=0.02)
        nn.init.normal_(self.t_embedder.fc2.weight, std=0.02)
        zero = [m.adaLN for m in self.modules() if isinstance(m, TransformerBlock) and m.adaLN is not None]
        for lin in [*zero, self.adaLN_final, self.head]:  # adaLN-Zero
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)

    def pos_embed(self, h: int, w: int, device: torch.device) -> Tensor:
        if (h, w) not in self._pos:
            self._pos[(h, w)] = sincos_2d(self.cfg.hidden_size, h, w)
        return self._pos[(h, w)].to(device)

    def forward(self, x: Tensor, pde_label: Tensor | None = None, t: Tensor | float | None = None) -> Tensor:
        """``x: [B, in_channels, H, W]`` (H, W multiples of the patch size) -> ``[B, out_channels, H, W]``."""
        cfg = self.cfg
        p = cfg.patch_size
        if x.ndim != 4 or x.shape[1] != cfg.in_channels:
            raise ValueError(f"x must be [B, {cfg.in_channels}, H, W], got {tuple(x.shape)}")
        B, _, H, W = x.shape
        if H % p or W % p:
            raise ValueError(f"grid {H}x{W} does not fit: sides must be multiples of patch_size = {p}")
        if x.device.type != "meta" and not torch.isfinite(x).all():
            raise ValueError("x contains NaN or infinite values")
        c = self.t_embedder(1000.0 * _times(t, B, x.device)) + self.y_embedder(
            _labels(pde_label, B, cfg.num_classes, x.device)
        )
        h, w = H // p, W // p
        tok = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed(h, w, x.device)
        for block in self.blocks:
            tok = block(tok, c)
        shift, scale = self.adaLN_final(F.silu(c))[:, None].chunk(2, dim=-1)
        out = self.head(modulate(self.norm_final(tok), shift, scale))  # [B, h*w, p*p*C]
        out = out.transpose(1, 2).reshape(B, p * p * cfg.out_channels, h, w)
        return F.pixel_shuffle(out, p)


def match_dit_width(target_params: int, base: DiTConfig, *, tolerance: float = 0.10) -> DiTConfig:
    """The DiT with ``base``'s depth and heads whose parameter count is closest to ``target_params``.

    Widths are multiples of ``lcm(4, 2 * num_heads)`` (:func:`icml25.nn.params.match_width`); raises
    ``ValueError`` if none lies within ``tolerance`` (relative).
    """
    step = math.lcm(4, 2 * base.num_heads)
    width = match_width(
        lambda w: DiTBaseline(replace(base, hidden_size=w)),
        target_params,
        step=step,
        max_width=2048,
        tolerance=tolerance,
    )
    return replace(base, hidden_size=width)
