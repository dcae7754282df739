"""Claim check for *Adapting to Evolving Adversaries with Regularized Continual Robust Training*
(Dai, Cianfarani, Bhagoji, Sehwag, Mittal; ICML 2025; https://arxiv.org/abs/2502.04248).

The paper's claim: adding the adversarial logit-distance regulariser (ALR) to the initial adversarial
training and to every fine-tuning stage of continual robust training (CRT) gives higher union and
average robust accuracy on the attacks seen so far, better robustness to attacks not yet seen, and
less forgetting, at little extra training time. Here: scikit-learn's 8x8 digits, a small CNN, and
attacks arriving in the order l2 -> SpatialFlow -> l_inf -> ReColor1D, with an AffineWarp attack
that is never trained on.

Arms (same data split, same initial weights per seed):
    crt_alr      ours: ALR (1 ascent step, first gradient at the unclipped start as in the official
                 code), weight lam from ``lam_grid`` chosen on validation, the same lam when fine-tuning
    crt          CRT without regulariser (stage 0 l2 adversarial training, then Croce fine-tuning)
    crt_ur       CRT with the uniform-noise logit regulariser (sigma = 2 eps_l2), lam as for crt_alr
    scratch_max  trained from scratch on the worst of all four attacks (MAX), evaluated at the end
References (what no robust training / no adaptation scores; never baselines to beat):
    standard     the same CNN trained on clean images only (stage-0 schedule); with ``calibrate`` it
                 also carries the calibration rule's measurements
    no_adapt     plain CRT's stage-0 model, never fine-tuned

Equal effort: every CRT arm trains ``len(lam_grid)`` stage-0 candidates and keeps the one with the
best union (clean and l2) accuracy on a validation split (:func:`icml25.core.tuning.best_on_validation`):
the regularised arms one per weight in ``lam_grid`` (0.5, 0.1, 0.02: of the paper's weights, 1
collapsed the CNN on 8x8 digits and 0.5 cost 6.6 points of clean accuracy; eps_l2 is about 19 % of a
digit's norm against about 1.7 % for CIFAR at the paper's eps), plain CRT one per data-order seed
(it has no weight, so it gets the same number of validation-chosen restarts). Every arm then gets
the same fine-tuning learning-rate sweep (``ft_lrs``), chosen on validation at stage 1 and reused
later. Test points never choose.

At ``small`` the sweep is not rerun per seed: the small preset fixes lam = 0.1 (both regularised
arms) and the fine-tuning rate 0.005, which is what the validation sweeps above chose in run
20261205T162027865522Z-d6d1d4 (3 seeds: ALR picked 0.1 on every seed, UR on 2 of 3, every arm and
seed picked lr 0.005; validation digits only). Every arm then trains one stage-0 model (plain CRT
no longer keeps the best of three data orders either), so the arms still get the same effort.
Changed after seeing that run, because the sweep was 9 of the 12 stage-0 trainings per seed and
the time it took is spent on 5 seeds instead of 3 (two supporting criteria were undetermined at 3
seeds). The sweep runs at ``full`` and whenever ``lam_grid``/``ft_lrs`` hold several values. The
gradient-masking controls (PGD budget curve, square search) run on the gated arm only at small
(``masking_arms``; plain CRT's are informational and run at ``full``).

Fine-tuning at small lasts 8 epochs per stage (``ft_epochs``; the paper fine-tunes for 10-25, our
protocol specified 8, and small used 4 to save time). Changed after seeing run
20261206T032046602264Z-93074a (the design above at 4 epochs, 5 seeds), where the gate
``fine_tuning_adapts`` failed (plain CRT gained 4.6 points on each newly arrived attack over the
never-adapted model, against the declared 5; it was 5.06 with the per-seed sweep): 4 epochs at lr
0.005 barely adapt, and the protocol's 8 fit the time that the fixed sweep freed. The gate's
threshold is unchanged.

Gates (small scale; point conditions under which the accuracies can be read):
    crt_beats_standard   plain CRT's seen-union accuracy over fine-tuning exceeds the standard
                         model's by at least ``min_floor_gap`` (robust training learned something)
    fine_tuning_adapts   plain CRT's accuracy on each newly arrived attack after its stage exceeds
                         the never-adapted model's by at least ``min_adapt_gap`` on average (there is
                         something to adapt to)
    pgd_reaches_zero     l_inf PGD at the largest budget of the curve leaves <= ``max_large_eps_acc``
                         (worst seed) of ours
    no_masking           a gradient-free square search is not stronger than PGD by > ``max_square_gap``

Criteria (declared before any small-scale number of this design was seen). The arm-vs-arm ones are
paired: a two-stage bootstrap over seeds and the test digits (per-digit scores of the same digits in
every arm); ``holds`` when the 95 % interval excludes 0 in the claimed direction, ``fails`` when it
excludes the smallest effect of interest.
    union_seen_gain      headline; crt_alr's seen-union accuracy, averaged over the fine-tuning
                         stages, above crt's; smallest effect ``effect`` (2 points)
    unforeseen_stage0    after stage 0, crt_alr's mean accuracy on the 4 attacks not yet trained on
                         above crt's; smallest effect 2 points
    keeps_previous       after each fine-tuning stage, crt_alr's union accuracy over the attacks
                         known *before* that stage (the previous ones), mean of the 3 stages, above
                         crt's; smallest effect 2 points (restated, see below)
    clean_cost           non-inferiority of crt_alr's final clean accuracy to crt's, margin
                         ``max_clean_drop`` (a declared 3 points: "little cost in clean accuracy")
    beats_ur             crt_alr's seen-union accuracy over fine-tuning above crt_ur's; 2 points
    time_overhead        crt_alr's training cost per image in forward-pass units (backward = 2
                         forwards, counted by a hook) at the paper's ``paper_train_steps`` = 10 attack
                         steps, over crt's: <= ``max_time_ratio`` (a declared 1.4: "little extra time")
The 2-point smallest effect is declared (the paper's table values were not recoverable; 2 points of
540 test digits is about 11 digits, the smallest gain we would call an improvement). One-step ALR
costs a fixed 10 pass units per image on top of 3(k+1) for k-step PGD training, so the ratio is
1.56 at this check's k = 5 (reported as ``cost_ratio_run``) and 1.30 at the paper's k = 10; the
wall-clock ratio of stage 0 (``init_time_ratio``) is reported but is not a criterion.

Restated after seeing run 20261205T162027865522Z-d6d1d4: the supporting criterion
``less_forgetting`` (crt_alr's drop in l2 accuracy from stage 0 to stage 3 below crt's) came from
our own planning notes, not from the paper. The paper claims that regularisation helps
"maintain robustness against previous attacks" while fine-tuning on new ones and reports it as
robust accuracy after fine-tuning, not as a drop from stage 0; and in our setup no arm loses l2
accuracy (Croce fine-tuning keeps sampling l2: plain CRT's l2 accuracy rose by 1.9 points), so the
drop measured no forgetting at all. ``keeps_previous`` states the paper's claim; the l2 drop is
still reported (metric ``l2_drop``) but judges nothing.

Outcome at small before this design (3 seeds, 2026-12-04, 303 s on a loaded machine): not reproduced,
with lam = 0.5 (lam = 1 collapsed both regularised arms), an every-seed rule on the union gain and a
wall-clock time ratio at 5-step attacks (1.50 > 1.4). With the per-seed sweep (3 seeds, run
20261205T162027865522Z-d6d1d4, 373 s alone): not reproduced; the headline held (+0.027
[+0.009, +0.042]), ``less_forgetting`` failed, ``unforeseen_stage0`` and ``beats_ur`` were
undetermined. This design (5 seeds, run 20261206T034113999729Z-75b589, about 340 s of CPU on a
loaded machine): all gates pass, the headline holds (+0.043 [+0.013, +0.083]), keeps_previous,
beats_ur, clean_cost and time_overhead hold, ``unforeseen_stage0`` stays undetermined (+0.032
[-0.010, +0.091]; about 2.5 times the seeds would resolve it), so the verdict is inconclusive.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields

from .attacks import (
    L2PGD,
    AffineWarp,
    LinfPGD,
    NoAttack,
    ReColor1D,
    SpatialFlow,
    ThreatModel,
    attack,
    square_attack,
)
from .data import SmallCNN, load_digits_tensors
from .regularizers import AdversarialLogitReg, UniformNoiseReg
from .training import Procedure, StageConfig, robust_eval, train_stage, union_accuracy

CRT_ARMS = ("crt_alr", "crt", "crt_ur")
SEQUENCE = ("l2", "flow", "linf", "recolor")
HELDOUT = "affine"
REFERENCES = ("standard", "no_adapt")

#: smallest effect of interest on an accuracy difference (fraction of test digits)
EFFECT_SOURCE = (
    "declared: 2 points of accuracy (about 11 of 540 test digits), the smallest gain we would call an "
    "improvement; the paper's table values were not recoverable"
)
CLEAN_SOURCE = "declared: 3 points, the paper's 'little cost in clean accuracy' as a number"


@dataclass(frozen=True)
class CRTCheckConfig:
    """Data, model, attack budgets, the training protocol, the sweep and the criteria thresholds."""

    n_train: int = 1257
    val_size: int = 200
    n_test: int = 540
    widths: tuple[int, int] = (16, 32)
    hidden: int = 64
    eps_l2: float = 0.75
    eps_flow: float = 0.25
    eps_linf: float = 0.15
    eps_recolor: float = 0.4
    eps_affine: float = 1.0
    batch_size: int = 32
    init_epochs: int = 12
    init_lr: float = 0.05
    ft_epochs: int = 4
    ft_lrs: tuple[float, ...] = (0.005, 0.02)
    train_steps: int = 5
    eval_steps: int = 10
    lam_grid: tuple[float, ...] = (0.5, 0.1, 0.02)
    lam_ft: float | None = None
    reg_steps: int = 1
    alr_clip_start: bool = False
    ur_sigma_factor: float = 2.0
    procedure: Procedure = "croce"
    scratch: bool = False
    scratch_epochs: int = 12
    calibrate: bool = False
    curve_eps: tuple[float, ...] = (0.05, 0.1, 0.15, 0.25, 0.5)
    square_queries: int = 300
    masking_arms: tuple[str, ...] = ("crt_alr",)
    paper_train_steps: int = 10
    probe_batches: int = 2
    effect: float = 0.02
    max_clean_drop: float = 0.03
    max_time_ratio: float = 1.4
    min_floor_gap: float = 0.1
    min_adapt_gap: float = 0.05
    max_large_eps_acc: float = 0.05
    max_square_gap: float = 0.05
    calib_max_standard: float = 0.25
    calib_min_trained: float = 0.5

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "n_train",
                "val_size",
                "n_test",
                "hidden",
                "batch_size",
                "init_epochs",
                "ft_epochs",
                "train_steps",
                "eval_steps",
                "reg_steps",
                "scratch_epochs",
                "square_queries",
                "paper_train_steps",
                "probe_batches",
            ),
            positive=(
                "eps_l2",
                "eps_flow",
                "eps_linf",
                "eps_recolor",
                "eps_affine",
                "init_lr",
                "ur_sigma_factor",
                "max_time_ratio",
                "effect",
                "max_clean_drop",
            ),
            non_negative=("min_floor_gap", "min_adapt_gap", "max_large_eps_acc", "max_square_gap"),
        )
        if self.val_size >= self.n_train:
            raise ValueError(f"CRTCheckConfig.val_size must be below n_train, got {self.val_size}")
        if not self.ft_lrs or any(not (isinstance(v, float) and v > 0) for v in self.ft_lrs):
            raise ValueError(f"CRTCheckConfig.ft_lrs must be positive floats, got {self.ft_lrs}")
        if not self.lam_grid or any(not (isinstance(v, float) and v > 0) for v in self.lam_grid):
            raise ValueError(f"CRTCheckConfig.lam_grid must be positive floats, got {self.lam_grid}")
        if len(set(self.lam_grid)) != len(self.lam_grid):
            raise ValueError(f"CRTCheckConfig.lam_grid must not repeat a weight, got {self.lam_grid}")
        if self.lam_ft is not None and not (isinstance(self.lam_ft, float) and self.lam_ft >= 0):
            raise ValueError(f"CRTCheckConfig.lam_ft must be None or a float >= 0, got {self.lam_ft}")
        if not self.curve_eps or any(v <= 0 for v in self.curve_eps):
            raise ValueError(f"CRTCheckConfig.curve_eps must be positive, got {self.curve_eps}")
        if "crt_alr" not in self.masking_arms or any(a not in CRT_ARMS for a in self.masking_arms):
            raise ValueError(
                f"CRTCheckConfig.masking_arms must be CRT arms including crt_alr, got {self.masking_arms}"
            )
        if self.procedure not in ("single", "croce", "avg", "max", "random"):
            raise ValueError(f"CRTCheckConfig.procedure must be a training procedure, got {self.procedure!r}")

    def attacks(self) -> dict[str, ThreatModel]:
        return {
            "l2": L2PGD(self.eps_l2),
            "flow": SpatialFlow(self.eps_flow),
            "linf": LinfPGD(self.eps_linf),
            "recolor": ReColor1D(self.eps_recolor),
            HELDOUT: AffineWarp(self.eps_affine),
        }


def _paired(name: str, metric: str, op: Any, other: str, description: str, cfg: CRTCheckConfig) -> Criterion:
    return Criterion(
        name,
        arm="crt_alr",
        metric=metric,
        op=op,
        other_arm=other,
        smallest_effect=cfg.effect,
        effect_source=EFFECT_SOURCE,
        description=description,
    )


def _criteria(cfg: CRTCheckConfig) -> tuple[Criterion, ...]:
    return (
        _paired(
            "union_seen_gain",
            "ft_union_seen",
            ">",
            "crt",
            "union accuracy over seen attacks, mean of the 3 fine-tuning stages, above plain CRT",
            cfg,
        ),
        _paired(
            "unforeseen_stage0",
            "s0_unforeseen",
            ">",
            "crt",
            "after l2 training, mean accuracy on the 4 attacks not trained on, above plain CRT",
            cfg,
        ),
        _paired(
            "keeps_previous",
            "ft_union_prev",
            ">",
            "crt",
            "union accuracy over the attacks known before each fine-tuning stage, after that stage, mean of "
            "the 3 stages, above plain CRT (the paper's 'maintain robustness against previous attacks')",
            cfg,
        ),
        Criterion(
            "clean_cost",
            arm="crt_alr",
            metric="final_clean",
            op=">",
            other_arm="crt",
            smallest_effect=cfg.max_clean_drop,
            effect_source=CLEAN_SOURCE,
            comparison="non_inferiority",
            description="final clean accuracy not more than the margin below plain CRT's",
        ),
        _paired(
            "beats_ur",
            "ft_union_seen",
            ">",
            "crt_ur",
            "seen-union accuracy over fine-tuning above the uniform-noise regulariser",
            cfg,
        ),
        Criterion(
            "time_overhead",
            arm="crt_alr",
            metric="cost_ratio",
            op="<=",
            threshold=cfg.max_time_ratio,
            reduce="max",
            description=(
                f"training cost per image in forward-pass units at {cfg.paper_train_steps} attack steps "
                "(the paper's), relative to plain CRT (1-step ALR)"
            ),
        ),
        Criterion(
            "tiny_in_budget",
            arm="crt_alr",
            metric="budget_violations",
            op="<=",
            threshold=0.0,
            scales=("tiny",),
            description="every attack output stays in its threat model and in [0, 1]",
        ),
        Criterion(
            "tiny_alr_finite",
            arm="crt_alr",
            metric="alr_nonneg_finite",
            op=">=",
            threshold=1.0,
            scales=("tiny",),
            description="the ALR value is finite and non-negative",
        ),
        Criterion(
            "tiny_union_order",
            arm="crt_alr",
            metric="union_order_ok",
            op=">=",
            threshold=1.0,
            scales=("tiny",),
            description="union <= min per-attack accuracy <= clean accuracy at every stage",
        ),
        Criterion(
            "tiny_ft_changes",
            arm="crt_alr",
            metric="ft_weight_change",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="a fine-tuning stage changes the weights",
        ),
    )


def _gates(cfg: CRTCheckConfig) -> tuple[Criterion, ...]:
    return (
        Criterion(
            "crt_beats_standard",
            arm="crt",
            metric="ft_union_over_standard",
            op=">=",
            threshold=cfg.min_floor_gap,
            description="plain CRT's seen-union accuracy over fine-tuning minus the standard model's",
        ),
        Criterion(
            "fine_tuning_adapts",
            arm="crt",
            metric="new_attack_gain",
            op=">=",
            threshold=cfg.min_adapt_gap,
            description=(
                "plain CRT's accuracy on each newly arrived attack after its stage minus the never-adapted "
                "model's, mean over the 3 fine-tuning stages"
            ),
        ),
        Criterion(
            "pgd_reaches_zero",
            arm="crt_alr",
            metric="pgd_large_eps_acc",
            op="<=",
            threshold=cfg.max_large_eps_acc,
            reduce="max",
            description="gradient-masking control: l_inf PGD accuracy at the largest budget of the curve",
        ),
        Criterion(
            "no_masking",
            arm="crt_alr",
            metric="square_gap",
            op="<=",
            threshold=cfg.max_square_gap,
            reduce="max",
            description="PGD accuracy minus gradient-free square-search accuracy (l_inf)",
        ),
    )


CLAIM = Claim(
    statement=(
        "Regularising the logit distance between clean and attacked inputs (ALR) during initial adversarial "
        "training and each fine-tuning stage of continual robust training gives higher union robust accuracy "
        "on the attacks seen so far, higher accuracy on attacks not yet seen and less forgetting than "
        "unregularised continual fine-tuning, at little cost in clean accuracy and training time."
    ),
    source=(
        "Abstract; Sec. 3 (logit-distance bound), Sec. 5 (Fig. 1, tables of initial training and fine-tuning)"
    ),
    ours="crt_alr",
    baselines=("crt", "crt_ur", "scratch_max"),
    references=REFERENCES,
    criteria=_criteria(CRTCheckConfig()),
    gates=_gates(CRTCheckConfig()),
    headline="union_seen_gain",
    min_seeds=3,
    setup_notes=(
        "scikit-learn digits (8x8, 1057 train / 200 validation / 540 test), a 2-conv CNN (16/32 "
        "channels), attacks l2 (eps 0.75) -> SpatialFlow (0.25 px) -> l_inf (0.15) -> ReColor1D (0.4), "
        "AffineWarp (1 px) held out; stage 0: 12 epochs SGD batch 32 lr 0.05 cosine, 5-step PGD, "
        "regulariser weight 0.1 for ALR and UR (the choice of a validation sweep over 0.5 / 0.1 / 0.02 with "
        "equal candidates per arm in an earlier run; the sweep itself runs at full); stages 1-3: 8 epochs "
        "Croce fine-tuning with the same weight, lr 0.005 (likewise chosen on validation from {0.005, "
        "0.02}); evaluation 10-step PGD; 5 seeds; the MAX-from-scratch baseline only at tiny and full. "
        "The paper uses CIFAR-10/100 and ImageNette with "
        "WRN-28-10/ResNet-18, 100 epochs of training, 10-25 of fine-tuning, lambda 1 / 0.5 and the original "
        "StAdv/ReColorAdv/UAR attacks."
    ),
    timed_metrics=("init_time_ratio", "epoch_s_*", "train_s*", "scratch_time_ratio"),
)


def stage0_candidates(cfg: CRTCheckConfig, seed: int) -> dict[str, list[tuple[float, int]]]:
    """Each CRT arm's stage-0 sweep as ``(regulariser weight, data-order seed)`` pairs, one per entry of
    ``lam_grid``: the regularised arms try every weight, plain CRT (no weight) as many data orders, so
    every arm keeps the validation-best of the same number of trainings."""
    return {
        "crt": [(0.0, seed + 7919 * i) for i in range(len(cfg.lam_grid))],
        "crt_alr": [(lam, seed) for lam in cfg.lam_grid],
        "crt_ur": [(lam, seed) for lam in cfg.lam_grid],
    }


def _union_order_ok(ev: dict[str, Any], names: Sequence[str]) -> bool:
    union = union_accuracy(ev["correct"], names)
    low = min(ev["per_attack"][n] for n in names)
    return union <= low + 1e-9 and union <= ev["clean"] + 1e-9


def _union_items(ev: dict[str, Any], names: Sequence[str]) -> np.ndarray:
    """Per test digit: correct on the clean input and under every attack in ``names`` (0/1)."""
    mask = ev["correct"]["clean"].clone()
    for n in names:
        mask &= ev["correct"][n]
    return mask.numpy().astype(float)


def _stage_items(evs: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The per-digit scores behind the paired criteria, from one arm's evaluation after each stage."""
    last = len(evs) - 1

    def correct(t: int, name: str) -> np.ndarray:
        return evs[t]["correct"][name].numpy().astype(float)

    return {
        "ft_union_seen": np.mean(
            [_union_items(evs[t], SEQUENCE[: t + 1]) for t in range(1, len(evs))], axis=0
        ),
        "s0_unforeseen": np.mean([correct(0, n) for n in (*SEQUENCE[1:], HELDOUT)], axis=0),
        "ft_union_prev": np.mean([_union_items(evs[t], SEQUENCE[:t]) for t in range(1, len(evs))], axis=0),
        "l2_drop": correct(0, "l2") - correct(last, "l2"),
        "final_clean": correct(last, "clean"),
    }


