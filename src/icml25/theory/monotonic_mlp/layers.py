"""Monotone linear layers: sign-constrained (reparameterised) and sign-adaptive (unconstrained).

Part of *Advancing Constrained Monotonic Neural Networks: Achieving Universal Approximation Beyond
Bounded Activations* (Sartor, Sinigaglia, Susto, ICML 2025, https://arxiv.org/abs/2505.02537).
Implements the paper's proposed sign-adaptive layer (unconstrained weights, σ or σ̃ per connection
by the sign of its weight, pre- and post-activation forms) and the sign-constrained layers of its
universality theorems and of the classic baselines (non-negative or non-positive weights through a
reparameterisation g).

Notation: W⁺ = max(W, 0), W⁻ = min(W, 0) elementwise, so W = W⁺ + W⁻; σ is a monotone activation
and σ̃(z) = −σ(−z). Shapes: ``h`` is ``(batch, in_features)``, outputs ``(batch, out_features)``.

A ``free`` mask over the input features marks columns that stay unconstrained (partial
monotonicity): such columns enter linearly with a plain weight, so a layer with free columns is
monotone only in its other inputs. Only first layers should have free columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn
from torch.nn.utils import parametrize

from .activations import ActivationLike, get_activation

__all__ = [
    "WEIGHT_PARAMS",
    "ConstrainedLinear",
    "SignAdaptiveLinear",
    "SignConstraint",
    "scale_init_",
]

WEIGHT_PARAMS: tuple[str, ...] = ("abs", "square", "exp", "softplus", "celu")
_EPS = 1e-12


def _positive(v: Tensor, kind: str) -> Tensor:
    """g(V) ≥ 0 for the baselines' weight reparameterisations (celu means 1 + celu(V))."""
    if kind == "abs":
        return v.abs()
    if kind == "square":
        return v * v
    if kind == "exp":
        return v.exp()
    if kind == "softplus":
        return F.softplus(v)
    return 1.0 + F.celu(v)


def _positive_inverse(w: Tensor, kind: str) -> Tensor:
    """A V with g(V) = w for w ≥ 0 (zeros are mapped to a tiny positive value where g > 0)."""
    if kind == "abs":
        return w
    if kind == "square":
        return w.sqrt()
    w = w.clamp_min(_EPS)
    if kind == "exp":
        return w.log()
    if kind == "softplus":
        return torch.where(w > 20.0, w, torch.log(torch.expm1(w.clamp_max(20.0))))
    return torch.where(w > 1.0, w - 1.0, w.log())


def _as_mask(free: Sequence[bool] | Tensor | None, in_features: int) -> Tensor:
    if free is None:
        return torch.zeros(in_features, dtype=torch.bool)
    mask = torch.as_tensor(free, dtype=torch.bool).flatten()
    if mask.numel() != in_features:
        raise ValueError(f"free must have one entry per input feature ({in_features}), got {mask.numel()}")
    return mask


class SignConstraint(nn.Module):
    """Parametrisation W = sign · g(V) (free columns: W = V), with a right inverse for initialisation.

    Used through ``torch.nn.utils.parametrize`` so ``layer.weight`` is always the effective weight.
    """

    free: Tensor

    def __init__(self, kind: str, sign: int, free: Tensor) -> None:
        super().__init__()
        if kind not in WEIGHT_PARAMS:
            raise ValueError(f"weight_param must be one of {WEIGHT_PARAMS}, got {kind!r}")
        if sign not in (1, -1):
            raise ValueError(f"sign must be +1 (non-negative) or -1 (non-positive), got {sign!r}")
        self.kind = kind
        self.sign = sign
        self.has_free = bool(free.any())
        self.register_buffer("free", free)

    def forward(self, v: Tensor) -> Tensor:
        w = _positive(v, self.kind)
        if self.sign < 0:
            w = -w
        return torch.where(self.free, v, w) if self.has_free else w

    def right_inverse(self, w: Tensor) -> Tensor:
        constrained = (self.sign * w).clamp_min(0.0)
        return torch.where(self.free, w, _positive_inverse(constrained, self.kind))


