"""Adversarial training, continual fine-tuning on newly arrived attacks, and robust evaluation.

Paper: *Adapting to Evolving Adversaries with Regularized Continual Robust Training*
(Dai et al., ICML 2025, https://arxiv.org/abs/2502.04248).

Implements the training loop of regularised continual robust training (Dai et al., ICML 2025,
Sec. 4 and the official ``adv_train.py``): per batch,

    L = mean CE(h(x_adv), y) + lam * sum_{C in the batch's attacks} R_C(x),

where the batch's attacks are chosen by a procedure (``single``: the newest attack; ``croce``: one
known attack sampled with probability proportional to 1 - its running training robust accuracy, the
fine-tuning rule of Croce & Hein 2022; ``avg``/``max``: all attacks, mean or per-example worst loss;
``random``: a uniform attack). Stage 1 is adversarial training on the first attack, every later
stage fine-tunes the previous model after a new attack is added. Evaluation gives per-attack robust
accuracy, their average and the *union* accuracy (correct on the clean input and under every attack).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as tnf
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_positive
from icml25.nn import FitConfig, fit

from .attacks import NoAttack, ThreatModel, _check_labels, attack, check_images

__all__ = [
    "Procedure",
    "AttackSampler",
    "StageConfig",
    "train_stage",
    "continual_robust_training",
    "robust_eval",
    "union_accuracy",
    "average_accuracy",
    "calibrate_eps",
    "PassCounter",
]

Procedure = Literal["single", "croce", "avg", "max", "random"]
Regularizer = Callable[[nn.Module, Tensor, torch.Generator | None], Tensor]
RegFactory = Callable[[ThreatModel], Regularizer]


class PassCounter:
    """Counts a model's forward passes in images, to measure training cost in pass units.

    Used as a context manager around training; a forward hook adds the batch size of every call,
    split by whether autograd was recording. ``units`` is the cost in forward-pass equivalents with
    the usual rule that a backward pass costs two forwards: every recorded forward in our training
    loop is backpropagated exactly once (attack steps, the training loss, the regulariser), and
    ``no_grad`` forwards (the ALR's clean reference logits) are not. Unlike seconds it is the same
    on every machine, so a cost ratio can be a criterion.
    """

    def __init__(self, model: nn.Module) -> None:
        _check_model(model)
        self.model = model
        self.grad_images = 0
        self.nograd_images = 0
        self._handle: Any = None

    def _hook(self, module: nn.Module, inputs: Any, output: Any) -> None:
        n = len(inputs[0]) if inputs and isinstance(inputs[0], Tensor) else 0
        if torch.is_grad_enabled():
            self.grad_images += n
        else:
            self.nograd_images += n

    @property
    def units(self) -> int:
        """Forward-pass equivalents: ``no-grad images + 3 x recorded images`` (forward + backward)."""
        return self.nograd_images + 3 * self.grad_images

    def __enter__(self) -> PassCounter:
        self._handle = self.model.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


class AttackSampler:
    """Which known attacks perturb a batch, per training procedure (official ``--procedure``).

    ``croce`` keeps the running training robust accuracy of each attack (``update``) and samples
    attack ``i`` with probability proportional to ``1 - acc_i`` (0.5 for an attack without
    statistics yet).
    """

    def __init__(self, n_attacks: int, procedure: Procedure = "croce") -> None:
        check_positive("n_attacks", n_attacks, integer=True)
        if procedure not in ("single", "croce", "avg", "max", "random"):
            raise ValueError(f"procedure must be single, croce, avg, max or random, got {procedure!r}")
        self.n = int(n_attacks)
        self.procedure: Procedure = procedure
        self.correct = [0.0] * self.n
        self.seen = [0.0] * self.n

    def accuracy(self, i: int) -> float:
        return self.correct[i] / self.seen[i] if self.seen[i] > 0 else 0.5

    def probabilities(self) -> list[float]:
        w = [max(1.0 - self.accuracy(i), 1e-3) for i in range(self.n)]
        total = sum(w)
        return [v / total for v in w]

    def choose(self, generator: torch.Generator | None = None) -> list[int]:
        if self.procedure == "single":
            return [self.n - 1]
        if self.procedure in ("avg", "max"):
            return list(range(self.n))
        if self.procedure == "random":
            return [int(torch.randint(0, self.n, (1,), generator=generator))]
        p = torch.tensor(self.probabilities(), dtype=torch.float64)
        return [int(torch.multinomial(p, 1, generator=generator))]

    def update(self, attack_idx: int, correct: float, n: int) -> None:
        if not 0 <= attack_idx < self.n:
            raise ValueError(f"attack_idx must be in [0, {self.n}), got {attack_idx}")
        self.correct[attack_idx] += float(correct)
        self.seen[attack_idx] += float(n)


@dataclass(frozen=True)
class StageConfig:
    """One training stage: SGD (momentum 0.9, weight decay 5e-4 as in the paper's code) for
    ``epochs`` epochs of batch ``batch_size`` with a cosine or constant schedule; ``steps`` attack
    iterations per batch; ``lam`` the regulariser weight."""

    epochs: int = 8
    lr: float = 0.005
    batch_size: int = 128
    schedule: Literal["cosine", "constant"] = "constant"
    steps: int = 10
    lam: float = 0.0
    momentum: float = 0.9
    weight_decay: float = 5e-4
    procedure: Procedure = "croce"

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("epochs", "batch_size", "steps"), positive=("lr",))
        check_fields(self, non_negative=("lam", "momentum", "weight_decay"))


def _check_model(model: Any) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")


def _check_attacks(attacks: Sequence[ThreatModel]) -> None:
    if len(attacks) == 0:
        raise ValueError("attacks must hold at least one ThreatModel")
    for a in attacks:
        if not isinstance(a, ThreatModel):
            raise TypeError(f"attacks must hold ThreatModel objects, got {type(a).__name__}")


def train_stage(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    attacks: Sequence[ThreatModel],
    config: StageConfig,
    reg: RegFactory | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Train ``model`` in place for one stage on the known ``attacks`` (the newest last).

    Returns ``{"seconds", "seconds_per_epoch", "pass_units", "pass_units_per_image", "steps",
    "final_loss", "reg_mean", "sampler_accuracy", "diverged"}`` (pass units: :class:`PassCounter`).
    With ``reg`` (a threat model -> regulariser factory, e.g. ``AdversarialLogitReg``) and
    ``config.lam > 0`` the regulariser of each selected attack is added.
    """
    _check_model(model)
    check_images("x", x)
    _check_labels(y, len(x))
    _check_attacks(attacks)
    if not isinstance(config, StageConfig):
        raise TypeError(f"config must be a StageConfig, got {type(config).__name__}")
    sampler = AttackSampler(len(attacks), config.procedure)
    regs = [reg(a) for a in attacks] if (reg is not None and config.lam > 0) else None
    reg_values: list[float] = []
    images_seen = [0]

    def loss_fn(m: nn.Module, batch: tuple[Tensor, Tensor], gen: torch.Generator) -> Tensor:
        xb, yb = batch
        images_seen[0] += len(xb)
        chosen = sampler.choose(gen)
        losses = []
        for i in chosen:
            if isinstance(attacks[i], NoAttack):
                x_adv = xb
            else:
                x_adv = attack(m, xb, yb, attacks[i], steps=config.steps, generator=gen)  # type: ignore[assignment]
            assert isinstance(x_adv, Tensor)
            logits = m(x_adv)
            losses.append(tnf.cross_entropy(logits, yb, reduction="none"))
            sampler.update(i, float((logits.argmax(1) == yb).sum()), len(yb))
        stacked = torch.stack(losses)
        total = stacked.max(0).values.mean() if config.procedure == "max" else stacked.mean(1).mean()
        if regs is not None:
            r = sum((regs[i](m, xb, gen) for i in chosen), torch.zeros((), dtype=xb.dtype))
            reg_values.append(float(r.detach()))
            total = total + config.lam * r
        return total

    steps_per_epoch = math.ceil(len(x) / config.batch_size)
    fit_cfg = FitConfig(
        steps=config.epochs * steps_per_epoch,
        batch_size=config.batch_size,
        lr=config.lr,
        schedule=config.schedule,
        optimizer="sgd",
    )
    opt = torch.optim.SGD(
        model.parameters(), lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
    )
    start = time.perf_counter()
    with PassCounter(model) as counter:
        hist = fit(model, loss_fn, (x, y), fit_cfg, seed=seed, optimizer=opt)
    seconds = time.perf_counter() - start
    model.eval()
    return {
        "seconds": seconds,
        "seconds_per_epoch": seconds / config.epochs,
        "pass_units": counter.units,
        "pass_units_per_image": counter.units / max(images_seen[0], 1),
        "steps": len(hist.steps),
        "final_loss": hist.train_loss[-1] if hist.train_loss else math.nan,
        "reg_mean": sum(reg_values) / len(reg_values) if reg_values else 0.0,
        "sampler_accuracy": [sampler.accuracy(i) for i in range(len(attacks))],
        "diverged": hist.diverged,
    }


def continual_robust_training(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    attack_sequence: Sequence[ThreatModel],
    initial: StageConfig,
    finetune: StageConfig,
    reg: RegFactory | None = None,
    seed: int = 0,
    after_stage: Callable[[int, nn.Module], None] | None = None,
) -> list[dict[str, Any]]:
    """Continual robust training (Sec. 4): adversarial training on ``attack_sequence[0]`` with
    ``initial``, then for each later attack fine-tuning from the previous model on all attacks
    known so far with ``finetune``. ``after_stage(t, model)`` is called after each stage (for
    evaluation). Returns each stage's :func:`train_stage` record."""
    _check_attacks(attack_sequence)
    records = []
    for t in range(len(attack_sequence)):
        cfg = initial if t == 0 else finetune
        records.append(train_stage(model, x, y, attack_sequence[: t + 1], cfg, reg=reg, seed=seed + 1000 * t))
        if after_stage is not None:
            after_stage(t, model)
    return records


def robust_eval(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    attacks: Mapping[str, ThreatModel],
    steps: int = 20,
    batch_size: int = 512,
    seed: int = 0,
) -> dict[str, Any]:
    """Clean and per-attack robust accuracy of ``model`` (PGD with ``steps`` iterations, random start).

    Returns ``{"clean": acc, "per_attack": {name: acc}, "correct": {name: bool tensor}}`` where
    ``correct["clean"]`` is the clean correctness; combine with :func:`union_accuracy` and
    :func:`average_accuracy`.
    """
    _check_model(model)
    check_images("x", x)
    _check_labels(y, len(x))
    check_positive("steps", steps, integer=True)
    check_positive("batch_size", batch_size, integer=True)
    for name, a in attacks.items():
        if not isinstance(a, ThreatModel):
            raise TypeError(f"attacks[{name!r}] must be a ThreatModel, got {type(a).__name__}")
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    correct: dict[str, list[Tensor]] = {"clean": [], **{n: [] for n in attacks}}
    for s in range(0, len(x), batch_size):
        xb, yb = x[s : s + batch_size], y[s : s + batch_size]
        with torch.no_grad():
            correct["clean"].append(model(xb).argmax(1) == yb)
        for name, tm in attacks.items():
            x_adv = attack(model, xb, yb, tm, steps=steps, generator=gen)
            assert isinstance(x_adv, Tensor)
            with torch.no_grad():
                correct[name].append(model(x_adv).argmax(1) == yb)
    model.train(was_training)
    masks = {k: torch.cat(v) for k, v in correct.items()}
    return {
        "clean": float(masks["clean"].float().mean()),
        "per_attack": {n: float(masks[n].float().mean()) for n in attacks},
        "correct": masks,
    }


def union_accuracy(correct: Mapping[str, Tensor], names: Sequence[str]) -> float:
    """Fraction of points correct on the clean input and under every attack in ``names``."""
    if "clean" not in correct:
        raise ValueError("correct must hold the clean correctness under key 'clean'")
    mask = correct["clean"].clone()
    for n in names:
        if n not in correct:
            raise ValueError(f"names: no correctness recorded for attack {n!r}")
        mask &= correct[n]
    return float(mask.float().mean())


def average_accuracy(per_attack: Mapping[str, float], names: Sequence[str]) -> float:
    """Mean per-attack robust accuracy over ``names`` (the paper's *avg*)."""
    if len(names) == 0:
        raise ValueError("names must hold at least one attack")
    return sum(per_attack[n] for n in names) / len(names)


def calibrate_eps(
    eps: float,
    standard_acc: Callable[[float], float],
    trained_acc: Callable[[float], float],
    max_standard: float = 0.25,
    min_trained: float = 0.5,
    max_rounds: int = 4,
) -> tuple[float, bool, list[tuple[float, float, float]]]:
    """The calibration rule of our check: scale ``eps`` by 2 or 0.5 until a standard model's
    accuracy under the attack is below ``max_standard`` while a model adversarially trained on it
    keeps at least ``min_trained``.

    ``standard_acc(eps)`` and ``trained_acc(eps)`` measure the two accuracies. Returns the final
    ``eps``, whether the rule holds there, and the history ``[(eps, standard, trained), ...]``.
    Stops when the rule holds, when both conditions fail at once (no scaling can fix both) or after
    ``max_rounds`` rescalings.
    """
    check_positive("eps", eps)
    check_positive("max_rounds", max_rounds, integer=True)
    history: list[tuple[float, float, float]] = []
    for _ in range(max_rounds + 1):
        std, trn = float(standard_acc(eps)), float(trained_acc(eps))
        history.append((eps, std, trn))
        too_weak, too_strong = std >= max_standard, trn < min_trained
        if not too_weak and not too_strong:
            return eps, True, history
        if too_weak and too_strong:
            return eps, False, history
        eps = eps * 2.0 if too_weak else eps * 0.5
    return history[-1][0], False, history
