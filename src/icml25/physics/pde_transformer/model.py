"""PDE-Transformer, mixed-channel (MC) and separate-channel (SC) variants.

Paper: *PDE-Transformer: Efficient and Versatile Transformers for Physics Simulations* (Holzschuh,
Liu, Kohl, Thuerey; ICML 2025), https://arxiv.org/abs/2505.24717; reference implementation
https://github.com/tum-pbs/pde-transformer (PyPI ``pdetransformer``), which this module follows
without depending on it (parameter names are not mirrored; official checkpoints do not load).

A state ``x_t`` on a regular 2D grid is patch-embedded (Conv2d, patch ``p``), processed by a U-shaped
hierarchy of transformer stages whose blocks attend inside shifted ``w x w`` windows (Swin-v2 cosine
attention with a continuous relative-position bias), conditioned per level by adaLN on the PDE label
and a diffusion time, and unpatchified into the prediction of ``x_{t+dt}``.

Implements (paper Sec. 3, reference ``mixed_channels/pde_transformer.py``):
    * patch embedding Conv2d(C -> D, k = s = p);
    * per level i a conditioning c_i = MLP(sinusoid(1000 t)) + Emb_i(y), Emb_i with num_classes + 1
      rows (the last is the null / dropped label, used when y is None);
    * U-shape with depths [d_0, ..., d_n, ..., d_0']: Downsample = Conv3x3(D -> D/2) + PixelUnshuffle(2);
      Upsample = Conv3x3(D -> 2D) + PixelShuffle(2), concatenation with the skip, 1x1 conv;
      the last decoder level runs at width 2D;
    * PDEBlock: x <- x + (1 + g1) Attn(LN(x)(1 + s1) + b1); x <- x + (1 + g2) MLP(LN(x)(1 + s2) + b2),
      with (b1, s1, g1, b2, s2, g2) = Linear(SiLU(c)) zero-initialised;
    * window attention: logits = cos(q, k) exp(min(l_h, ln 100)) + 16 sigmoid(CPB(log-spaced rel. coords)),
      l_h initialised at ln 10, no qkv bias, no output projection; shift alternates 0 / w/2 via
      torch.roll; periodic grids use no mask (the wrap-around is physical), others the Swin mask (-100);
    * output Conv3x3(2D -> 2D) and a FinalLayer: channel LayerNorm without affine, (1 + scale) x + shift
      from c_1, Conv3x3 to C_out p^2 (zero-initialised), pixel-shuffle unpatchify;
    * SC (``separate_channels``): every field is embedded on its own (shared Conv2d(T -> D, p) over its
      T time slots), conditioned on channel type + PDE label, and each block adds a channel-attention
      sub-layer across the fields at every token position (9 modulation vectors per block).

Our choices, where the paper and the reference code are silent or the reference is not usable here:
    * With ``periodic=True`` every 3x3 convolution pads circularly (the reference pads with zeros),
      so the whole network is exactly equivariant to periodic shifts by multiples of
      ``p * w * 2**n_down`` pixels; with ``periodic=False`` zero padding and the Swin mask are used.
    * Grids must be divisible by ``p * w * 2**n_down`` (the reference pads windows instead).
    * Class-label dropout is left to the training loop (pass the null label ``num_classes``), so the
      model itself draws no random numbers.
    * SC channel attention uses the same cosine attention (learnable per-head temperature, no bias,
      no positional encoding, no output projection) as the spatial attention; task, PDE-parameter and
      simulation-time embeddings (zeroed in the released code) are omitted.
    * Carrier tokens (off by default in the paper) and drop-path are not implemented.

Notation: B batch, C fields/channels, T time slots (SC), H x W grid, h x w token grid, D width,
nW windows, N = w*w tokens per window, K heads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields
from icml25.nn.blocks import MLP, modulate
from icml25.nn.embeddings import TimestepEmbedder

__all__ = [
    "PRESETS",
    "PDETransformerConfig",
    "PDETransformer",
    "PDETransformerSC",
    "WindowAttention",
    "window_partition",
    "window_reverse",
    "check_input",
]

LOG_100 = math.log(100.0)


@dataclass(frozen=True)
class PDETransformerConfig:
    """Hyperparameters of a PDE-Transformer. Defaults are the official PDE-S (MC) configuration.

    Args:
        in_channels: input fields (MC) - the padded maximum over the PDE families.
        out_channels: predicted fields (MC).
        hidden_size: width D of the first level (level i has width D * 2**i).
        num_heads: attention heads at every level.
        depth: blocks per stage, encoder..latent..decoder (odd length, symmetric is usual).
        mlp_ratio: MLP hidden width / D.
        window_size: attention window side w (in tokens).
        patch_size: patch side p (in grid points).
        periodic: periodic boundaries (no shift mask, circular conv padding).
        num_classes: PDE labels; label ``num_classes`` is the null label.
        cpb_hidden: hidden width of the continuous relative-position-bias MLP (512 officially).
        max_hidden_size: cap on the width of any level.
        n_time_slots: SC only: frames T stacked per field (2 for next-step prediction).
        num_channel_types: SC only: size of the channel-type vocabulary.
    """

    in_channels: int = 2
    out_channels: int = 2
    hidden_size: int = 96
    num_heads: int = 4
    depth: tuple[int, ...] = (2, 5, 8, 5, 2)
    mlp_ratio: float = 4.0
    window_size: int = 8
    patch_size: int = 4
    periodic: bool = True
    num_classes: int = 16
    cpb_hidden: int = 512
    max_hidden_size: int = 2048
    n_time_slots: int = 2
    num_channel_types: int = 16

    def __post_init__(self) -> None:
        if len(self.depth) % 2 != 1 or len(self.depth) < 3 or any(d < 1 for d in self.depth):
            raise ValueError(f"depth must have odd length >= 3 with entries >= 1, got {self.depth}")
        check_fields(
            self,
            positive_int=(
                "in_channels",
                "out_channels",
                "hidden_size",
                "num_heads",
                "patch_size",
                "num_classes",
            ),
            positive=("mlp_ratio",),
        )
        if self.window_size < 2:
            raise ValueError(f"window_size must be >= 2, got {self.window_size}")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} must be divisible by num_heads {self.num_heads}"
            )
        if self.hidden_size % 2:
            raise ValueError(f"hidden_size must be even (Downsample halves it), got {self.hidden_size}")
        if self.hidden_size * 2 ** (len(self.depth) // 2) > self.max_hidden_size:
            raise ValueError(
                "hidden_size * 2**n_down exceeds max_hidden_size (width capping is not implemented)"
            )

    @property
    def n_down(self) -> int:
        return len(self.depth) // 2

    @property
    def grid_multiple(self) -> int:
        """Grid sides must be multiples of this: ``patch_size * window_size * 2**n_down``."""
        return self.patch_size * self.window_size * 2**self.n_down

    def width(self, level: int) -> int:
        return min(self.hidden_size * 2**level, self.max_hidden_size)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> PDETransformerConfig:
        """A named preset (``S``, ``B``, ``L``, ``tiny``) with ``overrides`` applied."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
        return replace(PRESETS[name], **overrides)


