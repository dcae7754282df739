"""Claim check for *SlimLLM: Accurate Structured Pruning for Large Language Models* (ICML 2025,
https://arxiv.org/abs/2505.22689).

Claim (Tables 1-2 of the paper, LLaMA-7B at 20 % / 50 %): at equal structured sparsity and without
recovery training, SlimLLM keeps a pruned LLM closer to the dense one than criteria that sum
element-wise scores (magnitude, Wanda, Taylor/LLM-Pruner). Here: the pretrained SmolLM2-135M-Instruct
(30 layers, 9 query / 3 KV heads, d_ff 1536) with 20 % of its decoder-layer parameters physically
removed, scored by held-out loss on English (``pydoc_data.topics``) and Python (stdlib source).

SlimLLM has three parts: its importance criteria (head score + greedy search, FFN feature-space
score), the regression recovery, and the layer-wise ratio. The paper's baselines have none of the
last two, so a win over them may come from the allocation or the recovery rather than from the
criteria. The check therefore offers the baselines SlimLLM's own layer-wise ratio and regression
(``*_lw_reg``: the same per-layer budgets, computed from the same calibration set) and separates
the allocation with ``slimllm_uniform``.

Arms (every arm pruned from the same dense model on the same calibration windows, no tuning: every
method uses the official hyperparameters, alpha = 10, L_p = round(30/32 L), 1 % skip):
    slimllm            the full method (ours)
    taylor_lw_reg      LLM-Pruner's first-order Taylor criterion + SlimLLM's layer ratio + regression
    wanda_lw_reg       Wanda-structured criterion + SlimLLM's layer ratio + regression
    taylor             LLM-Pruner's criterion as published: uniform ratio, no recovery
    slimllm_uniform    SlimLLM's criteria + regression at a uniform ratio (the allocation ablation)
    (``full`` also runs wanda, magnitude, the uniform *_reg arms and the greedy / regression ablations)
References (never baselines to beat):
    dense              the unpruned model: the ceiling
    random_lw_reg      heads and channels drawn at random, with SlimLLM's layer ratio and regression:
                       the no-criterion floor (what allocation + recovery give without any score)

Items: each seed draws its own calibration windows (``n_calib`` x ``calib_len`` tokens from the
calibration splits) and its own held-out windows (``eval_windows`` disjoint windows of
``eval_window`` tokens per corpus, at seeded positions of the held-out splits). The item score is a
window's mean next-token loss in nats (``nll_<s>``; its exponential is perplexity); every arm is
scored on the same windows, so arm differences pair window by window, and the runner's two-stage
bootstrap resamples seeds, then windows.

Gates (declared before any small-scale number was seen; the claim is judged only if both pass):
    pruning_has_room   random pruning raises the loss by at least log 1.25 nats (25 % perplexity) over
                       dense: the budget removes enough that the choice of units matters
    comparator_works   the headline baseline (taylor_lw_reg) closes at least half of random's gap to
                       dense: it is a working criterion, so beating it means something

Criteria (paired over seeds and windows; smallest effect of interest log 1.05 nats, i.e. a 5 % lower
perplexity, declared: the smallest gain we would call better; every criterion has the same one):
    beats_taylor_lw_reg_<s>  HEADLINE: SlimLLM's loss below LLM-Pruner's criterion given the same
                             layer ratio and regression (the criteria compared on equal terms)
    beats_wanda_lw_reg_<s>   the same against Wanda-structured
    beats_taylor_<s>         the paper's own comparison: below LLM-Pruner as published
    layer_ratio_helps_<s>    slimllm below slimllm_uniform (the paper's ablation of the layer ratio)
Tiny runs a random 2-layer Llama on bytes (no model file): its smoke criteria check that the
requested parameter fraction is removed and regression lowers the reconstruction error; the gates
and paired criteria there only exercise the code (a random model has nothing to prune well).

Deviations: perplexity only (no zero-shot tasks, no LoRA recovery); a 135M model instead of 7B;
calibration is ``n_calib`` windows of ``calib_len`` tokens drawn from both corpora (half each)
rather than 32 BookCorpus sequences; evaluation windows are scored without context from before the
window; small runs one sparsity (20 %, the paper's main setting), full runs 20 % and 50 %.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields, check_in_range

from .calibration import calibration_windows, encode_text
from .evaluation import draw_windows, window_nll
from .pruner import PruneConfig, dense_statistics, prune_model

OURS = "slimllm"
HEADLINE_BASELINE = "taylor_lw_reg"
#: every pruning arm: the PruneConfig it runs (the sparsity is set per run)
ARM_CONFIGS: dict[str, PruneConfig] = {
    "slimllm": PruneConfig(method="slimllm"),
    "taylor_lw_reg": PruneConfig(method="taylor", layerwise=True, regression=True),
    "wanda_lw_reg": PruneConfig(method="wanda", layerwise=True, regression=True),
    "taylor": PruneConfig(method="taylor", layerwise=False, regression=False),
    "slimllm_uniform": PruneConfig(method="slimllm", layerwise=False),
    "wanda": PruneConfig(method="wanda", layerwise=False, regression=False),
    "magnitude": PruneConfig(method="magnitude", layerwise=False, regression=False),
    "taylor_reg": PruneConfig(method="taylor", layerwise=False, regression=True),
    "wanda_reg": PruneConfig(method="wanda", layerwise=False, regression=True),
    "magnitude_reg": PruneConfig(method="magnitude", layerwise=False, regression=True),
    "slimllm_no_greedy": PruneConfig(method="slimllm", greedy=False),
    "slimllm_no_regression": PruneConfig(method="slimllm", regression=False),
    "random_lw_reg": PruneConfig(method="random", layerwise=True, regression=True),
}
SMALL_ARMS = ("slimllm", "taylor_lw_reg", "wanda_lw_reg", "taylor", "slimllm_uniform", "random_lw_reg")
REFERENCES = ("dense", "random_lw_reg")
BASELINES = tuple(a for a in ARM_CONFIGS if a != OURS and a not in REFERENCES)
CORPUS_KEYS = {"english": "en", "python": "code"}
#: smallest effect of interest on the per-window loss: a 5 % lower perplexity
LOG_EFFECT = math.log(1.05)
EFFECT_SOURCE = (
    "declared: a 5 % lower perplexity (log 1.05 nats per token), the smallest gain we would call better"
)
#: gate: random pruning must raise perplexity by at least 25 % (log 1.25 nats)
ROOM = math.log(1.25)
#: gate: the headline baseline closes at least this fraction of random pruning's gap to dense
COMPARATOR_CLOSES = 0.5


@dataclass(frozen=True)
class SlimLLMCheckConfig:
    """One claim-check configuration.

    Args:
        model: ``"smollm2-135m-instruct"`` (or any path ``load_causal_lm`` accepts), or
            ``"random-tiny"``: a random 2-layer Llama on byte tokens (no model file).
        sparsities: fractions of decoder-layer parameters removed.
        arms: the pruning arms run (names of ``ARM_CONFIGS``; must include slimllm, the headline
            baseline and the random reference); the criteria follow the arms present.
        n_calib, calib_len: calibration windows and their length in tokens (paper: 32 x 128).
        eval_window: tokens per held-out window (the loss of each window is one item).
        eval_windows: windows per held-out corpus, drawn per seed (``0`` = every disjoint window).
        eval_batch: windows per forward pass.
        throughput_batch, throughput_reps: forward batch [B, eval_window] timed, and repetitions.
        code_chars: characters of standard-library source read for the Python corpus.
    """

    model: str = "smollm2-135m-instruct"
    sparsities: tuple[float, ...] = (0.2,)
    arms: tuple[str, ...] = SMALL_ARMS
    n_calib: int = 8
    calib_len: int = 128
    eval_window: int = 128
    eval_windows: int = 12
    eval_batch: int = 8
    throughput_batch: int = 2
    throughput_reps: int = 1
    code_chars: int = 2_000_000

    def __post_init__(self) -> None:
        if self.model.startswith("openai:"):
            raise ValueError(
                f"SlimLLMCheckConfig.model: {self.model!r} is an endpoint, but pruning needs the weights; "
                "pass a local Hugging Face folder, a .gguf file or a pruned folder"
            )
        if not self.sparsities:
            raise ValueError("SlimLLMCheckConfig.sparsities must be a non-empty tuple")
        for i, s in enumerate(self.sparsities):
            check_in_range(f"SlimLLMCheckConfig.sparsities[{i}]", s, 0.0, 1.0, low_open=True, high_open=True)
        if len({_pct(s) for s in self.sparsities}) != len(self.sparsities):
            raise ValueError(
                f"SlimLLMCheckConfig.sparsities must differ in whole percent (metric names use them), "
                f"got {self.sparsities}"
            )
        unknown = [a for a in self.arms if a not in ARM_CONFIGS]
        if unknown:
            raise ValueError(f"SlimLLMCheckConfig.arms: unknown arms {unknown}; known: {tuple(ARM_CONFIGS)}")
        needed = [a for a in (OURS, HEADLINE_BASELINE, "random_lw_reg") if a not in self.arms]
        if needed:
            raise ValueError(f"SlimLLMCheckConfig.arms must include {needed} (the headline and the gates)")
        check_fields(
            self,
            positive_int=("n_calib", "calib_len", "eval_window", "eval_batch", "throughput_batch"),
            non_negative_int=("eval_windows", "throughput_reps"),
        )
        if self.n_calib < 2:
            raise ValueError(
                f"SlimLLMCheckConfig.n_calib must be at least 2 (one window per corpus), got {self.n_calib}"
            )
        if self.eval_window < 2:
            raise ValueError(f"SlimLLMCheckConfig.eval_window must be at least 2, got {self.eval_window}")


def _pct(s: float) -> str:
    return str(round(100 * s))


def _paired(name: str, other: str, s: str, what: str, *, scales: tuple[str, ...] | None = None) -> Criterion:
    kw: dict[str, Any] = {} if scales is None else {"scales": scales}
    return Criterion(
        name=name,
        arm=OURS,
        metric=f"nll_{s}",
        op="<",
        other_arm=other,
        smallest_effect=LOG_EFFECT,
        effect_source=EFFECT_SOURCE,
        description=f"{s}% sparsity: SlimLLM's held-out loss below {what}, paired over seeds and windows",
        **kw,
    )


#: (criterion name stem, other arm, what it says) for the paired criteria, in report order
_COMPARISONS = (
    ("beats_taylor_lw_reg", "taylor_lw_reg", "Taylor's with the same layer ratio and regression"),
    ("beats_wanda_lw_reg", "wanda_lw_reg", "Wanda's with the same layer ratio and regression"),
    ("beats_taylor", "taylor", "Taylor's (LLM-Pruner as published: uniform ratio, no recovery)"),
    ("layer_ratio_helps", "slimllm_uniform", "SlimLLM's own at a uniform ratio (layer-ratio ablation)"),
    ("beats_wanda", "wanda", "Wanda's (uniform ratio, no recovery)"),
    ("beats_magnitude", "magnitude", "magnitude's (uniform ratio, no recovery)"),
    ("beats_taylor_reg", "taylor_reg", "Taylor's with regression at a uniform ratio"),
    ("beats_wanda_reg", "wanda_reg", "Wanda's with regression at a uniform ratio"),
    ("beats_magnitude_reg", "magnitude_reg", "magnitude's with regression at a uniform ratio"),
    ("greedy_helps", "slimllm_no_greedy", "SlimLLM's without the greedy head search"),
    ("regression_helps", "slimllm_no_regression", "SlimLLM's without the regression recovery"),
)


def _criteria(config: SlimLLMCheckConfig) -> tuple[Criterion, ...]:
    """The paired criteria for the arms and sparsities ``config`` runs, then the tiny smoke criteria."""
    out = []
    for s in (_pct(v) for v in config.sparsities):
        for stem, other, what in _COMPARISONS:
            if other in config.arms:
                out.append(_paired(f"{stem}_{s}", other, s, what))
    s = _pct(config.sparsities[0])
    out.append(
        Criterion(
            name="tiny_budget",
            arm=OURS,
            metric=f"sparsity_{s}",
            op=">=",
            threshold=round(config.sparsities[0] - 0.03, 6),  # the budget up to whole channels per layer
            scales=("tiny",),
            description=f"smoke: about {s}% of decoder parameters are removed",
        )
    )
    out.append(
        Criterion(
            name="tiny_regression_helps",
            arm=OURS,
            metric=f"reg_mse_ratio_{s}",
            op="<=",
            threshold=1.0,
            scales=("tiny",),
            description="smoke: regression does not raise the FFN reconstruction error",
        )
    )
    return tuple(out)


def _gates(config: SlimLLMCheckConfig) -> tuple[Criterion, ...]:
    s = _pct(config.sparsities[0])
    return (
        Criterion(
            name="pruning_has_room",
            arm="random_lw_reg",
            metric=f"gap_to_dense_{s}",
            op=">=",
            threshold=round(ROOM, 6),
            scales=("small", "medium", "full"),
            description=(
                f"{s}% sparsity: random pruning raises the held-out loss at least log 1.25 nats over the "
                "dense model (seed mean): the budget removes enough that the choice of units matters"
            ),
        ),
        Criterion(
            name="comparator_works",
            arm=HEADLINE_BASELINE,
            metric=f"gap_closed_{s}",
            op=">=",
            threshold=COMPARATOR_CLOSES,
            scales=("small", "medium", "full"),
            description=(
                f"{s}% sparsity: the headline baseline closes at least half of random pruning's loss gap "
                "to dense (seed mean): it is a working criterion, so beating it means something"
            ),
        ),
    )


def _claim(config: SlimLLMCheckConfig) -> Claim:
    return dataclasses.replace(
        CLAIM_TEMPLATE,
        baselines=tuple(a for a in ARM_CONFIGS if a in config.arms and a != OURS and a not in REFERENCES),
        criteria=_criteria(config),
        gates=_gates(config),
        headline=f"beats_taylor_lw_reg_{_pct(config.sparsities[0])}",
    )


CLAIM_TEMPLATE = Claim(
    statement=(
        "At equal structured sparsity without recovery training, SlimLLM's pruned model has lower "
        "held-out loss than LLM-Pruner's Taylor and Wanda-structured pruning, also when those criteria "
        "get SlimLLM's own layer-wise ratio and regression recovery."
    ),
    source="Tables 1-2 (LLaMA-7B, 20% / 50%) and the component ablations",
    ours=OURS,
    baselines=BASELINES,
    references=REFERENCES,
    criteria=_criteria(SlimLLMCheckConfig()),
    gates=_gates(SlimLLMCheckConfig()),
    headline="beats_taylor_lw_reg_20",
    min_seeds=3,
    timed_metrics=("throughput_ratio_*",),
    setup_notes=(
        "SmolLM2-135M-Instruct (dequantised Q4_1 GGUF), 20% of decoder-layer parameters removed, "
        "held-out loss per 128-token window on English (pydoc topics) and Python (stdlib), windows and "
        "calibration drawn per seed; perplexity only, no LoRA, no zero-shot tasks."
    ),
)
CLAIM = _claim(SlimLLMCheckConfig())  # the small preset's claim; claim_for builds it for any config


def _tiny_model() -> tuple[Any, None]:
    from icml25.llm.models import tiny_random_llama

    return tiny_random_llama(vocab_size=256, intermediate_size=96, init_std=0.2), None


def _eval_windows(
    heldout: dict[str, torch.Tensor], config: SlimLLMCheckConfig, seed: int
) -> dict[str, torch.Tensor]:
    """Per corpus: ``[n, eval_window]`` held-out windows, drawn with ``seed`` (all of them if 0)."""
    out = {}
    for key, ids in heldout.items():
        n = config.eval_windows or ids.numel() // config.eval_window
        out[key] = draw_windows(ids, config.eval_window, n, seed=seed)
    return out


@torch.no_grad()
def _throughput(model: Any, x: torch.Tensor) -> float:
    model(input_ids=x[:, :16])  # warm-up
    t0 = time.perf_counter()
    model(input_ids=x)
    return x.numel() / max(time.perf_counter() - t0, 1e-9)


@torch.no_grad()
def _sample(model: Any, tokenizer: Any, prompt: str = "The Python interpreter", n: int = 12) -> str:
    """A short greedy continuation: the pruned model still generates text."""
    if tokenizer is None:
        ids = torch.tensor([list(prompt.encode("utf-8"))])
    else:
        ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    out = model.generate(ids, max_new_tokens=n, do_sample=False, pad_token_id=0)
    new = out[0, ids.shape[1] :].tolist()
    return (
        bytes(t % 256 for t in new).decode("utf-8", "replace") if tokenizer is None else tokenizer.decode(new)
    )


class SlimLLMCheck(ClaimCheck[SlimLLMCheckConfig]):
    slug = "slimllm"
    claim = CLAIM
    presets = {
        "tiny": SlimLLMCheckConfig(
            model="random-tiny",
            n_calib=4,
            calib_len=32,
            eval_window=64,
            eval_windows=3,
            code_chars=1_000_000,
        ),
        "small": SlimLLMCheckConfig(),
        "full": SlimLLMCheckConfig(
            sparsities=(0.2, 0.5),
            arms=tuple(ARM_CONFIGS),
            n_calib=32,
            calib_len=128,
            eval_window=256,
            eval_windows=0,
            throughput_reps=3,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def claim_for(self, config: SlimLLMCheckConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: SlimLLMCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        from icml25.data.corpora import english_corpus, python_corpus

        if config.model == "random-tiny":
            model, tokenizer = _tiny_model()
        else:
            from icml25.llm.models import load_causal_lm

            ctx.progress("load model", 0, 1)
            model, tokenizer = load_causal_lm(config.model)
        corpora = {"english": english_corpus(), "python": python_corpus(max_chars=config.code_chars)}
        heldout = {CORPUS_KEYS[k]: encode_text(c.heldout, tokenizer, 10**6) for k, c in corpora.items()}
        windows = _eval_windows(heldout, config, seed)
        n_items = {k: int(w.shape[0]) for k, w in windows.items()}
        all_windows = torch.cat(list(windows.values()))  # items: English windows, then Python
        calib = calibration_windows(
            [c.calibration for c in corpora.values()], tokenizer, config.n_calib, config.calib_len, seed=seed
        )
        arms = [a for a in ARM_CONFIGS if a in config.arms]
        metrics: dict[str, dict[str, float]] = {a: {} for a in ("dense", *arms)}
        items: dict[str, dict[str, np.ndarray]] = {a: {} for a in ("dense", *arms)}
        series: dict[str, Any] = {
            "corpora": {k: c.record() for k, c in corpora.items()},
            "arms": {},
            "items": n_items,
        }

        ctx.progress("dense statistics", 0, 1)
        needs_taylor = any(ARM_CONFIGS[a].method == "taylor" for a in arms)
        stats = dense_statistics(model, calib, taylor=needs_taylor)
        series["cos_sims"] = stats.cos_sims.tolist()
        dense_nll = window_nll(model, all_windows, batch_size=config.eval_batch).numpy()
        x_tp = heldout["en"][: config.throughput_batch * config.eval_window]
        x_tp = x_tp[: (x_tp.numel() // config.eval_window) * config.eval_window].view(-1, config.eval_window)

        def record(arm: str, s: str, nll: np.ndarray) -> None:
            items[arm][f"nll_{s}"] = nll
            start = 0
            for key, n in n_items.items():
                metrics[arm][f"{key}_ppl_{s}"] = float(np.exp(nll[start : start + n].mean()))
                start += n

        total = len(arms) * len(config.sparsities)
        done = 0
        for sparsity in config.sparsities:
            s = _pct(sparsity)
            record("dense", s, dense_nll)
            metrics["dense"][f"sparsity_{s}"] = 0.0
            for arm in arms:
                ctx.progress("prune + evaluate", done, total)
                cfg = dataclasses.replace(ARM_CONFIGS[arm], sparsity=sparsity, seed=seed)
                pruned, report = prune_model(model, calib, cfg, stats=stats)
                record(arm, s, window_nll(pruned, all_windows, batch_size=config.eval_batch).numpy())
                metrics[arm][f"sparsity_{s}"] = report.decoder_sparsity
                before, after = report.ffn_mse_before_regression, report.ffn_mse_after_regression
                if cfg.use_regression and before:
                    metrics[arm][f"reg_mse_ratio_{s}"] = statistics.fmean(
                        a / b if b > 0 else 1.0 for a, b in zip(after, before, strict=True)
                    )
                if arm == OURS and config.throughput_reps:
                    dense_tp, pruned_tp = [], []
                    for _ in range(config.throughput_reps):  # interleaved, so load changes hit both alike
                        dense_tp.append(_throughput(model, x_tp))
                        pruned_tp.append(_throughput(pruned, x_tp))
                    metrics[arm][f"throughput_ratio_{s}"] = statistics.median(pruned_tp) / statistics.median(
                        dense_tp
                    )
                if arm == OURS:
                    series[f"sample_{s}"] = _sample(pruned, tokenizer)
                ctx.log(
                    f"{arm} at {s}%: mean loss {items[arm][f'nll_{s}'].mean():.4f} nats (dense "
                    f"{dense_nll.mean():.4f}), "
                    + ", ".join(f"{k} {v:.4g}" for k, v in metrics[arm].items() if k.endswith(f"_{s}"))
                )
                series["arms"][f"{arm}_{s}"] = {
                    "layer_ratios": report.layer_ratios,
                    "heads_kept": report.heads_kept,
                    "channels_kept": report.channels_kept,
                    "seconds": report.seconds,
                }
                del pruned  # freed by reference counting (a full gc.collect costs ~0.7 s per arm)
                done += 1
            # gate metrics, per seed: random pruning's room and the share of it the headline baseline closes
            gap_random = float((items["random_lw_reg"][f"nll_{s}"] - dense_nll).mean())
            gap_base = float((items[HEADLINE_BASELINE][f"nll_{s}"] - dense_nll).mean())
            metrics["random_lw_reg"][f"gap_to_dense_{s}"] = gap_random
            metrics[HEADLINE_BASELINE][f"gap_closed_{s}"] = (
                1.0 - gap_base / gap_random if gap_random > 0 else 0.0
            )
        ctx.progress("prune + evaluate", total, total)
        notes = (
            f"model {config.model}; calibration {config.n_calib} x {config.calib_len} tokens; "
            f"{', '.join(f'{n} {k}' for k, n in n_items.items())} held-out windows of {config.eval_window} "
            f"tokens drawn with seed {seed}; corpus hashes "
            + ", ".join(f"{k}={c.content_hash[:12]}" for k, c in corpora.items()),
        )
        return SeedOutcome(metrics=metrics, series=series, notes=notes, items=items)

    def make_figures(
        self, config: SlimLLMCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import arm_color, new_figure

        arms = [a for a in ARM_CONFIGS if a in config.arms]
        fig, axes = new_figure(ncols=2, width=4.6, height=3.4)
        for ax, corpus in zip(axes, ("en", "code"), strict=True):
            for j, s in enumerate(_pct(v) for v in config.sparsities):
                for i, arm in enumerate(arms):
                    vals = [o.metrics[arm].get(f"{corpus}_ppl_{s}", math.nan) for o in outcomes]
                    ax.bar(
                        j * (len(arms) + 1) + i,
                        math.exp(statistics.fmean(math.log(v) for v in vals)),  # geometric mean over seeds
                        color=arm_color(arm, CLAIM.ours, CLAIM.baselines),
                        hatch="xx" if arm in REFERENCES else ("//" if arm.startswith(OURS + "_") else None),
                        edgecolor="white",
                        label=arm if j == 0 else None,
                    )
            s0 = _pct(config.sparsities[0])
            dense = statistics.fmean(o.metrics["dense"].get(f"{corpus}_ppl_{s0}", math.nan) for o in outcomes)
            ax.axhline(dense, color="k", ls="--", lw=1, label="dense")
            ax.set_yscale("log")
            ax.set_xticks([j * (len(arms) + 1) + len(arms) / 2 for j in range(len(config.sparsities))])
            ax.set_xticklabels([f"{_pct(v)}% removed" for v in config.sparsities])
            ax.set_ylabel(f"held-out perplexity ({'English' if corpus == 'en' else 'Python'})")
        axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
        ctx.save_figure(
            fig,
            "perplexity",
            "Held-out perplexity per pruning method at equal sparsity (log scale, geometric seed mean).",
        )

        ratios = (
            outcomes[0].series["arms"].get(f"slimllm_{_pct(config.sparsities[-1])}", {}).get("layer_ratios")
        )
        if ratios:
            fig, ax = new_figure(width=5.0, height=3.0)
            ax.plot(
                range(len(ratios)),
                ratios,
                marker="o",
                color=arm_color("slimllm", CLAIM.ours, CLAIM.baselines),
            )
            ax.set_xlabel("decoder layer")
            ax.set_ylabel("pruning ratio (fraction of layer parameters)")
            ctx.save_figure(
                fig,
                "layer_ratios",
                "SlimLLM layer-wise pruning ratios at the largest sparsity (the *_lw_reg arms share them).",
            )


CHECK = SlimLLMCheck()
