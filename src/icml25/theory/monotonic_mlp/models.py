"""Monotone networks: sign-adaptive MLPs (the paper's proposal) and the constrained baselines.

Part of *Advancing Constrained Monotonic Neural Networks: Achieving Universal Approximation Beyond
Bounded Activations* (Sartor, Sinigaglia, Susto, ICML 2025, https://arxiv.org/abs/2505.02537).
Implements the sign-adaptive MLP, the constrained families of the paper's universality theorems
(non-negative weights with alternating saturation; non-positive weights with a convex σ) and
baselines: the traditional non-negative-weight MLPs the paper compares against (bounded, convex or
switched activations) and Sill's min-max network (our addition).

Every monotone model takes ``monotone``, one entry per input feature: +1 non-decreasing,
−1 non-increasing, 0 free (no constraint). Decreasing features are negated at the input, free
features get unconstrained first-layer weights, and every later layer is monotone in all its
inputs, so the network is monotone in each constrained feature by construction.

Shapes: ``x`` is ``(batch, dims[0])``; outputs are ``(batch, dims[-1])`` (each output monotone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .activations import ActivationLike, PointReflection, SwitchConvexity, get_activation
from .layers import ConstrainedLinear, SignAdaptiveLinear

__all__ = [
    "CONVEXITY_BREAKS",
    "ConstrainedMLP",
    "MinMaxNetwork",
    "MonotoneModel",
    "NonPositiveMLP",
    "SignAdaptiveMLP",
    "UnconstrainedMLP",
    "monotone_vector",
    "parse_monotone",
]

CONVEXITY_BREAKS: tuple[str, ...] = ("none", "alternating", "random", "learnable")


def parse_monotone(monotone: Sequence[int] | None, n_features: int) -> tuple[int, ...]:
    """Validate a direction vector (+1 increasing, −1 decreasing, 0 free); ``None`` = all increasing."""
    if n_features < 1:
        raise ValueError(f"n_features must be at least 1, got {n_features}")
    if monotone is None:
        return (1,) * n_features
    out = tuple(int(m) for m in monotone)
    if len(out) != n_features:
        raise ValueError(f"monotone must have one entry per input feature ({n_features}), got {len(out)}")
    bad = [m for m in monotone if m not in (-1, 0, 1)]
    if bad:
        raise ValueError(f"monotone entries must be +1 (increasing), -1 (decreasing) or 0 (free), got {bad}")
    return out


def monotone_vector(
    n_features: int, *, increasing: Sequence[int] = (), decreasing: Sequence[int] = ()
) -> tuple[int, ...]:
    """A direction vector from feature indices; features named in neither list are free."""
    if n_features < 1:
        raise ValueError(f"n_features must be at least 1, got {n_features}")
    out = [0] * n_features
    for name, idx, sign in (("increasing", increasing, 1), ("decreasing", decreasing, -1)):
        for i in idx:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_features:
                raise ValueError(f"{name} feature index {i!r} out of range [0, {n_features})")
            if out[i] != 0:
                raise ValueError(f"feature {i} is listed twice in increasing/decreasing")
            out[i] = sign
    return tuple(out)


def _check_dims(dims: Sequence[int]) -> list[int]:
    dims = [int(d) for d in dims]
    if len(dims) < 2 or any(d < 1 for d in dims):
        raise ValueError(f"dims must list at least two positive sizes [in, ..., out], got {dims}")
    return dims


class MonotoneModel(nn.Module):
    """Base: validates inputs, negates decreasing features, holds the direction vector."""

    flip: Tensor
    free: Tensor

    def __init__(self, n_features: int, monotone: Sequence[int] | None) -> None:
        super().__init__()
        self.monotone = parse_monotone(monotone, n_features)
        self.n_features = n_features
        self.register_buffer("flip", torch.tensor([-1.0 if m < 0 else 1.0 for m in self.monotone]))
        self.register_buffer("free", torch.tensor([m == 0 for m in self.monotone]))

    def _prepare(self, x: Tensor) -> Tensor:
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"x must have shape (batch, {self.n_features}), got {tuple(x.shape)}")
        return x * self.flip.to(x.dtype)

    def body(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        return self.body(self._prepare(x))


class SignAdaptiveMLP(MonotoneModel):
    """Sign-adaptive monotone MLP, the paper's proposal; weights are unconstrained.

    ``variant="pre"``: first layer z = |W| x + b (σ = identity), then one
    :class:`SignAdaptiveLinear` with σ per remaining layer (the last included), as in the public
    ``MonotonicMLP`` builder. ``variant="post"``: post-activation layers up to the last hidden
    size, then a final z = |W| h + b. Both have ``len(dims) − 2`` nonlinear layers.

    Args:
        dims: ``[in, hidden..., out]``.
        activation: σ (convex monotone such as ReLU in the paper).
        monotone: direction per input feature (+1/−1/0); default all increasing.
        variant: ``"pre"`` or ``"post"``.
        init: ``"symmetric"`` (default) or ``"positive"``.
        generator: torch generator for the initialisation.
    """

    def __init__(
        self,
        dims: Sequence[int],
        *,
        activation: ActivationLike = "relu",
        monotone: Sequence[int] | None = None,
        variant: str = "pre",
        init: str = "symmetric",
        generator: torch.Generator | None = None,
    ) -> None:
        dims = _check_dims(dims)
        if variant not in ("pre", "post"):
            raise ValueError(f"variant must be 'pre' or 'post', got {variant!r}")
        super().__init__(dims[0], monotone)
        free = self.free.clone()
        n = len(dims) - 1
        layers: list[nn.Module] = []
        for i in range(n):
            first, last = i == 0, i == n - 1
            if variant == "post" and not last:
                act, kind = activation, "post"
            else:
                act, kind = ("identity" if (first or variant == "post") else activation), "pre"
            layers.append(
                SignAdaptiveLinear(
                    dims[i],
                    dims[i + 1],
                    activation=act,
                    variant=kind,
                    init=init,
                    free=free if first else None,
                    generator=generator,
                )
            )
        self.layers = nn.Sequential(*layers)

    def body(self, x: Tensor) -> Tensor:
        return self.layers(x)


def _hidden_activation(
    activation: ActivationLike,
    convexity_break: str,
    layer: int,
    width: int,
    generator: torch.Generator | None,
) -> nn.Module:
    if convexity_break == "none":
        return get_activation(activation)
    if convexity_break == "alternating":  # the theorem's σ on odd layers (1-based), σ̃ on even ones
        return get_activation(activation) if layer % 2 == 0 else PointReflection(activation)
    return SwitchConvexity(activation, width, mode=convexity_break, generator=generator)


class ConstrainedMLP(MonotoneModel):
    """Non-negative-weight MLP, W = g(V) ≥ 0 (alternating-saturation theorem; classic baselines).

    ``convexity_break`` chooses the hidden activations: ``"none"`` (σ everywhere: with a convex σ
    such as ReLU this represents convex functions only; with sigmoid/tanh it is the classic
    bounded construction), ``"alternating"`` (σ, σ̃, σ, ... layer by layer: the universal
    construction of the paper's alternating-saturation theorem), ``"random"`` (a fixed random half
    of each layer's neurons uses σ̃, Runje & Shankaranarayana 2023) or ``"learnable"`` (per-neuron
    mix in [0, 1]).

    Args:
        dims: ``[in, hidden..., out]``.
        activation: σ.
        weight_param: g, one of ``abs``, ``square``, ``exp``, ``softplus``, ``celu``.
        convexity_break: one of :data:`CONVEXITY_BREAKS`.
        monotone: direction per input feature; default all increasing.
        generator: torch generator for the initialisation.
    """

    def __init__(
        self,
        dims: Sequence[int],
        *,
        activation: ActivationLike = "sigmoid",
        weight_param: str = "abs",
        convexity_break: str = "none",
        monotone: Sequence[int] | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        dims = _check_dims(dims)
        if convexity_break not in CONVEXITY_BREAKS:
            raise ValueError(f"convexity_break must be one of {CONVEXITY_BREAKS}, got {convexity_break!r}")
        super().__init__(dims[0], monotone)
        free = self.free.clone()
        layers: list[nn.Module] = []
        n = len(dims) - 1
        for i in range(n):
            layers.append(
                ConstrainedLinear(
                    dims[i],
                    dims[i + 1],
                    weight_param=weight_param,
                    sign=1,
                    free=free if i == 0 else None,
                    generator=generator,
                )
            )
            if i < n - 1:
                layers.append(_hidden_activation(activation, convexity_break, i, dims[i + 1], generator))
        self.layers = nn.Sequential(*layers)

    def body(self, x: Tensor) -> Tensor:
        return self.layers(x)


class NonPositiveMLP(MonotoneModel):
    """MLP with non-positive hidden-to-hidden weights and a convex σ (the paper's universality result).

    Each layer σ(W h + b) with W ≤ 0 is non-increasing in h. Our implementation choice: the first
    layer is non-negative, every hidden-to-hidden matrix is non-positive, and the output layer's
    sign is (−1)^(number of hidden-to-hidden layers) so that the network is non-decreasing. With
    σ = ReLU it equals a non-negative net with σ, σ̃ alternating (the paper's equivalence of
    saturation side and weight sign).

    Args:
        dims: ``[in, hidden..., out]``.
        activation: σ (ReLU, softplus, ELU in the paper).
        weight_param: g used for the magnitudes.
        monotone: direction per input feature; default all increasing.
        generator: torch generator for the initialisation.
    """

    def __init__(
        self,
        dims: Sequence[int],
        *,
        activation: ActivationLike = "relu",
        weight_param: str = "abs",
        monotone: Sequence[int] | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        dims = _check_dims(dims)
        super().__init__(dims[0], monotone)
        free = self.free.clone()
        n = len(dims) - 1
        layers: list[nn.Module] = []
        for i in range(n):
            if i == 0:
                sign = 1
            elif i < n - 1:
                sign = -1  # hidden-to-hidden: W ≤ 0
            else:
                sign = -1 if (n - 2) % 2 == 1 else 1  # output: (−1)^(n_hidden − 1)
            layers.append(
                ConstrainedLinear(
                    dims[i],
                    dims[i + 1],
                    weight_param=weight_param,
                    sign=sign,
                    free=free if i == 0 else None,
                    generator=generator,
                )
            )
            if i < n - 1:
                layers.append(get_activation(activation))
        self.layers = nn.Sequential(*layers)

    def body(self, x: Tensor) -> Tensor:
        return self.layers(x)


class MinMaxNetwork(MonotoneModel):
    """Min-max network (Sill 1997): f(x) = max_k min_j (w_kjᵀ x + b_kj), w ≥ 0 on constrained features.

    Args:
        n_features: input size.
        groups: K, the number of groups (max over groups).
        group_size: J, hyperplanes per group (min within a group).
        weight_param: g for the non-negative weights.
        monotone: direction per input feature; default all increasing.
        generator: torch generator for the initialisation.
    """

    def __init__(
        self,
        n_features: int,
        *,
        groups: int = 8,
        group_size: int = 8,
        weight_param: str = "abs",
        monotone: Sequence[int] | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(n_features, monotone)
        if groups < 1 or group_size < 1:
            raise ValueError(f"groups and group_size must be positive, got {groups}, {group_size}")
        self.groups, self.group_size = groups, group_size
        self.hyperplanes = ConstrainedLinear(
            n_features,
            groups * group_size,
            weight_param=weight_param,
            free=self.free.clone(),
            generator=generator,
        )

    def body(self, x: Tensor) -> Tensor:
        z = self.hyperplanes(x).view(x.shape[0], self.groups, self.group_size)  # (b, K, J)
        return z.min(dim=2).values.max(dim=1, keepdim=True).values  # (b, 1)


class UnconstrainedMLP(nn.Module):
    """Plain MLP (upper reference, not monotone), initialised like ``nn.Linear`` from ``generator``."""

    def __init__(
        self,
        dims: Sequence[int],
        *,
        activation: ActivationLike = "relu",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        dims = _check_dims(dims)
        self.n_features = dims[0]
        layers: list[nn.Module] = []
        for i in range(len(dims) - 1):
            lin = nn.Linear(dims[i], dims[i + 1])
            bound = 1.0 / math.sqrt(dims[i])
            with torch.no_grad():
                lin.weight.copy_((torch.rand(lin.weight.shape, generator=generator) * 2 - 1) * bound)
                lin.bias.copy_((torch.rand(lin.bias.shape, generator=generator) * 2 - 1) * bound)
            layers.append(lin)
            if i < len(dims) - 2:
                layers.append(get_activation(activation))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"x must have shape (batch, {self.n_features}), got {tuple(x.shape)}")
        return self.layers(x)
