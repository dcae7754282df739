"""Normalizing Flows are Capable Generative Models (TarFlow).

Zhai, Zhang, Nakkiran, Berthelot, Gu, Zheng, Chen, Bautista, Jaitly, Susskind. ICML 2025 (oral).
https://arxiv.org/abs/2412.06329 · official code https://github.com/apple/ml-tarflow

TarFlow is a normalizing flow for images made of a stack of masked autoregressive affine flow
blocks whose conditioner is a causal Transformer over image patches. Blocks alternate the
autoregressive direction, so every patch ends up conditioned on every other one; the Jacobian of
each block is triangular and its log-determinant is a sum of predicted log-scales. Training is a
single teacher-forced pass; sampling inverts the blocks token by token (here with a KV cache).
Gaussian noise augmentation in training, one-step score-based (Tweedie) denoising of samples, and
classifier-free-style guidance (null class, or attention temperature for unconditional models)
improve samples.

Implements: the MetaBlock flow step (Sec. 3.1, Eq. 4-6) with identity/flip permutations,
the Gaussian-prior likelihood (Eq. 7) and its VP variant with a learned prior variance, sequential
inversion with a KV cache, noise augmentation (Sec. 3.2), Tweedie denoising (Sec. 3.2), guidance
with optional annealing and scale/shift selection (Sec. 3.3), bits/dim with uniform
dequantisation (``evaluate_bpd.py``), the Bayes classifier of a conditional flow
(``train_local.ipynb``), and the RealNVP/Glow coupling-flow baseline used by the claim check.
Left out: bf16 autocast, DDP training, FID evaluation (no Inception weights offline).

Usage::

    data = load_digits_dataset()
    model = TarFlow(TarFlowConfig(in_channels=1, img_size=8, patch_size=2, channels=64,
                                  num_blocks=4, layers_per_block=1, head_dim=32))
    train_flow(model, data.x_train, num_levels=17, config=TrainConfig(steps=300), seed=0,
               x_val=data.x_val)
    bpd = bits_per_dim(model, data.x_test, num_levels=17).mean()
    xs = model.sample(16, generator=torch.Generator().manual_seed(0))
"""

from .coupling import (
    ActNorm,
    AffineCoupling,
    CouplingFlow,
    CouplingFlowConfig,
    InvConv1x1,
    match_coupling_hidden,
    squeeze,
    unsqueeze,
)
from .data import DIGITS_LEVELS, DigitsDataset, load_digits_dataset, shift_family
from .denoise import bayes_classify, class_nll, denoise
from .likelihood import (
    DensityModel,
    bits_per_dim,
    check_levels,
    dequantize,
    noise_augment,
    to_integer_images,
    to_unit_range,
)
from .model import FlowOutput, TarFlow, TarFlowConfig, gaussian_nll, patchify, unpatchify
from .train import TrainConfig, TrainResult, flow_loss_bpd, train_flow

__all__ = [
    "DIGITS_LEVELS",
    "ActNorm",
    "AffineCoupling",
    "CouplingFlow",
    "CouplingFlowConfig",
    "DensityModel",
    "DigitsDataset",
    "FlowOutput",
    "InvConv1x1",
    "TarFlow",
    "TarFlowConfig",
    "TrainConfig",
    "TrainResult",
    "bayes_classify",
    "bits_per_dim",
    "check_levels",
    "class_nll",
    "denoise",
    "dequantize",
    "flow_loss_bpd",
    "gaussian_nll",
    "load_digits_dataset",
    "match_coupling_hidden",
    "noise_augment",
    "patchify",
    "shift_family",
    "squeeze",
    "to_integer_images",
    "to_unit_range",
    "train_flow",
    "unpatchify",
    "unsqueeze",
]
