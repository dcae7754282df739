"""Claim check for *Robust Learning of Diverse Code Edits* (Aggarwal et al., ICML 2025,
arXiv 2503.03656): SeleKT against full SFT, LoRA and the base model, on the embedded SmolLM2.

Claim (Tables 2-4 of the paper, Qwen2.5-Coder 3B-32B): fine-tuning on code-edit data with SeleKT
improves editing at least as much as SFT while keeping general abilities (HumanEval+, MBPP+, MMLU,
GSM8K) close to the base model, where SFT and LoRA drift further. Here: SmolLM2-135M-Instruct
fine-tuned on verified edits of small standard-library functions (:mod:`.data`); every arm trains
on the same samples, for the same steps, with the same learning-rate grid, the rate picked by the
same rule (lowest completion loss on a validation split of held-out *functions*,
:func:`icml25.core.tuning.best_on_validation`).

Metrics per arm: ``edit_success`` (greedy edit of held-out functions passes their tests in the
sandbox; renames must also use the requested names), ``humaneval`` (pass@1, greedy, on the fixed
subset of HumanEval problems with the shortest canonical solutions, :mod:`icml25.llm.code_eval`),
``en_bpb`` / ``code_bpb`` (bits per byte on held-out English and Python, :mod:`icml25.llm.perplexity`),
``bpb_drift`` (mean |Δ bpb| from base over the two corpora), ``he_drop`` (base pass@1 minus the arm's),
``edit_gain`` (edit success minus base), ``changed`` (fraction of weights that differ from base).

Criteria, declared before any small number was seen: SeleKT's edit gain >= SFT's; SeleKT's bpb
drift below SFT's and below LoRA's; SeleKT's HumanEval drop <= SFT's and <= LoRA's. Tiny (random
2-layer Llama on bytes, no model file) checks mechanics only: SeleKT's changed fraction <= α and
the training loss falls.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields, check_in_range

from .data import (
    DEFAULT_MODULES,
    CodeEditSample,
    build_edit_dataset,
    edit_messages,
    edit_success_many,
    edit_target,
    make_seed_functions,
)
from .finetune import ChatCodec, FinetuneConfig, completion_loss, encode_pairs, finetune

TRAINED = ("selekt", "sft", "lora")


@dataclass(frozen=True)
class SeleKTCheckConfig:
    """One claim-check configuration.

    Args:
        model: ``"smollm2-135m-instruct"`` or any path :func:`icml25.llm.models.load_causal_lm`
            accepts, or ``"random-tiny"`` (a random 2-layer Llama on bytes).
        alpha, period_steps, scope: SeleKT (paper: α = 0.05, one projection per epoch, per tensor).
        steps, batch_size, lrs, weight_decay, warmup_steps: the shared fine-tuning loop and lr grid.
        lora_r, lora_alpha: the LoRA baseline (paper: 64, 16).
        edits_per_function: edit samples drawn per seed function.
        n_val_functions, n_test_functions: seed functions held out for lr choice and for the test.
        max_lines: longest seed function (lines).
        instructions: ``"template"`` or ``"llm"`` (the loaded model writes the instructions).
        max_len: longest training sequence (tokens).
        gen_slack: new tokens allowed beyond the reference edit's length.
        gen_cap: most new tokens per edit (0 = no cap).
        modules: standard-library modules scanned for seed functions.
        n_humaneval, he_tokens: HumanEval subset size and completion length.
        ppl_window, ppl_windows, code_chars: perplexity windows (tokens), windows per corpus,
            characters of the Python corpus read.
    """

    model: str = "smollm2-135m-instruct"
    alpha: float = 0.05
    period_steps: int = 4
    scope: str = "per_tensor"
    steps: int = 12
    batch_size: int = 1
    lrs: tuple[float, ...] = (5e-5, 2e-4)
    weight_decay: float = 0.1
    warmup_steps: int = 1
    lora_r: int = 64
    lora_alpha: int = 16
    edits_per_function: int = 2
    n_val_functions: int = 3
    n_test_functions: int = 5
    max_lines: int = 12
    instructions: str = "template"
    max_len: int = 320
    gen_slack: int = 8
    gen_cap: int = 0
    modules: tuple[str, ...] = DEFAULT_MODULES
    n_humaneval: int = 4
    he_tokens: int = 64
    ppl_window: int = 256
    ppl_windows: int = 3
    code_chars: int = 2_000_000

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "period_steps",
                "steps",
                "batch_size",
                "lora_r",
                "lora_alpha",
                "edits_per_function",
                "n_val_functions",
                "n_test_functions",
                "max_lines",
                "max_len",
                "he_tokens",
                "ppl_window",
                "ppl_windows",
                "code_chars",
            ),
            non_negative_int=("warmup_steps", "gen_slack", "gen_cap", "n_humaneval"),
            non_negative=("weight_decay",),
        )
        check_in_range("SeleKTCheckConfig.alpha", self.alpha, 0.0, 1.0, low_open=True)
        if not self.lrs or any(not (isinstance(v, float) and v > 0 and math.isfinite(v)) for v in self.lrs):
            raise ValueError(
                f"SeleKTCheckConfig.lrs must be a non-empty tuple of positive floats, got {self.lrs}"
            )
        if self.instructions not in ("template", "llm"):
            raise ValueError(
                f"SeleKTCheckConfig.instructions must be template or llm, got {self.instructions!r}"
            )
        if self.scope not in ("per_tensor", "global"):
            raise ValueError(f"SeleKTCheckConfig.scope must be per_tensor or global, got {self.scope!r}")
        if self.model.startswith("openai:"):
            raise ValueError("SeleKTCheckConfig.model: fine-tuning needs local weights, not an endpoint")


CRITERIA = (
    Criterion(
        name="edit_gain_vs_sft",
        arm="selekt",
        metric="edit_gain",
        op=">=",
        other_arm="sft",
        description="held-out edit success gain over base at least SFT's",
    ),
    Criterion(
        name="bpb_drift_vs_sft",
        arm="selekt",
        metric="bpb_drift",
        op="<",
        other_arm="sft",
        description="bits/byte on held-out English+Python stays closer to base than SFT's",
    ),
    Criterion(
        name="bpb_drift_vs_lora",
        arm="selekt",
        metric="bpb_drift",
        op="<",
        other_arm="lora",
        description="bits/byte stays closer to base than LoRA's",
    ),
    Criterion(
        name="he_drop_vs_sft",
        arm="selekt",
        metric="he_drop",
        op="<=",
        other_arm="sft",
        description="HumanEval pass@1 drop from base no larger than SFT's",
    ),
    Criterion(
        name="he_drop_vs_lora",
        arm="selekt",
        metric="he_drop",
        op="<=",
        other_arm="lora",
        description="HumanEval pass@1 drop from base no larger than LoRA's",
    ),
    Criterion(
        name="tiny_sparsity",
        arm="selekt",
        metric="changed_minus_alpha",
        op="<=",
        threshold=0.0,
        scales=("tiny",),
        description="smoke: SeleKT's changed fraction of weights is at most alpha",
    ),
    Criterion(
        name="tiny_loss_falls",
        arm="sft",
        metric="loss_ratio",
        op="<",
        threshold=1.0,
        scales=("tiny",),
        description="smoke: SFT's last training loss is below its first",
    ),
)

CLAIM = Claim(
    statement=(
        "Fine-tuning on code-edit data with SeleKT gains at least as much edit accuracy as full SFT while "
        "general abilities (HumanEval, held-out perplexity) stay closer to the base model than with SFT "
        "or LoRA."
    ),
    source="Tables 2-4 and Section 5 (NextCoder vs SFT and LoRA on Qwen2.5-Coder)",
    ours="selekt",
    baselines=("sft", "lora", "base"),
    criteria=CRITERIA,
    headline="edit_gain_vs_sft",
    setup_notes=(
        "SmolLM2-135M-Instruct instead of Qwen2.5-Coder 7B; a few dozen sandbox-verified edits of small "
        "standard-library functions with template instructions instead of 129K GPT-4o samples; a dozen "
        "steps with a projection every few steps instead of 3 epochs with one per epoch; HumanEval on a "
        "small fixed subset and held-out bits/byte instead of MMLU/GSM8K/HumanEval+/MBPP+."
    ),
)


def _tiny_model() -> Any:
    from icml25.llm.models import tiny_random_llama

    return tiny_random_llama(
        max_position_embeddings=1024, eos_token_id=256, pad_token_id=256, bos_token_id=256
    )


@torch.no_grad()
def _generate(model: Any, codec: ChatCodec, prompt_ids: list[int], max_new: int, stop: str | None) -> str:
    ids = torch.tensor([prompt_ids])
    kwargs: dict[str, Any] = {}
    if stop is not None and codec.tokenizer is not None:
        kwargs = {"stop_strings": [stop], "tokenizer": codec.tokenizer}
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=max_new,
        do_sample=False,
        pad_token_id=codec.pad_id,
        eos_token_id=codec.eos_id,
        **kwargs,
    )
    return codec.decode(out[0, ids.shape[1] :].tolist())


def _edit_success(
    model: Any, codec: ChatCodec, samples: Sequence[CodeEditSample], slack: int, cap: int
) -> float:
    replies = []
    for s in samples:
        prompt = codec.encode(codec.prompt_text(edit_messages(s)))
        budget = len(codec.encode(edit_target(s))) + slack
        budget = min(budget, cap) if cap else budget
        replies.append(_generate(model, codec, prompt, budget, "\n```\n"))
    return statistics.fmean(edit_success_many(samples, replies))


def _humaneval(model: Any, codec: ChatCodec, problems: Sequence[Any], tokens: int) -> float:
    from icml25.llm.code_eval import evaluate_functional_correctness

    if not problems:
        return math.nan
    completions = {}
    for p in problems:
        text = _generate(model, codec, codec.encode(p.prompt), tokens, None)
        for cut in ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#", "\n```"):
            text = text.split(cut)[0]
        completions[p.task_id] = [text]
    return evaluate_functional_correctness(problems, completions, ks=(1,)).pass_at[1]


def _bpb(model: Any, codec: ChatCodec, texts: dict[str, str], config: SeleKTCheckConfig) -> dict[str, float]:
    from icml25.llm.perplexity import perplexity

    out = {}
    for key, text in texts.items():
        if codec.tokenizer is None:
            ids = torch.tensor(codec.encode(text), dtype=torch.long)
            res = perplexity(
                model, ids, window=config.ppl_window, max_windows=config.ppl_windows, batch_size=2
            )
            out[f"{key}_bpb"] = res.bits_per_token  # byte tokens: bits/token = bits/byte
        else:
            res = perplexity(
                model,
                text,
                tokenizer=codec.tokenizer,
                window=config.ppl_window,
                max_windows=config.ppl_windows,
                batch_size=2,
            )
            out[f"{key}_bpb"] = res.bits_per_byte
    return out


@torch.no_grad()
def _val_loss(model: Any, data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> float:
    model.eval()
    ids, labels, attn = data
    losses = [
        float(completion_loss(model, (ids[i : i + 1], labels[i : i + 1], attn[i : i + 1])))
        for i in range(ids.shape[0])
    ]
    return statistics.fmean(losses)


class SeleKTCheck(ClaimCheck[SeleKTCheckConfig]):
    slug = "selekt"
    claim = CLAIM
    presets = {
        "tiny": SeleKTCheckConfig(
            model="random-tiny",
            alpha=0.2,
            period_steps=2,
            steps=6,
            batch_size=2,
            lrs=(3e-3,),
            lora_r=4,
            lora_alpha=8,
            edits_per_function=1,
            n_val_functions=2,
            n_test_functions=2,
            max_lines=6,
            max_len=384,
            gen_slack=0,
            gen_cap=16,
            modules=("calendar", "colorsys", "difflib", "_pydecimal", "ipaddress", "html", "string"),
            n_humaneval=1,
            he_tokens=8,
            ppl_window=64,
            ppl_windows=1,
            code_chars=2_000_000,
        ),
        "small": SeleKTCheckConfig(),
        "full": SeleKTCheckConfig(
            lrs=(1e-5, 3e-5, 1e-4),
            steps=300,
            batch_size=4,
            period_steps=100,
            warmup_steps=30,
            edits_per_function=6,
            max_lines=20,
            instructions="llm",
            max_len=768,
            n_humaneval=164,
            he_tokens=256,
            ppl_windows=0 + 20,
            code_chars=2_000_000,
            n_test_functions=10,
            n_val_functions=5,
        ),
    }
    default_seeds = {"tiny": 1, "small": 1, "full": 3}

    def run_seed(self, config: SeleKTCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        from icml25.data.corpora import english_corpus, python_corpus

        torch.manual_seed(seed)
        if config.model == "random-tiny":
            model, codec = _tiny_model(), ChatCodec(None)
        else:
            from icml25.llm.models import load_causal_lm

            ctx.progress("load model", 0, 1)
            model, tokenizer = load_causal_lm(config.model)
            codec = ChatCodec(tokenizer)
        ctx.progress("build edit data", 0, 1)
        seeds = make_seed_functions(config.modules, max_lines=config.max_lines, seed=seed)
        need = config.n_val_functions + config.n_test_functions + 2
        if len(seeds) < need:
            raise ValueError(f"only {len(seeds)} seed functions with tests; need {need} (raise max_lines)")
        order = list(range(len(seeds)))
        random.Random(seed).shuffle(order)
        test_fns = [seeds[i] for i in order[: config.n_test_functions]]
        val_fns = [
            seeds[i]
            for i in order[config.n_test_functions : config.n_test_functions + config.n_val_functions]
        ]
        train_fns = [seeds[i] for i in order[config.n_test_functions + config.n_val_functions :]]
        chat = None
        if config.instructions == "llm":
            from icml25.llm.local import LocalChatModel

            chat = LocalChatModel(model, codec.tokenizer, name=f"local:{config.model}")
        splits = {
            name: build_edit_dataset(
                fns, edits_per_function=config.edits_per_function, chat=chat, seed=seed + k
            )
            for k, (name, fns) in enumerate((("train", train_fns), ("val", val_fns), ("test", test_fns)))
        }
        for name, samples in splits.items():
            if not samples:
                raise ValueError(f"the {name} split has no verified edit samples")
        encoded = {
            name: encode_pairs(
                codec, [edit_messages(s) for s in samples], [edit_target(s) for s in samples], config.max_len
            )
            for name, samples in splits.items()
        }
        ctx.log(
            f"{len(seeds)} seed functions; edits train/val/test = "
            + "/".join(str(len(v)) for v in splits.values())
            + f"; instructions: {config.instructions}"
        )
        texts = {
            "en": english_corpus().heldout,
            "code": python_corpus(max_chars=config.code_chars).heldout,
        }
        problems: list[Any] = []
        if config.n_humaneval:
            from icml25.data.humaneval import load_humaneval

            problems = sorted(load_humaneval(), key=lambda p: (len(p.canonical_solution), p.task_id))
            problems = problems[: config.n_humaneval]

        def evaluate(m: Any) -> dict[str, float]:
            out = {"edit_success": _edit_success(m, codec, splits["test"], config.gen_slack, config.gen_cap)}
            out["humaneval"] = _humaneval(m, codec, problems, config.he_tokens)
            out.update(_bpb(m, codec, texts, config))
            return out

        metrics: dict[str, dict[str, float]] = {}
        series: dict[str, Any] = {"lr_val_loss": {}, "train_loss": {}}
        ctx.progress("evaluate base", 0, 1)
        metrics["base"] = evaluate(model)
        metrics["base"]["changed"] = 0.0
        metrics["base"]["val_loss"] = _val_loss(model, encoded["val"])
        total = len(TRAINED) * len(config.lrs)
        done = 0
        for arm in TRAINED:
            runs = {}
            for lr in config.lrs:
                ctx.progress(f"fine-tune {arm}", done, total)
                ft_cfg = FinetuneConfig(
                    method=arm,  # type: ignore[arg-type]
                    steps=config.steps,
                    batch_size=config.batch_size,
                    lr=lr,
                    warmup_steps=config.warmup_steps,
                    weight_decay=config.weight_decay,
                    alpha=config.alpha,
                    period_steps=config.period_steps,
                    scope=config.scope,  # type: ignore[arg-type]
                    lora_r=config.lora_r,
                    lora_alpha=config.lora_alpha,
                )
                res = finetune(model, encoded["train"], ft_cfg, seed=seed)
                runs[lr] = (res, _val_loss(res.model, encoded["val"]))
                series["lr_val_loss"][f"{arm}@{lr:g}"] = runs[lr][1]
                done += 1
            best = best_on_validation(runs, lambda r: r[1])
            res, vloss = runs[best]
            for lr, (other, _) in runs.items():
                if lr != best:
                    del other.model
            ctx.progress(f"evaluate {arm}", 0, 1)
            m = evaluate(res.model)
            m.update(
                lr=best,
                val_loss=vloss,
                changed=res.changed_total,
                changed_max=max(v for k, v in res.changed.items() if k != "__total__"),
                projections=float(res.n_projections),
            )
            losses = res.history.train_loss
            m["loss_ratio"] = losses[-1] / losses[0] if losses and losses[0] > 0 else math.nan
            series["train_loss"][arm] = list(losses)
            metrics[arm] = m
            ctx.log(f"{arm}: lr {best:g}, " + ", ".join(f"{k} {v:.4g}" for k, v in m.items()))
            del res
        b = metrics["base"]
        for m in metrics.values():
            m["edit_gain"] = m["edit_success"] - b["edit_success"]
            m["bpb_drift"] = statistics.fmean(abs(m[f"{k}_bpb"] - b[f"{k}_bpb"]) for k in texts)
            m["he_drop"] = (b["humaneval"] - m["humaneval"]) if problems else 0.0
        metrics["selekt"]["changed_minus_alpha"] = metrics["selekt"]["changed_max"] - config.alpha
        series["samples"] = [
            {"task": s.task_id, "category": s.category, "style": s.style, "source": s.instruction_source}
            for s in splits["test"]
        ]
        notes = (
            f"model {config.model}; {len(splits['train'])} train / {len(splits['val'])} val / "
            f"{len(splits['test'])} test edits; instructions {config.instructions}; lr grid {config.lrs}; "
            f"{config.steps} steps x batch {config.batch_size}; SeleKT alpha {config.alpha}, every "
            f"{config.period_steps} steps, {config.scope}; HumanEval subset {len(problems)} problems",
        )
        return SeedOutcome(metrics=metrics, series=series, notes=notes)

    def make_figures(
        self, config: SeleKTCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import arm_color, new_figure

        arms = ("selekt", "sft", "lora", "base")
        fig, axes = new_figure(ncols=3, width=3.6, height=3.0)
        for ax, metric, label in zip(
            axes,
            ("edit_success", "humaneval", "bpb_drift"),
            ("held-out edit success", "HumanEval pass@1 (subset)", "mean |Δ bits/byte| from base"),
            strict=True,
        ):
            for i, arm in enumerate(arms):
                vals = [float(o.metrics[arm][metric]) for o in outcomes]
                ax.bar(i, statistics.fmean(vals), color=arm_color(arm, CLAIM.ours, CLAIM.baselines))
                ax.scatter([i] * len(vals), vals, color="k", s=8, zorder=3)
            ax.set_xticks(range(len(arms)))
            ax.set_xticklabels(arms)
            ax.set_ylabel(label)
        ctx.save_figure(
            fig,
            "edit_vs_retention",
            "Edit success and retention per arm (bars: mean over seeds; dots: seeds).",
        )


CHECK = SeleKTCheck()
