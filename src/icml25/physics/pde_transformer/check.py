"""Claim check for *PDE-Transformer: Efficient and Versatile Transformers for Physics Simulations*
(Holzschuh et al., ICML 2025, https://arxiv.org/abs/2505.24717).

Reproduces, at toy scale, the first part of the paper's experiments: the comparison with
computer-vision backbones (DiT, U-DiT, UNet, scOT, FactFormer) on its 16-PDE pre-training set. Its
headline (abstract, project page, official `docs/pretrained-weights.md`): at matched size the
multi-scale, shifted-window PDE-Transformer beats such backbones on one-step and rollout nRMSE across
many PDE families trained jointly, at a lower training cost. Here: 4 families simulated in-package
(:mod:`icml25.data.pde`), one mixed-channel PDE-Transformer and one DiT with parameter counts within
10 %, trained jointly on the same data with the same optimiser and batches, and compared on held-out
trajectories.

Arms:
    pde_transformer  MC PDE-Transformer (D = 32, 2 heads, patch 4, depths [2,2,2,2,2], CPB hidden 64:
                     our "tiny" shape, 1.57M parameters; window 2 at small scale, the largest
                     window a 32^2 grid admits with two down-sampling levels)
    dit              DiT (global attention, patch 4, adaLN-Zero, sin-cos positions), depth 5 and the
                     width whose parameter count is closest to the PDE-Transformer's; the same number
                     of optimiser steps as the PDE-Transformer (equal steps)
    dit_equal_flops  the same DiT trained for the same number of training FLOPs as the
                     PDE-Transformer: steps = round(steps x F_pdet / F_dit), F = the forward + backward
                     FLOPs of one sample counted by FlopCounterMode (:func:`train_flops_per_sample`;
                     0.11 vs 0.41 GFLOP at 32^2, so ~165 DiT steps against 600), warm-up scaled alike
References (issue 41; never baselines to beat, scored on the same validation and test data):
    copy_input       the next state is the current one: what a surrogate that learned nothing scores
    damping          a_f * x with one factor per family fitted by least squares on the train pairs:
                     the best "scale the input" map, a floor for a model that learned no spatial
                     structure

Protocol: every arm is trained at every learning rate of ``lrs`` on seed ``sweep_seed`` (0) with its
full budget, and the rate with the lowest validation 1-step nRMSE (mean over families, on ``n_val``
validation trajectories per family simulated apart from train and test) is chosen per arm; every seed
then trains each arm at its chosen rate (the seed-0 runs of the sweep are the seed-0 results). Only the
chosen rate of each arm is scored on the test split. The same grid and selection for every arm = equal
effort. ``sweep_each_seed = True`` (off in every preset) makes every seed sweep the grid on its own
validation split instead.

Gates (issue 41, declared before any small-scale number of this design was seen): the PDE-Transformer
and the equal-steps DiT each reach a validation 1-step nRMSE at most 0.9x that of copying the input
(mean over seeds). The previous design failed this silently: on its own test data copying scored a
1-step nRMSE of 0.084, the equal-steps DiT 0.083, the PDE-Transformer 0.115 and the equal-FLOPs DiT
0.108, so its "not reproduced" ranked models that had learned nothing beyond the input. The same gate
on the equal-FLOPs DiT, which two criteria rank, was added after the timed small run
20261206T015625042274Z-4911bc (its ratio there: 0.857), because issue 41 item 2 asks for a
beats-the-floor gate on every arm a criterion ranks; same threshold, nothing else changed.

Criteria: paired over seeds and test items with a two-stage cluster bootstrap (seeds, then items), on
the log nRMSE of each item (1 step: each test trajectory's mean one-step error; k steps: each test
rollout's error after k = 10 autoregressive steps), so a difference is a mean log ratio. Smallest effect
of interest log 1.1 (a 10 % lower error; see ``EFFECT_SOURCE``). Headline: the PDE-Transformer's
10-step rollout error is lower than the equal-steps DiT's. Supporting: the same after 1 step, and both
against the equal-FLOPs DiT; parameter counts within 10 %; training FLOPs of the equal-FLOPs DiT within
5 %.

Design changes of issue 41, each forced by the budget and documented with its flag: the small scale
runs on 32^2 grids (``res``; the paper: 256^2; the old check 64^2, which cost 1695 s in the main job),
stores every second simulated frame (``frame_stride = 2``: copying then scores 0.17-0.26 per step
instead of 0.03-0.13, so a model has something to learn), and trains every arm, ours and baselines
alike, to predict the change of the state, ``x + net(x)`` (``residual = True``; the reference code
predicts the next state directly, ``residual = False``, which is the default and the full preset's;
with the zero-initialised heads both models then start at copying the input; in our exploration 400
steps of direct prediction left the PDE-Transformer worse than copying). Gray-Scott barely moves on a
32^2 grid (copying scores 0.004), so Kolmogorov flow, also one of the paper's 16 families, takes its
place.
Changed after seeing the timed run 20261205T232531300536Z-2ace48 (gate pde_transformer_beats_copy
failed at 0.9145; 0.89 in the run before at one thread), because the PDE-Transformer had not been
trained to convergence on enough data, not because of any headline number: 96 instead of 24 train
trajectories per family, 8 instead of 4 validation trajectories, 600 instead of 400 steps (warm-up 30
instead of 20), and the rate grid {5e-4, 1e-3} instead of {1e-3, 2e-3, 4e-3}. The exploration behind it
(validation 1-step nRMSE over copying's, PDE-Transformer only, no test-split number looked at): with 24
trajectories, 800 steps lowered the train loss (0.020 vs 0.027) but raised the validation ratio (0.92 at
lr 1e-3, 0.94 at 2e-3, against 0.87 at 400 steps): over-fitting; at lr 2e-3 the PDE-Transformer's
training sometimes collapses to copying (seed 1, 400 steps: 0.99; 96 trajectories, 800 steps: 0.999 on
seeds 0 and 1, loss stuck at the copy level), so 2e-3 and above left the grid (the DiT had chosen 1e-3,
the bottom of the old grid); with 96 trajectories, 600 steps at 1e-3 gave 0.874 / 0.830 / 0.844 on seeds
0 / 1 / 2 and 5e-4 gave 0.829 on seed 1. The gate's 0.9, the criteria and the smallest effects are
unchanged. Its first small run (20261206T010800218865Z-11a622): gates pass (0.85 and 0.77), headline
-0.036, 95 % CI [-0.093, +0.032]: not reproduced (a 10 % lower rollout error is excluded, narrowly).
Other deviations: 600 AdamW steps of batch 8 (the paper trains 100 epochs of 16 PDEs at 256^2 on GPUs);
lrs 5e-4 and 1e-3 (history: the first run of this design swept {2e-3, 4e-3}, the second and the timed
run {1e-3, 2e-3, 4e-3}); 96 train / 6 test / 8 validation trajectories of 11 stored frames per family;
the SC variant is implemented and tested but not trained here. Seeds change the simulated data, the
initialisation and the batch order. The wall-clock half of the claim is measured by ``bench.py``
(``icml25 bench pde_transformer``).

History (kept in the result history): the first three protocols (64^2, direct prediction, frames at
the families' spacing, unpaired means) all gave "not reproduced": the equal-steps DiT reached the lower
1-step (0.083 vs 0.115) and 10-step (0.570 vs 0.578) nRMSE; against the equal-FLOPs DiT the
PDE-Transformer's 10-step error was lower (0.578 vs 0.642). Issue 41 showed that none of those models
beat copying the input after one step, hence the gates and the redesign above.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields
from icml25.data.pde import PDE_FAMILIES, integrate, random_initial_condition
from icml25.nn.params import count_parameters

from .data import MultiPDEData, make_multi_pde_data
from .dit import DiTBaseline, DiTConfig, match_dit_width
from .model import PDETransformer, PDETransformerConfig
from .training import (
    CopyInput,
    FittedDamping,
    ResidualSurrogate,
    TrainConfig,
    evaluate,
    nrmse,
    train_flops_per_sample,
    train_next_step,
)

ARMS = ("pde_transformer", "dit", "dit_equal_flops")
#: reference arms: what a surrogate that learned nothing (copying) or no spatial structure scores
REFERENCES = ("copy_input", "damping")
#: smallest effect of interest on the paired mean log nRMSE: a 10 % lower error
LOG_EFFECT = math.log(1.1)
EFFECT_SOURCE = (
    "declared: a 10 % lower nRMSE (log 1.1); the smallest gains the paper reports as gains are larger "
    "(docs/pretrained-weights.md: MC-S -> MC-B 0.36 -> 0.31 after 10 steps, 14 %; patch 4 -> 2, "
    "0.045 -> 0.040 after 1 step, 11 %)"
)
#: the small scale's families: Gray-Scott barely moves on a 32^2 grid (copying scores nRMSE 0.004 per
#: step), so Kolmogorov flow (also in the paper's set) takes its place
SMALL_FAMILIES = ("diffusion", "burgers", "navier_stokes", "kolmogorov")
#: the gate: every trained arm a criterion ranks beats copying the input on validation by this factor
BEATS_COPY = 0.9


@dataclass(frozen=True)
class PDETransformerCheckConfig:
    """One claim-check configuration (data, both models, training)."""

    families: tuple[str, ...] = ("diffusion", "burgers", "navier_stokes", "gray_scott")
    res: int = 64
    n_train: int = 24
    n_test: int = 6
    n_frames: int = 21
    # the model configs themselves (override with --set model.hidden_size=64, dit.depth=6, ...);
    # in/out channels and the number of PDE labels are set from the data, the DiT's width is matched
    model: PDETransformerConfig = PDETransformerConfig(
        hidden_size=32, num_heads=2, depth=(2, 2, 2, 2, 2), window_size=4, patch_size=4, cpb_hidden=64
    )
    dit: DiTConfig = DiTConfig(depth=5, num_heads=4)
    train: TrainConfig = TrainConfig(steps=400, batch_size=8, lr=1e-3)
    rollout_steps: int = 10
    # the learning-rate sweep (``train.lr`` is replaced by each arm's choice)
    lrs: tuple[float, ...] = (2e-3, 4e-3)
    sweep_seed: int = 0
    # True: every seed sweeps ``lrs`` on its own validation split and keeps its own best rate per arm;
    # False: the rates chosen on ``sweep_seed`` are reused by every other seed
    sweep_each_seed: bool = False
    n_val: int = 4
    # one stored step spans this many of the family's frame intervals (1: the family's spacing)
    frame_stride: int = 1
    # every trained arm predicts the change of the state, x + net(x) (our budget choice); False is the
    # reference code's direct prediction of the next state
    residual: bool = False

    def __post_init__(self) -> None:
        if not self.lrs or any(not (math.isfinite(lr) and lr > 0) for lr in self.lrs):
            raise ValueError(f"lrs must be a non-empty tuple of positive learning rates, got {self.lrs}")
        if len(set(self.lrs)) != len(self.lrs):
            raise ValueError(f"lrs must be distinct, got {self.lrs}")
        unknown = [f for f in self.families if f not in PDE_FAMILIES]
        if unknown or not self.families:
            raise ValueError(
                f"families must be a non-empty subset of {sorted(PDE_FAMILIES)}, got {self.families}"
            )
        if self.n_frames <= self.rollout_steps:
            raise ValueError(f"n_frames ({self.n_frames}) must exceed rollout_steps ({self.rollout_steps})")
        check_fields(
            self, positive_int=("rollout_steps", "n_val", "frame_stride"), non_negative_int=("sweep_seed",)
        )

    def model_config(self) -> PDETransformerConfig:
        """:attr:`model` with 2 fields in and out and one label per PDE family."""
        return dataclasses.replace(self.model, in_channels=2, out_channels=2, num_classes=len(self.families))


def build_models(config: PDETransformerCheckConfig, seed: int) -> tuple[PDETransformer, DiTBaseline]:
    """The two arms, each initialised from ``seed``; the DiT's width matches the parameter count."""
    mcfg = config.model_config()
    torch.manual_seed(seed)
    pdet = PDETransformer(mcfg)
    base = dataclasses.replace(
        config.dit,
        in_channels=2,
        out_channels=2,
        patch_size=mcfg.patch_size,
        num_classes=len(config.families),
    )
    dcfg = match_dit_width(count_parameters(pdet), base)
    torch.manual_seed(seed)
    return pdet, DiTBaseline(dcfg)


