"""Score-based denoising of samples and the Bayes classifier of a class-conditional flow.

Part of the TarFlow implementation (*Normalizing Flows are Capable Generative Models*, ICML 2025,
https://arxiv.org/abs/2412.06329). A model trained on x̃ = x + σε learns the density of noisy
data, so its samples are noisy; one Tweedie step (Sec. 3.2, technique 2)

    x̂ = x̃ + σ² ∇_x̃ log p_θ(x̃) = x̃ − σ² ∇_x̃ NLL(x̃)

moves them to the posterior mean of the clean image. The gradient is taken by autograd through
the flow (``train_local.ipynb`` writes the same update as ``x -= B·D·σ²·∇ mean-loss``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .likelihood import DensityModel

__all__ = ["denoise", "bayes_classify", "class_nll"]


def denoise(model: DensityModel, x: Tensor, sigma: float, y: Tensor | None = None) -> Tensor:
    """One Tweedie step x − σ² ∇_x NLL(x) per sample (the NLL of each sample depends only on itself)."""
    if sigma < 0:
        raise ValueError(f"denoise: sigma must be >= 0, got {sigma}")
    with torch.enable_grad():
        xg = x.detach().clone().requires_grad_(True)
        nll = model.nll(xg, y).sum()
        (grad,) = torch.autograd.grad(nll, xg)
    return (xg - sigma**2 * grad).detach()


def class_nll(model: DensityModel, x: Tensor, num_classes: int) -> Tensor:
    """NLL(x | y) for every class, (B, num_classes), in nats."""
    if num_classes < 1:
        raise ValueError(f"class_nll: num_classes must be >= 1, got {num_classes}")
    with torch.no_grad():
        cols = [model.nll(x, torch.full((x.shape[0],), k, dtype=torch.long)) for k in range(num_classes)]
    return torch.stack(cols, dim=1)


def bayes_classify(model: DensityModel, x: Tensor, num_classes: int) -> Tensor:
    """argmin_y NLL(x | y) under a uniform class prior (``train_local.ipynb``), (B,) labels."""
    return class_nll(model, x, num_classes).argmin(dim=1)
