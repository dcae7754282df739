"""A small regression trainer: Adam, MSE, full batch for small data, early stopping on validation.

Part of *Advancing Constrained Monotonic Neural Networks: Achieving Universal Approximation Beyond
Bounded Activations* (ICML 2025, https://arxiv.org/abs/2505.02537): the trainer for the claim
check's experiments, which stand in for the paper's experimental comparison. The paper's optimiser
settings were not recovered; our choice: Adam with lr 1e-3, full batch when the training set
fits in one batch (mini-batches of 256 drawn with replacement otherwise), evaluation every
``eval_every`` steps with early stopping, and the weights with the lowest validation MSE restored at
the end. The loop is the package's :func:`icml25.nn.train.fit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from icml25.core.validate import check_numeric_array
from icml25.nn.train import FitConfig, fit, snapshot_state

from .data import check_declared_directions

__all__ = ["FitResult", "fit_regression", "predict"]


@dataclass(frozen=True)
class FitResult:
    """Outcome of :func:`fit_regression`: best validation MSE, its step, steps run, the curve."""

    best_val_mse: float
    best_step: int
    steps_run: int
    val_curve: tuple[float, ...]
    diverged: bool


def _tensor(a: np.ndarray | torch.Tensor, name: str, ndim: int) -> torch.Tensor:
    check_numeric_array(name, a)
    t = torch.as_tensor(a, dtype=torch.float32)
    if t.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(t.shape)})")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return t


class _ModeCached(nn.Module):
    """``module`` with a ``train(mode)`` that returns at once when the mode is already set.

    Forward and state dict are the wrapped module's (keys prefixed ``module.``); the mode is set on
    the whole tree whenever it changes, so ``module.training`` always agrees with the wrapper's.
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module
        self.training = module.training

    def train(self, mode: bool = True) -> _ModeCached:
        if mode != self.training or mode != self.module.training:
            super().train(mode)
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.module(x)


def fit_regression(
    model: nn.Module,
    X_train: np.ndarray | torch.Tensor,
    y_train: np.ndarray | torch.Tensor,
    X_val: np.ndarray | torch.Tensor,
    y_val: np.ndarray | torch.Tensor,
    *,
    steps: int = 1000,
    lr: float = 1e-3,
    batch_size: int = 256,
    eval_every: int = 10,
    patience: int = 30,
    seed: int = 0,
    monotone: Sequence[int] | None = None,
    callback: Callable[[int], None] | None = None,
) -> FitResult:
    """Train ``model`` (output ``(n, 1)``) on MSE; restore the best validation weights.

    Args:
        model: maps ``(n, d)`` to ``(n, 1)``.
        X_train, y_train: ``(n, d)`` and ``(n,)``.
        X_val, y_val: validation arrays for early stopping.
        steps: maximum optimiser steps.
        lr: Adam learning rate.
        batch_size: full batch when ``n <= batch_size``.
        eval_every: steps between validation evaluations.
        patience: evaluations without improvement before stopping.
        seed: seed of the mini-batch sampler.
        monotone: if given, warn when the training data clearly contradict these directions
            (:func:`check_declared_directions`).
        callback: called with the step number after each evaluation.
    """
    Xtr, ytr = _tensor(X_train, "X_train", 2), _tensor(y_train, "y_train", 1)
    Xva, yva = _tensor(X_val, "X_val", 2), _tensor(y_val, "y_val", 1)
    if Xtr.shape[0] != ytr.shape[0]:
        raise ValueError(
            f"X_train and y_train must have the same number of rows, got {Xtr.shape[0]} and {ytr.shape[0]}"
        )
    if Xva.shape[0] != yva.shape[0]:
        raise ValueError(
            f"X_val and y_val must have the same number of rows, got {Xva.shape[0]} and {yva.shape[0]}"
        )
    if Xtr.shape[1] != Xva.shape[1]:
        raise ValueError(f"X_train has {Xtr.shape[1]} features but X_val has {Xva.shape[1]}")
    if steps < 1 or eval_every < 1 or patience < 1 or batch_size < 1 or not lr > 0:
        raise ValueError("steps, eval_every, patience, batch_size must be >= 1 and lr > 0")
    if monotone is not None:
        check_declared_directions(Xtr.numpy(), ytr.numpy(), monotone)
    n = Xtr.shape[0]
    config = FitConfig(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        schedule="constant",
        optimizer="adam",
        betas=(0.9, 0.999),
        fused=True,  # fewer kernel launches on the CPU
        sampling="full" if n <= batch_size else "replacement",
        eval_every=eval_every,
        monitor="val_mse",
        patience=patience,
    )
    initial = snapshot_state(model)
    # one Adam group (no weight decay anywhere, so the same update as fit's two groups) and a
    # wrapper whose train()/eval() skip the module walk when the mode is unchanged: fit() calls
    # model.train() every step, which cost about a tenth of a step for these small networks
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=config.betas, fused=True)
    wrapped = _ModeCached(model)

    def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, ...], gen: torch.Generator) -> torch.Tensor:
        xb, yb = batch
        return torch.mean((m(xb)[:, 0] - yb) ** 2)

    def evaluate(m: nn.Module) -> dict[str, float]:
        return {"val_mse": float(torch.mean((m(Xva)[:, 0] - yva) ** 2))}

    history = fit(
        wrapped,
        loss_fn,
        (Xtr, ytr),
        config,
        seed=seed,
        evaluate=evaluate,
        optimizer=optimizer,
        on_eval=(lambda record: callback(record.step)) if callback is not None else None,
    )
    if history.best_step == 0:  # no finite validation loss: keep the initial weights
        model.load_state_dict(initial)
    _, curve = history.metric("val_mse")
    best = history.best_value if history.best_step else math.inf
    steps_run = len(history.steps) + (1 if history.diverged else 0)  # the diverging step counts
    return FitResult(best, history.best_step, steps_run, curve, history.diverged)


@torch.no_grad()
def predict(model: nn.Module, X: np.ndarray | torch.Tensor) -> np.ndarray:
    """Model output for ``X`` ``(n, d)`` as a float64 array ``(n,)``."""
    model.eval()
    return model(_tensor(X, "X", 2))[:, 0].double().numpy()
