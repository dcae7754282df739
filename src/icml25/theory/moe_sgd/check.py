"""Claim check for *Mixture of Experts Provably Detect and Learn the Latent Cluster Structure in
Gradient-Based Learning* (Kawata, Matsutani, Kinoshita, Nishikawa, Suzuki; ICML 2025;
https://arxiv.org/abs/2506.01656).

The paper proves (Thm. 4.7 and the vanilla lower bound) that on clustered single-index regression
a vanilla two-layer network trained by SGD cannot efficiently recover the global direction
``w_g``, whose signal cancels in the pooled task, while a stage-wise-trained mixture of experts
routes clusters to experts and recovers it with ``poly(d)`` samples governed by the per-cluster
information exponent ``k*``. Here the prediction is measured in simulation on one constructed
instance (C = 2, s = (+1, -1), f_c = g = He_3/sqrt(6), orthonormal directions, rho = 3), at
d in {24, 32, 48, 64, 96}, with online SGD on fresh samples. A simulation trend is evidence for the
theorem's prediction at small d, never a proof of it.

The vanilla network's failure on this instance follows from algebra, not from the simulation: with
the matched activation He_3, a cluster shift ``rho u . v_c`` only adds lower-degree Hermite terms
to ``sigma'(u . x)``, the part of the correlation gradient along ``w_g`` is ``s_c`` times a
cluster-independent number, and ``sum_c s_c = 0`` makes the pooled population gradient along
``w_g`` exactly zero at every ``u`` (tests/theory/test_moe_sgd.py checks it by exact quadrature).
The vanilla arm measures that the finite-sample SGD noise does not rescue it within the budget.

Arms (same data model, same sample budget ``budget_per_d2 * d^2`` per run, same neuron count):
    moe         ours: the three-stage MoE with a learned softmax router (``train_moe_stagewise``)
    vanilla     baseline: one two-layer network with all ``M * 2J`` neurons on the pooled task
    moe_m_eq_c  (reported, no criterion) the learned-router MoE with M = C experts at one d
References (measured on the same tasks, never beaten by a criterion):
    untrained   the vanilla network at its random initialisation, second layer ridge-refit: the
                noise-level overlap with w_g and the MSE of random He_3 features
    oracle_moe  (positive control) the MoE with the router replaced by the true cluster

Equal effort: every trained arm picks its learning-rate multiplier ``eta0`` from the same grid by
the validation MSE (after the ridge refit) at the smallest d of each seed; the choice is reused at
every d. The per-sample rate is ``eta0 * d^-(k*/2)`` (the stable scale for exponent k*), under
which weak recovery should take ``~d^(k*-1)`` samples.

Sample complexity ``n*``: for every active expert (routed >= 10 % of the stage-III samples) the
number of samples *routed to that expert* in stage III until its best group-B overlap with w_g
passes ``recovery_threshold`` (0.5) and stays above it. Counting the expert's own samples removes
the routing share (which has nothing to do with d) from the count. An expert that never holds the
threshold gives a lower bound (its routed count; "censored"); an expert whose neuron starts above
the threshold and stays there has no escape to time and is left out. ``n*(d)`` is the median over
the active experts, the slope its least-squares log-log slope over d, per seed.

Gates (a failed gate gives "inconclusive"):
    oracle_recovers   mean over seeds of the oracle MoE's smallest (over d) global overlap >= 0.8:
                      the budget and learning rates let a perfectly routed MoE recover w_g
    nstar_measured    share of (d, active expert) pairs whose n* is not measured exactly (censored,
                      or left out because a neuron started above the threshold) <= 0.25: the
                      budget lets n* be measured (a censored median would bias the slope low)
Headline (paired over seeds): the MoE's global overlap at the largest d exceeds the vanilla's,
    smallest effect 0.2 (declared: the gap between the weak-recovery threshold 0.5 and the
    noise-level overlap ~3/sqrt(d) = 0.31 at d = 96).
Supporting:
    moe_recovers_global   mean over seeds of the MoE's smallest (over d) global overlap >= 0.8
    vanilla_at_noise      mean over seeds and d of the vanilla's "global excess" (overlap with w_g
                          minus overlap with a no-signal direction w_null) <= 0.15
    moe_mse_below_vanilla paired over seeds, log test MSE (ridge refit) at the largest d below the
                          vanilla's, smallest effect log 2 (the expected "well below" read as 2x)
    routing_purity        mean over seeds of the smallest (over d) routing purity >= 0.9
    nstar_slope_low/high  mean over seeds of the n*(d) slope within ``slope_tolerance`` (0.5) of
                          ``k* - 1`` = 2 (the online-SGD rate; not an exponent read from the paper)
Smoke (tiny): oracle global overlap > vanilla's; stage-I local overlap > 0.7; purity > 0.8.

History of the design (issue 43): n* used to count all stage-III samples, so each expert's share of
the routed samples added noise unrelated to d, and d spanned only {32, 45, 64} with 3 seeds (slopes
-1.2 and 3.0 on the two usable seeds). A first run of this redesign reduced the vanilla excess and
the untrained overlap by their largest value over d; at d = 24 both are noise (64 random neurons
already reach overlap ~0.5 with any direction, the excess spread over seeds is ~0.25), so the
vanilla criterion now averages over d and the untrained gate was replaced by the count of experts
left out of n*; thresholds unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields, check_in_range

from .measures import evaluate_mse, loglog_slope, overlap_report, ridge_refit
from .models import MoE, TwoLayerNet
from .task import ClusteredSIMTask
from .train import StageSchedule, TrainLog, oracle_assign, per_sample_lr, train_moe_stagewise, train_vanilla

ARMS = ("moe", "vanilla", "oracle_moe", "moe_m_eq_c", "untrained")
_TUNED = ("moe", "vanilla", "oracle_moe")
ACTIVE_SHARE = 0.1  # an expert with at least this share of the stage-III samples counts in n*
HEADLINE_EFFECT = 0.2
HEADLINE_SOURCE = (
    "declared: the gap between the weak-recovery threshold 0.5 and the noise-level overlap "
    "3/sqrt(d) = 0.31 at d = 96"
)
MSE_EFFECT = math.log(2.0)
MSE_SOURCE = "declared: the expectation that the MoE's test MSE ends 'well below' the vanilla's, read as 2x"


@dataclass(frozen=True)
class MoESGDConfig:
    """One claim-check configuration (the small preset's values are the defaults)."""

    dims: tuple[int, ...] = (24, 32, 48, 64, 96)
    n_clusters: int = 2
    signs: tuple[float, ...] = (1.0, -1.0)
    rho: float = 3.0
    k_star: int = 3
    noise: float = 0.1
    n_experts: int = 4
    neurons_per_group: int = 8
    act: str = "hermite"
    top_k: int = 1
    budget_per_d2: float = 100.0
    stage_fractions: tuple[float, float, float] = (0.4, 0.1, 0.5)
    batch: int = 64
    router_batch: int = 256
    router_lr: float = 0.05
    a_lr: float = 0.05
    lr_grid: tuple[float, ...] = (0.05, 0.1, 0.2)
    lr_final_factor: float = 0.02
    residual: bool = True
    recovery_threshold: float = 0.5
    n_refit: int = 20_000
    n_eval: int = 20_000
    ridge: float = 1e-4
    record_points: int = 80
    m_equal_c_dim: int = 32  # 0: no M = C run
    max_steps: int = 0  # > 0 caps every training run at this many samples x batch (smoke runs)
    # criterion and gate thresholds
    global_recovered: float = 0.8
    noise_margin: float = 0.15
    purity_min: float = 0.9
    slope_tolerance: float = 0.5
    max_unmeasured_share: float = 0.25

    def __post_init__(self) -> None:
        if not self.dims or any(isinstance(d, bool) or not isinstance(d, int) for d in self.dims):
            raise ValueError(f"MoESGDConfig.dims must be a non-empty tuple of ints, got {self.dims}")
        if len(set(self.dims)) != len(self.dims):
            raise ValueError(f"MoESGDConfig.dims must be distinct, got {self.dims}")
        if min(self.dims) < 2 * self.n_clusters + 2:
            raise ValueError(f"MoESGDConfig.dims must be >= 2 * n_clusters + 2, got {self.dims}")
        if len(self.signs) != self.n_clusters:
            raise ValueError(
                f"MoESGDConfig.signs must hold n_clusters={self.n_clusters} values, got {self.signs}"
            )
        if self.n_experts < self.n_clusters:
            raise ValueError(
                "MoESGDConfig.n_experts must be >= n_clusters (the oracle needs one per cluster)"
            )
        if not self.lr_grid or any(v <= 0 for v in self.lr_grid):
            raise ValueError(f"MoESGDConfig.lr_grid must hold positive numbers, got {self.lr_grid}")
        if len(self.stage_fractions) != 3 or any(v <= 0 for v in self.stage_fractions):
            raise ValueError(
                f"MoESGDConfig.stage_fractions must be 3 positive numbers, got {self.stage_fractions}"
            )
        if self.act not in ("hermite", "relu_bias"):
            raise ValueError(f"MoESGDConfig.act must be 'hermite' or 'relu_bias', got {self.act!r}")
        check_fields(
            self,
            positive_int=("n_clusters", "k_star", "n_experts", "neurons_per_group", "top_k", "batch"),
            positive=("budget_per_d2", "router_lr", "a_lr", "lr_final_factor", "slope_tolerance"),
            non_negative=("rho", "noise", "ridge", "noise_margin"),
            non_negative_int=("m_equal_c_dim", "max_steps"),
        )
        check_fields(self, positive_int=("router_batch", "n_refit", "n_eval", "record_points"))
        for name in ("recovery_threshold", "global_recovered", "purity_min", "max_unmeasured_share"):
            check_in_range(f"MoESGDConfig.{name}", getattr(self, name), 0.0, 1.0, low_open=True)

    @property
    def predicted_slope(self) -> float:
        """``k* - 1``: the growth exponent of online-SGD weak recovery at the stable step size."""
        return float(self.k_star - 1)

    @property
    def lr_dim_power(self) -> float:
        return self.k_star / 2.0

    def total_samples(self, d: int) -> int:
        n = int(round(self.budget_per_d2 * d * d))
        return min(n, self.max_steps * self.batch) if self.max_steps else n


# ----------------------------------------------------------------------------------------------
# Criteria and gates (declared before the small run; built from the config so --set on dims keeps them)
# ----------------------------------------------------------------------------------------------


def _criteria(cfg: MoESGDConfig) -> tuple[Criterion, ...]:
    big = max(cfg.dims)
    out: list[Criterion] = [
        Criterion(
            f"moe_beats_vanilla_global_d{big}",
            arm="moe",
            metric=f"d{big}/global_overlap",
            op=">",
            other_arm="vanilla",
            smallest_effect=HEADLINE_EFFECT,
            effect_source=HEADLINE_SOURCE,
            description=f"d={big}: the learned-router MoE's overlap with w_g exceeds the vanilla "
            "network's on the same samples (paired over seeds)",
        ),
        Criterion(
            "moe_recovers_global",
            arm="moe",
            metric="global_overlap_min_d",
            op=">=",
            threshold=cfg.global_recovered,
            description="the learned-router MoE weakly recovers w_g at every d (mean over seeds of the "
            "smallest overlap over d)",
        ),
        Criterion(
            "vanilla_at_noise",
            arm="vanilla",
            metric="global_excess_mean_d",
            op="<=",
            threshold=cfg.noise_margin,
            description="the vanilla net's overlap with w_g is no larger than with a no-signal "
            "direction, within the margin (mean over seeds and d of the excess)",
        ),
        Criterion(
            f"moe_mse_below_vanilla_d{big}",
            arm="moe",
            metric=f"d{big}/log_test_mse",
            op="<",
            other_arm="vanilla",
            smallest_effect=MSE_EFFECT,
            effect_source=MSE_SOURCE,
            description=f"d={big}: MoE log test MSE after the ridge refit below the vanilla net's "
            "(paired over seeds)",
        ),
        Criterion(
            "routing_purity",
            arm="moe",
            metric="purity_min_d",
            op=">=",
            threshold=cfg.purity_min,
            description="the learned router sends clusters to consistent experts at every d (mean over "
            "seeds of the smallest purity over d)",
        ),
    ]
    if len(cfg.dims) >= 2:
        lo, hi = cfg.predicted_slope - cfg.slope_tolerance, cfg.predicted_slope + cfg.slope_tolerance
        out += [
            Criterion(
                "nstar_slope_low",
                arm="moe",
                metric="n_star_slope",
                op=">=",
                threshold=lo,
                description=f"log-log slope of the MoE's n*(d) (routed samples) >= k*-1 - tol = {lo:g}",
            ),
            Criterion(
                "nstar_slope_high",
                arm="moe",
                metric="n_star_slope",
                op="<=",
                threshold=hi,
                description=f"log-log slope of the MoE's n*(d) (routed samples) <= k*-1 + tol = {hi:g}",
            ),
        ]
    d0 = cfg.dims[0]
    out += [
        Criterion(
            "tiny_oracle_beats_vanilla",
            arm="oracle_moe",
            metric=f"d{d0}/global_overlap",
            op=">",
            other_arm="vanilla",
            scales=("tiny",),
            description="smoke: the oracle MoE's global overlap exceeds the vanilla net's",
        ),
        Criterion(
            "tiny_stage1_local",
            arm="moe",
            metric=f"d{d0}/stage1_local_overlap_min",
            op=">",
            threshold=0.7,
            scales=("tiny",),
            description="smoke: stage I recovers every local direction",
        ),
        Criterion(
            "tiny_purity",
            arm="moe",
            metric=f"d{d0}/purity",
            op=">",
            threshold=0.8,
            scales=("tiny",),
            description="smoke: the router separates the clusters",
        ),
    ]
    return tuple(out)


def _gates(cfg: MoESGDConfig) -> tuple[Criterion, ...]:
    gates = [
        Criterion(
            "oracle_recovers",
            arm="oracle_moe",
            metric="global_overlap_min_d",
            op=">=",
            threshold=cfg.global_recovered,
            description="positive control: the oracle-routed MoE recovers w_g at every d within the "
            "budget (mean over seeds of its smallest overlap over d)",
        ),
    ]
    if len(cfg.dims) >= 2:
        gates.append(
            Criterion(
                "nstar_measured",
                arm="moe",
                metric="nstar_unmeasured_share",
                op="<=",
                threshold=cfg.max_unmeasured_share,
                description="share of (d, active expert) pairs whose n* is not measured exactly (never "
                "held the threshold: a lower bound; or started above it: left out) is small enough "
                "for the slope to be measured",
            )
        )
    return tuple(gates)


def _claim(cfg: MoESGDConfig) -> Claim:
    big = max(cfg.dims)
    return dataclasses.replace(
        CLAIM_TEMPLATE,
        criteria=_criteria(cfg),
        gates=_gates(cfg),
        headline=f"moe_beats_vanilla_global_d{big}",
    )


CLAIM_TEMPLATE = Claim(
    statement=(
        "On a clustered single-index task whose global signal cancels in the pooled data, a "
        "stage-wise-trained mixture of experts routes clusters to experts and weakly recovers the "
        "global direction with a sample count growing like d^(k*-1), while a vanilla two-layer "
        "network trained by online SGD on the same samples stays at the noise level (simulation "
        "on one constructed instance: evidence for the theorem's prediction, not a proof)."
    ),
    source="Thm. 4.7 (MoE guarantee) and the vanilla lower bound, Sec. 4; Figs. 1-2 (stage dynamics)",
    ours="moe",
    baselines=("vanilla", "moe_m_eq_c"),
    references=("untrained", "oracle_moe"),
    controls=("oracle_moe",),
    criteria=_criteria(MoESGDConfig()),
    gates=_gates(MoESGDConfig()),
    min_seeds=5,
    setup_notes=(
        "The paper's full text (architecture, router, step sizes, stage lengths, constants) was not "
        "available; model and schedule are our design in the style of its stage-wise algorithm: "
        "spherical online SGD on the correlation loss with a matched He_3 activation, per-sample "
        "rate eta0 d^-1.5 with a cosine decay, stage I (group-A neurons, uniform router), stage II "
        "(softmax router + second layer on the squared loss), stage III (group-B neurons on the "
        "residual of each expert's routed samples, top-1), then a ridge refit of the second layers. "
        "d in {24, 32, 48, 64, 96} (the theorems are asymptotic in d), budget 100 d^2 samples per "
        "run, 5 seeds. n* counts each expert's routed stage-III samples; unfinished experts enter as "
        "lower bounds. The slope prediction k*-1 is the online-SGD rate for exponent k* (Ben Arous "
        "et al., 2021), not an exponent recovered from the paper. With the matched activation the "
        "vanilla network's population gradient along w_g is exactly zero on this instance (algebra), "
        "so its failure is expected by construction."
    ),
)
CLAIM = _claim(MoESGDConfig())


# ----------------------------------------------------------------------------------------------
# One arm on one task
# ----------------------------------------------------------------------------------------------


def _rng(*keys: int) -> np.random.Generator:
    return np.random.default_rng([int(k) for k in keys])


def run_arm(
    arm: str, task: ClusteredSIMTask, cfg: MoESGDConfig, eta0: float, seed: int
) -> tuple[dict[str, float], TrainLog | None, dict[str, Any]]:
    """Train and evaluate one arm on ``task`` with multiplier ``eta0`` (``"untrained"``: no training).

    Returns ``(metrics, log, extra)``; metrics carry ``val_mse`` for the learning-rate choice; ``log``
    is None for the untrained reference.
    """
    d, C = task.d, task.n_clusters
    key = (seed, d, ARMS.index(arm), int(round(eta0 * 1e6)))
    rng = _rng(*key, 0)
    total = cfg.total_samples(d)
    lr = per_sample_lr(eta0, d, cfg.lr_dim_power)
    record_every = max(total // cfg.record_points, 1)
    assign_fn = None
    model: TwoLayerNet | MoE
    log: TrainLog | None = None
    if arm == "untrained":  # the vanilla network at initialisation: the noise-level reference
        width = cfg.n_experts * 2 * cfg.neurons_per_group
        model = TwoLayerNet(d, width, act=cfg.act, degree=cfg.k_star, rng=rng)  # type: ignore[arg-type]
    elif arm == "vanilla":
        width = cfg.n_experts * 2 * cfg.neurons_per_group
        model = TwoLayerNet(d, width, act=cfg.act, degree=cfg.k_star, rng=rng)  # type: ignore[arg-type]
        log = train_vanilla(
            model,
            task,
            n_samples=total,
            batch=cfg.batch,
            lr=lr,
            rng=rng,
            record_every=record_every,
            threshold=cfg.recovery_threshold,
            lr_final_factor=cfg.lr_final_factor,
        )
    else:
        M = C if arm == "moe_m_eq_c" else cfg.n_experts
        J = cfg.neurons_per_group * (cfg.n_experts // M) if arm == "moe_m_eq_c" else cfg.neurons_per_group
        oracle = arm == "oracle_moe"
        model = MoE(d, M, J, act=cfg.act, degree=cfg.k_star, top_k=cfg.top_k, rng=rng)  # type: ignore[arg-type]
        log = train_moe_stagewise(
            model,
            task,
            schedule=StageSchedule.from_fractions(total, cfg.stage_fractions),
            batch=cfg.batch,
            lr=lr,
            router_lr=cfg.router_lr,
            a_lr=cfg.a_lr,
            router_batch=cfg.router_batch,
            oracle_router=oracle,
            residual=cfg.residual,
            rng=rng,
            record_every=record_every,
            threshold=cfg.recovery_threshold,
            lr_final_factor=cfg.lr_final_factor,
        )
        if oracle:
            orng = _rng(*key, 9)

            def assign_fn(X: np.ndarray, c: np.ndarray) -> np.ndarray:
                return oracle_assign(c, M, C, orng)

    report = overlap_report(model, task, rng=_rng(*key, 1))
    ridge_refit(model, task, n=cfg.n_refit, ridge=cfg.ridge, rng=_rng(*key, 2), assign_fn=assign_fn)
    val = evaluate_mse(model, task, n=cfg.n_eval, rng=_rng(*key, 3), assign_fn=assign_fn)
    test = evaluate_mse(model, task, n=cfg.n_eval, rng=_rng(*key, 4), assign_fn=assign_fn)
    var_y = task.label_variance()
    m: dict[str, float] = {
        "val_mse": val,
        "test_mse": test,
        "test_mse_rel": test / var_y,
        "global_overlap": report.global_overlap,
        "local_overlap_min": min(report.local_overlaps),
        "eta0": eta0,
    }
    if report.null_overlap is not None:
        m["null_overlap"] = report.null_overlap
        m["global_excess"] = report.global_overlap - report.null_overlap
    m["log_test_mse"] = math.log(test)
    extra: dict[str, Any] = {"n_star": math.nan}
    if log is None:  # untrained: nothing was learned, nothing to time
        return m, log, extra
    if arm == "vanilla":
        n_star = log.n_star["global_total"]
    else:
        n_star, censored, left_out, active = stage3_nstar(log, cfg.recovery_threshold)
        extra["nstar_unmeasured"], extra["nstar_active"] = censored + left_out, active
        m["nstar_censored_share"] = censored / active
        m["nstar_left_out_share"] = left_out / active
    if np.isfinite(n_star):
        m["n_star"] = n_star
        m["n_star_per_d2"] = n_star / d**2
    extra["n_star"] = n_star
    if isinstance(model, MoE):
        if report.purity is not None and arm != "oracle_moe":
            m["purity"] = report.purity
            align = np.abs(np.asarray(report.router_alignment))
            m["router_alignment"] = float(align.max(axis=1).mean())
            extra["confusion"] = report.confusion
        s1 = log.stage_ends[0]
        i1 = max(i for i, n in enumerate(log.samples) if n <= s1)
        m["stage1_local_overlap_min"] = float(min(log.local_overlap[i1]))
        m["stage1_global_overlap"] = float(log.global_overlap[i1])
        if np.isfinite(log.n_star["local_stage1"]):
            m["n_star_local"] = log.n_star["local_stage1"]
        extra["n_star_local"] = log.n_star["local_stage1"]
    return m, log, extra


def stage3_nstar(
    log: TrainLog, threshold: float, active_share: float = ACTIVE_SHARE
) -> tuple[float, int, int, int]:
    """``(n*, censored, left_out, active)``: the median over the active experts of the stage-III
    samples routed to each expert until its best group-B overlap with ``w_g`` holds ``threshold``.

    An expert is active when it received at least ``active_share`` of the stage-III samples (an
    unused expert learns nothing). An active expert that never held the threshold enters with its
    routed count, a lower bound (``censored`` counts them); one whose best neuron already started
    at or above the threshold (``log.stage3_initial_overlap``) has no escape to time and is left out
    (``left_out``). ``active`` counts the active experts; ``n* = nan`` when none is timed.
    """
    routed = np.asarray(log.routed_stage3, dtype=np.float64)
    if routed.size == 0 or routed.sum() <= 0:
        raise ValueError("the log has no stage-III routing counts (not a stage-wise MoE run)")
    values, censored, left_out = [], 0, 0
    active = np.flatnonzero(routed >= active_share * routed.sum())
    for e in active:
        if log.stage3_initial_overlap and log.stage3_initial_overlap[e] >= threshold:
            left_out += 1
            continue
        v = log.n_star[f"global_stage3_expert{e}_routed"]
        if math.isinf(v):
            values.append(float(routed[e]))
            censored += 1
        else:
            values.append(float(v))
    return (float(np.median(values)) if values else math.nan), censored, left_out, int(active.size)


def _curves(log: TrainLog) -> dict[str, Any]:
    return {
        "samples": log.samples,
        "global": [round(v, 4) for v in log.global_overlap],
        "local_min": [round(min(v), 4) for v in log.local_overlap],
        "router_alignment": [round(v, 4) for v in log.router_alignment],
        "stage_ends": log.stage_ends,
    }


class MoESGDCheck(ClaimCheck[MoESGDConfig]):
    slug = "moe_sgd"
    claim = CLAIM
    presets = {
        "tiny": MoESGDConfig(
            dims=(24,), lr_grid=(0.1,), budget_per_d2=60.0, m_equal_c_dim=0, n_refit=5000, n_eval=5000
        ),
        "small": MoESGDConfig(),
        "full": MoESGDConfig(
            dims=(64, 128, 256, 512),
            neurons_per_group=16,
            n_experts=4,
            budget_per_d2=200.0,
            m_equal_c_dim=128,
        ),
    }
    default_seeds = {"tiny": 1, "small": 5, "full": 5}

    def claim_for(self, config: MoESGDConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: MoESGDConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        with threadpool_limits(1):  # tiny matrices: BLAS threads only contend on a shared machine
            return self._run_seed(config, seed, ctx)

    def _run_seed(self, config: MoESGDConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        cfg = config
        metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
        series: dict[str, Any] = {"n_star": {}, "curves": {}, "lr_sweep": {}, "nstar_unmeasured": {}}
        chosen: dict[str, float] = {}
        n_star: dict[str, list[float]] = {"moe": [], "oracle_moe": [], "moe_local": []}
        per_d: dict[str, dict[str, list[float]]] = {a: {} for a in ARMS}
        unmeasured = active = 0
        steps = len(cfg.dims) * len(_TUNED) + (len(cfg.lr_grid) - 1) * len(_TUNED)
        done = 0
        for d in cfg.dims:
            task = ClusteredSIMTask(
                d,
                cfg.n_clusters,
                rho=cfg.rho,
                k_star=cfg.k_star,
                signs=cfg.signs,
                noise=cfg.noise,
                seed=seed * 1009 + d,
            )
            for arm in _TUNED:
                if arm not in chosen:  # equal-effort sweep at the first d: pick eta0 by validation MSE
                    runs = []
                    for eta0 in cfg.lr_grid:
                        runs.append((eta0, *run_arm(arm, task, cfg, eta0, seed)))
                        done += 1
                        ctx.progress(f"train {arm} d={d}", done, steps)
                    series["lr_sweep"][arm] = {str(r[0]): r[1]["val_mse"] for r in runs}
                    by_lr = {r[0]: r for r in runs}
                    best = by_lr[best_on_validation(by_lr, lambda r: r[1]["val_mse"])]
                    chosen[arm] = best[0]
                    m, log, extra = best[1], best[2], best[3]
                else:
                    m, log, extra = run_arm(arm, task, cfg, chosen[arm], seed)
                    done += 1
                    ctx.progress(f"train {arm} d={d}", done, steps)
                for name, value in m.items():
                    metrics[arm][f"d{d}/{name}"] = value
                    per_d[arm].setdefault(name, []).append(value)
                series["n_star"].setdefault(arm, {})[str(d)] = extra["n_star"]
                if arm in n_star:
                    n_star[arm].append(extra["n_star"])
                if arm == "moe":
                    unmeasured += extra["nstar_unmeasured"]
                    active += extra["nstar_active"]
                    series["nstar_unmeasured"][str(d)] = [extra["nstar_unmeasured"], extra["nstar_active"]]
                    n_star["moe_local"].append(extra["n_star_local"])
                    series.setdefault("confusion", {})[str(d)] = extra.get("confusion")
                if d == max(cfg.dims) and log is not None:
                    series["curves"][arm] = _curves(log)
            m, _, _ = run_arm("untrained", task, cfg, 1.0, seed)
            for name, value in m.items():
                if name != "eta0":
                    metrics["untrained"][f"d{d}/{name}"] = value
                    per_d["untrained"].setdefault(name, []).append(value)
            if d == cfg.m_equal_c_dim:
                m, log, extra = run_arm("moe_m_eq_c", task, cfg, chosen["moe"], seed)
                for name, value in m.items():
                    metrics["moe_m_eq_c"][f"d{d}/{name}"] = value
                series["n_star"]["moe_m_eq_c"] = {str(d): extra["n_star"]}
        # worst case over d, per seed (the criteria average these over seeds)
        for arm, name, how in (
            ("moe", "global_overlap", min),
            ("oracle_moe", "global_overlap", min),
            ("vanilla", "global_excess", np.mean),
            ("moe", "purity", min),
        ):
            vals = per_d[arm].get(name, [])
            if len(vals) == len(cfg.dims):
                tag = {min: "min", np.mean: "mean"}[how]
                metrics[arm][f"{name}_{tag}_d"] = float(how(vals))
        if active:
            metrics["moe"]["nstar_unmeasured_share"] = unmeasured / active
        if len(cfg.dims) >= 2:
            for arm, key in (("moe", "moe"), ("oracle_moe", "oracle_moe"), ("moe", "moe_local")):
                counts = n_star[key]  # 0: a neuron started above the threshold; no rate to fit
                ok = all(np.isfinite(counts)) and min(counts) > 0
                slope = loglog_slope(cfg.dims, counts) if ok else float("nan")
                if np.isfinite(slope):
                    name = "n_star_slope" if key != "moe_local" else "n_star_local_slope"
                    metrics[arm][name] = slope
        series["chosen_eta0"] = chosen
        return SeedOutcome(metrics=metrics, series=series)

    def make_figures(self, config: MoESGDConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import OURS_COLOR, PALETTE, new_figure, plot_band

        colors = {"moe": OURS_COLOR, "vanilla": PALETTE[0], "oracle_moe": PALETTE[2]}
        big = max(config.dims)
        # 1. global overlap vs samples at the largest d, every arm
        fig, axes = new_figure(ncols=2, width=4.6)
        for arm, color in colors.items():
            curves = [o.series["curves"][arm] for o in outcomes]
            n = min(len(c["samples"]) for c in curves)
            x = (np.asarray(curves[0]["samples"][:n]) / big**2).tolist()
            plot_band(axes[0], x, [c["global"][:n] for c in curves], label=arm, color=color)
        for end in outcomes[0].series["curves"]["moe"]["stage_ends"][:-1]:
            axes[0].axvline(end / big**2, color="grey", linestyle=":", linewidth=1)
        axes[0].axhline(config.global_recovered, color="grey", linewidth=0.8)
        axes[0].set(xlabel="samples / d^2", ylabel="max_j |u_j . w_g|", title=f"Global recovery, d = {big}")
        axes[0].legend()
        # 2. stage dynamics of the learned-router MoE (the paper's Figs. 1-2)
        curves = [o.series["curves"]["moe"] for o in outcomes]
        n = min(len(c["samples"]) for c in curves)
        x = (np.asarray(curves[0]["samples"][:n]) / big**2).tolist()
        plot_band(
            axes[1], x, [c["local_min"][:n] for c in curves], label="min_c local overlap", color=PALETTE[1]
        )
        plot_band(axes[1], x, [c["global"][:n] for c in curves], label="global overlap", color=OURS_COLOR)
        plot_band(
            axes[1],
            x,
            [c["router_alignment"][:n] for c in curves],
            label="router-mean alignment",
            color=PALETTE[3],
        )
        for end in curves[0]["stage_ends"][:-1]:
            axes[1].axvline(end / big**2, color="grey", linestyle=":", linewidth=1)
        axes[1].set(xlabel="samples / d^2", ylabel="overlap / cosine", title="MoE stages I | II | III")
        axes[1].legend()
        ctx.save_figure(
            fig,
            "overlaps",
            f"Left: max neuron overlap with the global direction w_g against samples at d = {big} "
            "(mean and min-max over seeds; dotted lines end MoE stages I and II). Right: the "
            "learned-router MoE's stages: local overlaps (stage I), router rows aligning with the "
            "cluster means (stage II), global overlap (stage III).",
        )
        # 3. n*(d) on log-log axes
        if len(config.dims) >= 2:
            fig, ax = new_figure(width=4.8)
            dims = np.asarray(config.dims, dtype=float)
            for arm, color in (("moe", OURS_COLOR), ("oracle_moe", PALETTE[2])):
                for k, o in enumerate(outcomes):
                    ns = [o.series["n_star"][arm][str(d)] for d in config.dims]
                    ok = [i for i, v in enumerate(ns) if v is not None and np.isfinite(v) and v > 0]
                    ax.plot(
                        dims[ok],
                        np.asarray(ns, dtype=float)[ok],
                        "o-",
                        color=color,
                        alpha=0.6,
                        label=(f"{arm} n*" if k == 0 else None),
                    )
            ref = np.asarray([o.series["n_star"]["moe"][str(config.dims[0])] for o in outcomes], dtype=float)
            ref = ref[np.isfinite(ref)]
            if ref.size:
                y0 = float(np.exp(np.mean(np.log(ref))))
                ax.plot(
                    dims,
                    y0 * (dims / dims[0]) ** config.predicted_slope,
                    "k--",
                    linewidth=1,
                    label=f"slope k*-1 = {config.predicted_slope:g}",
                )
            ax.set(
                xscale="log",
                yscale="log",
                xlabel="d",
                ylabel=f"samples to overlap >= {config.recovery_threshold:g}",
                title="Sample complexity n*(d)",
            )
            ax.legend()
            ctx.save_figure(
                fig,
                "sample_complexity",
                "Samples until the global overlap passes the threshold and stays above it (MoE: "
                "counted in stage III; oracle: from the start), per seed, with a reference line of "
                "the predicted slope k*-1.",
            )


CHECK = MoESGDCheck()
