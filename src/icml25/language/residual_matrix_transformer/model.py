"""The Residual Matrix Transformer and its GPT twin, from *Residual Matrix Transformers: Scaling the
Size of the Residual Stream* (Mak & Flanigan, ICML 2025, https://arxiv.org/abs/2506.22696).

The RMT replaces each token's residual-stream vector with a ``D_k × D_v`` matrix used as an
outer-product associative memory (Kohonen 1972; Anderson 1972). A layer *stores* R data vectors
``x_h ∈ R^{D_v}`` by adding ``Σ_h w_h ⊗ x_h`` with learned key vectors ``w_h ∈ R^{D_k}`` (Eq. 12,
18-20, 23) and *retrieves* a data vector with the contraction ``r ·₁ X = rᵀX`` (Eq. 13, 22, 25, 27).
The attention projections W_Q, W_K, W_V, W_O become key vectors; the feed-forward core is kept and
framed by key-vector adapters. Growing ``D_k`` grows the residual stream at almost no cost in
parameters or FLOPs (Sec. 3.1).

Notation: b batch, n tokens, k residual key dim D_k, v residual value dim D_v (= head dim), r rank R
(heads and data vectors per layer), f feed-forward width D_FF, c vocabulary V.

Implements: Eq. (14)-(27) (embedding, attention, feed-forward and unembedding of the RMT) and the
transformer of Eq. (1)-(11) built from :class:`icml25.nn.TransformerBlock`, both pre-norm with no
biases and no weight tying (App. C.1), learned positions (App. C.1) or ALiBi (the released code),
and the training tricks of App. C.1 / the released code: the query read-vectors and the unembedding
start at zero, residual writes are scaled by 1/√(2L) at initialisation, attention logits are divided
by the layer index + 1 (Mistral's inverse layer scaling). Weights are drawn from ``N(0, σ²/fan_in)``
(σ = ``init_std``): with σ = 1 this is LeCun initialisation (App. C.4), under which a store over R
vectors and a retrieval over D_k entries both keep the variance of their input (App. B); the
released code uses σ = 0.02.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields
from icml25.nn.attention import KVCache, scaled_dot_product_attention
from icml25.nn.blocks import TransformerBlock, make_norm
from icml25.nn.embeddings import alibi_bias

__all__ = [
    "RMTConfig",
    "GPTConfig",
    "read",
    "write",
    "ResidualMatrixTransformer",
    "GPT",
    "lecun_normal_",
]

NormKind = Literal["layer", "rms"]
PosKind = Literal["learned", "alibi"]
ActivationKind = Literal["gelu_tanh", "gelu"]
#: the torch ``approximate=`` argument of each activation
_GELU_APPROX = {"gelu_tanh": "tanh", "gelu": "none"}


# ----------------------------------------------------------------------------------------------
# Configs
# ----------------------------------------------------------------------------------------------


def _check_common(cfg: RMTConfig | GPTConfig) -> None:
    if cfg.norm not in ("layer", "rms"):
        raise ValueError(f"norm must be 'layer' or 'rms', got {cfg.norm!r}")
    if cfg.pos not in ("learned", "alibi"):
        raise ValueError(f"pos must be 'learned' or 'alibi', got {cfg.pos!r}")
    if cfg.activation not in _GELU_APPROX:
        raise ValueError(f"activation must be one of {sorted(_GELU_APPROX)}, got {cfg.activation!r}")
    check_fields(cfg, positive=("norm_eps", "init_std"))


@dataclass(frozen=True)
class RMTConfig:
    """Shape and initialisation of a :class:`ResidualMatrixTransformer`.

    Defaults are the released GPT-2-small-scale config (``params.yaml``: D_k=32, D_v=64, R=12,
    L=12, D_FF=3072, context 512, GPT-2 vocabulary).

    Args:
        vocab_size: V.
        n_ctx: N, the longest sequence (size of the learned position table).
        n_layers: L (attention + feed-forward pairs).
        d_key: D_k, residual key dimension (scales the residual stream almost for free).
        d_value: D_v, residual value dimension = attention head dimension.
        rank: R, heads per attention layer = data vectors read/written per layer.
        d_ff: D_FF, feed-forward width.
        norm: ``"layer"`` (paper) or ``"rms"`` (released code), over the whole D_k × D_v matrix.
        norm_eps: ε of the norms (1e-6 in the paper).
        pos: ``"learned"`` positions (paper, Eq. 19) or ``"alibi"`` biases (released code).
        init_std: σ of the fan-in initialisation ``N(0, σ²/fan_in)``.
        zero_init_query: start the query read-vectors at zero (muP, App. D.2 of Yang et al.).
        zero_init_unembed: start the unembedding at zero.
        residual_scaling: scale residual writes by 1/√(2L) at initialisation (GPT-2).
        inverse_layer_scaling: divide attention logits by (layer index + 1) (Mistral's tweak).
        activation: the feed-forward GELU: ``"gelu_tanh"``, the tanh approximation the released
            code runs (``hax.nn.gelu`` = ``jax.nn.gelu(approximate=True)``), or the exact ``"gelu"``.
    """

    vocab_size: int = 50257
    n_ctx: int = 512
    n_layers: int = 12
    d_key: int = 32
    d_value: int = 64
    rank: int = 12
    d_ff: int = 3072
    norm: NormKind = "layer"
    norm_eps: float = 1e-6
    pos: PosKind = "learned"
    init_std: float = 1.0
    zero_init_query: bool = True
    zero_init_unembed: bool = True
    residual_scaling: bool = True
    inverse_layer_scaling: bool = True
    activation: ActivationKind = "gelu_tanh"

    def __post_init__(self) -> None:
        check_fields(
            self, positive_int=("vocab_size", "n_ctx", "n_layers", "d_key", "d_value", "rank", "d_ff")
        )
        _check_common(self)

    @property
    def residual_size(self) -> int:
        """D_k · D_v, the size of the residual stream."""
        return self.d_key * self.d_value

    @property
    def core_width(self) -> int:
        """R · D_v, the input width of the feed-forward core (the twin transformer's D)."""
        return self.rank * self.d_value


@dataclass(frozen=True)
class GPTConfig:
    """Shape and initialisation of the :class:`GPT` baseline (the paper's Eq. 1-11 transformer).

    Defaults are the released GPT-2-small config (D=768, 12 heads, L=12, D_FF=3072). The other
    fields mean what they mean in :class:`RMTConfig`.
    """

    vocab_size: int = 50257
    n_ctx: int = 512
    n_layers: int = 12
    d_model: int = 768
    n_heads: int = 12
    d_ff: int = 3072
    norm: NormKind = "layer"
    norm_eps: float = 1e-6
    pos: PosKind = "learned"
    init_std: float = 1.0
    zero_init_query: bool = True
    zero_init_unembed: bool = True
    residual_scaling: bool = True
    inverse_layer_scaling: bool = True
    activation: ActivationKind = "gelu_tanh"

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("vocab_size", "n_ctx", "n_layers", "d_model", "n_heads", "d_ff"))
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        _check_common(self)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @classmethod
    def twin_of(cls, rmt: RMTConfig) -> GPTConfig:
        """The transformer whose dimensions mirror ``rmt`` (D = R·D_v, H = R, D_h = D_v)."""
        return cls(
            vocab_size=rmt.vocab_size,
            n_ctx=rmt.n_ctx,
            n_layers=rmt.n_layers,
            d_model=rmt.core_width,
            n_heads=rmt.rank,
            d_ff=rmt.d_ff,
            norm=rmt.norm,
            norm_eps=rmt.norm_eps,
            pos=rmt.pos,
            init_std=rmt.init_std,
            zero_init_query=rmt.zero_init_query,
            zero_init_unembed=rmt.zero_init_unembed,
            residual_scaling=rmt.residual_scaling,
            inverse_layer_scaling=rmt.inverse_layer_scaling,
            activation=rmt.activation,
        )


# ----------------------------------------------------------------------------------------------
# Storage and retrieval (Eq. 12-13)
# ----------------------------------------------------------------------------------------------


def read(state: Tensor, keys: Tensor) -> Tensor:
    """Retrieve one data vector per key: ``x_h = r_h ·₁ X`` (Eq. 13).

    Args:
        state: residual matrices ``(..., k, v)``.
        keys: read vectors ``(r, k)``.

    Returns:
        ``(..., r, v)``.
    """
    if state.ndim < 2 or keys.ndim != 2 or keys.shape[1] != state.shape[-2]:
        raise ValueError(
            f"read: state must be (..., d_key, d_value) and keys (rank, d_key) with the same d_key, "
            f"got {tuple(state.shape)} and {tuple(keys.shape)}"
        )
    return torch.einsum("...kv,rk->...rv", state, keys)


def write(state: Tensor | None, keys: Tensor, data: Tensor) -> Tensor:
    """Store data vectors under keys: ``X + Σ_h w_h ⊗ x_h`` (Eq. 12, without the norm).

    Args:
        state: residual matrices ``(..., k, v)``, or None for an empty store.
        keys: write vectors ``(r, k)``.
        data: data vectors ``(..., r, v)``.

    Returns:
        ``(..., k, v)``.
    """
    if keys.ndim != 2 or data.ndim < 2 or data.shape[-2] != keys.shape[0]:
        raise ValueError(
            f"write: keys must be (rank, d_key) and data (..., rank, d_value) with the same rank, "
            f"got {tuple(keys.shape)} and {tuple(data.shape)}"
        )
    delta = torch.einsum("...rv,rk->...kv", data, keys)
    if state is None:
        return delta
    if state.shape != delta.shape:
        raise ValueError(f"write: state {tuple(state.shape)} does not match the stored {tuple(delta.shape)}")
    return state + delta


def lecun_normal_(weight: Tensor, fan_in: int, std: float, *, gain: float = 1.0) -> Tensor:
    """Fill ``weight`` in place from ``N(0, (gain·std)²/fan_in)`` (fan-in / LeCun / muP-style)."""
    with torch.no_grad():
        return weight.normal_(0.0, gain * std / math.sqrt(fan_in))


def _check_tokens(tokens: Tensor, vocab_size: int, n_ctx: int) -> None:
    if not isinstance(tokens, Tensor) or tokens.dtype not in (torch.int64, torch.int32, torch.uint8):
        raise TypeError(
            f"tokens must be an integer tensor (batch, seq), got {getattr(tokens, 'dtype', tokens)}"
        )
    if tokens.ndim != 2 or tokens.shape[0] < 1 or tokens.shape[1] < 1:
        raise ValueError(f"tokens must be (batch, seq) with batch, seq >= 1, got {tuple(tokens.shape)}")
    if tokens.shape[1] > n_ctx:
        raise ValueError(f"tokens has {tokens.shape[1]} positions, more than n_ctx={n_ctx}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size):
        raise ValueError(
            f"token ids must lie in [0, {vocab_size}), got [{int(tokens.min())}, {int(tokens.max())}]"
        )


# ----------------------------------------------------------------------------------------------
# The RMT
# ----------------------------------------------------------------------------------------------


def _retrieve(state_t: Tensor, keys: Tensor) -> Tensor:
    """:func:`read` in the transposed layout: ``(..., v, k)`` → ``(..., v, r)``, one matrix product."""
    return state_t @ keys.t()


def _store(keys: Tensor, data_t: Tensor) -> Tensor:
    """:func:`write` into an empty store, transposed layout: ``(..., v, r)`` → ``(..., v, k)``."""
    return data_t @ keys


class MatrixNorm(nn.Module):
    """LayerNorm or RMSNorm over a whole ``D_k × D_v`` residual matrix (the norm of Eq. 12)."""

    def __init__(self, kind: NormKind, d_key: int, d_value: int, eps: float) -> None:
        super().__init__()
        self.norm = make_norm(kind, d_key * d_value, eps=eps)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(x.flatten(-2)).view(x.shape)


class RMTAttention(nn.Module):
    """Eq. (20)-(22): R heads whose queries, keys and values are retrieved with key vectors and whose
    outputs are stored under the write vectors ``w_O``. Works on transposed states ``(b, n, v, k)``."""

    def __init__(self, cfg: RMTConfig, layer: int) -> None:
        super().__init__()
        self.cfg, self.layer = cfg, layer
        self.norm = MatrixNorm(cfg.norm, cfg.d_key, cfg.d_value, cfg.norm_eps)
        self.qkv_read = nn.Parameter(torch.empty(3 * cfg.rank, cfg.d_key))  # r_Q, r_K, r_V (Eq. 22)
        self.out_write = nn.Parameter(torch.empty(cfg.rank, cfg.d_key))  # w_O (Eq. 20)

    def forward(
        self,
        x_t: Tensor,
        bias: Tensor | None = None,
        *,
        key_padding_mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> Tensor:
        """``x_t (b, n, v, k)`` → the stored update, same shape. With ``cache``, the new keys and
        values are appended to the cached ones and the n queries are the last n positions;
        ``key_padding_mask (b, cached + n)`` is True at real tokens."""
        qkv = _retrieve(self.norm(x_t), self.qkv_read)  # Eq. 22: (b, n, v, 3r)
        q, k, v = qkv.permute(0, 3, 1, 2).chunk(3, dim=1)  # 3 × (b, r, n, v)
        if cache is not None:
            k, v = cache.append(k, v)
        scale = 1.0 / math.sqrt(self.cfg.d_value)
        if self.cfg.inverse_layer_scaling:
            scale /= self.layer + 1
        out = scaled_dot_product_attention(
            q, k, v, causal=True, key_padding_mask=key_padding_mask, bias=bias, scale=scale
        )  # Eq. 21
        return _store(self.out_write, out.permute(0, 2, 3, 1))  # Eq. 20


class RMTFeedForward(nn.Module):
    """Eq. (23)-(25): retrieve R data vectors, run the standard W₂·GELU(W₁·) core on their
    concatenation, split the result into R data vectors and store them under ``w_FF``.

    The R·D_v core features are ordered value-major ``(v, r)`` (the transposed layout's natural
    order), a fixed permutation of the paper's head-major concatenation that W₁ and W₂ absorb."""

    def __init__(self, cfg: RMTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.norm = MatrixNorm(cfg.norm, cfg.d_key, cfg.d_value, cfg.norm_eps)
        self.in_read = nn.Parameter(torch.empty(cfg.rank, cfg.d_key))  # r_FF (Eq. 25)
        self.fc1 = nn.Linear(cfg.core_width, cfg.d_ff, bias=False)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.core_width, bias=False)
        self.out_write = nn.Parameter(torch.empty(cfg.rank, cfg.d_key))  # w_FF (Eq. 23)

    def forward(self, x_t: Tensor) -> Tensor:
        h = _retrieve(self.norm(x_t), self.in_read).flatten(-2)  # Eq. 25: (b, n, v·r)
        h = self.fc2(F.gelu(self.fc1(h), approximate=_GELU_APPROX[self.cfg.activation]))  # Eq. 24
        return _store(self.out_write, h.unflatten(-1, (self.cfg.d_value, self.cfg.rank)))  # Eq. 23


class RMTLayer(nn.Module):
    """One pre-norm attention + feed-forward pair on residual matrices (Eq. 15-16)."""

    def __init__(self, cfg: RMTConfig, layer: int) -> None:
        super().__init__()
        self.attn = RMTAttention(cfg, layer)
        self.ff = RMTFeedForward(cfg)

    def forward(
        self,
        x_t: Tensor,
        bias: Tensor | None = None,
        *,
        key_padding_mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> Tensor:
        x_t = x_t + self.attn(x_t, bias, key_padding_mask=key_padding_mask, cache=cache)
        return x_t + self.ff(x_t)


class ResidualMatrixTransformer(nn.Module):
    """A decoder-only RMT language model: ``tokens (b, n)`` → ``logits (b, n, V)``.

    * :meth:`embed`: Eq. (18)-(19), token and position tables of R data vectors each, stored under
      2R write vectors (one store over 2R → D_k, as the released code does for tokens).
    * ``layers``: L :class:`RMTLayer` s (Eq. 15-16).
    * :meth:`unembed`: Eq. (26)-(27), R retrievals from the normed final matrix, then ``W_U``.

    Layout: inside the model each residual matrix is held transposed, ``(b, n, D_v, D_k)``, so that
    every store and retrieval is one plain matrix product with no copies; :meth:`embed` and
    :meth:`unembed` take and return the paper's ``(b, n, D_k, D_v)``. The data tables are likewise
    value-major (``tok_emb (V, D_v, R)``) and the unembedding reads features in ``(v, r)`` order.
    """

    def __init__(self, cfg: RMTConfig) -> None:
        super().__init__()
        if not isinstance(cfg, RMTConfig):
            raise TypeError(f"cfg must be an RMTConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        r, k, v = cfg.rank, cfg.d_key, cfg.d_value
        self.tok_emb = nn.Parameter(torch.empty(cfg.vocab_size, v, r))  # W_E^(h)[:, token] (Eq. 18)
        self.pos_emb = nn.Parameter(torch.empty(cfg.n_ctx, v, r)) if cfg.pos == "learned" else None
        n_store = 2 * r if cfg.pos == "learned" else r
        self.emb_write = nn.Parameter(torch.empty(n_store, k))  # w_E^(h) then w_PE^(h)
        self.layers = nn.ModuleList(RMTLayer(cfg, i) for i in range(cfg.n_layers))
        self.norm = MatrixNorm(cfg.norm, k, v, cfg.norm_eps)
        self.unembed_read = nn.Parameter(torch.empty(r, k))  # r_U^(h) (Eq. 27)
        self.unembedding = nn.Linear(r * v, cfg.vocab_size, bias=False)  # [W_U^(h)] (Eq. 26)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fan-in normal initialisation with the App. C.1 tricks (module docstring)."""
        cfg, std = self.cfg, self.cfg.init_std
        r, k = cfg.rank, cfg.d_key
        res_gain = 1.0 / math.sqrt(2 * cfg.n_layers) if cfg.residual_scaling else 1.0
        # input-type weights (one-hot inputs, fan-in 1)
        lecun_normal_(self.tok_emb, 1, std)
        if self.pos_emb is not None:
            lecun_normal_(self.pos_emb, 1, std)
        # a store over m data vectors has fan-in m; a retrieval has fan-in D_k (App. B)
        lecun_normal_(self.emb_write, self.emb_write.shape[0], std)
        for layer in self.layers:
            assert isinstance(layer, RMTLayer)
            lecun_normal_(layer.attn.qkv_read, k, std)
            if cfg.zero_init_query:
                with torch.no_grad():
                    layer.attn.qkv_read[:r].zero_()
            lecun_normal_(layer.attn.out_write, r, std, gain=res_gain)
            lecun_normal_(layer.ff.in_read, k, std)
            lecun_normal_(layer.ff.fc1.weight, cfg.core_width, std)
            lecun_normal_(layer.ff.fc2.weight, cfg.d_ff, std)
            lecun_normal_(layer.ff.out_write, r, std, gain=res_gain)
        lecun_normal_(self.unembed_read, k, std)
        if cfg.zero_init_unembed:
            nn.init.zeros_(self.unembedding.weight)
        else:
            lecun_normal_(self.unembedding.weight, cfg.core_width, std)

    def _embed_t(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        _check_tokens(tokens, self.cfg.vocab_size, self.cfg.n_ctx)
        data = self.tok_emb[tokens.long()]  # (b, n, v, r)
        if self.pos_emb is not None:
            if positions is None:
                pos = self.pos_emb[: tokens.shape[1]].expand(tokens.shape[0], -1, -1, -1)
            else:
                pos = self.pos_emb[positions.long()]
            data = torch.cat([data, pos], dim=-1)  # (b, n, v, 2r)
        return _store(self.emb_write, data)

    def _unembed_t(self, state_t: Tensor) -> Tensor:
        return self.unembedding(_retrieve(self.norm(state_t), self.unembed_read).flatten(-2))

    def embed(self, tokens: Tensor) -> Tensor:
        """Eq. (18)-(19): ``tokens (b, n)`` → residual matrices ``(b, n, k, v)``."""
        return self._embed_t(tokens).transpose(-1, -2)

    def unembed(self, state: Tensor) -> Tensor:
        """Eq. (26)-(27): residual matrices ``(b, n, k, v)`` → logits ``(b, n, V)``."""
        return self._unembed_t(state.transpose(-1, -2))

    def attention_bias(self, n: int, m: int | None = None) -> Tensor | None:
        """ALiBi biases ``(r, n, m)`` (the n queries are the last of m keys) when ``pos == "alibi"``."""
        if self.cfg.pos != "alibi":
            return None
        return alibi_bias(self.cfg.rank, n, m).to(self.tok_emb.device, self.tok_emb.dtype)

    def forward(
        self,
        tokens: Tensor,
        *,
        key_padding_mask: Tensor | None = None,
        positions: Tensor | None = None,
        caches: list[KVCache] | None = None,
    ) -> Tensor:
        """``tokens (b, n)`` integer ids → logits ``(b, n, V)`` (causal: position i sees ≤ i).

        For incremental decoding (:mod:`.hf` uses it): ``caches`` holds one :class:`KVCache` per
        layer (the tokens are the n after the cached ones), ``key_padding_mask (b, cached + n)`` is
        True at real tokens, and ``positions (b, n)`` index the learned position table (default
        ``cached, …, cached + n − 1``; with left padding, count real tokens only).
        """
        past = len(caches[0]) if caches else 0
        if caches is not None and len(caches) != len(self.layers):
            raise ValueError(f"caches: {len(caches)} caches for {len(self.layers)} layers")
        if past:
            _check_tokens(tokens, self.cfg.vocab_size, self.cfg.n_ctx)
            if past + tokens.shape[1] > self.cfg.n_ctx:
                raise ValueError(
                    f"tokens: {past} cached + {tokens.shape[1]} new positions exceed n_ctx={self.cfg.n_ctx}"
                )
        if positions is None and past:
            positions = torch.arange(past, past + tokens.shape[1], device=tokens.device).expand_as(tokens)
        x_t = self._embed_t(tokens, positions)
        bias = self.attention_bias(tokens.shape[1], past + tokens.shape[1])
        for i, layer in enumerate(self.layers):
            cache = caches[i] if caches is not None else None
            x_t = layer(x_t, bias, key_padding_mask=key_padding_mask, cache=cache)
        return self._unembed_t(x_t)


# ----------------------------------------------------------------------------------------------
# The transformer twin
# ----------------------------------------------------------------------------------------------


class GPT(nn.Module):
    """The paper's baseline transformer (Eq. 1-11): learned token (and position) embeddings,
    L pre-norm :class:`icml25.nn.TransformerBlock` s without biases, a final norm and an untied
    unembedding. ``tokens (b, n)`` → ``logits (b, n, V)``."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        if not isinstance(cfg, GPTConfig):
            raise TypeError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        d = cfg.d_model
        self.tok_emb = nn.Embedding(cfg.vocab_size, d)
        self.pos_emb = nn.Embedding(cfg.n_ctx, d) if cfg.pos == "learned" else None
        self.blocks = nn.ModuleList(
            TransformerBlock(
                d,
                cfg.n_heads,
                norm=cfg.norm,
                norm_eps=cfg.norm_eps,
                activation=cfg.activation,
                qkv_bias=False,
                proj_bias=False,
                mlp_bias=False,
                mlp_hidden=cfg.d_ff,
            )
            for _ in range(cfg.n_layers)
        )
        self.norm = make_norm(cfg.norm, d, eps=cfg.norm_eps)
        self.unembedding = nn.Linear(d, cfg.vocab_size, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The same fan-in rule and tricks as :meth:`ResidualMatrixTransformer.reset_parameters`."""
        cfg, std, d = self.cfg, self.cfg.init_std, self.cfg.d_model
        res_gain = 1.0 / math.sqrt(2 * cfg.n_layers) if cfg.residual_scaling else 1.0
        lecun_normal_(self.tok_emb.weight, 1, std)
        if self.pos_emb is not None:
            lecun_normal_(self.pos_emb.weight, 1, std)
        for block in self.blocks:
            assert isinstance(block, TransformerBlock)
            lecun_normal_(block.attn.qkv.weight, d, std)
            if cfg.zero_init_query:
                with torch.no_grad():
                    block.attn.qkv.weight[:d].zero_()  # rows of W_Q (qkv layout (3, h, e))
            lecun_normal_(block.attn.proj.weight, d, std, gain=res_gain)
            lecun_normal_(block.mlp.fc1.weight, d, std)
            lecun_normal_(block.mlp.fc2.weight, cfg.d_ff, std, gain=res_gain)
        if cfg.zero_init_unembed:
            nn.init.zeros_(self.unembedding.weight)
        else:
            lecun_normal_(self.unembedding.weight, d, std)

    def forward(self, tokens: Tensor) -> Tensor:
        """``tokens (b, n)`` integer ids → logits ``(b, n, V)`` (causal)."""
        _check_tokens(tokens, self.cfg.vocab_size, self.cfg.n_ctx)
        n = tokens.shape[1]
        x = self.tok_emb(tokens.long())
        if self.pos_emb is not None:
            x = x + self.pos_emb.weight[:n]
        bias = None
        if self.cfg.pos == "alibi":
            bias = alibi_bias(self.cfg.n_heads, n).to(x.device, x.dtype)
        for i, block in enumerate(self.blocks):
            temperature = float(i + 1) if self.cfg.inverse_layer_scaling else 1.0
            x = block(x, causal=True, bias=bias, temperature=temperature)
        return self.unembedding(self.norm(x))
