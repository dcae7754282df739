"""Claim check for *Advancing Constrained Monotonic Neural Networks: Achieving Universal
Approximation Beyond Bounded Activations* (Sartor, Sinigaglia, Susto, ICML 2025,
https://arxiv.org/abs/2505.02537).

The paper proves that non-positive-weight MLPs with convex activations are universal monotone
approximators and proposes a sign-adaptive layer that "compares favourably to traditional
monotonic architectures" and "reduces sensitivity to initialisation" (abstract and the paper's
experimental evaluation). The paper's numerical tables were not recovered, so the experiments below
are our own design, all with Adam (lr 3e-3) and early stopping on a validation split, every arm
trained on the same data in the same run:

1. Expressivity, 1-D: tanh(3x) and min(x, 0) on [-2, 2] (512 points, noise 0.01), 1000 steps; test
   MSE against the noiseless target on a grid (``full`` adds x^3/8 and a smoothed staircase).
2. Robustness, 8-D: f(x) = sum tanh(2x_i) + softplus(x1 + x2) + min(x3, x4), 2000 samples, noise
   0.05, depth 3, width 64; each seed trains ``grid_reps`` (2) initialisations at every init scale in
   {0.1, 1, 3} for up to ``steps_grid`` = 5000 steps: 6 (scale, init) cells per seed, the same cells
   in every arm. A cell *fails* when its test MSE exceeds ``failure_factor`` (2) x the best grid
   arm's median on that seed (our declared rule).
3. Auto MPG (vega-datasets ``cars``), 5-fold CV, RMSE in miles per gallon, decreasing in
   displacement, horsepower and weight, 1000 steps.

Arms (small): ours ``sign_adaptive``; baselines ``nonneg_switch_square`` (square-reparameterised
weights + ReLU with half of each layer's neurons reflected, Runje & Shankaranarayana 2023) on all
three experiments and ``nonneg_sigmoid_exp`` (exp-reparameterised weights + sigmoid, the classic
bounded construction) on Auto MPG; ``nonneg_relu`` (convex functions only) and ``nonpos_relu`` (the
paper's universality construction) in 1-D; ``nonpos_relu`` and ``minmax`` (Sill, 8 groups x 8) on
Auto MPG. ``full`` runs every arm everywhere (``sign_adaptive_post`` and ``nonneg_sigmoid_exp`` on
the grid too) with 10 initialisations per scale.
References: ``unconstrained`` (plain ReLU MLP, positive control, not monotone; on the grid trained
once per seed at init scale 1) and ``constant`` (the training-mean predictor).

Gates: the unconstrained MLP fits the 8-D target to <= 5 % of the constant predictor's MSE; Auto MPG
RMSE <= 0.6x the constant's; 1-D MSE <= 1e-3 (the noise variance is 1e-4).

Headline, declared before the small run: ``fails_less_than_square``, sign-adaptive fails on fewer
grid cells than the square-reparameterised net, paired over seeds and cells (two-stage bootstrap),
smallest effect 1/3 (one of the three init scales, all of its initialisations, per seed).
Supporting: non-inferiority of sign-adaptive's log test MSE over the grid cells against the square
net (margin log 1.1, our "within 10 %" rule); the same two comparisons against exp + sigmoid
wherever it runs on the grid (``full``, or ``arms_grid`` set so); our reproduction
rule, min over {grid median MSE, Auto MPG RMSE} of sign-adaptive's error over the best constrained
baseline's <= 1.10; Auto MPG within one fold-std of the best monotone baseline; universality, the
log MSE ratio of non-pos+ReLU to the unconstrained MLP <= log 5 on both 1-D targets, and of
non-neg+ReLU to sign-adaptive >= log 10 (it can represent convex functions only); zero monotonicity
violations for every constrained arm (10^4 pairs per feature; 2.10^3 for grid fits). Per-seed values
of point criteria are reduced by the median over seeds.

History (issue 43): the old stability criterion compared the IQR of grid test MSE with the exp +
sigmoid net's after 1000 steps; that net fits badly at every scale (median MSE 3.3 against a target
variance of 5.8), so the comparison (IQR 1.99 vs 1.89, within seed noise) said nothing about
sensitivity to initialisation. ``nonpos_relu`` left the small grid (not a baseline the paper claims
to beat) and the grid took one initialisation per scale, to fit 5000 steps into the small budget.

Changed after seeing run 20261205T161313129686Z-bd8790 (5 seeds x 3 cells; headline -0.267, 95 % CI
[-0.6, 0], inconclusive (underpowered)), because one initialisation per scale gave each seed only
three paired items, so a seed's item resample often held no differing cell and the cluster
bootstrap's upper bound sat at 0: the grid now takes two initialisations per scale (6 cells per seed,
4 seeds: 24 paired cells per arm against 15), still for 5000 steps. To pay for it within the same
budget, ``nonneg_sigmoid_exp`` left the small grid. It is the arm that fits worst there (per-seed
median test MSE 0.10-0.44 against sign-adaptive's 0.02-0.03 and the square net's 0.05-0.08; stuck at
the constant predictor from init scale 0.1 on 3 of 5 seeds), so it is the least informative
comparison for stability among arms that fit (the issue's point), and its failure comparison had
already held in that run (-0.533, 95 % CI [-0.867, -0.2]). It still runs on Auto MPG, and on the
grid in ``full``. The criteria, the failure rule, the smallest effect (1/3) and the margin are
unchanged. Seeds went from 5 to 4 for the same budget reason.

Speed (round 6, issue 45 item 1): bit-identical code speed-ups only, no budget change: one Adam
group in ``fit_regression`` (there is no weight decay, so the same update) and a wrapper that skips
``fit``'s per-step ``model.train()`` module walk. Test predictions after training equal the earlier
code's exactly (compared on the 8-D grid for the small grid arms and init scales, 5000 steps). A
relu split of W into W⁺/W⁻ was tried and dropped: its subgradient at W = 0 exactly differs from
clamp's and moved one grid cell of seed 2 (run 20261206T041007326789Z-94580a; headline unchanged).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from sklearn.model_selection import KFold
from torch import nn

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields

from .data import TARGETS_1D, RegressionSplit, load_auto_mpg, synthetic_1d, synthetic_8d
from .layers import scale_init_
from .models import ConstrainedMLP, MinMaxNetwork, NonPositiveMLP, SignAdaptiveMLP, UnconstrainedMLP
from .train import fit_regression, predict
from .verify import check_monotonicity

ARMS: tuple[str, ...] = (
    "sign_adaptive",
    "sign_adaptive_post",
    "nonneg_relu",
    "nonneg_sigmoid_exp",
    "nonneg_switch_square",
    "nonpos_relu",
    "minmax",
    "unconstrained",
)
MONOTONE_BASELINES = tuple(a for a in ARMS if a not in ("sign_adaptive", "unconstrained"))


def build_model(
    arm: str, dims: Sequence[int], monotone: Sequence[int], generator: torch.Generator
) -> nn.Module:
    """The network for ``arm`` with layer sizes ``dims`` (``minmax`` uses only ``dims[0]``)."""
    if arm == "sign_adaptive":
        return SignAdaptiveMLP(dims, activation="relu", monotone=monotone, generator=generator)
    if arm == "sign_adaptive_post":
        return SignAdaptiveMLP(
            dims, activation="relu", monotone=monotone, variant="post", generator=generator
        )
    if arm == "nonneg_relu":
        return ConstrainedMLP(
            dims, activation="relu", weight_param="abs", monotone=monotone, generator=generator
        )
    if arm == "nonneg_sigmoid_exp":
        return ConstrainedMLP(
            dims, activation="sigmoid", weight_param="exp", monotone=monotone, generator=generator
        )
    if arm == "nonneg_switch_square":
        return ConstrainedMLP(
            dims,
            activation="relu",
            weight_param="square",
            convexity_break="random",
            monotone=monotone,
            generator=generator,
        )
    if arm == "nonpos_relu":
        return NonPositiveMLP(dims, activation="relu", monotone=monotone, generator=generator)
    if arm == "minmax":
        return MinMaxNetwork(dims[0], groups=8, group_size=8, monotone=monotone, generator=generator)
    if arm == "unconstrained":
        return UnconstrainedMLP(dims, activation="relu", generator=generator)
    raise ValueError(f"unknown arm {arm!r}; choose one of {ARMS}")


def _check_arms(name: str, arms: tuple[str, ...]) -> None:
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise ValueError(f"{name}: unknown arms {unknown}; choose from {ARMS}")


@dataclass(frozen=True)
class MonotonicMLPConfig:
    """Claim-check configuration; defaults are the ``small`` preset."""

    # 1. expressivity (1-D)
    targets_1d: tuple[str, ...] = ("tanh", "neg_part")  # the targets the criteria read
    arms_1d: tuple[str, ...] = ("sign_adaptive", "nonneg_relu", "nonpos_relu", "unconstrained")
    width_1d: int = 32
    hidden_1d: int = 2
    steps_1d: int = 1000
    # 2. robustness grid (8-D)
    run_grid: bool = True
    arms_grid: tuple[str, ...] = ("sign_adaptive", "nonneg_switch_square")  # arms that fit (issue 43)
    init_scales: tuple[float, ...] = (0.1, 1.0, 3.0)
    grid_reps: int = 2  # initialisations per init scale and seed: 6 paired cells per seed
    grid_n: int = 2000
    width_grid: int = 64
    hidden_grid: int = 3
    steps_grid: int = 5000
    grid_reference: bool = True  # fit the unconstrained MLP at init scale 1 (the gate's control)
    grid_reference_reps: int = 1  # its initialisations per seed (the first ones of the grid's reps)
    failure_factor: float = 2.0  # a grid fit fails when its test MSE > this x the best arm's median
    # 3. Auto MPG
    run_mpg: bool = True
    arms_mpg: tuple[str, ...] = (
        "sign_adaptive",
        "nonneg_sigmoid_exp",
        "nonneg_switch_square",
        "nonpos_relu",
        "minmax",
        "unconstrained",
    )
    folds: int = 5
    width_mpg: int = 32
    hidden_mpg: int = 2
    steps_mpg: int = 1000
    # shared
    lr: float = 3e-3
    batch_size: int = 256
    eval_every: int = 20
    patience: int = 15
    verify_pairs: int = 10_000
    verify_pairs_grid: int = 2_000

    def __post_init__(self) -> None:
        unknown = [t for t in self.targets_1d if t not in TARGETS_1D]
        if unknown or not self.targets_1d:
            raise ValueError(f"targets_1d must be a non-empty subset of {sorted(TARGETS_1D)}, got {unknown}")
        for name in ("arms_1d", "arms_grid", "arms_mpg"):
            _check_arms(name, getattr(self, name))
        if "minmax" in self.arms_1d or "minmax" in self.arms_grid:
            raise ValueError("minmax is a scalar-output network used on Auto MPG only")
        if "unconstrained" in self.arms_grid:
            raise ValueError(
                "the unconstrained MLP is the grid's reference: set grid_reference, not arms_grid"
            )
        if not self.failure_factor > 1.0:
            raise ValueError(f"failure_factor must be > 1, got {self.failure_factor}")
        if self.run_grid and (not self.init_scales or any(s <= 0 for s in self.init_scales)):
            raise ValueError(f"init_scales must be positive, got {self.init_scales}")
        if self.run_mpg and self.folds < 2:
            raise ValueError(f"folds must be at least 2, got {self.folds}")
        check_fields(
            self,
            positive_int=(
                "width_1d",
                "hidden_1d",
                "steps_1d",
                "grid_reps",
                "grid_reference_reps",
                "width_grid",
                "hidden_grid",
                "steps_grid",
                "width_mpg",
                "hidden_mpg",
                "steps_mpg",
                "batch_size",
                "eval_every",
                "patience",
                "verify_pairs",
                "verify_pairs_grid",
            ),
            positive=("lr",),
        )
        if self.grid_n < 50:
            raise ValueError(f"grid_n must be at least 50, got {self.grid_n}")


def _crit(name: str, arm: str, metric: str, op: Any, description: str, **kw: Any) -> Criterion:
    return Criterion(
        name, arm=arm, metric=metric, op=op, reduce=kw.pop("reduce", "median"), description=description, **kw
    )


_CONSTRAINED_ARMS = tuple(a for a in ARMS if a != "unconstrained")
REFERENCES: tuple[str, ...] = ("unconstrained", "constant")
FAIL_EFFECT = 1.0 / 3.0
FAIL_SOURCE = (
    "one of the three init scales (all of its initialisations) failing more often per seed, "
    "i.e. a third of the grid's cells"
)
MSE_MARGIN = math.log(1.10)
MSE_SOURCE = "declared reproduction rule: within 10 % of the best constrained baseline's error"
UNIVERSAL_FACTOR = 5.0
CONVEX_FAIL_FACTOR = 10.0


def _criteria(cfg: MonotonicMLPConfig) -> tuple[Criterion, ...]:
    """The claim's criteria for the arms and experiments ``cfg`` runs (declared before any run)."""
    out: list[Criterion] = []
    grid = cfg.run_grid and "sign_adaptive" in cfg.arms_grid
    for base, short, head in (
        ("nonneg_switch_square", "square", True),
        ("nonneg_sigmoid_exp", "exp", False),
        ("nonpos_relu", "nonpos", False),
    ):
        if not (grid and base in cfg.arms_grid):
            continue
        out.append(
            Criterion(
                f"fails_less_than_{short}",
                arm="sign_adaptive",
                metric="grid/failed",
                op="<",
                other_arm=base,
                smallest_effect=FAIL_EFFECT,
                effect_source=FAIL_SOURCE,
                description="8-D init grid: sign-adaptive fails (test MSE > "
                f"{cfg.failure_factor:g}x the best arm's median) on fewer (scale, init) cells than {base} "
                "(paired over seeds and cells)" + (" - the claim of lower init sensitivity" if head else ""),
            )
        )
        out.append(
            Criterion(
                f"grid_error_vs_{short}",
                arm="sign_adaptive",
                metric="grid/log_mse",
                op="<",
                other_arm=base,
                smallest_effect=MSE_MARGIN,
                effect_source=MSE_SOURCE,
                comparison="non_inferiority",
                description=f"8-D init grid: sign-adaptive's log test MSE is no more than log 1.1 above "
                f"{base}'s (non-inferiority, paired over seeds and cells)",
            )
        )
    if (grid and cfg.arms_grid != ("sign_adaptive",)) or cfg.run_mpg:
        out.append(
            _crit(
                "accurate_vs_constrained",
                "sign_adaptive",
                "best_ratio_vs_constrained",
                "<=",
                "sign-adaptive's error is within 10% of the best constrained baseline on the 8-D grid "
                "(median MSE) or on Auto MPG (RMSE): our reproduction rule (min of the two ratios)",
                threshold=1.10,
            )
        )
    if cfg.run_mpg and "sign_adaptive" in cfg.arms_mpg:
        out.append(
            _crit(
                "mpg_within_one_std",
                "sign_adaptive",
                "mpg/excess_in_std",
                "<=",
                "Auto MPG: RMSE at most one fold-std above the best monotone baseline",
                threshold=1.0,
            )
        )
    one_d = set(cfg.arms_1d)
    for target, text in (("tanh", "tanh(3x)"), ("neg_part", "min(x, 0)")):
        if target not in cfg.targets_1d:
            continue
        if {"nonpos_relu", "unconstrained"} <= one_d:
            out.append(
                _crit(
                    f"nonpos_universal_{target}",
                    "nonpos_relu",
                    f"{target}/log_ratio_to_unconstrained",
                    "<=",
                    f"non-pos+ReLU fits {text} within {UNIVERSAL_FACTOR:g}x the unconstrained MLP's MSE "
                    "(universality; log of the per-seed MSE ratio)",
                    threshold=math.log(UNIVERSAL_FACTOR),
                )
            )
        if {"nonneg_relu", "sign_adaptive"} <= one_d:
            out.append(
                _crit(
                    f"nonneg_relu_fails_{target}",
                    "nonneg_relu",
                    f"{target}/log_ratio_to_ours",
                    ">=",
                    f"non-neg+ReLU (convex functions only) fails on {text}: >= {CONVEX_FAIL_FACTOR:g}x "
                    "sign-adaptive's MSE (log of the per-seed MSE ratio)",
                    threshold=math.log(CONVEX_FAIL_FACTOR),
                )
            )
    run = (
        set(cfg.arms_1d)
        | (set(cfg.arms_grid) if cfg.run_grid else set())
        | (set(cfg.arms_mpg) if cfg.run_mpg else set())
    )
    out += [
        _crit(
            f"monotone_{arm}",
            arm,
            "violations",
            "<=",
            f"{arm}: zero monotonicity violations on every fit",
            threshold=0.0,
            reduce="max",
        )
        for arm in _CONSTRAINED_ARMS
        if arm in run
    ]
    # tiny: smoke conditions only (tiny never judges the claim)
    out.append(
        _crit(
            "tiny_beats_convex_on_neg_part",
            "sign_adaptive",
            "neg_part/test_mse",
            "<",
            "sign-adaptive MSE on min(x, 0) below half of non-neg+ReLU's",
            other_arm="nonneg_relu",
            factor=0.5,
            scales=("tiny",),
        )
    )
    out += [
        _crit(
            f"tiny_monotone_{arm}",
            arm,
            "violations",
            "<=",
            f"{arm}: zero violations",
            threshold=0.0,
            reduce="max",
            scales=("tiny",),
        )
        for arm in ("sign_adaptive", "nonneg_relu")
    ]
    return tuple(out)


