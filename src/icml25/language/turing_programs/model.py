"""Hard-ALiBi attention masks and a small decoder whose positional scheme is a constructor option.

Hou et al., *Universal Length Generalization with Turing Programs* (ICML 2025,
https://arxiv.org/abs/2407.03310), Sec. 3, pairs Turing Programs with *Hard-ALiBi* (from Jelassi
et al., *Repeat After Me*, 2024): head h < H_hard attends only to the last m_h tokens — query i sees
keys j with ``i − m_h < j ≤ i`` (an additive −∞ outside the window, no soft distance penalty) — and
every other head is causal with no positional encoding (NoPE). The short-window heads summarise
the local context; the NoPE heads find the same context one configuration back by content and
copy what followed it, which works at any length.

:class:`TinyDecoder` is a pre-norm decoder built from :class:`icml25.nn.TransformerBlock`;
``pos`` chooses ``"hard_alibi"``, ``"nope"``, ``"learned"`` (absolute embeddings) or ``"rope"``.
The Hard-ALiBi windows go into :func:`icml25.nn.attention.scaled_dot_product_attention` as its
additive per-head bias, so KV-cached decoding uses the same masks.

Notation: b batch, h heads, n query tokens, m key tokens (m ≥ n with a cache), d width.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, cast

import torch
import torch.nn.functional as F  # noqa: N812
from einops import rearrange
from torch import Tensor, nn

from icml25.core.validate import check_fields
from icml25.nn import KVCache, MultiheadAttention, RotaryEmbedding, TransformerBlock

__all__ = [
    "POSITIONS",
    "hard_alibi_mask",
    "hard_alibi_bias",
    "hard_alibi_attention",
    "default_windows",
    "DecoderConfig",
    "TinyDecoder",
]

PosKind = Literal["hard_alibi", "nope", "learned", "rope"]
POSITIONS: tuple[str, ...] = ("hard_alibi", "nope", "learned", "rope")


def _check_windows(windows: Sequence[int | None]) -> tuple[int | None, ...]:
    out = tuple(windows)
    if not out:
        raise ValueError("windows must name one entry per head, got none")
    for w in out:
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1):
            raise ValueError(f"windows entries must be positive integers or None (NoPE head), got {w!r}")
    return out


def default_windows(n_heads: int, n_hard: int) -> tuple[int | None, ...]:
    """Windows ``(1, 2, …, n_hard, None, …)``: heads 0 … n_hard−1 hard, window h + 1 (the
    reference code's choice), the rest NoPE."""
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    if isinstance(n_hard, bool) or not isinstance(n_hard, int) or not 0 <= n_hard <= n_heads:
        raise ValueError(f"n_hard must be an integer in [0, n_heads={n_heads}], got {n_hard!r}")
    return tuple(h + 1 for h in range(n_hard)) + (None,) * (n_heads - n_hard)


def hard_alibi_mask(seq_len: int, windows: Sequence[int | None], *, offset: int = 0) -> Tensor:
    """Which keys each query may see, per head: ``(h, n, offset + n)`` bool (True = attend).

    Query i (absolute position ``offset + i``) sees key j iff ``j ≤ offset + i`` (causal) and, for a
    head with window w, ``offset + i − j < w``; a head with window None is plain causal (NoPE).

    Args:
        seq_len: n, the number of queries (the last n positions).
        windows: one entry per head: a window m_h ≥ 1 or None.
        offset: earlier keys (from a cache) before the n queries.
    """
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1:
        raise ValueError(f"seq_len must be a positive integer, got {seq_len!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be an integer >= 0, got {offset!r}")
    wins = _check_windows(windows)
    m = offset + seq_len
    q = torch.arange(offset, m)[:, None]
    dist = q - torch.arange(m)[None, :]  # (n, m): i − j
    causal = dist >= 0
    out = []
    for w in wins:
        out.append(causal if w is None else causal & (dist < w))
    return torch.stack(out)


def hard_alibi_bias(windows: Sequence[int | None], n: int, m: int | None = None) -> Tensor:
    """Additive bias ``(h, n, m)``: 0 where :func:`hard_alibi_mask` allows, −inf outside a window.

    Future keys get 0 here (the attention's causal mask removes them), so the bias composes with
    ``causal=True`` exactly like ALiBi's.
    """
    m = n if m is None else m
    if m < n:
        raise ValueError(f"m (keys, {m}) must be >= n (queries, {n})")
    allowed = hard_alibi_mask(n, windows, offset=m - n)
    future = torch.arange(m)[None, :] > torch.arange(m - n, m)[:, None]
    allowed = allowed | future[None]
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))


@lru_cache(maxsize=256)
def _cached_bias(windows: tuple[int | None, ...], n: int, m: int) -> Tensor:
    return hard_alibi_bias(windows, n, m)


