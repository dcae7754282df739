"""WGFormer: an SE(3)-invariant pair transformer whose layers are Wasserstein-gradient-flow steps.

Wang, Cheng, Xu, *WGFormer: An SE(3)-Transformer Driven by Wasserstein Gradient Flows for Molecular
Ground-State Conformation Prediction*, ICML 2025, https://arxiv.org/abs/2410.09795 (official code
https://github.com/FanmengWang/WGFormer, built on Uni-Mol).

Atoms are tokens (``[CLS]`` and ``[SEP]`` around them, placed at the centroid); the only geometry the
encoder sees is the matrix of input distances, through a Gaussian basis with a per-edge-type affine map
and a per-head pair bias (Sec. 3.2). Each WGFormer layer (Sec. 3.3) ties query and key to one
projection ``W``, uses ``-W Wᵀ`` as the value map, and normalises the attention with a few log-domain
Sinkhorn iterations, so the attention is (nearly) doubly stochastic and the residual update is an
explicit Euler step of a Wasserstein gradient flow of an energy over the token mixture (the Sinkformer
reading, Sander et al., AISTATS 2022). The pre-normalisation logits of each layer become the next
layer's pair bias (Uni-Mol's pair track). The decoder (Sec. 3.4) reads how far the pair representation
moved, ``Δ = S^L - B^0``, maps it to one scalar ``c_ij`` per pair and moves each atom along the
difference vectors, ``x̂_i = x_i + Σ_j (x_j - x_i) c_ij / (n_tok - 1)``, which is SE(3)-equivariant
because ``c`` depends on distances only.

Implements: the distance featurisation, the Sinkhorn attention (Eq. for ``P = n Π`` with masked,
uniform marginals over valid tokens: a deliberate change from the official code, which uses the padded
length), the layer, the pair track and the decoder. Two places where the official code and the text
differ are flags whose defaults are the official code's (which produced the paper's numbers): the
value map (``value_map="official"``: ``x @ -(A Aᵀ)`` for the ``nn.Linear`` weight ``A``; ``"paper"``:
``-x W Wᵀ`` with ``W = Aᵀ`` the query map) and the detached Sinkhorn column potential
(``sinkhorn_detach=True``). Two baselines share everything but the attention:
``attention="softmax"`` (separate Q, K, V; softmax; the usual transformer) and ``"shared_softmax"``
(tied QK and ``-W Wᵀ`` values with softmax: the ablation that separates the two ingredients).

Notation: b batch, n tokens, d width, h heads, e head width (d / h), k Gaussian kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from einops import rearrange
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_finite_tensor
from icml25.nn.blocks import MLP

from .data import PAD, VOCAB

__all__ = [
    "AttentionKind",
    "WGFormerConfig",
    "WGFormerOutput",
    "GaussianDistanceBias",
    "sinkhorn",
    "SinkhornAttention",
    "WGFormerLayer",
    "WGFormer",
    "centre",
    "equivariant_update",
    "pairwise_distances",
]

AttentionKind = Literal["sinkhorn", "softmax", "shared_softmax"]
ATTENTIONS: tuple[str, ...] = ("sinkhorn", "softmax", "shared_softmax")
ValueMap = Literal["official", "paper"]
VALUE_MAPS: tuple[str, ...] = ("official", "paper")
_NEG = -1e9  # stands for -inf on masked pairs


@dataclass(frozen=True)
class WGFormerConfig:
    """Model shape; the defaults are the paper's (``train.sh`` / ``WGFormer_architecture``).

    Args:
        vocab_size: token vocabulary (default: :data:`~icml25.life.wgformer.data.VOCAB`).
        dim: token width ``d``.
        layers: number of WGFormer layers ``L``.
        heads: attention heads ``H`` (head width ``d / H``; 8 in the paper).
        ffn: hidden width of the feed-forward block.
        n_gauss: Gaussian kernels ``K`` of the distance basis.
        n_iter: Sinkhorn half-iterations (odd: the last one normalises rows).
        dropout: dropout after attention and FFN, and on the embedding.
        attention: ``"sinkhorn"`` (WGFormer), ``"softmax"`` or ``"shared_softmax"`` (baselines).
        zero_init_decoder: zero the decoder's last layer, so an untrained model returns its input.
        value_map: the tied value map. With ``A`` the ``nn.Linear`` weight (so ``q = k = x Aᵀ``),
            ``"official"`` (default; what produced the paper's numbers) is the official code's
            ``v = x @ -(A Aᵀ)``; ``"paper"`` is the text's ``v = -x W Wᵀ`` with ``W = Aᵀ`` the query
            map, i.e. ``v = -x Aᵀ A``. They differ unless ``A`` is normal.
        sinkhorn_detach: detach the column potential after each column half-iteration, as the
            official ``SinkhornDistance`` does (default); ``False`` differentiates through every
            half-iteration. The forward values are the same.
    """

    vocab_size: int = len(VOCAB)
    dim: int = 512
    layers: int = 30
    heads: int = 64
    ffn: int = 2048
    n_gauss: int = 128
    n_iter: int = 3
    dropout: float = 0.1
    attention: AttentionKind = "sinkhorn"
    zero_init_decoder: bool = True
    value_map: ValueMap = "official"
    sinkhorn_detach: bool = True

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("vocab_size", "dim", "layers", "heads", "ffn", "n_gauss", "n_iter"),
            probability=("dropout",),
        )
        if self.dim % self.heads:
            raise ValueError(f"WGFormerConfig.dim ({self.dim}) must be divisible by heads ({self.heads})")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"WGFormerConfig.attention must be one of {ATTENTIONS}, got {self.attention!r}")
        if self.value_map not in VALUE_MAPS:
            raise ValueError(f"WGFormerConfig.value_map must be one of {VALUE_MAPS}, got {self.value_map!r}")


@dataclass(frozen=True)
class WGFormerOutput:
    """What :class:`WGFormer` returns.

    Attributes:
        coords: ``[b, n, 3]`` predicted coordinates (special tokens at the input centroid, pads 0).
        distances: ``[b, n, n]`` distances of ``coords``.
        attention: per layer ``[b, h, n, n]`` attention matrices (only when asked for).
    """

    coords: Tensor
    distances: Tensor
    attention: tuple[Tensor, ...] = ()


def pairwise_distances(x: Tensor) -> Tensor:
    """``[..., n, 3] -> [..., n, n]`` Euclidean distances, with a zero-safe gradient on the diagonal."""
    diff = x.unsqueeze(-2) - x.unsqueeze(-3)
    sq = diff.pow(2).sum(-1)
    return torch.where(sq > 0, sq.clamp_min(1e-12).sqrt(), torch.zeros_like(sq))


def centre(x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Subtract the centroid over ``mask``ed rows: ``(x - c, c)`` with ``c`` of shape ``[b, 1, 3]``."""
    m = mask.unsqueeze(-1).to(x.dtype)
    c = (x * m).sum(-2, keepdim=True) / m.sum(-2, keepdim=True).clamp_min(1.0)
    return x - c, c


class GaussianDistanceBias(nn.Module):
    """Distances -> per-head pair bias ``B^0`` (Sec. 3.2; Uni-Mol's ``GaussianLayer`` + head).

    ``u = mul[e] d_ij + bias[e]`` with per-edge-type scalars (``e = min(t_i,t_j) V + max(t_i,t_j)``),
    ``φ_k(u) = N(u; μ_k, |σ_k| + 1e-5)``, then Linear-GELU-Linear to one value per head.
    """

    def __init__(self, vocab_size: int, n_gauss: int, heads: int) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.mul = nn.Embedding(vocab_size * vocab_size, 1)
        self.bias = nn.Embedding(vocab_size * vocab_size, 1)
        self.means = nn.Parameter(torch.empty(n_gauss).uniform_(0.0, 3.0))
        self.stds = nn.Parameter(torch.empty(n_gauss).uniform_(0.0, 3.0))
        nn.init.ones_(self.mul.weight)
        nn.init.zeros_(self.bias.weight)
        self.head = nn.Sequential(nn.Linear(n_gauss, n_gauss), nn.GELU(), nn.Linear(n_gauss, heads))

    def edge_type(self, tokens: Tensor) -> Tensor:
        """``[b, n] -> [b, n, n]`` unordered pair types."""
        ti, tj = tokens.unsqueeze(-1), tokens.unsqueeze(-2)
        return torch.minimum(ti, tj) * self.vocab_size + torch.maximum(ti, tj)

    def forward(self, distance: Tensor, tokens: Tensor) -> Tensor:
        """``distance [b, n, n]``, ``tokens [b, n]`` -> bias ``[b, h, n, n]``."""
        e = self.edge_type(tokens)
        u = self.mul(e).squeeze(-1) * distance + self.bias(e).squeeze(-1)  # [b, n, n]
        std = self.stds.abs() + 1e-5
        z = (u.unsqueeze(-1) - self.means) / std
        phi = torch.exp(-0.5 * z.pow(2)) / (math.sqrt(2 * math.pi) * std)  # [b, n, n, k]
        return rearrange(self.head(phi.to(self.means.dtype)), "b i j h -> b h i j")


def sinkhorn(logits: Tensor, mask: Tensor, n_iter: int = 3, *, detach_columns: bool = True) -> Tensor:
    """Doubly-stochastic attention ``P = n Π`` by log-domain Sinkhorn (ε = 1) with masked marginals.

    ``Π = exp(S + u 1ᵀ + 1 vᵀ)`` has uniform marginals ``1/n`` over the ``n`` valid tokens of each
    molecule; the half-iterations alternate ``u ← log(1/n) - LSE_j(S_ij + v_j)`` (rows) and
    ``v ← log(1/n) - LSE_i(S_ij + u_i)`` (columns), starting with rows. After an odd ``n_iter`` the
    rows of ``P`` sum to 1 exactly and the columns approximately; rows and columns of padding are 0.

    Args:
        logits: ``[b, h, n, n]`` scores ``S``.
        mask: ``[b, n]`` bool, valid tokens.
        n_iter: number of half-iterations (>= 1).
        detach_columns: treat the column potential ``v`` as a constant for the gradient (the official
            code detaches it after every column step; default). ``False``: differentiate through
            every half-iteration. The returned values are identical either way.
    """
    if n_iter < 1:
        raise ValueError(f"n_iter must be >= 1, got {n_iter}")
    valid = mask[:, None, :, None] & mask[:, None, None, :]  # [b, 1, n, n]
    s = logits.masked_fill(~valid, _NEG)  # finite: padded rows must not put NaN into gradients
    n = mask.sum(-1).to(logits.dtype).clamp_min(1.0)[:, None, None]  # [b, 1, 1]
    log_a = torch.where(mask[:, None, :], -torch.log(n), torch.zeros((), dtype=logits.dtype))  # [b, 1, n]
    u = torch.zeros(logits.shape[:-1], dtype=logits.dtype, device=logits.device)  # rows  [b, h, n]
    v = torch.zeros_like(u)  # columns
    for it in range(n_iter):
        if it % 2 == 0:
            u = log_a - torch.logsumexp(s + v.unsqueeze(-2), dim=-1)
            u = torch.where(mask[:, None, :], u, torch.zeros_like(u))  # all -inf rows: keep finite
        else:
            v = log_a - torch.logsumexp(s + u.unsqueeze(-1), dim=-2)
            v = torch.where(mask[:, None, :], v, torch.zeros_like(v))
            if detach_columns:
                v = v.detach()
    log_pi = s + u.unsqueeze(-1) + v.unsqueeze(-2)
    return (log_pi.exp() * n.unsqueeze(-1)).masked_fill(~valid, 0.0)


class SinkhornAttention(nn.Module):
    """Pair-biased multi-head attention, WGFormer's (Sec. 3.3) or a baseline's.

    ``"sinkhorn"``: ``q = k = x W``, ``v = -x W Wᵀ`` (in the official code's orientation by default:
    see :class:`WGFormerConfig` ``value_map``), logits ``S = q kᵀ / e + B`` (the official
    scaling: ``q`` scaled by ``e^{-1/2}``, the product by another ``e^{-1/2}``), ``P = sinkhorn(S)``.
    ``"shared_softmax"``: the same maps with softmax. ``"softmax"``: separate Q, K, V projections,
    ``S = q kᵀ / √e + B``, softmax. The output is ``out_proj(concat_h P_h v_h)``; the logits ``S``
    are returned too (the next layer's pair bias).
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        *,
        n_iter: int = 3,
        kind: AttentionKind = "sinkhorn",
        value_map: ValueMap = "official",
        detach_columns: bool = True,
    ) -> None:
        super().__init__()
        if kind not in ATTENTIONS:
            raise ValueError(f"kind must be one of {ATTENTIONS}, got {kind!r}")
        if value_map not in VALUE_MAPS:
            raise ValueError(f"value_map must be one of {VALUE_MAPS}, got {value_map!r}")
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        self.heads, self.kind, self.n_iter = heads, kind, n_iter
        self.value_map, self.detach_columns = value_map, detach_columns
        self.head_dim = dim // heads
        if kind == "softmax":
            self.qkv = nn.Linear(dim, 3 * dim)
            self.scale = self.head_dim**-0.5
        else:
            self.w = nn.Linear(dim, dim)  # the one W shared by query, key and (as -W Wᵀ) value
            self.scale = 1.0 / self.head_dim
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor, bias: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``x [b, n, d]``, ``bias [b, h, n, n]``, ``mask [b, n]`` -> ``(out, logits, P)``."""
        if self.kind == "softmax":
            q, k, v = self.qkv(x).chunk(3, dim=-1)
        else:
            q = k = self.w(x)
            a = self.w.weight  # q = x aᵀ
            # official multihead_attention.py: query @ (-(W.weight @ W.weight.T)); the text: -x W Wᵀ, W = aᵀ
            v = x @ -(a @ a.t()) if self.value_map == "official" else -(x @ a.t() @ a)
        q, k, v = (rearrange(t, "b n (h e) -> b h n e", h=self.heads) for t in (q, k, v))
        logits = torch.einsum("bhie,bhje->bhij", q, k) * self.scale + bias
        if self.kind == "sinkhorn":
            attn = sinkhorn(logits, mask, self.n_iter, detach_columns=self.detach_columns)
        else:
            keys = mask[:, None, None, :]
            attn = logits.masked_fill(~keys, _NEG).softmax(-1)
            attn = attn.masked_fill(~mask[:, None, :, None], 0.0)
        out = rearrange(torch.einsum("bhij,bhje->bhie", attn, v), "b h n e -> b n (h e)")
        return self.out_proj(out), logits, attn


class WGFormerLayer(nn.Module):
    """Pre-LayerNorm residual block: ``x += Drop(Attn(LN x, B))``, ``x += Drop(FFN(LN x))``."""

    def __init__(self, cfg: WGFormerConfig) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.dim)
        self.attn = SinkhornAttention(
            cfg.dim,
            cfg.heads,
            n_iter=cfg.n_iter,
            kind=cfg.attention,
            value_map=cfg.value_map,
            detach_columns=cfg.sinkhorn_detach,
        )
        self.norm2 = nn.LayerNorm(cfg.dim)
        self.ffn = MLP(cfg.dim, cfg.ffn, activation="gelu")
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, bias: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Returns ``(x, logits, P)``; ``logits`` is the next layer's pair bias."""
        a, logits, attn = self.attn(self.norm1(x), bias, mask)
        x = x + self.drop(a)
        x = x + self.drop(self.ffn(self.norm2(x)))
        return x, logits, attn