def _gates(cfg: MonotonicMLPConfig) -> tuple[Criterion, ...]:
    gates: list[Criterion] = []
    if cfg.run_grid and cfg.grid_reference:
        gates.append(
            _crit(
                "grid_target_learnable",
                "unconstrained",
                "grid/test_mse",
                "<=",
                "the unconstrained ReLU MLP (positive control) fits the 8-D target at init scale 1 to at "
                "most 5 % of the constant predictor's MSE: the budget lets a network learn it",
                other_arm="constant",
                factor=0.05,
            )
        )
    if cfg.run_mpg and "unconstrained" in cfg.arms_mpg:
        gates.append(
            _crit(
                "mpg_learnable",
                "unconstrained",
                "mpg/rmse",
                "<=",
                "Auto MPG: the unconstrained MLP's RMSE is at most 0.6x the constant predictor's",
                other_arm="constant",
                factor=0.6,
            )
        )
    if {"unconstrained"} <= set(cfg.arms_1d):
        gates += [
            _crit(
                f"fits_1d_{t}",
                "unconstrained",
                f"{t}/test_mse",
                "<=",
                f"1-D {t}: the unconstrained MLP fits the target (MSE <= 1e-3; the noise variance is 1e-4)",
                threshold=1e-3,
            )
            for t in cfg.targets_1d
            if t in ("tanh", "neg_part")
        ]
    return tuple(gates)