@lru_cache(maxsize=256)
def _causal_hard_alibi_bias(windows: tuple[int | None, ...], n: int) -> Tensor:
    """:func:`hard_alibi_bias` plus the causal mask, ``(h, n, n)``: what the shared attention adds."""
    from icml25.nn.attention import attention_mask

    mask = attention_mask(n, n, causal=True, bias=hard_alibi_bias(windows, n))
    if mask is None:  # pragma: no cover - causal=True always gives a mask
        raise RuntimeError("attention_mask returned no mask")
    return mask


def hard_alibi_attention(q: Tensor, k: Tensor, v: Tensor, windows: Sequence[int | None]) -> Tensor:
    """Causal self-attention with Hard-ALiBi windows, computed window by window (no cache).

    The same function as ``softmax(q kᵀ/√e + hard_alibi_bias + causal mask) v`` (Sec. 3 of the paper,
    Hard-ALiBi from Jelassi et al. 2024), equal to it up to float round-off: a head with window w
    only needs its last w keys, so the hard heads score ``(n, max w)`` windows of keys instead of
    ``(n, n)`` matrices, and the NoPE heads (window None) go through PyTorch's fused causal kernel.
    Meant for evaluation (no gradient is needed; it is correct with one, but not faster).

    Args:
        q, k, v: ``(b, h, n, e)`` queries, keys and values of the same n tokens.
        windows: one entry per head, a window ≥ 1 or None (NoPE head), as :func:`hard_alibi_mask`.

    Returns:
        ``(b, h, n, e)``.
    """
    wins = _check_windows(windows)
    if q.ndim != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(
            f"q, k, v must be (batch, heads, n, e) of one shape, got {tuple(q.shape)}, {tuple(k.shape)}, "
            f"{tuple(v.shape)}"
        )
    if q.shape[1] != len(wins):
        raise ValueError(f"windows must name one entry per head ({q.shape[1]}), got {len(wins)}")
    n, e = q.shape[2], q.shape[3]
    scale = 1.0 / math.sqrt(e)
    out = torch.empty_like(q)
    nope = [i for i, w in enumerate(wins) if w is None]
    hard = [i for i, w in enumerate(wins) if w is not None]
    if nope:
        idx = torch.tensor(nope, device=q.device)
        out[:, idx] = F.scaled_dot_product_attention(
            q[:, idx], k[:, idx], v[:, idx], is_causal=True, scale=scale
        )
    if hard:
        idx = torch.tensor(hard, device=q.device)
        hw = torch.tensor([wins[i] for i in hard], device=q.device)
        width = int(hw.max())
        # key slot s of query i holds position i - (width - 1) + s, at distance d = width - 1 - s
        kw = F.pad(k[:, idx], (0, 0, width - 1, 0)).unfold(2, width, 1)  # (b, hh, n, e, width)
        vw = F.pad(v[:, idx], (0, 0, width - 1, 0)).unfold(2, width, 1)
        dist = width - 1 - torch.arange(width, device=q.device)
        pos = torch.arange(n, device=q.device)[:, None] - dist[None, :]  # (n, width)
        allowed = (dist[None, None, :] < hw[:, None, None]) & (pos >= 0)[None]  # (hh, n, width)
        mask = torch.zeros(allowed.shape, dtype=q.dtype, device=q.device).masked_fill(~allowed, float("-inf"))
        scores = torch.einsum("bhne,bhnes->bhns", q[:, idx], kw) * scale + mask
        out[:, idx] = torch.einsum("bhns,bhnes->bhne", scores.softmax(-1), vw)
    return out