def smoke_measures(
    config: PDETransformerCheckConfig, model: PDETransformer, target: torch.Tensor, seed: int
) -> dict[str, float]:
    """Solver and model sanity numbers: shift equivariance, diffusion mass drift, nRMSE(target, target)."""
    gen = torch.Generator().manual_seed(seed)
    s = model.cfg.grid_multiple
    res = 2 * s  # the smallest grid on which the shift by s is not the identity
    x = torch.randn(2, 2, res, res, generator=gen)
    lab = torch.tensor([0, 1]) % len(config.families)
    with torch.no_grad():
        y = model(x, lab)
        ys = model(torch.roll(x, shifts=(s, s), dims=(-2, -1)), lab)
    equiv = float(
        (torch.roll(y, shifts=(s, s), dims=(-2, -1)) - ys).abs().max() / y.abs().max().clamp_min(1e-12)
    )
    u0 = 1.0 + random_initial_condition(2, 1, config.res, generator=gen)
    traj = integrate("diffusion", u0, torch.tensor([[0.05], [0.01]], dtype=torch.float64), n_frames=5)
    mass = traj.mean(dim=(-3, -2, -1))
    drift = float((mass - mass[:, :1]).abs().max())
    return {
        "shift_equivariance_err": equiv,
        "diffusion_mass_drift": drift,
        "self_nrmse": float(nrmse(target, target)),
    }


