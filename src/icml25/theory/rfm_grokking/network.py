"""Two-layer quadratic network of *Emergence in non-neural models: grokking modular arithmetic via
average gradient outer product* (Mallinar et al., ICML 2025, https://arxiv.org/abs/2407.20199).

Sec. 4 / App. D: f(x) = W2 φ(W1 x) with φ(z) = z² and no biases, trained with AdamW (lr 1e-3,
betas (0.9, 0.98), weight decay 1.0, batch 32) on the square loss, learns block-circulant
features: its Neural Feature Matrix W1ᵀW1 correlates with sqrt(AGOP) (> 0.92 in the paper).

Implements: :class:`QuadraticMLP` (PyTorch-default uniform init drawn from a given generator),
the closed-form AGOP (1/n) Σ_i J(x_i)ᵀJ(x_i) with J(x) = 2 W2 diag(W1 x) W1, the NFM, and
:func:`train_mlp`, which records test accuracy every epoch and the NFM–sqrt(AGOP) correlation and
AGOP alignment every ``measure_every`` epochs (the loop is the package's :func:`icml25.nn.train.fit`).
Left out: AGOP regularisation (App. H).

Notation: n samples, d = 2p inputs, k hidden width, c = p outputs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.validate import check_non_negative, check_positive
from icml25.nn.train import FitConfig, fit

from .agop import psd_matrix_power
from .measures import agop_alignment, pearson_correlation


class QuadraticMLP(nn.Module):
    """f(x) = W2 (W1 x)², no biases (Sec. 4).

    Args:
        in_dim: d (2p for e_a ⊕ e_b).
        width: hidden width k (paper 1024, official code default 256).
        out_dim: c (p).
        generator: torch generator for the init; each weight is U(−1/√fan_in, 1/√fan_in), the
            PyTorch ``nn.Linear`` default. None uses a fresh generator seeded with 0.
        dtype: parameter dtype.
    """

    def __init__(
        self,
        in_dim: int,
        width: int,
        out_dim: int,
        *,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        for name, v in (("in_dim", in_dim), ("width", width), ("out_dim", out_dim)):
            check_positive(name, v, integer=True)
        if generator is None:
            generator = torch.Generator().manual_seed(0)
        self.W1 = nn.Parameter(torch.empty(width, in_dim, dtype=dtype))  # (k, d)
        self.W2 = nn.Parameter(torch.empty(out_dim, width, dtype=dtype))  # (c, k)
        with torch.no_grad():
            for W in (self.W1, self.W2):
                bound = 1.0 / math.sqrt(W.shape[1])
                W.uniform_(-bound, bound, generator=generator)

    def forward(self, x: Tensor) -> Tensor:
        """(n, d) → (n, c)."""
        return (x @ self.W1.T).square() @ self.W2.T

    def nfm(self) -> np.ndarray:
        """Neural Feature Matrix W1ᵀW1, (d, d) float64."""
        W1 = self.W1.detach().double().cpu().numpy()
        return W1.T @ W1

    def agop(self, X: Tensor | np.ndarray, center: bool = False) -> np.ndarray:
        """Closed-form AGOP over the rows of X, (d, d) float64.

        ∇_x f_c = 2 W1ᵀ diag(W1 x) W2[c]ᵀ, so with h_i = W1 x_i

            G = (1/n) Σ_i J_iᵀ J_i = 4 W1ᵀ [ (HᵀH / n) ∘ (W2ᵀW2) ] W1,

        and centring subtracts the outer product of the mean Jacobian (4 W2 diag(h̄) W1).
        """
        W1 = self.W1.detach().double().cpu().numpy()
        W2 = self.W2.detach().double().cpu().numpy()
        Xn = X.detach().double().cpu().numpy() if isinstance(X, Tensor) else np.asarray(X, np.float64)
        if Xn.ndim != 2 or Xn.shape[1] != W1.shape[1]:
            raise ValueError(f"X must have shape (n, {W1.shape[1]}), got {Xn.shape}")
        H = Xn @ W1.T  # (n, k)
        W2tW2 = W2.T @ W2  # (k, k)
        S = (H.T @ H / Xn.shape[0]) * W2tW2
        G = 4.0 * W1.T @ S @ W1
        if center:
            h_bar = H.mean(axis=0)
            J_bar = 2.0 * (W2 * h_bar[None, :]) @ W1  # (c, d) mean Jacobian
            G -= J_bar.T @ J_bar
        return 0.5 * (G + G.T)


def nfm_agop_correlation(model: QuadraticMLP, X: Tensor | np.ndarray) -> float:
    """Pearson correlation of the entries of W1ᵀW1 and sqrt(AGOP) over X (Sec. 4)."""
    return pearson_correlation(model.nfm(), psd_matrix_power(model.agop(X), 0.5))


class LabelledSplit(Protocol):
    """Anything with a train and a test split of one-hot data (e.g. ``ModularDataset``)."""

    @property
    def X_train(self) -> np.ndarray: ...

    @property
    def Y_train(self) -> np.ndarray: ...

    @property
    def X_test(self) -> np.ndarray: ...

    @property
    def Y_test(self) -> np.ndarray: ...


@dataclass(frozen=True)
class MLPEpoch:
    """Metrics after one training epoch.

    Attributes:
        epoch: 1-based epoch number.
        train_loss: mean mini-batch MSE over the epoch.
        train_acc: accuracy on the full training set after the epoch.
        test_loss: MSE on the test set.
        test_acc: accuracy on the test set.
        nfm_agop_corr: Pearson correlation of NFM and sqrt(AGOP) (NaN on unmeasured epochs).
        agop_alignment: ρ(AGOP_epoch, AGOP_final), filled in after training (NaN if unmeasured).
    """

    epoch: int
    train_loss: float
    train_acc: float
    test_loss: float
    test_acc: float
    nfm_agop_corr: float = float("nan")
    agop_alignment: float = float("nan")


@dataclass(frozen=True, eq=False)
class MLPTrainResult:
    """Output of :func:`train_mlp`.

    Attributes:
        history: one :class:`MLPEpoch` per epoch.
        agops: AGOP (over training inputs) at each measured epoch, keyed by epoch.
        seconds: wall time of training.
    """

    history: tuple[MLPEpoch, ...]
    agops: dict[int, np.ndarray] = field(default_factory=dict)
    seconds: float = float("nan")

    @property
    def final(self) -> MLPEpoch:
        return self.history[-1]


def _square_loss_metrics(model: nn.Module, X: Tensor, Y: Tensor) -> tuple[float, float]:
    with torch.no_grad():
        out = model(X)
        loss = float(((out - Y) ** 2).mean())
        acc = float((out.argmax(1) == Y.argmax(1)).double().mean())
    return loss, acc


def train_mlp(
    model: QuadraticMLP,
    data: LabelledSplit,
    *,
    epochs: int = 1000,
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.98),
    weight_decay: float = 1.0,
    batch_size: int = 32,
    seed: int | torch.Generator = 0,
    measure_every: int = 50,
    callback: Callable[[MLPEpoch], None] | None = None,
) -> MLPTrainResult:
    """Train ``model`` with AdamW on the square loss (Sec. 4, App. D; official ``train_net.py``).

    Args:
        model: the network (trained in place).
        data: train/test split with one-hot inputs and targets.
        epochs: passes over the training set (official default 1000).
        lr: AdamW learning rate.
        betas: AdamW betas.
        weight_decay: AdamW (decoupled) weight decay.
        batch_size: mini-batch size.
        seed: int seed or ``torch.Generator`` for the batch order.
        measure_every: compute AGOP, NFM correlation every this many epochs (and at the last).
        callback: called with each epoch's record.

    Returns:
        :class:`MLPTrainResult`.
    """
    for name, v in (("epochs", epochs), ("batch_size", batch_size), ("measure_every", measure_every)):
        check_positive(name, v, integer=True)
    check_positive("lr", lr)
    check_non_negative("weight_decay", weight_decay)
    dtype = model.W1.dtype
    Xtr = torch.as_tensor(np.asarray(data.X_train), dtype=dtype)
    Ytr = torch.as_tensor(np.asarray(data.Y_train), dtype=dtype)
    Xte = torch.as_tensor(np.asarray(data.X_test), dtype=dtype)
    Yte = torch.as_tensor(np.asarray(data.Y_test), dtype=dtype)
    if Xtr.ndim != 2 or Xtr.shape[1] != model.W1.shape[1]:
        raise ValueError(f"data.X_train must have shape (n, {model.W1.shape[1]}), got {tuple(Xtr.shape)}")
    if Ytr.shape != (Xtr.shape[0], model.W2.shape[0]):
        raise ValueError(f"data.Y_train must have shape (n, {model.W2.shape[0]}), got {tuple(Ytr.shape)}")
    n = Xtr.shape[0]
    steps_per_epoch = math.ceil(n / batch_size)
    config = FitConfig(
        steps=epochs * steps_per_epoch,
        batch_size=batch_size,
        lr=lr,
        schedule="constant",
        betas=betas,
        weight_decay=weight_decay,  # both weights are matrices: all of them decay
        sampling="shuffle",  # a new permutation each epoch, the last partial batch kept
        eval_every=steps_per_epoch,
        monitor="test_acc",
        keep_best=False,
    )
    history: list[MLPEpoch] = []
    agops: dict[int, np.ndarray] = {}
    epoch_loss = [0.0, 0]  # loss-weighted sum and count of the current epoch

    def loss_fn(m: nn.Module, idx: Tensor, gen: torch.Generator) -> Tensor:
        loss = ((m(Xtr[idx]) - Ytr[idx]) ** 2).mean()
        epoch_loss[0] += float(loss.detach()) * len(idx)
        epoch_loss[1] += len(idx)
        return loss

    def evaluate(m: nn.Module) -> dict[str, float]:
        epoch = len(history) + 1
        _, train_acc = _square_loss_metrics(m, Xtr, Ytr)
        test_loss, test_acc = _square_loss_metrics(m, Xte, Yte)
        corr = float("nan")
        if epoch % measure_every == 0 or epoch == epochs:
            G = model.agop(Xtr)
            agops[epoch] = G
            corr = pearson_correlation(model.nfm(), psd_matrix_power(G, 0.5))
        rec = MLPEpoch(
            epoch, epoch_loss[0] / epoch_loss[1], train_acc, test_loss, test_acc, nfm_agop_corr=corr
        )
        epoch_loss[0], epoch_loss[1] = 0.0, 0
        history.append(rec)
        if callback is not None:
            callback(rec)
        return {"test_acc": test_acc}

    start = time.perf_counter()
    fit(model, loss_fn, n, config, seed=seed, evaluate=evaluate)
    seconds = time.perf_counter() - start
    G_final = agops[epochs]
    history = [
        replace(r, agop_alignment=agop_alignment(agops[r.epoch], G_final)) if r.epoch in agops else r
        for r in history
    ]
    return MLPTrainResult(history=tuple(history), agops=agops, seconds=seconds)
