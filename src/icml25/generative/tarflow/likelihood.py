"""Dequantisation, training noise and bits/dim with correct dequantisation accounting.

Part of the TarFlow implementation (*Normalizing Flows are Capable Generative Models*, ICML 2025,
https://arxiv.org/abs/2412.06329; official ``evaluate_bpd.py``).

Integer images with L grey levels x ∈ {0, …, L−1} are mapped into [−1, 1] by
y = 2(x + u)/L − 1 with u ~ U[0, 1)^D (uniform dequantisation). Each bin then has width 2/L, so a
continuous density p(y) gives the discrete model P(x) ≥ E_u[p(y)]·(2/L)^D, and

    bpd = ( NLL_cont(y)/D + log(L/2) ) / ln 2          (for L = 256: + log 128, as in the paper)

is an upper bound on the discrete bits/dim (Jensen). It is averaged over ``n_dequant`` draws.
For generation the paper instead trains on x̃ = x + σ·ε, ε ~ N(0, I) (Sec. 3.2, technique 1).
"""

from __future__ import annotations

import math
from typing import Protocol

import torch
from torch import Tensor

__all__ = [
    "DensityModel",
    "bits_per_dim",
    "dequantize",
    "noise_augment",
    "to_unit_range",
    "to_integer_images",
    "check_levels",
]


class DensityModel(Protocol):
    """Anything with a per-sample NLL in nats (TarFlow, CouplingFlow)."""

    def nll(self, x: Tensor, y: Tensor | None = None) -> Tensor: ...


def _gen_device(generator: torch.Generator | None, x: Tensor) -> torch.device:
    """Draw where the generator lives (a CPU generator feeds a GPU batch through a copy)."""
    return x.device if generator is None else generator.device


def check_levels(x_int: Tensor, num_levels: int, name: str = "x_int") -> None:
    """Raise ValueError unless ``x_int`` holds integers in [0, num_levels − 1]."""
    if num_levels < 2:
        raise ValueError(f"num_levels must be >= 2, got {num_levels}")
    if not isinstance(x_int, Tensor):
        raise ValueError(f"{name} must be a tensor, got {type(x_int).__name__}")
    if x_int.is_floating_point() and (not torch.isfinite(x_int).all() or (x_int != x_int.round()).any()):
        raise ValueError(f"{name} must hold integer grey levels")
    if x_int.numel() and (x_int.min() < 0 or x_int.max() > num_levels - 1):
        raise ValueError(
            f"{name} values must lie in [0, {num_levels - 1}] for num_levels={num_levels}, "
            f"got range [{x_int.min().item()}, {x_int.max().item()}]"
        )


def to_unit_range(x_int: Tensor, num_levels: int) -> Tensor:
    """Bin centres in [−1, 1]: 2(x + ½)/L − 1 (no noise; for plotting and classifiers)."""
    check_levels(x_int, num_levels)
    return 2 * (x_int.float() + 0.5) / num_levels - 1


def to_integer_images(x: Tensor, num_levels: int) -> Tensor:
    """Samples in [−1, 1] back to integer images in [0, L − 1] (the bin each value falls in).

    The inverse of :func:`dequantize` and :func:`to_unit_range`: bin ⌊(x + 1)·L/2⌋, clipped to the
    valid levels, as ``uint8`` when L ≤ 256 (ready for PIL or ``torchvision.utils.save_image``).
    """
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {getattr(x, 'dtype', type(x).__name__)}")
    if isinstance(num_levels, bool) or not isinstance(num_levels, int) or num_levels < 2:
        raise ValueError(f"num_levels must be an integer >= 2, got {num_levels!r}")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or infinite values")
    bins = torch.floor((x + 1) * num_levels / 2).clamp_(0, num_levels - 1)
    return bins.to(torch.uint8 if num_levels <= 256 else torch.int64)


def dequantize(x_int: Tensor, num_levels: int, *, generator: torch.Generator | None = None) -> Tensor:
    """Uniform dequantisation into [−1, 1): y = 2(x + u)/L − 1, u ~ U[0, 1)."""
    check_levels(x_int, num_levels)
    u = torch.rand(x_int.shape, generator=generator, device=_gen_device(generator, x_int)).to(x_int.device)
    return 2 * (x_int.float() + u) / num_levels - 1


def noise_augment(x: Tensor, sigma: float, *, generator: torch.Generator | None = None) -> Tensor:
    """Training noise of Sec. 3.2: x̃ = x + σ·ε on data ``x`` in [−1, 1]."""
    if sigma < 0 or not math.isfinite(sigma):
        raise ValueError(f"noise_augment: sigma must be finite and >= 0, got {sigma}")
    if not torch.isfinite(x).all() or x.min() < -1 or x.max() > 1:
        raise ValueError("noise_augment: x must lie in [-1, 1] (scale the images first)")
    eps = torch.randn(x.shape, generator=generator, device=_gen_device(generator, x)).to(x.device)
    return x + sigma * eps


def bits_per_dim(
    model: DensityModel,
    x_int: Tensor,
    *,
    num_levels: int,
    n_dequant: int = 4,
    y: Tensor | None = None,
    generator: torch.Generator | None = None,
    batch_size: int = 512,
) -> Tensor:
    """Per-sample bits/dim of integer images under a continuous flow, averaged over dequantisation draws.

    Args:
        model: has ``nll(x, y) -> (B,)`` in nats for inputs in [−1, 1].
        x_int: (B, C, H, W) integers in [0, num_levels − 1].
        num_levels: L (17 for sklearn digits, 256 for 8-bit images).
        n_dequant: number of uniform dequantisation draws to average.
        y: optional labels for a conditional model.
        generator: RNG for the dequantisation noise.

    Returns:
        (B,) bits/dim: (NLL/D + log(L/2)) / ln 2.
    """
    check_levels(x_int, num_levels)
    if x_int.ndim != 4:
        raise ValueError(f"bits_per_dim: x_int must be (B, C, H, W), got {tuple(x_int.shape)}")
    if x_int.shape[0] == 0:
        raise ValueError("bits_per_dim: x_int is an empty batch (B = 0)")
    if n_dequant < 1:
        raise ValueError(f"bits_per_dim: n_dequant must be >= 1, got {n_dequant}")
    D = x_int[0].numel()
    total = torch.zeros(x_int.shape[0])
    with torch.no_grad():
        for _ in range(n_dequant):
            parts = []
            for i in range(0, x_int.shape[0], batch_size):
                xb = dequantize(x_int[i : i + batch_size], num_levels, generator=generator)
                yb = None if y is None else y[i : i + batch_size]
                parts.append(model.nll(xb, yb).float().cpu())
            total += torch.cat(parts)
    nll = total / n_dequant
    return (nll / D + math.log(num_levels / 2)) / math.log(2)
