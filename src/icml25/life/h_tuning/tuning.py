"""H-Tuning's hybrid update, its baselines (back-propagation, MeZO) and knowledge distillation.

Zhou, Zhang, Dong, *H-Tuning*, ICML 2025, Sec. 3.2 (hybrid gradient) and Sec. 3.3 (distillation);
official ``Half_Trainer.py`` (``ho_step``) and ``pipeline_ecg.py`` (``kd_student_learning_ho``).

One H-Tuning step on a batch (x, y) of size B (:class:`HybridTuner`):

1. Zeroth-order estimate on the full batch (SPSA, Spall 1992; MeZO, Malladi et al. 2023): draw a seed,
   regenerate z ~ N(0, I) from it whenever needed (never stored), evaluate ℓ₊ = ℓ(θ + εz) and
   ℓ₋ = ℓ(θ − εz) without storing activations, and set ĝ = (ℓ₊ − ℓ₋)/(2ε), g_zo = ĝ z. In the
   second pass the classifier head runs with gradients on the detached features, so the head gets
   an exact full-batch gradient g_head. θ is then restored.
2. Back-propagation on the first ``bp_batch`` samples only (BatchNorm frozen) gives g_bp.
3. Per backbone tensor:  g = c g_bp + (1 − c) ‖g_bp‖ g_zo / (‖g_zo‖ + 1e-6)  (norm matching);
   the head uses g_head.
4. AdamW step with linear warm-up (1% of the steps) and linear decay to 0.

Only the ``bp_batch`` sub-batch and the head keep activations for backward, so activation memory
scales with ``bp_batch``, not B. :class:`BPTuner` (full fine-tuning or LoRA with back-propagation)
and :class:`MeZOTuner` (zeroth-order only, every trainable tensor including the head) share the
interface ``step(x, y) -> loss``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_finite_tensor, check_in_range, check_positive

from .data import cutmix_time
from .model import merged_lora, unwrap_model

__all__ = [
    "HTuningConfig",
    "HybridTuner",
    "MeZOTuner",
    "BPTuner",
    "Tuner",
    "perturb_",
    "spsa_projected_gradient",
    "mix_gradients",
    "linear_warmup_decay",
    "make_adamw",
    "FineTuneResult",
    "fine_tune",
    "late_gain",
    "distillation_loss",
    "predict_proba",
]


@dataclass(frozen=True)
class HTuningConfig:
    """H-Tuning hyper-parameters (official defaults; the paper grid-searches ε and c on validation).

    Args:
        zo_eps: SPSA perturbation scale ε (official grid {1e-3, 1e-4}).
        coef: weight c of the back-propagated gradient (official grid {0.85, 0.9, 0.95, 0.99}).
        bp_batch: samples used for back-propagation (official default 4, experiments 2).
        grad_correct: mix in the zeroth-order estimate (False: backbone uses g_bp only).
    """

    zo_eps: float = 1e-3
    coef: float = 0.9
    bp_batch: int = 4
    grad_correct: bool = True

    def __post_init__(self) -> None:
        check_fields(self, positive=("zo_eps",), positive_int=("bp_batch",), unit_interval=("coef",))


def _bce(logits: Tensor, y: Tensor) -> Tensor:
    return F.binary_cross_entropy_with_logits(logits, y)


def _check_batch(x: object, y: object, model: nn.Module) -> None:
    unwrap_model(model).check_input(x)  # a finite float (b, leads, length) tensor: x is scanned once
    check_finite_tensor("y", y, ndim=2, floating=True)
    assert isinstance(x, Tensor) and isinstance(y, Tensor)
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same batch size, got {x.shape[0]} and {y.shape[0]}")


@torch.no_grad()
def perturb_(params: Sequence[Tensor], seed: int, scale: float) -> None:
    """θ ← θ + scale · z in place, z ~ N(0, I) drawn tensor by tensor from ``torch.Generator(seed)``.

    Calling it again with the same seed regenerates the same z, so z is never stored (MeZO's trick).
    """
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    for p in params:
        z = torch.randn(p.shape, generator=gen, dtype=p.dtype)
        p.add_(z.to(p.device), alpha=scale)


def _regenerate(params: Sequence[Tensor], seed: int) -> Iterator[Tensor]:
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    for p in params:
        yield torch.randn(p.shape, generator=gen, dtype=p.dtype).to(p.device)


def spsa_projected_gradient(
    loss_fn: Callable[[], float], params: Sequence[Tensor], seed: int, eps: float
) -> float:
    """Two-sided SPSA: (ℓ(θ + εz) − ℓ(θ − εz)) / (2ε); ``params`` are restored afterwards."""
    check_positive("eps", eps)
    perturb_(params, seed, eps)
    plus = float(loss_fn())
    perturb_(params, seed, -2 * eps)
    minus = float(loss_fn())
    perturb_(params, seed, eps)
    return (plus - minus) / (2 * eps)


def mix_gradients(g_bp: Tensor, g_zo: Tensor, coef: float) -> Tensor:
    """H-Tuning's per-tensor mix: c g_bp + (1 − c) ‖g_bp‖ g_zo / (‖g_zo‖ + 1e-6)."""
    check_in_range("coef", coef, 0.0, 1.0)
    if g_bp.shape != g_zo.shape:
        raise ValueError(
            f"g_bp and g_zo must have the same shape, got {tuple(g_bp.shape)}, {tuple(g_zo.shape)}"
        )
    return coef * g_bp + (1 - coef) * g_bp.norm() * g_zo / (g_zo.norm() + 1e-6)


def linear_warmup_decay(optimizer: torch.optim.Optimizer, total_steps: int, warmup_frac: float = 0.01):
    """Linear warm-up over ``warmup_frac`` of the steps, then linear decay to 0 (official schedule)."""
    check_positive("total_steps", total_steps, integer=True)
    warm = max(1, int(math.ceil(warmup_frac * total_steps)))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total_steps - step) / max(1, total_steps - warm))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def make_adamw(model: nn.Module, lr: float, weight_decay: float = 0.01) -> torch.optim.AdamW:
    """AdamW over the trainable parameters (official: weight decay 0.01).

    ``foreach=True``: the multi-tensor update, the same numbers bit for bit as the per-tensor loop
    torch picks by default on the CPU (tested), with one call per operation instead of one per
    parameter tensor (a LoRA model has about a hundred)."""
    check_positive("lr", lr)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=True)