def _paired(name: str, metric: str, other: str, description: str) -> Criterion:
    return Criterion(
        name,
        arm="pde_transformer",
        metric=metric,
        op="<",
        other_arm=other,
        smallest_effect=LOG_EFFECT,
        effect_source=EFFECT_SOURCE,
        description=description,
    )


def _criteria(rollout_steps: int = 10) -> tuple[Criterion, ...]:
    k = rollout_steps
    return (
        _paired(
            "lower_nrmse1",
            "log_nrmse1",
            "dit",
            "PDE-Transformer has a lower 1-step nRMSE than the equal-steps DiT (paired mean log over test "
            "trajectories and seeds)",
        ),
        _paired(
            f"lower_nrmse{k}",
            f"log_nrmse{k}",
            "dit",
            f"PDE-Transformer has a lower {k}-step rollout nRMSE than the equal-steps DiT (paired mean log "
            "over test rollouts and seeds)",
        ),
        _paired(
            "lower_nrmse1_equal_flops",
            "log_nrmse1",
            "dit_equal_flops",
            "PDE-Transformer has a lower 1-step nRMSE than a DiT trained with the same FLOPs",
        ),
        _paired(
            f"lower_nrmse{k}_equal_flops",
            f"log_nrmse{k}",
            "dit_equal_flops",
            f"PDE-Transformer has a lower {k}-step rollout nRMSE than a DiT trained with the same FLOPs",
        ),
        Criterion(
            "flops_matched",
            arm="dit_equal_flops",
            metric="flops_gap",
            op="<=",
            threshold=0.05,
            reduce="max",
            scales=("tiny", "small", "full"),
            description="the equal-FLOPs DiT's training FLOPs are within 5% of the PDE-Transformer's",
        ),
        Criterion(
            "params_matched",
            arm="dit",
            metric="param_gap",
            op="<=",
            threshold=0.10,
            reduce="max",
            scales=("tiny", "small", "full"),
            description="DiT parameter count within 10% of the PDE-Transformer's",
        ),
        Criterion(
            "tiny_learns",
            arm="pde_transformer",
            metric="loss_ratio",
            op="<",
            threshold=1.0,
            scales=("tiny",),
            description="training reduces the loss",
        ),
        Criterion(
            "tiny_shift_equivariant",
            arm="pde_transformer",
            metric="shift_equivariance_err",
            op="<",
            threshold=1e-4,
            scales=("tiny",),
            description="periodic shifts by patch x window x 2^levels commute with the model",
        ),
        Criterion(
            "tiny_mass_conserved",
            arm="pde_transformer",
            metric="diffusion_mass_drift",
            op="<",
            threshold=1e-10,
            scales=("tiny",),
            description="the diffusion solver conserves mass",
        ),
        Criterion(
            "tiny_self_nrmse_zero",
            arm="pde_transformer",
            metric="self_nrmse",
            op="<=",
            threshold=0.0,
            scales=("tiny",),
            description="nrmse(y, y) = 0",
        ),
    )