def equivariant_update(x: Tensor, c: Tensor, mask: Tensor) -> Tensor:
    """``x̂_i = x_i + Σ_j (x_j - x_i) c_ij / (n_tok - 1)`` over valid tokens (Sec. 3.4).

    Args:
        x: ``[b, n, 3]`` coordinates; c: ``[b, n, n]`` pair scalars; mask: ``[b, n]`` valid tokens.
    """
    pair = (mask.unsqueeze(-1) & mask.unsqueeze(-2)).to(x.dtype)
    c = c * pair
    n_tok = mask.sum(-1).to(x.dtype).clamp_min(2.0)[:, None, None]
    delta = x.unsqueeze(-3) - x.unsqueeze(-2)  # [b, i, j, 3] = x_j - x_i
    return x + (delta * c.unsqueeze(-1)).sum(-2) / (n_tok - 1)


def check_inputs(tokens: Tensor, coords: Tensor, atom_mask: Tensor) -> None:
    """Shape, dtype and value checks shared by the models (clear errors naming the argument)."""
    if not isinstance(tokens, Tensor) or tokens.dtype != torch.long or tokens.ndim != 2:
        raise ValueError(f"tokens must be a [b, n] long tensor, got {getattr(tokens, 'shape', tokens)}")
    check_finite_tensor("coords", coords, ndim=3, floating=True)
    b, n = tokens.shape
    if coords.shape != (b, n, 3):
        raise ValueError(f"coords must have shape [b, n, 3] = [{b}, {n}, 3], got {tuple(coords.shape)}")
    if not isinstance(atom_mask, Tensor) or atom_mask.dtype != torch.bool or atom_mask.shape != (b, n):
        raise ValueError(
            f"atom_mask must be a [{b}, {n}] bool tensor, got {getattr(atom_mask, 'shape', None)}"
        )
    if not bool((atom_mask.sum(-1) >= 2).all()):
        raise ValueError("atom_mask: every molecule needs at least 2 atoms")
    if not bool((atom_mask <= (tokens != PAD)).all()):
        raise ValueError("atom_mask marks padding tokens as atoms")