class ConstrainedLinear(nn.Module):
    """Linear layer with sign-constrained weights W = sign · g(V) (theorems' families and baselines).

    Initialisation: draw W₀ as ``nn.Linear`` does (U(−1/√in, 1/√in), also for the bias), take
    sign · |W₀| on constrained columns, and set V through the right inverse of g.

    Args:
        in_features, out_features: layer sizes.
        weight_param: g, one of :data:`WEIGHT_PARAMS` (``celu`` is 1 + celu).
        sign: +1 for non-negative weights, −1 for non-positive weights.
        free: optional boolean mask over inputs whose weights stay unconstrained.
        bias: whether to add a bias.
        generator: torch generator for the initialisation.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        weight_param: str = "abs",
        sign: int = 1,
        free: Sequence[bool] | Tensor | None = None,
        bias: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError(f"layer sizes must be positive, got ({in_features}, {out_features})")
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features)
        w0 = (torch.rand(out_features, in_features, generator=generator) * 2 - 1) * bound
        self.weight = nn.Parameter(w0.clone())
        self.bias = (
            nn.Parameter((torch.rand(out_features, generator=generator) * 2 - 1) * bound) if bias else None
        )
        mask = _as_mask(free, in_features)
        parametrize.register_parametrization(self, "weight", SignConstraint(weight_param, sign, mask))
        self.set_weight_(torch.where(mask, w0, sign * w0.abs()))

    def _constraint(self) -> SignConstraint:
        param = self.parametrizations["weight"][0]  # type: ignore[index]
        assert isinstance(param, SignConstraint)
        return param

    @torch.no_grad()
    def set_weight_(self, weight: Tensor) -> None:
        """Set the effective weight (its constrained entries must carry the layer's sign)."""
        param = self._constraint()
        bad = ~param.free & (param.sign * weight < 0)
        if bool(bad.any()):
            raise ValueError("weight violates the layer's sign constraint on constrained columns")
        self.weight = weight  # type: ignore[assignment]  # parametrize calls right_inverse

    @torch.no_grad()
    def scale_weight_(self, scale: float) -> None:
        """Multiply the effective weight by ``scale`` > 0 (init-scale experiments)."""
        self.set_weight_(self.weight * scale)

    def forward(self, h: Tensor) -> Tensor:
        return F.linear(h, self.weight, self.bias)

    def extra_repr(self) -> str:
        p = self._constraint()
        return f"{self.in_features}, {self.out_features}, weight_param={p.kind}, sign={p.sign:+d}"


class SignAdaptiveLinear(nn.Module):
    """The paper's sign-adaptive monotone layer: unconstrained W, no reparameterisation.

    ``variant="pre"`` applies σ to the layer input, each connection seeing σ or its reflection by
    the sign of its weight:  z = W⁺ σ(h) + W⁻ σ(−h) + b = W⁺ σ(h) + |W⁻| σ̃(h) + b, so
    ∂z/∂h = W⁺ σ'(h) + |W⁻| σ'(−h) ≥ 0. With σ = identity this is z = |W| h + b.

    ``variant="post"`` applies σ after the affine map:  z = σ(W⁺ h + b) − σ(W⁻ h + b), monotone
    for any W (with σ = identity the bias cancels: z = |W| h).

    Free columns (``free`` mask) enter both variants through the plain term W_f h_f (inside σ for
    ``post``), so the layer stays monotone in the other columns.

    Args:
        in_features, out_features: layer sizes.
        activation: σ (name or module); applied to inputs for ``pre``, outputs for ``post``.
        variant: ``"pre"`` or ``"post"``.
        init: ``"symmetric"`` (``nn.Linear``'s U(−1/√in, 1/√in)) or ``"positive"``
            (Xavier-scaled U(0, √(6/(in+out))), the earlier public code's choice).
        free: optional boolean mask over inputs that stay unconstrained.
        bias: whether to add a bias.
        generator: torch generator for the initialisation.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        activation: ActivationLike = "identity",
        variant: str = "pre",
        init: str = "symmetric",
        free: Sequence[bool] | Tensor | None = None,
        bias: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError(f"layer sizes must be positive, got ({in_features}, {out_features})")
        if variant not in ("pre", "post"):
            raise ValueError(f"variant must be 'pre' or 'post', got {variant!r}")
        if init not in ("symmetric", "positive"):
            raise ValueError(f"init must be 'symmetric' or 'positive', got {init!r}")
        self.in_features, self.out_features = in_features, out_features
        self.variant = variant
        self.activation = get_activation(activation)
        u = torch.rand(out_features, in_features, generator=generator)
        if init == "symmetric":
            w = (2 * u - 1) / math.sqrt(in_features)
        else:
            w = u * math.sqrt(6.0 / (in_features + out_features))
        self.weight = nn.Parameter(w)
        bound = 1.0 / math.sqrt(in_features)
        self.bias = (
            nn.Parameter((torch.rand(out_features, generator=generator) * 2 - 1) * bound) if bias else None
        )
        self.free: Tensor
        self.register_buffer("free", _as_mask(free, in_features))
        self.has_free = bool(self.free.any())

    @torch.no_grad()
    def scale_weight_(self, scale: float) -> None:
        """Multiply W by ``scale`` > 0 (init-scale experiments)."""
        self.weight.mul_(scale)

    def forward(self, h: Tensor) -> Tensor:
        w: Tensor = self.weight
        if self.has_free:
            w_free, w = torch.where(self.free, w, 0.0), torch.where(self.free, 0.0, w)
        w_pos, w_neg = w.clamp(min=0.0), w.clamp(max=0.0)  # W⁺, W⁻
        if self.variant == "pre":
            # Eq. (sign-adaptive, pre): z = W⁺ σ(h) + W⁻ σ(−h) + W_f h + b
            z = F.linear(self.activation(h), w_pos) + F.linear(self.activation(-h), w_neg)
            if self.has_free:
                z = z + F.linear(h, w_free)
            return z if self.bias is None else z + self.bias
        # Eq. (sign-adaptive, post): z = σ(W⁺ h + W_f h + b) − σ(W⁻ h + W_f h + b)
        if self.has_free:
            shared = F.linear(h, w_free, self.bias)
            return self.activation(F.linear(h, w_pos) + shared) - self.activation(F.linear(h, w_neg) + shared)
        return self.activation(F.linear(h, w_pos, self.bias)) - self.activation(F.linear(h, w_neg, self.bias))

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, variant={self.variant}"


def scale_init_(model: nn.Module, scale: float) -> nn.Module:
    """Multiply every layer's effective weight by ``scale`` > 0, in place (the check's init-scale grid).

    Constrained layers go through the parametrisation's right inverse, so an exp-parameterised
    layer gets V + log(scale) and a square-parameterised one V·√scale. Plain ``nn.Linear`` weights
    are multiplied. Biases are left unchanged. Returns ``model``.
    """
    if not (isinstance(scale, int | float) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, ConstrainedLinear | SignAdaptiveLinear):
                module.scale_weight_(float(scale))
            elif isinstance(module, nn.Linear):
                module.weight.mul_(float(scale))
    return model
