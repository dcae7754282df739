"""Claim check for *Multi-objective Linear Reinforcement Learning with Lexicographic Rewards* (Xue, Bu,
Cheng, Wan, Zhang; ICML 2025, https://openreview.net/forum?id=RTHTyTsRT3).

The paper is theoretical (no experiments). Its claim: LLRL attains per-objective regret
O~(Lambda^i(lambda) sqrt(d^2 H^4 K)), sublinear on every objective, where lexicographic preferences
break the Bellman-optimality shortcut that objective-1-only or scalarised LSVI-UCB rely on; under
eps-misspecification an extra O~(Lambda^i(lambda) eps d H^2 K) term, linear in K, appears (Theorem 2).

Setup (ours; the paper has no experiments): generated tabular linear MOMDPs (S = 6, A = 4, H = 5,
m = 2, one-hot features d = 24, gap 0.2, built-in trade-off lambda_0 = 2, Bernoulli rewards), one
instance per seed, K = 40000 episodes, regret computed exactly from the executed policy each
episode, log-log regret slopes read over the last decade of K ([4000, 40000]). Arms:

    llrl              LLRL with lambda = lambda* (measured) and the calibrated c_beta   (ours, judged)
    lsvi_scalarised   LSVI-UCB on r^1 + r^2                                             (baseline)
    lsvi_obj1         LSVI-UCB on objective 1 only (random tie-breaking)               (baseline)
    lex_greedy        optimistic Q-vectors compared lexicographically, no tolerance    (baseline)
    llrl_2lam/_4lam   LLRL given 2 lambda* and 4 lambda* (the lambda prediction)
    llrl_misspec      LLRL on rank-8 random-projection features (eps-misspecified, Theorem 2)
    uniform           the uniform random policy                                        (reference)
    llrl_m3, lsvi_obj1_m3   the m = 3 variant (``run_m3``; reported, not judged, off at small)

Confidence radius and its calibration (issue 42). ``beta = c_beta d H sqrt(log(2 d H K / delta))``;
the theoretical constant (c_beta ~ 1) makes every LAE tolerance exceed every gap at feasible K, so
c_beta is tuned, and it is tuned *before* any judged seed runs: on a calibration instance
(``calibration_seed`` = 1000, never a judged seed; ``run_seed`` refuses it) every learner (LLRL,
both LSVI-UCB baselines, lexicographic-greedy) runs K episodes at each c_beta of the same grid
{0.00075, 0.0015, 0.003, 0.006} (x0.25 to x2 of the earlier default 0.003), and each gets the value with
the lowest validation worst-objective slope (``max_slope``, the quantity the criteria judge; ties:
lower Reg^1 + Reg^2, then the smaller c_beta). The LLRL variants (lambda, misspecified) use LLRL's
value. Only that one LLRL arm is judged: no per-seed choice among c_beta values. (Before issue 42
the headline took, per judged seed, the c_beta of the sweep with the best test slope; at the declared
c_beta = 0.003 LLRL's Reg^2 was linear, slope 0.98.) ``c_beta=<number>`` skips the calibration and
gives every learner that value.

Cross-check of the grid by the tolerance/gap derivation (Alg. 1-2, not fitted): LAE at scale 2^-s
runs only once every candidate's width is <= 2^-s, i.e. after ~4^s visits of each surviving
(h, x, a) with one-hot features, and removes an action with objective-2 gap Delta only when
(2 + 4 lambda) beta 2^-s < Delta. With lambda = 2 and Delta = 0.4 (action 0 vs 1): c_beta = 0.003
(beta ~ 1.57) needs s = 6 (~4000 visits of each survivor of each (h, x)), which K = 40000 episodes
reach only late, so Reg^2 can stay linear over the last decade; c_beta = 0.0015 (beta ~ 0.79) needs
s = 5 (~1000 visits); smaller c_beta eliminates earlier but the radius stops covering the early
estimation error and the optimal action can be dropped.

Gates (the instances can show the effect at all): the uniform reference's regret is linear on both
objectives (slope >= 0.95: the slope reader reads "learns nothing" as linear and the floor has a
positive gap on both objectives), and objective-1-only LSVI-UCB has linear Reg^2 (slope >= 0.9:
the objective-1 ties are real, so ignoring objective 2 costs regret that grows with K).

Criteria (declared before the judged seeds ran; metric ``max_slope`` = the larger of the two log-log
regret slopes, the worst objective's growth exponent; paired t intervals over seeds = instances).
Smallest effect 0.15 in slope: the gap between our pre-declared falsifier (a slope above 0.85 is "not
sublinear") and linear regret (1.0).

    headline  LLRL's max_slope below scalarised LSVI-UCB's (which is linear on objective 1)
              by a paired interval that excludes 0 (fails if it excludes -0.15)
    LLRL's max_slope <= 0.85 (point estimate, our pre-declared falsifier of sublinearity)
    LLRL's max_slope below objective-1-only LSVI-UCB's and below lexicographic-greedy's (0.15)
    Reg^2 grows with the lambda given to LLRL: log Reg^2 at 4 lambda* above log Reg^2 at lambda*
              (smallest effect log 1.2: 20 % more regret; Theorem 1's factor Lambda^2 = 1 + lambda
              grows 3x between them)
    misspecification: with eps-misspecified features (eps ~ 1, measured) LLRL's max_slope rises
              above its exact-feature value by >= 0.15: the eps d H^2 K term of Theorem 2 is linear in
              K. (A bound cannot be confirmed by a run; this checks the direction of its extra term.)

Each seed also re-runs every arm through the per-agent path for the first ``speedup_episodes``
episodes, to check that the vectorised runner (:mod:`.batched`) gives the same regret
(``naive_vs_batched_max_abs_diff``) and to time both (``speedup``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields, check_in_range, check_positive

from .agents import LLRL, LSVIUCB, LexGreedyLSVI, UniformAgent, confidence_radius
from .batched import ArmSpec, run_regret_batch
from .dp import lexicographic_optimal_policy, tradeoff_lambda
from .env import LinearMOMDP, make_lex_tabular_mdp, misspecify
from .experiment import RegretRun, loglog_slope, run_regret_experiment

OURS = "llrl"
BASELINES = (
    "lsvi_scalarised",
    "lsvi_obj1",
    "lex_greedy",
    "llrl_4lam",
    "llrl_2lam",
    "llrl_misspec",
)
#: the m = 3 variant's arms (reported, not judged; declared only when ``run_m3`` runs them)
M3_ARMS = ("llrl_m3", "lsvi_obj1_m3")
REFERENCES = ("uniform",)
#: the learners whose c_beta is chosen on the calibration instance (each by the same rule and grid)
TUNED = ("llrl", "lsvi_obj1", "lsvi_scalarised", "lex_greedy")
#: smallest effect of interest on a log-log regret slope
SLOPE_EFFECT = 0.15
SLOPE_SOURCE = "declared: the gap between our falsifier of sublinearity (slope 0.85) and linear regret (1.0)"


@dataclass(frozen=True)
class LexConfig:
    """Our small setting (S = 6, H = 5, K = 40000); ``full`` only raises K (the paper has no experiments).

    ``c_beta``: None calibrates every learner's c_beta on the instance of ``calibration_seed`` over
    ``c_beta_grid`` before any judged seed (see the module docstring); a number fixes it for all.
    ``speedup_episodes``: on the first this many episodes every arm is also run through the naive
    per-agent path (:func:`run_regret_experiment`), to time the batched runner against it and check
    that both give the same regret (0 skips this).
    """

    S: int = 6
    H: int = 5
    K: int = 40_000
    gap: float = 0.2
    lam0: float = 2.0
    c_beta: float | None = None
    c_beta_grid: tuple[float, ...] = (0.00075, 0.0015, 0.003, 0.006)
    calibration_seed: int = 1000
    lam_mults: tuple[float, float] = (2.0, 4.0)
    delta: float = 0.05
    scalar_weight: float = 1.0
    run_m3: bool = False
    run_misspec: bool = True
    misspec_dim: int = 8
    speedup_episodes: int = 300

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("H", "misspec_dim"), positive=("scalar_weight",))
        check_in_range("LexConfig.S", self.S, 2)
        check_in_range("LexConfig.K", self.K, 10)
        check_in_range("LexConfig.speedup_episodes", self.speedup_episodes, 0)
        check_in_range("LexConfig.calibration_seed", self.calibration_seed, 0)
        check_in_range("LexConfig.delta", self.delta, 0.0, 1.0, low_open=True, high_open=True)
        if self.c_beta is not None:
            check_positive("LexConfig.c_beta", self.c_beta)
        if not self.c_beta_grid:
            raise ValueError("LexConfig.c_beta_grid must hold at least one value")
        for name in ("c_beta_grid", "lam_mults"):
            for i, value in enumerate(getattr(self, name)):
                check_positive(f"LexConfig.{name}[{i}]", value)


def _point(name: str, arm: str, metric: str, op: Any, threshold: float, text: str, **kw: Any) -> Criterion:
    return Criterion(name, arm=arm, metric=metric, op=op, threshold=threshold, description=text, **kw)


def _paired(name: str, arm: str, metric: str, op: Any, other: str, text: str, **kw: Any) -> Criterion:
    kw.setdefault("smallest_effect", SLOPE_EFFECT)
    kw.setdefault("effect_source", SLOPE_SOURCE)
    return Criterion(name, arm=arm, metric=metric, op=op, other_arm=other, description=text, **kw)


CRITERIA = (
    _paired(
        "sublinear_where_scalarised_is_linear",
        OURS,
        "max_slope",
        "<",
        "lsvi_scalarised",
        "LLRL's worst-objective log-log regret slope below scalarised LSVI-UCB's (paired over seeds)",
    ),
    _point(
        "sublinear_every_objective",
        OURS,
        "max_slope",
        "<=",
        0.85,
        "LLRL's log-log regret slopes over the last decade are <= 0.85 on both objectives (seed mean)",
    ),
    _paired(
        "below_obj1_only",
        OURS,
        "max_slope",
        "<",
        "lsvi_obj1",
        "LLRL's worst-objective slope below objective-1-only LSVI-UCB's (paired over seeds)",
    ),
    _paired(
        "below_lex_greedy",
        OURS,
        "max_slope",
        "<",
        "lex_greedy",
        "LLRL's worst-objective slope below lexicographic-greedy LSVI-UCB's (paired over seeds)",
    ),
    _paired(
        "reg2_grows_with_lambda",
        "llrl_4lam",
        "log_reg2",
        ">",
        OURS,
        "log Reg^2(K) of LLRL given 4 lambda* above that given lambda* (paired over seeds)",
        smallest_effect=math.log(1.2),
        effect_source=(
            "declared: 20 % more Reg^2 (Theorem 1's factor 1 + lambda grows 3x from lambda* to 4 lambda*)"
        ),
    ),
    _paired(
        "misspecification_linear_term",
        "llrl_misspec",
        "max_slope",
        ">",
        OURS,
        "on eps-misspecified features LLRL's worst-objective slope rises above its exact-feature slope "
        "(Theorem 2's extra eps d H^2 K term is linear in K; paired over seeds)",
    ),
    Criterion(
        "tiny_beats_uniform",
        arm=OURS,
        metric="reg1",
        op="<",
        other_arm="uniform",
        scales=("tiny",),
        description="smoke: LLRL's Reg^1 below the uniform policy's (a point comparison, tiny only)",
    ),
)


GATES = (
    _point(
        "floor_is_linear",
        "uniform",
        "min_slope",
        ">=",
        0.95,
        "the uniform policy's regret is linear on both objectives (slope >= 0.95): the slope reader "
        "reads 'learns nothing' as linear and the floor has a positive gap on both objectives",
    ),
    _point(
        "ties_matter",
        "lsvi_obj1",
        "slope2",
        ">=",
        0.9,
        "objective-1-only LSVI-UCB has linear Reg^2 (slope >= 0.9): the objective-1 ties are real, so the "
        "instances test lexicographic learning",
    ),
)

CLAIM = Claim(
    statement=(
        "LLRL attains sublinear regret on every objective of a lexicographic linear MOMDP, "
        "O~(Lambda^i(lambda) sqrt(d^2 H^4 K)), where scalarised, objective-1-only and lexicographic-greedy "
        "LSVI-UCB are linear on some objective; lower-priority regret grows with lambda, and "
        "eps-misspecification adds a term linear in K."
    ),
    source="Theorem 1 (regret), Theorem 2 (misspecification); the paper has no experiments",
    ours=OURS,
    baselines=BASELINES,
    references=REFERENCES,
    criteria=CRITERIA,
    gates=GATES,
    headline="sublinear_where_scalarised_is_linear",
    min_seeds=3,
    timed_metrics=("batched_s", "speedup", "*_ms_per_episode", "calibration_s"),
    setup_notes=(
        "Generated tabular linear MOMDPs (S=6, A=4, H=5, d=24, gap 0.2, lambda_0=2), one instance per seed, "
        "K=40000 episodes, 5 seeds, exact regret, slopes over the last decade of K. Alg. 1-2 are "
        "reconstructed from a third-party summary (phased SupLinUCB-style action refinement, one Gram matrix "
        "per step, next-state value from LAE at 1/sqrt K). beta uses a tuned c_beta, not the theoretical "
        "constant: every learner's c_beta is chosen on a separate calibration instance (seed 1000) over the "
        "grid {0.00075, 0.0015, 0.003, 0.006} by the lowest validation worst-objective slope, before the "
        "judged seeds run; only that LLRL arm is judged. The m = 3 variant is not run at small."
    ),
)


# ---------------------------------------------------------------------------- arms


def _agent(
    kind: str, mdp: LinearMOMDP, config: LexConfig, *, lam: float, c_beta: float, seed: list[int]
) -> Any:
    m, H, K = mdp.n_objectives, mdp.H, config.K
    rng = np.random.default_rng(seed)
    beta = confidence_radius(mdp.dim, H, K, config.delta, c_beta)
    if kind == "llrl":
        return LLRL(mdp.phi, H=H, m=m, K=K, lam=lam, beta=beta, rng=rng)
    if kind == "lsvi_obj1":
        return LSVIUCB(mdp.phi, H=H, m=m, K=K, weights=[1.0] + [0.0] * (m - 1), beta=beta, rng=rng)
    if kind == "lsvi_scalarised":
        w = [1.0] + [config.scalar_weight] * (m - 1)
        return LSVIUCB(mdp.phi, H=H, m=m, K=K, weights=w, beta=beta, rng=rng)
    if kind == "lex_greedy":
        return LexGreedyLSVI(mdp.phi, H=H, m=m, K=K, beta=beta, rng=rng)
    return UniformAgent(mdp.phi, H, m, K, rng)


def _arm_spec(kind: str, mdp: LinearMOMDP, config: LexConfig, *, lam: float, c_beta: float) -> ArmSpec:
    """The batched runner's description of the arm :func:`_agent` builds (same beta, lambda, weights)."""
    m = mdp.n_objectives
    beta = confidence_radius(mdp.dim, mdp.H, config.K, config.delta, c_beta)
    if kind == "llrl":
        return ArmSpec("llrl", mdp, beta=beta, lam=lam)
    if kind == "lsvi_obj1":
        return ArmSpec("lsvi", mdp, beta=beta, weights=(1.0,) + (0.0,) * (m - 1))
    if kind == "lsvi_scalarised":
        return ArmSpec("lsvi", mdp, beta=beta, weights=(1.0,) + (config.scalar_weight,) * (m - 1))
    if kind == "lex_greedy":
        return ArmSpec("lex_greedy", mdp, beta=beta)
    return ArmSpec("uniform", mdp)


