"""LoRA warm-up with saved Adam states and LoRA retraining on a selected subset, for *NICE Data
Selection for Instruction Tuning in LLMs with Non-differentiable Evaluation Metric* (Wang et al.,
ICML 2025, https://openreview.net/forum?id=2wt8m5HUBs), Section 3 (the LESS pipeline it builds on).

Warm-up: LoRA-train the base model on a random slice of the pool for a few epochs and keep, after
every epoch, the LoRA weights, the optimiser's first and second moments (flattened in parameter
order) and the epoch's mean learning rate. Gradient features are then computed at each checkpoint
(:func:`checkpoint_features`). Retraining starts again from the base model with the same LoRA
settings. Paper defaults: LoRA r = 128, α = 512, dropout 0.1 on q/k/v/o projections, lr 2e-5,
3 % warm-up, no weight decay, 4 warm-up epochs. Training runs through :func:`icml25.nn.fit` with the
completion loss of :func:`icml25.language.selekt.completion_loss` (cosine rather than linear decay).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_in_range
from icml25.language.selekt.finetune import completion_loss
from icml25.nn.train import FitConfig, FitHistory, fit

from .features import RandomProjector, adam_preconditioned_grads, example_gradients, trainable_parameters

__all__ = [
    "LoraCheckpoint",
    "LoraRun",
    "LoraTrainConfig",
    "checkpoint_features",
    "encode_examples",
    "load_checkpoint",
    "train_lora",
]


def encode_examples(
    prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], *, eos_id: int, pad_id: int
) -> tuple[Tensor, Tensor, Tensor]:
    """``(input_ids, labels, attention_mask)`` of prompt + response + eos, right-padded.

    Labels are ``-100`` on the prompt and the padding (a completion-only loss).
    """
    if len(prompts) != len(responses) or not prompts:
        raise ValueError(
            "prompts and responses must be non-empty and equally long, got "
            f"{len(prompts)} and {len(responses)}"
        )
    rows = [(list(p), [*r, eos_id]) for p, r in zip(prompts, responses, strict=True)]
    if any(not p for p, _ in rows):
        raise ValueError("every prompt must hold at least one token")
    width = max(len(p) + len(r) for p, r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (p, r) in enumerate(rows):
        n = len(p) + len(r)
        ids[i, :n] = torch.tensor(p + r)
        labels[i, len(p) : n] = torch.tensor(r)
        attn[i, :n] = 1
    return ids, labels, attn


@dataclass(frozen=True)
class LoraTrainConfig:
    """LoRA training (warm-up or retraining).

    Args:
        steps: optimiser steps (0: ``epochs`` passes over the data instead).
        epochs: passes over the data when ``steps`` is 0.
        batch_size, lr, warmup_frac, weight_decay, grad_clip: the optimiser loop (AdamW, cosine).
        betas, eps: Adam's constants (kept for the preconditioning of the features).
        r, alpha, dropout, target_modules: the LoRA adapters (paper: 128, 512, 0.1, q/k/v/o).
        checkpoint_every_epoch: keep a :class:`LoraCheckpoint` after each epoch (the warm-up).
    """

    steps: int = 0
    epochs: int = 4
    batch_size: int = 8
    lr: float = 2e-5
    warmup_frac: float = 0.03
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    r: int = 128
    alpha: int = 512
    dropout: float = 0.1
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    checkpoint_every_epoch: bool = False

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("epochs", "batch_size", "r", "alpha"),
            non_negative_int=("steps",),
            positive=("lr", "eps"),
            non_negative=("weight_decay", "grad_clip"),
        )
        check_in_range("LoraTrainConfig.warmup_frac", self.warmup_frac, 0.0, 1.0, high_open=True)
        check_in_range("LoraTrainConfig.dropout", self.dropout, 0.0, 1.0, high_open=True)
        if not self.target_modules:
            raise ValueError("LoraTrainConfig.target_modules must name at least one module")


@dataclass(frozen=True)
class LoraCheckpoint:
    """The state after one warm-up epoch.

    Attributes:
        epoch: 1-based epoch.
        step: optimiser steps taken so far.
        lora_state: trainable parameter name -> value.
        exp_avg, exp_avg_sq: ``[P]`` Adam moments, flattened in the order of ``lora_state``.
        mean_lr: the epoch's mean learning rate (η̄_c before renormalising).
    """

    epoch: int
    step: int
    lora_state: dict[str, Tensor]
    exp_avg: Tensor
    exp_avg_sq: Tensor
    mean_lr: float


@dataclass
class LoraRun:
    """A trained peft model (the base model given to :func:`train_lora` is untouched)."""

    model: nn.Module
    history: FitHistory
    checkpoints: list[LoraCheckpoint] = field(default_factory=list)


def _named_trainable(model: nn.Module) -> list[tuple[str, Tensor]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def train_lora(
    model: nn.Module,
    data: tuple[Tensor, Tensor, Tensor],
    config: LoraTrainConfig,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> LoraRun:
    """LoRA-train a copy of ``model`` on ``data`` (from :func:`encode_examples`)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(config, LoraTrainConfig):
        raise TypeError(f"config must be a LoraTrainConfig, got {type(config).__name__}")
    if not isinstance(data, tuple) or len(data) != 3 or not all(isinstance(t, Tensor) for t in data):
        raise TypeError("data must be the (input_ids, labels, attention_mask) tuple of encode_examples")
    if data[0].ndim != 2 or data[0].shape[0] == 0 or any(t.shape != data[0].shape for t in data):
        raise ValueError(
            f"data tensors must share one non-empty [N, T] shape, got {[tuple(t.shape) for t in data]}"
        )
    from peft import LoraConfig, get_peft_model

    n = data[0].shape[0]
    per_epoch = math.ceil(n / config.batch_size)
    steps = config.steps if config.steps > 0 else config.epochs * per_epoch
    torch.manual_seed(seed)  # peft draws the LoRA A matrices from the global generator
    work = copy.deepcopy(model)
    lcfg = LoraConfig(
        r=config.r,
        lora_alpha=config.alpha,
        lora_dropout=config.dropout,
        target_modules=list(config.target_modules),
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(work, lcfg)
    named = _named_trainable(peft_model)
    params = [p for _, p in named]
    optimizer = torch.optim.AdamW(
        params, lr=config.lr, betas=config.betas, eps=config.eps, weight_decay=config.weight_decay
    )
    fit_cfg = FitConfig(
        steps=steps,
        batch_size=config.batch_size,
        lr=config.lr,
        warmup_steps=round(config.warmup_frac * steps),
        grad_clip=config.grad_clip,
        sampling="shuffle",
        keep_best=False,
    )
    checkpoints: list[LoraCheckpoint] = []

    def snapshot(m: nn.Module, step: int) -> None:
        if not config.checkpoint_every_epoch or (step % per_epoch and step != steps):
            return
        epoch = math.ceil(step / per_epoch)
        if checkpoints and checkpoints[-1].epoch == epoch:
            return
        first = (epoch - 1) * per_epoch
        lrs = [fit_cfg.lr_at(s) for s in range(first, step)]

        def moment(key: str) -> Tensor:
            return torch.cat(
                [
                    optimizer.state[p][key].detach().reshape(-1).float().clone()
                    if key in optimizer.state.get(p, {})
                    else torch.zeros(p.numel())
                    for p in params
                ]
            )

        checkpoints.append(
            LoraCheckpoint(
                epoch=epoch,
                step=step,
                lora_state={name: p.detach().clone() for name, p in named},
                exp_avg=moment("exp_avg"),
                exp_avg_sq=moment("exp_avg_sq"),
                mean_lr=sum(lrs) / len(lrs),
            )
        )

    history = fit(
        peft_model,
        completion_loss,
        data,
        fit_cfg,
        seed=seed,
        optimizer=optimizer,
        post_step=snapshot,
        progress=progress,
    )
    peft_model.eval()
    return LoraRun(model=peft_model, history=history, checkpoints=checkpoints)


@torch.no_grad()
def load_checkpoint(model: nn.Module, checkpoint: LoraCheckpoint) -> None:
    """Copy a checkpoint's LoRA weights into ``model`` (the peft model it came from)."""
    if not isinstance(checkpoint, LoraCheckpoint):
        raise TypeError(f"checkpoint must be a LoraCheckpoint, got {type(checkpoint).__name__}")
    named = dict(_named_trainable(model))
    if set(named) != set(checkpoint.lora_state):
        raise ValueError("checkpoint does not match the model's trainable parameters")
    for name, value in checkpoint.lora_state.items():
        named[name].copy_(value)


def checkpoint_features(
    model: nn.Module,
    checkpoint: LoraCheckpoint,
    data: tuple[Tensor, Tensor, Tensor],
    *,
    projector: RandomProjector | None = None,
    adam: bool = True,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    chunk: int = 256,
) -> Tensor:
    """Training-side features at one checkpoint: per-example gradients, Adam-preconditioned
    (``adam=True``, LESS/NICE's training side) or plain, then projected.

    Returns:
        ``[N, d]`` (``[N, P]`` without a projector).
    """
    load_checkpoint(model, checkpoint)
    params = trainable_parameters(model)
    out = []
    for start in range(0, data[0].shape[0], chunk):
        part = tuple(t[start : start + chunk] for t in data)
        g = example_gradients(model, part, params=params)  # type: ignore[arg-type]
        if adam:
            g = adam_preconditioned_grads(g, checkpoint.exp_avg, checkpoint.exp_avg_sq, betas=betas, eps=eps)
        out.append(projector(g) if projector is not None else g)
    return torch.cat(out)
