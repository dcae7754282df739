"""Claim check for *Advancing Constrained Monotonic Neural Networks: Achieving Universal
Approximation Beyond Bounded Activations* (Sartor, Sinigaglia, Susto, ICML 2025,
https://arxiv.org/abs/2505.02537).

The paper proves that non-positive-weight MLPs with convex activations are universal monotone
approximators and proposes a sign-adaptive layer that "compares favourably to traditional
monotonic architectures" and "reduces sensitivity to initialisation" (abstract and the paper's
experimental evaluation; the 1-D part echoes its Figure 1, bounded versus ReLU-based monotone
nets). The paper's numerical tables were not recovered, so the experiments below are our own
design, all with Adam and early stopping on a validation split, every arm trained on the same data
in the same run (lr 3e-3 and 1000 steps at small, our choice for a CPU budget; the trainer's
default lr is 1e-3):

1. Expressivity, 1-D: tanh(3x), min(x, 0), x³/8 and a smoothed staircase on [−2, 2] (512 points,
   noise 0.01), test MSE against the noiseless target on a grid.
2. Robustness, 8-D: f(x) = Σ tanh(2x_i) + softplus(x1 + x2) + min(x3, x4), 2000 samples, noise
   0.05, init scale ∈ {0.1, 1, 3} × ``grid_reps`` initialisations per seed, depth 3, width 64;
   median and IQR of test MSE over the scale × init grid, failure rate (test MSE > 2× the best
   arm's median).
3. Auto MPG (vega-datasets ``cars``), 5-fold CV, RMSE in miles per gallon, decreasing in
   displacement, horsepower and weight.

Arms:
    sign_adaptive         ours: sign-adaptive pre-activation MLP, ReLU, symmetric init
    sign_adaptive_post    the post-activation variant (1-D only at small)
    nonneg_relu           non-negative weights (abs) + ReLU: convex functions only (1-D only)
    nonneg_sigmoid_exp    the classic construction: exp-reparameterised weights + sigmoid
    nonneg_switch_square  square-reparameterised weights + ReLU with a random half of each layer's
                          neurons reflected (Runje & Shankaranarayana 2023)
    nonpos_relu           non-positive hidden weights + ReLU (the paper's universality result)
    minmax                Sill's min-max network, 8 groups x 8 (Auto MPG only)
    unconstrained         plain ReLU MLP (upper reference, not monotone)

Criteria (ours), declared before any small-scale run: zero monotonicity violations for every
constrained arm (10⁴ pairs per feature; 2·10³ for grid fits); universality (the paper's theorems):
non-pos+ReLU within 5x the unconstrained MSE on tanh(3x) and min(x, 0); non-neg+ReLU, which can
represent convex functions only, fails on the concave and the saturating target (≥ 10x
sign-adaptive's MSE); our reproduction rule for "compares favourably", min over {8-D grid,
Auto MPG} of sign-adaptive's error divided by the best constrained baseline's ≤ 1.10;
sign-adaptive's grid IQR below the exp- and square-reparameterised nets'; sign-adaptive's grid
median below the bounded baseline's (the catalog claim); Auto MPG within one fold-std of the best
monotone baseline. Per-seed values are reduced by the median over seeds. Which non-negative nets
carry which reparameterisation and activation is our choice.

Outcome at small (3 seeds, recorded after the criteria were fixed): every criterion held except
``more_stable_than_exp``. Sign-adaptive nets fit well at init scales 0.1 and 1 (8-D test MSE
0.11-0.15) but fail at scale 3 (2.6-13.5) within the 1000-step budget, so their IQR (≈ 2.0) is
above that of the exp + sigmoid net (≈ 1.9), which is uniformly poor (1.0-6.6 at every scale,
failure rate 1). Measured as spread, the claim of lower init sensitivity is therefore not
reproduced here; measured as median error and failure rate, sign-adaptive is far ahead.
"""

from __future__ import annotations

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
    targets_1d: tuple[str, ...] = ("tanh", "neg_part", "cubic", "staircase")
    arms_1d: tuple[str, ...] = (
        "sign_adaptive",
        "sign_adaptive_post",
        "nonneg_relu",
        "nonneg_sigmoid_exp",
        "nonneg_switch_square",
        "nonpos_relu",
        "unconstrained",
    )
    width_1d: int = 32
    hidden_1d: int = 2
    steps_1d: int = 1000
    # 2. robustness grid (8-D)
    run_grid: bool = True
    arms_grid: tuple[str, ...] = (
        "sign_adaptive",
        "nonneg_sigmoid_exp",
        "nonneg_switch_square",
        "nonpos_relu",
        "unconstrained",
    )
    init_scales: tuple[float, ...] = (0.1, 1.0, 3.0)
    grid_reps: int = 2
    grid_n: int = 2000
    width_grid: int = 64
    hidden_grid: int = 3
    steps_grid: int = 1000
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