def max_slope(regret: np.ndarray) -> float:
    """The worst objective's log-log regret slope over the last decade (``regret`` (m, K))."""
    return max(loglog_slope(row) for row in np.asarray(regret))


# ---------------------------------------------------------------------------- calibration


def select_c_beta(grid: Sequence[float], slopes: Sequence[float], totals: Sequence[float]) -> float:
    """The grid value with the lowest validation ``max_slope``; ties: lower total regret, then smaller c.

    Slopes within 1e-9 of each other count as tied.
    """
    if not (len(grid) == len(slopes) == len(totals)) or not grid:
        raise ValueError(
            f"grid, slopes and totals must have one equal, non-zero length, got "
            f"{len(grid)}, {len(slopes)}, {len(totals)}"
        )
    best = min(slopes)
    tied = [i for i in range(len(grid)) if slopes[i] <= best + 1e-9]
    return float(grid[min(tied, key=lambda i: (totals[i], grid[i]))])


@dataclass(frozen=True)
class Calibration:
    """Every learner's chosen c_beta and the validation table it was chosen from."""

    chosen: dict[str, float]
    table: dict[str, dict[str, list[float]]]  # kind -> {"c_beta", "max_slope", "total_regret"}
    seed: int | None
    seconds: float


def calibrate(config: LexConfig) -> Calibration:
    """Choose every learner's c_beta on the calibration instance (never a judged seed).

    With ``config.c_beta`` set, no run: every learner gets that value. Otherwise each learner of
    :data:`TUNED` runs ``config.K`` episodes at every ``c_beta_grid`` value on the instance of
    ``calibration_seed`` (all in one batch, one environment stream) and gets :func:`select_c_beta`'s
    choice from its own validation slopes.
    """
    if config.c_beta is not None:
        return Calibration({k: float(config.c_beta) for k in TUNED}, {}, None, 0.0)
    seed = config.calibration_seed
    mdp = make_lex_tabular_mdp(config.S, config.H, 2, gap=config.gap, lam0=config.lam0, seed=seed)
    pi, _, Q = lexicographic_optimal_policy(mdp.P, mdp.R, mdp.H)
    lam = tradeoff_lambda(Q, pi)
    grid = [float(c) for c in config.c_beta_grid]
    keys = [(kind, c) for kind in TUNED for c in grid]
    specs = [_arm_spec(kind, mdp, config, lam=lam, c_beta=c) for kind, c in keys]
    start = time.perf_counter()
    runs = run_regret_batch(specs, K=config.K, env_seed=[seed, 999])
    table: dict[str, dict[str, list[float]]] = {
        kind: {"c_beta": grid, "max_slope": [], "total_regret": []} for kind in TUNED
    }
    for (kind, _), run in zip(keys, runs, strict=True):
        table[kind]["max_slope"].append(max_slope(run.regret))
        table[kind]["total_regret"].append(float(run.regret[:, -1].sum()))
    chosen = {
        kind: select_c_beta(grid, table[kind]["max_slope"], table[kind]["total_regret"]) for kind in TUNED
    }
    return Calibration(chosen, table, seed, time.perf_counter() - start)


