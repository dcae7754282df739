"""Training and evaluation of next-step PDE surrogates.

*PDE-Transformer: Efficient and Versatile Transformers for Physics Simulations* (Holzschuh et al.,
ICML 2025, https://arxiv.org/abs/2505.24717). Implements the paper's metric
nRMSE = sqrt(mean((pred - y)^2) / mean(y^2)) per sample and step (reference ``metric/mse.py``),
autoregressive rollout, and supervised next-step training with MSE on the real (unpadded) channels,
AdamW with linear warm-up and cosine decay, and class-label dropout (the label is replaced by the
null label with probability ``label_dropout``).

Choices made here (ours): gradient-norm clipping at 1.0 stands in for the paper's adaptive EMA
gradient clipping (its Algorithm 1, ``EmaGradClip`` in the reference code); no EMA of weights; no
gradient accumulation or mixed precision; nRMSE is computed on physical (de-normalised) fields over
the family's real channels. The loop is the package's :func:`icml25.nn.train.fit`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from icml25.core.progress import ProgressFn
from icml25.core.validate import check_fields
from icml25.nn.train import FitConfig, fit

from .data import MultiPDEData

__all__ = [
    "nrmse",
    "rollout",
    "TrainConfig",
    "TrainResult",
    "train_next_step",
    "evaluate",
    "train_flops_per_sample",
    "ResidualSurrogate",
    "CopyInput",
    "FittedDamping",
]

Surrogate = Callable[[Tensor, Tensor], Tensor]  # (x [B, C, H, W], labels [B]) -> next state


class ResidualSurrogate(nn.Module):
    """``x + net(x, labels)``: the network predicts the change of the state (our budget choice).

    The reference code trains the network to output the next state itself (``residual=False`` in the
    check's config); with a zero-initialised output head this wrapper starts at copying the input.
    """

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: Tensor, labels: Tensor | None = None) -> Tensor:
        return x + self.net(x, labels)


class CopyInput(nn.Module):
    """Reference: the next state is the current one (what a surrogate that learned nothing scores)."""

    def forward(self, x: Tensor, labels: Tensor | None = None) -> Tensor:
        return x.clone()


class FittedDamping(nn.Module):
    """Reference: ``a_f * x`` with one factor per family, least squares on the train pairs.

    ``a_f = <x, y> / <x, x>`` over every (normalised) train pair of family ``f``: the best the model
    class "scale the input" can do, a floor for a surrogate that learned no spatial structure.
    """

    factor: Tensor

    def __init__(self, data: MultiPDEData) -> None:
        super().__init__()
        x, y = data.train[:, :, :-1], data.train[:, :, 1:]
        dims = tuple(range(1, x.dim()))
        num, den = (x * y).sum(dim=dims), (x * x).sum(dim=dims)
        if bool((den == 0).any()):
            raise ValueError("FittedDamping: a family's train inputs are all zero")
        self.register_buffer("factor", num / den)

    def forward(self, x: Tensor, labels: Tensor | None = None) -> Tensor:
        if labels is None:
            raise ValueError("FittedDamping needs the family labels")
        return self.factor[labels].to(x.dtype)[:, None, None, None] * x


def nrmse(pred: Tensor, target: Tensor, channel_mask: Tensor | None = None) -> Tensor:
    """Per-sample normalised RMSE over ``[..., C, H, W]`` (channels with mask False are ignored).

    Returns a tensor of the leading shape ``[...]``.
    """
    if pred.shape != target.shape:
        raise ValueError(f"pred and target shapes differ: {tuple(pred.shape)} vs {tuple(target.shape)}")
    if channel_mask is not None:
        pred, target = pred[..., channel_mask, :, :], target[..., channel_mask, :, :]
    energy = target.pow(2).mean(dim=(-3, -2, -1))
    if target.device.type != "meta" and bool((energy == 0).any()):
        raise ValueError("nrmse: target is all zero in some sample, so the normalised error is undefined")
    err = (pred - target).pow(2).mean(dim=(-3, -2, -1))
    return torch.sqrt(err / energy.clamp_min(1e-12))


@torch.no_grad()
def rollout(
    model: Surrogate, x0: Tensor, steps: int, labels: Tensor, channel_mask: Tensor | None = None
) -> Tensor:
    """Autoregressive rollout: ``[B, C, H, W] -> [B, steps, C, H, W]`` (x_1 ... x_steps).

    ``channel_mask`` (``[B, C]`` or ``[C]`` bool) zeroes padded channels after every step.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    out, x = [], x0
    keep = None if channel_mask is None else channel_mask.to(x0.dtype).reshape(-1, x0.shape[1], 1, 1)
    for _ in range(steps):
        x = model(x, labels)
        if keep is not None:
            x = x * keep
        out.append(x)
    return torch.stack(out, dim=1)


@dataclass(frozen=True)
class TrainConfig:
    """Next-step training settings (AdamW, linear warm-up then cosine decay to 0, clipping)."""

    steps: int = 400
    batch_size: int = 8
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup: int = 20
    label_dropout: float = 0.1
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("steps", "batch_size"),
            positive=("lr",),
            non_negative_int=("warmup",),
            non_negative=("weight_decay", "grad_clip"),
            probability=("label_dropout",),
        )

    def fit_config(self) -> FitConfig:
        """The :class:`icml25.nn.train.FitConfig` of this recipe (batches drawn with replacement)."""
        return FitConfig(
            steps=self.steps,
            batch_size=self.batch_size,
            lr=self.lr,
            warmup_steps=self.warmup,
            weight_decay=self.weight_decay,
            decay_vectors=True,
            grad_clip=self.grad_clip,
            sampling="replacement",
        )


