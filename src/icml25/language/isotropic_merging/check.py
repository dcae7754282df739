"""Claim check for *No Task Left Behind: Isotropic Model Merging with Common and Task-Specific
Subspaces* (Marczak et al., ICML 2025, arXiv 2502.04959), on the embedded SmolLM2-135M-Instruct.

Claim (Tables 1-3, Fig. 3 of the paper, CLIP ViTs and language models): merging task matrices with a
flattened (isotropic) spectrum, Iso-C and Iso-CTS, keeps more of each fine-tuned model's accuracy
than task arithmetic and TIES, and the merged matrices align better with every task's matrix (SAR).

Setup here: four code-generated classification-as-generation tasks (:mod:`.tasks`: sentiment of
templated sentences, animal-or-tool item lists, language of a word list, topic of a headline, each
answered with arbitrary words so that the base model is near chance); one
fine-tuned checkpoint per task, training only the attention and MLP matrices of the last
``n_train_layers`` decoder layers (the merged parameters are exactly the trained ones). Arms:
``finetuned`` (each task's own model, the normalisation reference), ``base`` (zero-shot),
``average`` (weight averaging, α = 1 by definition), ``task_arithmetic``, ``ties``, ``tsv_m``
(Task Singular Vectors merging, Gargiulo et al. CVPR 2025, the paper's strongest prior method),
``iso_c``, ``iso_cts``; the merge coefficient α of every merged arm is picked from the same grid by the same
rule (highest mean normalised accuracy on the validation split,
:func:`icml25.core.tuning.best_on_validation`), then measured on the test split.

Metrics per arm: ``norm_acc`` (mean over tasks of merged / fine-tuned test accuracy), ``abs_acc``,
``acc_<task>``, ``sar`` (mean over tasks of the layer-averaged SAR of the task matrix with the
merge), ``alpha``. Criteria (declared before any small number was seen; ``min_ratio`` is a config
field): Iso-C and Iso-CTS ``norm_acc`` >= ``min_ratio`` x task arithmetic's and x TIES's; Iso-C's
and Iso-CTS's SAR > task arithmetic's; and (declared when TSV-M was added, before its first small
run) Iso-C and Iso-CTS ``norm_acc`` >= ``min_ratio`` x TSV-M's. Only the last layers change between
the base, fine-tuned and merged models, so the hidden states entering them are computed once per
split (:func:`.tasks.cache_prefix`) and every evaluation and fine-tuning step runs only those
layers (the same computation, several times faster). Tiny (a random 2-layer Llama on bytes) checks
mechanics only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields

from .merging import (
    mean_sar,
    merge_average,
    merge_iso_c,
    merge_iso_cts,
    merge_task_arithmetic,
    merge_ties,
    merge_tsv_m,
)
from .tasks import (
    TASK_NAMES,
    LabelCodec,
    cache_prefix,
    encode_task,
    finetune_subset,
    label_accuracy,
    make_task,
    trainable_matrix_names,
)

MERGES = ("iso_c", "iso_cts", "task_arithmetic", "ties", "tsv_m", "average")
ARMS = (*MERGES, "finetuned", "base")


@dataclass(frozen=True)
class IsoMergingCheckConfig:
    """One claim-check configuration.

    Args:
        model: ``"smollm2-135m-instruct"``, any local Hugging Face causal-LM folder or GGUF that
            :func:`icml25.llm.models.load_causal_lm` accepts, or ``"random-tiny"``.
        tasks: task names from :data:`.tasks.TASK_NAMES`.
        n_train, n_val, n_test: examples per task and split.
        n_train_layers: the last this many decoder layers have their 2-D weights fine-tuned.
        steps, batch_size, lr: the fine-tuning loop (AdamW through ``icml25.nn.fit``).
        alphas: the merge-coefficient grid shared by every merged arm.
        ties_density: TIES's kept fraction (paper default 0.2).
        common_space_fraction: Iso-CTS's f (paper default 0.8).
        min_ratio: criterion factor: Iso norm_acc must reach ``min_ratio`` x the baseline's.
    """

    model: str = "smollm2-135m-instruct"
    tasks: tuple[str, ...] = TASK_NAMES
    n_train: int = 160
    n_val: int = 24
    n_test: int = 48
    n_train_layers: int = 4
    steps: int = 24
    batch_size: int = 8
    lr: float = 3e-4
    alphas: tuple[float, ...] = (0.2, 0.4, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0)
    ties_density: float = 0.2
    common_space_fraction: float = 0.8
    min_ratio: float = 1.0

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("n_train", "n_val", "n_test", "n_train_layers", "steps", "batch_size"),
            positive=("lr", "min_ratio"),
        )
        if len(self.tasks) < 2 or any(t not in TASK_NAMES for t in self.tasks):
            raise ValueError(
                f"IsoMergingCheckConfig.tasks must be >= 2 names from {TASK_NAMES}, got {self.tasks}"
            )
        if not self.alphas or any(
            not (isinstance(a, (int, float)) and a > 0 and math.isfinite(a)) for a in self.alphas
        ):
            raise ValueError(
                f"IsoMergingCheckConfig.alphas must be positive finite numbers, got {self.alphas}"
            )
        if not 0 < self.ties_density <= 1 or not 0 < self.common_space_fraction <= 1:
            raise ValueError("IsoMergingCheckConfig.ties_density and common_space_fraction must be in (0, 1]")
        if self.model.startswith("openai:"):
            raise ValueError("IsoMergingCheckConfig.model: merging needs local weights, not an endpoint")


def _claim(config: IsoMergingCheckConfig) -> Claim:
    crit = []
    for ours in ("iso_c", "iso_cts"):
        for base in ("task_arithmetic", "ties"):
            crit.append(
                Criterion(
                    name=f"{ours}_vs_{base}",
                    arm=ours,
                    metric="norm_acc",
                    op=">=",
                    other_arm=base,
                    factor=config.min_ratio,
                    description=f"{ours} mean normalised test accuracy >= {config.min_ratio:g} x {base}'s",
                )
            )
        crit.append(
            Criterion(
                name=f"{ours}_sar_vs_task_arithmetic",
                arm=ours,
                metric="sar",
                op=">",
                other_arm="task_arithmetic",
                description=f"{ours}'s subspace-alignment ratio above task arithmetic's",
            )
        )
    for ours in ("iso_c", "iso_cts"):
        crit.append(
            Criterion(
                name=f"{ours}_vs_tsv_m",
                arm=ours,
                metric="norm_acc",
                op=">=",
                other_arm="tsv_m",
                factor=config.min_ratio,
                description=f"{ours} mean normalised test accuracy >= {config.min_ratio:g} x tsv_m's",
            )
        )
    crit.append(
        Criterion(
            name="tiny_finetune_loss_falls",
            arm="finetuned",
            metric="loss_ratio",
            op="<",
            threshold=1.0,
            scales=("tiny",),
            description="smoke: fine-tuning lowers the training loss (mean last/first over tasks)",
        )
    )
    return Claim(
        statement=(
            "Isotropic merging (Iso-C, Iso-CTS) retains more of the fine-tuned models' accuracy than task "
            "arithmetic, TIES and TSV-M, and its merged matrices align better with every task's matrix."
        ),
        source="Tables 1-3 (normalised accuracy) and Fig. 3 (subspace-alignment ratio)",
        ours="iso_c",
        baselines=("iso_cts", "task_arithmetic", "ties", "tsv_m", "average", "base", "finetuned"),
        criteria=tuple(crit),
        headline="iso_c_vs_task_arithmetic",
        setup_notes=(
            "SmolLM2-135M-Instruct fine-tuned on four code-generated classification tasks (label-token "
            "scoring) instead of 8-20 vision tasks on CLIP ViTs; only the last layers' attention/MLP "
            "matrices are trained for a few dozen steps; one alpha grid for all merges, "
            "chosen on a validation split."
        ),
    )


CLAIM = _claim(IsoMergingCheckConfig())


def _tiny_model() -> Any:
    from icml25.llm.models import tiny_random_llama

    return tiny_random_llama(eos_token_id=256, pad_token_id=0, bos_token_id=256)


def _load(model: Any, weights: dict[str, torch.Tensor]) -> None:
    params = dict(model.named_parameters())
    with torch.no_grad():
        for k, v in weights.items():
            params[k].copy_(v)


class IsoMergingCheck(ClaimCheck[IsoMergingCheckConfig]):
    slug = "isotropic_merging"
    claim = CLAIM
    presets = {
        "tiny": IsoMergingCheckConfig(
            model="random-tiny",
            tasks=("sentiment", "object", "language"),
            n_train=32,
            n_val=8,
            n_test=16,
            n_train_layers=1,
            steps=10,
            batch_size=8,
            lr=1e-2,
            alphas=(0.5, 1.0),
        ),
        "small": IsoMergingCheckConfig(),
        "full": IsoMergingCheckConfig(
            n_train=2000,
            n_val=200,
            n_test=500,
            n_train_layers=30,
            steps=500,
            batch_size=16,
            lr=5e-5,
            alphas=tuple(round(0.1 * i, 1) for i in range(1, 31)),
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def claim_for(self, config: IsoMergingCheckConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: IsoMergingCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        torch.manual_seed(seed)
        if config.model == "random-tiny":
            model, codec = _tiny_model(), LabelCodec(None)
        else:
            from icml25.llm.models import load_causal_lm

            ctx.progress("load model", 0, 1)
            model, tokenizer = load_causal_lm(config.model)
            codec = LabelCodec(tokenizer)
        n_layers = len(model.model.layers)
        k = min(config.n_train_layers, n_layers)
        start = n_layers - k
        names = trainable_matrix_names(model, list(range(start, n_layers)))
        params = dict(model.named_parameters())
        base = {n: params[n].detach().clone() for n in names}
        tasks = [make_task(t, config.n_train, config.n_val, config.n_test, seed=seed) for t in config.tasks]
        label_ids = {td.name: codec.label_ids(td.labels) for td in tasks}
        enc = {
            split: {td.name: encode_task(codec, getattr(td, split), td.labels) for td in tasks}
            for split in ("train", "val", "test")
        }
        if start > 0:
            # Layers before ``start`` are never trained or merged: compute their output once.
            ctx.progress("cache frozen layers", 0, 1)
            enc = {sp: {t: cache_prefix(model, d, start) for t, d in per.items()} for sp, per in enc.items()}

        def acc(split: str, task: str) -> float:
            return label_accuracy(model, enc[split][task], label_ids[task], start_layer=start)

        def accuracies(split: str) -> dict[str, float]:
            return {t: acc(split, t) for t in config.tasks}

        metrics: dict[str, dict[str, float]] = {}
        series: dict[str, Any] = {"train_loss": {}, "val_norm_acc": {}}
        ctx.progress("evaluate base", 0, 1)
        base_test = accuracies("test")
        finetuned: list[dict[str, torch.Tensor]] = []
        ft_val: dict[str, float] = {}
        ft_test: dict[str, float] = {}
        for i, td in enumerate(tasks):
            ctx.progress("fine-tune", i, len(tasks))
            weights, losses = finetune_subset(
                model,
                enc["train"][td.name],
                label_ids[td.name],
                names,
                steps=config.steps,
                lr=config.lr,
                batch_size=config.batch_size,
                seed=seed * 1000 + i,
                start_layer=start,
            )
            finetuned.append(weights)
            series["train_loss"][td.name] = losses
            _load(model, weights)
            ft_val[td.name] = acc("val", td.name)
            ft_test[td.name] = acc("test", td.name)
            _load(model, base)
        tvs = [{n: w[n] - base[n] for n in names} for w in finetuned]

        def norm(accs: dict[str, float], ref: dict[str, float]) -> float:
            return statistics.fmean(accs[t] / ref[t] if ref[t] > 0 else math.nan for t in config.tasks)

        def summary(accs: dict[str, float]) -> dict[str, float]:
            out = {"norm_acc": norm(accs, ft_test), "abs_acc": statistics.fmean(accs.values())}
            out.update({f"acc_{t}": a for t, a in accs.items()})
            return out

        metrics["base"] = summary(base_test)
        metrics["finetuned"] = summary(ft_test)
        metrics["finetuned"]["loss_ratio"] = statistics.fmean(
            (v[-1] / v[0]) if v and v[0] > 0 else math.nan for v in series["train_loss"].values()
        )
        ctx.log("fine-tuned test acc " + ", ".join(f"{t} {a:.3f}" for t, a in ft_test.items()))
        ctx.log("base test acc " + ", ".join(f"{t} {a:.3f}" for t, a in base_test.items()))
        builders = {
            "iso_c": lambda: merge_iso_c(tvs),
            "iso_cts": lambda: merge_iso_cts(tvs, common_space_fraction=config.common_space_fraction),
            "task_arithmetic": lambda: merge_task_arithmetic(tvs),
            "ties": lambda: merge_ties(tvs, density=config.ties_density),
            "tsv_m": lambda: merge_tsv_m(tvs),
            "average": lambda: merge_average(tvs),
        }
        for j, arm in enumerate(MERGES):
            ctx.progress(f"merge {arm}", j, len(MERGES))
            delta = builders[arm]()
            grid = (1.0,) if arm == "average" else tuple(float(a) for a in config.alphas)
            val_scores: dict[float, float] = {}
            for a in grid:
                _load(model, {n: base[n] + a * delta[n] for n in names})
                val_scores[a] = norm(accuracies("val"), ft_val)
            best = best_on_validation(val_scores, lambda v: -v)
            series["val_norm_acc"][arm] = {f"{a:g}": v for a, v in val_scores.items()}
            _load(model, {n: base[n] + best * delta[n] for n in names})
            m = summary(accuracies("test"))
            sars = mean_sar(tvs, delta)
            m.update(alpha=best, sar=statistics.fmean(sars), val_norm_acc=val_scores[best])
            m.update({f"sar_{t}": s for t, s in zip(config.tasks, sars, strict=True)})
            metrics[arm] = m
            ctx.log(
                f"{arm}: alpha {best:g}, norm_acc {m['norm_acc']:.3f}, "
                f"abs_acc {m['abs_acc']:.3f}, sar {m['sar']:.3f}"
            )
            del delta
        _load(model, base)
        notes = (
            f"model {config.model}; tasks {', '.join(config.tasks)}; "
            f"{config.n_train}/{config.n_val}/{config.n_test} examples per task; trained: the "
            f"{len(names)} 2-D weights of the last {k} layers, {config.steps} steps x "
            f"batch {config.batch_size}, lr {config.lr:g}; alpha grid {config.alphas} (average: alpha 1)",
        )
        return SeedOutcome(metrics=metrics, series=series, notes=notes)

    def make_figures(
        self, config: IsoMergingCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import arm_color, new_figure

        fig, axes = new_figure(ncols=2, width=4.2, height=3.2)
        for ax, metric, label, arms in (
            (axes[0], "norm_acc", "mean normalised test accuracy", (*MERGES, "base")),
            (axes[1], "sar", "mean subspace-alignment ratio", MERGES),
        ):
            for i, arm in enumerate(arms):
                vals = [float(o.metrics[arm][metric]) for o in outcomes]
                ax.bar(i, statistics.fmean(vals), color=arm_color(arm, CLAIM.ours, CLAIM.baselines))
                ax.scatter([i] * len(vals), vals, color="k", s=8, zorder=3)
            ax.set_xticks(range(len(arms)))
            ax.set_xticklabels([a.replace("task_arithmetic", "TA") for a in arms], rotation=30)
            ax.set_ylabel(label)
        ctx.save_figure(
            fig,
            "merging",
            "Normalised accuracy and subspace alignment per merge (bars: mean over seeds; dots: seeds).",
        )


CHECK = IsoMergingCheck()