# ---------------------------------------------------------------------------- the check


def _speedup(
    runs: Sequence[tuple[str, str, LinearMOMDP, float, float]],
    specs: Sequence[ArmSpec],
    batch: Sequence[RegretRun],
    config: LexConfig,
    seed: int,
) -> dict[str, float]:
    """Time the naive per-agent path against the batched one on the first ``speedup_episodes`` episodes.

    The agents are told the full ``K`` (same thresholds as the real run); the naive regret curves must
    equal the first episodes of the batched run's (``naive_vs_batched_max_abs_diff``).
    """
    n = min(config.speedup_episodes, config.K)
    start = time.perf_counter()
    diff = 0.0
    for k, (_, kind, env, lam, c_beta) in enumerate(runs):
        agent = _agent(kind, env, config, lam=lam, c_beta=c_beta, seed=[seed, k])
        naive = run_regret_experiment(env, agent, K=n, rng=np.random.default_rng([seed, 999]))
        diff = max(diff, float(np.abs(naive.regret - batch[k].regret[:, :n]).max()))
    t_naive = time.perf_counter() - start
    start = time.perf_counter()
    run_regret_batch(specs, K=config.K, env_seed=[seed, 999], episodes=n)
    t_batched = time.perf_counter() - start
    return {
        "speedup": t_naive / t_batched,
        "naive_ms_per_episode": 1e3 * t_naive / n,
        "batched_ms_per_episode": 1e3 * t_batched / n,
        "naive_vs_batched_max_abs_diff": diff,
    }