@dataclass(frozen=True)
class TrainResult:
    losses: tuple[float, ...]
    seconds: float


def train_next_step(
    model: nn.Module,
    data: MultiPDEData,
    cfg: TrainConfig,
    *,
    seed: int,
    progress: ProgressFn | None = None,
) -> TrainResult:
    """Train ``model(x, labels)`` to map frame t to frame t+1 on every train pair of ``data``.

    Batches are drawn uniformly with replacement by :func:`icml25.nn.train.fit` from a generator
    seeded by ``seed`` (so every model trained with the same seed sees the same batches); the label
    is replaced by the null label with probability ``label_dropout`` (drawn from the same generator).
    The loss is the MSE over the family's real channels (padded channels are masked out).
    """
    x_all, y_all, lab_all = data.train_pairs()
    mask_all = data.channel_mask[lab_all].float()[:, :, None, None]
    null = len(data.families)
    grid = x_all.shape[-1] * x_all.shape[-2]

    def loss_fn(m: nn.Module, batch: tuple[Tensor, ...], gen: torch.Generator) -> Tensor:
        x, y, labels, mask = batch
        drop = (torch.rand(len(labels), generator=gen) < cfg.label_dropout).to(labels.device)
        labels = torch.where(drop, torch.full_like(labels, null), labels)
        pred = m(x, labels) * mask
        return ((pred - y) ** 2 * mask).sum() / (mask.sum() * grid)

    history = fit(
        model, loss_fn, (x_all, y_all, lab_all, mask_all), cfg.fit_config(), seed=seed, progress=progress
    )
    return TrainResult(losses=history.train_loss, seconds=history.seconds)


@torch.no_grad()
def evaluate(
    model: Surrogate,
    data: MultiPDEData,
    *,
    rollout_steps: int = 10,
    batch_size: int = 32,
    with_rollout: bool = True,
    items: bool = False,
) -> dict[str, Tensor]:
    """nRMSE on the test split, per family.

    Returns ``{"nrmse1": [F], "curve": [F, rollout_steps]}``: the mean one-step error over every test
    frame pair, and the mean error after k = 1..rollout_steps autoregressive steps over rollouts
    started at frames 0, rollout_steps, 2 * rollout_steps, ... (as many as the trajectories allow).
    ``with_rollout=False`` skips the rollouts (two thirds of the cost) and returns ``nrmse1`` only.
    With ``items=True`` it also returns the per-item scores the paired criteria use:
    ``"nrmse1_items"`` ``[F, N]`` (each test trajectory's mean one-step error) and
    ``"rollout_items"`` ``[F, S * N]`` (the error after ``rollout_steps`` steps of each rollout, start
    by start, trajectories in order).
    """
    Fm, N, T = data.test.shape[:3]
    if rollout_steps >= T:
        raise ValueError(f"test trajectories have {T} frames; a {rollout_steps}-step rollout needs more")
    one, curves, one_items, roll_items = [], [], [], []
    for f in range(Fm):
        traj = data.test[f]  # [N, T, C, H, W]
        cm = data.channel_mask[f]
        x, y = traj[:, :-1].reshape(-1, *traj.shape[2:]), traj[:, 1:].reshape(-1, *traj.shape[2:])
        errs = []
        for i in range(0, len(x), batch_size):
            lab = torch.full((len(x[i : i + batch_size]),), f, dtype=torch.long)
            pred = model(x[i : i + batch_size], lab)
            errs.append(nrmse(data.denormalize(pred, f), data.denormalize(y[i : i + batch_size], f), cm))
        one.append(torch.cat(errs).mean())
        one_items.append(torch.cat(errs).reshape(N, T - 1).mean(dim=1))
        if not with_rollout:
            continue
        starts = list(range(0, T - rollout_steps, rollout_steps))
        x0 = torch.cat([traj[:, s] for s in starts])
        truth = torch.cat([traj[:, s + 1 : s + 1 + rollout_steps] for s in starts])
        lab = torch.full((len(x0),), f, dtype=torch.long)
        pred = rollout(model, x0, rollout_steps, lab, cm.expand(len(x0), -1))
        per_rollout = nrmse(data.denormalize(pred, f), data.denormalize(truth, f), cm)  # [S * N, k]
        curves.append(per_rollout.mean(dim=0))
        roll_items.append(per_rollout[:, -1])
    out = {"nrmse1": torch.stack(one)}
    if with_rollout:
        out["curve"] = torch.stack(curves)
    if items:
        out["nrmse1_items"] = torch.stack(one_items)
        if with_rollout:
            out["rollout_items"] = torch.stack(roll_items)
    return out


def train_flops_per_sample(model: nn.Module, in_channels: int, res: int) -> float:
    """Floating-point operations of one training step's forward and backward pass, per sample.

    Counted by :class:`torch.utils.flop_counter.FlopCounterMode` on one ``[1, in_channels, res, res]``
    input (label 0, loss = mean square of the output) with attention forced onto PyTorch's math
    kernel, so that its matrix products are counted (the fused CPU attention kernel is invisible to
    the counter). Matrix products and convolutions only: element-wise work and the optimiser step are
    not counted (the same for every model). Gradients the call leaves on ``model`` are cleared.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    if res < 1 or in_channels < 1:
        raise ValueError(f"res and in_channels must be >= 1, got {res} and {in_channels}")
    param = next(model.parameters())
    x = torch.zeros(1, in_channels, res, res, device=param.device, dtype=param.dtype)
    labels = torch.zeros(1, dtype=torch.long, device=param.device)
    was_training = model.training
    model.train()
    try:
        with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
            model(x, labels).pow(2).mean().backward()
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    return float(counter.get_total_flops())
