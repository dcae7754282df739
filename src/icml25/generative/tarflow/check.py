"""Claim check for *Normalizing Flows are Capable Generative Models* (TarFlow; Zhai et al., ICML 2025,
https://arxiv.org/abs/2412.06329).

The paper's claim (Table 1, ImageNet 64×64 unconditional: 2.99 bits/dim) is that a stack of causal-
Transformer autoregressive flow blocks with alternating directions reaches better likelihood than
earlier flows, coupling flows included. Here, on scikit-learn's digits (8×8, 17 levels, uniform
dequantisation, fixed split), with equal parameter counts (±10%), equal optimiser steps and an equal
learning-rate sweep:

Arms:
    tarflow          P=2 (N=16 tokens, d=4), Ch=32, T=4 blocks, K=4 layers per block (the official
                     MNIST notebook's K; the paper's ImageNet model has K=8), head dim 16, alternating
    tarflow_noflip   the same with every block in the same direction (the ablation)
    coupling         RealNVP/Glow multi-scale coupling flow, width chosen to match tarflow's size
    tarflow_l8       the paper's K=8 layers per block at about tarflow's size: Ch=22, head dim 11 (2
                     heads, as tarflow's 32/16), same P, T, alternation, grid, steps and seeds

Protocol (issue 29, replacing the first protocol's single lr 1e-3, 400 steps and K=1): every arm is
trained at every learning rate of ``lrs`` on seed ``sweep_seed`` (0) for the full step budget, and the
rate with the lowest best validation bits/dim is chosen per arm (the validation split, never the
test split); every seed then trains each arm at its chosen rate (the seed-0 runs of the sweep are the
seed-0 results, not retrained). The same grid, budget, batch and schedule for every arm = equal
effort. ``val_gain_last_quarter`` (best validation bits/dim at 3/4 of the steps minus the final best)
reports how far each arm still was from flat.

Criteria (declared before any small-scale run of this protocol; the first two are the first protocol's,
unchanged): mean test bits/dim of tarflow < coupling's (headline), and < tarflow_noflip's; the
coupling flow's parameter count within 10% of TarFlow's. Added for the fourth run (issue 29, the
paper's layers per block), declared before it, every earlier criterion and threshold unchanged and
``beats_coupling`` still the headline: ``l8_beats_coupling`` (mean test bits/dim of tarflow_l8 <
coupling's), ``l8_params_matched`` (tarflow_l8's parameter count within 10% of tarflow's) and
``l8_coupling_matched`` (the coupling flow, still matched to tarflow, within 10% of tarflow_l8's).
A secondary, unjudged part (off at small to fit the budget; on in tiny and full) trains a
class-conditional TarFlow with Gaussian noise σ = 0.1 and label dropout 0.1 at TarFlow's chosen rate
and reports its Bayes-classifier test accuracy and the accuracy of a logistic-regression digit
classifier (trained on real digits) on its samples at guidance w ∈ {0, 1, 2}, with and without the
denoising step.

Choices and deviations (ours): K = 4 at width 32 keeps the first protocol's size (~207k parameters);
head dim 16 instead of 64, for size. The K = 8 arm at equal size needs a narrower width: with the MLP
ratio kept at 4, width 24 is +13% (outside the 10% band), width 22 is -4.5% (197,592 parameters) and
23 allows one head only, so width 22 with 2 heads of 11 (the head count of tarflow) is the one
multi-head choice within 10%; a P=1 variant is not run at small scale (a config override,
``patch_size=1``). Training: the official code's AdamW (0.9, 0.95), wd 1e-4, lrs 4e-3 and 8e-3
(the official 1e-4 is for far larger models; a pilot on seed 0 at 800 steps gave TarFlow 2.35 val
bits/dim at 2e-3 and 2.24 at 4e-3), a 10-step warm-up and cosine decay, batch 64 (128 in the first
protocol: halved so that 800 steps, where the seed-0 pilot's validation curves had flattened, fit the
10-minute budget on 2 CPU cores with the sweep), 800 steps for every arm, best validation state kept
(validated every ``eval_every`` steps); no gradient clipping. Test bits/dim averages 4 dequantisation
draws. Wall times go to ``series``, never to metrics.

First protocol's outcome (lr 1e-3, 400 steps, K = 1 at width 64; 2 seeds; kept in the result history):
tarflow 2.724 ± 0.019, coupling 2.318 ± 0.024, tarflow_noflip 3.242 test bits/dim: beats_coupling
failed, flip_helps passed. Second protocol (2 seeds, 2026-12-03): every arm chose lr 4e-3;
tarflow 2.279, coupling 2.212, tarflow_noflip 2.97: beats_coupling failed by 0.07 bits/dim, flip_helps
and params_matched passed. Because 4e-3 was the top of that grid for every arm, the grid moved up to
(4e-3, 8e-3) with the criteria unchanged (2026-12-04, 2 seeds, 340 s on an idle machine): tarflow and
coupling again chose 4e-3, so with the previous run their optimum is bracketed (4e-3 beat 2e-3 then
and 8e-3 now); tarflow_noflip chose 8e-3. tarflow 2.278 ± 0.007, coupling 2.204 ± 0.002, tarflow_noflip 2.927:
beats_coupling failed by 0.074 bits/dim. TarFlow's validation still improved by 0.018 bits/dim over the
last quarter of the 800 steps (coupling's by 0), so a longer budget would narrow the gap somewhat; at
that rate it would not close it within another 800 steps. Fourth run (issue 29, 2026-12-04, 2 seeds):
adds tarflow_l8 (above) with its criteria; the three earlier arms are trained exactly as in the third
run (each run seeds its own model, data order and dequantisation) and reproduced its numbers
bit for bit. tarflow_l8 chose 8e-3 (bracketed: a seed-0 diagnostic at 1.6e-2 was worse on
validation) and reached 2.232 ± 0.0004 test bits/dim: 0.046 better than the 4-layer tarflow, but
still 0.028 above the coupling flow's 2.204, so l8_beats_coupling failed too (the size criteria
passed). Its validation still fell over the last quarter (0.049), but a seed-0 diagnostic at 1600
steps peaked at step 1040 and overfitted after (test 2.243 against the coupling flow's 2.218), so the
ranking does not come from the budget.
"""

