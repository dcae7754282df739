"""Transformer building blocks: RMSNorm, plain and gated MLPs, adaLN modulation, the pre-norm block.

* Pre-norm residual block (Xiong et al., *On Layer Normalization in the Transformer Architecture*,
  ICML 2020): ``x ← x + Attn(N₁(x)); x ← x + MLP(N₂(x))``.
* RMSNorm (Zhang & Sennrich, NeurIPS 2019): ``x / sqrt(mean(x²) + ε) · g``.
* Gated MLP (Shazeer, *GLU Variants Improve Transformer*, 2020): ``W₂ (act(W₁ x) ⊙ W₃ x)``.
* adaLN and adaLN-Zero (Peebles & Xie, *Scalable Diffusion Models with Transformers*, ICCV 2023):
  a condition c gives per-sample shift, scale and gate, ``modulate(x, shift, scale) = x (1 + scale)
  + shift``, and the residual branches are multiplied by the gate (adaLN-Zero: the projection is
  zero-initialised, so each block starts as the identity).

Notation: b batch, n tokens, d width.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

__all__ = ["RMSNorm", "MLP", "GatedMLP", "modulate", "make_norm", "TransformerBlock"]

NormKind = Literal["layer", "rms"]

_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "gelu": nn.GELU,
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
    "relu": nn.ReLU,
    "silu": nn.SiLU,
}


class RMSNorm(nn.Module):
    """Root-mean-square normalisation over the last dimension with a learned gain."""

    def __init__(self, dim: int, eps: float = 1e-6, elementwise_affine: bool = True) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        out = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return out if self.weight is None else out * self.weight


def make_norm(kind: NormKind, dim: int, *, eps: float = 1e-5, affine: bool = True) -> nn.Module:
    """A LayerNorm (``"layer"``) or :class:`RMSNorm` (``"rms"``) over ``dim`` features."""
    if kind == "layer":
        return nn.LayerNorm(dim, eps=eps, elementwise_affine=affine)
    if kind == "rms":
        return RMSNorm(dim, eps=eps, elementwise_affine=affine)
    raise ValueError(f"norm must be 'layer' or 'rms', got {kind!r}")


def _activation(name: str) -> nn.Module:
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {name!r}")
    return _ACTIVATIONS[name]()


class MLP(nn.Module):
    """``fc2(act(fc1(x)))``, hidden width ``hidden``."""

    def __init__(self, dim: int, hidden: int, *, activation: str = "gelu", bias: bool = True) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden, bias=bias)
        self.act = _activation(activation)
        self.fc2 = nn.Linear(hidden, dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class GatedMLP(nn.Module):
    """``fc2(act(fc1(x)) ⊙ gate(x))`` (SwiGLU with ``activation="silu"``, GEGLU with ``"gelu"``)."""

    def __init__(self, dim: int, hidden: int, *, activation: str = "silu", bias: bool = False) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden, bias=bias)
        self.gate = nn.Linear(dim, hidden, bias=bias)
        self.act = _activation(activation)
        self.fc2 = nn.Linear(hidden, dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)) * self.gate(x))


def modulate(x: Tensor, shift: Tensor, scale: Tensor) -> Tensor:
    """adaLN: ``x (1 + scale) + shift`` (shift and scale broadcast over the token axis)."""
    return x * (1 + scale) + shift


class TransformerBlock(nn.Module):
    """Pre-norm transformer block with optional adaLN(-Zero) conditioning.

    Without conditioning::

        x ← x + Attn(N₁(x));  x ← x + MLP(N₂(x))

    With ``cond_dim`` (adaLN-Zero, DiT): ``(β₁, γ₁, α₁, β₂, γ₂, α₂) = W SiLU(c)`` and::

        x ← x + α₁ Attn(modulate(N₁(x), β₁, γ₁));  x ← x + α₂ MLP(modulate(N₂(x), β₂, γ₂))

    ``gate="one_plus"`` uses ``(1 + α)`` instead of ``α`` (PDE-Transformer's variant).

    Args:
        dim: width d.
        num_heads / head_dim: attention heads (give one).
        mlp_ratio: MLP hidden width over d.
        norm: ``"layer"`` or ``"rms"``; ``norm_eps`` its ε; ``norm_affine`` learned affine.
        activation: MLP activation (``gelu``, ``gelu_tanh``, ``relu``, ``silu``).
        gated_mlp: use :class:`GatedMLP`.
        qkv_bias, qk_norm: forwarded to :class:`MultiheadAttention`.
        cond_dim: width of the condition c (None: unconditioned block).
        gate: ``"zero"`` (adaLN-Zero: α) or ``"one_plus"`` (1 + α).
        mlp_hidden: MLP hidden width (overrides ``mlp_ratio`` when given).
        proj_bias: bias in the attention output projection.
        mlp_bias: biases in the MLP (None: the MLP class's default, True for :class:`MLP`, False
            for :class:`GatedMLP`).
    """

    def __init__(
        self,
        dim: int,
        num_heads: int | None = None,
        *,
        head_dim: int | None = None,
        mlp_ratio: float = 4.0,
        norm: NormKind = "layer",
        norm_eps: float = 1e-5,
        norm_affine: bool = True,
        activation: str = "gelu",
        gated_mlp: bool = False,
        qkv_bias: bool = True,
        qk_norm: str | None = None,
        cond_dim: int | None = None,
        gate: Literal["zero", "one_plus"] = "zero",
        mlp_hidden: int | None = None,
        proj_bias: bool = True,
        mlp_bias: bool | None = None,
    ) -> None:
        super().__init__()
        from icml25.nn.attention import MultiheadAttention

        if gate not in ("zero", "one_plus"):
            raise ValueError(f"gate must be 'zero' or 'one_plus', got {gate!r}")
        self.norm1 = make_norm(norm, dim, eps=norm_eps, affine=norm_affine)
        self.attn = MultiheadAttention(
            dim, num_heads, head_dim=head_dim, qkv_bias=qkv_bias, out_bias=proj_bias, qk_norm=qk_norm
        )
        self.norm2 = make_norm(norm, dim, eps=norm_eps, affine=norm_affine)
        if mlp_hidden is not None and mlp_hidden < 1:
            raise ValueError(f"mlp_hidden must be a positive integer, got {mlp_hidden}")
        hidden = int(dim * mlp_ratio) if mlp_hidden is None else mlp_hidden
        mlp_cls = GatedMLP if gated_mlp else MLP
        mlp_kwargs = {} if mlp_bias is None else {"bias": mlp_bias}
        self.mlp = mlp_cls(dim, hidden, activation=activation, **mlp_kwargs)
        self.gate = gate
        self.adaLN = nn.Linear(cond_dim, 6 * dim) if cond_dim is not None else None

    def forward(self, x: Tensor, c: Tensor | None = None, **attn_kwargs: object) -> Tensor:
        """``x (b, n, d)``, condition ``c (b, cond_dim)`` if the block is conditioned; extra keywords
        (``causal``, ``cache``, ``bias``, ``key_padding_mask``, ``rotary``, ``temperature``) go to the
        attention."""
        if self.adaLN is None:
            if c is not None:
                raise ValueError("this block has no conditioning (cond_dim=None) but c was given")
            x = x + self.attn(self.norm1(x), **attn_kwargs)  # type: ignore[arg-type]
            return x + self.mlp(self.norm2(x))
        if c is None:
            raise ValueError("this block is conditioned (cond_dim set): pass c of shape (batch, cond_dim)")
        b1, s1, g1, b2, s2, g2 = self.adaLN(F.silu(c))[:, None].chunk(6, dim=-1)
        if self.gate == "one_plus":
            g1, g2 = 1 + g1, 1 + g2
        x = x + g1 * self.attn(modulate(self.norm1(x), b1, s1), **attn_kwargs)  # type: ignore[arg-type]
        return x + g2 * self.mlp(modulate(self.norm2(x), b2, s2))
