"""Position and time embeddings, and image patches as tokens.

* 1-D sinusoidal embedding (Vaswani et al., NeurIPS 2017, Sec. 3.5), in the ``[cos | sin]`` layout
  of GLIDE / DiT timestep embeddings: ``emb_i(t) = cos(t ω_i), sin(t ω_i)``, ``ω_i = P^{−i/half}``.
* 2-D sin-cos table (MAE, He et al., CVPR 2022; DiT): half the width encodes rows, half columns.
* :class:`TimestepEmbedder` (DiT): the sinusoid of t followed by Linear–SiLU–Linear.
* Rotary position embedding, RoPE (Su et al., *RoFormer*, 2021, Eq. 34): each pair of features
  ``(x_{2i}, x_{2i+1})`` — here the two halves ``(x_i, x_{i+e/2})``, the GPT-NeoX / Llama layout —
  is rotated by the angle ``pos · θ^{−2i/e}``.
* ALiBi (Press et al., *Train Short, Test Long*, ICLR 2022): head k adds ``−m_k (i − j)`` to the
  logit of query i and key j ≤ i, slopes ``m_k = 2^{−8k/h}`` (geometric; for a non-power-of-two h
  the paper's interleaving rule).
* patchify / unpatchify: ``(b, c, H, W) ↔ (b, N, c·p²)`` with row-major patches.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F  # noqa: N812
from einops import rearrange
from torch import Tensor, nn

__all__ = [
    "sinusoidal_embedding",
    "sincos_2d",
    "TimestepEmbedder",
    "RotaryEmbedding",
    "apply_rotary",
    "alibi_slopes",
    "alibi_bias",
    "patchify",
    "unpatchify",
]


def sinusoidal_embedding(t: Tensor, dim: int, max_period: float = 10000.0) -> Tensor:
    """``(b,) → (b, dim)``: ``[cos(t ω) | sin(t ω)]``, ``ω_i = max_period^{−i/half}`` (odd dim: 0-padded)."""
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    return F.pad(emb, (0, dim % 2))


def sincos_2d(dim: int, h: int, w: int) -> Tensor:
    """Fixed 2-D sin-cos positions ``(h·w, dim)``, rows then columns, each ``[sin | cos]`` (MAE / DiT)."""
    if dim < 4 or dim % 4:
        raise ValueError(f"dim must be a positive multiple of 4, got {dim}")
    quarter = dim // 4
    omega = 1.0 / 10000 ** (torch.arange(quarter, dtype=torch.float64) / quarter)
    gy, gx = torch.meshgrid(
        torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij"
    )
    parts = []
    for g in (gy, gx):
        arg = g.reshape(-1, 1) * omega[None]
        parts += [torch.sin(arg), torch.cos(arg)]
    return torch.cat(parts, dim=1).float()


class TimestepEmbedder(nn.Module):
    """DiT's timestep embedder: ``fc2(SiLU(fc1(sinusoid(t))))``, ``(b,) → (b, hidden)``."""

    def __init__(self, hidden: int, freq_dim: int = 256) -> None:
        super().__init__()
        self.freq_dim = freq_dim
        self.fc1 = nn.Linear(freq_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)

    def forward(self, t: Tensor) -> Tensor:
        return self.fc2(F.silu(self.fc1(sinusoidal_embedding(t, self.freq_dim))))


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate the halves ``(x₁, x₂)`` of the last axis: ``(x₁ cos − x₂ sin, x₂ cos + x₁ sin)``."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class RotaryEmbedding(nn.Module):
    """RoPE for heads of size ``head_dim`` (even): ``forward(x (…, n, e), offset)`` rotates position
    ``offset + i`` of ``x`` by the angles ``(offset + i) θ^{−2j/e}``."""

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim < 2 or head_dim % 2:
            raise ValueError(f"head_dim must be even and >= 2, got {head_dim}")
        inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.inv_freq: Tensor

    def angles(self, n: int, offset: int = 0, device: torch.device | None = None) -> Tensor:
        """``(n, e/2)`` rotation angles of positions ``offset … offset + n − 1``."""
        pos = torch.arange(offset, offset + n, device=device, dtype=torch.float32)
        return pos[:, None] * self.inv_freq.to(device)[None]

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        theta = self.angles(x.shape[-2], offset, x.device)
        return apply_rotary(x, theta.cos().to(x.dtype), theta.sin().to(x.dtype))


def alibi_slopes(num_heads: int) -> Tensor:
    """ALiBi head slopes ``(h,)``: ``2^{−8k/h}``, k = 1 … h; non-powers of two interleave (paper Sec. 3)."""
    if num_heads < 1:
        raise ValueError(f"num_heads must be >= 1, got {num_heads}")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (k + 1) for k in range(n)]

    if math.log2(num_heads).is_integer():
        return torch.tensor(power_of_two(num_heads))
    closest = 2 ** math.floor(math.log2(num_heads))
    extra = power_of_two(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(power_of_two(closest) + extra)


def alibi_bias(num_heads: int, n: int, m: int | None = None) -> Tensor:
    """ALiBi bias ``(h, n, m)``: ``−m_k · (i + m − n − j)`` for query i, key j (queries are the last n)."""
    m = n if m is None else m
    q_pos = torch.arange(n)[:, None] + (m - n)
    distance = (q_pos - torch.arange(m)[None, :]).clamp_min(0).float()  # future keys are masked anyway
    return -alibi_slopes(num_heads)[:, None, None] * distance[None]


def patchify(x: Tensor, patch_size: int) -> Tensor:
    """``(b, c, H, W) → (b, N, c·p²)`` with N = (H/p)(W/p), row-major patches (as ``F.unfold``)."""
    if x.ndim != 4:
        raise ValueError(f"patchify: x must be (B, C, H, W), got shape {tuple(x.shape)}")
    H, W = x.shape[-2:]
    if patch_size < 1 or H % patch_size or W % patch_size:
        raise ValueError(f"patchify: image size {H}x{W} is not divisible by patch_size={patch_size}")
    return rearrange(x, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=patch_size, p2=patch_size)


def unpatchify(u: Tensor, patch_size: int, channels: int, height: int) -> Tensor:
    """Inverse of :func:`patchify`: ``(b, N, c·p²) → (b, c, H, W)`` (W = N·p² / H)."""
    return rearrange(
        u,
        "b (h w) (c p1 p2) -> b c (h p1) (w p2)",
        h=height // patch_size,
        p1=patch_size,
        p2=patch_size,
        c=channels,
    )