from __future__ import annotations

import dataclasses
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
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields
from icml25.nn.params import count_parameters

from .coupling import CouplingFlow, CouplingFlowConfig, match_coupling_hidden
from .data import load_digits_dataset
from .denoise import bayes_classify, denoise
from .likelihood import bits_per_dim, noise_augment, to_unit_range
from .model import TarFlow, TarFlowConfig
from .train import TrainConfig, TrainResult, train_flow

ARMS = ("tarflow", "tarflow_noflip", "coupling", "tarflow_l8")


@dataclass(frozen=True)
class TarFlowCheckConfig:
    """One claim-check configuration (flat, so every field can be overridden with ``--set``)."""

    patch_size: int = 2
    channels: int = 32
    num_blocks: int = 4
    layers_per_block: int = 4
    head_dim: int = 16
    l8_channels: int = 22  # the tarflow_l8 arm: width, head dim and layers per block (the paper's 8)
    l8_head_dim: int = 11
    l8_layers_per_block: int = 8
    coupling_levels: int = 2
    coupling_checkerboard_steps: int = 2
    coupling_steps_per_level: int = 4
    n_train: int = 0  # 0: the whole training split
    n_test: int = 0  # 0: the whole test split
    steps: int = 800
    batch_size: int = 64
    lrs: tuple[float, ...] = (4e-3, 8e-3)
    sweep_seed: int = 0
    warmup_steps: int = 10
    eval_every: int = 20
    n_dequant: int = 4
    conditional: bool = False
    cond_steps: int = 800
    cond_sigma: float = 0.1
    label_drop: float = 0.1
    guidance_weights: tuple[float, ...] = (0.0, 1.0, 2.0)
    samples_per_class: int = 100

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
                "l8_channels",
                "l8_head_dim",
                "l8_layers_per_block",
            ),
            non_negative_int=("n_train", "n_test", "sweep_seed"),
        )
        if not self.lrs or any(not (math.isfinite(lr) and lr > 0) for lr in self.lrs):
            raise ValueError(f"lrs must be a non-empty tuple of positive learning rates, got {self.lrs}")
        if len(set(self.lrs)) != len(self.lrs):
            raise ValueError(f"lrs must be distinct, got {self.lrs}")
        if any(w < 0 for w in self.guidance_weights) or not self.guidance_weights:
            raise ValueError(f"guidance_weights must be non-empty and >= 0, got {self.guidance_weights}")

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

    def tarflow_l8(self) -> TarFlowConfig:
        """The ``tarflow_l8`` arm: tarflow's patch, blocks and alternation at the paper's 8 layers per
        block, narrowed to about tarflow's parameter count."""
        return dataclasses.replace(
            self.tarflow(),
            channels=self.l8_channels,
            head_dim=self.l8_head_dim,
            layers_per_block=self.l8_layers_per_block,
        )

    def coupling_base(self) -> CouplingFlowConfig:
        return CouplingFlowConfig(
            in_channels=1,
            img_size=8,
            num_levels=self.coupling_levels,
            checkerboard_steps=self.coupling_checkerboard_steps,
            steps_per_level=self.coupling_steps_per_level,
        )

    def train(self, lr: float, *, steps: int | None = None, gaussian: bool = False) -> TrainConfig:
        return TrainConfig(
            steps=steps or self.steps,
            batch_size=self.batch_size,
            lr=lr,
            warmup_steps=self.warmup_steps,
            eval_every=self.eval_every,
            noise="gaussian" if gaussian else "uniform",
            sigma=self.cond_sigma,
            label_drop=self.label_drop if gaussian else 0.0,
        )


