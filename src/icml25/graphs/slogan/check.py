"""Claim check for *Sparse Causal Discovery with Generative Intervention for Unsupervised Graph Domain
Adaptation* (SLOGAN; Luo et al.; ICML 2025; https://arxiv.org/abs/2507.07621).

The paper's claim: SLOGAN beats existing graph domain-adaptation baselines in target accuracy (by
0.5-2.3 points on average over 12 ordered domain pairs per data set). Here, on synthetic graph
domains generated in :mod:`icml25.graphs.slogan.data`, every arm trains the same GNN predictor:

Arms:
    slogan          full objective: L_sup (source CE + adaptive-threshold pseudo-labels) + 0.003 L_dis
                    + 0.1 L_inv, after a source warm-up
    erm             source-only cross-entropy
    dann            source CE + gradient-reversed domain classifier on the graph embedding
    self_training   source warm-up, then pseudo-labels above a fixed 0.9 confidence (same augmentation)
    slogan_no_inv, slogan_no_dis   ablations (eta = 0; gamma = 0), run at SLOGAN's chosen learning
                    rate; reported, not judged (``slogan_fixed_thr``, a fixed 0.9 threshold, is
                    available through ``ablations``)

Tasks (each seed makes fresh data for every task):
    density  judged: one pool without spurious correlation, sorted by edge density: sparsest
             quarter = source, densest quarter = target (the paper's density-split protocol)
    motif    reported, not judged (a stress test; tiny and full presets, not small): label =
             attached motif; the base graph is spurious (P(base = label) 0.8 in the source, 1/3
             in the target) and the target has larger bases, 10% extra edges, shifted features.
             After the source warm-up the network predicts from the base graph (pseudo-labels about
             half right), so any pseudo-labelling method, the paper's included, locks the shortcut
             in; it is reported per task as ``motif/target_acc`` and ``slogan.motif/gain_vs_{arm}``.

Reference: ``majority`` predicts the training source's most frequent class (what learning nothing
scores on the target and on the source validation split).

Equal effort and validation: the four main arms get the same epochs, batch and the same learning-rate
sweep (``lrs``); each keeps the rate with the best accuracy on a held-out 20% of the *labelled source*
graphs (``icml25.core.tuning.best_on_validation``). Target labels are read only to score the final
models (and for the pseudo-label accuracy diagnostic); they never choose anything.

Gates (point conditions on the judged task; a failure makes the verdict inconclusive):
    erm_learns_source  ERM's source-validation accuracy - majority's >= ``gate_margin`` (0.1)
    erm_transfers      ERM's target accuracy > majority's target accuracy

Criteria (declared before any small-scale number of this design was seen), on the judged task's
target accuracy, paired over seeds and target graphs (items: each target graph's 0/1 correctness;
two-stage cluster bootstrap), smallest effect ``min_effect`` = 0.01 (paper: SLOGAN's average margin
over its strongest baseline, MTDF, is 0.5-2.3 points):
    beats_dann           headline: SLOGAN above DANN (the domain-adaptation baseline)
    beats_erm            SLOGAN above source-only training
    beats_self_training  SLOGAN above fixed-threshold self-training
Ablations (``slogan_no_inv``, ``slogan_no_dis``) are reported, not judged. Tiny smoke criteria:
losses finite, thresholds inside [floor, tau].

Adaptive thresholds have a floor (``SloganConfig.threshold_floor``; default (1/K + tau)/2, ours):
without it a class the network rarely predicts had its bar lowered to near-chance confidence and
near-chance pseudo-labels were accepted (``threshold_floor=0`` restores that rule).

Speed (issue 45, round 6; changed after seeing run 20261205T134905905381Z-896562, for time only): the
small preset runs the judged *density* task alone (``tasks=("density",)``); the motif stress test,
reported and never judged, stays in the tiny and full presets and runs at small with
``tasks=("motif", "density")``. Every judged number is unchanged by this: each task makes its own data
and each training reseeds itself, so the density task's models, items, gates and criteria are the same
with or without the motif task. Training batches are gathered from tensors collated once per run
(:class:`~icml25.graphs.slogan.train.GraphSet`), bit-identical to ``Batch.from_data_list``. Small run
20261206T035621609414Z-51da9d (one thread, machine at load 7-9): 435 s wall, 130 s CPU (previous small:
364 s alone at two threads); not reproduced, headline -0.134, 95 % CI [-0.268, -0.007].

Earlier design (5 seeds, 2026-12-04, 308 s): not reproduced, judged on the mean over both tasks
with unpaired-by-item criteria: DANN 0.620, ERM 0.502, SLOGAN 0.473, self-training 0.436; the
-14.7-point gap to DANN came from the motif task, where both pseudo-labelling arms fell to chance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields

from .data import (
    MOTIFS,
    N_FEATURES,
    MotifDomainConfig,
    density_split,
    make_density_pool,
    make_spurious_motif_domains,
)
from .model import SLOGAN, AdaptiveThreshold, SloganConfig
from .train import UDAHistory, UDATrainConfig, evaluate, predict_proba, train_uda

MAIN = ("slogan", "erm", "dann", "self_training")
BASELINES = ("erm", "dann", "self_training")
ABLATIONS = ("slogan_no_inv", "slogan_no_dis", "slogan_fixed_thr")
TASKS = ("motif", "density")


@dataclass(frozen=True)
class SloganCheckConfig:
    """Data, model, training, the shared learning-rate sweep and the criteria thresholds."""

    data: MotifDomainConfig = MotifDomainConfig(n_per_domain=400, bias_source=0.8)
    density_size: tuple[int, int] = (10, 25)
    density_max_extra: float = 0.6
    tasks: tuple[str, ...] = TASKS
    model: SloganConfig = SloganConfig(in_dim=N_FEATURES, n_classes=len(MOTIFS), hidden=32, z_dim=16)
    train: UDATrainConfig = UDATrainConfig(epochs=30, batch_size=32)
    lrs: tuple[float, ...] = (1e-3, 3e-3)
    val_frac: float = 0.2
    ablations: tuple[str, ...] = ("slogan_no_inv", "slogan_no_dis")
    judged_task: str = "density"
    min_effect: float = 0.01
    gate_margin: float = 0.1

    def __post_init__(self) -> None:
        if not self.lrs or any(not (isinstance(v, float) and v > 0) for v in self.lrs):
            raise ValueError(
                f"SloganCheckConfig.lrs must be a non-empty tuple of positive floats, got {self.lrs}"
            )
        if not self.tasks or any(t not in TASKS for t in self.tasks):
            raise ValueError(
                f"SloganCheckConfig.tasks must be a non-empty subset of {TASKS}, got {self.tasks}"
            )
        if any(a not in ABLATIONS for a in self.ablations):
            raise ValueError(
                f"SloganCheckConfig.ablations must be a subset of {ABLATIONS}, got {self.ablations}"
            )
        check_fields(self, probability=("val_frac",), positive=("min_effect",), non_negative=("gate_margin",))
        if self.judged_task not in self.tasks:
            raise ValueError(
                f"SloganCheckConfig.judged_task must be one of tasks={self.tasks}, got {self.judged_task!r}"
            )
        if not 0.0 < self.val_frac < 1.0:
            raise ValueError(f"SloganCheckConfig.val_frac must lie in (0, 1), got {self.val_frac}")


EFFECT_SOURCE = (
    "paper: SLOGAN's average margin over the strongest baseline (MTDF) is 0.5-2.3 target-accuracy points "
    "over the four data sets; 1 point is inside that range"
)


def _criteria(cfg: SloganCheckConfig) -> tuple[Criterion, ...]:
    task = cfg.judged_task
    out: list[Criterion] = []
    for b in ("dann", "erm", "self_training"):
        out.append(
            Criterion(
                f"beats_{b}",
                arm="slogan",
                metric=f"{task}/target_acc",
                op=">",
                other_arm=b,
                smallest_effect=cfg.min_effect,
                effect_source=EFFECT_SOURCE,
                description=(
                    f"{task} task: SLOGAN's target accuracy above {b}'s, paired over seeds and target graphs"
                ),
            )
        )
    out.append(
        Criterion(
            "tiny_finite",
            arm="slogan",
            metric="finite_loss",
            op=">=",
            threshold=1.0,
            scales=("tiny",),
            description="every epoch's training loss is finite",
        )
    )
    out.append(
        Criterion(
            "tiny_thresholds_valid",
            arm="slogan",
            metric="thresholds_valid",
            op=">=",
            threshold=1.0,
            scales=("tiny",),
            description="adaptive thresholds lie in [floor, tau]",
        )
    )
    return tuple(out)


def _gates(cfg: SloganCheckConfig) -> tuple[Criterion, ...]:
    task = cfg.judged_task
    return (
        Criterion(
            "erm_learns_source",
            arm="erm",
            metric=f"{task}/val_gain_over_majority",
            op=">=",
            threshold=cfg.gate_margin,
            description=(
                f"{task} task: source-only training beats the majority-class reference on the held-out "
                "source validation graphs by gate_margin (the backbone learns the labelling)"
            ),
        ),
        Criterion(
            "erm_transfers",
            arm="erm",
            metric=f"{task}/target_acc",
            op=">",
            other_arm="majority",
            description=(
                f"{task} task: source-only training beats the majority-class reference on the target "
                "(some of what the source teaches transfers, so adaptation has something to improve)"
            ),
        ),
    )


CLAIM = Claim(
    statement=(
        "SLOGAN (causal/spurious decoupling, generative intervention and category-adaptive pseudo-labels) "
        "reaches higher target-domain accuracy in unsupervised graph domain adaptation than DANN-style "
        "adversarial alignment, source-only training and plain self-training."
    ),
    source="Abstract; Sec. 5, main tables (average target accuracy over 12 ordered pairs) and ablation",
    ours="slogan",
    baselines=(*BASELINES, "slogan_no_inv", "slogan_no_dis"),
    references=("majority",),
    criteria=_criteria(SloganCheckConfig()),
    gates=_gates(SloganCheckConfig()),
    headline="beats_dann",
    min_seeds=5,
    setup_notes=(
        "Synthetic graph classification (3 motif classes, generated with networkx). Judged: a "
        "density-split task (one pool sorted by edge density; sparsest quarter = source, densest = "
        "target), the paper's density-split protocol. Reported, not judged, in the tiny and full "
        "presets only (not run at small, for time): a spurious-motif stress test (base graph type "
        "correlated with the label in the source only). 400 graphs per domain, "
        "GIN 3x32, 30 epochs of 32+32-graph batches, lr sweep {1e-3, 3e-3} picked on a source "
        "validation split, 5 seeds. The paper uses PTC, NCI1, Twitter and Letter-Med (12 ordered "
        "domain pairs each) and a GCN backbone."
    ),
    timed_metrics=("train_seconds",),
)


def _task_data(cfg: SloganCheckConfig, task: str, seed: int) -> tuple[list[Data], list[Data]]:
    if task == "motif":
        return make_spurious_motif_domains(cfg.data, seed=seed)
    pool = make_density_pool(
        4 * cfg.data.n_per_domain,
        size=cfg.density_size,
        max_extra_edges=cfg.density_max_extra,
        seed=seed + 10_000,
    )
    domains = density_split(pool, 4)
    return domains[0], domains[3]


def _arm_setup(cfg: SloganCheckConfig, arm: str) -> tuple[str, SloganConfig, UDATrainConfig]:
    model, train = cfg.model, cfg.train
    if arm == "slogan_no_inv":
        return "slogan", dataclasses.replace(model, eta=0.0), train
    if arm == "slogan_no_dis":
        return "slogan", dataclasses.replace(model, gamma=0.0), train
    if arm == "slogan_fixed_thr":
        return "slogan", model, dataclasses.replace(train, adaptive=False)
    return arm, model, train


def _train(
    cfg: SloganCheckConfig,
    arm: str,
    lr: float,
    src: Sequence[Data],
    tgt: Sequence[Data],
    seed: int,
    ctx: RunContext,
    label: str,
) -> tuple[SLOGAN, UDAHistory]:
    method, mcfg, tcfg = _arm_setup(cfg, arm)
    torch.manual_seed(seed)
    model = SLOGAN(mcfg)

    def report(done: int, total: int) -> None:
        ctx.progress(label, done, total)

    hist = train_uda(model, src, tgt, method, dataclasses.replace(tcfg, lr=lr), seed=seed, progress=report)
    return model, hist


class SloganCheck(ClaimCheck[SloganCheckConfig]):
    slug = "slogan"
    claim = CLAIM

    def claim_for(self, config: SloganCheckConfig) -> Claim:
        """Thresholds and the ablation arms come from the config."""
        return dataclasses.replace(
            CLAIM, baselines=(*BASELINES, *config.ablations), criteria=_criteria(config), gates=_gates(config)
        )

    presets = {
        "tiny": SloganCheckConfig(
            data=MotifDomainConfig(n_per_domain=40, source_size=(8, 12), target_size=(12, 16)),
            density_size=(8, 16),
            model=SloganConfig(in_dim=N_FEATURES, n_classes=len(MOTIFS), hidden=16, layers=2, z_dim=8),
            train=UDATrainConfig(epochs=3, batch_size=16, warmup_frac=0.3),
            lrs=(3e-3,),
            ablations=(),
        ),
        # the motif stress test (reported, never judged) runs at tiny and full only: for time
        "small": SloganCheckConfig(tasks=("density",)),
        "full": SloganCheckConfig(
            data=MotifDomainConfig(n_per_domain=1000, bias_source=0.9),
            model=SloganConfig(in_dim=N_FEATURES, n_classes=len(MOTIFS), hidden=64, layers=3, z_dim=32),
            density_size=(12, 40),
            train=UDATrainConfig(epochs=100, batch_size=64),
        ),
    }
    default_seeds = {"tiny": 1, "small": 5, "full": 5}

    def run_seed(self, config: SloganCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        arms = (*MAIN, *config.ablations)
        acc: dict[str, dict[str, float]] = {a: {} for a in (*arms, "majority")}
        metrics: dict[str, dict[str, float]] = {a: {} for a in (*arms, "majority")}
        items: dict[str, dict[str, np.ndarray]] = {a: {} for a in (*arms, "majority")}
        series: dict[str, Any] = {}
        finite = True
        thresholds_ok = True
        floor = AdaptiveThreshold(
            config.model.n_classes, config.model.tau, config.model.threshold_floor
        ).floor
        for task in config.tasks:
            ctx.progress(f"generate {task}", 0, 1)
            src_all, tgt = _task_data(config, task, seed)
            n_val = max(1, int(round(config.val_frac * len(src_all))))
            src, val = src_all[n_val:], src_all[:n_val]
            series[task] = {}
            self._record_majority(task, src, val, tgt, acc, metrics, items)
            chosen: dict[str, float] = {}
            for arm in MAIN:
                runs: dict[float, tuple[SLOGAN, UDAHistory, float]] = {}
                for lr in config.lrs:
                    model, hist = _train(config, arm, lr, src, tgt, seed, ctx, f"{task}: {arm} lr={lr:g}")
                    runs[lr] = (model, hist, evaluate(model, val)["accuracy"])
                lr = best_on_validation(runs, lambda r: -r[2])  # highest source-validation accuracy
                model, hist, val_acc = runs[lr]
                chosen[arm] = lr
                self._record(arm, task, model, hist, tgt, val_acc, lr, acc, metrics, items, series)
                finite &= bool(np.isfinite(hist.loss).all())
                if arm == "slogan":
                    thresholds_ok &= all(
                        floor - 1e-6 <= t <= config.model.tau + 1e-6 for ts in hist.thresholds for t in ts
                    )
            for arm in config.ablations:
                model, hist = _train(config, arm, chosen["slogan"], src, tgt, seed, ctx, f"{task}: {arm}")
                val_acc = evaluate(model, val)["accuracy"]
                self._record(
                    arm, task, model, hist, tgt, val_acc, chosen["slogan"], acc, metrics, items, series
                )
            series[task]["chosen_lr"] = chosen
            for arm in arms:
                metrics[arm][f"{task}/val_gain_over_majority"] = (
                    metrics[arm][f"{task}/source_val_acc"] - metrics["majority"][f"{task}/source_val_acc"]
                )
            for other in (*BASELINES, *config.ablations):  # reported per task (the stress test included)
                metrics["slogan"][f"{task}/gain_vs_{other}"] = acc["slogan"][task] - acc[other][task]

        for arm in (*arms, "majority"):
            metrics[arm]["target_acc"] = float(np.mean([acc[arm][t] for t in config.tasks]))
        metrics["slogan"]["finite_loss"] = float(finite)
        metrics["slogan"]["thresholds_valid"] = float(thresholds_ok)
        return SeedOutcome(metrics=metrics, series=series, items=items)

    @staticmethod
    def _record_majority(
        task: str,
        src: Sequence[Data],
        val: Sequence[Data],
        tgt: Sequence[Data],
        acc: dict[str, dict[str, float]],
        metrics: dict[str, dict[str, float]],
        items: dict[str, dict[str, np.ndarray]],
    ) -> None:
        """The reference that learns nothing: always the training source's most frequent class."""
        y_src = np.array([int(g.y) for g in src])
        top = int(np.bincount(y_src).argmax())
        correct = np.array([float(int(g.y) == top) for g in tgt])
        acc["majority"][task] = float(correct.mean())
        metrics["majority"][f"{task}/target_acc"] = float(correct.mean())
        metrics["majority"][f"{task}/source_val_acc"] = float(np.mean([int(g.y) == top for g in val]))
        items["majority"][f"{task}/target_acc"] = correct

    @staticmethod
    def _record(
        arm: str,
        task: str,
        model: SLOGAN,
        hist: UDAHistory,
        tgt: Sequence[Data],
        val_acc: float,
        lr: float,
        acc: dict[str, dict[str, float]],
        metrics: dict[str, dict[str, float]],
        items: dict[str, dict[str, np.ndarray]],
        series: dict[str, Any],
    ) -> None:
        pred = predict_proba(model, tgt).argmax(1).numpy()
        correct = (pred == np.array([int(g.y) for g in tgt])).astype(float)
        tgt_acc = float(correct.mean())
        acc[arm][task] = tgt_acc
        items[arm][f"{task}/target_acc"] = correct
        m = metrics[arm]
        m[f"{task}/target_acc"] = tgt_acc
        m[f"{task}/source_val_acc"] = val_acc
        m[f"{task}/lr"] = lr
        m["train_seconds"] = m.get("train_seconds", 0.0) + hist.seconds
        if hist.pseudo_coverage:
            m[f"{task}/pseudo_coverage"] = hist.pseudo_coverage[-1]
            pa = hist.pseudo_accuracy[-1]
            if np.isfinite(pa):
                m[f"{task}/pseudo_accuracy"] = pa
        series[task][arm] = {
            "loss": hist.loss,
            "pseudo_coverage": hist.pseudo_coverage,
            "pseudo_accuracy": hist.pseudo_accuracy,
        }

    def make_figures(
        self, config: SloganCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import arm_color, new_figure

        claim = self.claim_for(config)
        arms = [a for a in (*MAIN, *config.ablations) if a in outcomes[0].metrics]
        fig, axes = new_figure(ncols=len(config.tasks), width=3.6, height=3.2)
        for ax, task in zip(np.atleast_1d(axes), config.tasks, strict=True):
            for i, arm in enumerate(arms):
                vals = [float(o.metrics[arm][f"{task}/target_acc"]) for o in outcomes]
                ax.bar(i, np.mean(vals), color=arm_color(arm, claim.ours, claim.baselines), width=0.7)
                ax.scatter([i] * len(vals), vals, color="k", s=8, zorder=3)
            ax.set_xticks(range(len(arms)), arms, rotation=35, ha="right")
            ax.set(title=f"{task} task", ylabel="target accuracy", ylim=(0, 1))
            ax.axhline(1 / len(MOTIFS), color="k", lw=0.5, ls=":")
        ctx.save_figure(
            fig,
            "target_accuracy",
            "Target-domain accuracy per arm and task (bars: mean over seeds, dots: seeds; dotted: chance). "
            "Learning rates chosen on a labelled source validation split.",
        )
        fig, ax = new_figure(width=5.0, height=3.2)
        for j, b in enumerate(BASELINES):
            diffs = [
                float(o.metrics["slogan"][f"{t}/target_acc"]) - float(o.metrics[b][f"{t}/target_acc"])
                for o in outcomes
                for t in config.tasks
            ]
            ax.scatter([j] * len(diffs), diffs, color="k", s=10)
            ax.bar(j, np.mean(diffs), color=arm_color(b, claim.ours, claim.baselines), alpha=0.6, width=0.6)
        ax.axhline(0, color="k", lw=0.5)
        ax.set_xticks(range(len(BASELINES)), [f"slogan - {b}" for b in BASELINES])
        ax.set(ylabel="paired target-accuracy difference")
        ctx.save_figure(
            fig,
            "paired_differences",
            "Per (seed, task) paired target-accuracy differences of SLOGAN minus each baseline (bar: mean).",
        )
        first = outcomes[0].series
        task = config.tasks[0]
        fig, ax = new_figure(width=5.0, height=3.2)
        for arm in ("slogan", "self_training"):
            s = first[task].get(arm)
            if not s or not s["pseudo_coverage"]:
                continue
            color = arm_color(arm, claim.ours, claim.baselines)
            ax.plot(s["pseudo_coverage"], color=color, label=f"{arm} coverage")
            ax.plot(s["pseudo_accuracy"], color=color, ls="--", label=f"{arm} pseudo-label accuracy")
        ax.set(xlabel="epoch after warm-up", ylabel="share of target graphs", title=f"{task} task, seed 0")
        ax.legend(fontsize=7)
        ctx.save_figure(
            fig,
            "pseudo_labels",
            "Share of target graphs receiving a pseudo-label (solid) and those labels' accuracy (dashed; "
            "target labels used for this diagnostic only) per epoch after the source warm-up.",
        )


CHECK = SloganCheck()
