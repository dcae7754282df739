"""Maximum-likelihood training of a flow on integer images (identical for TarFlow and the baseline).

Part of the TarFlow implementation (*Normalizing Flows are Capable Generative Models*, ICML 2025,
https://arxiv.org/abs/2412.06329), Sec. 3 (training objective, Eq. 7) and Sec. 3.2 (noise
augmentation). Follows ``train.py`` of the official code: AdamW with β = (0.9, 0.95) and weight
decay 1e-4 on matrices, a linear warm-up from ``min_lr`` to ``lr`` and a cosine decay back to
``min_lr``. The loss is NLL/D (nats per dimension). Each step draws fresh noise: uniform
dequantisation (likelihood runs) or y + σε on bin centres (generation runs, Sec. 3.2). Labels are
dropped (set to −1, the null class) with probability ``label_drop`` for guidance (Sec. 3.3). The
state with the best validation loss (same noise type, fixed draws) is restored at the end. The loop
is the package's :func:`icml25.nn.train.fit` (batches: a fresh permutation whenever fewer than a
batch remain).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from icml25.core.progress import ProgressFn
from icml25.core.validate import check_fields, check_in_range
from icml25.nn.distributed import unwrap
from icml25.nn.train import FitConfig, FitHistory, fit

from .likelihood import check_levels, dequantize, noise_augment, to_unit_range
from .model import gaussian_nll

__all__ = ["TrainConfig", "TrainResult", "train_flow", "flow_loss_bpd"]


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (defaults: a digits-sized version of the official recipe)."""

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
    fused: bool = False  # torch's fused AdamW kernel (the same update, fewer calls; faster on CPU)

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("steps", "batch_size", "eval_every"),
            positive=("lr", "min_lr"),
            non_negative_int=("warmup_steps",),
            non_negative=("sigma", "grad_clip", "weight_decay"),
            probability=("label_drop",),
        )
        check_in_range("TrainConfig.min_lr", self.min_lr, 0.0, self.lr, low_open=True)
        if self.noise not in ("uniform", "gaussian"):
            raise ValueError(f"TrainConfig.noise must be 'uniform' or 'gaussian', got {self.noise!r}")

    def fit_config(self) -> FitConfig:
        """The :class:`icml25.nn.train.FitConfig` of this recipe."""
        return FitConfig(
            steps=self.steps,
            batch_size=self.batch_size,
            lr=self.lr,
            min_lr=self.min_lr,
            warmup_steps=self.warmup_steps,
            betas=self.betas,
            weight_decay=self.weight_decay,
            grad_clip=self.grad_clip,
            fused=self.fused,
            sampling="shuffle_drop_last",
            eval_every=self.eval_every,
            monitor="val_bpd",
        )


@dataclass(frozen=True)
class TrainResult:
    """Loss curves (bits/dim of the continuous model incl. the log(L/2) offset) and the best step."""

    steps: tuple[int, ...]
    train_bpd: tuple[float, ...]
    val_steps: tuple[int, ...]
    val_bpd: tuple[float, ...]
    best_step: int
    best_val_bpd: float
    seconds: float


def flow_loss_bpd(nll_per_dim: Tensor, num_levels: int) -> Tensor:
    """NLL/D (nats) → bits/dim with the dequantisation offset log(L/2)."""
    return (nll_per_dim + math.log(num_levels / 2)) / math.log(2)


def _noisy(x_int: Tensor, config: TrainConfig, num_levels: int, gen: torch.Generator) -> Tensor:
    if config.noise == "uniform":
        return dequantize(x_int, num_levels, generator=gen)
    return noise_augment(to_unit_range(x_int, num_levels), config.sigma, generator=gen)


def _nll_per_dim(model: nn.Module, x: Tensor, y: Tensor | None) -> Tensor:
    """NLL/D through the model's ``forward`` (so a DDP wrapper sees the call), Eq. 7."""
    z, logdet = model(x, y)
    flow = unwrap(model)
    return gaussian_nll(z, logdet, flow.prior_log_var()) / z[0].numel()  # type: ignore[operator]


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
    progress: ProgressFn | None = None,
    device: str | torch.device | None = None,
) -> TrainResult:
    """Train ``model`` (a flow whose ``forward(x, y)`` returns ``(z, logdet)``) in place.

    Args:
        model: a TarFlow or CouplingFlow.
        x_train: (n, C, H, W) integer images in [0, num_levels − 1].
        num_levels: L.
        config: optimisation settings.
        seed: seeds batch order, dequantisation and label dropout (one private generator).
        y_train, y_val: labels for a conditional model (None for unconditional).
        x_val: validation images; with them the best validation state is restored at the end.
        progress: ``progress(step, total)`` after every step.
        device: move the model there first (``"cuda"``); batches follow the model, and the noise
            is drawn by the CPU generator and copied, so a seed gives the same draws on any device.
    """
    if device is not None:
        model.to(torch.device(device))
    check_levels(x_train, num_levels, "x_train")
    if x_train.ndim < 1 or x_train.shape[0] == 0:
        raise ValueError(f"x_train is empty (shape {tuple(x_train.shape)}): nothing to train on")
    if x_val is not None:
        check_levels(x_val, num_levels, "x_val")
        if x_val.ndim < 1 or x_val.shape[0] == 0:
            raise ValueError(f"x_val is empty (shape {tuple(x_val.shape)})")
    val_gen_seed = seed + 1_000_003

    def loss_fn(m: nn.Module, batch: tuple[Tensor, ...], gen: torch.Generator) -> Tensor:
        x = _noisy(batch[0], config, num_levels, gen)
        y = None
        if y_train is not None:
            y = batch[1].clone()
            if config.label_drop > 0:
                drop = (torch.rand(y.shape, generator=gen) < config.label_drop).to(y.device)
                y[drop] = -1
        return _nll_per_dim(m, x, y).mean()

    def evaluate(m: nn.Module) -> dict[str, float]:
        assert x_val is not None
        vgen = torch.Generator().manual_seed(val_gen_seed)  # the same draws at every evaluation
        nll = _nll_per_dim(m, _noisy(x_val, config, num_levels, vgen), y_val).mean()
        return {"val_bpd": float(flow_loss_bpd(nll, num_levels))}

    data = (x_train,) if y_train is None else (x_train, y_train)
    history: FitHistory = fit(
        model,
        loss_fn,
        data,
        config.fit_config(),
        seed=seed,
        evaluate=evaluate if x_val is not None else None,
        progress=progress,
    )
    val_steps, val_bpd = history.metric("val_bpd")
    return TrainResult(
        steps=history.steps,
        train_bpd=tuple(float(flow_loss_bpd(torch.tensor(v), num_levels)) for v in history.train_loss),
        val_steps=val_steps,
        val_bpd=val_bpd,
        best_step=history.best_step,
        best_val_bpd=history.best_value if history.best_step else float("inf"),
        seconds=history.seconds,
    )
