"""One training loop for every model in the package: :func:`fit`.

``fit`` owns what every paper's training shares: seeded mini-batches drawn from a private
``torch.Generator``, the optimiser with matrix-only weight decay, the warm-up/cosine schedule of
:mod:`icml25.nn.optim`, gradient clipping, evaluation every k steps with keep-best (an in-memory
snapshot of the best state, restored at the end) and early stopping, a post-step hook (sparse
projections, EMA), progress through :data:`icml25.core.progress.ProgressFn`, and a frozen
:class:`FitHistory`. What a paper owns is its ``loss_fn(model, batch, generator) -> loss``:
augmentation noise and label dropout draw from the generator it is handed, so a run is a function
of its seed alone.

Distributed training. Under Hugging Face ``accelerate`` (``accelerate launch ...``, or an
``Accelerator`` passed in) the model and optimiser are prepared by the accelerator (DDP over
processes, device placement, mixed precision), every process draws the same *global* batch of
indices from the same seed and keeps its own contiguous share, the loss goes through
``accelerator.backward`` (gradients averaged across processes), clipping through
``accelerator.clip_grad_norm_``, and the recorded loss is the mean over processes. With equal shares
this is the single-process step on the global batch: for a loss without random draws the two runs
agree to rounding (tested in float64). Noise that ``loss_fn`` draws from its generator (dequantisation,
label dropout) is drawn by each process for its own share, so such runs match the single-process run
in distribution, not draw for draw. Evaluation runs on every process on the
unwrapped model (so keep-best decisions agree); only the main process should write anything
(:func:`icml25.nn.distributed.is_main_process`). ``loss_fn`` must call the model through its
``forward`` (``model(...)``), which is how DDP sees the call. Without ``accelerate`` installed or
launched, ``fit`` is plain single-process torch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import Tensor, nn

from icml25.core.progress import ProgressFn
from icml25.core.validate import check_fields, check_in_range
from icml25.nn.distributed import get_accelerator, unwrap
from icml25.nn.optim import OptimizerName, make_optimizer, param_groups, warmup_cosine

__all__ = ["FitConfig", "FitHistory", "EvalRecord", "BatchSampler", "fit", "snapshot_state"]

Sampling = Literal["shuffle", "shuffle_drop_last", "replacement", "full"]
Data = Sequence[Tensor] | Tensor | int
Batch = Any  # a tuple of tensors, or a tensor of indices when ``data`` is a size
LossFn = Callable[[nn.Module, Batch, torch.Generator], Tensor]
EvalFn = Callable[[nn.Module], Mapping[str, float]]


@dataclass(frozen=True)
class FitConfig:
    """How to train.

    Args:
        steps: optimiser steps.
        batch_size: global batch size (split across processes under ``accelerate``).
        lr: peak learning rate.
        schedule: ``"cosine"`` (warm-up then cosine, :func:`icml25.nn.optim.warmup_cosine`) or
            ``"constant"`` (``lr`` throughout, after the warm-up if any).
        warmup_steps: linear warm-up steps.
        min_lr: floor of the schedule (warm-up starts and the decay ends there).
        optimizer: ``"adamw"``, ``"adam"`` or ``"sgd"``.
        betas: Adam betas.
        weight_decay: decay of matrices (vectors never decay unless ``decay_vectors``).
        decay_vectors: decay every parameter.
        fused: fused Adam kernels (fewer launches on the CPU).
        grad_clip: clip the global gradient norm to this (0 = off).
        sampling: ``"shuffle"`` (a new permutation each epoch, last partial batch kept),
            ``"shuffle_drop_last"`` (a new permutation whenever fewer than ``batch_size`` remain),
            ``"replacement"`` (indices drawn uniformly with replacement) or ``"full"`` (the whole
            data set every step).
        eval_every: evaluate every this many steps (0 = never; the last step is always evaluated
            when an ``evaluate`` function is given and ``eval_every > 0``).
        monitor: the metric of ``evaluate`` that keep-best and early stopping watch.
        monitor_mode: ``"min"`` or ``"max"``.
        keep_best: restore the state with the best monitored value at the end.
        patience: stop after this many evaluations without improvement (0 = never).
        min_delta: an evaluation counts as an improvement for ``patience`` only when it beats the
            last counted one by more than this (absolute, in the monitored metric's units; as in
            PyTorch Lightning's ``EarlyStopping``), so a metric that creeps down by round-off
            forever still stops. ``keep_best`` keeps the strictly best state regardless. 0 = any
            improvement counts.
        stop_on_nonfinite: stop (before the update) when the loss is NaN or infinite.
    """

    steps: int
    batch_size: int
    lr: float
    schedule: Literal["cosine", "constant"] = "cosine"
    warmup_steps: int = 0
    min_lr: float = 0.0
    optimizer: OptimizerName = "adamw"
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.0
    decay_vectors: bool = False
    fused: bool = False
    grad_clip: float = 0.0
    sampling: Sampling = "shuffle"
    eval_every: int = 0
    monitor: str = "val_loss"
    monitor_mode: Literal["min", "max"] = "min"
    keep_best: bool = True
    patience: int = 0
    min_delta: float = 0.0
    stop_on_nonfinite: bool = True

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("steps", "batch_size"),
            positive=("lr",),
            non_negative_int=("warmup_steps", "eval_every", "patience"),
            non_negative=("min_lr", "weight_decay", "grad_clip", "min_delta"),
        )
        check_in_range("FitConfig.min_lr", self.min_lr, 0.0, self.lr)
        for b in self.betas:
            check_in_range("FitConfig.betas", b, 0.0, 1.0, high_open=True)
        for name, value, allowed in (
            ("schedule", self.schedule, ("cosine", "constant")),
            ("optimizer", self.optimizer, ("adamw", "adam", "sgd")),
            ("sampling", self.sampling, ("shuffle", "shuffle_drop_last", "replacement", "full")),
            ("monitor_mode", self.monitor_mode, ("min", "max")),
        ):
            if value not in allowed:
                raise ValueError(f"FitConfig.{name} must be one of {allowed}, got {value!r}")

    def lr_at(self, step: int) -> float:
        """Learning rate of 0-based ``step``."""
        if self.schedule == "constant":
            if step < self.warmup_steps:
                return self.min_lr + (self.lr - self.min_lr) * (step + 1) / self.warmup_steps
            return self.lr
        return warmup_cosine(
            step, total_steps=self.steps, warmup_steps=self.warmup_steps, peak=self.lr, floor=self.min_lr
        )


@dataclass(frozen=True)
class EvalRecord:
    """The metrics of one evaluation after optimiser step ``step`` (1-based)."""

    step: int
    metrics: Mapping[str, float]


@dataclass(frozen=True)
class FitHistory:
    """What :func:`fit` did.

    Attributes:
        steps: 1-based numbers of the steps taken.
        train_loss: the loss of each step (mean over processes).
        lr: the learning rate used at each step.
        evals: every evaluation, in order.
        best_step: the step whose state was kept (0: the initial state or no evaluation).
        best_value: its monitored value (NaN without evaluation).
        stopped_early: patience ran out.
        diverged: a non-finite loss stopped training.
        seconds: wall time of the loop.
    """

    steps: tuple[int, ...]
    train_loss: tuple[float, ...]
    lr: tuple[float, ...]
    evals: tuple[EvalRecord, ...] = ()
    best_step: int = 0
    best_value: float = float("nan")
    stopped_early: bool = False
    diverged: bool = False
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def metric(self, name: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """``(steps, values)`` of one evaluation metric."""
        pts = [(r.step, float(r.metrics[name])) for r in self.evals if name in r.metrics]
        return tuple(s for s, _ in pts), tuple(v for _, v in pts)


def _data_size(data: Data) -> int:
    if isinstance(data, int) and not isinstance(data, bool):
        if data < 1:
            raise ValueError(f"data: a data-set size must be >= 1, got {data}")
        return data
    if isinstance(data, bool):
        raise ValueError("data must be a tensor, a sequence of tensors or a data-set size (int)")
    tensors = [data] if isinstance(data, Tensor) else list(data)
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise ValueError("data must be a tensor, a sequence of tensors or a data-set size (int)")
    n = tensors[0].shape[0] if tensors[0].ndim else 0
    if n < 1:
        raise ValueError("data is empty")
    for t in tensors[1:]:
        if t.ndim == 0 or t.shape[0] != n:
            raise ValueError(f"data tensors must share their first dimension ({n}), got {tuple(t.shape)}")
    return n


class BatchSampler:
    """Seeded global batches of indices into ``n`` examples (see :attr:`FitConfig.sampling`)."""

    def __init__(self, n: int, batch_size: int, sampling: Sampling, generator: torch.Generator) -> None:
        self.n, self.batch_size, self.sampling, self.generator = n, batch_size, sampling, generator
        self._perm: Tensor | None = None
        self._pos = 0
        if sampling == "shuffle_drop_last":
            if batch_size > n:
                raise ValueError(
                    f"batch_size {batch_size} exceeds the {n} examples (sampling drops the rest)"
                )
            self._perm = torch.randperm(n, generator=generator)

    @property
    def steps_per_epoch(self) -> int:
        if self.sampling == "shuffle_drop_last":
            return self.n // self.batch_size
        return max(1, math.ceil(self.n / self.batch_size)) if self.sampling == "shuffle" else 1

    def next(self) -> Tensor:
        n, bs = self.n, self.batch_size
        if self.sampling == "full":
            return torch.arange(n)
        if self.sampling == "replacement":
            return torch.randint(n, (bs,), generator=self.generator)
        if self.sampling == "shuffle_drop_last":
            if self._perm is None or self._pos + bs > n:
                self._perm, self._pos = torch.randperm(n, generator=self.generator), 0
        elif self._perm is None or self._pos >= n:
            self._perm, self._pos = torch.randperm(n, generator=self.generator), 0
        idx = self._perm[self._pos : self._pos + bs]
        self._pos += bs
        return idx


def snapshot_state(model: nn.Module, *, skip_frozen: bool = False) -> dict[str, Tensor]:
    """A detached copy of ``model``'s state dict (the keep-best snapshot).

    ``skip_frozen`` leaves out parameters with ``requires_grad=False`` (a frozen pretrained body under
    an adapter: the optimiser never changes them, and copying them at every improvement is most of the
    cost); buffers are always copied (running statistics change in training). Restore such a partial
    snapshot with ``load_state_dict(state, strict=False)``.
    """
    state = unwrap(model).state_dict(keep_vars=True)
    return {
        k: v.detach().clone()
        for k, v in state.items()
        if not (skip_frozen and isinstance(v, nn.Parameter) and not v.requires_grad)
    }


def _is_better(value: float, best: float, mode: str) -> bool:
    if not math.isfinite(value):
        return False
    if not math.isfinite(best):
        return True
    return value < best if mode == "min" else value > best


def fit(
    model: nn.Module,
    loss_fn: LossFn,
    data: Data,
    config: FitConfig,
    *,
    seed: int | torch.Generator = 0,
    evaluate: EvalFn | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    post_step: Callable[[nn.Module, int], None] | None = None,
    on_eval: Callable[[EvalRecord], None] | None = None,
    progress: ProgressFn | None = None,
    accelerator: Any | None = None,
) -> FitHistory:
    """Train ``model`` in place and return its :class:`FitHistory`.

    Args:
        model: the module to train (left in eval mode, with the best state if ``keep_best``).
        loss_fn: ``loss_fn(model, batch, generator) -> scalar loss``; ``batch`` is the tuple of
            ``data`` tensors indexed by this step's indices (a single tensor if ``data`` is one),
            or the index tensor itself if ``data`` is a size. Draw any randomness from
            ``generator`` (the same one that draws the batches).
        data: tensors sharing their first dimension, or the number of examples.
        config: a :class:`FitConfig`.
        seed: seed of the private generator, or a generator to use.
        evaluate: ``evaluate(model) -> {metric: value}``, called every ``config.eval_every`` steps
            and after the last, in eval mode under ``torch.no_grad``.
        optimizer: a ready optimiser to use instead of the one ``config`` describes (its learning
            rate still follows ``config``'s schedule).
        post_step: ``post_step(model, step)`` after each optimiser step (unwrapped model).
        on_eval: called with each :class:`EvalRecord`.
        progress: ``progress(step, total)`` after each step.
        accelerator: an ``accelerate.Accelerator``; default: one when the process was started by
            ``accelerate launch`` with more than one process (:func:`icml25.nn.distributed.get_accelerator`).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(config, FitConfig):
        raise TypeError(f"config must be a FitConfig, got {type(config).__name__}")
    n = _data_size(data)
    tensors: list[Tensor] | None = None
    if isinstance(data, Tensor):
        tensors = [data]
    elif not isinstance(data, int):
        tensors = list(data)
    gen = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(int(seed))
    sampler = BatchSampler(n, config.batch_size, config.sampling, gen)

    if optimizer is None:
        groups = param_groups(model, config.weight_decay, decay_vectors=config.decay_vectors)
        optimizer = make_optimizer(
            groups, config.optimizer, lr=config.lr, betas=config.betas, fused=config.fused
        )
    accelerator = accelerator if accelerator is not None else get_accelerator()
    rank, world = 0, 1
    base = model
    if accelerator is not None:
        model, optimizer = accelerator.prepare(model, optimizer)
        rank, world = accelerator.process_index, accelerator.num_processes
    device = next(base.parameters()).device

    def local(idx: Tensor) -> Tensor:
        return idx.tensor_split(world)[rank] if world > 1 else idx

    steps: list[int] = []
    losses: list[float] = []
    lrs: list[float] = []
    evals: list[EvalRecord] = []
    best_value, best_step = float("nan"), 0
    patience_ref = float("nan")  # the last value that counted as an improvement for patience
    best_state: dict[str, Tensor] | None = None
    bad_evals, stopped_early, diverged = 0, False, False
    start = time.perf_counter()
    for step in range(config.steps):
        model.train()
        idx = local(sampler.next())
        if tensors is None:
            batch: Batch = idx
        else:
            parts = tuple(t[idx].to(device) for t in tensors)
            batch = parts[0] if isinstance(data, Tensor) else parts
        lr = config.lr_at(step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if accelerator is not None:
            with accelerator.autocast():
                loss = loss_fn(model, batch, gen)
        else:
            loss = loss_fn(model, batch, gen)
        if not isinstance(loss, Tensor) or loss.ndim != 0:
            raise ValueError("loss_fn must return a scalar tensor")
        loss_value = float(
            loss.detach() if accelerator is None else accelerator.reduce(loss.detach(), "mean")
        )
        if config.stop_on_nonfinite and not math.isfinite(loss_value):
            diverged = True
            break
        optimizer.zero_grad(set_to_none=True)
        if accelerator is not None:
            accelerator.backward(loss)
            if config.grad_clip > 0:
                accelerator.clip_grad_norm_(model.parameters(), config.grad_clip)
        else:
            loss.backward()
            if config.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        if post_step is not None:
            post_step(base, step + 1)
        steps.append(step + 1)
        losses.append(loss_value)
        lrs.append(lr)
        if progress is not None:
            progress(step + 1, config.steps)
        last = step + 1 == config.steps
        if evaluate is not None and config.eval_every > 0 and ((step + 1) % config.eval_every == 0 or last):
            base.eval()
            with torch.no_grad():
                metrics = {k: float(v) for k, v in evaluate(base).items()}
            record = EvalRecord(step + 1, metrics)
            evals.append(record)
            if on_eval is not None:
                on_eval(record)
            if config.monitor not in metrics:
                raise KeyError(f"evaluate() returned {sorted(metrics)}; FitConfig.monitor={config.monitor!r}")
            value = metrics[config.monitor]
            if _is_better(value, best_value, config.monitor_mode):
                best_value, best_step = value, step + 1
                if config.keep_best:
                    best_state = snapshot_state(base, skip_frozen=True)
            shifted = (
                patience_ref - config.min_delta
                if config.monitor_mode == "min"
                else patience_ref + config.min_delta
            )
            if _is_better(value, shifted, config.monitor_mode):
                patience_ref, bad_evals = value, 0
            else:
                bad_evals += 1
                if config.patience and bad_evals >= config.patience:
                    stopped_early = True
                    break
    if config.keep_best and best_state is not None:
        restored = base.load_state_dict(best_state, strict=False)  # frozen parameters were not copied
        if restored.unexpected_keys:  # pragma: no cover - the snapshot came from this module
            raise RuntimeError(f"keep_best snapshot has unknown entries {restored.unexpected_keys}")
    base.eval()
    return FitHistory(
        steps=tuple(steps),
        train_loss=tuple(losses),
        lr=tuple(lrs),
        evals=tuple(evals),
        best_step=best_step,
        best_value=best_value,
        stopped_early=stopped_early,
        diverged=diverged,
        seconds=time.perf_counter() - start,
    )