def _gates() -> tuple[Criterion, ...]:
    return tuple(
        Criterion(
            f"{arm}_beats_copy",
            arm=arm,
            metric="val_ratio_to_copy",
            op="<=",
            threshold=BEATS_COPY,
            scales=("small", "full"),
            description=(
                f"{arm}'s validation 1-step nRMSE is at most {BEATS_COPY:g}x that of copying the input (mean "
                "over seeds): the model learned more than the identity, so ranking it means something"
            ),
        )
        for arm in ARMS  # every arm a criterion ranks (issue 41 item 2: dit_equal_flops too)
    )


CLAIM = Claim(
    statement=(
        "At matched parameter count and equal learning-rate sweep, a mixed-channel PDE-Transformer "
        "(multi-scale, shifted-window, adaLN-conditioned) has lower 1-step and 10-step rollout nRMSE than a "
        "DiT with global attention, averaged over several PDE families trained jointly, both at equal "
        "optimiser steps and at equal training FLOPs."
    ),
    source="Abstract and Sec. 5 (comparison with DiT, U-DiT, UNet, scOT, FactFormer on APE-2D)",
    ours="pde_transformer",
    baselines=("dit", "dit_equal_flops"),
    references=REFERENCES,
    criteria=_criteria(),
    gates=_gates(),
    headline="lower_nrmse10",
    headline_baseline="dit.log_nrmse10",
    min_seeds=3,
    setup_notes=(
        "Small: 4 in-package families (diffusion, Burgers, Navier-Stokes, Kolmogorov flow) on 32^2 periodic "
        "grids, every second simulated frame stored, 96 train / 6 test / 8 validation trajectories of 11 "
        "frames each; ~1.6M-parameter models predicting the change of the state (x + net(x), every arm); "
        "600 AdamW steps of batch 8 (warm-up 30, cosine, label dropout 0.1) for the PDE-Transformer and the "
        "equal-steps DiT, and the same FLOPs (~165 steps) for the equal-FLOPs DiT, on the same batches; each "
        "arm's lr chosen from {5e-4, 1e-3} on validation 1-step nRMSE (seed 0); 3 seeds; references: copying "
        "the input and a fitted per-family damping. The paper trains 33M-700M parameter models on 16 "
        "families at 256^2 for 100 epochs; absolute nRMSE is not comparable."
    ),
)


