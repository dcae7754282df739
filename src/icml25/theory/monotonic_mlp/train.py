"""A small regression trainer: Adam, MSE, full batch for small data, early stopping on validation.

Defaults follow the brief's Sec. 2.4 (details not recovered from the paper): Adam with lr 1e-3,
full batch when the training set fits in one batch (mini-batches of 256 otherwise), the weights
with the lowest validation MSE are restored at the end.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

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
    t = torch.as_tensor(a, dtype=torch.float32)
    if t.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return t


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
    if Xtr.shape[0] != ytr.shape[0] or Xva.shape[0] != yva.shape[0]:
        raise ValueError("X and y must have the same number of rows")
    if Xtr.shape[1] != Xva.shape[1]:
        raise ValueError(f"X_train has {Xtr.shape[1]} features but X_val has {Xva.shape[1]}")
    if steps < 1 or eval_every < 1 or patience < 1 or batch_size < 1 or not lr > 0:
        raise ValueError("steps, eval_every, patience, batch_size must be >= 1 and lr > 0")
    if monotone is not None:
        check_declared_directions(Xtr.numpy(), ytr.numpy(), monotone)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)  # fused: fewer kernel launches on CPU
    n = Xtr.shape[0]
    best, best_step, bad_evals, curve = math.inf, 0, 0, []
    best_state = copy.deepcopy(model.state_dict())
    diverged, step = False, 0
    for step in range(1, steps + 1):
        model.train()
        if n <= batch_size:
            xb, yb = Xtr, ytr
        else:
            idx = torch.randint(n, (batch_size,), generator=gen)
            xb, yb = Xtr[idx], ytr[idx]
        loss = torch.mean((model(xb)[:, 0] - yb) ** 2)
        if not torch.isfinite(loss):
            diverged = True
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % eval_every == 0 or step == steps:
            model.eval()
            with torch.no_grad():
                val = float(torch.mean((model(Xva)[:, 0] - yva) ** 2))
            curve.append(val)
            if callback is not None:
                callback(step)
            if val < best:
                best, best_step, bad_evals = val, step, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                bad_evals += 1
                if bad_evals >= patience:
                    break
    model.load_state_dict(best_state)
    model.eval()
    return FitResult(best, best_step, step, tuple(curve), diverged)


@torch.no_grad()
def predict(model: nn.Module, X: np.ndarray | torch.Tensor) -> np.ndarray:
    """Model output for ``X`` ``(n, d)`` as a float64 array ``(n,)``."""
    model.eval()
    return model(_tensor(X, "X", 2))[:, 0].double().numpy()