PRESETS: dict[str, PDETransformerConfig] = {
    "S": PDETransformerConfig(hidden_size=96, num_heads=4),
    "B": PDETransformerConfig(hidden_size=192, num_heads=8),
    "L": PDETransformerConfig(hidden_size=384, num_heads=16),
    # our own ~1M-parameter shape for 64^2 grids, not a paper preset (tests and claim checks only)
    "tiny": PDETransformerConfig(
        hidden_size=32, num_heads=2, depth=(2, 2, 2, 2, 2), window_size=4, cpb_hidden=64
    ),
}


def check_input(
    x: Tensor, cfg: PDETransformerConfig, channels: int, what: str = "x", dtype: torch.dtype | None = None
) -> None:
    """Raise ``ValueError`` unless ``x`` is ``[..., channels, H, W]`` with a fitting, finite grid
    (``TypeError`` unless it has ``dtype``, the model's parameter dtype, when that is given)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(x).__name__}")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(
            f"{what} has dtype {x.dtype}, the model's parameters are {dtype}; convert with .to({dtype})"
        )
    H, W = x.shape[-2:]
    m = cfg.grid_multiple
    if x.shape[-3] != channels:
        raise ValueError(f"{what} has {x.shape[-3]} channels, the model expects {channels}")
    if H % m or W % m:
        fits = ", ".join(str(m * k) for k in (1, 2, 4, 8))
        raise ValueError(
            f"{what} grid {H}x{W} does not fit: sides must be multiples of patch_size * window_size * "
            f"2**n_down = {cfg.patch_size}*{cfg.window_size}*{2**cfg.n_down} = {m} (e.g. {fits})"
        )
    if x.device.type != "meta" and not torch.isfinite(x).all():
        raise ValueError(f"{what} contains NaN or infinite values")


# ----------------------------------------------------------------------------------------------
# Conditioning
# ----------------------------------------------------------------------------------------------


def _labels(y: Tensor | None, batch: int, num_classes: int, device: torch.device) -> Tensor:
    if y is None:
        return torch.full((batch,), num_classes, dtype=torch.long, device=device)
    if y.shape != (batch,):
        raise ValueError(f"pde_label must be [B] = [{batch}], got {tuple(y.shape)}")
    if y.device.type != "meta" and ((y < 0) | (y > num_classes)).any():
        raise ValueError(f"pde_label values must lie in [0, {num_classes}] ({num_classes} = null label)")
    return y.long()


def _times(t: Tensor | float | None, batch: int, device: torch.device) -> Tensor:
    if t is None:
        return torch.zeros(batch, device=device)
    t = torch.as_tensor(t, dtype=torch.float32, device=device)
    return t.expand(batch) if t.ndim == 0 else t


# ----------------------------------------------------------------------------------------------
# Windows and attention
# ----------------------------------------------------------------------------------------------


def window_partition(x: Tensor, w: int) -> Tensor:
    """``[B, h, w', D] -> [B, nW, w*w, D]`` (windows in row-major order)."""
    B, h, ww, D = x.shape
    x = x.view(B, h // w, w, ww // w, w, D).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(B, (h // w) * (ww // w), w * w, D)


def window_reverse(x: Tensor, w: int, h: int, ww: int) -> Tensor:
    """Inverse of :func:`window_partition`: ``[B, nW, w*w, D] -> [B, h, w', D]``."""
    B, _, _, D = x.shape
    x = x.view(B, h // w, ww // w, w, w, D).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(B, h, ww, D)


def relative_coords_table(w: int) -> Tensor:
    """Swin-v2 log-spaced relative coordinates ``[(2w-1)^2, 2]``."""
    r = torch.arange(-(w - 1), w, dtype=torch.float32) / (w - 1) * 8  # normalise to [-8, 8]
    table = torch.stack(torch.meshgrid(r, r, indexing="ij"), dim=-1).reshape(-1, 2)
    return torch.sign(table) * torch.log2(table.abs() + 1.0) / math.log2(8)


def relative_position_index(w: int) -> Tensor:
    """``[w*w, w*w]`` index into the ``(2w-1)^2`` table for each (query, key) pair of a window."""
    coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (w - 1)
    return rel[..., 0] * (2 * w - 1) + rel[..., 1]


def shift_mask(h: int, ww: int, w: int, shift: int) -> Tensor:
    """Swin mask for shifted windows on non-periodic grids: ``[nW, N, N]`` with 0 / -100."""
    img = torch.zeros(1, h, ww, 1)
    count = 0
    for hs in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
        for ws in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
            img[:, hs, ws, :] = count
            count += 1
    win = window_partition(img, w)[0, :, :, 0]  # [nW, N]
    diff = win[:, None, :] - win[:, :, None]
    return torch.where(diff != 0, torch.tensor(-100.0), torch.tensor(0.0))


class CosineAttention(nn.Module):
    """Multi-head cosine attention with learnable per-head temperature; no qkv bias, no projection.

    Used over window tokens (with a position bias) and, in SC, over fields (without).
    """

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.logit_scale = nn.Parameter(torch.full((num_heads, 1, 1), math.log(10.0)))

    def forward(self, x: Tensor, bias: Tensor | None = None) -> Tensor:
        """``x: [..., N, D]``, ``bias`` broadcastable to ``[..., K, N, N]``; returns ``[..., N, D]``."""
        *lead, N, D = x.shape
        K = self.num_heads
        qkv = self.qkv(x).view(*lead, N, 3, K, D // K).movedim(-3, 0).transpose(-3, -2)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [..., K, N, D/K]
        scale = torch.clamp(self.logit_scale, max=LOG_100).exp()  # exp(min(l_h, ln 100))
        q = F.normalize(q, dim=-1) * scale  # cos(q, k) * temperature
        k = F.normalize(k, dim=-1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0)
        return out.transpose(-3, -2).reshape(*lead, N, D)


class WindowAttention(nn.Module):
    """Swin-v2 window attention (``WindowAttention2DTime``): cosine logits + 16 sigmoid(CPB)."""

    def __init__(self, dim: int, num_heads: int, window_size: int, cpb_hidden: int = 512) -> None:
        super().__init__()
        self.window_size = window_size
        self.attn = CosineAttention(dim, num_heads)
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, cpb_hidden), nn.ReLU(), nn.Linear(cpb_hidden, num_heads, bias=False)
        )
        self.register_buffer("coords_table", relative_coords_table(window_size), persistent=False)
        self.register_buffer("rel_index", relative_position_index(window_size), persistent=False)

    def position_bias(self) -> Tensor:
        """``[K, N, N]``: 16 sigmoid(MLP(relative coordinates))."""
        table = self.cpb_mlp(self.coords_table)  # [(2w-1)^2, K]
        return 16 * torch.sigmoid(table[self.rel_index].permute(2, 0, 1))

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x: [B, nW, N, D]``; ``mask: [nW, N, N]`` (0 / -100) or None."""
        bias = self.position_bias()[None, None]  # [1, 1, K, N, N]
        if mask is not None:
            bias = bias + mask[None, :, None]
        return self.attn(x, bias)


# ----------------------------------------------------------------------------------------------
# Blocks and stages
# ----------------------------------------------------------------------------------------------


class PDEBlock(nn.Module):
    """One PDE-Transformer block on windowed tokens ``[B', nW, N, D]`` with (1 + gate) adaLN.

    With ``channel_attention`` (SC) a field-wise attention sub-layer sits between the window
    attention and the MLP; ``B' = B * C`` then and the fields of one sample are contiguous.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window_size: int,
        mlp_ratio: float,
        cpb_hidden: int,
        channel_attention: bool,
    ) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, num_heads, window_size, cpb_hidden)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, int(dim * mlp_ratio))
        self.channel_attention = channel_attention
        n_mod = 9 if channel_attention else 6
        if channel_attention:
            self.norm_c = nn.LayerNorm(dim)
            self.chan_attn = CosineAttention(dim, num_heads)
        self.adaLN = nn.Linear(dim, n_mod * dim)  # applied to SiLU(c)

    def forward(self, x: Tensor, c: Tensor, mask: Tensor | None = None, n_fields: int = 1) -> Tensor:
        mods = self.adaLN(F.silu(c))[:, None, None].chunk(9 if self.channel_attention else 6, dim=-1)
        b1, s1, g1, b2, s2, g2 = mods[:6]
        # x <- x + (1 + gate1) Attn(LN(x)(1 + scale1) + shift1)
        x = x + (1 + g1) * self.attn(modulate(self.norm1(x), b1, s1), mask)
        if self.channel_attention:
            b3, s3, g3 = mods[6:]
            y = modulate(self.norm_c(x), b3, s3)
            Bc, nW, N, D = y.shape
            y = y.view(Bc // n_fields, n_fields, nW, N, D).permute(0, 2, 3, 1, 4)  # [B, nW, N, C, D]
            y = self.chan_attn(y).permute(0, 3, 1, 2, 4).reshape(Bc, nW, N, D)
            x = x + (1 + g3) * y
        # x <- x + (1 + gate2) MLP(LN(x)(1 + scale2) + shift2)
        return x + (1 + g2) * self.mlp(modulate(self.norm2(x), b2, s2))


class PDEStage(nn.Module):
    """``depth`` blocks at one resolution; the shift alternates 0, w/2, 0, ... (torch.roll)."""

    def __init__(
        self, dim: int, depth: int, cfg: PDETransformerConfig, channel_attention: bool = False
    ) -> None:
        super().__init__()
        self.window_size = cfg.window_size
        self.periodic = cfg.periodic
        self.blocks = nn.ModuleList(
            PDEBlock(dim, cfg.num_heads, cfg.window_size, cfg.mlp_ratio, cfg.cpb_hidden, channel_attention)
            for _ in range(depth)
        )

    def forward(self, x: Tensor, c: Tensor, n_fields: int = 1) -> Tensor:
        """``x: [B', D, h, w]``, ``c: [B', D]``."""
        w = self.window_size
        x = x.permute(0, 2, 3, 1)  # channels last
        _, h, ww, _ = x.shape
        mask = None
        if not self.periodic:
            mask = shift_mask(h, ww, w, w // 2).to(device=x.device, dtype=x.dtype)
        for n, block in enumerate(self.blocks):
            shift = 0 if n % 2 == 0 else w // 2
            if shift:
                x = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
            y = block(window_partition(x, w), c, mask if shift else None, n_fields)
            x = window_reverse(y, w, h, ww)
            if shift:
                x = torch.roll(x, shifts=(shift, shift), dims=(1, 2))
        return x.permute(0, 3, 1, 2)


def _conv(cin: int, cout: int, k: int, periodic: bool, bias: bool = True) -> nn.Conv2d:
    return nn.Conv2d(
        cin, cout, k, padding=k // 2, bias=bias, padding_mode="circular" if periodic else "zeros"
    )


class Downsample(nn.Sequential):
    """Conv3x3 (D -> D/2) then PixelUnshuffle(2): width 2D at half resolution."""

    def __init__(self, dim: int, periodic: bool) -> None:
        super().__init__(_conv(dim, dim // 2, 3, periodic, bias=False), nn.PixelUnshuffle(2))


class Upsample(nn.Sequential):
    """Conv3x3 (D -> 2D) then PixelShuffle(2): width D/2 at double resolution."""

    def __init__(self, dim: int, periodic: bool) -> None:
        super().__init__(_conv(dim, 2 * dim, 3, periodic, bias=False), nn.PixelShuffle(2))


class LayerNorm2d(nn.Module):
    """LayerNorm over the channel dimension of ``[B, D, H, W]``, no affine parameters."""

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x.permute(0, 2, 3, 1), x.shape[1:2], eps=1e-6).permute(0, 3, 1, 2)


class FinalLayer(nn.Module):
    """LayerNorm2d, (1 + scale) x + shift from c, Conv3x3 to ``out`` channels (zero-initialised)."""

    def __init__(self, dim: int, out: int, periodic: bool) -> None:
        super().__init__()
        self.norm = LayerNorm2d()
        self.adaLN = nn.Linear(dim, 2 * dim)  # applied to SiLU(c)
        self.out_proj = _conv(dim, out, 3, periodic)

    def forward(self, x: Tensor, c: Tensor) -> Tensor:
        shift, scale = self.adaLN(F.silu(c))[:, :, None, None].chunk(2, dim=1)
        return self.out_proj(modulate(self.norm(x), shift, scale))


class _UNetBody(nn.Module):
    """The shared U-shaped token hierarchy of the MC and SC models (everything after embedding)."""

    def __init__(self, cfg: PDETransformerConfig, out_per_token: int, channel_attention: bool) -> None:
        super().__init__()
        self.cfg = cfg
        n = cfg.n_down
        ca = channel_attention
        self.t_embedders = nn.ModuleList(TimestepEmbedder(cfg.width(i)) for i in range(n + 1))
        self.y_embedders = nn.ModuleList(
            nn.Embedding(cfg.num_classes + 1, cfg.width(i)) for i in range(n + 1)
        )
        self.encoders = nn.ModuleList(PDEStage(cfg.width(i), cfg.depth[i], cfg, ca) for i in range(n))
        self.downs = nn.ModuleList(Downsample(cfg.width(i), cfg.periodic) for i in range(n))
        self.latent = PDEStage(cfg.width(n), cfg.depth[n], cfg, ca)
        # decoder level i (i >= 1) at width D_i; level 0 at width 2D (as in the reference)
        dec_width = [cfg.width(1)] + [cfg.width(i) for i in range(1, n)]
        self.ups = nn.ModuleList(
            Upsample(2 * cfg.width(i) if i else cfg.width(1), cfg.periodic) for i in range(n)
        )
        skip_in = [2 * cfg.width(0)] + [2 * cfg.width(i) for i in range(1, n)]
        self.reduce = nn.ModuleList(nn.Conv2d(skip_in[i], dec_width[i], 1) for i in range(n))
        self.decoders = nn.ModuleList(PDEStage(dec_width[i], cfg.depth[n + 1 + i], cfg, ca) for i in range(n))
        self.output = _conv(cfg.width(1), cfg.width(1), 3, cfg.periodic)
        self.final = FinalLayer(cfg.width(1), out_per_token, cfg.periodic)

    def conditions(self, t: Tensor, y: Tensor, extra: Sequence[Sequence[Tensor]] = ()) -> list[Tensor]:
        """``c_i = MLP_i(sinusoid(1000 t)) + Emb_i(y) (+ extras)`` for every level i."""
        out = []
        for i, (te, ye) in enumerate(zip(self.t_embedders, self.y_embedders, strict=True)):
            c = te(1000.0 * t) + ye(y)
            for e in extra:
                c = c + e[i]
            out.append(c)
        return out

    def forward(self, x: Tensor, cond: list[Tensor], n_fields: int = 1) -> Tensor:
        n = self.cfg.n_down
        skips = []
        for i in range(n):
            x = self.encoders[i](x, cond[i], n_fields)
            skips.append(x)
            x = self.downs[i](x)
        x = self.latent(x, cond[n], n_fields)
        for i in reversed(range(n)):
            x = self.ups[i](x)
            x = self.reduce[i](torch.cat([x, skips[i]], dim=1))
            x = self.decoders[i](x, cond[max(i, 1)], n_fields)  # the last level uses c_1 (width 2D)
        return self.final(self.output(x), cond[1])

    def initialize(self) -> None:
        """Xavier for linear/conv (the relative-position-bias MLP included: the reference's
        ``initialize_weights`` applies its Xavier ``_basic_init`` to every ``nn.Linear``); label tables
        N(0, 0.02); adaLN and the output conv zero (reference)."""
        for m in self.modules():
            if isinstance(m, nn.Linear | nn.Conv2d):
                nn.init.xavier_uniform_(m.weight.view(m.weight.shape[0], -1))
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        for m in self.modules():
            if isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, TimestepEmbedder):
                nn.init.normal_(m.fc1.weight, std=0.02)
                nn.init.normal_(m.fc2.weight, std=0.02)
            if isinstance(m, PDEBlock):
                nn.init.zeros_(m.adaLN.weight)
                nn.init.zeros_(m.adaLN.bias)
        nn.init.zeros_(self.final.adaLN.weight)
        nn.init.zeros_(self.final.adaLN.bias)
        nn.init.zeros_(self.final.out_proj.weight)
        assert self.final.out_proj.bias is not None
        nn.init.zeros_(self.final.out_proj.bias)


class PDETransformer(nn.Module):
    """Mixed-channel PDE-Transformer: ``[B, C_in, H, W] -> [B, C_out, H, W]``."""

    def __init__(self, cfg: PDETransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.x_embedder = nn.Conv2d(cfg.in_channels, cfg.hidden_size, cfg.patch_size, stride=cfg.patch_size)
        self.body = _UNetBody(cfg, cfg.out_channels * cfg.patch_size**2, channel_attention=False)
        self.body.initialize()
        nn.init.xavier_uniform_(self.x_embedder.weight.view(cfg.hidden_size, -1))
        assert self.x_embedder.bias is not None
        nn.init.zeros_(self.x_embedder.bias)

    def forward(self, x: Tensor, pde_label: Tensor | None = None, t: Tensor | float | None = None) -> Tensor:
        """Predict the next state.

        Args:
            x: ``[B, in_channels, H, W]``, H and W multiples of ``cfg.grid_multiple``.
            pde_label: ``[B]`` long in ``[0, num_classes]``; None means the null label.
            t: diffusion time in [0, 1] (scalar or ``[B]``); None means 0 (supervised use).

        Returns:
            ``[B, out_channels, H, W]``.
        """
        if x.ndim != 4:
            raise ValueError(f"x must be [B, C, H, W], got shape {tuple(x.shape)}")
        check_input(x, self.cfg, self.cfg.in_channels, dtype=self.x_embedder.weight.dtype)
        B = x.shape[0]
        cond = self.body.conditions(
            _times(t, B, x.device), _labels(pde_label, B, self.cfg.num_classes, x.device)
        )
        out = self.body(self.x_embedder(x), cond)
        return F.pixel_shuffle(out, self.cfg.patch_size)


class PDETransformerSC(nn.Module):
    """Separate-channel PDE-Transformer: ``fields [B, C, T, H, W] -> [B, C, T, H, W]``.

    Every field is a token stream of its own (shared embedding of its T time slots), conditioned on
    its channel type; blocks add attention across fields. Known slots are copied through.
    """

    def __init__(self, cfg: PDETransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        T, p = cfg.n_time_slots, cfg.patch_size
        self.x_embedder = nn.Conv2d(T, cfg.hidden_size, p, stride=p)
        self.body = _UNetBody(cfg, T * p * p, channel_attention=True)
        self.channel_embedders = nn.ModuleList(
            nn.Embedding(cfg.num_channel_types, cfg.width(i)) for i in range(cfg.n_down + 1)
        )
        self.body.initialize()
        nn.init.xavier_uniform_(self.x_embedder.weight.view(cfg.hidden_size, -1))
        assert self.x_embedder.bias is not None
        nn.init.zeros_(self.x_embedder.bias)
        for m in self.channel_embedders.modules():
            if isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)

    def forward(
        self,
        fields: Tensor,
        channel_type: Tensor,
        pde_label: Tensor | None = None,
        known_mask: Tensor | None = None,
        t: Tensor | float | None = None,
    ) -> Tensor:
        """Fill the unknown time slots.

        Args:
            fields: ``[B, C, T, H, W]`` (unknown slots may hold anything, e.g. zeros).
            channel_type: ``[C]`` or ``[B, C]`` long ids in ``[0, num_channel_types)``.
            pde_label: ``[B]`` long; None means the null label.
            known_mask: ``[T]`` or ``[B, C, T]`` bool, True where a slot is given (copied to the
                output); default: every slot but the last.
            t: diffusion time, as in :class:`PDETransformer`.

        Returns:
            ``[B, C, T, H, W]``.
        """
        cfg = self.cfg
        if fields.ndim != 5 or fields.shape[2] != cfg.n_time_slots:
            raise ValueError(f"fields must be [B, C, T={cfg.n_time_slots}, H, W], got {tuple(fields.shape)}")
        B, C, T, H, W = fields.shape
        param = next(self.parameters(), None)
        dtype = None if param is None else param.dtype
        check_input(fields.reshape(B * C, T, H, W), cfg, T, what="fields", dtype=dtype)
        if channel_type.ndim == 1:
            channel_type = channel_type.expand(B, -1)
        if channel_type.shape != (B, C):
            raise ValueError(f"channel_type must be [C] = [{C}] or [B, C], got {tuple(channel_type.shape)}")
        if (
            fields.device.type != "meta"
            and ((channel_type < 0) | (channel_type >= cfg.num_channel_types)).any()
        ):
            raise ValueError(f"channel_type values must lie in [0, {cfg.num_channel_types})")
        if known_mask is None:
            known_mask = torch.arange(T, device=fields.device) < T - 1
        known = known_mask.bool().expand(B, C, T) if known_mask.ndim == 1 else known_mask.bool()
        if known.shape != (B, C, T):
            raise ValueError(f"known_mask must be [T] or [B, C, T], got {tuple(known_mask.shape)}")
        x = torch.where(known[..., None, None], fields, torch.zeros((), device=fields.device))
        tt = _times(t, B, fields.device).repeat_interleave(C)
        y = _labels(pde_label, B, cfg.num_classes, fields.device).repeat_interleave(C)
        ct = channel_type.reshape(-1).long()
        cond = self.body.conditions(tt, y, extra=[[emb(ct) for emb in self.channel_embedders]])
        tokens = self.x_embedder(x.reshape(B * C, T, H, W))
        out = F.pixel_shuffle(self.body(tokens, cond, n_fields=C), cfg.patch_size).view(B, C, T, H, W)
        return torch.where(known[..., None, None], fields, out)
