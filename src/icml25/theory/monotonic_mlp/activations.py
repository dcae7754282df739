"""Monotone activations, their point reflections and the per-neuron saturation switch.

Part of *Advancing Constrained Monotonic Neural Networks: Achieving Universal Approximation Beyond
Bounded Activations* (Sartor, Sinigaglia, Susto, ICML 2025, https://arxiv.org/abs/2505.02537): the
activations whose saturation side its universality theorems turn on (left-saturating σ such as
ReLU, right-saturating σ̃, alternated layer by layer or mixed per neuron).

Notation: σ is a monotone non-decreasing activation and σ̃(z) := −σ(−z) its
point reflection. ReLU saturates on the left (bounded below); its reflection σ̃(z) = min(z, 0)
saturates on the right (bounded above). Activations are plain ``nn.Module`` objects so that the
layers drop into other models unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

__all__ = [
    "ACTIVATIONS",
    "ActivationLike",
    "PointReflection",
    "SwitchConvexity",
    "get_activation",
]

# Monotone non-decreasing activations by name. relu/softplus/elu are convex (left-saturating);
# sigmoid/tanh are bounded (the classic constrained construction); identity is for first layers.
ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "softplus": nn.Softplus,
    "elu": nn.ELU,
    "sigmoid": nn.Sigmoid,
    "tanh": nn.Tanh,
    "identity": nn.Identity,
}

ActivationLike = str | nn.Module


def get_activation(activation: ActivationLike) -> nn.Module:
    """A fresh activation module from a name in :data:`ACTIVATIONS`, or ``activation`` itself.

    A module passed in must be monotone non-decreasing; that cannot be checked here.
    """
    if isinstance(activation, nn.Module):
        return activation
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(
            f"activation must be an nn.Module or one of {sorted(ACTIVATIONS)}, got {activation!r}"
        )
    return ACTIVATIONS[activation]()


class PointReflection(nn.Module):
    """σ̃(z) = −σ(−z): the point reflection of a monotone activation (monotone, opposite saturation)."""

    def __init__(self, activation: ActivationLike) -> None:
        super().__init__()
        self.activation = get_activation(activation)

    def forward(self, z: Tensor) -> Tensor:
        return -self.activation(-z)


class SwitchConvexity(nn.Module):
    """Per-neuron mix a·σ(z) + (1 − a)·σ̃(z) over the last dimension of size ``dim``.

    ``mode="random"``: a ∈ {0, 1} fixed at construction (Runje & Shankaranarayana 2023); a random
    half of the neurons (rounded down) gets σ̃, the rest σ, so both saturation sides are present.
    ``mode="learnable"``: a ∈ [0, 1] is a parameter initialised U(0, 1), clamped in the forward pass
    with a straight-through gradient (as in the ``SwitchConvexity`` class of public PyTorch code
    implementing the paper's formulation). Either way the map is monotone.

    Args:
        activation: σ (name or module).
        dim: number of neurons (size of the last input dimension).
        mode: ``"random"`` or ``"learnable"``.
        generator: torch generator for the random split / initial mix.
    """

    def __init__(
        self,
        activation: ActivationLike,
        dim: int,
        *,
        mode: str = "random",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if dim < 1:
            raise ValueError(f"dim must be at least 1, got {dim}")
        if mode not in ("random", "learnable"):
            raise ValueError(f"mode must be 'random' or 'learnable', got {mode!r}")
        self.activation = get_activation(activation)
        self.mode = mode
        self.dim = dim
        self.a: Tensor
        if mode == "random":
            a = torch.ones(dim)
            a[torch.randperm(dim, generator=generator)[: dim // 2]] = 0.0
            self.register_buffer("a", a)
        else:
            self.a = nn.Parameter(torch.rand(dim, generator=generator))

    def forward(self, z: Tensor) -> Tensor:
        if z.shape[-1] != self.dim:
            raise ValueError(f"SwitchConvexity expects last dimension {self.dim}, got shape {tuple(z.shape)}")
        mix: Tensor = self.a
        if self.mode == "learnable":  # clamp to [0, 1], straight-through gradient
            mix = mix + (mix.clamp(0.0, 1.0) - mix).detach()
        return mix * self.activation(z) - (1.0 - mix) * self.activation(-z)