def _curve(regret: np.ndarray, points: int = 80) -> tuple[list[int], np.ndarray]:
    K = regret.shape[1]
    ks = np.unique(np.geomspace(1, K, points).astype(int))
    return ks.tolist(), np.round(regret[:, ks - 1], 3)


class LexicographicMORLCheck(ClaimCheck[LexConfig]):
    slug = "lexicographic_morl"
    claim = CLAIM
    presets = {
        "tiny": LexConfig(S=3, H=3, K=120, run_misspec=False, speedup_episodes=40),
        "small": LexConfig(),
        "full": LexConfig(K=200_000, run_m3=True),
    }
    default_seeds = {"tiny": 1, "small": 5, "full": 5}

    def __init__(self) -> None:
        self._calibrations: dict[LexConfig, Calibration] = {}

    def claim_for(self, config: LexConfig) -> Claim:
        """The small claim; with ``run_m3`` the m = 3 arms are declared too (reported, never judged)."""
        if not config.run_m3:
            return CLAIM
        return dataclasses.replace(CLAIM, baselines=(*BASELINES, *M3_ARMS))

    def begin_run(self, config: LexConfig) -> None:
        self._calibrations = {}

    def calibration(self, config: LexConfig) -> Calibration:
        """The calibration for ``config``, computed once per run (before the first judged seed)."""
        if config not in self._calibrations:
            self._calibrations[config] = calibrate(config)
        return self._calibrations[config]

    def run_seed(self, config: LexConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        if config.c_beta is None and seed == config.calibration_seed:
            raise ValueError(
                f"seed {seed} is the calibration seed (c_beta is chosen on it); judge other seeds "
                "or set calibration_seed"
            )
        ctx.progress("calibrate c_beta (calibration instance)", 0, None)
        cal = self.calibration(config)
        c = cal.chosen
        mdp = make_lex_tabular_mdp(config.S, config.H, 2, gap=config.gap, lam0=config.lam0, seed=seed)
        pi, _, Q = lexicographic_optimal_policy(mdp.P, mdp.R, mdp.H)
        lam_star = tradeoff_lambda(Q, pi)
        runs: list[tuple[str, str, LinearMOMDP, float, float]] = [
            (OURS, "llrl", mdp, lam_star, c["llrl"]),
            ("llrl_2lam", "llrl", mdp, lam_star * config.lam_mults[0], c["llrl"]),
            ("llrl_4lam", "llrl", mdp, lam_star * config.lam_mults[1], c["llrl"]),
            ("lsvi_obj1", "lsvi_obj1", mdp, lam_star, c["lsvi_obj1"]),
            ("lsvi_scalarised", "lsvi_scalarised", mdp, lam_star, c["lsvi_scalarised"]),
            ("lex_greedy", "lex_greedy", mdp, lam_star, c["lex_greedy"]),
            ("uniform", "uniform", mdp, lam_star, c["llrl"]),
        ]
        if config.run_m3:
            mdp3 = make_lex_tabular_mdp(config.S, config.H, 3, gap=config.gap, lam0=config.lam0, seed=seed)
            pi3, _, Q3 = lexicographic_optimal_policy(mdp3.P, mdp3.R, mdp3.H)
            lam3 = tradeoff_lambda(Q3, pi3)
            runs += [
                ("llrl_m3", "llrl", mdp3, lam3, c["llrl"]),
                ("lsvi_obj1_m3", "lsvi_obj1", mdp3, lam3, c["lsvi_obj1"]),
            ]
        if config.run_misspec:
            mis = misspecify(mdp, config.misspec_dim, seed=seed)
            runs.append(("llrl_misspec", "llrl", mis, lam_star, c["llrl"]))
        metrics: dict[str, dict[str, float]] = {}
        series: dict[str, Any] = {"lambda_star": lam_star, "calibration": dataclasses.asdict(cal)}
        specs = [_arm_spec(kind, env, config, lam=lam, c_beta=cb) for _, kind, env, lam, cb in runs]

        def report(done: int, total: int) -> None:
            ctx.progress("all arms (batched)", done, total)

        batch = run_regret_batch(specs, K=config.K, env_seed=[seed, 999], progress=report)
        for (arm, kind, env, lam, cb), spec, run in zip(runs, specs, batch, strict=True):
            m = metrics.setdefault(arm, {})
            slopes = []
            for i in range(env.n_objectives):
                m[f"reg{i + 1}"] = float(run.regret[i, -1])
                slopes.append(loglog_slope(run.regret[i]))
                m[f"slope{i + 1}"] = slopes[-1]
                m[f"reg{i + 1}_over_sqrtK"] = float(run.regret[i, -1] / np.sqrt(config.K))
            m["max_slope"] = max(slopes)
            m["min_slope"] = min(slopes)
            m["log_reg2"] = math.log(max(float(run.regret[1, -1]), 1.0))
            if kind != "uniform":
                m["c_beta"] = float(cb)
                m["beta"] = spec.beta
            if kind == "llrl":
                m["lambda_given"] = float(lam)
            if arm == "llrl_misspec":
                m["epsilon"] = float(env.misspecification)
            ks, curve = _curve(run.regret)
            series[arm] = {"episodes": ks, "regret": curve}
        metrics[OURS]["batched_s"] = batch[0].seconds
        metrics[OURS]["calibration_s"] = cal.seconds
        if config.speedup_episodes:
            metrics[OURS].update(_speedup(runs, specs, batch, config, seed))
        metrics[OURS]["lambda_star"] = lam_star
        return SeedOutcome(metrics=metrics, series=series)

    def make_figures(self, config: LexConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import arm_color, new_figure, plot_band

        def panel(ax: Any, arms: Sequence[str], obj: int, title: str) -> None:
            for arm in arms:
                if arm not in outcomes[0].series or len(outcomes[0].series[arm]["regret"]) <= obj:
                    continue
                ks = outcomes[0].series[arm]["episodes"]
                curves = [np.asarray(o.series[arm]["regret"])[obj] for o in outcomes]
                if arm in REFERENCES:  # the floor: grey and dashed, never mistaken for a baseline
                    plot_band(ax, ks, curves, label=f"{arm} (reference)", color="grey", linestyle="--")
                    continue
                plot_band(ax, ks, curves, label=arm, color=arm_color(arm, OURS, (*BASELINES, *M3_ARMS)))
            ax.set(xscale="log", xlabel="episode k", ylabel=f"Reg^{obj + 1}(k) (symlog)", title=title)
            ax.set_yscale("symlog", linthresh=10.0)  # log-log slopes, with room for negative regret
            ax.legend()

        main = (OURS, "lsvi_scalarised", "lsvi_obj1", "lex_greedy", "uniform")
        fig, axes = new_figure(ncols=2, width=4.6, height=3.4)
        panel(axes[0], main, 0, "objective 1 (highest priority)")
        panel(axes[1], main, 1, "objective 2")
        ctx.save_figure(
            fig,
            "regret_curves",
            "Cumulative per-objective regret (exact, from the executed policies) of LLRL, the baselines and "
            "the uniform reference: mean and min-max over seeds.",
        )
        fig, axes = new_figure(ncols=2, width=4.6, height=3.4)
        lam_arms = (OURS, "llrl_2lam", "llrl_4lam", "llrl_misspec")
        panel(axes[0], lam_arms, 0, "LLRL: lambda and misspecification, objective 1")
        panel(axes[1], lam_arms, 1, "LLRL: lambda and misspecification, objective 2")
        ctx.save_figure(
            fig,
            "lambda_and_misspec",
            "LLRL given lambda*, 2 lambda*, 4 lambda*, and on eps-misspecified rank-8 features: regret per "
            "objective (the calibrated c_beta throughout).",
        )
        table = outcomes[0].series.get("calibration", {}).get("table", {})
        if table:
            fig, ax = new_figure(ncols=1, width=4.6, height=3.4)
            for kind, row in table.items():
                ax.plot(row["c_beta"], row["max_slope"], marker="o", label=kind)
            ax.axhline(0.85, color="grey", linestyle=":", label="0.85 (sublinearity falsifier)")
            ax.set(xscale="log", xlabel="c_beta", ylabel="validation worst-objective slope")
            ax.set_title("calibration instance (not a judged seed)")
            ax.legend()
            ctx.save_figure(
                fig,
                "calibration",
                "c_beta calibration on the calibration instance: each learner's worst-objective log-log "
                "regret slope over the grid; each gets its lowest (chosen before any judged seed ran).",
            )
        if config.run_m3:
            extra = [a for a in M3_ARMS if a in outcomes[0].series]
            fig, axes = new_figure(ncols=3, width=3.8, height=3.2)
            for obj in range(3):
                panel(axes[obj], extra, obj, f"m = 3, objective {obj + 1}")
            ctx.save_figure(fig, "variants", "Three objectives: LLRL vs objective-1-only LSVI-UCB.")


CHECK = LexicographicMORLCheck()