@dataclass(frozen=True)
class ArmRun:
    """One trained arm: metrics, figure series and the trained weights (for the smoke measures)."""

    metrics: dict[str, float]
    series: dict[str, Any]
    state: dict[str, torch.Tensor]
    items: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class TrainedArm:
    """One arm trained at one rate, scored on validation only (test waits for the rate's selection)."""

    model: torch.nn.Module
    lr: float
    train: TrainConfig
    flops_per_sample: float
    losses: list[float]
    seconds: float
    val_nrmse1_mean: float


def _data(config: PDETransformerCheckConfig, seed: int, ctx: RunContext) -> MultiPDEData:
    ctx.progress("simulate", 0, len(config.families))
    data = make_multi_pde_data(
        config.families,
        res=config.res,
        n_train=config.n_train,
        n_test=config.n_test,
        n_frames=config.n_frames,
        seed=seed,
        n_val=config.n_val,
        frame_stride=config.frame_stride,
    )
    ctx.progress("simulate", len(config.families), len(config.families))
    return data


def equal_flops_steps(config: PDETransformerCheckConfig, flops_pdet: float, flops_dit: float) -> TrainConfig:
    """The DiT's recipe with the PDE-Transformer's training FLOPs: steps (and warm-up) scaled by
    ``flops_pdet / flops_dit`` (per-sample FLOPs of one step; the batch size is the same)."""
    if not (flops_pdet > 0 and flops_dit > 0):
        raise ValueError(f"FLOP counts must be positive, got {flops_pdet} and {flops_dit}")
    ratio = flops_pdet / flops_dit
    steps = max(1, round(config.train.steps * ratio))
    return dataclasses.replace(
        config.train, steps=steps, warmup=min(steps, round(config.train.warmup * ratio))
    )


def _train_arm(
    config: PDETransformerCheckConfig, data: MultiPDEData, arm: str, lr: float, seed: int, ctx: RunContext
) -> TrainedArm:
    """Train ``arm`` at rate ``lr`` and score its 1-step nRMSE on the validation split (the selection
    metric); the test split is not touched here."""
    pdet, dit = build_models(config, seed)
    model = pdet if arm == "pde_transformer" else dit
    in_ch, res = data.n_channels, config.res
    flops = {
        "pde_transformer": train_flops_per_sample(pdet, in_ch, res),
        "dit": train_flops_per_sample(dit, in_ch, res),
    }
    tcfg = config.train
    if arm == "dit_equal_flops":
        tcfg = equal_flops_steps(config, flops["pde_transformer"], flops["dit"])
    tcfg = dataclasses.replace(tcfg, lr=lr)

    def report(done: int, total: int) -> None:
        ctx.progress(f"train {arm} lr={lr:g}", done, total)

    surrogate: torch.nn.Module = ResidualSurrogate(model) if config.residual else model
    out = train_next_step(surrogate, data, tcfg, seed=seed, progress=report)
    val = evaluate(surrogate, data.validation(), rollout_steps=config.rollout_steps, with_rollout=False)
    return TrainedArm(
        model=surrogate,
        lr=lr,
        train=tcfg,
        flops_per_sample=flops["pde_transformer" if arm == "pde_transformer" else "dit"],
        losses=list(out.losses),
        seconds=out.seconds,
        val_nrmse1_mean=float(val["nrmse1"].mean()),
    )


