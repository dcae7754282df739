"""Claim check for *No Task Left Behind: Isotropic Model Merging with Common and Task-Specific
Subspaces* (Marczak et al., ICML 2025, arXiv 2502.04959), on the embedded SmolLM2-135M-Instruct.

Claim (Tables 1-3, Fig. 3 of the paper, CLIP ViTs and language models): merging task matrices with a
flattened (isotropic) spectrum, Iso-C and Iso-CTS, keeps more of each fine-tuned model's accuracy
than task arithmetic, TIES and TSV-M, and the merged matrices align better with every task's matrix
(SAR).

Setup here: four code-generated classification-as-generation tasks (:mod:`.tasks`: sentiment of
templated sentences, animal-or-tool item lists, language of a word list, topic of a headline, each
answered with arbitrary words so that the base model is near chance); one fine-tuned checkpoint per
task, training only the attention and MLP matrices of the last ``n_train_layers`` decoder layers
(the merged parameters are exactly the trained ones). Each single-task model is trained until its
validation loss stops improving (evaluated every ``eval_every`` steps, ``patience`` evaluations
without improvement, the best weights kept; ``steps`` is only a cap), so the normalisation
reference is a converged model, not an under-trained one.

Arms: ``iso_c`` (ours), ``iso_cts``, ``task_arithmetic``, ``ties``, ``tsv_m`` (Task Singular
Vectors merging, Gargiulo et al. CVPR 2025, the paper's strongest prior method), ``average``.
References: ``base`` (the zero-shot model, the floor) and ``finetuned`` (each task's own model, the
ceiling and the normalisation; a control). The merge coefficient α of every merged arm is picked
from the same grid by the same rule (highest mean normalised accuracy on the validation split,
:func:`icml25.core.tuning.best_on_validation`), then measured on the test split.

Metrics per arm: ``norm_acc`` (mean over tasks of merged / fine-tuned test accuracy; its per-item
scores, ``correct / fine-tuned accuracy of the item's task`` over the ``n_test`` items of every task,
are the items the runner pairs across arms: with equal items per task their mean is ``norm_acc``),
``abs_acc`` (items: correct), ``acc_<task>``, ``sar`` (mean over tasks of the layer-averaged SAR of
the task matrix with the merge, computed as the official ``fig_3a.py`` does:
:func:`.merging.mean_sar`), ``alpha``.

Gates (small scale): ``finetuned_learn_tasks``: the single-task references reach mean test accuracy
``min_ft_acc`` (0.85), else normalised accuracy divides by noise; ``finetuned_converged``: every
single-task model stopped on validation before the step cap (``stopped_early`` = 1; an improvement
of at most ``min_delta`` = 1e-3 nats per evaluation counts as a plateau), the fix for the
under-trained references (24 fixed steps) behind normalised accuracies above 1 in the previous
version.

Criteria, declared before any small number under this design was seen:

- headline ``iso_c_vs_task_arithmetic``: Iso-C's ``norm_acc`` above task arithmetic's, paired over
  seeds and test items, smallest effect ``ta_effect`` = 0.05 (a third of the paper's gap: the
  official ``fig_3a.py`` gives TA 80.7 % vs Iso-C 95.6 % normalised accuracy, ViT-B/16, 8 tasks);
  the same for Iso-CTS, and for both against TIES (the paper's tables put TIES within a few points of
  TA, far below the Iso methods: same declared effect);
- ``iso_c_vs_tsv_m`` / ``iso_cts_vs_tsv_m``: non-inferiority to TSV-M with margin ``tsv_margin`` =
  0.02 normalised accuracy (the paper's lead over TSV-M is of this order, one to two points; the
  claim is "at least as good", and a thin lead cannot be resolved as superiority at this size);
- ``iso_c_sar_vs_task_arithmetic`` / ``iso_cts_sar_vs_task_arithmetic``: SAR above task
  arithmetic's, paired over seeds, smallest effect ``sar_effect`` = 0.02 (declared: Fig. 3a's
  per-task SAR differences between TA and Iso-C are several hundredths and more).

Only the last layers change between the base, fine-tuned and merged models, so the hidden states
entering them are computed once per split (:func:`.tasks.cache_prefix`) and every evaluation and
fine-tuning step runs only those layers (the same computation, several times faster). Tiny (a
random 2-layer Llama on bytes) checks mechanics only.
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
    label_correct,
    make_task,
    trainable_matrix_names,
)

MERGES = ("iso_c", "iso_cts", "task_arithmetic", "ties", "tsv_m", "average")
ARMS = (*MERGES, "finetuned", "base")


_SVD_DTYPES: dict[str, torch.dtype | None] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "auto": None,
}


@dataclass(frozen=True)
class IsoMergingCheckConfig:
    """One claim-check configuration.

    Args:
        model: ``"smollm2-135m-instruct"``, any local Hugging Face causal-LM folder or GGUF that
            :func:`icml25.llm.models.load_causal_lm` accepts, or ``"random-tiny"``.
        tasks: task names from :data:`.tasks.TASK_NAMES`.
        n_train, n_val, n_test: examples per task and split (validation serves early stopping of
            the single-task models and the choice of α).
        n_train_layers: the last this many decoder layers have their 2-D weights fine-tuned.
        steps, batch_size, lr: the fine-tuning loop (AdamW through ``icml25.nn.fit``); ``steps`` is
            the cap of training that stops on validation.
        eval_every, patience, min_delta: validation loss every ``eval_every`` steps; stop after
            ``patience`` evaluations without an improvement larger than ``min_delta`` nats and keep
            the best weights (the tasks reach zero training loss within a few dozen steps, after
            which the validation loss creeps down by round-off; without ``min_delta`` a third of
            the models ran to the step cap).
        alphas: the merge-coefficient grid shared by every merged arm.
        ties_density: TIES's kept fraction (paper default 0.2).
        common_space_fraction: Iso-CTS's f (paper default 0.8).
        svd_dtype: precision of every SVD in the merges and SAR: ``"auto"`` (the library default:
            float64 up to 10⁶ entries, i.e. every matrix here), ``"float64"``, or ``"float32"``
            (the official code's precision; on this check's task matrices LAPACK's float32 SVD
            failed to converge on Iso-CTS's polar factor, so it is not the default).
        ta_effect: smallest effect of interest (normalised accuracy) of the Iso arms over task
            arithmetic and TIES.
        tsv_margin: non-inferiority margin of the Iso arms against TSV-M.
        sar_effect: smallest effect of interest of the SAR criteria.
        min_ft_acc: gate: the single-task models' mean test accuracy.
    """

    model: str = "smollm2-135m-instruct"
    tasks: tuple[str, ...] = TASK_NAMES
    n_train: int = 160
    n_val: int = 64
    n_test: int = 200
    n_train_layers: int = 4
    steps: int = 240
    batch_size: int = 8
    lr: float = 3e-4
    eval_every: int = 8
    patience: int = 3
    min_delta: float = 1e-3
    alphas: tuple[float, ...] = (0.2, 0.4, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0)
    ties_density: float = 0.2
    common_space_fraction: float = 0.8
    svd_dtype: str = "auto"
    ta_effect: float = 0.05
    tsv_margin: float = 0.02
    sar_effect: float = 0.02
    min_ft_acc: float = 0.85

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "n_train",
                "n_val",
                "n_test",
                "n_train_layers",
                "steps",
                "batch_size",
                "eval_every",
                "patience",
            ),
            positive=("lr", "ta_effect", "tsv_margin", "sar_effect"),
            non_negative=("min_delta",),
            unit_interval=("min_ft_acc",),
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
        if self.svd_dtype not in _SVD_DTYPES:
            raise ValueError(
                f"IsoMergingCheckConfig.svd_dtype must be one of {tuple(_SVD_DTYPES)}, got {self.svd_dtype!r}"
            )
        if self.model.startswith("openai:"):
            raise ValueError("IsoMergingCheckConfig.model: merging needs local weights, not an endpoint")


_TA_SOURCE = (
    "a third of the paper's gap: official fig_3a.py gives TA 80.7 % vs Iso-C 95.6 % normalised accuracy "
    "(ViT-B/16, 8 tasks); TIES sits within a few points of TA in Tables 1-3"
)
_TSV_SOURCE = (
    "the paper's lead of the Iso methods over TSV-M is about one to two normalised points (Tables 1-3); "
    "declared as the non-inferiority margin"
)
_SAR_SOURCE = "declared: Fig. 3a's per-task SAR gaps between TA and Iso-C are several hundredths and more"


def _claim(config: IsoMergingCheckConfig) -> Claim:
    crit = []
    for ours in ("iso_c", "iso_cts"):
        for base in ("task_arithmetic", "ties"):
            crit.append(
                Criterion(
                    name=f"{ours}_vs_{base}",
                    arm=ours,
                    metric="norm_acc",
                    op=">",
                    other_arm=base,
                    smallest_effect=config.ta_effect,
                    effect_source=_TA_SOURCE,
                    description=f"{ours} mean normalised test accuracy above {base}'s (paired: seeds, items)",
                )
            )
        crit.append(
            Criterion(
                name=f"{ours}_sar_vs_task_arithmetic",
                arm=ours,
                metric="sar",
                op=">",
                other_arm="task_arithmetic",
                smallest_effect=config.sar_effect,
                effect_source=_SAR_SOURCE,
                description=f"{ours}'s subspace-alignment ratio (official rule) above task arithmetic's",
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
                comparison="non_inferiority",
                smallest_effect=config.tsv_margin,
                effect_source=_TSV_SOURCE,
                description=(
                    f"{ours} mean normalised test accuracy at most {config.tsv_margin:g} below tsv_m's"
                ),
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
    gates = (
        Criterion(
            name="finetuned_learn_tasks",
            arm="finetuned",
            metric="abs_acc",
            op=">=",
            threshold=config.min_ft_acc,
            description=(
                f"the single-task references reach mean test accuracy {config.min_ft_acc:g} "
                "(else normalised accuracy divides by noise)"
            ),
        ),
        Criterion(
            name="finetuned_converged",
            arm="finetuned",
            metric="stopped_early",
            op=">=",
            threshold=1.0,
            description="every single-task model stopped on validation before the step cap (converged)",
        ),
    )
    return Claim(
        statement=(
            "Isotropic merging (Iso-C, Iso-CTS) retains more of the fine-tuned models' accuracy than task "
            "arithmetic and TIES, at least as much as TSV-M, and its merged matrices align better with "
            "every task's matrix."
        ),
        source="Tables 1-3 (normalised accuracy) and Fig. 3 (subspace-alignment ratio)",
        ours="iso_c",
        baselines=("iso_cts", "task_arithmetic", "ties", "tsv_m", "average"),
        references=("base", "finetuned"),
        controls=("finetuned",),
        criteria=tuple(crit),
        gates=gates,
        headline="iso_c_vs_task_arithmetic",
        min_seeds=3,
        setup_notes=(
            "SmolLM2-135M-Instruct fine-tuned on four code-generated classification tasks (label-token "
            "scoring) instead of 8-20 vision tasks on CLIP ViTs; only the last layers' attention/MLP "
            "matrices are trained, each single-task model until its validation loss stops improving; one "
            "alpha grid for all merges, chosen on a validation split; normalised accuracy paired over "
            "seeds and test items."
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
            eval_every=2,
            patience=2,
            alphas=(0.5, 1.0),
        ),
        "small": IsoMergingCheckConfig(),
        "full": IsoMergingCheckConfig(
            n_train=2000,
            n_val=200,
            n_test=500,
            n_train_layers=30,
            steps=2000,
            batch_size=16,
            lr=5e-5,
            eval_every=50,
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

        def correct(split: str, task: str) -> torch.Tensor:
            return label_correct(model, enc[split][task], label_ids[task], start_layer=start)

        def acc(split: str, task: str) -> float:
            return float(correct(split, task).mean())

        def accuracies(split: str) -> dict[str, float]:
            return {t: acc(split, t) for t in config.tasks}

        def test_rows() -> dict[str, torch.Tensor]:
            return {t: correct("test", t) for t in config.tasks}

        metrics: dict[str, dict[str, float]] = {}
        series: dict[str, Any] = {"train_loss": {}, "val_norm_acc": {}}
        ctx.progress("evaluate base", 0, 1)
        base_rows = test_rows()
        base_test = {t: float(r.mean()) for t, r in base_rows.items()}
        finetuned: list[dict[str, torch.Tensor]] = []
        ft_val: dict[str, float] = {}
        ft_rows: dict[str, torch.Tensor] = {}
        stopped: list[float] = []
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
                val=enc["val"][td.name],
                eval_every=config.eval_every,
                patience=config.patience,
                min_delta=config.min_delta,
            )
            finetuned.append(weights)
            series["train_loss"][td.name] = losses
            stopped.append(1.0 if len(losses) < config.steps else 0.0)
            _load(model, weights)
            ft_val[td.name] = acc("val", td.name)
            ft_rows[td.name] = correct("test", td.name)
            _load(model, base)
        ft_test = {t: float(r.mean()) for t, r in ft_rows.items()}
        tvs = [{n: w[n] - base[n] for n in names} for w in finetuned]

        def norm(accs: dict[str, float], ref: dict[str, float]) -> float:
            return statistics.fmean(accs[t] / ref[t] if ref[t] > 0 else math.nan for t in config.tasks)

        def summary(accs: dict[str, float]) -> dict[str, float]:
            out = {"norm_acc": norm(accs, ft_test), "abs_acc": statistics.fmean(accs.values())}
            out.update({f"acc_{t}": a for t, a in accs.items()})
            return out

        items: dict[str, dict[str, Any]] = {}

        def record(arm: str, rows: dict[str, torch.Tensor]) -> dict[str, float]:
            # Per test item: correct, and correct / the fine-tuned accuracy of its task (whose mean
            # over the equal-sized tasks is norm_acc); the same items in the same order in every arm.
            items[arm] = {
                "abs_acc": torch.cat([rows[t] for t in config.tasks]).double().numpy(),
                "norm_acc": torch.cat(
                    [rows[t] / ft_test[t] if ft_test[t] > 0 else rows[t] * math.nan for t in config.tasks]
                )
                .double()
                .numpy(),
            }
            return summary({t: float(r.mean()) for t, r in rows.items()})

        metrics["base"] = record("base", base_rows)
        metrics["finetuned"] = record("finetuned", ft_rows)
        metrics["finetuned"]["loss_ratio"] = statistics.fmean(
            (v[-1] / v[0]) if v and v[0] > 0 else math.nan for v in series["train_loss"].values()
        )
        metrics["finetuned"]["stopped_early"] = statistics.fmean(stopped)
        metrics["finetuned"]["ft_steps"] = statistics.fmean(len(v) for v in series["train_loss"].values())
        ctx.log("fine-tuned test acc " + ", ".join(f"{t} {a:.3f}" for t, a in ft_test.items()))
        ctx.log("base test acc " + ", ".join(f"{t} {a:.3f}" for t, a in base_test.items()))
        svd_dtype = _SVD_DTYPES[config.svd_dtype]
        builders = {
            "iso_c": lambda: merge_iso_c(tvs, svd_dtype=svd_dtype),
            "iso_cts": lambda: merge_iso_cts(
                tvs, common_space_fraction=config.common_space_fraction, svd_dtype=svd_dtype
            ),
            "task_arithmetic": lambda: merge_task_arithmetic(tvs),
            "ties": lambda: merge_ties(tvs, density=config.ties_density),
            "tsv_m": lambda: merge_tsv_m(tvs, svd_dtype=svd_dtype),
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
            m = record(arm, test_rows())
            sars = mean_sar(tvs, delta, svd_dtype=svd_dtype)
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
            f"{len(names)} 2-D weights of the last {k} layers, until validation loss stops improving "
            f"(every {config.eval_every} steps, patience {config.patience}, min_delta {config.min_delta:g}, "
            f"cap {config.steps}) x "
            f"batch {config.batch_size}, lr {config.lr:g}; alpha grid {config.alphas} (average: alpha 1); "
            f"SVDs in {config.svd_dtype}",
        )
        return SeedOutcome(metrics=metrics, series=series, notes=notes, items=items)

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
