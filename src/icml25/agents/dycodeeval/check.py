"""Claim check for *DyCodeEval: Dynamic Benchmarking of Reasoning Capabilities in Code Large Language
Models Under Data Contamination* (Chen et al., ICML 2025, https://arxiv.org/abs/2503.04149).

The paper's contamination experiment (project page, contamination figure; ``overfit_train.py``):
a code model fine-tuned on the canonical solutions of leaked benchmark problems gains Pass@1 on
the leaked static problems, while its Pass@1 on DyCodeEval's rewritten variants stays flat.

Setup here (``small``): the embedded SmolLM2-135M-Instruct is both the generator LLM of the four
roles and the code model. Seed problems: the ``n_problems`` HumanEval problems with the shortest
prompt + solution (a small model can solve some of them). A seeded half of them leaks: a copy of
the model is fully fine-tuned on their canonical solutions (the paper: LoRA on 1-3B models). Both
models are evaluated greedily, through the sandbox, on every seed prompt (static) and on every
validated variant (dynamic), split into leaked and unleaked seeds.

Arms:
    dycodeeval  Pass@1 on validated variants (mean over a seed's variants, then over seeds), dynamic
                Pass@1 (one seeded draw per seed), its stability over 5 draws, DyPass@K, and the
                generator's variant statistics and diversity.
    static      Pass@1 on the original prompts.

Choices, declared before any small-scale number was seen:
* inflation = Pass@1(contaminated) - Pass@1(clean) on the leaked seeds.
* Criteria: static inflation >= 0.3 (contamination works on the static benchmark); dynamic
  inflation <= 0.5 x static inflation ("much less"); the clean model's Pass@1 on variants is at
  most 0.2 below its static Pass@1 over all seeds (variants are not harder).
* A seed without a validated variant contributes nothing to dynamic metrics; if no leaked seed has
  one, the dynamic inflation is NaN and the verdict is inconclusive.
* One seed at ``small`` (the LLM work fills the budget); seeds change the leaked split, the
  proposer's and rewriter's sampling, and the fine-tuning order.
* ``tiny`` (smoke, < 20 s, no model) runs the same pipeline with the template control for the roles
  and a simulated code model pair (clean: returns ``None``; contaminated: returns the stored
  solution when the prompt is exactly a leaked original), labelled as such.
* ``small`` also runs the template control over all 164 HumanEval problems and reports the share
  whose canonical solution still passes under the variant prompt (our check that the rewriting
  preserves semantics, the metamorphic relation the paper relies on).

Deviations from the paper, our choices for a CPU budget: the contaminated code model is a real
small LLM (SmolLM2-135M, fully fine-tuned), so the memorisation being measured is real, not
simulated; the leak fractions {0, .25, .5, .75, 1} of the official ``overfit_train.py`` over all of
HumanEval and MBPP do not fit, so one leak fraction (0.5), 8 seeds, 3 scenarios each. Parameter
renaming by the template control is not implemented (scenario preamble only); the LLM path keeps
the signature, as the official ``replace_docstring`` does.

Outcome at ``small`` (seed 0, 2026-12-02): not reproduced. Fine-tuning inflates static Pass@1 on
the leaked seeds by 0.75, and Pass@1 on their validated variants by 0.67. Two reasons, both
measured: the variants keep the function name and signature (as in the paper), and the fine-tuned
135M model recalls the memorised body from them whatever the docstring says; and SmolLM2-135M is
a poor rewriter (most rewrites are off-topic; the LLM validator rejects about half, and the
execution check cannot see docstring meaning), so the variants test little beyond the signature.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, NeedsResource, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields
from icml25.data.humaneval import load_humaneval
from icml25.llm.chat import ChatModel, GenerationConfig, ScriptedChatModel

from .evaluate import contaminate, solve_and_judge, template_role_model
from .metrics import (
    char_mutation,
    dynamic_pass_at_1,
    dypass_at_k,
    external_diversity,
    internal_diversity,
    stability,
)
from .roles import DyCodeEvalConfig, DyCodeEvalGenerator
from .task import CodeTask


@dataclass(frozen=True)
class DyCodeEvalCheckConfig:
    """One configuration of the contamination check.

    Args:
        model: the code model, which the check fine-tunes, so it needs weights:
            ``"smollm2-135m-instruct"`` (any name or folder ``load_causal_lm`` accepts) or
            ``"simulated"`` (template-control roles and a simulated code-model pair: smoke only).
        roles_model: the model that plays the four roles (proposer, context, rewriter, validator);
            ``""`` = the ``model``. Any ``load_chat_model`` spec: a local name or folder, or
            ``"openai:NAME"`` for an OpenAI-compatible endpoint (``OPENAI_BASE_URL`` /
            ``OPENAI_API_KEY``; the key is never stored or printed).
        n_problems: seed problems (the shortest HumanEval problems).
        leak_fraction: share of seeds whose canonical solutions leak.
        scenario_num, context_num, prompts_per_round, max_rounds: role pipeline (see DyCodeEvalConfig).
        *_tokens: max new tokens per role and for solving.
        finetune_epochs, finetune_lr: simulated contamination.
        dypass_ks: K values of DyPass@K.
        batch_size: conversations per generate call of the local model.
        preservation_check: also rewrite all 164 HumanEval problems with the template control and
            count how many canonical solutions still pass under the variant prompt (semantic
            preservation; our check).
    """

    model: str = "smollm2-135m-instruct"
    roles_model: str = ""
    n_problems: int = 8
    leak_fraction: float = 0.5
    scenario_num: int = 8
    context_num: int = 3
    prompts_per_round: int = 4
    max_rounds: int = 2
    proposer_tokens: int = 80
    context_tokens: int = 80
    rewriter_tokens: int = 128
    validator_tokens: int = 4
    solve_tokens: int = 128
    finetune_epochs: int = 6
    finetune_lr: float = 2e-4
    dypass_ks: tuple[int, ...] = (1, 3)
    batch_size: int = 8
    preservation_check: bool = True

    def __post_init__(self) -> None:
        if self.model.startswith("openai:"):
            raise ValueError(
                f"model: {self.model!r} is an endpoint, but the code model is fine-tuned and needs "
                f"weights; keep model a local one and set roles_model={self.model!r} to let the "
                "endpoint play the roles"
            )
        if self.n_problems < 2:
            raise ValueError(f"n_problems must be at least 2, got {self.n_problems}")
        if not 0 < self.leak_fraction < 1:
            raise ValueError(f"leak_fraction must lie strictly between 0 and 1, got {self.leak_fraction}")
        check_fields(self, positive_int=("finetune_epochs",), positive=("finetune_lr",))
        if not self.dypass_ks or min(self.dypass_ks) < 1:
            raise ValueError(f"dypass_ks must be positive integers, got {self.dypass_ks}")


_SMALL = ("small", "full")
CLAIM = Claim(
    statement=(
        "Contaminating a code model with the canonical solutions of leaked problems inflates its static "
        "Pass@1 on those problems, but inflates its Pass@1 on DyCodeEval's validated, semantically "
        "equivalent variants much less."
    ),
    source="Sec. 5 contamination experiment (project page figure); overfit_train.py",
    ours="dycodeeval",
    baselines=("static",),
    criteria=(
        Criterion(
            "static_inflated",
            arm="static",
            metric="inflation_leaked",
            op=">=",
            threshold=0.3,
            scales=_SMALL,
            description="contamination raises static Pass@1 on leaked problems by >= 0.3",
        ),
        Criterion(
            "dynamic_inflation_much_less",
            arm="dycodeeval",
            metric="inflation_leaked",
            op="<=",
            other_arm="static",
            factor=0.5,
            scales=_SMALL,
            description="inflation on the variants of leaked problems is at most half the static inflation",
        ),
        Criterion(
            "variants_not_harder",
            arm="dycodeeval",
            metric="clean_static_minus_dynamic",
            op="<=",
            threshold=0.2,
            scales=_SMALL,
            description="the clean model loses at most 0.2 Pass@1 on variants vs the originals",
        ),
        Criterion(
            "tiny_variants_accepted",
            arm="dycodeeval",
            metric="acceptance_rate",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="smoke: some variants pass validation",
        ),
        Criterion(
            "tiny_static_inflated",
            arm="static",
            metric="inflation_leaked",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="smoke: the simulated contamination shows on static",
        ),
    ),
    headline="dynamic_inflation_much_less",
    headline_baseline="static.inflation_leaked",
    min_seeds=1,
    setup_notes=(
        "SmolLM2-135M-Instruct (embedded, CPU) is both the generator of the four roles and the code model; "
        "8 shortest HumanEval problems, 3 scenarios each, half leaked; contamination by full fine-tuning "
        "(paper: LoRA on 1-3B models, Claude 3.5 as generator, 164 + 427 problems, 18 models). One seed. "
        "Generations are short (80-128 new tokens) to fit 10 minutes."
    ),
    requires=("llm",),
)


@functools.cache
def _load(model: str) -> tuple[Any, Any]:
    from icml25.llm.models import load_causal_lm

    return load_causal_lm(model)


def _roles_model(spec: str) -> ChatModel:
    from icml25.llm.models import load_chat_model

    try:
        return load_chat_model(spec)
    except (ImportError, FileNotFoundError, OSError) as err:
        raise NeedsResource("llm", f"cannot load roles_model {spec}: {err}") from err


def _simulated_code_models(leaked: Sequence[CodeTask]) -> tuple[ChatModel, ChatModel]:
    """Simulated pair for the smoke scale: clean returns None; contaminated recalls leaked originals."""
    memory = {t.prompt: t.canonical_solution for t in leaked}

    def clean(messages: list[dict[str, str]], config: GenerationConfig, i: int) -> str:
        return "```python\n    return None\n```"

    def contaminated(messages: list[dict[str, str]], config: GenerationConfig, i: int) -> str:
        text = messages[-1]["content"]
        hit = next((sol for prompt, sol in memory.items() if f"```python\n{prompt}```" in text), None)
        return f"```python\n{hit}```" if hit is not None else clean(messages, config, i)

    return ScriptedChatModel(clean, "simulated-clean"), ScriptedChatModel(
        contaminated, "simulated-contaminated"
    )


def _template_preservation(seed: int, ctx: RunContext) -> dict[str, float]:
    """Template control on all of HumanEval: share of variants whose canonical solution still passes."""
    ctx.progress("template control on HumanEval", 0, 1)
    everything = [CodeTask.from_humaneval(p) for p in load_humaneval()]
    gen = DyCodeEvalGenerator(
        template_role_model(), DyCodeEvalConfig(scenario_num=10, context_num=1), seed=seed
    )
    report = gen.generate(everything)
    ctx.progress("template control on HumanEval", 1, 1)
    seeds = {t.task_id: t.instruction for t in everything}
    texts = {s: [v.instruction for v in vs] for s, vs in report.variants.items()}
    return {
        "template_control_preservation": report.stats["accepted"] / len(everything),
        "template_control_external_bleu": external_diversity(seeds, texts)["bleu"],
    }


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


class DyCodeEvalCheck(ClaimCheck[DyCodeEvalCheckConfig]):
    slug = "dycodeeval"
    claim = CLAIM
    presets = {
        "tiny": DyCodeEvalCheckConfig(
            model="simulated", n_problems=4, context_num=1, preservation_check=False
        ),
        "small": DyCodeEvalCheckConfig(),
        "full": DyCodeEvalCheckConfig(
            n_problems=164,
            scenario_num=50,
            context_num=10,
            prompts_per_round=10,
            max_rounds=10,
            proposer_tokens=100,
            context_tokens=200,
            rewriter_tokens=512,
            validator_tokens=10,
            solve_tokens=512,
            finetune_epochs=20,
            finetune_lr=5e-5,
            dypass_ks=(1, 3, 5, 10),
        ),
    }
    default_seeds = {"tiny": 1, "small": 1, "full": 3}

    def claim_for(self, config: DyCodeEvalCheckConfig) -> Claim:
        """The claim with "our setup" naming the models that actually run under ``config``."""
        default = DyCodeEvalCheckConfig()
        if (config.model, config.roles_model) == (default.model, default.roles_model):
            return self.claim
        code = "simulated code models" if config.model == "simulated" else f"{config.model} (code model)"
        roles = config.roles_model or (
            "template-control roles" if config.model == "simulated" else f"{config.model} (roles)"
        )
        return dataclasses.replace(
            self.claim,
            setup_notes=(
                f"{code}; {roles}; {config.n_problems} shortest HumanEval problems, "
                f"{config.scenario_num} scenarios each, {config.leak_fraction:.0%} leaked; contamination "
                f"by full fine-tuning ({config.finetune_epochs} epochs, lr {config.finetune_lr:g})."
            ),
        )

    def run_seed(self, config: DyCodeEvalCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        problems = sorted(
            load_humaneval(), key=lambda p: (len(p.prompt) + len(p.canonical_solution), p.index)
        )
        tasks = [CodeTask.from_humaneval(p) for p in problems[: config.n_problems]]
        rng = random.Random(seed)
        n_leak = max(1, round(config.leak_fraction * len(tasks)))
        leaked_ids = set(rng.sample([t.task_id for t in tasks], n_leak))
        leaked = [t for t in tasks if t.task_id in leaked_ids]
        notes = []

        # -- models ---------------------------------------------------------------------------
        losses: list[float] = []
        if config.model == "simulated":
            roles: ChatModel = template_role_model()
            clean, dirty = _simulated_code_models(leaked)
            notes.append("model: template control roles + simulated code models (smoke only)")
        else:
            try:
                model, tokenizer = _load(config.model)
            except (ImportError, FileNotFoundError, OSError) as err:
                raise NeedsResource("llm", f"cannot load {config.model}: {err}") from err
            from icml25.llm.local import LocalChatModel

            roles = clean = LocalChatModel(
                model, tokenizer, name=f"local:{config.model}", batch_size=config.batch_size
            )

            tuned, losses = contaminate(
                model,
                tokenizer,
                leaked,
                epochs=config.finetune_epochs,
                lr=config.finetune_lr,
                seed=seed,
                progress=lambda step, total: ctx.progress("fine-tune", step, total),
            )
            dirty = LocalChatModel(
                tuned, tokenizer, name=f"local:{config.model}+leak", batch_size=config.batch_size
            )
            notes.append(f"model: {config.model} (roles and code model); contaminated by full fine-tuning")

        if config.roles_model:
            roles = _roles_model(config.roles_model)
            notes.append(f"roles played by {config.roles_model}")

        # -- variants -------------------------------------------------------------------------
        ctx.progress("variants", 0, 1)
        gen_cfg = DyCodeEvalConfig(
            scenario_num=config.scenario_num,
            context_num=config.context_num,
            prompts_per_round=config.prompts_per_round,
            max_rounds=config.max_rounds,
            proposer_tokens=config.proposer_tokens,
            context_tokens=config.context_tokens,
            rewriter_tokens=config.rewriter_tokens,
            validator_tokens=config.validator_tokens,
        )
        stages = ("proposer", "context", "rewriter", "validator", "execution")

        def stage(name: str) -> None:
            ctx.progress(f"variants: {name}", stages.index(name), len(stages))

        report = DyCodeEvalGenerator(roles, gen_cfg, seed=seed, callback=stage).generate(tasks)
        ctx.progress("variants", 1, 1)
        variants = [v for t in tasks for v in report.variants[t.task_id]]

        # -- evaluation -----------------------------------------------------------------------
        results: dict[str, dict[str, bool]] = {}
        for name, model_ in (("clean", clean), ("contaminated", dirty)):
            ctx.progress(f"solve {name}", 0, 1)
            passed, _, _ = solve_and_judge(model_, [*tasks, *variants], max_tokens=config.solve_tokens)
            results[name] = passed
            ctx.progress(f"solve {name}", 1, 1)

        def static_rate(name: str, ids: set[str]) -> float:
            return _mean([float(results[name][t.task_id]) for t in tasks if t.task_id in ids])

        def per_seed(name: str, ids: set[str]) -> dict[str, list[bool]]:
            return {
                t.task_id: [results[name][v.task_id] for v in report.variants[t.task_id]]
                for t in tasks
                if t.task_id in ids
            }

        def dynamic_rate(name: str, ids: set[str]) -> float:  # mean over a seed's variants, then seeds
            return _mean([_mean([float(x) for x in vs]) for vs in per_seed(name, ids).values() if vs])

        all_ids = {t.task_id for t in tasks}
        clean_ids = all_ids - leaked_ids
        static: dict[str, float] = {}
        dynamic: dict[str, float] = {}
        for name in ("clean", "contaminated"):
            for split, ids in (("leaked", leaked_ids), ("unleaked", clean_ids), ("all", all_ids)):
                static[f"{name}_{split}"] = static_rate(name, ids)
                dynamic[f"{name}_{split}"] = dynamic_rate(name, ids)
            outcomes = per_seed(name, all_ids)
            if any(outcomes.values()):
                dynamic[f"{name}_dynamic_pass1_draw"] = dynamic_pass_at_1(outcomes)
                mean, std = stability(outcomes)
                dynamic[f"{name}_stability_mean"], dynamic[f"{name}_stability_std"] = mean, std
                for k in config.dypass_ks:
                    dynamic[f"{name}_dypass@{k}"] = dypass_at_k(outcomes, k)
        static["inflation_leaked"] = static["contaminated_leaked"] - static["clean_leaked"]
        static["inflation_unleaked"] = static["contaminated_unleaked"] - static["clean_unleaked"]
        dynamic["inflation_leaked"] = dynamic["contaminated_leaked"] - dynamic["clean_leaked"]
        dynamic["inflation_unleaked"] = dynamic["contaminated_unleaked"] - dynamic["clean_unleaked"]
        dynamic["clean_static_minus_dynamic"] = static["clean_all"] - dynamic["clean_all"]

        # -- variant statistics and diversity ------------------------------------------------
        dynamic.update({k: float(v) for k, v in report.stats.items()})
        dynamic["scenarios"] = float(len(report.scenarios))
        dynamic["leaked_seeds_with_variants"] = float(sum(bool(report.variants[i]) for i in leaked_ids))
        seed_texts = {t.task_id: t.instruction for t in tasks}
        texts = {s: [v.instruction for v in vs] for s, vs in report.variants.items()}
        ext, inner = external_diversity(seed_texts, texts), internal_diversity(texts)
        mutated = {t.task_id: [char_mutation(t.instruction, seed=seed)] for t in tasks}
        ext_mut = external_diversity(seed_texts, mutated)
        dynamic["external_bleu"], dynamic["external_cosine"] = ext["bleu"], ext["cosine"]
        dynamic["internal_bleu"], dynamic["internal_cosine"] = inner["bleu"], inner["cosine"]
        static["char_mutation_external_bleu"] = ext_mut["bleu"]
        if config.preservation_check:
            dynamic.update(_template_preservation(seed, ctx))

        series = {
            "leaked": sorted(leaked_ids),
            "finetune_loss": losses,
            "scenarios": list(report.scenarios),
            "records": [
                {
                    "seed": r.seed_id,
                    "scenario": r.scenario,
                    "stage": r.stage,
                    "reason": r.reason,
                    "instruction": r.instruction[:400],
                }
                for r in report.records
            ],
            "passed": results,
            "backend": report.backend,
        }
        metrics = {"dycodeeval": dynamic, "static": static}
        missing = sorted(f"{a}.{k}" for a, ms in metrics.items() for k, v in ms.items() if not np.isfinite(v))
        if missing:  # e.g. DyPass@K with fewer than K variants per seed, BLEU without variant pairs
            notes.append("not measurable (no data), left out: " + ", ".join(missing))
        metrics = {a: {k: v for k, v in ms.items() if np.isfinite(v)} for a, ms in metrics.items()}
        return SeedOutcome(metrics=metrics, series=series, notes=tuple(notes))

    def make_figures(
        self, config: DyCodeEvalCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import OURS_COLOR, PALETTE, new_figure

        fig, ax = new_figure(width=5.2)
        labels = ["clean\nleaked", "contam.\nleaked", "clean\nunleaked", "contam.\nunleaked"]
        keys = ["clean_leaked", "contaminated_leaked", "clean_unleaked", "contaminated_unleaked"]
        x = np.arange(len(keys))
        for offset, (arm, color, name) in enumerate(
            (
                ("static", PALETTE[0], "static (original prompts)"),
                ("dycodeeval", OURS_COLOR, "DyCodeEval variants"),
            )
        ):
            # a metric the seed could not measure (no accepted variant) is absent, not NaN
            vals = [_mean_or_nan([o.metrics[arm].get(k, np.nan) for o in outcomes]) for k in keys]
            ax.bar(x + (offset - 0.5) * 0.38, vals, width=0.38, color=color, label=name)
        ax.set_xticks(x, labels)
        ax.set(ylabel="Pass@1 (greedy)", title="Contamination: static vs dynamic Pass@1", ylim=(0, 1.05))
        ax.legend()
        ctx.save_figure(
            fig,
            "contamination",
            "Pass@1 of the clean and the contaminated (fine-tuned on leaked solutions) model on the "
            "original prompts and on the validated DyCodeEval variants, for leaked and unleaked seeds.",
        )


def _mean_or_nan(values: Sequence[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


CHECK = DyCodeEvalCheck()