def _claim(cfg: MonotonicMLPConfig) -> Claim:
    crit = _criteria(cfg)
    names = [c.name for c in crit]
    headline = next(
        (
            n
            for n in ("fails_less_than_square", "fails_less_than_exp", "accurate_vs_constrained")
            if n in names
        ),
        None,
    )
    return dataclasses.replace(CLAIM_TEMPLATE, criteria=crit, gates=_gates(cfg), headline=headline)


CLAIM_TEMPLATE = Claim(
    statement=(
        "Sign-adaptive monotone MLPs (unconstrained weights, σ or its reflection per connection by weight "
        "sign) are guaranteed monotone, and fit monotone targets as well as, and more reliably across "
        "initialisations than, non-negative-weight MLPs with bounded or reparameterised constraints; "
        "non-positive-weight ReLU MLPs are universal where non-negative ReLU MLPs are not."
    ),
    source="Abstract and Sec. 4-5 (Theorems on alternating saturation and non-positive weights; experiments)",
    ours="sign_adaptive",
    baselines=tuple(a for a in ARMS if a not in ("sign_adaptive", "unconstrained")),
    references=REFERENCES,
    controls=("unconstrained",),
    criteria=_criteria(MonotonicMLPConfig()),
    gates=_gates(MonotonicMLPConfig()),
    headline="fails_less_than_square",
    min_seeds=3,
    setup_notes=(
        "The paper's benchmark numbers were not recovered; the experiments are our own design: 1-D targets "
        "tanh(3x) and min(x, 0) (the universality criteria), an 8-D init-scale grid ({0.1, 1, 3} x 2 inits "
        "per seed x 4 seeds, 5000 Adam steps) with sign-adaptive against the square + switched-ReLU "
        "non-negative net (exp + sigmoid joins it in full), and Auto MPG 5-fold CV (vega-datasets) with "
        "the exp + sigmoid net too. Adam lr 3e-3 (trainer "
        "default 1e-3) with early stopping on a validation split for every arm, widths 32 (1-D, Auto MPG) "
        "and 64 (8-D). Which non-negative nets use exp vs square reparameterisation and sigmoid vs switched "
        "ReLU is our pairing. References: the unconstrained ReLU MLP (positive control, not monotone) and "
        "the constant training-mean predictor."
    ),
)
CLAIM = _claim(MonotonicMLPConfig())