def _score_arm(
    config: PDETransformerCheckConfig, data: MultiPDEData, arm: str, trained: TrainedArm
) -> ArmRun:
    """Test-split metrics (1-step and rollout nRMSE per family), cost counts and figure series of the
    arm trained at its chosen rate."""
    model, tcfg = trained.model, trained.train
    net = model.net if isinstance(model, ResidualSurrogate) else model
    ev = evaluate(model, data, rollout_steps=config.rollout_steps, items=True)
    k_roll = config.rollout_steps
    m: dict[str, float] = {
        "params": float(count_parameters(net)),
        "lr": trained.lr,
        "steps": float(tcfg.steps),
        "flops_per_sample": trained.flops_per_sample,
    }
    m["train_flops"] = m["flops_per_sample"] * tcfg.steps * tcfg.batch_size
    for f, fam in enumerate(config.families):
        m[f"{fam}/nrmse1"] = float(ev["nrmse1"][f])
        m[f"{fam}/nrmse{k_roll}"] = float(ev["curve"][f, -1])
    m["nrmse1_mean"] = float(ev["nrmse1"].mean())
    m[f"nrmse{k_roll}_mean"] = float(ev["curve"][:, -1].mean())
    m["val_nrmse1_mean"] = trained.val_nrmse1_mean
    items = _log_items(ev, k_roll)
    k = max(1, len(trained.losses) // 10)
    m["final_loss"] = float(np.mean(trained.losses[-k:]))
    m["loss_ratio"] = m["final_loss"] / float(np.mean(trained.losses[:k]))
    series = {
        "curve": ev["curve"].tolist(),
        "losses": [round(v, 6) for v in trained.losses[:: max(1, len(trained.losses) // 200)]],
        "train_seconds": trained.seconds,
        "snapshots": _snapshots(model, data, k_roll),
    }
    state = {n: t.detach().clone() for n, t in net.state_dict().items()} if arm == "pde_transformer" else {}
    return ArmRun(metrics=m, series=series, state=state, items=items)


def _log_items(ev: dict[str, torch.Tensor], k: int) -> dict[str, np.ndarray]:
    """Per-item log nRMSE (test trajectories after 1 step, test rollouts after ``k``), family-major."""
    return {
        "log_nrmse1": np.log(ev["nrmse1_items"].flatten().double().clamp_min(1e-12).numpy()),
        f"log_nrmse{k}": np.log(ev["rollout_items"].flatten().double().clamp_min(1e-12).numpy()),
    }


def _score_reference(config: PDETransformerCheckConfig, data: MultiPDEData, name: str) -> ArmRun:
    """A reference arm (no training) scored on validation and test like the trained arms."""
    model: torch.nn.Module = CopyInput() if name == "copy_input" else FittedDamping(data)
    k = config.rollout_steps
    ev = evaluate(model, data, rollout_steps=k, items=True)
    val = evaluate(model, data.validation(), rollout_steps=k, with_rollout=False)
    m: dict[str, float] = {}
    for f, fam in enumerate(config.families):
        m[f"{fam}/nrmse1"] = float(ev["nrmse1"][f])
        m[f"{fam}/nrmse{k}"] = float(ev["curve"][f, -1])
    m["nrmse1_mean"] = float(ev["nrmse1"].mean())
    m[f"nrmse{k}_mean"] = float(ev["curve"][:, -1].mean())
    m["val_nrmse1_mean"] = float(val["nrmse1"].mean())
    if isinstance(model, FittedDamping):
        for f, fam in enumerate(config.families):
            m[f"{fam}/factor"] = float(model.factor[f])
    return ArmRun(metrics=m, series={"curve": ev["curve"].tolist()}, state={}, items=_log_items(ev, k))


# The sweep of one run (keyed by the run's directory and config): every arm at every rate on
# ``sweep_seed``; the chosen runs double as that seed's results.
_SWEEPS: dict[tuple[str, PDETransformerCheckConfig], dict[str, Any]] = {}


def lr_sweep(config: PDETransformerCheckConfig, ctx: RunContext) -> dict[str, Any]:
    """Every arm trained at every rate of ``config.lrs`` on ``config.sweep_seed`` (its full budget).

    Returns ``{"runs": {arm: {lr: TrainedArm}}, "data": the seed's data, "dit_width": int}``.
    """
    key = (str(ctx.run_dir), config)
    if key not in _SWEEPS:
        _SWEEPS.clear()  # one run at a time
        data = _data(config, config.sweep_seed, ctx)
        runs = _sweep_on(config, data, config.sweep_seed, ctx)
        with torch.device("meta"):
            width = build_models(config, config.sweep_seed)[1].cfg.hidden_size
        _SWEEPS[key] = {"runs": runs, "data": data, "dit_width": width}
    return _SWEEPS[key]


def _sweep_on(
    config: PDETransformerCheckConfig, data: MultiPDEData, seed: int, ctx: RunContext
) -> dict[str, dict[float, TrainedArm]]:
    """Every arm trained at every rate of ``config.lrs`` on ``data`` and ``seed`` (its full budget)."""
    return {arm: {lr: _train_arm(config, data, arm, lr, seed, ctx) for lr in config.lrs} for arm in ARMS}


def choose_lr(runs: dict[float, TrainedArm]) -> float:
    """The rate with the lowest validation 1-step nRMSE (non-finite counts as worst; ties: the first)."""
    return best_on_validation(runs, lambda run: run.val_nrmse1_mean)


class PDETransformerCheck(ClaimCheck[PDETransformerCheckConfig]):
    slug = "pde_transformer"
    claim = CLAIM

    def claim_for(self, config: PDETransformerCheckConfig) -> Claim:
        """The rollout criterion and headline follow ``rollout_steps`` (10 in every preset)."""
        k = config.rollout_steps
        return dataclasses.replace(
            CLAIM,
            criteria=_criteria(k),
            headline=f"lower_nrmse{k}",
            headline_baseline=f"dit.log_nrmse{k}",
        )

    presets = {
        "tiny": PDETransformerCheckConfig(
            families=("diffusion", "burgers"),
            res=32,
            n_train=4,
            n_test=2,
            n_frames=8,
            model=PDETransformerConfig(
                hidden_size=16, num_heads=2, depth=(1, 1, 1, 1, 1), window_size=2, patch_size=4, cpb_hidden=16
            ),
            dit=DiTConfig(depth=2, num_heads=2),
            train=TrainConfig(steps=20, batch_size=4, lr=1e-3),
            rollout_steps=3,
            n_val=1,
            frame_stride=2,
            residual=True,
        ),
        "small": PDETransformerCheckConfig(
            families=SMALL_FAMILIES,
            res=32,
            n_train=96,
            n_val=8,
            n_frames=11,
            frame_stride=2,
            residual=True,
            model=PDETransformerConfig(
                hidden_size=32, num_heads=2, depth=(2, 2, 2, 2, 2), window_size=2, patch_size=4, cpb_hidden=64
            ),
            train=TrainConfig(steps=600, batch_size=8, lr=1e-3, warmup=30),
            lrs=(5e-4, 1e-3),
        ),
        "full": PDETransformerCheckConfig(
            families=tuple(PDE_FAMILIES),
            res=256,
            n_train=200,
            n_test=20,
            n_frames=30,
            model=PDETransformerConfig(
                hidden_size=96,
                num_heads=4,
                depth=(2, 5, 8, 5, 2),
                window_size=8,
                patch_size=4,
                cpb_hidden=512,
            ),
            dit=DiTConfig(depth=12, num_heads=8),
            train=TrainConfig(steps=100_000, batch_size=64, lr=4e-5),
            rollout_steps=10,
            lrs=(2e-5, 4e-5, 8e-5),
            n_val=20,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def run_seed(self, config: PDETransformerCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        ctx.progress("lr sweep", 0, 1)
        sweep: dict[str, Any]
        if config.sweep_each_seed:  # this seed's own sweep, chosen on this seed's validation split
            data = _data(config, seed, ctx)
            with torch.device("meta"):
                width = build_models(config, seed)[1].cfg.hidden_size
            sweep = {"runs": _sweep_on(config, data, seed, ctx), "data": data, "dit_width": width}
        else:
            sweep = lr_sweep(config, ctx)
        ctx.progress("lr sweep", 1, 1)
        chosen = {arm: choose_lr(sweep["runs"][arm]) for arm in ARMS}
        if config.sweep_each_seed or seed == config.sweep_seed:
            data = sweep["data"]
            trained = {arm: sweep["runs"][arm][chosen[arm]] for arm in ARMS}
        else:
            data = _data(config, seed, ctx)
            trained = {arm: _train_arm(config, data, arm, chosen[arm], seed, ctx) for arm in ARMS}
        # only the chosen rate of each arm sees the test split
        runs = {arm: _score_arm(config, data, arm, trained[arm]) for arm in ARMS}
        runs.update({ref: _score_reference(config, data, ref) for ref in REFERENCES})
        metrics: dict[str, dict[str, float]] = {arm: dict(runs[arm].metrics) for arm in runs}
        copy_val = metrics["copy_input"]["val_nrmse1_mean"]
        for arm in (*ARMS, "damping"):
            metrics[arm]["val_ratio_to_copy"] = metrics[arm]["val_nrmse1_mean"] / copy_val
        n_p = metrics["pde_transformer"]["params"]
        metrics["dit"]["param_gap"] = abs(metrics["dit"]["params"] - n_p) / n_p
        f_p = metrics["pde_transformer"]["train_flops"]
        metrics["dit_equal_flops"]["flops_gap"] = abs(metrics["dit_equal_flops"]["train_flops"] - f_p) / f_p
        pdet, _ = build_models(config, seed)  # the smoke measures need a trained model: seed's PDE-T
        pdet.load_state_dict(runs["pde_transformer"].state)
        metrics["pde_transformer"].update(smoke_measures(config, pdet, data.test[0, 0, 1], seed))
        series: dict[str, Any] = {
            "families": list(config.families),
            "dit_width": sweep["dit_width"],
            "sweep": {
                arm: {f"{lr:g}": sweep["runs"][arm][lr].val_nrmse1_mean for lr in config.lrs} for arm in ARMS
            },
        }
        for arm in ARMS:
            series[arm] = runs[arm].series
        for ref in REFERENCES:
            series[ref] = runs[ref].series
        series["truth"] = _truth_snapshots(data, config.rollout_steps)
        items = {arm: runs[arm].items for arm in runs}
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def make_figures(
        self, config: PDETransformerCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import OURS_COLOR, PALETTE, new_figure, plot_band

        fams = list(config.families)
        steps = list(range(1, config.rollout_steps + 1))
        fig, axes = new_figure(ncols=len(fams) + 1, width=3.0)
        for j, fam in enumerate([*fams, "mean"]):
            ax = axes[j]
            for arm, color in zip((*ARMS, *REFERENCES), (OURS_COLOR, *PALETTE[:4]), strict=True):
                curves = [np.asarray(o.series[arm]["curve"]) for o in outcomes]
                per_seed = [c.mean(axis=0) if fam == "mean" else c[j] for c in curves]
                plot_band(ax, steps, per_seed, label=arm, color=color)
            ax.set(xlabel="rollout step", ylabel="nRMSE", title=fam, yscale="log")
            ax.legend()
        ctx.save_figure(
            fig,
            "error_vs_step",
            "nRMSE of autoregressive rollouts on held-out trajectories against the step, per family "
            "and averaged (mean and min-max over seeds); PDE-Transformer (red) vs DiT at equal steps and "
            "DiT at equal training FLOPs, with the references copy-the-input and fitted damping.",
        )
        first = outcomes[0].series
        rows = [
            ("truth", first["truth"]),
            ("PDE-T", first["pde_transformer"]["snapshots"]),
            ("DiT", first["dit"]["snapshots"]),
            ("DiT eq. FLOPs", first["dit_equal_flops"]["snapshots"]),
        ]
        fig, axes = new_figure(ncols=len(fams), nrows=len(rows), width=2.2, height=2.2)
        for j, fam in enumerate(fams):
            truth = np.asarray(first["truth"][j])
            lo, hi = float(truth.min()), float(truth.max())
            for i, (name, snaps) in enumerate(rows):
                ax = axes[i, j]
                ax.imshow(np.asarray(snaps[j]), cmap="RdBu_r", vmin=lo, vmax=hi)
                ax.set(
                    xticks=[],
                    yticks=[],
                    xlabel="x" if i == len(rows) - 1 else "",
                    ylabel=f"{name}\ny" if j == 0 else "",
                )
                ax.grid(False)
                if i == 0:
                    ax.set_title(f"{fam}, step {config.rollout_steps}")
        ctx.save_figure(
            fig,
            "rollout_snapshots",
            f"First field of the first test trajectory after {config.rollout_steps} autoregressive steps "
            "(seed 0): simulation, PDE-Transformer, DiT (equal steps) and DiT (equal FLOPs), same colour "
            "scale per family.",
        )


def _truth_snapshots(data: Any, steps: int) -> list[list[list[float]]]:
    return [
        np.round(data.denormalize(data.test[f, 0, steps], f)[0].numpy(), 3).tolist()
        for f in range(len(data.families))
    ]


@torch.no_grad()
def _snapshots(model: Any, data: Any, steps: int) -> list[list[list[float]]]:
    from .training import rollout

    out = []
    for f in range(len(data.families)):
        x0 = data.test[f, :1, 0]
        pred = rollout(model, x0, steps, torch.tensor([f]), data.channel_mask[f][None])[0, -1]
        out.append(np.round(data.denormalize(pred, f)[0].numpy(), 3).tolist())
    return out


CHECK = PDETransformerCheck()
