"""Claim check for *Normalizing Flows are Capable Generative Models* (TarFlow; Zhai et al., ICML 2025,
https://arxiv.org/abs/2412.06329).

The paper's claim (Table 1, ImageNet 64x64 unconditional: 2.99 bits/dim) is that a stack of causal-
Transformer autoregressive flow blocks with alternating directions reaches better likelihood than
earlier flows, coupling flows included, on a large data set. Four earlier protocols (kept in the
result history, summarised at the end) compared the flows on the 1293 training digits alone, where the
coupling flow overfits by about step 390 while TarFlow is still improving, so they said little about
the large-data claim. This protocol (issue 41) varies the amount of training data: three nested
training-set sizes (round 6 added the middle one and the criterion ``lead_shrinks``).

Data: scikit-learn's digits (8x8, 17 levels, uniform dequantisation, the fixed stratified split) made
into a family of *translated digits*: every image moved by each (dy, dx) in {-1, 0, 1}^2 with the
vacated pixels set to 0 (``shift_family``; ``max_shift=0`` gives back the plain digits). Training,
validation and test all come from this family, built from disjoint digits: 1293 x 9 = 11,637 training
images; for validation one translate per validation digit (fixed draw, 144 images); for test every
translate of the 360 test digits (3240 images), and each test *item* is one test digit, its score the
mean bits/dim over its 9 translates (and ``n_dequant`` dequantisation draws), so items are independent.

Arms (equal size, steps, batch, schedule and learning-rate grid):
    tarflow          P=2 (16 tokens of 4 values), Ch=32, T=4 blocks, K=4 layers per block (the official
                     MNIST notebook's K), head dim 16, alternating directions; all 11,637 images
    coupling         RealNVP/Glow multi-scale coupling flow, width matched to tarflow's parameter count;
                     all 11,637 images
    tarflow_mid      tarflow on ``n_mid`` = 3879 images (3 x 1293): the first 3879 of one fixed draw
                     (without replacement) from the family; ``n_mid=0`` drops the _mid arms
    coupling_mid     coupling on the same 3879 images
    tarflow_few      tarflow on ``n_few`` = 1293 images: the first 1293 of the same draw (so within
                     the _mid images, which are within all 11,637)
    coupling_few     coupling on the same 1293 images
    tarflow_noflip   tarflow with every block in one direction (the paper's ablation; ``ablation=True``,
                     on in tiny and full, off at small to fit the budget)
References (what learning nothing scores on the same test items; never baselines):
    uniform          the uniform distribution over the 17 levels: log2(17) = 4.087 bits/dim
    untrained        the TarFlow at initialisation (zero-initialised outputs: the identity map under the
                     standard normal prior)

Tuning (the same for every arm): each trained model (tarflow, coupling, and tarflow_noflip when on) is
trained at every rate of ``lrs`` on seed ``sweep_seed`` (0) on all the training data for the full
budget, and keeps the rate with the lowest best validation bits/dim; the seed-0 runs of the sweep are
the seed-0 results. The ``_mid`` and ``_few`` arms use their model's chosen rate. AdamW (0.9, 0.95),
wd 1e-4 (torch's fused kernel, ``fused_adam``: the same update, about 11 % less CPU time per TarFlow
training), the official schedule: linear warm-up for one epoch of the whole family (``warmup_epochs=1``:
11,637 // 64 = 181 steps, the same schedule at every data size so that the sizes differ only in their
images) and cosine decay to 1e-6; batch 64, 800 steps for every arm and data size, best validation
state kept (validated every ``eval_every`` steps); no gradient clipping. ``warmup_epochs=0`` gives the
earlier protocols' fixed ``warmup_steps`` (10).

Gates (point conditions; declared before any small-scale run of this protocol):
    params_matched       the coupling flow's size is within 10 % of tarflow's (the comparison is at
                         matched size)
    *_learns             tarflow and coupling beat the uniform floor by at least 1 bit/dim on validation
                         (``val_margin`` = log2(17) - best validation bits/dim; the earlier protocols'
                         trained arms reached about 1.9)
    *_not_overfit        on all the training data, neither tarflow nor coupling has started to overfit:
                         its last validation bits/dim is at most 0.01 above its best (``val_rise``;
                         the coupling flow's rose after step ~390 on the plain 1293 digits). This is
                         what makes the comparison a data-rich one.
    *_few_learns         (scoped: guard lead_shrinks only) tarflow_few and coupling_few beat the uniform
                         floor by at least 1 bit/dim on validation, so a diverged small-data run cannot
                         fake a shrinking lead (declared with lead_shrinks, before its run)
Criteria:
    beats_coupling (headline)  tarflow's test bits/dim below coupling's, paired over seeds and test
                         digits (two-stage bootstrap); smallest effect of interest 0.02 bits/dim
    lead_shrinks         (supporting; declared in round 6 before the run with three sizes) the lead,
                         TarFlow minus coupling test bits/dim per test digit, is smaller on all 11,637
                         images than on 1293 (``lead`` of tarflow < ``lead`` of tarflow_few), paired
                         over seeds and test digits; smallest effect 0.02 bits/dim (the headline's).
                         The issue's question: does the coupling flow's lead shrink as data grows?
    flip_helps           (full only, where the ablation runs) tarflow below tarflow_noflip, same test
    tiny_trains, tiny_finite_coupling   smoke, tiny only
Reported, not judged: ``lead`` on each size's tarflow arm, repeated on the tarflow row as
``lead_large``, ``lead_mid`` and ``lead_few``, and ``lead_shrink`` = lead_few - lead_large; the figure
``lead_by_size`` (and the run log) gives each size's lead with its 95 % paired interval
(``lead_by_size``, the criteria's two-stage bootstrap); ``val_gain_last_quarter`` (best validation up
to 3/4 of the steps minus the final best: how far an arm still was from flat).

A secondary, unjudged part (off at small to fit the budget; on in tiny and full) trains a
class-conditional TarFlow on the plain digits with Gaussian noise sigma = 0.1 and label dropout 0.1 at
TarFlow's chosen rate and reports its Bayes-classifier test accuracy and the accuracy of a logistic-
regression digit classifier (trained on real digits) on its samples at guidance w in {0, 1, 2}, with
and without the denoising step.

Choices and deviations (ours): head dim 16 instead of 64, for size; a P=1 variant is a config override
(``patch_size=1``); the official lr 1e-4 is for far larger models (a pilot on seed 0 gave TarFlow 2.35
validation bits/dim at 2e-3 and 2.24 at 4e-3 on the plain digits), hence the grid (4e-3, 8e-3).
Both models chose 8e-3 in the first small run of this protocol (run 20261205T212104974132Z-2850ec), so
the second (run 20261205T215022064880Z-942c04) tried (8e-3, 1.6e-2, 3.2e-2), criteria unchanged: the
coupling flow kept 8e-3 (2.095 validation against 2.144 at 1.6e-2 and 3.306 at 3.2e-2), TarFlow chose
1.6e-2 by 0.014 bits/dim (2.211 against 2.225; 3.2e-2 diverged), and at that rate seed 1 diverged
within 40 steps, so the gates tarflow_learns and tarflow_not_overfit failed (inconclusive). The
grid went back to (4e-3, 8e-3) for the third run (run 20261205T231132723090Z-b3d575: not reproduced,
+0.135 [+0.114, +0.155]).

Round 6 (changed after seeing those three runs, disclosed): (a) the warm-up is the official one, one
epoch (official ``train.py`` and the MNIST notebook: ``CosineLRSchedule(optimizer, len(data_loader),
epochs * len(data_loader), 1e-6, lr)``), instead of our 10 steps, because the issue asked for the
official schedule and ours departed from it; (b) the grid is (8e-3, 1.6e-2): 4e-3 lost to 8e-3 for
both models in every run (TarFlow 2.428 against 2.221 validation, coupling 2.104 against 2.094), both
chose the top of (4e-3, 8e-3), and 1.6e-2 had been set aside only for its instability under a 10-step
warm-up; a pilot with the 181-step warm-up trained TarFlow at 1.6e-2 on seed 1 (the seed that diverged
before) to 2.244 validation without divergence. Criteria and thresholds are unchanged; the middle size,
``lead_shrinks`` and its two scoped gates are new and were declared before the run with them.
Its small run (run 20261206T032046938460Z-8e0c10; every gate passed): both models kept 8e-3 (TarFlow
3.576 validation at 1.6e-2 on seed 0, unstable even with the long warm-up); TarFlow minus coupling
test bits/dim +0.163 [+0.147, +0.179] on 11,637 images, +0.129 [+0.106, +0.162] on 3879, -0.033
[-0.118, +0.021] on 1293 (where the coupling flow overfits): not reproduced, and lead_shrinks fails
(+0.195 [+0.154, +0.285]): the coupling flow's lead grows with data here.

Earlier protocols on the plain 1293 digits (2 seeds each, mean test bits/dim): (1) lr 1e-3, 400
steps, K = 1: tarflow 2.724, coupling 2.318, noflip 3.242; (2) lr grid up to 4e-3, 800 steps, K = 4:
2.279 / 2.212 / 2.97; (3) grid (4e-3, 8e-3): 2.278 / 2.204 / 2.927; (4) plus a tarflow_l8 arm at the
paper's 8 layers per block (width 22, 197,592 parameters): tarflow 2.279, tarflow_l8 2.229, coupling
2.193, noflip 2.996. beats_coupling failed each time and flip_helps passed; the coupling flow's
validation peaked near step 390 while TarFlow's still fell. The tarflow_l8 arm is not carried into this
protocol (it took 1.8x tarflow's time per step, which the data-size comparison needs).
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.runtime import WorkerPool
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields
from icml25.nn.params import count_parameters

from .coupling import CouplingFlow, CouplingFlowConfig, match_coupling_hidden
from .data import load_digits_dataset, shift_family
from .denoise import bayes_classify, denoise
from .likelihood import bits_per_dim, noise_augment, to_unit_range
from .model import TarFlow, TarFlowConfig
from .train import TrainConfig, TrainResult, train_flow

#: the training-set sizes: "all" the family, "mid" (``n_mid`` images) and "few" (``n_few``), nested
SUBSETS = ("all", "mid", "few")
#: trained arm -> (model kind, training subset)
ARM_SPECS: dict[str, tuple[str, str]] = {
    "tarflow": ("tarflow", "all"),
    "coupling": ("coupling", "all"),
    "tarflow_mid": ("tarflow", "mid"),
    "coupling_mid": ("coupling", "mid"),
    "tarflow_few": ("tarflow", "few"),
    "coupling_few": ("coupling", "few"),
    "tarflow_noflip": ("tarflow_noflip", "all"),
}
#: subset -> (the tarflow arm, the coupling arm) compared at that training-set size
PAIRS: dict[str, tuple[str, str]] = {
    "all": ("tarflow", "coupling"),
    "mid": ("tarflow_mid", "coupling_mid"),
    "few": ("tarflow_few", "coupling_few"),
}
ARMS = tuple(ARM_SPECS)
REFERENCES = ("uniform", "untrained")
#: the smallest test bits/dim difference of interest between two arms (see the module docstring)
BPD_EFFECT = 0.02
EFFECT_SOURCE = (
    "declared: 0.02 bits/dim, about 1 % of the ~2.2 bits/dim the arms reach on digits and below the "
    "0.03-0.07 gaps of the earlier protocols; the paper's margin over earlier flows on ImageNet 64 "
    "(2.99 against 3.3+ bits/dim) is about 10 %"
)


LEAD_EFFECT_SOURCE = (
    "declared before the run with the three sizes (issue 41, round 6): the same 0.02 bits/dim as the "
    "headline, a difference of two leads that are each judged at that resolution"
)


@dataclass(frozen=True)
class TarFlowCheckConfig:
    """One claim-check configuration (flat, so every field can be overridden with ``--set``)."""

    patch_size: int = 2
    channels: int = 32
    num_blocks: int = 4
    layers_per_block: int = 4
    head_dim: int = 16
    coupling_levels: int = 2
    coupling_checkerboard_steps: int = 2
    coupling_steps_per_level: int = 4
    max_shift: int = 1  # the translated-digits family; 0: the plain digits
    n_train: int = 0  # base training digits (0: the whole training split), each gives its translates
    n_few: int = 1293  # images (drawn once from the family) for the _few arms
    n_mid: int = 3879  # images for the _mid arms (the first n_mid of the same draw; 0: no _mid arms)
    n_test: int = 0  # base test digits (0: the whole test split)
    ablation: bool = False  # train the tarflow_noflip arm (judged by flip_helps at full)
    steps: int = 800
    batch_size: int = 64
    lrs: tuple[float, ...] = (8e-3, 1.6e-2)
    sweep_seed: int = 0
    warmup_steps: int = 10  # used when warmup_epochs == 0
    warmup_epochs: float = 1.0  # the official one-epoch warm-up, of the whole family, for every size
    fused_adam: bool = True  # torch's fused AdamW (the same update, fewer kernel calls: faster on CPU)
    eval_every: int = 20
    n_dequant: int = 2
    conditional: bool = False
    cond_steps: int = 800
    cond_sigma: float = 0.1
    label_drop: float = 0.1
    guidance_weights: tuple[float, ...] = (0.0, 1.0, 2.0)
    samples_per_class: int = 100
    workers: int = 2  # training runs in this many single-threaded processes (1: all in this process)

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "steps",
                "batch_size",
                "eval_every",
                "n_dequant",
                "cond_steps",
                "samples_per_class",
                "n_few",
                "workers",
            ),
            non_negative_int=("n_train", "n_test", "sweep_seed", "max_shift", "n_mid"),
            non_negative=("warmup_epochs",),
        )
        if not self.lrs or any(not (math.isfinite(lr) and lr > 0) for lr in self.lrs):
            raise ValueError(f"lrs must be a non-empty tuple of positive learning rates, got {self.lrs}")
        if len(set(self.lrs)) != len(self.lrs):
            raise ValueError(f"lrs must be distinct, got {self.lrs}")
        if any(w < 0 for w in self.guidance_weights) or not self.guidance_weights:
            raise ValueError(f"guidance_weights must be non-empty and >= 0, got {self.guidance_weights}")
        if self.max_shift > 3:
            raise ValueError(f"max_shift must be in [0, 3] for 8x8 digits, got {self.max_shift}")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The models the learning-rate sweep trains."""
        return ("tarflow", "coupling", "tarflow_noflip") if self.ablation else ("tarflow", "coupling")

    @property
    def arms(self) -> tuple[str, ...]:
        """The trained arms of this configuration."""
        return tuple(
            a
            for a, (kind, subset) in ARM_SPECS.items()
            if kind in self.kinds and (subset != "mid" or self.n_mid)
        )

    @property
    def subsets(self) -> tuple[str, ...]:
        """The training-set sizes compared, largest first."""
        return ("all", "mid", "few") if self.n_mid else ("all", "few")

    def warmup_for(self, n_images: int) -> int:
        """Warm-up steps for a training set of ``n_images``: ``warmup_epochs`` epochs of it (the official
        ``CosineLRSchedule(optimizer, len(data_loader), ...)``: one epoch), at most half the steps;
        ``warmup_steps`` when ``warmup_epochs`` is 0. The check passes the whole family's size for every
        arm, so all data sizes share one schedule and differ only in their images."""
        if self.warmup_epochs == 0:
            return self.warmup_steps
        epoch = n_images // self.batch_size  # batches per epoch (drop_last, as the official loader)
        return max(1, min(self.steps // 2, round(self.warmup_epochs * epoch)))

    def tarflow(self, *, alternate: bool = True, num_classes: int = 0) -> TarFlowConfig:
        return TarFlowConfig(
            in_channels=1,
            img_size=8,
            patch_size=self.patch_size,
            channels=self.channels,
            num_blocks=self.num_blocks,
            layers_per_block=self.layers_per_block,
            head_dim=self.head_dim,
            alternate=alternate,
            num_classes=num_classes,
        )

    def coupling_base(self) -> CouplingFlowConfig:
        return CouplingFlowConfig(
            in_channels=1,
            img_size=8,
            num_levels=self.coupling_levels,
            checkerboard_steps=self.coupling_checkerboard_steps,
            steps_per_level=self.coupling_steps_per_level,
        )

    def train(
        self, lr: float, *, steps: int | None = None, gaussian: bool = False, n_images: int = 0
    ) -> TrainConfig:
        """The optimiser settings; ``n_images`` (the training-set size) sets the warm-up."""
        return TrainConfig(
            steps=steps or self.steps,
            batch_size=self.batch_size,
            lr=lr,
            warmup_steps=self.warmup_for(n_images) if n_images else self.warmup_steps,
            fused=self.fused_adam,
            eval_every=self.eval_every,
            noise="gaussian" if gaussian else "uniform",
            sigma=self.cond_sigma,
            label_drop=self.label_drop if gaussian else 0.0,
        )


def _gate(
    name: str, arm: str, metric: str, op: Any, threshold: float, description: str, **kw: Any
) -> Criterion:
    return Criterion(name, arm=arm, metric=metric, op=op, threshold=threshold, description=description, **kw)


CLAIM = Claim(
    statement=(
        "With plenty of training data, at matched size, optimiser steps and learning-rate sweep, TarFlow "
        "(causal-Transformer autoregressive flow blocks with alternating directions) reaches lower held-out "
        "bits/dim than a RealNVP/Glow coupling flow, and alternating the direction matters."
    ),
    source="Table 1 (ImageNet 64x64 unconditional bits/dim, 2.99) and Sec. 3.1 (permutations)",
    ours="tarflow",
    baselines=("coupling", "tarflow_mid", "coupling_mid", "tarflow_few", "coupling_few", "tarflow_noflip"),
    references=REFERENCES,
    gates=(
        _gate(
            "params_matched",
            "coupling",
            "param_gap",
            "<=",
            0.10,
            "the coupling flow's parameter count is within 10% of TarFlow's",
            reduce="max",
            scales=("tiny", "small", "medium", "full"),
        ),
        _gate(
            "tarflow_learns",
            "tarflow",
            "val_margin",
            ">=",
            1.0,
            "TarFlow's best validation bits/dim is at least 1 below the uniform floor log2(17)",
        ),
        _gate(
            "coupling_learns",
            "coupling",
            "val_margin",
            ">=",
            1.0,
            "the coupling flow's best validation bits/dim is at least 1 below the uniform floor log2(17)",
        ),
        _gate(
            "tarflow_few_learns",
            "tarflow_few",
            "val_margin",
            ">=",
            1.0,
            "TarFlow on 1293 images learns (validation at least 1 bit/dim below the uniform floor), so "
            "its lead is not a diverged run's",
            guards=("lead_shrinks",),
        ),
        _gate(
            "coupling_few_learns",
            "coupling_few",
            "val_margin",
            ">=",
            1.0,
            "the coupling flow on 1293 images learns (validation at least 1 bit/dim below the uniform floor)",
            guards=("lead_shrinks",),
        ),
        _gate(
            "tarflow_not_overfit",
            "tarflow",
            "val_rise",
            "<=",
            0.01,
            "on all the training data TarFlow has not started to overfit (last val <= best + 0.01)",
            reduce="max",
        ),
        _gate(
            "coupling_not_overfit",
            "coupling",
            "val_rise",
            "<=",
            0.01,
            "on all the training data the coupling flow has not started to overfit (last val <= best + 0.01)",
            reduce="max",
        ),
    ),
    criteria=(
        Criterion(
            "beats_coupling",
            arm="tarflow",
            metric="test_bpd",
            op="<",
            other_arm="coupling",
            smallest_effect=BPD_EFFECT,
            effect_source=EFFECT_SOURCE,
            description=(
                "TarFlow's test bits/dim is below the coupling flow's on 9x the digits (paired over seeds "
                "and test digits)"
            ),
        ),
        Criterion(
            "lead_shrinks",
            arm="tarflow",
            metric="lead",
            op="<",
            other_arm="tarflow_few",
            smallest_effect=BPD_EFFECT,
            effect_source=LEAD_EFFECT_SOURCE,
            description=(
                "the coupling flow's lead over TarFlow (coupling minus TarFlow's test bits/dim deficit, "
                "per test digit) is smaller on all 11,637 images than on 1293: TarFlow gains with data "
                "(paired over seeds and test digits)"
            ),
        ),
        Criterion(
            "flip_helps",
            arm="tarflow",
            metric="test_bpd",
            op="<",
            other_arm="tarflow_noflip",
            smallest_effect=BPD_EFFECT,
            effect_source=EFFECT_SOURCE,
            scales=("full",),
            description="alternating directions beats one direction for every block (full: ablation on)",
        ),
        Criterion(
            "tiny_trains",
            arm="tarflow",
            metric="train_bpd_drop",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="smoke: the training loss falls",
        ),
        Criterion(
            "tiny_finite_coupling",
            arm="coupling",
            metric="test_bpd",
            op="<",
            threshold=20.0,
            scales=("tiny",),
            description="smoke: the baseline's test bits/dim is finite and sane",
        ),
    ),
    headline="beats_coupling",
    min_seeds=2,
    setup_notes=(
        "Digits 8x8 with 17 grey levels translated by up to one pixel (11,637 training images from 1293 "
        "digits; validation: one translate of each of 144 digits; test items: 360 digits, each scored by "
        "the mean over its 9 translates), uniform dequantisation; TarFlow 2-32-4-4 (head dim 16) against a "
        "multi-scale coupling flow of matched size, both also trained on 3879 and on 1293 images of the "
        "family (the _mid and _few arms, nested draws) to show how the comparison moves with data; every "
        "trained model swept over the same learning rates on seed 0 (full budget, chosen on validation), "
        "then the same optimiser, the official schedule (one-epoch warm-up of the family, cosine decay), "
        "batch and 800 steps for all arms, sizes and seeds. The paper's ImageNet-64 scale, FID and "
        "diffusion-level sample quality are not tested; the guidance/denoising numbers (off at small) "
        "are reported, not judged; the no-flip ablation runs at tiny and full only."
    ),
)


@dataclass(frozen=True)
class Trained:
    """One trained model with its training record and wall time."""

    model: TarFlow | CouplingFlow
    result: TrainResult
    lr: float
    seconds: float


@dataclass(frozen=True)
class CheckData:
    """The translated-digits family of one configuration (integer images, fixed for every seed)."""

    x_train: torch.Tensor  # every translate of the training digits
    x_mid: torch.Tensor  # the first n_mid images of one fixed draw from x_train (empty if n_mid = 0)
    x_few: torch.Tensor  # the first n_few images of the same draw (nested: few within mid within all)
    x_val: torch.Tensor  # one translate per validation digit
    x_test: torch.Tensor  # every translate of the test digits, digit-major
    per_item: int  # translates per test digit (rows i * per_item : (i + 1) * per_item)
    num_levels: int

    def subset(self, name: str) -> torch.Tensor:
        """The training images of one size: ``"all"``, ``"mid"`` or ``"few"``."""
        sets = {"all": self.x_train, "mid": self.x_mid, "few": self.x_few}
        if name not in sets:
            raise ValueError(f"unknown training subset {name!r}; choose one of {SUBSETS}")
        return sets[name]


@functools.lru_cache(maxsize=4)
def check_data(config: TarFlowCheckConfig) -> CheckData:
    """The family for ``config`` (cached: every seed and arm uses the same images)."""
    data = load_digits_dataset()
    x_train = data.x_train[: config.n_train] if config.n_train else data.x_train
    x_test = data.x_test[: config.n_test] if config.n_test else data.x_test
    k = (2 * config.max_shift + 1) ** 2
    train = shift_family(x_train, config.max_shift)
    gen = torch.Generator().manual_seed(0)
    order = torch.randperm(len(train), generator=gen)  # one draw: few is within mid, mid within all
    few = train[order[: min(config.n_few, len(train))]]
    mid = train[order[: min(config.n_mid, len(train))]]
    val_all = shift_family(data.x_val, config.max_shift).reshape(len(data.x_val), k, *data.x_val.shape[1:])
    pick = torch.randint(k, (len(data.x_val),), generator=gen)
    val = val_all[torch.arange(len(data.x_val)), pick]
    return CheckData(
        x_train=train,
        x_mid=mid,
        x_few=few,
        x_val=val,
        x_test=shift_family(x_test, config.max_shift),
        per_item=k,
        num_levels=data.num_levels,
    )


def _val_gain_last_quarter(res: TrainResult) -> float:
    """Best validation bits/dim up to 3/4 of the steps minus the final best (0 = flat at the end)."""
    cut = 3 * max(res.steps, default=0) // 4
    early = [v for s, v in zip(res.val_steps, res.val_bpd, strict=True) if s <= cut]
    if not early or not res.val_bpd:
        return float("nan")
    return min(early) - min(res.val_bpd)


def val_rise(res: TrainResult) -> float:
    """The last validation bits/dim minus the best (0: still at its best; > 0: it has begun to overfit)."""
    if not res.val_bpd:
        return float("nan")
    return res.val_bpd[-1] - min(res.val_bpd)


@functools.lru_cache(maxsize=8)
def _coupling_config(config: TarFlowCheckConfig) -> CouplingFlowConfig:
    """The coupling flow whose width matches TarFlow's parameter count (cached: the width search
    builds many models)."""
    with torch.device("meta"):
        n_params = count_parameters(TarFlow(config.tarflow()))
    return match_coupling_hidden(n_params, config.coupling_base())


def _build(config: TarFlowCheckConfig, kind: str) -> TarFlow | CouplingFlow:
    """A freshly initialised model of ``kind`` (uses the global torch RNG)."""
    if kind == "tarflow":
        return TarFlow(config.tarflow())
    if kind == "tarflow_noflip":
        return TarFlow(config.tarflow(alternate=False))
    if kind == "coupling":
        return CouplingFlow(_coupling_config(config))
    raise ValueError(f"unknown model kind {kind!r}; choose one of tarflow, tarflow_noflip, coupling")


def _train(
    config: TarFlowCheckConfig,
    kind: str,
    subset: str,
    lr: float,
    seed: int,
    progress: Any = None,
) -> Trained:
    """One training run: a pure function of its arguments (the model is built right after seeding
    the global RNG; batches and noise come from the run's own generator), so it gives the same model
    in a worker process as here."""
    data = check_data(config)
    torch.manual_seed(seed)
    model = _build(config, kind)
    t0 = time.perf_counter()
    res = train_flow(
        model,
        data.subset(subset),
        num_levels=data.num_levels,
        config=config.train(lr, n_images=len(data.x_train)),  # one schedule for every size
        seed=seed,
        x_val=data.x_val,
        progress=progress,
    )
    return Trained(model=model.eval(), result=res, lr=lr, seconds=time.perf_counter() - t0)


def _train_in_worker(
    config: TarFlowCheckConfig, kind: str, subset: str, lr: float, seed: int
) -> tuple[dict[str, torch.Tensor], TrainResult, float, float]:
    """:func:`_train` in a worker process at one thread; returns the weights (not the module)."""
    torch.set_num_threads(1)
    run = _train(config, kind, subset, lr, seed)
    state = {k: v.detach().clone() for k, v in run.model.state_dict().items()}
    return state, run.result, run.lr, run.seconds


def _from_worker(
    config: TarFlowCheckConfig, kind: str, out: tuple[dict[str, torch.Tensor], TrainResult, float, float]
) -> Trained:
    state, result, lr, seconds = out
    with torch.random.fork_rng(devices=[]):  # building draws initial weights: leave the caller's RNG alone
        model = _build(config, kind)
    model.load_state_dict(state)
    return Trained(model=model.eval(), result=result, lr=lr, seconds=seconds)


#: (kind, subset, lr, seed): one training run
Job = tuple[str, str, float, int]


class _Runs:
    """The training runs of one check run: finished ones, and (``workers`` > 1) queued ones on a
    :class:`icml25.core.runtime.WorkerPool` (at ``workers`` = 1 or a one-thread budget every run trains
    here, at a worker's one thread, with the same numbers)."""

    def __init__(self) -> None:
        self.done: dict[Job, Trained] = {}
        self.pool: WorkerPool | None = None

    def submit(self, config: TarFlowCheckConfig, jobs: Sequence[Job]) -> None:
        """Queue every job that is neither finished nor queued."""
        if self.pool is None:
            self.pool = WorkerPool(config.workers)
        for job in dict.fromkeys(jobs):
            if job not in self.done:
                self.pool.submit(job, _train_in_worker, config, *job)

    def get(self, config: TarFlowCheckConfig, job: Job, ctx: RunContext, name: str) -> Trained:
        """The finished run of ``job``: awaited if queued, else trained here."""
        if job not in self.done:
            if self.pool is not None and self.pool.queued(job):
                ctx.progress(f"train {name} lr={job[2]:g} (worker)", 0, 1)
                self.done[job] = _from_worker(config, job[0], self.pool.take(job))
            else:
                self.done[job] = _train(
                    config,
                    *job,
                    progress=lambda step, total: ctx.progress(f"train {name} lr={job[2]:g}", step, total),
                )
        return self.done[job]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        self.pool = None
        self.done = {}


def item_bpd(model: Any, config: TarFlowCheckConfig, seed: int) -> np.ndarray:
    """Per test digit: mean bits/dim over its translates and ``n_dequant`` dequantisation draws."""
    data = check_data(config)
    with torch.inference_mode():
        bpd = bits_per_dim(
            model,
            data.x_test,
            num_levels=data.num_levels,
            n_dequant=config.n_dequant,
            generator=torch.Generator().manual_seed(seed * 100 + 7),
        )
    return bpd.reshape(-1, data.per_item).mean(1).numpy().astype(float)


def _evaluate(trained: Trained, config: TarFlowCheckConfig, seed: int) -> tuple[dict[str, float], np.ndarray]:
    res, levels = trained.result, check_data(config).num_levels
    items = item_bpd(trained.model, config, seed)
    k = min(10, len(res.train_bpd))
    metrics = {
        "test_bpd": float(items.mean()),
        "best_val_bpd": res.best_val_bpd,
        "val_margin": math.log2(levels) - res.best_val_bpd,
        "val_rise": val_rise(res),
        "best_step": float(res.best_step),
        "val_gain_last_quarter": _val_gain_last_quarter(res),
        "lr": trained.lr,
        "params": float(count_parameters(trained.model)),
        "train_bpd_drop": statistics.fmean(res.train_bpd[:k]) - statistics.fmean(res.train_bpd[-k:]),
    }
    return metrics, items


def lr_sweep(
    config: TarFlowCheckConfig, ctx: RunContext, runs: _Runs | None = None
) -> dict[str, dict[float, Trained]]:
    """Every model kind trained at every rate of ``config.lrs`` on ``config.sweep_seed`` with all the
    training data (full budget); the chosen runs double as that seed's results. ``runs`` holds the
    check run's training runs (queued on its workers); without it they train here."""
    own = runs is None
    runs = _Runs() if runs is None else runs
    jobs = [(kind, "all", float(lr), config.sweep_seed) for kind in config.kinds for lr in config.lrs]
    try:
        runs.submit(config, jobs)
        return {
            kind: {
                lr: runs.get(config, (kind, "all", float(lr), config.sweep_seed), ctx, kind)
                for lr in config.lrs
            }
            for kind in config.kinds
        }
    finally:
        if own:
            runs.close()


def choose_lr(runs: dict[float, Trained]) -> float:
    """The rate with the lowest best validation bits/dim (non-finite counts as worst; ties: the first)."""
    return best_on_validation(runs, lambda run: run.result.best_val_bpd)


def _img(x: torch.Tensor) -> list[list[float]]:
    return np.round(x.detach().reshape(x.shape[0], -1).numpy(), 3).tolist()


class TarFlowCheck(ClaimCheck[TarFlowCheckConfig]):
    slug = "tarflow"
    claim = CLAIM
    presets = {
        "tiny": TarFlowCheckConfig(
            channels=16,
            num_blocks=2,
            layers_per_block=2,
            head_dim=8,
            n_train=64,
            n_few=128,
            n_mid=256,
            n_test=24,
            ablation=True,
            steps=12,
            batch_size=32,
            lrs=(1e-3, 4e-3),
            warmup_steps=2,
            eval_every=6,
            n_dequant=1,
            conditional=True,
            cond_steps=5,
            guidance_weights=(0.0, 1.0),
            samples_per_class=2,
            workers=1,
        ),
        "small": TarFlowCheckConfig(),
        # The official MNIST notebook's TarFlow (width 128, head dim 64, 4 blocks x 4 layers) with the
        # patch size set for 8x8 inputs, 2000 steps of batch 128 (about 22 epochs of the family), the
        # ablation and the conditional part on.
        "full": TarFlowCheckConfig(
            channels=128,
            num_blocks=4,
            layers_per_block=4,
            head_dim=64,
            ablation=True,
            steps=2000,
            batch_size=128,
            lrs=(5e-4, 1e-3, 2e-3),
            n_dequant=4,
            conditional=True,
            cond_steps=2000,
            eval_every=20,
            workers=1,
        ),
    }
    default_seeds = {"tiny": 1, "small": 2, "full": 3}

    def __init__(self) -> None:
        self._runs = _Runs()

    def begin_run(self, config: TarFlowCheckConfig) -> None:
        """A fresh set of training runs (and learning-rate sweep) for every run."""
        self._runs.close()

    def end_run(self) -> None:
        """Shut the workers down (cancelling queued runs) and drop the trained models."""
        self._runs.close()

    def run_seed(self, config: TarFlowCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        data = check_data(config)
        metrics: dict[str, dict[str, float]] = {}
        items: dict[str, dict[str, np.ndarray]] = {}
        series: dict[str, Any] = {"curves": {}, "seconds": {}, "samples": {}, "sweep": {}}

        # -- the learning-rate sweep (seed ``sweep_seed``, validation split, the same for every model) ----
        ctx.progress("lr sweep", 0, 1)
        sweep = lr_sweep(config, ctx, self._runs)
        ctx.progress("lr sweep", 1, 1)
        chosen = {kind: choose_lr(sweep[kind]) for kind in config.kinds}
        # queue this seed's and every later planned seed's runs (the workers train while this one evaluates)
        later = [s for s in self.planned_seeds if s > seed] if seed in self.planned_seeds else []
        jobs: list[Job] = []
        for s in (seed, *later):
            for arm in config.arms:
                kind, subset = ARM_SPECS[arm]
                jobs.append((kind, subset, float(chosen[kind]), s))
        self._runs.submit(config, jobs)
        series["sweep"] = {
            kind: {f"{lr:g}": sweep[kind][lr].result.best_val_bpd for lr in config.lrs}
            for kind in config.kinds
        }

        # -- the trained arms at their chosen rates (same steps, optimiser, test items) ------------------
        for arm in config.arms:
            kind, subset = ARM_SPECS[arm]
            x = data.subset(subset)
            if subset == "all" and seed == config.sweep_seed:
                run = sweep[kind][chosen[kind]]
            else:
                run = self._runs.get(config, (kind, subset, float(chosen[kind]), seed), ctx, arm)
            metrics[arm], arm_items = _evaluate(run, config, seed)
            items[arm] = {"test_bpd": arm_items}
            metrics[arm]["n_train_images"] = float(len(x))
            series["seconds"][f"{arm}/train"] = run.seconds
            res = run.result
            series["curves"][arm] = {
                "steps": res.steps,
                "train_bpd": np.round(res.train_bpd, 4).tolist(),
                "val_steps": res.val_steps,
                "val_bpd": np.round(res.val_bpd, 4).tolist(),
            }
            with torch.no_grad():
                xs = run.model.sample(10, generator=torch.Generator().manual_seed(seed))  # type: ignore[operator]
            series["samples"][arm] = _img(xs)

        # -- references: what learning nothing scores on the same test items ----------------------------
        floor = math.log2(data.num_levels)
        n_items = len(data.x_test) // data.per_item
        items["uniform"] = {"test_bpd": np.full(n_items, floor)}
        metrics["uniform"] = {"best_val_bpd": floor, "val_margin": 0.0}
        torch.manual_seed(seed)
        untrained = TarFlow(config.tarflow()).eval()
        items["untrained"] = {"test_bpd": item_bpd(untrained, config, seed)}
        val0 = float(bits_per_dim(untrained, data.x_val, num_levels=data.num_levels, n_dequant=1).mean())
        metrics["untrained"] = {"best_val_bpd": val0, "val_margin": floor - val0}

        # -- derived: matched size; how the comparison moves with the amount of data ---------------------
        n_tf = metrics["tarflow"]["params"]
        metrics["coupling"]["param_gap"] = abs(metrics["coupling"]["params"] - n_tf) / n_tf
        metrics["coupling"]["hidden"] = float(_coupling_config(config).hidden)
        # lead = TarFlow minus coupling test bits/dim at one training-set size, per test digit (> 0: the
        # coupling flow is ahead), on the TarFlow arm of that size; lead_shrinks pairs it across sizes
        for subset in config.subsets:
            tf_arm, cp_arm = PAIRS[subset]
            lead = items[tf_arm]["test_bpd"] - items[cp_arm]["test_bpd"]
            items[tf_arm]["lead"] = lead
            metrics[tf_arm]["lead"] = float(lead.mean())
        tf = metrics["tarflow"]
        tf["lead_large"] = tf["lead"]
        tf["lead_few"] = metrics["tarflow_few"]["lead"]
        if config.n_mid:
            tf["lead_mid"] = metrics["tarflow_mid"]["lead"]
        tf["lead_shrink"] = tf["lead_few"] - tf["lead_large"]

        # -- secondary: class-conditional TarFlow, noise augmentation, guidance, denoising ----------
        if config.conditional:
            gen = torch.Generator().manual_seed(seed)
            digits = load_digits_dataset()
            x_train, y_train = digits.x_train, digits.y_train
            if config.n_train:
                x_train, y_train = x_train[: config.n_train], y_train[: config.n_train]
            self._conditional(
                config, chosen["tarflow"], seed, digits, x_train, y_train, metrics, series, ctx, gen
            )
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def _conditional(
        self,
        config: TarFlowCheckConfig,
        lr: float,
        seed: int,
        data: Any,
        x_train: torch.Tensor,
        y_train: torch.Tensor,
        metrics: dict[str, dict[str, float]],
        series: dict[str, Any],
        ctx: RunContext,
        gen: torch.Generator,
    ) -> None:
        from sklearn.linear_model import LogisticRegression

        L, K, sigma = data.num_levels, data.num_classes, config.cond_sigma
        torch.manual_seed(seed)
        model = TarFlow(config.tarflow(num_classes=K))
        train_cfg = config.train(lr, steps=config.cond_steps, gaussian=True)
        res = train_flow(
            model,
            x_train,
            num_levels=L,
            config=train_cfg,
            seed=seed,
            y_train=y_train,
            x_val=data.x_val,
            y_val=data.y_val,
            progress=lambda step, total: ctx.progress("train conditional", step, total),
        )
        series["seconds"]["conditional/train"] = res.seconds
        series["curves"]["conditional"] = {
            "val_steps": res.val_steps,
            "val_bpd": np.round(res.val_bpd, 4).tolist(),
        }
        m = metrics["tarflow"]
        x_test = noise_augment(to_unit_range(data.x_test, L), sigma, generator=gen)
        m["cond/bayes_acc"] = float((bayes_classify(model, x_test, K) == data.y_test).float().mean())

        clf = LogisticRegression(max_iter=2000, C=1.0)
        clf.fit(to_unit_range(data.x_train, L).flatten(1).numpy(), data.y_train.numpy())
        m["cond/clf_real_test_acc"] = float(
            clf.score(to_unit_range(data.x_test, L).flatten(1).numpy(), data.y_test.numpy())
        )
        labels = torch.arange(K).repeat_interleave(config.samples_per_class)
        samples: dict[str, Any] = {}
        for w in config.guidance_weights:
            z = model.sample_prior(len(labels), generator=torch.Generator().manual_seed(seed + 7))
            raw = model.inverse(z, labels, guidance=w)
            den = denoise(model, raw, sigma, labels)
            for tag, xs in (("raw", raw), ("denoised", den)):
                feats = xs.clamp(-1, 1).flatten(1).numpy()
                proba = clf.predict_proba(feats)
                m[f"cond/sample_acc_w{w:g}_{tag}"] = float((proba.argmax(1) == labels.numpy()).mean())
                m[f"cond/sample_conf_w{w:g}_{tag}"] = float(proba.max(1).mean())
                first = torch.arange(K) * config.samples_per_class  # one per class for the figure
                samples[f"w{w:g}_{tag}"] = _img(xs[first])
        series["samples"]["conditional"] = samples

    def make_figures(
        self, config: TarFlowCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import OURS_COLOR, PALETTE, new_figure, plot_band

        colors = {
            "tarflow": OURS_COLOR,
            "coupling": PALETTE[0],
            "tarflow_noflip": PALETTE[1],
            "tarflow_mid": OURS_COLOR,
            "coupling_mid": PALETTE[0],
            "tarflow_few": OURS_COLOR,
            "coupling_few": PALETTE[0],
        }
        styles = {"all": "-", "mid": "-.", "few": "--"}
        arms = config.arms
        fig, axes = new_figure(ncols=2, width=4.4)
        for arm in arms:
            curves = [o.series["curves"][arm] for o in outcomes]
            train = [np.convolve(c["train_bpd"], np.ones(10) / 10, mode="valid").tolist() for c in curves]
            n = min(len(t) for t in train)
            style = styles[ARM_SPECS[arm][1]]
            plot_band(
                axes[0],
                list(range(10, 10 + n)),
                [t[:n] for t in train],
                label=arm,
                color=colors[arm],
                linestyle=style,
            )
            m = min(len(c["val_bpd"]) for c in curves)  # a diverged run stops early: common prefix
            plot_band(
                axes[1],
                curves[0]["val_steps"][:m],
                [c["val_bpd"][:m] for c in curves],
                label=arm,
                color=colors[arm],
                linestyle=style,
            )
        axes[0].set(xlabel="optimiser step", ylabel="train bits/dim (10-step mean)", title="Training loss")
        axes[1].set(
            xlabel="optimiser step", ylabel="validation bits/dim", title="Validation (fixed dequantisation)"
        )
        lo = min(min(o.series["curves"][a]["val_bpd"]) for o in outcomes for a in arms)
        for ax in axes:
            ax.set_ylim(lo - 0.2, lo + 2.5)
            ax.legend()
        ctx.save_figure(
            fig,
            "training_curves",
            "Training and validation bits/dim on translated digits (mean and min-max over seeds); solid: "
            "all 11,637 images of the family; dash-dot: the first n_mid of one fixed draw; dashed: the "
            "first n_few.",
        )
        self._lead_figure(config, outcomes, ctx)

        s = outcomes[0].series["samples"]
        rows: list[tuple[str, Any]] = [(arm, np.asarray(s[arm])[:10]) for arm in arms]
        for key, imgs in s.get("conditional", {}).items():
            rows.append((f"cond. {key}", np.asarray(imgs)))
        fig, axes = new_figure(ncols=1, width=6.0, height=0.62 * len(rows))
        grid = np.ones((len(rows) * 9, 10 * 9)) * -1
        for r, (_, imgs) in enumerate(rows):
            for c, img in enumerate(imgs[:10]):
                grid[r * 9 : r * 9 + 8, c * 9 : c * 9 + 8] = np.clip(img.reshape(8, 8), -1, 1)
        axes.imshow(grid, cmap="gray_r", vmin=-1, vmax=1)
        axes.set_yticks([r * 9 + 3.5 for r in range(len(rows))], [name for name, _ in rows])
        axes.set_xticks([c * 9 + 3.5 for c in range(10)], [str(c) for c in range(10)])
        axes.set(xlabel="sample (class for the conditional rows)", title="Samples (seed 0, temperature 1)")
        axes.grid(False)
        ctx.save_figure(
            fig,
            "samples",
            "Samples from the likelihood-trained arms and, where it ran, from the class-conditional "
            "TarFlow (sigma-noise training) at guidance weights w, before and after denoising.",
        )

        if config.conditional:
            fig, ax = new_figure(width=4.4)
            ws = list(config.guidance_weights)
            for tag, style in (("raw", "--"), ("denoised", "-")):
                vals = [[o.metrics["tarflow"][f"cond/sample_acc_w{w:g}_{tag}"] for w in ws] for o in outcomes]
                plot_band(ax, ws, vals, label=f"samples, {tag}", color=OURS_COLOR, linestyle=style)
            real = statistics.fmean(o.metrics["tarflow"]["cond/clf_real_test_acc"] for o in outcomes)
            ax.axhline(real, color=PALETTE[5], linewidth=1, label="real test digits")
            ax.set(
                xlabel="guidance weight w",
                ylabel="classifier accuracy on samples",
                title="Guidance and denoising",
            )
            ax.legend()
            ctx.save_figure(
                fig,
                "guidance",
                "Accuracy of a logistic-regression digit classifier (trained on real digits) on "
                "class-conditional TarFlow samples versus guidance weight, with and without "
                "the Tweedie denoising step.",
            )

    def _lead_figure(
        self, config: TarFlowCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        """TarFlow minus coupling test bits/dim per training-set size, paired intervals (logged)."""
        if not outcomes or any(not o.items for o in outcomes):
            return
        from icml25.core.plotting import OURS_COLOR, new_figure

        rows = lead_by_size(config, outcomes)
        fig, ax = new_figure(width=4.4)
        xs = [r["n_images"] for r in rows]
        ys = [r["lead"] for r in rows]
        # (clipped at 0: a zero-width interval can come out a rounding error below its estimate)
        err = [
            [max(0.0, r["lead"] - r["low"]) for r in rows],
            [max(0.0, r["high"] - r["lead"]) for r in rows],
        ]
        ax.errorbar(xs, ys, yerr=err, marker="o", color=OURS_COLOR, capsize=3)
        ax.axhline(0.0, color="grey", linewidth=1)
        ax.set_xscale("log")
        ax.set_xticks(xs, [f"{int(x):,}" for x in xs])  # the sizes themselves, no crowded minor labels
        ax.minorticks_off()
        ax.set(
            xlabel="training images",
            ylabel="TarFlow - coupling test bits/dim",
            title="The coupling flow's lead by data size",
        )
        text = "; ".join(
            f"{r['subset']} ({int(r['n_images'])} images): {r['lead']:+.3f} "
            f"[{r['low']:+.3f}, {r['high']:+.3f}]"
            for r in rows
        )
        ctx.log(f"lead (TarFlow minus coupling test bits/dim, 95% paired CI) by size: {text}")
        ctx.save_figure(
            fig,
            "lead_by_size",
            "TarFlow minus coupling test bits/dim (above 0: the coupling flow is ahead) at each training-set "
            "size, with 95 % paired cluster-bootstrap intervals over seeds and test digits: " + text + ".",
        )


def lead_by_size(config: TarFlowCheckConfig, outcomes: Sequence[SeedOutcome]) -> list[dict[str, Any]]:
    """Per training-set size: TarFlow minus coupling mean test bits/dim with its 95 % paired interval
    (the same two-stage cluster bootstrap, seeds then test digits, as the criteria)."""
    from icml25.core.stats import cluster_bootstrap_interval

    rows = []
    for subset in config.subsets:
        tf, cp = PAIRS[subset]
        ci = cluster_bootstrap_interval(
            [o.items[tf]["test_bpd"] for o in outcomes], [o.items[cp]["test_bpd"] for o in outcomes]
        )
        n = statistics.fmean(o.metrics[tf]["n_train_images"] for o in outcomes)
        rows.append({"subset": subset, "n_images": n, "lead": ci.estimate, "low": ci.low, "high": ci.high})
    return rows


CHECK = TarFlowCheck()

__all__ = ["CHECK", "CLAIM", "TarFlowCheck", "TarFlowCheckConfig", "lead_by_size"]