CLAIM = Claim(
    statement=(
        "At matched size, optimiser steps and learning-rate sweep, TarFlow (causal-Transformer "
        "autoregressive flow blocks with alternating directions) reaches lower held-out bits/dim than a "
        "RealNVP/Glow coupling flow, and alternating the direction matters."
    ),
    source="Table 1 (ImageNet 64x64 unconditional bits/dim, 2.99) and Sec. 3.1 (permutations)",
    ours="tarflow",
    baselines=("coupling", "tarflow_noflip", "tarflow_l8"),
    criteria=(
        Criterion(
            "beats_coupling",
            arm="tarflow",
            metric="test_bpd",
            op="<",
            other_arm="coupling",
            description="TarFlow's test bits/dim is below the coupling flow's (mean over seeds)",
        ),
        Criterion(
            "flip_helps",
            arm="tarflow",
            metric="test_bpd",
            op="<",
            other_arm="tarflow_noflip",
            description="alternating directions beats keeping every block in one direction",
        ),
        Criterion(
            "params_matched",
            arm="coupling",
            metric="param_gap",
            op="<=",
            threshold=0.10,
            reduce="max",
            scales=("tiny", "small", "full"),
            description="the coupling flow's parameter count is within 10% of TarFlow's",
        ),
        # Added for the fourth run (issue 29: the paper's 8 layers per block), declared before it.
        Criterion(
            "l8_beats_coupling",
            arm="tarflow_l8",
            metric="test_bpd",
            op="<",
            other_arm="coupling",
            description="the 8-layer-per-block TarFlow beats the coupling flow (mean over seeds)",
        ),
        Criterion(
            "l8_params_matched",
            arm="tarflow_l8",
            metric="param_gap",
            op="<=",
            threshold=0.10,
            reduce="max",
            scales=("tiny", "small", "full"),
            description="the 8-layer TarFlow's parameter count is within 10% of TarFlow's",
        ),
        Criterion(
            "l8_coupling_matched",
            arm="coupling",
            metric="param_gap_l8",
            op="<=",
            threshold=0.10,
            reduce="max",
            scales=("tiny", "small", "full"),
            description="the coupling flow's parameter count is within 10% of the 8-layer TarFlow's",
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
    headline_baseline="coupling.test_bpd",
    min_seeds=2,
    setup_notes=(
        "Digits 8x8 with 17 grey levels (1293 train / 144 val / 360 test, fixed stratified split), uniform "
        "dequantisation; TarFlow 2-32-4-4 (4 layers per block, head dim 16) against a multi-scale coupling "
        "flow whose width matches its parameter count, and TarFlow 2-22-4-8 (the paper's 8 layers per "
        "block, head dim 11) at about the same size; every arm swept over the same learning rates on "
        "seed 0 (full step budget, chosen on validation bits/dim), then the same optimiser, schedule, "
        "batch and steps for all arms and seeds; test bits/dim over 4 dequantisation draws. The paper's "
        "ImageNet-64 scale, FID and diffusion-level sample quality are not tested; the guidance/denoising "
        "numbers (off at small) are reported, not judged."
    ),
)


@dataclass(frozen=True)
class ArmRun:
    """One trained arm: its metrics, loss curves, 20 samples and wall times."""

    metrics: dict[str, float]
    curves: dict[str, Any]
    samples: list[list[float]]
    seconds: dict[str, float]


def _val_gain_last_quarter(res: TrainResult) -> float:
    """Best validation bits/dim up to 3/4 of the steps minus the final best (0 = flat at the end)."""
    cut = 3 * max(res.steps, default=0) // 4
    early = [v for s, v in zip(res.val_steps, res.val_bpd, strict=True) if s <= cut]
    if not early or not res.val_bpd:
        return float("nan")
    return min(early) - min(res.val_bpd)


def _train_arm(
    model: TarFlow | CouplingFlow,
    data: Any,
    x_train: torch.Tensor,
    config: TarFlowCheckConfig,
    lr: float,
    seed: int,
    ctx: RunContext,
    name: str,
) -> ArmRun:
    t0 = time.perf_counter()
    res = train_flow(
        model,
        x_train,
        num_levels=data.num_levels,
        config=config.train(lr),
        seed=seed,
        x_val=data.x_val,
        progress=lambda step, total: ctx.progress(f"train {name}", step, total),
    )
    draws = [
        float(
            bits_per_dim(
                model,
                data.x_test,
                num_levels=data.num_levels,
                n_dequant=1,
                generator=torch.Generator().manual_seed(seed * 100 + k),
            ).mean()
        )
        for k in range(config.n_dequant)
    ]
    k = min(10, len(res.train_bpd))
    metrics = {
        "test_bpd": statistics.fmean(draws),
        "test_bpd_dequant_std": statistics.pstdev(draws),
        "best_val_bpd": res.best_val_bpd,
        "best_step": float(res.best_step),
        "val_gain_last_quarter": _val_gain_last_quarter(res),
        "lr": lr,
        "params": float(count_parameters(model)),
        "train_bpd_drop": statistics.fmean(res.train_bpd[:k]) - statistics.fmean(res.train_bpd[-k:]),
    }
    seconds = {"train": res.seconds, "train_and_eval": time.perf_counter() - t0}
    t0 = time.perf_counter()
    with torch.no_grad():
        xs = model.sample(20, generator=torch.Generator().manual_seed(seed))  # type: ignore[operator]
    seconds["sample20"] = time.perf_counter() - t0
    curves = {
        "steps": res.steps,
        "train_bpd": np.round(res.train_bpd, 4).tolist(),
        "val_steps": res.val_steps,
        "val_bpd": np.round(res.val_bpd, 4).tolist(),
    }
    return ArmRun(metrics=metrics, curves=curves, samples=_img(xs), seconds=seconds)


def _img(x: torch.Tensor) -> list[list[float]]:
    return np.round(x.detach().reshape(x.shape[0], -1).numpy(), 3).tolist()


def _data(config: TarFlowCheckConfig) -> tuple[Any, torch.Tensor, torch.Tensor]:
    data = load_digits_dataset()
    if config.n_test:
        data = dataclasses.replace(
            data, x_test=data.x_test[: config.n_test], y_test=data.y_test[: config.n_test]
        )
    x_train, y_train = data.x_train, data.y_train
    if config.n_train:
        x_train, y_train = x_train[: config.n_train], y_train[: config.n_train]
    return data, x_train, y_train


@functools.lru_cache(maxsize=8)
def _coupling_config(config: TarFlowCheckConfig) -> CouplingFlowConfig:
    """The coupling flow whose width matches TarFlow's parameter count (cached: the width search
    builds many models)."""
    with torch.device("meta"):
        n_params = count_parameters(TarFlow(config.tarflow()))
    return match_coupling_hidden(n_params, config.coupling_base())


def _build(config: TarFlowCheckConfig, arm: str) -> TarFlow | CouplingFlow:
    """A freshly initialised model of ``arm`` (uses the global torch RNG)."""
    if arm == "tarflow":
        return TarFlow(config.tarflow())
    if arm == "tarflow_noflip":
        return TarFlow(config.tarflow(alternate=False))
    if arm == "tarflow_l8":
        return TarFlow(config.tarflow_l8())
    if arm == "coupling":
        return CouplingFlow(_coupling_config(config))
    raise ValueError(f"unknown arm {arm!r}; choose one of {ARMS}")


def _train_seed(config: TarFlowCheckConfig, arm: str, lr: float, seed: int, ctx: RunContext) -> ArmRun:
    data, x_train, _ = _data(config)
    torch.manual_seed(seed)
    model = _build(config, arm)
    return _train_arm(model, data, x_train, config, lr, seed, ctx, f"{arm} lr={lr:g}")


# The sweep of one run (keyed by the run's directory and config): every arm at every rate on
# ``sweep_seed``; the chosen runs double as that seed's results.
_SWEEPS: dict[tuple[str, TarFlowCheckConfig], dict[str, dict[float, ArmRun]]] = {}


def lr_sweep(config: TarFlowCheckConfig, ctx: RunContext) -> dict[str, dict[float, ArmRun]]:
    """Every arm trained at every rate of ``config.lrs`` on ``config.sweep_seed`` (full budget)."""
    key = (str(ctx.run_dir), config)
    if key not in _SWEEPS:
        _SWEEPS.clear()  # one run at a time: never keep an earlier run's models' numbers
        _SWEEPS[key] = {
            arm: {lr: _train_seed(config, arm, lr, config.sweep_seed, ctx) for lr in config.lrs}
            for arm in ARMS
        }
    return _SWEEPS[key]


def choose_lr(runs: dict[float, ArmRun]) -> float:
    """The rate with the lowest best validation bits/dim (non-finite counts as worst; ties: the first)."""
    return best_on_validation(runs, lambda run: run.metrics["best_val_bpd"])


class TarFlowCheck(ClaimCheck[TarFlowCheckConfig]):
    slug = "tarflow"
    claim = CLAIM
    presets = {
        "tiny": TarFlowCheckConfig(
            channels=16,
            num_blocks=2,
            layers_per_block=2,
            head_dim=8,
            l8_channels=8,  # 2 blocks x 8 layers at width 8: +2.6% parameters
            l8_head_dim=4,
            n_train=128,
            steps=16,  # 16 (20 before the 8-layer arm was added): tiny stays under 10 s
            batch_size=32,
            lrs=(1e-3, 4e-3),
            warmup_steps=2,
            eval_every=8,
            n_dequant=1,
            conditional=True,
            cond_steps=5,
            guidance_weights=(0.0, 1.0),
            samples_per_class=2,
        ),
        "small": TarFlowCheckConfig(),
        # The official MNIST notebook's TarFlow (width 128, head dim 64, 4 blocks x 4 layers) with the
        # patch size set for 8x8 inputs, the official 100-epoch likelihood budget (~1000 steps) x 2;
        # its tarflow_l8 arm has the paper's 8 layers per block at about the same size.
        "full": TarFlowCheckConfig(
            channels=128,
            num_blocks=4,
            layers_per_block=4,
            head_dim=64,
            l8_channels=90,  # 8 layers per block, 2 heads of 45: -0.9% parameters
            l8_head_dim=45,
            steps=2000,
            batch_size=128,
            lrs=(5e-4, 1e-3, 2e-3),
            conditional=True,
            cond_steps=2000,
            eval_every=20,
        ),
    }
    default_seeds = {"tiny": 1, "small": 2, "full": 3}

    def run_seed(self, config: TarFlowCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        data, x_train, y_train = _data(config)
        metrics: dict[str, dict[str, float]] = {}
        series: dict[str, Any] = {"curves": {}, "seconds": {}, "samples": {}, "sweep": {}}
        gen = torch.Generator().manual_seed(seed)

        # -- the learning-rate sweep (seed ``sweep_seed``, validation split, the same for every arm) -----
        ctx.progress("lr sweep", 0, 1)
        sweep = lr_sweep(config, ctx)
        ctx.progress("lr sweep", 1, 1)
        chosen = {arm: choose_lr(sweep[arm]) for arm in ARMS}
        series["sweep"] = {
            arm: {f"{lr:g}": sweep[arm][lr].metrics["best_val_bpd"] for lr in config.lrs} for arm in ARMS
        }

        # -- the four likelihood arms at their chosen rates (same data, steps, optimiser) -------------
        for arm in ARMS:
            run = (
                sweep[arm][chosen[arm]]
                if seed == config.sweep_seed
                else _train_seed(config, arm, chosen[arm], seed, ctx)
            )
            metrics[arm] = dict(run.metrics)
            for part, sec in run.seconds.items():
                series["seconds"][f"{arm}/{part}"] = sec
            series["curves"][arm] = run.curves
            series["samples"][arm] = run.samples
        n_tf = metrics["tarflow"]["params"]
        metrics["coupling"]["param_gap"] = abs(metrics["coupling"]["params"] - n_tf) / n_tf
        metrics["coupling"]["hidden"] = float(_coupling_config(config).hidden)
        n_l8 = metrics["tarflow_l8"]["params"]
        metrics["tarflow_l8"]["param_gap"] = abs(n_l8 - n_tf) / n_tf
        metrics["coupling"]["param_gap_l8"] = abs(metrics["coupling"]["params"] - n_l8) / n_l8

        # -- secondary: class-conditional TarFlow, noise augmentation, guidance, denoising ----------
        if config.conditional:
            self._conditional(
                config, chosen["tarflow"], seed, data, x_train, y_train, metrics, series, ctx, gen
            )
        return SeedOutcome(metrics=metrics, series=series)

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
            "tarflow_l8": PALETTE[2],
        }
        fig, axes = new_figure(ncols=2, width=4.4)
        for arm in ARMS:
            curves = [o.series["curves"][arm] for o in outcomes]
            train = [np.convolve(c["train_bpd"], np.ones(10) / 10, mode="valid").tolist() for c in curves]
            n = min(len(t) for t in train)
            plot_band(axes[0], list(range(10, 10 + n)), [t[:n] for t in train], label=arm, color=colors[arm])
            plot_band(
                axes[1], curves[0]["val_steps"], [c["val_bpd"] for c in curves], label=arm, color=colors[arm]
            )
        axes[0].set(xlabel="optimiser step", ylabel="train bits/dim (10-step mean)", title="Training loss")
        axes[1].set(
            xlabel="optimiser step", ylabel="validation bits/dim", title="Validation (fixed dequantisation)"
        )
        lo = min(min(o.series["curves"][a]["val_bpd"]) for o in outcomes for a in ARMS)
        for ax in axes:
            ax.set_ylim(lo - 0.2, lo + 2.5)
            ax.legend()
        ctx.save_figure(
            fig,
            "training_curves",
            "Training and validation bits/dim of the four arms on digits (mean and min-max over seeds).",
        )

        s = outcomes[0].series["samples"]
        rows: list[tuple[str, Any]] = [(arm, np.asarray(s[arm])[:10]) for arm in ARMS]
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
            "Samples from the likelihood-trained TarFlow (4 and 8 layers per block), no-flip ablation and "
            "coupling flow, and from "
            "the class-conditional TarFlow (sigma-noise training) at guidance weights w, before and after "
            "denoising.",
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


CHECK = TarFlowCheck()

__all__ = ["CHECK", "CLAIM", "TarFlowCheck", "TarFlowCheckConfig"]