def _split_params(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """Trainable (backbone, head) parameters; the head is ``ECGNet.head``."""
    head_ids = {id(p) for p in unwrap_model(model).head.parameters()}
    trainable = [p for p in model.parameters() if p.requires_grad]
    return [p for p in trainable if id(p) not in head_ids], [p for p in trainable if id(p) in head_ids]


def _module_groups(model: nn.Module) -> tuple[list[nn.Module], list[nn.Module]]:
    """(normalisation modules, every other module) of ``model``, listed once per tuner."""
    norms: list[nn.Module] = []
    others: list[nn.Module] = []
    for m in model.modules():
        is_norm = isinstance(m, nn.modules.batchnorm._BatchNorm | nn.LayerNorm | nn.GroupNorm)
        (norms if is_norm else others).append(m)
    return norms, others


def _set_modes(
    groups: tuple[list[nn.Module], list[nn.Module]], *, norm_train: bool, other_train: bool
) -> None:
    norms, others = groups
    for m in norms:
        m.training = norm_train
    for m in others:
        m.training = other_train


class Tuner:
    """One optimizer step per :meth:`step` call; owns the optimizer and schedule."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler=None) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler

    def _finish(self) -> None:
        self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()

    def step(self, x: Tensor, y: Tensor, soft: Tensor | None = None) -> float:
        raise NotImplementedError


class BPTuner(Tuner):
    """Plain back-propagation on the full batch (full fine-tuning, LoRA-BP, the KD student).

    ``soft`` (teacher probabilities) adds the distillation term BCE(s, sigmoid(t)) (Sec. 3.3).
    """

    def step(self, x: Tensor, y: Tensor, soft: Tensor | None = None) -> float:
        _check_batch(x, y, self.model)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.model(x)
        loss = _bce(logits, y) if soft is None else distillation_loss(logits, y, soft)
        loss.backward()
        self._finish()
        return float(loss.detach())


class MeZOTuner(Tuner):
    """Zeroth-order only (MeZO): every trainable tensor, head included, gets g = ĝ z.

    The estimate is handed to the same optimizer as the other arms (AdamW here).
    """

    def __init__(self, model, optimizer, scheduler=None, *, zo_eps: float = 1e-3, seed: int = 0) -> None:
        super().__init__(model, optimizer, scheduler)
        check_positive("zo_eps", zo_eps)
        self.zo_eps = zo_eps
        self._gen = torch.Generator().manual_seed(int(seed))
        self._groups = _module_groups(model)

    def step(self, x: Tensor, y: Tensor, soft: Tensor | None = None) -> float:
        _check_batch(x, y, self.model)
        params = [p for p in self.model.parameters() if p.requires_grad]
        seed = int(torch.randint(2**31 - 1, (1,), generator=self._gen))
        _set_modes(self._groups, norm_train=True, other_train=False)

        def loss() -> float:  # LoRA merged into the weights: the same function, one conv per layer
            with merged_lora(self.model):
                return float(_bce(self.model(x), y))

        with torch.no_grad():
            proj = spsa_projected_gradient(loss, params, seed, self.zo_eps)
        for p, z in zip(params, _regenerate(params, seed), strict=True):
            p.grad = proj * z
        self._finish()
        return float("nan")


class HybridTuner(Tuner):
    """H-Tuning (Sec. 3.2; official ``HalfTrainer.ho_step``): SPSA on the full batch for the backbone,
    exact full-batch gradient for the head, back-propagation on ``bp_batch`` samples, norm-matched mix."""

    def __init__(self, model, optimizer, scheduler=None, cfg: HTuningConfig | None = None, *, seed: int = 0):
        super().__init__(model, optimizer, scheduler)
        self.cfg = cfg or HTuningConfig()
        if not isinstance(self.cfg, HTuningConfig):
            raise TypeError(f"cfg must be an HTuningConfig, got {type(self.cfg).__name__}")
        self._gen = torch.Generator().manual_seed(int(seed))
        self.backbone, self.head_params = _split_params(model)
        self.last_proj_grad = 0.0
        self._groups = _module_groups(model)

    def step(self, x: Tensor, y: Tensor, soft: Tensor | None = None) -> float:
        _check_batch(x, y, self.model)
        cfg = self.cfg
        net = unwrap_model(self.model)
        seed = int(torch.randint(2**31 - 1, (1,), generator=self._gen))
        self.optimizer.zero_grad(set_to_none=True)
        # 1. ZO passes: norms in train mode, everything else in eval mode (official ``ho_step``);
        # without gradients the LoRA updates are merged into the weights (the same function)
        _set_modes(self._groups, norm_train=True, other_train=False)
        perturb_(self.backbone, seed, cfg.zo_eps)
        with torch.no_grad(), merged_lora(self.model):
            loss_plus = float(_bce(net(x), y))
        perturb_(self.backbone, seed, -2 * cfg.zo_eps)
        with torch.no_grad(), merged_lora(self.model):
            feats = net.features(x)
        loss_minus_t = _bce(net.head(feats.detach()), y)  # exact full-batch head gradient
        loss_minus_t.backward()
        g_head = [
            p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p) for p in self.head_params
        ]
        perturb_(self.backbone, seed, cfg.zo_eps)  # restore θ
        loss_minus = float(loss_minus_t.detach())
        proj = (loss_plus - loss_minus) / (2 * cfg.zo_eps)
        self.last_proj_grad = proj
        # 2. back-propagation on the first bp_batch samples, BatchNorm frozen
        self.optimizer.zero_grad(set_to_none=True)
        _set_modes(self._groups, norm_train=False, other_train=True)
        b = min(cfg.bp_batch, x.shape[0])
        loss_bp = _bce(self.model(x[:b]), y[:b])
        loss_bp.backward()
        # 3. per-tensor mix for the backbone; the head keeps its exact full-batch gradient
        if cfg.grad_correct:
            for p, z in zip(self.backbone, _regenerate(self.backbone, seed), strict=True):
                g_bp = p.grad if p.grad is not None else torch.zeros_like(p)
                p.grad = mix_gradients(g_bp, proj * z, cfg.coef)
        for p, g in zip(self.head_params, g_head, strict=True):
            p.grad = g
        self._finish()
        self.model.train()
        return 0.5 * (loss_plus + loss_minus)


def distillation_loss(student_logits: Tensor, y: Tensor, teacher_prob: Tensor) -> Tensor:
    """BCE(s, y) + BCE(s, sigmoid(t)) with temperature 1 and equal weights (official KD loss)."""
    return _bce(student_logits, y) + _bce(student_logits, teacher_prob)


def predict_proba(model: nn.Module, x: np.ndarray | Tensor, batch_size: int = 256) -> np.ndarray:
    """Sigmoid probabilities ``(n, C)`` in eval mode, in batches (LoRA updates merged for the
    duration: :func:`icml25.life.h_tuning.model.merged_lora`)."""
    check_positive("batch_size", batch_size, integer=True)
    xt = torch.as_tensor(x)
    check_finite_tensor("x", xt, ndim=3, floating=True)
    was = model.training
    model.eval()
    try:
        with merged_lora(model), torch.inference_mode():
            out = [torch.sigmoid(model(xt[i : i + batch_size])) for i in range(0, len(xt), batch_size)]
    finally:
        model.train(was)
    return torch.cat(out).numpy()


@dataclass(frozen=True)
class FineTuneResult:
    """What :func:`fine_tune` measured: the best validation score, when, and the losses
    (one per step run, so ``steps_run`` is below the budget when early stopping ended the run)."""

    best_val: float
    best_step: int
    losses: tuple[float, ...]
    val_curve: tuple[tuple[int, float], ...]
    seconds: float

    @property
    def steps_run(self) -> int:
        """Tuner steps taken (the budget, or fewer when early stopping ended the run)."""
        return len(self.losses)


def late_gain(val_curve: Sequence[tuple[int, float]], budget: int, frac: float = 0.75) -> float:
    """How much the best validation score of a run rose after the first ``frac`` of its step
    ``budget``: ``max(curve) - max(score at step <= frac * budget)`` (0 when the run stopped, or
    peaked, within that fraction). A run still improving at the end of its budget has not converged.

    Raises:
        ValueError: an empty curve, or no evaluation within the first ``frac`` of the budget.
    """
    check_positive("budget", budget, integer=True)
    check_in_range("frac", frac, 0.0, 1.0)
    if not val_curve:
        raise ValueError("val_curve must hold at least one (step, score) evaluation")
    early = [s for step, s in val_curve if step <= frac * budget]
    if not early:
        raise ValueError(
            f"no evaluation within the first {frac:g} of the budget ({budget} steps): evaluate more often"
        )
    early = [s for s in early if math.isfinite(s)]
    scores = [s for _, s in val_curve if math.isfinite(s)]
    return max(scores) - max(early) if early else float("nan")  # NaN: the gate cannot be evaluated


def fine_tune(
    tuner: Tuner,
    x: np.ndarray,
    y: np.ndarray,
    *,
    steps: int,
    batch_size: int,
    seed: int = 0,
    val_score: Callable[[nn.Module], float] | None = None,
    eval_every: int = 10,
    cutmix: bool = True,
    teacher: nn.Module | None = None,
    progress: Callable[[int, int], None] | None = None,
    patience: int | None = None,
) -> FineTuneResult:
    """Run up to ``steps`` tuner steps on shuffled batches (with time-axis CutMix) and keep the
    parameters with the best ``val_score`` (higher is better; evaluated every ``eval_every`` steps and
    at the end). With ``patience``, stop once that many evaluations in a row have not raised the best
    score (the official ``EarlyStopping``: patience 10 evaluations, ``delta = 0``, the best checkpoint
    reloaded). ``teacher`` adds distillation targets."""
    import time

    check_positive("steps", steps, integer=True)
    check_positive("batch_size", batch_size, integer=True)
    check_positive("eval_every", eval_every, integer=True)
    if patience is not None:
        check_positive("patience", patience, integer=True)
        if val_score is None:
            raise ValueError("patience needs val_score: early stopping watches the validation score")
    if len(x) == 0 or len(x) != len(y):
        raise ValueError(f"x and y must be non-empty with the same length, got {len(x)} and {len(y)}")
    rng = np.random.default_rng(seed)
    model = tuner.model
    start = time.perf_counter()
    losses: list[float] = []
    curve: list[tuple[int, float]] = []
    best = (-math.inf, 0)
    best_state: dict[str, Tensor] | None = None
    stale = 0  # evaluations in a row without a new best
    order = rng.permutation(len(x))
    pos = 0
    for step in range(1, steps + 1):
        if pos + batch_size > len(order):
            order, pos = rng.permutation(len(x)), 0
        idx = order[pos : pos + batch_size]
        pos += batch_size
        xb, yb = x[idx], y[idx]
        if cutmix and len(idx) > 1:
            xb, yb = cutmix_time(xb, yb, rng)
        xt, yt = torch.from_numpy(np.ascontiguousarray(xb)), torch.from_numpy(np.ascontiguousarray(yb))
        soft = None
        if teacher is not None:
            teacher.eval()
            with torch.no_grad():
                soft = torch.sigmoid(teacher(xt))
        losses.append(tuner.step(xt, yt, soft))
        if progress is not None:
            progress(step, steps)
        if val_score is not None and (step % eval_every == 0 or step == steps):
            score = float(val_score(model))
            curve.append((step, score))
            if math.isfinite(score) and score > best[0]:
                best = (score, step)
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                stale = 0
            else:
                stale += 1
                if patience is not None and stale >= patience:
                    break
    if best_state is not None:
        model.load_state_dict(best_state)
    return FineTuneResult(
        best_val=best[0],
        best_step=best[1],
        losses=tuple(losses),
        val_curve=tuple(curve),
        seconds=time.perf_counter() - start,
    )