CRITERIA: tuple[Criterion, ...] = (
    _crit(
        "accurate_vs_constrained",
        "sign_adaptive",
        "best_ratio_vs_constrained",
        "<=",
        "sign-adaptive's error is within 10% of the best constrained baseline on the 8-D suite or on "
        "Auto MPG (our reproduction rule; min of the two ratios)",
        threshold=1.10,
    ),
    _crit(
        "beats_bounded_baseline",
        "sign_adaptive",
        "grid/median_mse",
        "<",
        "8-D grid: sign-adaptive's median test MSE is below the classic bounded net's "
        "(exp-reparameterised weights + sigmoid)",
        other_arm="nonneg_sigmoid_exp",
    ),
    _crit(
        "more_stable_than_exp",
        "sign_adaptive",
        "grid/iqr_mse",
        "<",
        "8-D grid: IQR of test MSE over init scales x inits is smaller than the exp-reparameterised net's",
        other_arm="nonneg_sigmoid_exp",
    ),
    _crit(
        "more_stable_than_square",
        "sign_adaptive",
        "grid/iqr_mse",
        "<",
        "8-D grid: IQR of test MSE over init scales x inits is smaller than the square-reparameterised net's",
        other_arm="nonneg_switch_square",
    ),
    _crit(
        "mpg_within_one_std",
        "sign_adaptive",
        "mpg/excess_in_std",
        "<=",
        "Auto MPG: RMSE at most one fold-std above the best monotone baseline",
        threshold=1.0,
    ),
    _crit(
        "nonpos_universal_tanh",
        "nonpos_relu",
        "tanh/test_mse",
        "<=",
        "non-pos+ReLU fits tanh(3x) within 5x the unconstrained MLP's MSE (universality)",
        other_arm="unconstrained",
        factor=5.0,
    ),
    _crit(
        "nonpos_universal_neg_part",
        "nonpos_relu",
        "neg_part/test_mse",
        "<=",
        "non-pos+ReLU fits min(x, 0) within 5x the unconstrained MLP's MSE (universality)",
        other_arm="unconstrained",
        factor=5.0,
    ),
    _crit(
        "nonneg_relu_fails_neg_part",
        "nonneg_relu",
        "neg_part/test_mse",
        ">=",
        "non-neg+ReLU (convex only) fails on concave min(x, 0): >= 10x sign-adaptive's MSE",
        other_arm="sign_adaptive",
        factor=10.0,
    ),
    _crit(
        "nonneg_relu_fails_tanh",
        "nonneg_relu",
        "tanh/test_mse",
        ">=",
        "non-neg+ReLU (convex only) fails on saturating tanh(3x): >= 10x sign-adaptive's MSE",
        other_arm="sign_adaptive",
        factor=10.0,
    ),
    *(
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
    ),
    # tiny: smoke conditions only (tiny never judges the claim)
    _crit(
        "tiny_beats_convex_on_neg_part",
        "sign_adaptive",
        "neg_part/test_mse",
        "<",
        "sign-adaptive MSE on min(x, 0) below half of non-neg+ReLU's",
        other_arm="nonneg_relu",
        factor=0.5,
        scales=("tiny",),
    ),
    *(
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
    ),
)

CLAIM = Claim(
    statement=(
        "Sign-adaptive monotone MLPs (unconstrained weights, σ or its reflection per connection by weight "
        "sign) are guaranteed monotone, and fit monotone targets as well as or better than, and more "
        "stably across initialisations than, non-negative-weight MLPs with bounded or reparameterised "
        "constraints; non-positive-weight ReLU MLPs are universal where non-negative ReLU MLPs are not."
    ),
    source="Abstract and Sec. 4-5 (Theorems on alternating saturation and non-positive weights; experiments)",
    ours="sign_adaptive",
    baselines=tuple(a for a in ARMS if a != "sign_adaptive"),
    criteria=CRITERIA,
    headline="accurate_vs_constrained",
    min_seeds=3,
    setup_notes=(
        "The paper's benchmark numbers were not recovered; the experiments are our own design: four 1-D "
        "targets, an 8-D init-scale grid ({0.1, 1, 3} x 2 inits per seed x 3 seeds = 6 per scale, 10 "
        "planned) and Auto MPG 5-fold CV (vega-datasets). Adam lr 3e-3 (trainer default 1e-3) for at most "
        "1000 steps with early stopping on a validation split for every arm, widths 32 (1-D, Auto MPG) and "
        "64 (8-D): a CPU budget. Which non-negative nets use exp vs square reparameterisation and sigmoid "
        "vs switched ReLU is our pairing."
    ),
)


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
            arms_1d=tuple(a for a in ARMS if a != "minmax"),
            arms_grid=tuple(a for a in ARMS if a != "minmax"),
            arms_mpg=ARMS,
            width_1d=64,
            steps_1d=10_000,
            grid_reps=4,
            steps_grid=10_000,
            width_mpg=64,
            steps_mpg=10_000,
            patience=50,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def run_seed(self, config: MonotonicMLPConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
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
        series["curves_1d"] = curves

        # 2. robustness grid (8-D): same data for every arm and init
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
                flat = np.asarray(values).ravel()
                q25, q75 = np.percentile(flat, [25, 75])
                metrics[arm]["grid/median_mse"] = medians[arm]
                metrics[arm]["grid/iqr_mse"] = float(q75 - q25)
                metrics[arm]["grid/failure_rate"] = float(np.mean(flat > 2.0 * best))
            series["grid"] = {"init_scales": list(config.init_scales), "test_mse": grid}

        # 3. Auto MPG, K-fold CV
        if config.run_mpg:
            ds = load_auto_mpg()
            dims = [ds.X.shape[1]] + [config.width_mpg] * config.hidden_mpg + [1]
            folds = KFold(config.folds, shuffle=True, random_state=seed).split(ds.X)
            rmse: dict[str, list[float]] = {arm: [] for arm in config.arms_mpg}
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
                for a, arm in enumerate(config.arms_mpg):
                    model = fit(arm, dims, split, 500 * seed + 10 * k + a, config.steps_mpg)
                    pred = predict(model, split.X_test) * y_sd + y_mu
                    rmse[arm].append(float(np.sqrt(_mse(pred, split.y_test))))
                    verify(arm, model, split.X_train, ds.monotone, config.verify_pairs)
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
        return SeedOutcome(metrics={a: m for a, m in metrics.items() if m}, series=series)

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
