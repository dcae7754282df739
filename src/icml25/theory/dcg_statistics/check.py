"""Claim check for *On the Statistical Mechanisms of Distributional Compositional Generalization*
(Fu & Zheng, ICML 2025, https://openreview.net/forum?id=37NsgZkyWH).

The paper's full text was not available; both claims are tested through our operational
definitions (:mod:`.measures`), in the style of the paper. A simulation is evidence about these
definitions, never a proof of the paper's theorems.

Question 1 (invariant measure). On a K x K concept grid with m = 2 labels, for every seen fraction
rho and samples per combination n, each learner is trained on ``nfl_labelings`` random labelings of
the seen combinations and scored on novel inputs against every extension of those labels (all m^|U|
of them, or a balanced design). Measured: the family average I, its deviation from 1/m, how much
learners differ rule by rule, and the grid measure I_grid = rho acc_seen + (1 - rho)/m.

Question 2 (compatibility and sensitivity). For each structured family (additive mod 2 and 3,
threshold-additive, multiplicative mod 3) and each learner: Comp and Sens are measured on a
*calibration* draw (one split at rho_structured, ``rules`` rules, n = n_inf per combination);
novel-combination accuracy at n_max and the data/composition error decomposition over n are measured
on an independent *evaluation* draw (another split, fresh rules). The predictor Comp * 1{Sens > tau}
is compared, by Spearman correlation over the (learner, family) pairs, with the novel accuracy; the
in-distribution (seen-combination) accuracy is the baseline predictor.

Arms: ``comp_x_sens`` (ours: the predictor Comp * 1{Sens > tau}), ``seen_acc`` (baseline predictor:
in-distribution accuracy at n_max), ``comp_only`` and ``sens_only`` (the two factors alone, reported,
no criterion), ``pooled`` (statistics pooled over learners), and one arm per learner (logistic,
factorized, mlp, knn, concept_rule, lookup, majority) with its own measurements.

Criteria (declared before any small-scale run; thresholds are config fields):
    invariant_<learner>     max over seeds and cells of |I - 1/m| <= invariant_tol, every learner
    rules_differ            mean over rules and learner pairs of |acc_A(R) - acc_B(R)| >= min_rule_gap
                            (learners differ rule by rule, so their averages coincide by trade-off)
    data_raises_grid_rho    min over sound learners of the I_grid gain from rho_min to rho_max > 0
    data_raises_grid_n      min over sound learners of the I_grid gain from n_min to n_max > 0
                            (sound: seen accuracy at n_max >= 1/m + sound_margin on the NFL task)
    comp_sens_predicts      Spearman(novel acc, Comp * 1{Sens > tau}) >= min_spearman (headline)
    beats_seen_acc          that Spearman minus Spearman(novel acc, seen acc) >= min_spearman_margin
    insensitive_no_compose  over (learner, family) pairs with Sens <= tau: max novel acc - 1/m <= max
    data_term_shrinks       mean |data term| at n_max / mean |data term| at n_min <= data_ratio_max
    composition_stays       over incompatible pairs (Comp < comp_high): mean gain of novel accuracy
                            from the second-largest n to n_max <= late_gain_max
Equal effort: no learner is tuned (library defaults; the two networks share one architecture
width, step budget and learning rate); every learner sees the same inputs, splits and rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields, check_in_range

from .grid import ConceptGrid, make_split
from .learners import LEARNERS
from .measures import (
    compatibility,
    evaluate_on_rules,
    grid_measure,
    invariant_measure,
    sensitivity,
)
from .rules import NFLSymmetricFamily, RuleFamily

SMALL_FULL = ("small", "full")
ALL_LEARNERS = ("logistic", "factorized", "mlp", "knn", "concept_rule", "lookup", "majority")
PREDICTORS = ("comp_x_sens", "seen_acc", "comp_only", "sens_only")


@dataclass(frozen=True)
class DCGConfig:
    """One configuration of the check (small preset = the defaults)."""

    k: int = 5
    dim: int = 8
    noise: float = 0.3
    learners: tuple[str, ...] = ALL_LEARNERS
    # question 1: the invariant measure
    nfl_m: int = 2
    rhos: tuple[float, ...] = (0.4, 0.6, 0.8)
    ns: tuple[int, ...] = (5, 20, 100, 1000)
    nfl_labelings: int = 2
    max_extensions: int = 1024
    # question 2: compatibility and sensitivity
    families: tuple[str, ...] = (
        "additive_mod:2",
        "additive_mod:3",
        "threshold_additive",
        "multiplicative_mod:3",
    )
    rho_structured: float = 0.6
    rules: int = 3
    n_inf: int = 1500
    n_test: int = 40
    # learners (shared by all: no per-learner tuning)
    hidden: int = 32
    steps: int = 200
    lr: float = 1e-2
    batch_size: int = 256
    knn_k: int = 5
    # thresholds, declared before the first small run
    invariant_tol: float = 0.01
    min_rule_gap: float = 0.05
    sound_margin: float = 0.25
    min_spearman: float = 0.6
    min_spearman_margin: float = 0.1
    sens_min: float = 0.1
    zero_sens_excess_max: float = 0.1
    data_ratio_max: float = 0.5
    comp_high: float = 0.8
    late_gain_max: float = 0.03

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "k",
                "dim",
                "nfl_m",
                "nfl_labelings",
                "max_extensions",
                "rules",
                "n_inf",
                "n_test",
                "hidden",
                "steps",
                "batch_size",
                "knn_k",
            ),
            non_negative=("noise", "invariant_tol", "min_rule_gap", "sens_min", "zero_sens_excess_max"),
            positive=("lr", "data_ratio_max"),
        )
        if self.k < 2 or self.nfl_m < 2:
            raise ValueError(f"DCGConfig.k and nfl_m must be >= 2, got {self.k}, {self.nfl_m}")
        if self.rules < 2:
            raise ValueError(f"DCGConfig.rules must be >= 2 (sensitivity compares rules), got {self.rules}")
        unknown = [name for name in self.learners if name not in LEARNERS]
        if unknown or len(self.learners) < 2 or len(set(self.learners)) != len(self.learners):
            raise ValueError(
                f"DCGConfig.learners must be >= 2 distinct names of {sorted(LEARNERS)}, got {self.learners}"
            )
        if not self.rhos or not self.ns or not self.families:
            raise ValueError("DCGConfig.rhos, ns and families must be non-empty")
        for rho in (*self.rhos, self.rho_structured):
            check_in_range("DCGConfig.rhos / rho_structured", rho, 0.0, 1.0, low_open=True, high_open=True)
        if sorted(set(self.ns)) != list(self.ns) or min(self.ns) < 1:
            raise ValueError(f"DCGConfig.ns must be strictly increasing positive integers, got {self.ns}")
        if self.n_inf <= max(self.ns):
            raise ValueError(f"DCGConfig.n_inf must exceed max(ns) = {max(self.ns)}, got {self.n_inf}")
        for spec in self.families:
            RuleFamily.from_spec(spec)
        for name in ("sound_margin", "comp_high", "late_gain_max"):
            check_in_range(f"DCGConfig.{name}", getattr(self, name), 0.0, 1.0)
        check_in_range("DCGConfig.min_spearman", self.min_spearman, -1.0, 1.0)
        check_in_range("DCGConfig.min_spearman_margin", self.min_spearman_margin, -2.0, 2.0)


def _criteria(config: DCGConfig) -> tuple[Criterion, ...]:
    c = config
    out = [
        Criterion(
            f"invariant_{name}",
            arm=name,
            metric="nfl_dev",
            op="<=",
            threshold=c.invariant_tol,
            reduce="max",
            scales=("tiny", "small", "full"),
            description=f"{name}: family-averaged novel accuracy on NFL-symmetric rules is 1/m within "
            f"{c.invariant_tol:g} in every cell (rho, n) and seed",
        )
        for name in c.learners
    ]
    out += [
        Criterion(
            "rules_differ",
            arm="pooled",
            metric="per_rule_gap",
            op=">=",
            threshold=c.min_rule_gap,
            scales=SMALL_FULL,
            description="learners differ rule by rule (mean |acc_A(R) - acc_B(R)|), so equal averages "
            "are a trade-off, not identical behaviour",
        ),
        Criterion(
            "rules_differ_tiny",
            arm="pooled",
            metric="per_rule_gap",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="smoke: learners differ on some rule",
        ),
        Criterion(
            "data_raises_grid_rho",
            arm="pooled",
            metric="grid_gain_rho_min",
            op=">",
            threshold=0.0,
            scales=SMALL_FULL,
            description="a larger seen fraction raises I_grid for every sound learner",
        ),
        Criterion(
            "data_raises_grid_n",
            arm="pooled",
            metric="grid_gain_n_min",
            op=">",
            threshold=0.0,
            scales=SMALL_FULL,
            description="more samples per combination raise I_grid for every sound learner",
        ),
        Criterion(
            "comp_sens_predicts",
            arm="comp_x_sens",
            metric="spearman_novel",
            op=">=",
            threshold=c.min_spearman,
            scales=SMALL_FULL,
            description="Comp * 1{Sens > tau} from the calibration draw ranks (learner, family) pairs by "
            "their novel accuracy on a fresh draw (Spearman)",
        ),
        Criterion(
            "beats_seen_acc",
            arm="comp_x_sens",
            metric="spearman_margin",
            op=">=",
            threshold=c.min_spearman_margin,
            scales=SMALL_FULL,
            description="compatibility x sensitivity predicts novel accuracy better than "
            "in-distribution accuracy does",
        ),
        Criterion(
            "insensitive_no_compose",
            arm="pooled",
            metric="zero_sens_excess",
            op="<=",
            threshold=c.zero_sens_excess_max,
            reduce="max",
            scales=SMALL_FULL,
            description="no (learner, family) pair with Sens <= tau beats chance on novel combinations "
            f"by more than {c.zero_sens_excess_max:g}",
        ),
        Criterion(
            "data_term_shrinks",
            arm="pooled",
            metric="data_term_ratio",
            op="<=",
            threshold=c.data_ratio_max,
            scales=SMALL_FULL,
            description="the insufficient-data term shrinks from n_min to n_max",
        ),
        Criterion(
            "composition_stays",
            arm="pooled",
            metric="incompatible_late_gain",
            op="<=",
            threshold=c.late_gain_max,
            scales=SMALL_FULL,
            description="for incompatible pairs more data no longer helps (the composition term stays)",
        ),
    ]
    return tuple(out)


def _claim(config: DCGConfig) -> Claim:
    return Claim(
        statement=(
            "In simulated DCG problems (our operationalisation of the paper's definitions): averaged "
            "over an NFL-symmetric rule family every learner's novel-combination accuracy is 1/|Y| "
            "while only data raises the grid measure; and once the insufficient-data term is "
            "separated, compatibility x sensitivity with the rule predicts which learners compose. "
            "Simulation evidence, not a proof."
        ),
        source="Abstract and lay summary (Q1: invariant measure; Q2: compatibility and sensitivity)",
        ours="comp_x_sens",
        baselines=("seen_acc", "comp_only", "sens_only", "pooled", *config.learners),
        criteria=_criteria(config),
        headline="comp_sens_predicts",
        headline_baseline="seen_acc.spearman_novel",
        min_seeds=3,
        setup_notes=(
            "The paper's full text, definitions and any experiments were not available; everything is "
            "an operationalisation in the style of the paper and the authors' earlier framework "
            f"(arXiv 2405.11743). Grid {config.k} x {config.k}, Gaussian concept embeddings d = "
            f"{config.dim}, noise {config.noise}; NFL part m = {config.nfl_m}, rho in {config.rhos}, n in "
            f"{config.ns}; structured families {config.families}, rho = {config.rho_structured}, "
            f"{config.rules} rules per family, n = infinity approximated by n = {config.n_inf}. Neural "
            f"learners: Adam, {config.steps} steps, minibatches of {config.batch_size}, width "
            f"{config.hidden}, lr {config.lr}, no tuning for any learner."
        ),
    )


CLAIM = _claim(DCGConfig())


def _spearman(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.size < 3 or np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return float("nan")
    return float(spearmanr(xa, ya).statistic)


def _learner_kwargs(config: DCGConfig, name: str) -> dict[str, Any]:
    if name in ("factorized", "mlp"):
        return {
            "hidden": config.hidden,
            "steps": config.steps,
            "lr": config.lr,
            "batch_size": config.batch_size,
        }
    if name == "knn":
        return {"k": config.knn_k}
    return {}


class DCGStatisticsCheck(ClaimCheck[DCGConfig]):
    slug = "dcg_statistics"
    claim = CLAIM
    presets = {
        "tiny": DCGConfig(
            k=3,
            learners=("logistic", "knn", "concept_rule", "lookup", "majority"),
            rhos=(6 / 9,),
            ns=(10, 50),
            nfl_labelings=4,
            families=("additive_mod:2",),
            rho_structured=6 / 9,
            rules=3,
            n_inf=100,
            n_test=20,
        ),
        "small": DCGConfig(),
        "full": DCGConfig(
            k=8,
            rhos=(0.4, 0.6, 0.8),
            ns=(5, 20, 100, 1000, 5000),
            nfl_labelings=8,
            max_extensions=4096,
            families=(
                "additive_mod:2",
                "additive_mod:3",
                "additive_mod:5",
                "threshold_additive",
                "multiplicative_mod:3",
                "multiplicative_mod:5",
            ),
            rules=8,
            n_inf=20000,
            n_test=100,
            hidden=64,
            steps=1000,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def claim_for(self, config: DCGConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: DCGConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        import torch
        from threadpoolctl import threadpool_limits

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tiny models: one thread is fastest, and robust to shared cores
        try:
            with threadpool_limits(limits=1):
                return self._run_seed(config, seed, ctx)
        finally:
            torch.set_num_threads(threads)

    def _run_seed(self, config: DCGConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        c = config
        names = list(c.learners)
        grid = ConceptGrid(k_a=c.k, k_b=c.k, dim=c.dim, noise=c.noise, seed=seed)
        metrics: dict[str, dict[str, float]] = {a: {} for a in (*PREDICTORS, "pooled", *names)}
        notes: list[str] = []

        # ---- question 1: invariant measure and grid measure on NFL-symmetric families -------------
        rng = np.random.default_rng([seed, 1])
        m = c.nfl_m
        inv: dict[str, list[float]] = {n: [] for n in names}
        gaps: list[float] = []
        i_grid: dict[str, dict[tuple[int, int], float]] = {n: {} for n in names}
        seen_at_nmax: dict[str, list[float]] = {n: [] for n in names}
        cells = len(c.rhos) * len(c.ns)
        for ri, rho in enumerate(c.rhos):
            # one split, test set and set of seen labelings per rho, shared by every n (paired gains)
            split = make_split(c.k, c.k, rho, rng=rng)
            test_s = grid.sample(split.seen_combos, c.n_test, rng)
            test_u = grid.sample(split.unseen_combos, c.n_test, rng)
            labelings = RuleFamily.lookup(m).sample_many(c.nfl_labelings, c.k, c.k, rng)
            for ni, n in enumerate(c.ns):
                ctx.progress("invariant measure", ri * len(c.ns) + ni, cells)
                train = grid.sample(split.seen_combos, n, rng)
                per_rule: dict[str, list[np.ndarray]] = {name: [] for name in names}
                for name in names:
                    ev = evaluate_on_rules(
                        name, train, labelings, m, test_s, test_u, seed=seed, **_learner_kwargs(c, name)
                    )
                    i_grid[name][(ri, ni)] = grid_measure(float(ev.acc_seen.mean()), split.seen_frac, m)
                    if ni == len(c.ns) - 1:
                        seen_at_nmax[name].append(float(ev.acc_seen.mean()))
                    for li, labeling in enumerate(labelings):
                        family = NFLSymmetricFamily(labeling, split, m)
                        ext_rng = np.random.default_rng(
                            [seed, ri, ni, li]
                        )  # same extensions for all learners
                        im = invariant_measure(
                            ev.pred_unseen[li], test_u.combos, family, max_count=c.max_extensions, rng=ext_rng
                        )
                        inv[name].append(im.value)
                        per_rule[name].append(im.per_rule)
                for a, b in itertools.combinations(names, 2):
                    gaps.extend(
                        float(np.abs(x - y).mean()) for x, y in zip(per_rule[a], per_rule[b], strict=True)
                    )
        chance = 1.0 / m
        sound = [n for n in names if np.mean(seen_at_nmax[n]) >= chance + c.sound_margin]
        gain_rho: dict[str, float] = {}
        gain_n: dict[str, float] = {}
        last_r, last_n = len(c.rhos) - 1, len(c.ns) - 1
        for name in names:
            g = i_grid[name]
            gain_rho[name] = float(np.mean([g[(last_r, j)] - g[(0, j)] for j in range(len(c.ns))]))
            gain_n[name] = float(np.mean([g[(i, last_n)] - g[(i, 0)] for i in range(len(c.rhos))]))
            lm = metrics[name]
            lm["nfl_acc"] = float(np.mean(inv[name]))
            lm["nfl_dev"] = float(np.max(np.abs(np.asarray(inv[name]) - chance)))
            lm["nfl_seen_acc_nmax"] = float(np.mean(seen_at_nmax[name]))
            lm["grid_gain_rho"] = gain_rho[name]
            lm["grid_gain_n"] = gain_n[name]
        pooled = metrics["pooled"]
        pooled["per_rule_gap"] = float(np.mean(gaps))
        pooled["n_sound_learners"] = float(len(sound))
        pooled["grid_gain_rho_min"] = min((gain_rho[n] for n in sound), default=float("nan"))
        pooled["grid_gain_n_min"] = min((gain_n[n] for n in sound), default=float("nan"))
        if not sound:
            notes.append("no learner fits the NFL seen labels well enough to count as sound")

        # ---- question 2: compatibility, sensitivity, error decomposition --------------------------
        rng = np.random.default_rng([seed, 2])
        split_c = make_split(c.k, c.k, c.rho_structured, rng=rng)
        train_c = grid.sample(split_c.seen_combos, c.n_inf, rng)
        test_cs = grid.sample(split_c.seen_combos, c.n_test, rng)
        test_cu = grid.sample(split_c.unseen_combos, c.n_test, rng)
        split_e = make_split(c.k, c.k, c.rho_structured, rng=rng)
        test_es = grid.sample(split_e.seen_combos, c.n_test, rng)
        test_eu = grid.sample(split_e.unseen_combos, c.n_test, rng)
        eval_ns = (*c.ns, c.n_inf)
        train_e = {n: grid.sample(split_e.seen_combos, n, rng) for n in eval_ns}
        fams = [RuleFamily.from_spec(s) for s in c.families]
        tables_c = {f.name: f.sample_many(c.rules, c.k, c.k, rng) for f in fams}
        tables_e = {f.name: f.sample_many(c.rules, c.k, c.k, rng) for f in fams}

        points: list[dict[str, Any]] = []
        total = len(fams) * len(names)
        for done, (fam, name) in enumerate(itertools.product(fams, names)):
            ctx.progress("compatibility and sensitivity", done, total)
            kw = _learner_kwargs(c, name)
            cal = evaluate_on_rules(
                name, train_c, tables_c[fam.name], fam.m, test_cs, test_cu, seed=seed, **kw
            )
            comp = compatibility(cal.acc_unseen)
            sens = sensitivity(cal.pred_unseen, tables_c[fam.name], split_c.seen)
            sens = 0.0 if not np.isfinite(sens) else sens
            acc_u: dict[int, float] = {}
            acc_s: dict[int, float] = {}
            for n in eval_ns:
                ev = evaluate_on_rules(
                    name, train_e[n], tables_e[fam.name], fam.m, test_es, test_eu, seed=seed, **kw
                )
                acc_u[n], acc_s[n] = float(ev.acc_unseen.mean()), float(ev.acc_seen.mean())
            n_max = c.ns[-1]
            point = {
                "learner": name,
                "family": fam.name,
                "m": fam.m,
                "comp": comp,
                "sens": sens,
                "novel_acc": acc_u[n_max],
                "seen_acc": acc_s[n_max],
                "acc_unseen_by_n": [acc_u[n] for n in eval_ns],
            }
            points.append(point)
            lm = metrics[name]
            lm[f"{fam.name}/comp"] = comp
            lm[f"{fam.name}/sens"] = sens
            lm[f"{fam.name}/novel_acc"] = acc_u[n_max]
            lm[f"{fam.name}/composition_term"] = 1.0 - acc_u[c.n_inf]

        novel = [p["novel_acc"] for p in points]
        predictors = {
            "comp_x_sens": [p["comp"] * float(p["sens"] > c.sens_min) for p in points],
            "seen_acc": [p["seen_acc"] for p in points],
            "comp_only": [p["comp"] for p in points],
            "sens_only": [p["sens"] for p in points],
        }
        for arm, values in predictors.items():
            metrics[arm]["spearman_novel"] = _spearman(values, novel)
        metrics["comp_x_sens"]["spearman_margin"] = (
            metrics["comp_x_sens"]["spearman_novel"] - metrics["seen_acc"]["spearman_novel"]
        )
        insensitive = [p["novel_acc"] - 1.0 / p["m"] for p in points if p["sens"] <= c.sens_min]
        pooled["zero_sens_excess"] = max(insensitive, default=0.0)
        pooled["n_insensitive_pairs"] = float(len(insensitive))
        if not insensitive:
            notes.append("no (learner, family) pair had Sens <= tau: insensitive_no_compose holds vacuously")
        inf_acc = [p["acc_unseen_by_n"][-1] for p in points]
        d_min = [abs(a - p["acc_unseen_by_n"][0]) for a, p in zip(inf_acc, points, strict=True)]
        d_max = [abs(a - p["acc_unseen_by_n"][len(c.ns) - 1]) for a, p in zip(inf_acc, points, strict=True)]
        pooled["data_term_nmin"] = float(np.mean(d_min))
        pooled["data_term_nmax"] = float(np.mean(d_max))
        pooled["data_term_ratio"] = float(np.mean(d_max) / np.mean(d_min)) if np.mean(d_min) > 0 else 0.0
        prev = max(len(c.ns) - 2, 0)
        incompatible = [p for p in points if p["comp"] < c.comp_high]
        late = [p["acc_unseen_by_n"][len(c.ns) - 1] - p["acc_unseen_by_n"][prev] for p in incompatible]
        pooled["incompatible_late_gain"] = float(np.mean(late)) if late else 0.0
        pooled["n_incompatible_pairs"] = float(len(incompatible))
        if not late:
            notes.append("no incompatible (learner, family) pair: composition_stays holds vacuously")

        series = {
            "points": points,
            "eval_ns": list(eval_ns),
            "nfl": {
                name: [[i_grid[name][(i, j)] for j in range(len(c.ns))] for i in range(len(c.rhos))]
                for name in names
            },
            "nfl_invariant": {name: inv[name] for name in names},
        }
        return SeedOutcome(metrics=metrics, series=series, notes=tuple(notes))

    def make_figures(self, config: DCGConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import PALETTE, new_figure

        names = list(config.learners)
        colors = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
        markers = dict(zip(config.families, "osD^v<>p", strict=False))

        fig, axes = new_figure(ncols=2, width=4.6)
        for i, name in enumerate(names):
            values = np.concatenate([np.asarray(o.series["nfl_invariant"][name]) for o in outcomes])
            axes[0].scatter(
                np.full(values.size, i) + np.linspace(-0.25, 0.25, values.size),
                values,
                s=8,
                color=colors[name],
            )
        axes[0].axhline(1.0 / config.nfl_m, color="black", linewidth=1, linestyle="--", label="1/m")
        axes[0].set_xticks(range(len(names)), names, rotation=45, ha="right")
        axes[0].set(
            ylabel="family-averaged novel accuracy I", title="Invariant measure (NFL-symmetric rules)"
        )
        axes[0].set_ylim(0, 1)
        axes[0].legend()
        styles = ["-", "--", ":", "-."]
        for name in names:
            grid_vals = np.mean([np.asarray(o.series["nfl"][name]) for o in outcomes], axis=0)
            for i in range(len(config.rhos)):
                axes[1].plot(
                    config.ns,
                    grid_vals[i],
                    color=colors[name],
                    linestyle=styles[i % 4],
                    label=name if i == 0 else None,
                )
        axes[1].set(
            xscale="log",
            xlabel="samples per seen combination n",
            ylabel="I_grid",
            title="Grid measure (line style: rho " + ", ".join(f"{r:.2f}" for r in config.rhos) + ")",
        )
        axes[1].legend(fontsize=7)
        ctx.save_figure(
            fig,
            "invariant_measure",
            "Left: family-averaged novel-combination accuracy I of every learner over NFL-symmetric "
            "rule families (one dot per seed, cell and seen labeling); all lie on 1/m. Right: the grid "
            "measure I_grid = rho acc_seen + (1 - rho)/m against n, one line style per seen fraction rho.",
        )

        fig, axes = new_figure(ncols=2, width=4.6)
        for o in outcomes:
            for p in o.series["points"]:
                x = p["comp"] * float(p["sens"] > config.sens_min)
                kw = dict(color=colors[p["learner"]], marker=markers.get(p["family"], "o"), s=18, alpha=0.8)
                axes[0].scatter(x, p["novel_acc"], **kw)
                axes[1].scatter(p["seen_acc"], p["novel_acc"], **kw)
        for name in names:
            axes[0].scatter([], [], color=colors[name], label=name, s=18)
        for fam, mk in markers.items():
            axes[0].scatter([], [], color="gray", marker=mk, label=fam, s=18)
        axes[0].set(
            xlabel="Comp x 1{Sens > tau} (calibration draw)",
            ylabel=f"novel accuracy at n = {config.ns[-1]}",
            title="Compatibility x sensitivity",
        )
        axes[1].set(
            xlabel=f"seen-combination accuracy at n = {config.ns[-1]}",
            ylabel="novel accuracy",
            title="In-distribution accuracy (baseline predictor)",
        )
        axes[0].legend(fontsize=6, ncols=2)
        ctx.save_figure(
            fig,
            "composition_scatter",
            "Novel-combination accuracy on a fresh split and fresh rules against Comp * 1{Sens > tau} "
            "measured on a calibration draw (left) and against seen-combination accuracy (right); colour "
            "= learner, marker = rule family, all seeds.",
        )

        fams = list(config.families)
        fig, axes = new_figure(ncols=len(fams), width=3.4)
        axes = np.atleast_1d(axes)
        ns = list(config.ns)
        for ax, fam in zip(axes, fams, strict=False):
            for name in names:
                rows = [
                    p
                    for o in outcomes
                    for p in o.series["points"]
                    if p["learner"] == name and p["family"] == fam
                ]
                acc = np.mean([r["acc_unseen_by_n"] for r in rows], axis=0)
                ax.plot(ns, 1 - acc[:-1], color=colors[name], label=name, marker="o", markersize=3)
                ax.axhline(1 - acc[-1], color=colors[name], linestyle=":", linewidth=1)
            ax.set(xscale="log", xlabel="n", ylabel="novel error E_U(n)", title=fam)
        axes[0].legend(fontsize=6)
        ctx.save_figure(
            fig,
            "error_decomposition",
            "Novel-combination error against n per learner and rule family (mean over seeds); dotted: "
            f"the composition term E_U(n = {config.n_inf}); the gap to it is the insufficient-data term.",
        )


CHECK = DCGStatisticsCheck()