class WGFormer(nn.Module):
    """The auto-encoder: WGFormer encoder on tokens + input distances, equivariant coordinate decoder.

    ``forward(tokens, coords, atom_mask)``: coordinates are centred on the atoms, the special tokens
    are put at the centroid (the official data pipeline puts them at 0 after centring), the
    prediction is moved back, so the map is SE(3)-equivariant for any input pose.
    """

    def __init__(self, cfg: WGFormerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=PAD)
        self.embed_norm = nn.LayerNorm(cfg.dim)
        self.embed_drop = nn.Dropout(cfg.dropout)
        self.dist_bias = GaussianDistanceBias(cfg.vocab_size, cfg.n_gauss, cfg.heads)
        self.layers = nn.ModuleList(WGFormerLayer(cfg) for _ in range(cfg.layers))
        first, last = nn.Linear(cfg.heads, cfg.heads), nn.Linear(cfg.heads, 1)
        if cfg.zero_init_decoder:  # start from the identity map x̂ = x (our choice, not the official init)
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)
        self.decoder = nn.Sequential(first, nn.GELU(), last)

    def forward(
        self, tokens: Tensor, coords: Tensor, atom_mask: Tensor, *, return_attention: bool = False
    ) -> WGFormerOutput:
        """Args: tokens ``[b, n]`` long (0 = pad), coords ``[b, n, 3]``, atom_mask ``[b, n]`` bool."""
        check_inputs(tokens, coords, atom_mask)
        mask = tokens != PAD
        x0, c0 = centre(coords, atom_mask)
        x0 = x0 * atom_mask.unsqueeze(-1).to(x0.dtype)  # special tokens at the centroid, pads at 0
        dist = pairwise_distances(x0)
        bias0 = self.dist_bias(dist, tokens)  # B^0 [b, h, n, n]
        h = self.embed_drop(self.embed_norm(self.embed(tokens)))
        bias = bias0
        maps = []
        for layer in self.layers:
            h, bias, attn = layer(h, bias, mask)  # pair track: S^l becomes B^{l+1}
            if return_attention:
                maps.append(attn)
        pair = (mask[:, None, :, None] & mask[:, None, None, :]).to(bias.dtype)
        delta = rearrange((bias - bias0) * pair, "b h i j -> b i j h")  # Δ = S^L - B^0, pads 0
        c = self.decoder(delta).squeeze(-1)
        x = equivariant_update(x0, c, mask)
        x = (x + c0) * mask.unsqueeze(-1).to(x.dtype)
        return WGFormerOutput(coords=x, distances=pairwise_distances(x), attention=tuple(maps))
