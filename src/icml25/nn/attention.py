"""Scaled dot-product attention with masks, additive biases and a key/value cache; one multi-head layer.

Vaswani et al., *Attention Is All You Need* (NeurIPS 2017), Eq. (1): softmax(QKᵀ/√d + B) V, with
B an additive bias (causal and padding masks as −inf, ALiBi or relative-position terms as finite
values). The computation goes through :func:`torch.nn.functional.scaled_dot_product_attention`
so fused kernels are used where the platform has them.

Notation: b batch, h heads, n query tokens, m key tokens (m ≥ n with a cache), e head dim,
d model width = h·e.

A :class:`KVCache` makes token-by-token decoding cost one token's work per step: ``prefill`` (or
the first ``append``) stores keys/values of a prefix, each later ``append`` adds the new token's,
and a causal query block of length n attends to every cached key plus the causal part of its own
block (query i sees keys ``0 … m − n + i``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F  # noqa: N812
from einops import rearrange
from torch import Tensor, nn

from icml25.nn.blocks import RMSNorm

__all__ = ["KVCache", "attention_mask", "scaled_dot_product_attention", "MultiheadAttention"]


class KVCache:
    """Keys and values seen so far by one attention layer, each ``(b, h, m, e)``."""

    def __init__(self) -> None:
        self.k: Tensor | None = None
        self.v: Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.k is None else int(self.k.shape[2])

    def reset(self) -> None:
        """Forget every cached token."""
        self.k = self.v = None

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add ``k, v`` ``(b, h, n, e)`` after the cached tokens; return all keys and values."""
        if self.k is not None and self.v is not None:
            k = torch.cat([self.k, k], dim=2)
            v = torch.cat([self.v, v], dim=2)
        self.k, self.v = k, v
        return k, v

    prefill = append  # the first call on an empty cache stores the prompt's keys and values


def attention_mask(
    n: int,
    m: int,
    *,
    causal: bool = False,
    key_padding_mask: Tensor | None = None,
    bias: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | None = None,
) -> Tensor | None:
    """The additive mask/bias of ``n`` queries over ``m`` keys, broadcastable to ``(b, h, n, m)``.

    Args:
        n, m: query and key lengths (``m - n`` earlier keys come from a cache).
        causal: query i sees keys ``0 … m − n + i``.
        key_padding_mask: ``(b, m)`` bool, True where a key is real (False = padding, never seen).
        bias: additive term broadcastable to ``(b, h, n, m)`` (ALiBi, relative positions).

    Returns:
        None when nothing is masked or added, else a float tensor with −inf where masked.
    """
    out: Tensor | None = None if bias is None else bias.to(dtype)
    if causal:
        q_pos = torch.arange(n, device=device)[:, None] + (m - n)
        allowed = torch.arange(m, device=device)[None, :] <= q_pos  # (n, m)
        causal_term = torch.zeros(n, m, dtype=dtype, device=device).masked_fill(~allowed, float("-inf"))
        out = causal_term if out is None else out + causal_term
    if key_padding_mask is not None:
        if key_padding_mask.ndim != 2 or key_padding_mask.shape[1] != m:
            raise ValueError(
                f"key_padding_mask must be (batch, {m}) bool, got {tuple(key_padding_mask.shape)}"
            )
        pad = torch.zeros(key_padding_mask.shape, dtype=dtype, device=device)
        pad = pad.masked_fill(~key_padding_mask.bool(), float("-inf"))[:, None, None, :]  # (b, 1, 1, m)
        out = pad if out is None else out + pad
    return out


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    causal: bool = False,
    key_padding_mask: Tensor | None = None,
    bias: Tensor | None = None,
    scale: float | None = None,
) -> Tensor:
    """softmax(q kᵀ · scale + bias + masks) v for ``q (b, h, n, e)``, ``k, v (b, h, m, e)``.

    ``scale`` defaults to 1/√e. A query whose keys are all masked returns zeros (not NaN).
    """
    n, m = q.shape[-2], k.shape[-2]
    if causal and n == 1:
        causal = False  # one new query after its cache sees every key anyway
    if bias is None and key_padding_mask is None and (not causal or n == m):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    mask = attention_mask(
        n, m, causal=causal, key_padding_mask=key_padding_mask, bias=bias, dtype=q.dtype, device=q.device
    )
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    if key_padding_mask is not None or causal:
        return torch.nan_to_num(out, nan=0.0)  # fully masked rows: softmax over nothing
    return out