@dataclass(frozen=True)
class DecoderConfig:
    """The decoder's shape and positional scheme.

    Args:
        vocab_size: tokens in the vocabulary.
        d_model: width d.
        n_layers: transformer blocks.
        n_heads: heads per block (d must be divisible by it).
        mlp_ratio: MLP hidden width over d.
        pos: ``"hard_alibi"``, ``"nope"``, ``"learned"`` or ``"rope"``.
        n_hard: Hard-ALiBi heads per layer (windows 1 … n_hard); the rest are NoPE.
        max_len: positions of the learned table (``"learned"`` only; longer inputs are an error).
    """

    vocab_size: int
    d_model: int = 96
    n_layers: int = 3
    n_heads: int = 8
    mlp_ratio: float = 4.0
    pos: PosKind = "hard_alibi"
    n_hard: int = 4
    max_len: int = 512

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("vocab_size", "d_model", "n_layers", "n_heads", "max_len"))
        check_fields(self, positive=("mlp_ratio",), non_negative_int=("n_hard",))
        if self.pos not in POSITIONS:
            raise ValueError(f"DecoderConfig.pos must be one of {POSITIONS}, got {self.pos!r}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"DecoderConfig.d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        if self.n_hard > self.n_heads:
            raise ValueError(f"DecoderConfig.n_hard ({self.n_hard}) must be <= n_heads ({self.n_heads})")

    @property
    def windows(self) -> tuple[int | None, ...]:
        return default_windows(self.n_heads, self.n_hard if self.pos == "hard_alibi" else 0)


class TinyDecoder(nn.Module):
    """Token embedding → ``n_layers`` pre-norm causal blocks → LayerNorm → vocabulary logits."""

    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        if not isinstance(cfg, DecoderConfig):
            raise TypeError(f"cfg must be a DecoderConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, d)
        self.pos_embed = nn.Embedding(cfg.max_len, d) if cfg.pos == "learned" else None
        self.rotary = RotaryEmbedding(d // cfg.n_heads) if cfg.pos == "rope" else None
        self.blocks = nn.ModuleList(
            TransformerBlock(d, cfg.n_heads, mlp_ratio=cfg.mlp_ratio) for _ in range(cfg.n_layers)
        )
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, cfg.vocab_size, bias=False)
        self.apply(_init)

    def new_caches(self) -> list[KVCache]:
        """One empty :class:`icml25.nn.KVCache` per block (for :meth:`forward` ``caches=``)."""
        return [KVCache() for _ in self.blocks]

    def forward(self, tokens: Tensor, *, caches: Sequence[KVCache] | None = None) -> Tensor:
        """Logits ``(b, n, V)`` for ids ``(b, n)``; with ``caches`` the tokens follow the cached ones."""
        if not isinstance(tokens, Tensor) or tokens.dtype != torch.long or tokens.ndim != 2:
            raise TypeError("tokens must be a (batch, n) torch.long tensor")
        if tokens.numel() == 0:
            raise ValueError("tokens must be non-empty")
        if tokens.min() < 0 or tokens.max() >= self.cfg.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.cfg.vocab_size})")
        if caches is not None and len(caches) != len(self.blocks):
            raise ValueError(f"caches must hold one KVCache per block ({len(self.blocks)})")
        n = tokens.shape[1]
        offset = len(caches[0]) if caches is not None else 0
        m = offset + n
        x = self.embed(tokens)
        if self.pos_embed is not None:
            if m > self.cfg.max_len:
                raise ValueError(
                    f"sequence of {m} tokens exceeds the learned positions (max_len={self.cfg.max_len})"
                )
            x = x + self.pos_embed(torch.arange(offset, m, device=tokens.device))[None]
        if caches is None and self.cfg.pos == "hard_alibi" and self.cfg.n_hard > 0:
            return self._windowed_forward(x) if not torch.is_grad_enabled() else self._masked_forward(x)
        bias = None
        if self.cfg.pos == "hard_alibi" and self.cfg.n_hard > 0:
            bias = _cached_bias(self.cfg.windows, n, m).to(x.device, x.dtype)
        for i, block in enumerate(self.blocks):
            cache = caches[i] if caches is not None else None
            x = block(x, causal=True, bias=bias, cache=cache, rotary=self.rotary)
        return self.head(self.norm(x))

    def _blocks_with(self, x: Tensor, attend: Callable[[Tensor, Tensor, Tensor], Tensor]) -> Tensor:
        """The blocks of :meth:`forward` (no cache) with ``attend(q, k, v)`` as the attention core."""
        for block in self.blocks:
            attn = cast(MultiheadAttention, block.attn)
            if attn.q_norm is not None or block.adaLN is not None:  # pragma: no cover - not built here
                raise RuntimeError("this path supports plain TransformerBlocks only")
            q, k, v = rearrange(attn.qkv(block.norm1(x)), "b n (t h e) -> t b h n e", t=3, h=attn.num_heads)
            x = x + attn.proj(rearrange(attend(q, k, v), "b h n e -> b n (h e)"))
            x = x + block.mlp(block.norm2(x))
        return self.head(self.norm(x))

    def _windowed_forward(self, x: Tensor) -> Tensor:
        """Inference without a cache: attention by :func:`hard_alibi_attention` (same function,
        round-off apart; a window costs its width, not the sequence length)."""
        return self._blocks_with(x, lambda q, k, v: hard_alibi_attention(q, k, v, self.cfg.windows))

    def _masked_forward(self, x: Tensor) -> Tensor:
        """Training without a cache: the shared attention's own arithmetic (PyTorch's math kernel:
        q and k each scaled by e^(-1/4), the additive mask, the softmax; the same numbers bit for bit,
        tested) without its guard for rows that see no key, which a causal mask never leaves, and with
        the mask built once per length."""
        mask = _causal_hard_alibi_bias(self.cfg.windows, x.shape[1]).to(x.device, x.dtype)

        def attend(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
            root = math.sqrt(1.0 / math.sqrt(q.shape[-1]))
            scores = (q * root) @ (k.transpose(-2, -1) * root)
            return (scores + mask).softmax(-1) @ v

        return self._blocks_with(x, attend)


def _init(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
