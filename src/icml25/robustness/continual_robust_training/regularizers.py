"""Logit-space regularisers of regularised continual robust training (Dai et al., ICML 2025, Sec. 3-4).

Paper: *Adapting to Evolving Adversaries with Regularized Continual Robust Training*
(Dai et al., ICML 2025, https://arxiv.org/abs/2502.04248).

The paper bounds the gap between a model's robust losses under two threat models by how far each
threat model can move the logits (Sec. 3, Theorem on the robust-loss gap): for a loss that is
M-Lipschitz in the logits ``h``, ``|max_{C1} l - max_{C2} l| <= M (max_{C1} ||h(x1) - h(x)||_2 +
max_{C2} ||h(x2) - h(x)||_2)``. Adversarial l2 regularisation (ALR) therefore penalises

    R_C(x) = max_{x' in C(x)} ||h(x') - h(x)||_2,

approximated by a few projected ascent steps from a random start in ``C(x)`` (one step by default,
step size ``eps``), with ``x'`` detached and gradients flowing through both logit vectors. As in the
official ``reg_utils.L2Reg``, the first ascent gradient is taken at the unclipped start ``x + delta``
(which may leave ``[0, 1]``); ``clip_start=True`` clips the start first, as the PGD attacks do. The
uniform-noise baseline (UR) replaces the maximisation by one random point: uniform noise in
``[-1, 1]`` scaled down (per example) to l2 norm at most ``sigma``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from icml25.core.validate import check_positive

from .attacks import ThreatModel, _renorm, _uniform, attack, check_images

__all__ = ["AdversarialLogitReg", "UniformNoiseReg", "logit_distance"]


def logit_distance(model: nn.Module, x: Tensor, x_other: Tensor) -> Tensor:
    """Batch mean of ``||h(x_other) - h(x)||_2`` (differentiable through both logit vectors)."""
    check_images("x", x)
    check_images("x_other", x_other)
    if x.shape != x_other.shape:
        raise ValueError(f"x_other must have the shape of x {tuple(x.shape)}, got {tuple(x_other.shape)}")
    both = model(torch.cat([x, x_other]))
    clean, other = both[: len(x)], both[len(x) :]
    return (other - clean).norm(dim=1).mean()


class AdversarialLogitReg:
    """ALR: ``R_C(x)`` estimated with ``steps`` ascent steps on the logit distance (Sec. 3.3).

    ``tm`` is the threat model the inner maximisation runs over; during training the regulariser
    is built for the same attack(s) that perturbed the batch. The step size follows the official
    rule: ``eps`` for one step, ``eps/(n-2)`` for ``n > 3``, else ``eps/n``. ``clip_start=False``
    (default, the official regulariser) takes the first ascent gradient at the unclipped random
    start; ``True`` clips the start into ``[0, 1]`` first (our earlier version).
    """

    def __init__(
        self, tm: ThreatModel, steps: int = 1, step_size: float | None = None, clip_start: bool = False
    ) -> None:
        if not isinstance(tm, ThreatModel):
            raise TypeError(f"tm must be a ThreatModel, got {type(tm).__name__}")
        check_positive("steps", steps, integer=True)
        if step_size is not None:
            check_positive("step_size", step_size)
        self.tm = tm
        self.steps = int(steps)
        self.step_size = tm.reg_step_size(self.steps) if step_size is None else float(step_size)
        self.clip_start = bool(clip_start)

    def __call__(self, model: nn.Module, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        x_adv = attack(
            model,
            x,
            None,
            self.tm,
            steps=self.steps,
            step_size=self.step_size,
            loss="logit",
            generator=generator,
            clip_start=self.clip_start,
        )
        assert isinstance(x_adv, Tensor)
        return logit_distance(model, x, x_adv)


class UniformNoiseReg:
    """UR: ``||h(x + eta) - h(x)||_2`` with ``eta`` uniform in ``[-1, 1]``, l2 norm capped at ``sigma``."""

    def __init__(self, sigma: float) -> None:
        check_positive("sigma", sigma)
        self.sigma = float(sigma)

    def __call__(self, model: nn.Module, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        check_images("x", x)
        eta = _renorm(_uniform(tuple(x.shape), x, generator), self.sigma)
        return logit_distance(model, x, (x + eta).clamp(0.0, 1.0))
