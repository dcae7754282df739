"""Training and prediction for WGFormer and its baselines (https://arxiv.org/abs/2410.09795).

WGFormer (Wang, Cheng, Xu, ICML 2025) trains with Adam, polynomial decay after a 6 % warm-up, grad
clipping 1.0, and samples one of the molecule's input conformations per epoch. Here every model goes
through :func:`icml25.nn.fit` with the same schedule; each mini-batch draws, per molecule, one of its
``k`` input conformations from the generator ``fit`` hands the loss, so a run depends on its seed only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.progress import ProgressFn
from icml25.nn.train import FitConfig, FitHistory, fit

from .data import ConformerTensors
from .metrics import conformer_loss

__all__ = ["train_model", "predict", "validation_loss"]


def _on(model: nn.Module, *tensors: Tensor) -> tuple[Tensor, ...]:
    """``tensors`` moved to the device of ``model``'s parameters (no copy when already there)."""
    param = next(model.parameters(), None)
    if param is None:  # a parameter-free model (the identity reference) runs where the data are
        return tensors
    return tuple(t.to(param.device) for t in tensors)


@dataclass(frozen=True)
class _Loss:
    data: ConformerTensors
    w_dist: float
    w_coord: float

    def __call__(self, model: nn.Module, idx: Tensor, gen: torch.Generator) -> Tensor:
        k = self.data.inputs.shape[1]
        conf = torch.randint(k, (len(idx),), generator=gen)
        tokens, coords, target, mask = _on(model, *self.data.index(idx, conf))
        out = model(tokens, coords, mask)
        return conformer_loss(
            out.coords, out.distances, target, mask, w_dist=self.w_dist, w_coord=self.w_coord
        )


@torch.no_grad()
def validation_loss(
    model: nn.Module,
    data: ConformerTensors,
    *,
    batch_size: int = 64,
    w_dist: float = 8.0,
    w_coord: float = 1.0,
) -> float:
    """Mean loss over ``data`` (input conformation 0), molecules weighted equally."""
    model.eval()
    total = 0.0
    for s in range(0, len(data), batch_size):
        idx = torch.arange(s, min(s + batch_size, len(data)))
        tokens, coords, target, mask = _on(model, *data.index(idx))
        out = model(tokens, coords, mask)
        total += float(
            conformer_loss(out.coords, out.distances, target, mask, w_dist=w_dist, w_coord=w_coord)
        ) * len(idx)
    return total / len(data)


def train_model(
    model: nn.Module,
    train: ConformerTensors,
    config: FitConfig,
    *,
    seed: int = 0,
    valid: ConformerTensors | None = None,
    w_dist: float = 8.0,
    w_coord: float = 1.0,
    progress: ProgressFn | None = None,
) -> FitHistory:
    """Train ``model`` in place on ``train`` (keep-best on ``valid`` loss if given and ``eval_every > 0``)."""
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None
    if valid is not None:

        def evaluate(m: nn.Module) -> dict[str, float]:
            return {"val_loss": validation_loss(m, valid, w_dist=w_dist, w_coord=w_coord)}

    return fit(
        model,
        _Loss(train, w_dist, w_coord),
        len(train),
        config,
        seed=seed,
        evaluate=evaluate,
        progress=progress,
    )


@torch.no_grad()
def predict(
    model: nn.Module, data: ConformerTensors, *, batch_size: int = 64, conformer: int = 0
) -> list[np.ndarray]:
    """Predicted atom coordinates (``[n_atoms, 3]`` float64 arrays, special tokens dropped) per molecule."""
    model.eval()
    out: list[np.ndarray] = []
    for s in range(0, len(data), batch_size):
        idx = torch.arange(s, min(s + batch_size, len(data)))
        conf = torch.full((len(idx),), conformer, dtype=torch.long)
        tokens, coords, _, mask = _on(model, *data.index(idx, conf))
        pred = model(tokens, coords, mask).coords
        for i in range(len(idx)):
            out.append(pred[i][mask[i]].double().cpu().numpy())
    return out