class CRTCheck(ClaimCheck[CRTCheckConfig]):
    slug = "continual_robust_training"
    claim = CLAIM

    def claim_for(self, config: CRTCheckConfig) -> Claim:
        """Thresholds come from the config."""
        return dataclasses.replace(CLAIM, criteria=_criteria(config), gates=_gates(config))

    presets = {
        "tiny": CRTCheckConfig(
            scratch=True,
            n_train=300,
            val_size=60,
            batch_size=32,
            n_test=100,
            widths=(8, 16),
            hidden=32,
            init_epochs=2,
            ft_epochs=1,
            ft_lrs=(0.01,),
            lam_grid=(0.5,),
            train_steps=2,
            eval_steps=3,
            scratch_epochs=1,
            curve_eps=(0.1, 0.5),
            square_queries=20,
            paper_train_steps=3,
            probe_batches=1,
        ),
        # one validation-chosen stage-0 weight and fine-tuning rate (see the module docstring)
        "small": CRTCheckConfig(lam_grid=(0.1,), ft_lrs=(0.005,), ft_epochs=8),
        "full": CRTCheckConfig(
            widths=(32, 64),
            hidden=128,
            batch_size=128,
            init_epochs=30,
            ft_epochs=8,
            train_steps=10,
            eval_steps=20,
            lam_grid=(1.0, 0.5, 0.1, 0.02),
            scratch_epochs=30,
            square_queries=1000,
            masking_arms=("crt_alr", "crt"),
            scratch=True,
            calibrate=True,
        ),
    }
    default_seeds = {"tiny": 1, "small": 5, "full": 5}

    def run_seed(self, config: CRTCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        cfg = config
        xtr, ytr, xte, yte = load_digits_tensors(seed, n_train=cfg.n_train)
        perm = torch.randperm(len(xtr), generator=torch.Generator().manual_seed(seed))
        xval, yval = xtr[perm[: cfg.val_size]], ytr[perm[: cfg.val_size]]
        xtr, ytr = xtr[perm[cfg.val_size :]], ytr[perm[cfg.val_size :]]
        xte, yte = xte[: cfg.n_test], yte[: cfg.n_test]
        atk = cfg.attacks()
        seq = [atk[n] for n in SEQUENCE]

        def new_model() -> nn.Module:
            torch.manual_seed(seed)
            return SmallCNN(widths=cfg.widths, hidden=cfg.hidden)

        def evaluate(
            model: nn.Module, x: Tensor, y: Tensor, names: Sequence[str] = tuple(atk)
        ) -> dict[str, Any]:
            return robust_eval(model, x, y, {n: atk[n] for n in names}, steps=cfg.eval_steps, seed=seed)

        def alr(tm: ThreatModel) -> AdversarialLogitReg:
            return AdversarialLogitReg(tm, steps=cfg.reg_steps, clip_start=cfg.alr_clip_start)

        def ur(tm: ThreatModel) -> UniformNoiseReg:
            return UniformNoiseReg(cfg.ur_sigma_factor * cfg.eps_l2)

        regs: dict[str, Callable[[ThreatModel], Any] | None] = {"crt": None, "crt_alr": alr, "crt_ur": ur}
        n_cand = len(cfg.lam_grid)
        candidates = stage0_candidates(cfg, seed)
        metrics: dict[str, dict[str, float]] = {a: {} for a in (*CRT_ARMS, "scratch_max", *REFERENCES)}
        items: dict[str, dict[str, np.ndarray]] = {}
        series: dict[str, Any] = {
            "stage_union_seen": {},
            "stage_next": {},
            "curve_eps": list(cfg.curve_eps),
            "curve": {},
            "lr_ft": {},
            "lam": {},
            "stage0_val": {},
        }
        evals: dict[str, list[dict[str, Any]]] = {}
        models: dict[str, nn.Module] = {}
        stage0_models: dict[str, nn.Module] = {}
        total = len(CRT_ARMS) * 4 + 4
        done = 0
        for arm in CRT_ARMS:
            reg = regs[arm]
            ctx.progress(f"{arm} stage 0 ({n_cand} candidates)", done, total)
            stage0: dict[int, tuple[nn.Module, dict[str, Any], float]] = {}
            for i, (lam, order_seed) in enumerate(candidates[arm]):
                m0 = new_model()
                init = StageConfig(
                    epochs=cfg.init_epochs,
                    lr=cfg.init_lr,
                    batch_size=cfg.batch_size,
                    schedule="cosine",
                    steps=cfg.train_steps,
                    lam=lam,
                    procedure="single",
                )
                r0 = train_stage(m0, xtr, ytr, seq[:1], init, reg=reg, seed=order_seed)
                val0 = union_accuracy(evaluate(m0, xval, yval, SEQUENCE[:1])["correct"], SEQUENCE[:1])
                stage0[i] = (m0, r0, val0)
            best = best_on_validation(stage0, score=lambda run: -run[2])
            model, rec, _ = stage0[best]
            lam0 = candidates[arm][best][0]
            lam_ft = (lam0 if cfg.lam_ft is None else cfg.lam_ft) if reg is not None else 0.0
            metrics[arm]["lam_init"] = lam0
            metrics[arm]["lam_ft"] = lam_ft
            metrics[arm]["stage0_choice"] = float(best)
            series["lam"][arm] = [lam0, lam_ft]
            series["stage0_val"][arm] = [stage0[i][2] for i in range(n_cand)]
            metrics[arm]["epoch_s_init"] = rec["seconds_per_epoch"]
            metrics[arm]["units_per_image_run"] = rec["pass_units_per_image"]
            stage0_models[arm] = copy.deepcopy(model)
            train_s = rec["seconds"]
            evs = [evaluate(model, xte, yte)]
            done += 1
            lr_ft = cfg.ft_lrs[0]
            ft_seconds = []
            for t in range(1, len(seq)):
                ctx.progress(f"{arm} stage {t}", done, total)

                def stage(
                    m: nn.Module, lr: float, t: int = t, reg: Any = reg, lam_ft: float = lam_ft
                ) -> tuple[nn.Module, dict[str, Any]]:
                    ft = StageConfig(
                        epochs=cfg.ft_epochs,
                        lr=lr,
                        batch_size=cfg.batch_size,
                        schedule="constant",
                        steps=cfg.train_steps,
                        lam=lam_ft,
                        procedure=cfg.procedure,
                    )
                    r = train_stage(m, xtr, ytr, seq[: t + 1], ft, reg=reg, seed=seed + 1000 * t)
                    return m, r

                if t == 1:
                    before = [p.detach().clone() for p in model.parameters()]
                    runs = {}
                    for lr in cfg.ft_lrs:
                        m_lr, r_lr = stage(copy.deepcopy(model), lr)
                        val = union_accuracy(
                            evaluate(m_lr, xval, yval, SEQUENCE[:2])["correct"], SEQUENCE[:2]
                        )
                        runs[lr] = (m_lr, r_lr, val)
                    lr_ft = best_on_validation(runs, score=lambda run: -run[2])
                    model, r, _ = runs[lr_ft]
                    metrics[arm]["ft_weight_change"] = float(
                        sum(
                            (p.detach() - b).abs().sum()
                            for p, b in zip(model.parameters(), before, strict=True)
                        )
                    )
                else:
                    model, r = stage(model, lr_ft)
                ft_seconds.append(r["seconds_per_epoch"])
                train_s += r["seconds"]
                evs.append(evaluate(model, xte, yte))
                done += 1
            metrics[arm]["epoch_s_ft"] = float(np.mean(ft_seconds))
            metrics[arm]["train_s"] = train_s
            metrics[arm]["lr_ft"] = lr_ft
            series["lr_ft"][arm] = lr_ft
            evals[arm] = evs
            models[arm] = model
        evals["no_adapt"] = [evals["crt"][0]] * len(seq)  # the unregularised stage-0 model, never adapted

        # reference: a standard (clean-trained) model with the stage-0 schedule
        ctx.progress("standard reference", done, total)
        std = new_model()
        std_cfg = StageConfig(
            epochs=cfg.init_epochs,
            lr=cfg.init_lr,
            batch_size=cfg.batch_size,
            schedule="cosine",
            steps=1,
            procedure="single",
        )
        train_stage(std, xtr, ytr, [NoAttack()], std_cfg, seed=seed)
        evals["standard"] = [evaluate(std, xte, yte)] * len(seq)
        done += 1

        for arm, evs in evals.items():
            m = metrics[arm]
            for t, ev in enumerate(evs):
                seen = SEQUENCE[: t + 1]
                m[f"s{t}_clean"] = ev["clean"]
                for n, acc in ev["per_attack"].items():
                    m[f"s{t}_{n}"] = acc
                m[f"s{t}_union_seen"] = union_accuracy(ev["correct"], seen)
                m[f"s{t}_avg_seen"] = float(np.mean([ev["per_attack"][n] for n in seen]))
                m[f"s{t}_union_all"] = union_accuracy(ev["correct"], tuple(atk))
                if t + 1 < len(SEQUENCE):
                    m[f"s{t}_next"] = ev["per_attack"][SEQUENCE[t + 1]]
            items[arm] = _stage_items(evs)
            m.update({k: float(v.mean()) for k, v in items[arm].items()})
            m["ft_avg_seen"] = float(np.mean([m[f"s{t}_avg_seen"] for t in range(1, len(seq))]))
            m["unforeseen_next"] = float(np.mean([m[f"s{t}_next"] for t in range(len(seq) - 1)]))
            m["heldout_final"] = m[f"s{len(seq) - 1}_{HELDOUT}"]
            m["union_order_ok"] = float(
                all(_union_order_ok(ev, SEQUENCE[: t + 1]) for t, ev in enumerate(evs))
            )
            series["stage_union_seen"][arm] = [m[f"s{t}_union_seen"] for t in range(len(seq))]
            series["stage_next"][arm] = [m[f"s{t}_next"] for t in range(len(seq) - 1)]
        last = len(seq) - 1
        ours, base = metrics["crt_alr"], metrics["crt"]
        ours["ft_union_seen_gain"] = ours["ft_union_seen"] - base["ft_union_seen"]
        ours["clean_gap"] = base["final_clean"] - ours["final_clean"]
        ours["init_time_ratio"] = ours["epoch_s_init"] / base["epoch_s_init"]
        ours["cost_ratio_run"] = ours["units_per_image_run"] / base["units_per_image_run"]
        base["ft_union_over_standard"] = base["ft_union_seen"] - metrics["standard"]["ft_union_seen"]
        base["new_attack_gain"] = float(
            np.mean(
                [
                    base[f"s{t}_{SEQUENCE[t]}"] - metrics["no_adapt"][f"s{t}_{SEQUENCE[t]}"]
                    for t in range(1, len(seq))
                ]
            )
        )

        # training cost in forward-pass units at the paper's attack steps: a short probe per arm
        ctx.progress("cost probe", done, total)
        n_probe = min(len(xtr), cfg.probe_batches * cfg.batch_size)
        probe_units = {}
        for arm in CRT_ARMS:
            probe = StageConfig(
                epochs=1,
                lr=1e-4,
                batch_size=cfg.batch_size,
                steps=cfg.paper_train_steps,
                lam=metrics[arm]["lam_init"],
                procedure="single",
            )
            r = train_stage(
                copy.deepcopy(stage0_models[arm]), xtr[:n_probe], ytr[:n_probe], seq[:1], probe, reg=regs[arm]
            )
            probe_units[arm] = r["pass_units_per_image"]
            metrics[arm]["units_per_image"] = r["pass_units_per_image"]
        for arm in ("crt_alr", "crt_ur"):
            metrics[arm]["cost_ratio"] = probe_units[arm] / probe_units["crt"]

        # scratch baseline: the worst of all four sequence attacks per example, from random weights
        if cfg.scratch:
            ctx.progress("scratch_max", done, total)
            scratch = new_model()
            rec = train_stage(
                scratch,
                xtr,
                ytr,
                seq,
                StageConfig(
                    epochs=cfg.scratch_epochs,
                    lr=cfg.init_lr,
                    batch_size=cfg.batch_size,
                    schedule="cosine",
                    steps=cfg.train_steps,
                    procedure="max",
                ),
                seed=seed,
            )
            ev = evaluate(scratch, xte, yte)
            sm = metrics["scratch_max"]
            sm["train_s"] = rec["seconds"]
            sm["scratch_time_ratio"] = rec["seconds"] / ours["train_s"]
            sm[f"s{last}_clean"] = ev["clean"]
            sm["final_clean"] = ev["clean"]
            for n, acc in ev["per_attack"].items():
                sm[f"s{last}_{n}"] = acc
            sm[f"s{last}_union_seen"] = union_accuracy(ev["correct"], SEQUENCE)
            sm[f"s{last}_union_all"] = union_accuracy(ev["correct"], tuple(atk))
            sm[f"s{last}_avg_seen"] = float(np.mean([ev["per_attack"][n] for n in SEQUENCE]))
        done += 1

        # gradient-masking controls on the final CRT models
        ctx.progress("masking controls", done, total)
        gen = torch.Generator().manual_seed(seed)
        for arm in cfg.masking_arms:
            model = models[arm]
            curve = [
                robust_eval(model, xte, yte, {"linf": LinfPGD(e)}, steps=cfg.eval_steps, seed=seed)[
                    "per_attack"
                ]["linf"]
                for e in cfg.curve_eps
            ]
            series["curve"][arm] = curve
            metrics[arm]["pgd_large_eps_acc"] = curve[-1]
            with torch.no_grad():
                x_sq = square_attack(model, xte, yte, cfg.eps_linf, queries=cfg.square_queries, generator=gen)
                sq_acc = float((model(x_sq).argmax(1) == yte).float().mean())
            metrics[arm]["square_acc"] = sq_acc
            metrics[arm]["square_gap"] = metrics[arm][f"s{last}_linf"] - sq_acc
        done += 1

        # optional calibration rule on validation data: the standard model and one model per attack
        if cfg.calibrate:
            ctx.progress("calibration", done, total)
            std_ev = evaluate(std, xval, yval, SEQUENCE)
            cal = metrics["standard"]
            trained = {}
            for i, n in enumerate(SEQUENCE):
                m_at = new_model()
                at_cfg = dataclasses.replace(std_cfg, steps=cfg.train_steps)
                train_stage(m_at, xtr, ytr, [seq[i]], at_cfg, seed=seed)
                trained[n] = evaluate(m_at, xval, yval, (n,))["per_attack"][n]
                cal[f"calib_standard_{n}"] = std_ev["per_attack"][n]
                cal[f"calib_trained_{n}"] = trained[n]
            cal["calib_standard_max_acc"] = max(std_ev["per_attack"].values())
            cal["calib_trained_min_acc"] = min(trained.values())
            cal["calib_rule_holds"] = float(
                cal["calib_standard_max_acc"] < cfg.calib_max_standard
                and cal["calib_trained_min_acc"] >= cfg.calib_min_trained
            )

        # tiny smoke conditions: budgets, ALR value
        xb, yb = xte[:32], yte[:32]
        violations = 0
        for tm in atk.values():
            x_adv, params = attack(models["crt_alr"], xb, yb, tm, steps=2, generator=gen, return_params=True)  # type: ignore[misc]
            violations += int(not tm.contains(xb, x_adv, params))
        ours["budget_violations"] = float(violations)
        alr_value = float(alr(atk["l2"])(models["crt_alr"], xb, gen).detach())
        ours["alr_nonneg_finite"] = float(np.isfinite(alr_value) and alr_value >= 0)
        ctx.progress("done", total, total)
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def make_figures(self, config: CRTCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
        stages = list(range(len(SEQUENCE)))
        labels = ["l2", "+flow", "+linf", "+recolor"]
        for arm in (*CRT_ARMS, *REFERENCES):
            u = np.array([o.series["stage_union_seen"][arm] for o in outcomes])
            axes[0].errorbar(stages, u.mean(0), yerr=u.std(0), marker="o", capsize=3, label=arm)
            nx = np.array([o.series["stage_next"][arm] for o in outcomes])
            axes[1].errorbar(stages[:-1], nx.mean(0), yerr=nx.std(0), marker="o", capsize=3, label=arm)
        axes[0].set_xticks(stages, labels)
        axes[0].set(
            xlabel="stage (attacks seen)",
            ylabel="union accuracy over seen attacks",
            title="seen union (test)",
        )
        axes[1].set_xticks(stages[:-1], ["flow", "linf", "recolor"])
        axes[1].set(
            xlabel="attack not yet seen", ylabel="robust accuracy", title="before each attack arrives"
        )
        eps = outcomes[0].series["curve_eps"]
        for arm in outcomes[0].series["curve"]:
            c = np.array([o.series["curve"][arm] for o in outcomes])
            axes[2].errorbar(eps, c.mean(0), yerr=c.std(0), marker="o", capsize=3, label=arm)
        axes[2].set(xlabel="l_inf budget", ylabel="PGD accuracy", title="final models: accuracy vs budget")
        for ax in axes:
            ax.legend(fontsize=7)
            ax.grid(alpha=0.3)
        ctx.save_figure(
            fig,
            "crt_stages",
            "Left: union accuracy over the attacks seen so far after each stage (mean +- std over seeds). "
            "Middle: accuracy on the next attack before it is trained on. Right: l_inf PGD accuracy of the "
            "final models against the budget (a gradient-masking control: it should reach ~0).",
        )


CHECK = CRTCheck()
