"""Maximum-likelihood training of a flow on integer images (identical for TarFlow and the baseline).

Part of the TarFlow implementation (*Normalizing Flows are Capable Generative Models*, ICML 2025,
https://arxiv.org/abs/2412.06329). Follows ``train.py`` of the official code: AdamW with
β = (0.9, 0.95) and weight decay 1e-4, a linear warm-up from ``min_lr`` to ``lr`` and a cosine decay
back to ``min_lr``. The loss is NLL/D (nats per dimension). Each step draws fresh noise: uniform
dequantisation (likelihood runs) or y + σε on bin centres (generation runs, technique 1). Labels
are dropped (set to −1, the null class) with probability ``label_drop`` for guidance.
The state with the best validation loss (same noise type, fixed draws) is restored at the end.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor, nn

from .likelihood import check_levels, dequantize, noise_augment, to_unit_range

__all__ = ["TrainConfig", "TrainResult", "train_flow", "lr_at", "flow_loss_bpd"]


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (defaults: the brief's digits recipe)."""

    steps: int = 500
    batch_size: int = 128
    lr: float = 1e-3
    min_lr: float = 1e-6
    warmup_steps: int = 10
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 1e-4
    noise: Literal["uniform", "gaussian"] = "uniform"
    sigma: float = 0.1
    label_drop: float = 0.0
    eval_every: int = 10
    grad_clip: float = 0.0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.eval_every < 1 or self.warmup_steps < 0:
            raise ValueError("TrainConfig: steps, batch_size, eval_every >= 1 and warmup_steps >= 0")
        if not 0 < self.min_lr <= self.lr:
            raise ValueError(f"TrainConfig: need 0 < min_lr <= lr, got {self.min_lr}, {self.lr}")
        if self.noise not in ("uniform", "gaussian"):
            raise ValueError(f"TrainConfig.noise must be 'uniform' or 'gaussian', got {self.noise!r}")
        if not 0 <= self.label_drop < 1 or self.sigma < 0 or self.grad_clip < 0:
            raise ValueError("TrainConfig: label_drop in [0, 1), sigma >= 0, grad_clip >= 0")


@dataclass
class TrainResult:
    """Loss curves (bits/dim of the continuous model incl. the log(L/2) offset) and the best step."""

    steps: list[int] = field(default_factory=list)
    train_bpd: list[float] = field(default_factory=list)
    val_steps: list[int] = field(default_factory=list)
    val_bpd: list[float] = field(default_factory=list)
    best_step: int = 0
    best_val_bpd: float = float("inf")
    seconds: float = 0.0


def lr_at(step: int, config: TrainConfig) -> float:
    """Linear warm-up from ``min_lr`` to ``lr`` over ``warmup_steps``, then cosine to ``min_lr``."""
    c = config
    if step < c.warmup_steps:
        return c.min_lr + (c.lr - c.min_lr) * (step + 1) / c.warmup_steps
    progress = (step - c.warmup_steps) / max(1, c.steps - c.warmup_steps)
    return c.min_lr + 0.5 * (c.lr - c.min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


def flow_loss_bpd(nll_per_dim: Tensor, num_levels: int) -> Tensor:
    """NLL/D (nats) → bits/dim with the dequantisation offset log(L/2)."""
    return (nll_per_dim + math.log(num_levels / 2)) / math.log(2)


def _noisy(x_int: Tensor, config: TrainConfig, num_levels: int, gen: torch.Generator) -> Tensor:
    if config.noise == "uniform":
        return dequantize(x_int, num_levels, generator=gen)
    return noise_augment(to_unit_range(x_int, num_levels), config.sigma, generator=gen)


def train_flow(
    model: nn.Module,
    x_train: Tensor,
    *,
    num_levels: int,
    config: TrainConfig,
    seed: int,
    y_train: Tensor | None = None,
    x_val: Tensor | None = None,
    y_val: Tensor | None = None,
    callback: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Train ``model`` (with an ``nll_per_dim(x, y)`` method) in place; restores the best validation state.

    Args:
        model: a TarFlow or CouplingFlow.
        x_train: (n, C, H, W) integer images in [0, num_levels − 1].
        num_levels: L.
        config: optimisation settings.
        seed: seeds batch order, dequantisation and label dropout (a private generator).
        y_train, y_val: labels for a conditional model (None for unconditional).
        x_val: validation images; without them the final state is kept.
        callback: called as ``callback(step, train_bpd)`` after every step.
    """
    check_levels(x_train, num_levels, "x_train")
    if x_val is not None:
        check_levels(x_val, num_levels, "x_val")
    nll_per_dim: Callable[..., Tensor] = model.nll_per_dim  # type: ignore[assignment]
    gen = torch.Generator().manual_seed(seed)
    val_gen_seed = seed + 1_000_003
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr,
        betas=config.betas,
    )
    result = TrainResult()
    best_state = copy.deepcopy(model.state_dict())
    n = x_train.shape[0]
    perm = torch.randperm(n, generator=gen)
    pos = 0
    start = time.perf_counter()
    for step in range(config.steps):
        model.train()
        if pos + config.batch_size > n:
            perm, pos = torch.randperm(n, generator=gen), 0
        idx = perm[pos : pos + config.batch_size]
        pos += config.batch_size
        x = _noisy(x_train[idx], config, num_levels, gen)
        y = None
        if y_train is not None:
            y = y_train[idx].clone()
            if config.label_drop > 0:
                drop = torch.rand(y.shape, generator=gen) < config.label_drop
                y[drop] = -1
        for group in opt.param_groups:
            group["lr"] = lr_at(step, config)
        loss = nll_per_dim(x, y).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        opt.step()
        bpd = float(flow_loss_bpd(loss.detach(), num_levels))
        result.steps.append(step + 1)
        result.train_bpd.append(bpd)
        if callback is not None:
            callback(step + 1, bpd)
        if x_val is not None and ((step + 1) % config.eval_every == 0 or step + 1 == config.steps):
            model.eval()
            vgen = torch.Generator().manual_seed(val_gen_seed)
            with torch.no_grad():
                v = float(
                    flow_loss_bpd(
                        nll_per_dim(_noisy(x_val, config, num_levels, vgen), y_val).mean(), num_levels
                    )
                )
            result.val_steps.append(step + 1)
            result.val_bpd.append(v)
            if math.isfinite(v) and v < result.best_val_bpd:
                result.best_val_bpd, result.best_step = v, step + 1
                best_state = copy.deepcopy(model.state_dict())
    if x_val is not None and result.best_step > 0:
        model.load_state_dict(best_state)
    model.eval()
    result.seconds = time.perf_counter() - start
    return result
