"""Claim check for *Adaptive Exploration for Multi-Reward Multi-Policy Evaluation* (Russo & Pacchiano,
ICML 2025, https://arxiv.org/abs/2502.02516).

The paper's figures (repo ``figures/1000000_*_abs_error_*.pdf``): in every regime and environment,
MR-NaS-PE reaches a lower max value-estimation error over all (policy, reward) pairs than noisy
target-policy exploration (uniform and visitation-based noise) and GVFExplorer.

Cells are (environment, regime): Riverswim (10 states), ForkedRiverswim (L = 5, 9 states) and
DoubleChain (L = 4, 9 states) x {single policy on the reward-free box, three policies with one
finite canonical reward each}. In each cell every agent runs on the same instance and the same
stream of environment uniforms (common random numbers). Arms:

    mr_nas            MR-NaS-PE (T_upd = 500, alpha = 0.99, beta = 0.01, joint-omega mixing)
    noisy_uniform     target policies with 30% uniform noise
    noisy_visitation  target policies with 15% visitation-based noise
    gvf_explorer      GVFExplorer (finite-reward cells only: it needs finite rewards, as in the repo)
The noisy baselines' noise-free part weights each action by how many target policies take it (the
repo's ``mixture_policy``; ``noisy_mix="uniform"`` gives equal weight to each distinct action).
References (never baselines to beat):
    oracle_omega      tracks omega* of the true model: the positive control (what the allocation buys)
    uniform_random    uniformly random actions: the exploration floor

Gates (the claim is judged only when both pass): the oracle allocation lowers the final error at least
20 % below noisy-uniform's (log gain >= log 1.2, mean over cells and seeds: the setup rewards tracking
omega*), and the noisy-uniform agent's error falls at least 2x over the horizon (estimation has reached
its converging regime).

Criteria (declared before any small-scale number was seen). The headline is paired: MR-NaS's log
final max error minus noisy-uniform's, over every (seed, cell), with a two-stage bootstrap interval
(seeds, then cells within seeds); it holds when the interval lies below 0 and fails when it excludes
-log_effect (default log 1.2: a 20 % lower error, the declared smallest effect of interest). The same
paired test runs against noisy-visitation (every cell) and GVFExplorer (the finite-reward cells it
runs in), and for the L1 distance of visit frequencies to omega* against noisy-uniform (smallest
effect 0.05). Per cell (the paper claims every environment and regime), one paired criterion per
baseline run in the cell: MR-NaS's log final error minus the baseline's, a paired t interval over
seeds, the same smallest effect. Aggregate rule: the pooled interval is the headline; every per-cell
criterion is supporting, so ``reproduced`` needs each of them to hold, one that fails gives ``not
reproduced`` and one that is undetermined gives ``inconclusive``. (These per-cell criteria replaced
"the lowest final error in at least 2/3 of the cells", which was looser than the paper's claim.)
Supporting point criteria: MR-NaS is never more than 1.5x worse than the best baseline (the worst cell
of each seed, log ratio averaged over seeds), its allocation distance at the end is at most half the
one after the first evaluation, and U(omega*) <= U at the noisy-uniform stationary distribution in
every cell (a solver sanity check). An optional stopping-rule demo (Riverswim n = 4, eps = 0.5, delta
= 0.1) reports Z_t / beta for MR-NaS and noisy-uniform.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion, paired_criterion
from icml25.core.validate import check_fields, check_in_range
from icml25.rl.mdp import stationary_allocation

from .agents import GVFExplorerAgent, MRNaSPE, NoisyPolicyAgent, PolicyEvaluationAgent
from .bounds import characteristic_time_ub, effective_bound, navigation_residual, solve_allocation
from .envs import ENVIRONMENTS, make_env, riverswim
from .experiment import REGIMES, make_problem, run_pe_experiment

ARMS = ("mr_nas", "noisy_uniform", "noisy_visitation", "gvf_explorer", "oracle_omega", "uniform_random")
BASELINES = ("noisy_uniform", "noisy_visitation", "gvf_explorer")
REFERENCES = ("oracle_omega", "uniform_random")
#: smallest effect of interest on log final error: a 20 % lower max error
LOG_EFFECT = math.log(1.2)
EFFECT_SOURCE = "declared: a 20 % lower final max error (log 1.2), the smallest gain we would call better"
_SIZE_KW = {"riverswim": "n", "forked_riverswim": "length", "double_chain": "length", "n_arms": "n"}


@dataclass(frozen=True)
class MRPEConfig:
    """Defaults are our small setting (3 chains x 2 regimes, 6e4 steps); ``envs`` are ``"name:size"``."""

    envs: tuple[str, ...] = ("riverswim:10", "forked_riverswim:5", "double_chain:4")
    regimes: tuple[str, ...] = ("single_rewardfree", "multi_finite")
    horizon: int = 60_000
    eval_every: int = 2_000
    gamma: float = 0.9
    eps: float = 0.1
    delta: float = 0.01
    update_every: int = 500
    noise_uniform: float = 0.3
    noise_visitation: float = 0.15
    gvf_noise: float = 0.3
    #: the noisy baselines' noise-free part: "count" (the repo's mixture_policy, each action weighted by
    #: how many target policies take it) or "uniform" (equal weight on each distinct target action)
    noisy_mix: str = "count"
    #: multi-policy regimes: the three rewarded (state, action) pairs and the three canonical reward
    #: states drawn without replacement, as the official setup_rewards (True), or independently (False,
    #: the rule of the runs recorded before this flag)
    distinct_draws: bool = True
    #: smallest effect of interest of every paired log-final-error criterion (pooled and per cell)
    log_effect: float = LOG_EFFECT
    stop_demo: bool = True
    stop_demo_eps: float = 0.5
    stop_demo_delta: float = 0.1

    def __post_init__(self) -> None:
        for spec in self.envs:
            name, _, size = spec.partition(":")
            if name not in ENVIRONMENTS or not size.isdigit():
                raise ValueError(f"envs entries must be 'name:size' with name in {sorted(ENVIRONMENTS)}")
        bad = [r for r in self.regimes if r not in REGIMES]
        if bad or not self.regimes:
            raise ValueError(f"regimes must be a non-empty subset of {REGIMES}, got {self.regimes}")
        check_fields(
            self,
            positive_int=("eval_every", "update_every"),
            positive=("eps", "log_effect"),
            probability=("gamma",),
        )
        if self.noisy_mix not in ("count", "uniform"):
            raise ValueError(f"MRPEConfig.noisy_mix must be 'count' or 'uniform', got {self.noisy_mix!r}")
        check_in_range("MRPEConfig.delta", self.delta, 0.0, 1.0, low_open=True, high_open=True)
        if self.horizon < self.eval_every:
            raise ValueError(
                f"MRPEConfig.horizon must be >= eval_every ({self.eval_every}), got {self.horizon}"
            )

    def cells(self) -> list[tuple[str, int, str]]:
        out: list[tuple[str, int, str]] = []
        for spec in self.envs:
            name, _, size = spec.partition(":")
            out.extend((name, int(size), regime) for regime in self.regimes)
        return out


def _cell_name(env: str, regime: str) -> str:
    return f"{env}/{regime}"


def _cell_baselines(regime: str) -> tuple[str, ...]:
    """The baselines run in a cell of ``regime`` (GVFExplorer needs finite rewards, as in the repo)."""
    return BASELINES if regime == "multi_finite" else ("noisy_uniform", "noisy_visitation")


def _c(name: str, arm: str, metric: str, op: Any, *, threshold: float | None = None, **kw: Any) -> Criterion:
    return Criterion(name, arm=arm, metric=metric, op=op, threshold=threshold, **kw)


def _cell_criteria(config: MRPEConfig) -> list[Criterion]:
    """One paired criterion per (cell, baseline run in it): MR-NaS's log final max error minus the
    baseline's in that cell, paired over seeds (t interval), smallest effect ``config.log_effect``.
    The paper claims a lower error in every environment and regime against every baseline."""
    out = []
    for env, _, regime in config.cells():
        cell = _cell_name(env, regime)
        for base in _cell_baselines(regime):
            out.append(
                paired_criterion(
                    f"cell_{env}_{regime}_vs_{base}",
                    "mr_nas",
                    f"{cell}/log_final_err",
                    "<",
                    base,
                    config.log_effect,
                    EFFECT_SOURCE,
                    description=f"{cell}: log final max error below {base}'s, paired over seeds",
                )
            )
    return out


def _criteria(config: MRPEConfig) -> tuple[Criterion, ...]:
    """The criteria for ``config``: the cells, the smallest effect and the trivial error bound follow
    the config. Aggregate rule: the headline is the pooled paired interval over (seed, cell); every
    per-cell comparison is a supporting criterion, so ``reproduced`` needs each to hold."""
    crit = [
        _c(
            "never_much_worse",
            "mr_nas",
            "worst_cell_log_ratio_to_best",
            "<=",
            threshold=math.log(1.5),
            description=(
                "mean over seeds of the worst cell's log(MR-NaS final error / best baseline's) <= log 1.5"
            ),
        ),
        Criterion(
            "below_noisy_uniform",
            arm="mr_nas",
            metric="log_final_err",
            op="<",
            other_arm="noisy_uniform",
            smallest_effect=config.log_effect,
            effect_source=EFFECT_SOURCE,
            description="log final max error below noisy-uniform's, paired over seeds and cells",
        ),
        Criterion(
            "below_noisy_visitation",
            arm="mr_nas",
            metric="log_final_err",
            op="<",
            other_arm="noisy_visitation",
            smallest_effect=config.log_effect,
            effect_source=EFFECT_SOURCE,
            description="log final max error below noisy-visitation's, paired over seeds and cells",
        ),
        Criterion(
            "below_gvf_explorer",
            arm="mr_nas",
            metric="log_final_err_finite",
            op="<",
            other_arm="gvf_explorer",
            smallest_effect=config.log_effect,
            effect_source=EFFECT_SOURCE,
            description="log final max error below GVFExplorer's in the finite-reward cells (where it runs)",
        ),
        _c(
            "tracks_allocation",
            "mr_nas",
            "alloc_l1_shrink",
            "<=",
            threshold=0.5,
            description="||N_t/t - omega*||_1 at the end <= half of its value after the first evaluation",
        ),
        Criterion(
            "closer_to_omega_than_noisy",
            arm="mr_nas",
            metric="alloc_l1",
            op="<",
            other_arm="noisy_uniform",
            smallest_effect=0.05,
            effect_source="declared: 0.05 in L1 distance to omega* (5 % of the visit mass)",
            description="visit frequencies closer to omega* than the noisy-uniform agent's, per cell",
        ),
        _c(
            "bound_sanity",
            "noisy_uniform",
            "min_predicted_speedup",
            ">=",
            threshold=1.0 - 1e-6,
            scales=("tiny", "small", "full"),
            description="U(omega*) <= U(stationary distribution of the noisy-uniform policy) in every cell",
        ),
        _c(
            "tiny_navigation",
            "mr_nas",
            "max_nav_residual",
            "<=",
            threshold=1e-8,
            scales=("tiny",),
            description="LP allocation satisfies the navigation constraints to 1e-8",
        ),
        _c(
            "tiny_errors_finite",
            "mr_nas",
            "mean_log_final_err",
            "<",
            threshold=math.log(1.0 / (1 - config.gamma)),
            scales=("tiny",),
            description="final errors below the trivial bound 1/(1-gamma)",
        ),
        *_cell_criteria(config),
    ]
    return tuple(crit)


def _gates(config: MRPEConfig) -> tuple[Criterion, ...]:
    return (
        _c(
            "positive_control",
            "oracle_omega",
            "log_gain_over_noisy_uniform",
            ">=",
            threshold=LOG_EFFECT,
            description=(
                "tracking the true model's omega* (the oracle reference) lowers the final error at least "
                "20 % below noisy-uniform's on average: the setup rewards the allocation MR-NaS estimates"
            ),
        ),
        _c(
            "estimates_converge",
            "noisy_uniform",
            "mean_log_error_drop",
            "<=",
            threshold=-math.log(2.0),
            description=(
                "the baseline's max error falls at least 2x from the first evaluation to the end: the "
                "horizon reaches the converging regime in which exploration differences show"
            ),
        ),
    )


CLAIM = Claim(
    statement=(
        "MR-NaS-PE, tracking the allocation that minimises the convex bound on the characteristic time, "
        "estimates the values of every (policy, reward) pair with lower max error than noisy-policy "
        "exploration and GVFExplorer at the same number of steps, and its visit frequencies track omega*."
    ),
    source="Figures 1000000_*_abs_error_small (repo figures/), Sec. 5 of arXiv 2502.02516",
    ours="mr_nas",
    baselines=BASELINES,
    references=REFERENCES,
    controls=("oracle_omega",),
    criteria=_criteria(MRPEConfig()),
    gates=_gates(MRPEConfig()),
    headline="below_noisy_uniform",
    min_seeds=3,
    setup_notes=(
        "Riverswim 10, ForkedRiverswim 9 states, DoubleChain 9 states; gamma 0.9, eps 0.1, delta 0.01; two "
        "regimes (single policy reward-free, three policies with one finite reward each). 6e4 steps x 10 "
        "seeds instead of 1e6 x 30; the paper's NArms and SF-NR arms and its third regime are not run at "
        "small. The box error is the exact supremum over [0,1]^S (the repo evaluates basis rewards)."
    ),
)


def _agents(config: MRPEConfig, problem: Any, omega_star: np.ndarray, seed_seq: list[int]) -> dict:
    S, A = problem.mdp.n_states, problem.mdp.n_actions
    common: dict[str, Any] = dict(gamma=config.gamma, eps=config.eps, delta=config.delta)
    pols, sets = problem.policies, problem.reward_sets
    mix: Any = config.noisy_mix

    def rng(k: int) -> np.random.Generator:
        return np.random.default_rng([*seed_seq, k])

    agents: dict[str, PolicyEvaluationAgent] = {
        "mr_nas": MRNaSPE(S, A, pols, sets, rng=rng(0), update_every=config.update_every, **common),
        "noisy_uniform": NoisyPolicyAgent(
            S, A, pols, sets, rng=rng(1), kind="uniform", noise=config.noise_uniform, mix=mix, **common
        ),
        "noisy_visitation": NoisyPolicyAgent(
            S, A, pols, sets, rng=rng(2), kind="visitation", noise=config.noise_visitation, mix=mix, **common
        ),
        "oracle_omega": MRNaSPE(S, A, pols, sets, rng=rng(4), fixed_omega=omega_star, **common),
        "uniform_random": NoisyPolicyAgent(S, A, pols, sets, rng=rng(5), kind="uniform", noise=1.0, **common),
    }
    if problem.regime == "multi_finite":
        agents["gvf_explorer"] = GVFExplorerAgent(
            S, A, pols, sets, rng=rng(3), noise=config.gvf_noise, update_every=config.update_every, **common
        )
    return agents


class MultiRewardPolicyEvalCheck(ClaimCheck[MRPEConfig]):
    slug = "multi_reward_policy_eval"
    claim = CLAIM  # the small preset's; claim_for follows the cell count and gamma of a config
    presets = {
        "tiny": MRPEConfig(envs=("riverswim:5",), horizon=5_000, eval_every=1_000, stop_demo=False),
        "small": MRPEConfig(),
        "full": MRPEConfig(
            envs=("riverswim:15", "forked_riverswim:8", "double_chain:8", "n_arms:14"),
            regimes=REGIMES,
            horizon=1_000_000,
            eval_every=500,
        ),
    }
    default_seeds = {"tiny": 1, "small": 10, "full": 30}

    def claim_for(self, config: MRPEConfig) -> Claim:
        return dataclasses.replace(CLAIM, criteria=_criteria(config), gates=_gates(config))

    def run_seed(self, config: MRPEConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
        series: dict[str, Any] = {}
        cells = config.cells()
        won, ratios_to_best, nav, speedups, shrink = [], [], [], [], []
        log_final: dict[str, list[float]] = {a: [] for a in ARMS}
        log_final_finite: dict[str, list[float]] = {a: [] for a in ARMS}
        l1_final: dict[str, list[float]] = {a: [] for a in ARMS}
        log_drop: dict[str, list[float]] = {a: [] for a in ARMS}
        for ci, (env_name, size, regime) in enumerate(cells):
            cell = _cell_name(env_name, regime)
            mdp = make_env(env_name, **{_SIZE_KW[env_name]: size})
            problem = make_problem(
                mdp,
                regime,
                gamma=config.gamma,
                rng=np.random.default_rng([seed, ci]),
                env_name=env_name,
                distinct_draws=config.distinct_draws,
            )
            A_eff = effective_bound(mdp.P, problem.policies, problem.reward_sets, config.gamma)
            alloc = solve_allocation(mdp.P, A_eff, config.gamma, config.eps)
            nav.append(navigation_residual(mdp.P, alloc.omega))
            agents = _agents(config, problem, alloc.omega, [seed, ci])
            beh = agents["noisy_uniform"]
            assert isinstance(beh, NoisyPolicyAgent)
            om_beh = stationary_allocation(mdp.P, beh.stationary_behaviour())
            speedup = characteristic_time_ub(om_beh, A_eff, config.gamma, config.eps) / alloc.value
            speedups.append(speedup)
            series[cell] = {"U_star": alloc.value, "predicted_speedup": speedup}
            finals: dict[str, float] = {}
            for arm, agent in agents.items():

                def report(t: int, T: int, arm: str = arm, cell: str = cell) -> None:
                    ctx.progress(f"{cell} {arm}", t, T)

                run = run_pe_experiment(
                    mdp,
                    agent,
                    horizon=config.horizon,
                    eval_every=config.eval_every,
                    rng=np.random.default_rng([seed, ci, 999]),  # same environment noise for every arm
                    omega_ref=alloc.omega,
                    progress=report,
                )
                finals[arm] = float(run.max_error[-1])
                m = metrics[arm]
                m[f"{cell}/final_err"] = finals[arm]
                m[f"{cell}/log_final_err"] = math.log(finals[arm])  # the per-cell paired criteria
                m[f"{cell}/mean_log_err"] = float(np.mean(np.log(run.max_error)))
                m[f"{cell}/alloc_l1"] = float(run.alloc_l1[-1])
                log_final[arm].append(math.log(finals[arm]))
                if regime == "multi_finite":
                    log_final_finite[arm].append(math.log(finals[arm]))
                l1_final[arm].append(float(run.alloc_l1[-1]))
                log_drop[arm].append(math.log(finals[arm] / max(float(run.max_error[0]), 1e-300)))
                if arm == "mr_nas":
                    shrink.append(float(run.alloc_l1[-1] / max(run.alloc_l1[0], 1e-12)))
                series[cell][arm] = {
                    "steps": run.steps,
                    "max_error": np.round(run.max_error, 6),
                    "alloc_l1": np.round(run.alloc_l1, 6),
                }
            best = min(v for a, v in finals.items() if a in BASELINES)
            won.append(float(finals["mr_nas"] < best))
            ratios_to_best.append(math.log(finals["mr_nas"] / best))
            metrics["mr_nas"][f"{cell}/log_ratio_to_best"] = ratios_to_best[-1]
            metrics["noisy_uniform"][f"{cell}/predicted_speedup"] = speedup
        metrics["mr_nas"]["cells_won_frac"] = float(np.mean(won))
        # per seed: the per-cell log ratios; the worst cell after averaging over seeds is not per-seed
        # computable, so the criterion uses the per-seed max (stricter) averaged over seeds
        metrics["mr_nas"]["worst_cell_log_ratio_to_best"] = float(np.max(ratios_to_best))
        metrics["mr_nas"]["alloc_l1_shrink"] = float(np.mean(shrink))
        metrics["mr_nas"]["max_nav_residual"] = float(np.max(nav))
        metrics["noisy_uniform"]["min_predicted_speedup"] = float(np.min(speedups))
        items: dict[str, dict[str, np.ndarray]] = {}
        for arm in ARMS:
            if log_final[arm]:
                metrics[arm]["mean_log_final_err"] = float(np.mean(log_final[arm]))
                metrics[arm]["mean_alloc_l1_final"] = float(np.mean(l1_final[arm]))
                metrics[arm]["mean_log_error_drop"] = float(np.mean(log_drop[arm]))
                # per-cell scores: the paired criteria bootstrap over seeds and cells
                items.setdefault(arm, {})["alloc_l1"] = np.asarray(l1_final[arm])
                if len(log_final[arm]) == len(cells):
                    items[arm]["log_final_err"] = np.asarray(log_final[arm])
            if log_final_finite[arm]:
                items.setdefault(arm, {})["log_final_err_finite"] = np.asarray(log_final_finite[arm])
        for arm, arm_items in items.items():  # each item metric's value: its mean over the cells
            metrics[arm].update({name: float(np.mean(rows)) for name, rows in arm_items.items()})
        metrics["oracle_omega"]["log_gain_over_noisy_uniform"] = (
            metrics["noisy_uniform"]["mean_log_final_err"] - metrics["oracle_omega"]["mean_log_final_err"]
        )
        if config.stop_demo:
            series["stop_demo"] = self._stop_demo(config, seed, metrics)
        return SeedOutcome(metrics={a: m for a, m in metrics.items() if m}, series=series, items=items)

    def _stop_demo(self, config: MRPEConfig, seed: int, metrics: dict[str, dict[str, float]]) -> dict:
        """Riverswim n = 4 with a loose eps/delta: Z_t / beta over time for MR-NaS and noisy-uniform."""
        mdp = riverswim(4)
        problem = make_problem(mdp, "single_rewardfree", gamma=config.gamma, rng=np.random.default_rng(seed))
        out: dict[str, Any] = {}
        common: dict[str, Any] = dict(
            gamma=config.gamma, eps=config.stop_demo_eps, delta=config.stop_demo_delta
        )
        agents: dict[str, PolicyEvaluationAgent] = {
            "mr_nas": MRNaSPE(
                4,
                2,
                problem.policies,
                problem.reward_sets,
                rng=np.random.default_rng([seed, 77, 0]),
                **common,
            ),
            "noisy_uniform": NoisyPolicyAgent(
                4,
                2,
                problem.policies,
                problem.reward_sets,
                rng=np.random.default_rng([seed, 77, 1]),
                **common,
            ),
        }
        for arm, agent in agents.items():
            run = run_pe_experiment(
                mdp,
                agent,
                horizon=config.horizon,
                eval_every=config.eval_every,
                rng=np.random.default_rng([seed, 77, 999]),
                record_stopping=True,
            )
            fired = np.flatnonzero(run.stop_ratio >= 1.0)
            stop = float(run.steps[fired[0]]) if fired.size else float(config.horizon + config.eval_every)
            metrics[arm]["stop_demo/stop_step"] = stop  # horizon + eval_every: never stopped
            metrics[arm]["stop_demo/final_ratio"] = float(run.stop_ratio[-1])
            out[arm] = {"steps": run.steps, "ratio": np.round(run.stop_ratio, 6)}
        return out

    def make_figures(self, config: MRPEConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from matplotlib.ticker import NullFormatter

        from icml25.core.plotting import arm_color, new_figure, plot_band

        cells = [_cell_name(e, r) for e, _, r in config.cells()]
        ncols = len(config.regimes)
        nrows = len(config.envs)
        fig, axes = new_figure(ncols=ncols, nrows=nrows, width=3.6, height=2.8)
        axes = np.asarray(axes).reshape(nrows, ncols)
        for idx, cell in enumerate(cells):
            ax = axes[idx // ncols, idx % ncols]
            for arm in ARMS:
                if arm not in outcomes[0].series[cell]:
                    continue
                steps = outcomes[0].series[cell][arm]["steps"]
                plot_band(
                    ax,
                    steps,
                    [o.series[cell][arm]["max_error"] for o in outcomes],
                    label=arm,
                    color=arm_color(arm, CLAIM.ours, CLAIM.baselines),
                    linestyle="--" if arm == "oracle_omega" else "-",
                )
            ax.set(
                xscale="log",
                yscale="log",
                xlabel="steps t",
                ylabel="max_{pi,r} ||V_hat - V||_inf",
                title=cell,
            )
            ax.xaxis.set_minor_formatter(NullFormatter())
        for col in range(ncols):
            axes[0, col].legend()
        ctx.save_figure(
            fig,
            "error_vs_steps",
            "Max value-estimation error over every (policy, reward) pair against steps, per (environment, "
            "regime) cell: mean and min-max band over seeds.",
        )
        fig, axes = new_figure(ncols=ncols, nrows=nrows, width=3.6, height=2.8)
        axes = np.asarray(axes).reshape(nrows, ncols)
        for idx, cell in enumerate(cells):
            ax = axes[idx // ncols, idx % ncols]
            for arm in ("mr_nas", "oracle_omega", "noisy_uniform"):
                steps = outcomes[0].series[cell][arm]["steps"]
                plot_band(
                    ax,
                    steps,
                    [o.series[cell][arm]["alloc_l1"] for o in outcomes],
                    label=arm,
                    color=arm_color(arm, CLAIM.ours, CLAIM.baselines),
                )
            ax.set(xscale="log", xlabel="steps t", ylabel="||N_t/t - omega*||_1", title=cell)
            ax.xaxis.set_minor_formatter(NullFormatter())
        axes[0, 0].legend()
        ctx.save_figure(
            fig,
            "allocation_tracking",
            "L1 distance between the visit frequencies N_t/t and the optimal allocation omega* of the true "
            "model: mean and min-max band over seeds.",
        )
        if config.stop_demo and all("stop_demo" in o.series for o in outcomes):
            fig, ax = new_figure(width=4.6)
            for arm in ("mr_nas", "noisy_uniform"):
                plot_band(
                    ax,
                    outcomes[0].series["stop_demo"][arm]["steps"],
                    [o.series["stop_demo"][arm]["ratio"] for o in outcomes],
                    label=arm,
                    color=arm_color(arm, CLAIM.ours, CLAIM.baselines),
                )
            ax.axhline(1.0, color="k", linewidth=0.8, linestyle=":", label="stop")
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set(
                xscale="log",
                xlabel="steps t",
                ylabel="Z_t / beta(N_t, delta)",
                title=f"Stopping rule, Riverswim 4, eps={config.stop_demo_eps}, "
                f"delta={config.stop_demo_delta}",
            )
            ax.legend()
            ctx.save_figure(
                fig,
                "stopping_rule",
                "Stopping statistic over the threshold; the PAC rule stops when the ratio reaches 1.",
            )


CHECK = MultiRewardPolicyEvalCheck()
