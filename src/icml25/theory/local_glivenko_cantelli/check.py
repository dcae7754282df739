"""Claim check for *The Empirical Mean is Minimax Optimal for Local Glivenko-Cantelli* (Cohen,
Kontorovich, Weiss; ICML 2025; https://arxiv.org/abs/2410.02835).

A theory paper without experiments: the check measures the numerical consequences of its theorems
on truncated product-Bernoulli measures (D coordinates standing in for infinitely many). A trend
in D or n is evidence about the theorems, never a proof of them.

Experiments (E = exact risk of ``risk.exact_sup_risk``, MC = Monte Carlo, same draws for all arms):
    dim      (E) the EME's risk Delta_n against D for the LGC sequences p_j = 1/2 (j+1)^(-a), the
             non-LGC p_j = 1/2 exp(-sqrt(log(j+1))) (reported, no criterion: it diverges too slowly
             for these D) and the constant sequence 0.3.
    rate     (E) at the largest D: log-log slope of Delta_n in n, and Delta_n over the LGC rate
             sqrt(S/n) + T log(n)/n (constant c = 1).
    minimax  worst cases over one class, C(S(q), T(q)) = {p : S(p) <= S(q), T(p) <= T(q)} with
             q = 1/2 (j+1)^(-1), D = ``minimax_dim``, n in ``minimax_sizes`` (10 .. 1e4). Members
             (``minimax``): q, blocks of k coordinates at level r (every grid point inside the class)
             and the testing lower bound's own hypotheses; the class is closed under permutations,
             so the exact risk of a permutation-equivariant coordinatewise estimator on one ordering
             is its risk on all. The order-exploiting isotonic fit (Monte Carlo) also meets q
             reversed, ``permutations`` random permutations and the EME's worst block reversed behind
             zeros (the worst member chosen on ``minimax_reps`` draws, re-measured on fresh ones).
             The lower bound of ``lower_bound`` is computed over the same class.
    path     (MC) the pooled-tail hybrid against the EME on the constant sequence and on
             1/2 (j+1)^(-1), nested truncations D of one draw.

Arms: ``eme`` (the paper's estimator, "ours"); competitors ``add_beta_0.5``, ``add_beta_1``,
``threshold_2``, ``threshold_3`` (coordinatewise, exact) and ``isotonic`` (order-exploiting), each of
which beats the EME on some member; ``best_competitor`` = per n the smallest competitor worst case;
``pooled_hybrid`` (pathology-exploiting). References: ``zero`` (p_hat = 0, learns nothing) and
``lower_bound`` (control: the testing bound, below which no estimator can go). No arm has a tuned
hyperparameter: every listed variant is reported.

Gates (a failure gives inconclusive): every member lies in the class (``minimax/class_excess`` <=
1e-9); the EME's exact risk on the bound's hypotheses >= the bound; the bound > 0 at every n; some
competitor beats the EME by >= ``member_gain_min`` (10 %) on some member at some n (so the worst-case
comparison can fail); the EME's worst case at n_max <= ``zero_ratio_max`` (0.5) x the zero estimator's.

Headline (paired, non-inferiority): log worst-case risk of the EME minus that of ``best_competitor``,
items = the sample sizes, two-stage bootstrap over seeds then items; holds when the interval lies below
log 2, fails when it lies above (smallest effect log 2: the minimax statement read as "no estimator
beats the EME's worst case by more than a constant factor", the factor 2 of the earlier
``wc_factor = 0.5``). The same test
against every competitor is supporting.

Other criteria (declared before any small-scale number was seen; thresholds are config fields):
    * dimension: for each LGC exponent a, max over n of |Delta(D_max) - Delta(D_min)| / Delta(D_min)
      < ``lgc_drift_max`` (0.10); for the constant sequence, min over n of the relative rise
      > ``const_rise_min`` (0.15; a sub-Gaussian maximum of D coordinates predicts about 0.27 for
      D from 1e3 to 1e5).
    * rate: for each LGC exponent, the slope lies in [``slope_low``, ``slope_high``] = [-1.1, -0.4]
      and Delta_n / (sqrt(S/n) + T log(n)/n) in [``bound_ratio_low``, ``bound_ratio_high``] = [0.1, 5].
    * minimax: each competitor's worst-case slope minus the EME's >= ``slope_gap`` (-0.15); over n,
      max / min of wc(EME) / lower bound <= ``lb_spread_max`` (4) and |log-log slope| of that ratio
      <= ``lb_slope_max`` (0.15): the same rate.
    * pathology (3 seeds, means): on the constant sequence the hybrid's risk at D_max is below
      ``hybrid_shrink_max`` (0.5) x its risk at D_min (max over n) and below ``hybrid_vs_eme_max``
      (0.1) x the EME's (max over n); on the LGC sequence it matches the EME within
      ``hybrid_match_tol`` (5 %) at every (D, n).
Tiny scale runs smoke conditions only (LGC drift < 0.02 absolute, the constant's risk rises, the
bound ratio in [0.1, 5]).

Deviations: D goes to 1e5 at small (1e6 at full) and n from 10 to 1000; the paper's formal
definitions of pathology, decay and symmetry are replaced by the proxies named in ``estimators``
and ``sequences``; the lower bound is our testing construction, not the paper's Fano argument.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields

from .complexity import complexity_S, complexity_T, lgc_upper_bound
from .estimators import (
    AddBeta,
    EmpiricalMean,
    Estimator,
    IsotonicOrdered,
    PooledTailHybrid,
    Thresholded,
    Zero,
)
from .lower_bound import bound_hypotheses, multiple_testing_bound
from .minimax import block, block_members, class_excess
from .risk import exact_sup_risk, sup_errors
from .sequences import constant, exp_sqrt_log, polynomial

OURS = "eme"
#: non-pathological competitors; the coordinatewise ones first, the order-exploiting isotonic fit last
COMPETITORS = ("add_beta_0.5", "add_beta_1", "threshold_2", "threshold_3", "isotonic")
BEST = "best_competitor"  # per n, the smallest worst case of the competitors
HYBRID = "pooled_hybrid"
ZERO = "zero"  # reference: learns nothing
LOWER = "lower_bound"  # reference (control): the testing lower bound, valid for every estimator
REFERENCES = (ZERO, LOWER)
ARMS = (OURS, *COMPETITORS, BEST, HYBRID, *REFERENCES)
#: the minimax headline's non-inferiority margin (log scale): a factor 2 in worst-case risk
LOG_FACTOR_2 = math.log(2.0)
MINIMAX_EFFECT_SOURCE = (
    "the minimax-rate statement read numerically: no competitor's worst case is smaller than the EME's "
    "by more than a constant factor; declared as a factor 2 (log 2), the factor of the earlier "
    "wc_factor = 0.5"
)
BLOCK_LEVELS = tuple(float(x) for x in np.geomspace(1e-4, 0.5, 24))
Q_GRID = tuple(float(x) for x in np.geomspace(1e-4, 0.45, 40))
EPS_RATIOS = tuple(float(x) for x in np.geomspace(0.05, 8.0, 30))
K_GRID = tuple(2**i for i in range(1, 15))


def make_estimator(arm: str) -> Estimator:
    """The estimator of an arm name."""
    table: dict[str, Estimator] = {
        OURS: EmpiricalMean(),
        "add_beta_0.5": AddBeta(0.5),
        "add_beta_1": AddBeta(1.0),
        "threshold_3": Thresholded(3),
        ZERO: Zero(),
        "threshold_2": Thresholded(2),
        "isotonic": IsotonicOrdered(),
        HYBRID: PooledTailHybrid(),
    }
    return table[arm]


@dataclass(frozen=True)
class LGCConfig:
    """One claim-check configuration (sizes, repetitions and the pre-declared thresholds)."""

    dims: tuple[int, ...] = (1_000, 10_000, 100_000)
    sample_sizes: tuple[int, ...] = (10, 30, 100, 300, 1000)
    lgc_exponents: tuple[float, ...] = (0.5, 1.0, 2.0)
    constant_level: float = 0.3
    include_exp_sqrt_log: bool = True
    minimax_dim: int = 100_000
    minimax_sizes: tuple[int, ...] = (10, 30, 100, 300, 1000, 3000, 10_000)
    permutations: int = 5
    minimax_reps: int = 20
    pathology_dims: tuple[int, ...] = (1_000, 10_000, 100_000)
    pathology_reps: int = 30
    lgc_drift_max: float = 0.10
    const_rise_min: float = 0.15
    slope_low: float = -1.1
    slope_high: float = -0.4
    bound_ratio_low: float = 0.1
    bound_ratio_high: float = 5.0
    slope_gap: float = -0.15
    lb_spread_max: float = 4.0
    lb_slope_max: float = 0.15
    member_gain_min: float = 0.1
    zero_ratio_max: float = 0.5
    hybrid_shrink_max: float = 0.5
    hybrid_vs_eme_max: float = 0.1
    hybrid_match_tol: float = 0.05

    def __post_init__(self) -> None:
        for name in ("dims", "sample_sizes", "pathology_dims", "minimax_sizes"):
            sizes = list(getattr(self, name))
            if len(sizes) < 2 or sizes != sorted(set(sizes)) or sizes[0] < 1:
                raise ValueError(f"LGCConfig.{name} must hold >= 2 increasing positive sizes, got {sizes}")
        if not self.lgc_exponents or any(a <= 0 for a in self.lgc_exponents):
            raise ValueError(f"LGCConfig.lgc_exponents must be positive, got {self.lgc_exponents}")
        check_fields(
            self,
            positive_int=("minimax_dim", "permutations", "minimax_reps", "pathology_reps"),
            positive=("lgc_drift_max", "const_rise_min", "bound_ratio_low", "bound_ratio_high"),
            unit_interval=("constant_level",),
        )
        if self.pathology_dims[0] < 4:
            raise ValueError("LGCConfig.pathology_dims must start at >= 4 coordinates")


def poly_key(a: float) -> str:
    return f"poly_a{a:g}"


def _families(config: LGCConfig, D: int) -> dict[str, np.ndarray]:
    fams = {poly_key(a): polynomial(D, a) for a in config.lgc_exponents}
    if config.include_exp_sqrt_log:
        fams["exp_sqrt_log"] = exp_sqrt_log(D)
    fams["constant"] = constant(D, config.constant_level)
    return fams


def _block_sizes(D: int) -> tuple[int, ...]:
    """k = 1, 2, 4, ... up to D: the block sizes of the class members."""
    return tuple(2**i for i in range(int(math.log2(D)) + 1))


def _slope(xs: Sequence[float], ys: Any) -> float:
    y = np.asarray(ys, dtype=float)
    if not np.isfinite(y).all() or (y <= 0).any():
        return math.nan
    return float(np.polyfit(np.log10(np.asarray(xs, dtype=float)), np.log10(y), 1)[0])


def _criteria(config: LGCConfig) -> tuple[Criterion, ...]:
    small = ("small", "full")
    out: list[Criterion] = []
    for a in config.lgc_exponents:
        f = poly_key(a)
        out += [
            Criterion(
                f"{f}/dimension_free",
                arm=OURS,
                metric=f"dim/{f}/rel_drift",
                op="<",
                threshold=config.lgc_drift_max,
                scales=small,
                description=f"EME risk on {f} (LGC) barely moves from D_min to D_max",
            ),
            Criterion(
                f"{f}/slope_above",
                arm=OURS,
                metric=f"rate/{f}/slope",
                op=">=",
                threshold=config.slope_low,
                scales=small,
                description=f"EME risk on {f} decays no faster than n^{config.slope_low:g}",
            ),
            Criterion(
                f"{f}/slope_below",
                arm=OURS,
                metric=f"rate/{f}/slope",
                op="<=",
                threshold=config.slope_high,
                scales=small,
                description=f"EME risk on {f} decays at least as n^{config.slope_high:g}",
            ),
            Criterion(
                f"{f}/bound_ratio_max",
                arm=OURS,
                metric=f"rate/{f}/bound_ratio_max",
                op="<=",
                threshold=config.bound_ratio_high,
                scales=small,
                description="EME risk / (sqrt(S/n) + T log n / n) stays below the upper limit",
            ),
            Criterion(
                f"{f}/bound_ratio_min",
                arm=OURS,
                metric=f"rate/{f}/bound_ratio_min",
                op=">=",
                threshold=config.bound_ratio_low,
                scales=small,
                description="EME risk / (sqrt(S/n) + T log n / n) stays above the lower limit",
            ),
        ]
    out.append(
        Criterion(
            "constant/grows_with_D",
            arm=OURS,
            metric="dim/constant/rel_rise",
            op=">",
            threshold=config.const_rise_min,
            scales=small,
            description="EME risk on the constant sequence (outside LGC) rises with D at every n",
        )
    )
    out.append(
        Criterion(
            "minimax/eme_not_beaten",
            arm=OURS,
            metric="minimax/log_wc",
            op="<",
            other_arm=BEST,
            smallest_effect=LOG_FACTOR_2,
            effect_source=MINIMAX_EFFECT_SOURCE,
            comparison="non_inferiority",
            scales=small,
            description="over the class C(S(q), T(q)), the EME's log worst-case risk is not above the best "
            "competitor's (per n, the smallest worst case) by log 2; paired over n and seeds",
        )
    )
    for arm in COMPETITORS:
        out += [
            Criterion(
                f"minimax/{arm}/not_better",
                arm=OURS,
                metric="minimax/log_wc",
                op="<",
                other_arm=arm,
                smallest_effect=LOG_FACTOR_2,
                effect_source=MINIMAX_EFFECT_SOURCE,
                comparison="non_inferiority",
                scales=small,
                description=f"{arm}'s worst case over the class is not below the EME's by a factor 2",
            ),
            Criterion(
                f"minimax/{arm}/wc_slope_gap",
                arm=arm,
                metric="minimax/wc_slope_gap",
                op=">=",
                threshold=config.slope_gap,
                scales=small,
                description=f"{arm}'s worst-case slope in n is not steeper than the EME's by > "
                f"{-config.slope_gap:g}",
            ),
        ]
    out += [
        Criterion(
            "minimax/lb_same_rate",
            arm=OURS,
            metric="minimax/lb_spread",
            op="<=",
            threshold=config.lb_spread_max,
            scales=small,
            description="EME worst case / lower bound (same class) varies by at most this factor over n",
        ),
        Criterion(
            "minimax/lb_ratio_flat",
            arm=OURS,
            metric="minimax/lb_ratio_slope_abs",
            op="<=",
            threshold=config.lb_slope_max,
            scales=small,
            description="|log-log slope in n| of EME worst case / lower bound is at most "
            f"{config.lb_slope_max:g}: the same rate",
        ),
        Criterion(
            "pathology/hybrid_shrinks",
            arm=HYBRID,
            metric="path/constant/shrink",
            op="<",
            threshold=config.hybrid_shrink_max,
            scales=small,
            description="on the constant sequence the pooled hybrid's risk falls as D grows",
        ),
        Criterion(
            "pathology/hybrid_beats_eme",
            arm=HYBRID,
            metric="path/constant/vs_eme",
            op="<",
            threshold=config.hybrid_vs_eme_max,
            scales=small,
            description="on the constant sequence at D_max the hybrid's risk is far below the EME's",
        ),
        Criterion(
            "pathology/hybrid_matches_eme_on_lgc",
            arm=HYBRID,
            metric="path/poly/match",
            op="<=",
            threshold=config.hybrid_match_tol,
            scales=small,
            description="on the LGC sequence the hybrid's risk equals the EME's (it does not pool)",
        ),
    ]
    f = poly_key(config.lgc_exponents[0])
    out += [
        Criterion(
            "tiny/lgc_abs_drift",
            arm=OURS,
            metric=f"dim/{f}/abs_drift",
            op="<",
            threshold=0.02,
            scales=("tiny",),
            description="smoke: LGC risk moves < 0.02 from D_min to D_max",
        ),
        Criterion(
            "tiny/constant_rises",
            arm=OURS,
            metric="dim/constant/rel_rise",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="smoke: the constant sequence's risk rises with D",
        ),
        Criterion(
            "tiny/bound_ratio_max",
            arm=OURS,
            metric=f"rate/{f}/bound_ratio_max",
            op="<=",
            threshold=5.0,
            scales=("tiny",),
            description="smoke: bound ratio <= 5",
        ),
        Criterion(
            "tiny/bound_ratio_min",
            arm=OURS,
            metric=f"rate/{f}/bound_ratio_min",
            op=">=",
            threshold=0.1,
            scales=("tiny",),
            description="smoke: bound ratio >= 0.1",
        ),
    ]
    return tuple(out)


def _gates(config: LGCConfig) -> tuple[Criterion, ...]:
    """Conditions under which the minimax comparison is informative (a failure: inconclusive)."""
    return (
        Criterion(
            "gate/members_in_class",
            arm=OURS,
            metric="minimax/class_excess",
            op="<=",
            threshold=1e-9,
            description="every member of the worst-case family lies in C(S(q), T(q)), the lower "
            "bound's class",
        ),
        Criterion(
            "gate/lower_bound_valid",
            arm=OURS,
            metric="minimax/eme_over_lb_hyp_min",
            op=">=",
            threshold=1.0,
            description="the EME's exact risk on the bound's own hypotheses is at least the bound, every n",
        ),
        Criterion(
            "gate/lower_bound_positive",
            arm=OURS,
            metric="minimax/lb_min",
            op=">",
            threshold=0.0,
            description="the testing lower bound is positive at every n (the class holds a hard test)",
        ),
        Criterion(
            "gate/competitors_win_somewhere",
            arm=BEST,
            metric="minimax/max_member_gain",
            op=">=",
            threshold=config.member_gain_min,
            description="some competitor beats the EME's risk by >= "
            f"{config.member_gain_min:.0%} on some member at some n, so the worst-case comparison can fail",
        ),
        Criterion(
            "gate/eme_learns",
            arm=OURS,
            metric="minimax/over_zero_at_nmax",
            op="<=",
            threshold=config.zero_ratio_max,
            description="at the largest n the EME's worst case is at most "
            f"{config.zero_ratio_max:g} x the learn-nothing zero estimator's",
        ),
    )


CLAIM_TEMPLATE = Claim(
    statement=(
        "In simulation (evidence, not proof): the empirical mean's sup-norm risk is dimension-free on LGC "
        "sequences and grows with D outside LGC; over the permutation-closed class C(S(q), T(q)) no "
        "non-pathological competitor has a worst-case risk smaller by a factor 2 or a faster worst-case "
        "rate, "
        "and the EME's worst case tracks a testing lower bound over the same class; "
        "a pathology-exploiting pooled-tail estimator learns the constant sequences the EME cannot."
    ),
    source="Abstract and main theorems (learnability, minimax rates, pathologies); no numerical tables",
    ours=OURS,
    baselines=(*COMPETITORS, BEST, HYBRID),
    references=REFERENCES,
    controls=(LOWER,),
    criteria=_criteria(LGCConfig()),
    gates=_gates(LGCConfig()),
    headline="minimax/eme_not_beaten",
    min_seeds=3,
    setup_notes=(
        "Truncated sequences D <= 1e5 (small), n = 10..1000 (minimax: 10..1e4); exact risks for "
        "coordinatewise estimators, "
        "Monte Carlo for the isotonic and pooled-tail estimators; proxy definitions of pathology and "
        "symmetry; the lower bound is a multiple-testing construction of ours."
    ),
)


def _claim(config: LGCConfig) -> Claim:
    return dataclasses.replace(CLAIM_TEMPLATE, criteria=_criteria(config), gates=_gates(config))


CLAIM = _claim(LGCConfig())

_EXACT_CACHE: dict[tuple[str, str, int, int], float] = {}


def _exact(arm: str, key: str, p: np.ndarray, n: int) -> float:
    """Exact risk, memoised: it does not depend on the seed, so each seed reuses it."""
    ck = (arm, key, int(p.size), int(n))
    if ck not in _EXACT_CACHE:
        _EXACT_CACHE[ck] = exact_sup_risk(make_estimator(arm), p, n)
    return _EXACT_CACHE[ck]


class LocalGlivenkoCantelliCheck(ClaimCheck[LGCConfig]):
    slug = "local_glivenko_cantelli"
    claim = CLAIM
    presets = {
        "tiny": LGCConfig(
            dims=(1_000, 10_000),
            sample_sizes=(10, 100),
            lgc_exponents=(1.0,),
            include_exp_sqrt_log=False,
            minimax_dim=5_000,
            minimax_sizes=(10, 100),
            permutations=2,
            minimax_reps=5,
            pathology_dims=(1_000, 10_000),
            pathology_reps=8,
        ),
        "small": LGCConfig(),
        "full": LGCConfig(
            dims=(1_000, 10_000, 100_000, 1_000_000),
            sample_sizes=(10, 30, 100, 300, 1000, 3000),
            minimax_dim=1_000_000,
            permutations=50,
            minimax_reps=50,
            pathology_dims=(1_000, 10_000, 100_000, 1_000_000),
            pathology_reps=100,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def claim_for(self, config: LGCConfig) -> Claim:
        return _claim(config)

    def begin_run(self, config: LGCConfig) -> None:
        _EXACT_CACHE.clear()  # member keys name (level, size), not the class: start each run clean

    def run_seed(self, config: LGCConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
        series: dict[str, Any] = {"dims": list(config.dims), "sample_sizes": list(config.sample_sizes)}
        items: dict[str, dict[str, np.ndarray]] = {}
        ns = list(config.sample_sizes)
        self._dimension_and_rate(config, metrics, series, ctx)
        self._minimax(config, seed, metrics, items, series, ctx)
        self._pathology(config, seed, metrics, series, ctx)
        series["n"] = ns
        return SeedOutcome(metrics=metrics, series=series, items=items)

    # -- dim + rate (exact, seed-free) --------------------------------------------------------

    def _dimension_and_rate(
        self, config: LGCConfig, metrics: dict[str, dict[str, float]], series: dict[str, Any], ctx: RunContext
    ) -> None:
        ns, dims = config.sample_sizes, config.dims
        risk: dict[str, np.ndarray] = {}
        for di, D in enumerate(dims):
            for key, p in _families(config, D).items():
                risk.setdefault(key, np.zeros((len(dims), len(ns))))
                for ni, n in enumerate(ns):
                    risk[key][di, ni] = _exact(OURS, key, p, n)
            ctx.progress("exact EME risk vs D", di + 1, len(dims))
        m = metrics[OURS]
        for key, r in risk.items():
            for di, D in enumerate(dims):
                for ni, n in enumerate(ns):
                    m[f"dim/{key}/D{D}_n{n}"] = float(r[di, ni])
            change = (r[-1] - r[0]) / r[0]
            m[f"dim/{key}/rel_drift"] = float(np.abs(change).max())
            m[f"dim/{key}/rel_rise"] = float(change.min())
            m[f"dim/{key}/abs_drift"] = float(np.abs(r[-1] - r[0]).max())
        p_top = _families(config, dims[-1])
        for key, p in p_top.items():
            bound = np.array([lgc_upper_bound(p, n) for n in ns])
            ratio = risk[key][-1] / bound
            m[f"rate/{key}/slope"] = _slope(ns, risk[key][-1])
            m[f"rate/{key}/bound_ratio_max"] = float(ratio.max())
            m[f"rate/{key}/bound_ratio_min"] = float(ratio.min())
            m[f"rate/{key}/S"] = complexity_S(p)
            m[f"rate/{key}/T"] = complexity_T(p)
        series["dim"] = {key: r for key, r in risk.items()}

    # -- minimax over the class C(S(q), T(q)) -------------------------------------------------------

    def _minimax(
        self,
        config: LGCConfig,
        seed: int,
        metrics: dict[str, dict[str, float]],
        items: dict[str, dict[str, np.ndarray]],
        series: dict[str, Any],
        ctx: RunContext,
    ) -> None:
        ns = config.minimax_sizes
        q = polynomial(config.minimax_dim, 1.0)
        s_max, t_max = complexity_S(q), complexity_T(q)
        # members of C: q, its blocks and the bound's hypotheses (one ordering each: the exact arms
        # are permutation-equivariant); the isotonic arm also meets the adversarial orderings
        blocks = block_members(s_max, t_max, BLOCK_LEVELS, _block_sizes(config.minimax_dim))
        bounds = [
            multiple_testing_bound(
                n, q_grid=Q_GRID, eps_grid=EPS_RATIOS, k_grid=K_GRID, s_max=s_max, t_max=t_max
            )
            for n in ns
        ]
        members: dict[str, np.ndarray] = {"q": q}
        members.update({f"block_r{r:.3g}_k{k}": block(r, k) for r, k in blocks})
        members.update(
            {
                f"test_n{n}": bound_hypotheses(lb.q, lb.eps, lb.k)
                for n, lb in zip(ns, bounds, strict=True)
                if lb.k
            }
        )
        excess = max(class_excess(p, s_max, t_max) for p in members.values())
        exact_arms = (OURS, *COMPETITORS[:-1], ZERO)
        risk = {
            arm: np.array([[_exact(arm, name, p, n) for n in ns] for name, p in members.items()])
            for arm in exact_arms
        }  # (members, ns)
        ctx.progress("exact risks over the class", 1, 2)
        # the isotonic fit: Monte Carlo on q in three orderings and on the EME's worst block per n,
        # sorted and reversed behind zeros; the worst member is chosen on these draws and re-measured
        iso = make_estimator("isotonic")
        gen = np.random.default_rng([seed, 2])
        perm = np.random.default_rng([seed, 1])
        names = list(members)
        wc_iso, gain_iso = np.zeros(len(ns)), np.zeros(len(ns))
        for ni, n in enumerate(ns):
            block_rows = [i for i, name in enumerate(names) if name.startswith("block_")]
            worst_block = names[max(block_rows, key=lambda i: risk[OURS][i, ni])]
            cand = {"q": q, "q_reversed": q[::-1].copy()}
            cand.update({f"q_perm{i}": q[perm.permutation(q.size)] for i in range(config.permutations)})
            wb = members[worst_block]
            k = int(np.count_nonzero(wb))
            cand[worst_block] = wb
            cand[worst_block + "_reversed"] = block(float(wb.max()), k, pad=k, increasing=True) if k else wb
            means = {
                name: sup_errors([iso], p, n, reps=config.minimax_reps, rng=gen)[0, 0].mean()
                for name, p in cand.items()
            }
            worst = max(means, key=lambda name: means[name])
            wc_iso[ni] = sup_errors([iso], cand[worst], n, reps=config.minimax_reps, rng=gen)[0, 0].mean()
            base_of = {name: ("q" if name.startswith("q") else worst_block) for name in cand}
            eme_on = {name: _exact(OURS, base_of[name], members[base_of[name]], n) for name in cand}
            gain_iso[ni] = max(1.0 - means[name] / eme_on[name] for name in cand)
            excess = max(excess, *(class_excess(p, s_max, t_max) for p in cand.values()))
            ctx.progress("isotonic over the class", ni + 1, len(ns))
        wc = {arm: risk[arm].max(axis=0) for arm in exact_arms}
        wc["isotonic"] = wc_iso
        wc[BEST] = np.min([wc[a] for a in COMPETITORS], axis=0)
        lbs = np.array([lb.value for lb in bounds])
        wc[LOWER] = lbs
        gain = {a: (1.0 - risk[a] / risk[OURS]).max() for a in COMPETITORS[:-1]}
        gain["isotonic"] = float(gain_iso.max())
        eme_slope = _slope(ns, wc[OURS])
        for arm, r in wc.items():
            m = metrics[arm]
            items[arm] = {"minimax/log_wc": np.log(np.maximum(r, 1e-300))}
            for ni, n in enumerate(ns):
                m[f"minimax/wc_n{n}"] = float(r[ni])
            m["minimax/wc_slope"] = _slope(ns, r)
            if arm in (*COMPETITORS, BEST):
                m["minimax/wc_slope_gap"] = m["minimax/wc_slope"] - eme_slope
        for arm in COMPETITORS:
            metrics[arm]["minimax/max_member_gain"] = float(gain[arm])
        metrics[BEST]["minimax/max_member_gain"] = float(max(gain.values()))
        hyp_ratio = [
            exact_sup_risk(EmpiricalMean(), bound_hypotheses(lb.q, lb.eps, lb.k), n) / lb.value
            for n, lb in zip(ns, bounds, strict=True)
            if lb.value > 0
        ]
        ratio = wc[OURS] / np.where(lbs > 0, lbs, np.nan)
        m = metrics[OURS]
        m["minimax/lb_min"] = float(lbs.min())
        m["minimax/lb_spread"] = float(np.nanmax(ratio) / np.nanmin(ratio))
        m["minimax/lb_ratio_slope"] = _slope(ns, ratio)
        m["minimax/lb_ratio_slope_abs"] = abs(m["minimax/lb_ratio_slope"])
        m["minimax/eme_over_lb_hyp_min"] = float(min(hyp_ratio, default=math.nan))
        m["minimax/class_excess"] = float(excess)
        m["minimax/members"] = float(len(members))
        m["minimax/over_zero_at_nmax"] = float(wc[OURS][-1] / wc[ZERO][-1])
        series["minimax"] = {"n": list(ns), "wc": wc, "blocks": len(blocks)}

    # -- pathology --------------------------------------------------------------------------------

    def _pathology(
        self,
        config: LGCConfig,
        seed: int,
        metrics: dict[str, dict[str, float]],
        series: dict[str, Any],
        ctx: RunContext,
    ) -> None:
        ns, dims = config.sample_sizes, config.pathology_dims
        arms = (OURS, HYBRID)
        ests = [make_estimator(a) for a in arms]
        gen = np.random.default_rng([seed, 3])
        out: dict[str, dict[str, np.ndarray]] = {}
        for fi, (key, p) in enumerate(
            (("constant", constant(dims[-1], config.constant_level)), ("poly", polynomial(dims[-1], 1.0)))
        ):
            risk = np.zeros((len(arms), len(dims), len(ns)))
            for ni, n in enumerate(ns):
                errs = sup_errors(ests, p, n, reps=config.pathology_reps, rng=gen, dims=dims)
                risk[:, :, ni] = errs.mean(axis=2)
            out[key] = {a: risk[i] for i, a in enumerate(arms)}
            ctx.progress("pooled hybrid vs EME", fi + 1, 2)
        hyb, eme = out["constant"][HYBRID], out["constant"][OURS]
        m = metrics[HYBRID]
        m["path/constant/shrink"] = float((hyb[-1] / hyb[0]).max())
        m["path/constant/vs_eme"] = float((hyb[-1] / eme[-1]).max())
        m["path/poly/match"] = float(np.abs(out["poly"][HYBRID] / out["poly"][OURS] - 1.0).max())
        for key in out:
            for a in arms:
                for di, D in enumerate(dims):
                    for ni, n in enumerate(ns):
                        metrics[a][f"path/{key}/D{D}_n{n}"] = float(out[key][a][di, ni])
        metrics[OURS]["path/constant/rel_rise"] = float(((eme[-1] - eme[0]) / eme[0]).min())
        series["path"] = out

    # -- figures ------------------------------------------------------------------------------------

    def make_figures(self, config: LGCConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import arm_color, new_figure

        ns = np.asarray(config.minimax_sizes, dtype=float)
        fig, axes = new_figure(ncols=3, width=4.0, height=3.2)
        ax = axes[0]
        for arm in (OURS, *COMPETITORS, ZERO):
            per_seed = np.array([np.asarray(o.series["minimax"]["wc"][arm], dtype=float) for o in outcomes])
            color = "0.55" if arm == ZERO else arm_color(arm, OURS, CLAIM.baselines)
            ls = "--" if arm == ZERO else "-"
            ax.plot(ns, per_seed.mean(axis=0), marker="o", ls=ls, color=color, label=arm)
            ax.fill_between(ns, per_seed.min(axis=0), per_seed.max(axis=0), color=color, alpha=0.15, lw=0)
        lb = np.asarray(outcomes[0].series["minimax"]["wc"][LOWER], dtype=float)
        ax.plot(ns, lb, color="0.3", ls=":", marker="x", label="testing lower bound")
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="sample size n",
            ylabel="worst-case E sup-error",
            title=f"minimax over C(S(q), T(q)), D={config.minimax_dim:g}",
        )
        ax.legend(fontsize=7)
        ax = axes[1]
        dims = np.asarray(config.dims, dtype=float)
        dim = outcomes[0].series["dim"]
        for i, key in enumerate(dim):
            r = np.asarray(dim[key], dtype=float)
            color = f"C{i}"
            ax.plot(dims, r[:, 0], marker="o", color=color, label=f"{key}, n={config.sample_sizes[0]}")
            ax.plot(dims, r[:, -1], marker="s", ls="--", color=color)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="truncation dimension D",
            ylabel="EME risk (exact)",
            title=f"EME risk vs D (solid n={config.sample_sizes[0]}, dashed n={config.sample_sizes[-1]})",
        )
        ax.legend(fontsize=7)
        ax = axes[2]
        pdims = np.asarray(config.pathology_dims, dtype=float)
        for key, ls in (("constant", "-"), ("poly", "--")):
            for arm in (OURS, HYBRID):
                r = np.array([np.asarray(o.series["path"][key][arm], dtype=float)[:, 0] for o in outcomes])
                ax.plot(
                    pdims,
                    r.mean(axis=0),
                    ls=ls,
                    marker="o",
                    color=arm_color(arm, OURS, CLAIM.baselines),
                    label=f"{arm}, {key}",
                )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="truncation dimension D",
            ylabel="E sup-error (MC)",
            title=f"pathology: pooled tail, n={config.sample_sizes[0]}",
        )
        ax.legend(fontsize=7)
        ctx.save_figure(
            fig,
            "lgc_risk",
            "Left: worst-case sup-norm risk over members of the class C(S(q), T(q)) of q_j = 1/2 (j+1)^-1 "
            "(q, its orderings, constant blocks, the bound's hypotheses) against n (log-log; band = range "
            "over seeds; dotted: the testing lower bound over the same class). Middle: exact EME risk "
            "against the truncation dimension D per sequence. Right: EME "
            "and pooled-tail hybrid against D on the constant and the 1/2 (j+1)^-1 sequences.",
        )


CHECK = LocalGlivenkoCantelliCheck()
