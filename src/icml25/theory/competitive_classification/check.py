"""Claim check for *A Market for Accuracy: Classification under Competition* (Einav & Rosenfeld; ICML 2025;
https://arxiv.org/abs/2502.18052).

Providers with logistic-regression models compete for users who pick a provider that is correct for
them. Arms (same pools, same users, same hyperparameter sweep ``Cs`` for every arm, chosen on a
validation part of each provider's own pool):

    br              competition-aware best response (weighted cross-entropy proxy), "ours"
    erm             market-oblivious accuracy maximisation (the paper's baseline)
    br_surrogate    best response without information sharing: competitors copied by surrogates fitted
                    to their predictions on public query users (reported, no criterion)
    br_soft_share   best response through the smooth share proxy (reported, no criterion)

Experiments over every (dataset, K, rule) cell, datasets = rings + noisy breast_cancer / digits
(even vs odd) / wine, K in ``ks``, rules ``uniform`` and ``abstain``:

    E1 entrant   K - 1 ERM incumbents, then one entrant of each arm: its market share and accuracy.
                 K = 2 under ``uniform`` is a control where best response equals ERM exactly.
    E2 dynamics  all-br market (sequential entry, then up to ``max_rounds`` rounds of sequential best
                 response) against the all-erm market: rounds to equilibrium, welfare, HHI.
    E3 timing    K = 3: average final share by entry position over all 6 entry orders, and the share
                 of a frozen first entrant (never updates) against the same provider when it updates.

Criteria (declared before any small-scale number was seen; thresholds are config fields):
    * e1/cells_gain: fraction of cells (K >= 3) where the br entrant's share exceeds the erm
      entrant's by >= ``e1_margin`` (0.03), mean over seeds >= ``e1_cells_min`` (0.5: "most cells").
    * e1/gain_every_seed: the br entrant's share gain averaged over cells is > 0 in every seed.
    * k2/equal: K = 2, uniform rule: |share gain| <= 1e-9 in every cell and seed (sanity control).
    * e2/fast: fraction of all-br runs that reach equilibrium within ``fast_rounds`` (5) rounds,
      mean over seeds >= ``conv_frac_min`` (0.8).
    * e2/welfare: mean welfare of the all-br market > that of the all-erm market.
    * e3/frozen_loses: frozen-minus-updating share of the first entrant < ``frozen_gap_max`` (0).
    * e3/order_matters: spread (max - min over entry positions) of the average final share
      >= ``order_spread_min`` (0.01).
Tiny runs smoke conditions only.

Data: the real datasets get ``real_noise`` (0.2) symmetric label noise on the pools and, with
``eval_noise`` (default), on the evaluation users too (noise is part of the user population, as in rings);
``--set eval_noise=False`` corrupts the providers' training labels only, ``--set real_noise=0.0`` removes it.

Deviations: the choice rules, the proxy losses and the datasets are reconstructions (the paper's could
not be read); no numbers of the paper are known, so the criteria test its qualitative claims.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields

from .data import DATASETS, MarketData, market_data
from .dynamics import AccuracyMarket, Provider, default_estimators

OURS = "br"
ERM = "erm"
SURROGATE = "br_surrogate"
SOFT = "br_soft_share"
ARMS = (OURS, ERM, SURROGATE, SOFT)
RULE_NAMES = ("uniform", "abstain")


@dataclass(frozen=True)
class MarketConfig:
    """One claim-check configuration: markets, sweep, dynamics and the pre-declared thresholds."""

    datasets: tuple[str, ...] = DATASETS
    ks: tuple[int, ...] = (3, 5)
    rules: tuple[str, ...] = RULE_NAMES
    timing_datasets: tuple[str, ...] = DATASETS
    Cs: tuple[float, ...] = (0.1, 1.0, 10.0)
    pool_size: int = 1000
    eval_size: int = 10_000
    query_size: int = 200
    real_noise: float = 0.2
    eval_noise: bool = True
    max_rounds: int = 15
    tol: float = 0.005
    fast_rounds: int = 5
    soft_steps: int = 200
    e1_margin: float = 0.03
    e1_cells_min: float = 0.5
    conv_frac_min: float = 0.8
    frozen_gap_max: float = 0.0
    order_spread_min: float = 0.01

    def __post_init__(self) -> None:
        for name in ("datasets", "timing_datasets"):
            bad = [d for d in getattr(self, name) if d not in DATASETS]
            if bad or not getattr(self, name):
                raise ValueError(f"MarketConfig.{name} must be a non-empty subset of {DATASETS}, got {bad}")
        if not self.ks or any(int(k) != k or k < 3 for k in self.ks):
            raise ValueError(f"MarketConfig.ks must hold market sizes >= 3, got {self.ks}")
        if not self.rules or any(r not in RULE_NAMES for r in self.rules):
            raise ValueError(
                f"MarketConfig.rules must be a non-empty subset of {RULE_NAMES}, got {self.rules}"
            )
        if not self.Cs or any(c <= 0 for c in self.Cs):
            raise ValueError(f"MarketConfig.Cs must hold positive values, got {self.Cs}")
        check_fields(
            self,
            positive_int=("pool_size", "eval_size", "query_size", "max_rounds", "fast_rounds", "soft_steps"),
            positive=("tol",),
            non_negative=("e1_margin", "order_spread_min"),
            unit_interval=("e1_cells_min", "conv_frac_min", "real_noise"),
        )


def _criteria(config: MarketConfig) -> tuple[Criterion, ...]:
    small = ("small", "full")
    return (
        Criterion(
            "e1/cells_gain",
            arm=OURS,
            metric="e1/frac_cells_gain",
            op=">=",
            threshold=config.e1_cells_min,
            scales=small,
            description=f"in most (dataset, K, rule) cells the br entrant's share beats the erm entrant's by "
            f">= {config.e1_margin:g}",
        ),
        Criterion(
            "e1/gain_every_seed",
            arm=OURS,
            metric="e1/mean_gain",
            op=">",
            threshold=0.0,
            reduce="min",
            scales=small,
            description="the br entrant's share gain over the erm entrant, averaged over cells, is "
            "positive in every seed",
        ),
        Criterion(
            "k2/equal",
            arm=OURS,
            metric="k2/max_abs_gain",
            op="<=",
            threshold=1e-9,
            reduce="max",
            scales=("tiny", "small", "full"),
            description="control: with K = 2 under the uniform rule best response equals ERM",
        ),
        Criterion(
            "e2/fast",
            arm=OURS,
            metric="e2/conv_within",
            op=">=",
            threshold=config.conv_frac_min,
            scales=small,
            description=f"sequential best response reaches equilibrium within {config.fast_rounds} rounds "
            "in most runs",
        ),
        Criterion(
            "e2/welfare",
            arm=OURS,
            metric="e2/welfare",
            op=">",
            other_arm=ERM,
            scales=small,
            description="user welfare of the all-br market exceeds that of the all-erm market",
        ),
        Criterion(
            "e3/frozen_loses",
            arm=OURS,
            metric="e3/frozen_minus_updating",
            op="<",
            threshold=config.frozen_gap_max,
            scales=small,
            description="a frozen first entrant ends with less share than the same provider updating",
        ),
        Criterion(
            "e3/order_matters",
            arm=OURS,
            metric="e3/order_spread_final",
            op=">=",
            threshold=config.order_spread_min,
            scales=small,
            description="the entry position changes the average final share",
        ),
        Criterion(
            "tiny/br_entrant_not_worse",
            arm=OURS,
            metric="e1/share",
            op=">=",
            other_arm=ERM,
            factor=0.9,
            scales=("tiny",),
            description="smoke: the br entrant's share is not far below the erm entrant's",
        ),
    )


CLAIM_TEMPLATE = Claim(
    statement=(
        "In accuracy markets, a provider trained as a best response to its competitors wins more market "
        "share than an accuracy-maximising (ERM) provider, all-best-response markets serve users better "
        "(higher welfare) and reach equilibrium within a few rounds, and the timing of entry and of updates "
        "matters."
    ),
    source="Abstract and Sec. 4-6 (no numbers recoverable); reconstructed choice rule and proxy loss",
    ours=OURS,
    baselines=(ERM, SURROGATE, SOFT),
    criteria=_criteria(MarketConfig()),
    headline="e1/cells_gain",
    min_seeds=3,
    setup_notes=(
        "Logistic regression providers; rings (8 clusters, 10% label noise, 1000 users per pool) and "
        "breast_cancer, digits even/odd and wine with 20% label noise on the pools; K in {3, 5}; uniform and "
        "abstain choice rules; C in {0.1, 1, 10} chosen on a 25% validation part of each pool for every arm; "
        "best response assumes the competitors' correctness on the provider's own users is visible."
    ),
)


def _claim(config: MarketConfig) -> Claim:
    return dataclasses.replace(CLAIM_TEMPLATE, criteria=_criteria(config))


CLAIM = _claim(MarketConfig())


def _data(config: MarketConfig, name: str, K: int, seed: int) -> MarketData:
    return market_data(
        name,
        K,
        seed=seed,
        pool_size=config.pool_size,
        eval_size=config.eval_size,
        query_size=config.query_size,
        noise=None if name == "rings" else config.real_noise,
        eval_noise=config.eval_noise,
    )


def _provider(
    config: MarketConfig,
    data: MarketData,
    j: int,
    seed: int,
    *,
    arm: str,
    update_every: int = 1,
) -> Provider:
    X, y = data.pools[j]
    return Provider(
        f"p{j}",
        X,
        y,
        strategy="erm" if arm == ERM else "br",
        proxy="soft_share" if arm == SOFT else "weighted_ce",
        information="surrogate" if arm == SURROGATE else "full",
        estimators=default_estimators(config.Cs),
        update_every=update_every,
        seed=seed * 1000 + j,
    )


def _market(data: MarketData, rule: str) -> AccuracyMarket:
    return AccuracyMarket(rule, data.X_eval, data.y_eval, X_query=data.X_query)


class CompetitiveClassificationCheck(ClaimCheck[MarketConfig]):
    slug = "competitive_classification"
    claim = CLAIM
    presets = {
        "tiny": MarketConfig(
            datasets=("rings",),
            ks=(3,),
            rules=("uniform",),
            timing_datasets=("rings",),
            pool_size=300,
            eval_size=2000,
            query_size=100,
            max_rounds=2,
            soft_steps=50,
        ),
        "small": MarketConfig(),
        "full": MarketConfig(ks=(3, 5, 8), max_rounds=30, eval_size=20_000),
    }
    default_seeds = {"tiny": 1, "small": 10, "full": 10}

    def claim_for(self, config: MarketConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: MarketConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
        series: dict[str, Any] = {}
        self._entrant(config, seed, metrics, series, ctx)
        self._dynamics(config, seed, metrics, series, ctx)
        self._timing(config, seed, metrics, series, ctx)
        return SeedOutcome(metrics=metrics, series=series)

    # -- E1: one entrant against ERM incumbents ------------------------------------------------------

    def _entrant(
        self,
        config: MarketConfig,
        seed: int,
        metrics: dict[str, dict[str, float]],
        series: dict[str, Any],
        ctx: RunContext,
    ) -> None:
        cells = [(d, K, r) for d in config.datasets for K in config.ks for r in config.rules]
        share: dict[str, list[float]] = {a: [] for a in ARMS}
        acc: dict[str, list[float]] = {a: [] for a in ARMS}
        for i, (name, K, rule) in enumerate(cells):
            data = _data(config, name, K, seed)
            for arm in ARMS:
                market = _market(data, rule)
                for j in range(K - 1):
                    market.enter(_provider(config, data, j, seed, arm=ERM))
                entrant = _provider(config, data, K - 1, seed, arm=arm)
                state = market.enter(entrant)
                share[arm].append(float(state.shares[-1]))
                acc[arm].append(float(state.accuracy[-1]))
                metrics[arm][f"e1/{name}/K{K}/{rule}/share"] = share[arm][-1]
                metrics[arm][f"e1/{name}/K{K}/{rule}/acc"] = acc[arm][-1]
            ctx.progress("E1: one entrant against ERM incumbents", i + 1, len(cells))
        gain = np.array(share[OURS]) - np.array(share[ERM])
        for arm in ARMS:
            metrics[arm]["e1/share"] = float(np.mean(share[arm]))
            metrics[arm]["e1/acc"] = float(np.mean(acc[arm]))
            if arm != ERM:
                g = np.array(share[arm]) - np.array(share[ERM])
                metrics[arm]["e1/mean_gain"] = float(g.mean())
                metrics[arm]["e1/frac_cells_gain"] = float((g >= config.e1_margin).mean())
        series["e1"] = {
            "cells": [f"{d}/K{K}/{r}" for d, K, r in cells],
            "share": share,
            "acc": acc,
            "gain": gain,
        }
        # control: K = 2 under the uniform rule (weights are constant: best response == ERM)
        k2 = []
        for name in config.datasets:
            data = _data(config, name, 2, seed)
            out = {}
            for arm in (OURS, ERM):
                market = _market(data, "uniform")
                market.enter(_provider(config, data, 0, seed, arm=ERM))
                out[arm] = float(market.enter(_provider(config, data, 1, seed, arm=arm)).shares[-1])
            k2.append(abs(out[OURS] - out[ERM]))
        metrics[OURS]["k2/max_abs_gain"] = float(max(k2))

    # -- E2: all-best-response dynamics against an all-ERM market -------------------------------------

    def _dynamics(
        self,
        config: MarketConfig,
        seed: int,
        metrics: dict[str, dict[str, float]],
        series: dict[str, Any],
        ctx: RunContext,
    ) -> None:
        cells = [(d, K, r) for d in config.datasets for K in config.ks for r in config.rules]
        rec: dict[str, dict[str, list[float]]] = {
            a: {"welfare": [], "hhi": [], "served": [], "acc": []} for a in (OURS, ERM)
        }
        rounds, converged, cycled, fast = [], [], [], []
        trajectories = {}
        for i, (name, K, rule) in enumerate(cells):
            data = _data(config, name, K, seed)
            for arm in (OURS, ERM):
                market = _market(data, rule)
                for j in range(K):
                    market.enter(_provider(config, data, j, seed, arm=arm))
                if arm == OURS:
                    hist = market.run(config.max_rounds, config.tol)
                    rounds.append(hist.rounds)
                    converged.append(hist.converged)
                    cycled.append(hist.cycled)
                    fast.append(hist.converged and hist.rounds <= config.fast_rounds)
                    trajectories[f"{name}/K{K}/{rule}"] = hist.share_trajectory()
                    final = hist.final
                else:
                    final = market.evaluate()  # ERM ignores competitors: refitting changes nothing
                rec[arm]["welfare"].append(final.welfare)
                rec[arm]["hhi"].append(final.hhi)
                rec[arm]["served"].append(final.served)
                rec[arm]["acc"].append(float(final.accuracy.mean()))
                metrics[arm][f"e2/{name}/K{K}/{rule}/welfare"] = final.welfare
            ctx.progress("E2: best-response dynamics vs all-ERM", i + 1, len(cells))
        for arm in (OURS, ERM):
            for key, vals in rec[arm].items():
                metrics[arm][f"e2/{key}"] = float(np.mean(vals))
        metrics[OURS]["e2/rounds"] = float(np.mean(rounds))
        metrics[OURS]["e2/rounds_max"] = float(np.max(rounds))
        metrics[OURS]["e2/converged_frac"] = float(np.mean(converged))
        metrics[OURS]["e2/cycled_frac"] = float(np.mean(cycled))
        metrics[OURS]["e2/conv_within"] = float(np.mean(fast))
        series["e2"] = {
            "cells": [f"{d}/K{K}/{r}" for d, K, r in cells],
            "rounds": rounds,
            "welfare": {a: rec[a]["welfare"] for a in rec},
            "trajectories": trajectories,
        }

    # -- E3: timing of entry and of updates -----------------------------------------------------------

    def _timing(
        self,
        config: MarketConfig,
        seed: int,
        metrics: dict[str, dict[str, float]],
        series: dict[str, Any],
        ctx: RunContext,
    ) -> None:
        K = 3
        cells = [(d, r) for d in config.timing_datasets for r in config.rules]
        spread_final, spread_entry, last_minus_first = [], [], []
        frozen_gap = []
        by_position: dict[str, list[list[float]]] = {}
        for i, (name, rule) in enumerate(cells):
            data = _data(config, name, K, seed)
            final_pos, entry_pos = np.zeros(K), np.zeros(K)
            orders = list(itertools.permutations(range(K)))
            for order in orders:
                market = _market(data, rule)
                for j in order:
                    market.enter(_provider(config, data, j, seed, arm=OURS))
                hist = market.run(config.max_rounds, config.tol)
                entry_pos += hist.states[0].shares
                final_pos += hist.final.shares
            final_pos /= len(orders)
            entry_pos /= len(orders)
            spread_final.append(float(final_pos.max() - final_pos.min()))
            spread_entry.append(float(entry_pos.max() - entry_pos.min()))
            last_minus_first.append(float(final_pos[-1] - final_pos[0]))
            by_position[f"{name}/{rule}"] = [list(entry_pos), list(final_pos)]
            finals = {}
            for every in (0, 1):
                market = _market(data, rule)
                for j in range(K):
                    market.enter(
                        _provider(config, data, j, seed, arm=OURS, update_every=every if j == 0 else 1)
                    )
                finals[every] = float(market.run(config.max_rounds, config.tol).final.shares[0])
            frozen_gap.append(finals[0] - finals[1])
            metrics[OURS][f"e3/{name}/{rule}/frozen_share"] = finals[0]
            metrics[OURS][f"e3/{name}/{rule}/updating_share"] = finals[1]
            ctx.progress("E3: entry order and update timing", i + 1, len(cells))
        m = metrics[OURS]
        m["e3/order_spread_final"] = float(np.mean(spread_final))
        m["e3/order_spread_entry"] = float(np.mean(spread_entry))
        m["e3/last_minus_first_final"] = float(np.mean(last_minus_first))
        m["e3/frozen_minus_updating"] = float(np.mean(frozen_gap))
        series["e3"] = {"by_position": by_position, "frozen_gap": frozen_gap}

    # -- figures --------------------------------------------------------------------------------------

    def make_figures(self, config: MarketConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import arm_color, new_figure

        fig, axes = new_figure(ncols=3, width=4.4, height=3.4)
        ax = axes[0]
        cells = outcomes[0].series["e1"]["cells"]
        x = np.arange(len(cells))
        width = 0.8 / len(ARMS)
        for a, arm in enumerate(ARMS):
            vals = np.array([o.series["e1"]["share"][arm] for o in outcomes], dtype=float)
            ax.bar(
                x + (a - (len(ARMS) - 1) / 2) * width,
                vals.mean(axis=0),
                width,
                yerr=vals.std(axis=0),
                color=arm_color(arm, OURS, CLAIM.baselines),
                label=arm,
            )
        ax.set_xticks(x, cells, rotation=75, fontsize=6)
        ax.set(ylabel="entrant's market share", title="E1: entrant vs K-1 ERM incumbents")
        ax.legend(fontsize=7)
        ax = axes[1]
        traj = outcomes[0].series["e2"]["trajectories"]
        key = next((k for k in traj if k.startswith("rings") and "K5" in k), next(iter(traj)))
        t = np.asarray(traj[key], dtype=float)
        for j in range(t.shape[1]):
            ax.plot(np.arange(t.shape[0]), t[:, j], marker="o", label=f"provider {j}")
        ax.set(
            xlabel="best-response round (0 = after entry)", ylabel="market share", title=f"E2: {key}, seed 0"
        )
        ax.legend(fontsize=7)
        ax = axes[2]
        e3 = [o.series["e3"]["by_position"] for o in outcomes]
        for c, cell in enumerate(e3[0]):
            final = np.array([s[cell][1] for s in e3], dtype=float).mean(axis=0)
            entry = np.array([s[cell][0] for s in e3], dtype=float).mean(axis=0)
            pos = np.arange(1, final.size + 1)
            ax.plot(pos, final, marker="o", color=f"C{c}", label=cell)
            ax.plot(pos, entry, ls="--", marker="x", color=f"C{c}")
        ax.set(
            xlabel="entry position",
            ylabel="average share",
            title="E3: share by entry position (dashed: after entry)",
            xticks=[1, 2, 3],
        )
        ax.legend(fontsize=6)
        ctx.save_figure(
            fig,
            "market_shares",
            "Left: market share of one entrant facing K-1 ERM incumbents per (dataset, K, rule) cell, by "
            "how the entrant learns (mean and std over seeds). Middle: share trajectories of an "
            "all-best-response market over update rounds (seed 0). Right: average share by entry position "
            "over all entry orders, K = 3, after the dynamics (solid) and right after entry (dashed).",
        )


CHECK = CompetitiveClassificationCheck()