class MultiheadAttention(nn.Module):
    """Multi-head self-attention: fused qkv projection, optional QK normalisation, output projection.

    Args:
        dim: model width d.
        num_heads: h (``dim`` must be divisible by it) unless ``head_dim`` is given.
        head_dim: e; with it, ``num_heads = dim // head_dim``.
        qkv_bias: bias in the qkv projection.
        out_bias: bias in the output projection.
        qk_norm: normalise queries and keys per head (``"layer"`` or ``"rms"``, as in ViT-22B /
            OLMo-2) before the dot product; None for none.

    The qkv features are laid out as ``(3, h, e)``, the layout of GPT-2, DiT and TarFlow.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int | None = None,
        *,
        head_dim: int | None = None,
        qkv_bias: bool = True,
        out_bias: bool = True,
        qk_norm: str | None = None,
    ) -> None:
        super().__init__()
        if head_dim is not None:
            if head_dim < 1 or dim % head_dim:
                raise ValueError(f"dim={dim} must be a positive multiple of head_dim={head_dim}")
            num_heads = dim // head_dim
        if num_heads is None or num_heads < 1 or dim % num_heads:
            raise ValueError(f"dim={dim} must be divisible by num_heads={num_heads}")
        self.dim = dim
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=out_bias)
        self.q_norm: nn.Module | None = None
        self.k_norm: nn.Module | None = None
        if qk_norm is not None:
            if qk_norm not in ("layer", "rms"):
                raise ValueError(f"qk_norm must be None, 'layer' or 'rms', got {qk_norm!r}")
            norm = nn.LayerNorm if qk_norm == "layer" else RMSNorm
            self.q_norm, self.k_norm = norm(self.head_dim), norm(self.head_dim)

    def forward(
        self,
        x: Tensor,
        *,
        causal: bool = False,
        key_padding_mask: Tensor | None = None,
        bias: Tensor | None = None,
        cache: KVCache | None = None,
        rotary: nn.Module | None = None,
        temperature: float = 1.0,
    ) -> Tensor:
        """Attend ``x (b, n, d)`` to itself (and to the cached tokens); returns ``(b, n, d)``.

        Args:
            causal: each token sees only earlier ones (and the cache).
            key_padding_mask: ``(b, m)`` bool over all keys (cache included), True = real token.
            bias: additive attention bias broadcastable to ``(b, h, n, m)``.
            cache: a :class:`KVCache` to extend (decoding); positions continue after its length.
            rotary: a :class:`icml25.nn.embeddings.RotaryEmbedding` applied to q and k.
            temperature: divides the logits (τ > 1 flattens attention; TarFlow's guidance branch).
        """
        if x.ndim != 3 or x.shape[-1] != self.dim:
            raise ValueError(f"x must be (batch, tokens, {self.dim}), got {tuple(x.shape)}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        q, k, v = rearrange(self.qkv(x), "b n (t h e) -> t b h n e", t=3, h=self.num_heads)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        offset = 0 if cache is None else len(cache)
        if rotary is not None:
            q, k = rotary(q, offset=offset), rotary(k, offset=offset)
        if cache is not None:
            k, v = cache.append(k, v)
        scale = 1.0 / (math.sqrt(self.head_dim) * temperature)
        out = scaled_dot_product_attention(
            q, k, v, causal=causal, key_padding_mask=key_padding_mask, bias=bias, scale=scale
        )
        return self.proj(rearrange(out, "b h n e -> b n (h e)"))