def _mse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean((a - b) ** 2))


class MonotonicMLPCheck(ClaimCheck[MonotonicMLPConfig]):
    slug = "monotonic_mlp"
    claim = CLAIM
    presets = {
        "tiny": MonotonicMLPConfig(
            targets_1d=("tanh", "neg_part"),
            arms_1d=("sign_adaptive", "nonneg_relu", "unconstrained"),
            steps_1d=300,
            run_grid=False,
            run_mpg=False,
            verify_pairs=2000,
        ),
        "small": MonotonicMLPConfig(),
        "full": MonotonicMLPConfig(
            targets_1d=("tanh", "neg_part", "cubic", "staircase"),
            arms_1d=tuple(a for a in ARMS if a != "minmax"),
            arms_grid=tuple(a for a in ARMS if a not in ("minmax", "unconstrained")),
            arms_mpg=ARMS,
            width_1d=64,
            steps_1d=10_000,
            grid_reps=10,
            grid_reference_reps=10,
            steps_grid=10_000,
            width_mpg=64,
            steps_mpg=10_000,
            patience=50,
        ),
    }
    default_seeds = {"tiny": 1, "small": 4, "full": 5}

    def claim_for(self, config: MonotonicMLPConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: MonotonicMLPConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # widths <= 64: extra intra-op threads only spin on a shared machine
        try:
            return self._run_seed(config, seed, ctx)
        finally:
            torch.set_num_threads(threads)

    def _run_seed(self, config: MonotonicMLPConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        metrics: dict[str, dict[str, float]] = {a: {} for a in (*ARMS, "constant")}
        violations: dict[str, int] = {}
        series: dict[str, Any] = {}

        def fit(arm: str, dims: list[int], split: Any, init_seed: int, steps: int, scale: float = 1.0) -> Any:
            model = build_model(arm, dims, split.monotone, torch.Generator().manual_seed(init_seed))
            if scale != 1.0:
                scale_init_(model, scale)
            fit_regression(
                model,
                split.X_train,
                split.y_train,
                split.X_val,
                split.y_val,
                steps=steps,
                lr=config.lr,
                batch_size=config.batch_size,
                eval_every=config.eval_every,
                patience=config.patience,
                seed=init_seed,
            )
            return model

        def verify(arm: str, model: nn.Module, X: np.ndarray, monotone: Sequence[int], pairs: int) -> None:
            if arm == "unconstrained":
                return
            n = check_monotonicity(model, X, monotone, n_pairs=pairs, seed=seed)
            violations[arm] = violations.get(arm, 0) + n

        # 1. expressivity (1-D)
        dims_1d = [1] + [config.width_1d] * config.hidden_1d + [1]
        curves: dict[str, Any] = {}
        total = len(config.targets_1d) * len(config.arms_1d)
        for t, target in enumerate(config.targets_1d):
            split = synthetic_1d(target, seed=seed)
            curves[target] = {"x": split.X_test[::16, 0], "target": split.y_test[::16]}
            for a, arm in enumerate(config.arms_1d):
                ctx.progress("1-D fits", t * len(config.arms_1d) + a, total)
                model = fit(arm, dims_1d, split, 1000 * seed + a, config.steps_1d)
                pred = predict(model, split.X_test)
                metrics[arm][f"{target}/test_mse"] = _mse(pred, split.y_test)
                curves[target][arm] = pred[::16]
                verify(arm, model, split.X_train, split.monotone, config.verify_pairs)
            mse = {arm: metrics[arm][f"{target}/test_mse"] for arm in config.arms_1d}
            if "unconstrained" in mse and "nonpos_relu" in mse:
                metrics["nonpos_relu"][f"{target}/log_ratio_to_unconstrained"] = math.log(
                    mse["nonpos_relu"] / mse["unconstrained"]
                )
            if "sign_adaptive" in mse and "nonneg_relu" in mse:
                metrics["nonneg_relu"][f"{target}/log_ratio_to_ours"] = math.log(
                    mse["nonneg_relu"] / mse["sign_adaptive"]
                )
        series["curves_1d"] = curves

        # 2. robustness grid (8-D): same data for every arm and init; cells = (init scale, init)
        items: dict[str, dict[str, np.ndarray]] = {}
        if config.run_grid:
            split = synthetic_8d(n=config.grid_n, seed=seed)
            mu, sd = float(split.y_train.mean()), float(split.y_train.std())
            std_split = RegressionSplit(
                split.X_train,
                (split.y_train - mu) / sd,
                split.X_val,
                (split.y_val - mu) / sd,
                split.X_test,
                split.y_test,
                split.monotone,
            )
            dims = [8] + [config.width_grid] * config.hidden_grid + [1]
            grid: dict[str, list[list[float]]] = {arm: [] for arm in config.arms_grid}
            total = len(config.arms_grid) * len(config.init_scales) * config.grid_reps
            ref_reps = min(config.grid_reference_reps, config.grid_reps)
            total += ref_reps if config.grid_reference else 0
            done = 0
            for arm in config.arms_grid:
                for scale in config.init_scales:
                    row = []
                    for rep in range(config.grid_reps):
                        ctx.progress("8-D grid", done, total)
                        done += 1
                        model = fit(
                            arm, dims, std_split, 7919 * seed + 31 * rep + 1, config.steps_grid, scale
                        )
                        row.append(_mse(predict(model, split.X_test) * sd + mu, split.y_test))
                        verify(arm, model, split.X_train, split.monotone, config.verify_pairs_grid)
                    grid[arm].append(row)
            medians = {arm: float(np.median(v)) for arm, v in grid.items()}
            best = min(medians.values())
            for arm, values in grid.items():
                flat = np.asarray(values).ravel()  # cells in (scale, init) order, the same for every arm
                q25, q75 = np.percentile(np.log(flat), [25, 75])
                metrics[arm]["grid/median_mse"] = medians[arm]
                metrics[arm]["grid/iqr_log_mse"] = float(q75 - q25)
                items[arm] = {
                    "grid/failed": (flat > config.failure_factor * best).astype(float),
                    "grid/log_mse": np.log(flat),
                }
            # references: the constant training-mean predictor and the unconstrained MLP at scale 1
            metrics["constant"]["grid/test_mse"] = _mse(np.full_like(split.y_test, mu), split.y_test)
            if config.grid_reference:
                ref = []
                for rep in range(ref_reps):
                    ctx.progress("8-D grid", done, total)
                    done += 1
                    model = fit(
                        "unconstrained", dims, std_split, 7919 * seed + 31 * rep + 1, config.steps_grid
                    )
                    ref.append(_mse(predict(model, split.X_test) * sd + mu, split.y_test))
                metrics["unconstrained"]["grid/test_mse"] = float(np.median(ref))
                grid["unconstrained (scale 1)"] = [ref]
            series["grid"] = {
                "init_scales": list(config.init_scales),
                "test_mse": grid,
                "failure_threshold": config.failure_factor * best,
            }

        # 3. Auto MPG, K-fold CV
        if config.run_mpg:
            ds = load_auto_mpg()
            dims = [ds.X.shape[1]] + [config.width_mpg] * config.hidden_mpg + [1]
            folds = KFold(config.folds, shuffle=True, random_state=seed).split(ds.X)
            rmse: dict[str, list[float]] = {arm: [] for arm in config.arms_mpg}
            const_rmse: list[float] = []
            for k, (train_idx, test_idx) in enumerate(folds):
                ctx.progress("Auto MPG folds", k, config.folds)
                rng = np.random.default_rng(seed * 100 + k)
                perm = rng.permutation(train_idx)
                n_val = max(1, len(perm) // 5)  # 20% of the training fold for early stopping
                val_idx, fit_idx = perm[:n_val], perm[n_val:]
                x_mu, x_sd = ds.X[fit_idx].mean(0), ds.X[fit_idx].std(0) + 1e-12
                y_mu, y_sd = float(ds.y[fit_idx].mean()), float(ds.y[fit_idx].std())

                def xs(idx: np.ndarray, x_mu: np.ndarray = x_mu, x_sd: np.ndarray = x_sd) -> np.ndarray:
                    return (ds.X[idx] - x_mu) / x_sd  # positive scaling keeps the directions

                split = RegressionSplit(
                    xs(fit_idx),
                    (ds.y[fit_idx] - y_mu) / y_sd,
                    xs(val_idx),
                    (ds.y[val_idx] - y_mu) / y_sd,
                    xs(test_idx),
                    ds.y[test_idx],
                    ds.monotone,
                )
                const_rmse.append(float(np.sqrt(_mse(np.full(len(test_idx), y_mu), split.y_test))))
                for a, arm in enumerate(config.arms_mpg):
                    model = fit(arm, dims, split, 500 * seed + 10 * k + a, config.steps_mpg)
                    pred = predict(model, split.X_test) * y_sd + y_mu
                    rmse[arm].append(float(np.sqrt(_mse(pred, split.y_test))))
                    verify(arm, model, split.X_train, ds.monotone, config.verify_pairs)
            rmse["constant"] = const_rmse
            for arm, fold_rmse in rmse.items():
                metrics[arm]["mpg/rmse"] = float(np.mean(fold_rmse))
                metrics[arm]["mpg/rmse_std"] = float(np.std(fold_rmse, ddof=1))
            series["mpg_rmse"] = rmse

        # derived metrics for our reproduction rule (criterion accurate_vs_constrained)
        ours = metrics["sign_adaptive"]
        ratios = []
        if config.run_grid and "sign_adaptive" in config.arms_grid:
            base = [metrics[a]["grid/median_mse"] for a in config.arms_grid if a in MONOTONE_BASELINES]
            if base:
                ratios.append(ours["grid/median_mse"] / min(base))
                ours["grid/ratio_vs_best_constrained"] = ratios[-1]
        if config.run_mpg and "sign_adaptive" in config.arms_mpg:
            base = [metrics[a]["mpg/rmse"] for a in config.arms_mpg if a in MONOTONE_BASELINES]
            if base:
                ratios.append(ours["mpg/rmse"] / min(base))
                ours["mpg/ratio_vs_best_constrained"] = ratios[-1]
                std = ours["mpg/rmse_std"]
                ours["mpg/excess_in_std"] = (ours["mpg/rmse"] - min(base)) / std if std > 0 else float("inf")
        if ratios:
            ours["best_ratio_vs_constrained"] = min(ratios)
        for arm, count in violations.items():
            metrics[arm]["violations"] = float(count)
        return SeedOutcome(metrics={a: m for a, m in metrics.items() if m}, series=series, items=items)

    def make_figures(
        self, config: MonotonicMLPConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import arm_color, new_figure

        targets = list(config.targets_1d)
        fig, axes = new_figure(ncols=len(targets), width=3.2)
        axes = np.atleast_1d(axes)
        curves = outcomes[0].series["curves_1d"]
        for ax, target in zip(axes, targets, strict=False):
            c = curves[target]
            ax.plot(c["x"], c["target"], color="black", linewidth=2.5, alpha=0.3, label="target")
            for arm in config.arms_1d:
                ref = arm == "unconstrained"  # the non-monotone reference: black dotted
                color = "black" if ref else arm_color(arm, CLAIM.ours, CLAIM.baselines)
                ax.plot(c["x"], c[arm], color=color, linestyle=":" if ref else "-", label=arm, linewidth=1)
            ax.set(title=target, xlabel="x", ylabel="f(x)")
        axes[0].legend(fontsize=6)
        ctx.save_figure(
            fig, "fits_1d", "1-D expressivity targets (thick grey) and each arm's fit, first seed."
        )

        if config.run_grid:
            fig, ax = new_figure(width=5.0)
            arms = list(config.arms_grid)
            for j, arm in enumerate(arms):
                vals = [
                    np.asarray(o.series["grid"]["test_mse"][arm]) for o in outcomes if "grid" in o.series
                ]  # each (scales, reps)
                for s in range(len(config.init_scales)):
                    ys = np.concatenate([v[s] for v in vals])
                    xs = np.full(len(ys), j + (s - 1) * 0.22)
                    ax.scatter(
                        xs, ys, s=10, color=arm_color(arm, CLAIM.ours, CLAIM.baselines), alpha=0.4 + 0.2 * s
                    )
            ax.set_xticks(range(len(arms)), arms, rotation=25, ha="right")
            ax.set(yscale="log", ylabel="test MSE (8-D)", title="Init scale 0.1 / 1 / 3 (left to right)")
            ctx.save_figure(
                fig,
                "init_grid",
                "8-D target: test MSE per arm over init scales and initialisations (all seeds).",
            )


CHECK = MonotonicMLPCheck()
