"""Claim check for *DyCodeEval: Dynamic Benchmarking of Reasoning Capabilities in Code Large Language
Models Under Data Contamination* (Chen et al., ICML 2025, https://arxiv.org/abs/2503.04149).

The paper's contamination experiment (project page, contamination figure; ``overfit_train.py``):
a code model fine-tuned (LoRA) on the canonical solutions of leaked benchmark problems gains Pass@1
on the leaked static problems, while its Pass@1 on DyCodeEval's rewritten variants stays flat.

Setup (``small``): the code model is the embedded SmolLM2-135M-Instruct; a copy of it is contaminated
with LoRA (r = 8, alpha = 16, dropout 0.1, as ``overfit_train.py``) on the canonical solutions of a
seeded half of the ``n_problems`` shortest HumanEval problems (the "leaked" seeds). Both models are
evaluated greedily, through the sandbox. inflation = Pass@1(contaminated) - Pass@1(clean), per
leaked seed (the items the runner pairs across arms, seeds x items bootstrap).

Arms (every one on the SAME leaked seeds, those with a validated variant):
    dycodeeval      ours: the seed's validated variants, written by the template control of the four
                    roles (a labelled control of known quality: a scenario sentence in front of the
                    original instruction; kept only if the canonical solution still passes under it).
    static          baseline: the original prompts.
    signature_only  reference and control: same signature and examples, an unrelated instruction
                    (the next seed's). It separates memorisation keyed on the signature (inflation
                    stays) from memorisation keyed on the docstring (inflation goes away).
    unleaked        reference (floor): the contaminated model's inflation on the seeds that did not
                    leak, original prompts (what fine-tuning does to problems it never saw).
    llm_rewrite     the same claim with variants written by the four roles played by an LLM
                    (``roles_model``, default the embedded SmolLM2), on the leaked seeds that got a
                    validated LLM variant; judged behind a scoped gate on how many did.

Choices, declared before any small-scale number of this design was seen:
* Gates: ``contamination_shows`` static inflation >= 0.3 (the contamination works on the static
  benchmark; below it there is nothing to hide). ``variants_cover_leaked`` at least 0.9 of the leaked
  seeds have a validated template variant (static and dynamic are judged on the same seeds).
  ``llm_rewrites_validated`` (scoped: guards only ``llm_dynamic_inflation_less``) at least half the
  leaked seeds have a validated LLM variant.
* Headline ``dynamic_inflation_less``: paired interval of dycodeeval.inflation - static.inflation
  below 0, smallest effect 0.2 Pass@1. Source: the paper's figure shows static Pass@1 on leaked
  problems climbing towards 1 with the leaked share while dynamic Pass@1 stays flat; a fifth of the
  Pass@1 scale is a stated fraction well inside that gap (the figure's numbers were not recovered).
* ``variants_not_harder``: the clean model loses at most 0.2 Pass@1 on variants vs the originals.
* 10 problems, 2 seeds at ``small`` (10 leaked items), 1 template variant per leaked seed; seeds
  change the leaked split, the scenarios, the LLM roles' sampling and the fine-tuning order (a
  12 x 3 x 2-variant preset was declared and timed on 2026-12-06 and set back for time, see below).
* ``tiny`` (smoke, < 10 s, no model) runs the same pipeline with the template control and a simulated
  code-model pair (clean: returns ``None``; contaminated: returns the stored solution when the prompt
  is exactly a leaked original), labelled as such.

Deviations, each with its flag: LoRA on a 135M model at lr 2e-3 for 24 epochs of the 5 leaked
solutions (``finetune_lr``, ``finetune_epochs``; the official ``overfit_train.py``: the same adapter,
lr 5e-5, up to 20,000 steps on 1-3B models; ``finetune_method="full"`` gives our earlier full
fine-tuning); one leak fraction (0.5, ``leak_fraction``) instead of the sweep
{0, .25, .5, .75, 1}; the template control writes the judged variants (``llm_rewrite`` holds the LLM
path); short generations (``*_tokens``). Untagged role replies are rejected as in the official code
(``lenient_tags=True`` accepts them).

Small runs of this design (2026-12-05, 2 seeds, 10 problems): with lr 1e-3 x 16 epochs the LoRA
contamination was too weak (static inflation 0.2, gate ``contamination_shows`` failed: inconclusive);
the contamination budget was then raised to lr 2e-3 x 24 epochs (a precondition of the experiment,
the paper over-fits for up to 20,000 steps; no threshold changed). That run: gates pass (static
inflation 0.5), inflation on the template variants 0.4, on the signature-only control 0.2, on the
unleaked floor -0.2; headline difference -0.1, 95 % CI [-0.4, 0]: inconclusive (underpowered), about
4x the leaked problems would resolve it (``medium``: 20 leaked problems x 3 seeds). SmolLM2 never tags
its context replies, so under the official strict parsing it writes no validated variant
(``llm_rewrites_validated`` 0; the LLM criterion is not judged).

Redesign of the ``small`` preset (2026-12-06, after the run above, before any run of the new preset;
no criterion, threshold, smallest effect or contamination setting changed). The headline was
underpowered: -0.1, 95 % CI [-0.4, 0] over 2 seeds x 5 leaked items, per-item differences mostly 0
with a few flips (per-item sd about 0.3). Costs per leaked item, measured at one thread: the LoRA
contamination (24 epochs x one sequence) is about half of the run and cannot be batched away (CPU
generation and training here are compute-bound: 25 ms of CPU per generated token-row at batch sizes
8 to 48; batch size 1 with a stop at the closing code fence was 2.3x slower per reply, so generation
stays batched without stop strings). What was cut: the clean model's replies to the original prompts
are computed once per run (they do not depend on the seed), and the template-control preservation
check over all 164 problems runs once per run (seed 0) instead of once per seed. With the time this
frees, ``small`` goes from 10 to 18 leaked items (12 problems x 3 seeds; 3 seeds also make the
cluster bootstrap less coarse than 2) and from 1 to 2 template variants per leaked seed (the
dynamic side of each paired difference is then a mean over two variants, which halves the variance
that single variant flips add). Power argument with the numbers above: at per-item sd 0.3 and about
20 % less of it from the second variant, 18 items give a 95 % half-width near 0.11, so the headline
resolves if the true difference is below about -0.11 (holds) or above about -0.09 (fails: the
interval then excludes -0.2); a true difference right at -0.1 would still be undetermined, and the
runner's estimate (about 4x the units, 40 leaked items) does not fit 300 s with 24 LoRA epochs per
item (about 9 s of training per leaked item on the reference machine): ``medium`` remains the preset
sized to decide it. One development run of the new preset (one thread, shared machine): gates pass
(static inflation 0.33), headline -0.19, 95 % CI [-0.47, 0] over 3 seeds x 6 items, still
undetermined (the runner: about 1.5x the units); the preset was not enlarged after seeing it.
Timed alone at two threads on the 2-core AMD machine: 691 s (over the 10-minute limit; about 378 s on
the earlier machine, twice the old preset's 183 s), inconclusive again (-0.194, [-0.473, 0]); so
``small`` went back to 10 problems x 2 seeds x 1 variant for time (the savings above stay: same
numbers, less time), and ``medium`` remains the preset sized to decide the headline.
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
        roles_model: the model that plays the four roles on the ``llm_rewrite`` path; ``""`` = the
            ``model``. Any ``load_chat_model`` spec: a local name or folder, or ``"openai:NAME"``
            for an OpenAI-compatible endpoint (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``; the key is
            never stored or printed).
        llm_roles: run the ``llm_rewrite`` path (the roles played by an LLM).
        n_problems: seed problems (the shortest HumanEval problems).
        leak_fraction: share of seeds whose canonical solutions leak.
        template_variants: template-control variants per seed (the judged ``dycodeeval`` arm).
        scenario_num, context_num, prompts_per_round, max_rounds: LLM role pipeline (DyCodeEvalConfig).
        *_tokens: max new tokens per role and for solving.
        lenient_tags: accept untagged role replies (default: rejected, as the official code).
        finetune_method: ``"lora"`` (the paper's) or ``"full"``.
        finetune_epochs, finetune_lr: simulated contamination.
        dypass_ks: K values of DyPass@K.
        batch_size: conversations per generate call of the local model.
        preservation_check: also rewrite all 164 HumanEval problems with the template control and
            count how many canonical solutions still pass under the variant prompt (semantic
            preservation; our check).
    """

    model: str = "smollm2-135m-instruct"
    roles_model: str = ""
    llm_roles: bool = True
    n_problems: int = 10
    leak_fraction: float = 0.5
    template_variants: int = 1
    scenario_num: int = 6
    context_num: int = 2
    prompts_per_round: int = 4
    max_rounds: int = 2
    proposer_tokens: int = 80
    context_tokens: int = 80
    rewriter_tokens: int = 128
    validator_tokens: int = 4
    solve_tokens: int = 128
    lenient_tags: bool = False
    finetune_method: str = "lora"
    finetune_epochs: int = 24
    finetune_lr: float = 2e-3
    dypass_ks: tuple[int, ...] = (1, 2)
    batch_size: int = 16
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
        if self.finetune_method not in ("lora", "full"):
            raise ValueError(f"finetune_method must be 'lora' or 'full', got {self.finetune_method!r}")
        check_fields(self, positive_int=("finetune_epochs", "template_variants"), positive=("finetune_lr",))
        if not self.dypass_ks or min(self.dypass_ks) < 1:
            raise ValueError(f"dypass_ks must be positive integers, got {self.dypass_ks}")


_SMALL = ("small", "medium", "full")
_EFFECT = 0.2
_EFFECT_SOURCE = (
    "the paper's contamination figure: static Pass@1 on leaked problems climbs towards 1 with the leaked "
    "share while dynamic Pass@1 stays flat; 0.2 Pass@1 is a stated fraction well inside that gap"
)
CLAIM = Claim(
    statement=(
        "Contaminating a code model with the canonical solutions of leaked problems inflates its static "
        "Pass@1 on those problems, but inflates its Pass@1 on DyCodeEval's validated, semantically "
        "equivalent variants of the same problems much less."
    ),
    source="Sec. 5 contamination experiment (project page figure); overfit_train.py",
    ours="dycodeeval",
    baselines=("static", "llm_rewrite"),
    references=("signature_only", "unleaked"),
    controls=("signature_only",),
    criteria=(
        Criterion(
            "dynamic_inflation_less",
            arm="dycodeeval",
            metric="inflation",
            op="<",
            other_arm="static",
            smallest_effect=_EFFECT,
            effect_source=_EFFECT_SOURCE,
            scales=_SMALL,
            description="on the same leaked seeds, the contaminated model's gain is smaller on the "
            "validated variants (template-control roles) than on the original prompts",
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
            "llm_dynamic_inflation_less",
            arm="llm_rewrite",
            metric="inflation",
            op="<",
            other_arm="static",
            other_metric="inflation_llm_subset",
            smallest_effect=_EFFECT,
            effect_source=_EFFECT_SOURCE,
            scales=_SMALL,
            description="the same with variants written by the LLM roles, on the leaked seeds that have "
            "one (behind the llm_rewrites_validated gate)",
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
            metric="inflation",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="smoke: the simulated contamination shows on static",
        ),
    ),
    gates=(
        Criterion(
            "contamination_shows",
            arm="static",
            metric="inflation",
            op=">=",
            threshold=0.3,
            scales=_SMALL,
            description="contamination raises static Pass@1 on the leaked seeds by >= 0.3 (else nothing "
            "is inflated for the variants to undo)",
        ),
        Criterion(
            "variants_cover_leaked",
            arm="dycodeeval",
            metric="leaked_coverage",
            op=">=",
            threshold=0.9,
            scales=_SMALL,
            description="at least 0.9 of the leaked seeds have a validated template variant",
        ),
        Criterion(
            "llm_rewrites_validated",
            arm="llm_rewrite",
            metric="leaked_coverage",
            op=">=",
            threshold=0.5,
            scales=_SMALL,
            needs="an LLM that writes validated variants for most leaked problems (the paper: Claude 3.5)",
            guards=("llm_dynamic_inflation_less",),
            description="at least half the leaked seeds have a validated variant written by the LLM roles "
            "(scoped: when it fails only the LLM criterion is set aside)",
        ),
    ),
    headline="dynamic_inflation_less",
    headline_baseline="static.inflation",
    min_seeds=2,
    setup_notes=(
        "SmolLM2-135M-Instruct (embedded, CPU) is the code model, contaminated by LoRA (r 8, alpha 16) "
        "on the canonical solutions of half of the 12 shortest HumanEval problems; the judged variants "
        "come from the template control of the four roles (a scenario sentence before the original "
        "instruction, kept only if the canonical solution still passes); SmolLM2 playing the four roles "
        "is reported as llm_rewrite behind a scoped gate. Paper: Claude 3.5 as generator, LoRA on 1-3B "
        "models for up to 20,000 steps, 164 + 427 "
        "problems, 18 models. Three seeds, two template variants per leaked problem; generations of 80-128 "
        "new tokens."
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


_CLEAN_STATIC: dict[tuple[str, int, int, int], dict[str, bool]] = {}


def _clean_static(
    config: DyCodeEvalCheckConfig, clean: ChatModel, tasks: Sequence[CodeTask]
) -> dict[str, bool]:
    """The clean model's pass/fail on the original prompts, computed once per process and reused by
    every seed (the prompts, the batches and greedy decoding do not depend on the seed)."""
    key = (config.model, config.n_problems, config.solve_tokens, config.batch_size)
    if key not in _CLEAN_STATIC:
        _CLEAN_STATIC[key] = solve_and_judge(clean, tasks, max_tokens=config.solve_tokens)[0]
    return dict(_CLEAN_STATIC[key])


@functools.cache
def _template_preservation(seed: int) -> dict[str, float]:
    """Template control on all of HumanEval: share of variants whose canonical solution still passes
    (cached: the same for every seed of a run, which all use ``seed`` 0)."""
    everything = [CodeTask.from_humaneval(p) for p in load_humaneval()]
    gen = DyCodeEvalGenerator(
        template_role_model(), DyCodeEvalConfig(scenario_num=10, context_num=1), seed=seed
    )
    report = gen.generate(everything)
    seeds = {t.task_id: t.instruction for t in everything}
    texts = {s: [v.instruction for v in vs] for s, vs in report.variants.items()}
    return {
        "template_control_preservation": report.stats["accepted"] / len(everything),
        "template_control_external_bleu": external_diversity(seeds, texts)["bleu"],
    }


SIGNATURE_ONLY_SUFFIX = "#sig"


def signature_only_tasks(tasks: Sequence[CodeTask], donors: Sequence[CodeTask]) -> list[CodeTask]:
    """The signature-only control: each task keeps its signature, examples and tests, but its
    instruction is an unrelated one, taken from the donor tasks in turn (never the task's own).

    A model that memorised a leaked solution keyed on the signature still solves these; one that
    needs the instruction's text does not.
    """
    out = []
    for i, t in enumerate(tasks):
        pool = [d for d in donors if d.seed_id != t.seed_id and d.instruction != t.instruction]
        if not pool:
            raise ValueError(f"no donor with an instruction other than {t.task_id}'s")
        donor = pool[i % len(pool)]
        out.append(
            t.with_instruction(donor.instruction, task_id=t.task_id + SIGNATURE_ONLY_SUFFIX, scenario="")
        )
    return out


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


class DyCodeEvalCheck(ClaimCheck[DyCodeEvalCheckConfig]):
    slug = "dycodeeval"
    claim = CLAIM
    presets = {
        "tiny": DyCodeEvalCheckConfig(
            model="simulated", n_problems=4, template_variants=1, context_num=1, preservation_check=False
        ),
        # 10 problems (5 leaked) x 2 seeds, 1 template variant: the 12 x 3 x 2 design declared for power
        # took 691 s alone on the AMD machine (over the 10-minute limit) and stayed undetermined, so
        # small went back to this one (module docstring)
        "small": DyCodeEvalCheckConfig(),
        # sized for the lent GPU machine (16 cores; the embedded loader runs the model on the CPU cores),
        # at most 30 minutes: 40 problems, 20 leaked, 3 variants each, a longer LoRA contamination
        "medium": DyCodeEvalCheckConfig(
            n_problems=40,
            template_variants=3,
            context_num=3,
            scenario_num=10,
            context_tokens=160,
            rewriter_tokens=256,
            solve_tokens=256,
            finetune_epochs=60,
            finetune_lr=1e-3,
        ),
        "full": DyCodeEvalCheckConfig(
            n_problems=164,
            template_variants=10,
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
    default_seeds = {"tiny": 1, "small": 2, "medium": 3, "full": 3}

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
                f"{code}; judged variants by the template control; {roles} for llm_rewrite; "
                f"{config.n_problems} shortest HumanEval problems, {config.leak_fraction:.0%} leaked; "
                f"contamination by {config.finetune_method} fine-tuning ({config.finetune_epochs} epochs, "
                f"lr {config.finetune_lr:g})."
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
                method=config.finetune_method,
                progress=lambda step, total: ctx.progress("fine-tune", step, total),
            )
            dirty = LocalChatModel(
                tuned, tokenizer, name=f"local:{config.model}+leak", batch_size=config.batch_size
            )
            notes.append(f"code model: {config.model}; contaminated by {config.finetune_method} fine-tuning")
        if config.roles_model:
            roles = _roles_model(config.roles_model)
        roles_name = config.roles_model or roles.name
        notes.append(f"llm_rewrite roles: {roles_name}" if config.llm_roles else "llm_rewrite path off")

        # -- variants -------------------------------------------------------------------------
        ctx.progress("template variants", 0, 1)
        tpl_cfg = DyCodeEvalConfig(
            scenario_num=10, context_num=config.template_variants, prompts_per_round=1, max_rounds=1
        )
        # variants and controls are only needed for the leaked seeds (the judged items)
        tpl = DyCodeEvalGenerator(template_role_model(), tpl_cfg, seed=seed).generate(leaked)
        tpl_variants = [v for t in leaked for v in tpl.variants[t.task_id]]
        unleaked = [t for t in tasks if t.task_id not in leaked_ids]
        sig_only = signature_only_tasks(leaked, donors=unleaked or leaked)
        llm_variants: list[CodeTask] = []
        report = None
        if config.llm_roles:
            gen_cfg = DyCodeEvalConfig(
                scenario_num=config.scenario_num,
                context_num=config.context_num,
                prompts_per_round=config.prompts_per_round,
                max_rounds=config.max_rounds,
                proposer_tokens=config.proposer_tokens,
                context_tokens=config.context_tokens,
                rewriter_tokens=config.rewriter_tokens,
                validator_tokens=config.validator_tokens,
                lenient_tags=config.lenient_tags,
            )
            stages = ("proposer", "context", "rewriter", "validator", "execution")

            def stage(name: str) -> None:
                ctx.progress(f"llm variants: {name}", stages.index(name), len(stages))

            report = DyCodeEvalGenerator(roles, gen_cfg, seed=seed, callback=stage).generate(leaked)
            llm_variants = [
                dataclasses.replace(v, task_id=v.task_id.replace("#v", "#llm"))
                for t in leaked
                for v in report.variants[t.task_id]
            ]
        ctx.progress("template variants", 1, 1)

        # -- evaluation -----------------------------------------------------------------------
        # The original prompts are solved in a call of their own: the clean model's greedy replies to
        # them are the same for every seed (same problems, same batches), so they are computed once
        # per run and reused; everything seed-dependent is solved in a second call.
        rewritten = [*tpl_variants, *sig_only, *llm_variants]
        results: dict[str, dict[str, bool]] = {}
        for name, model_ in (("clean", clean), ("contaminated", dirty)):
            ctx.progress(f"solve {name}", 0, 1)
            if name == "clean" and config.model != "simulated":
                passed = _clean_static(config, clean, tasks)
            else:
                passed, _, _ = solve_and_judge(model_, tasks, max_tokens=config.solve_tokens)
            passed.update(solve_and_judge(model_, rewritten, max_tokens=config.solve_tokens)[0])
            results[name] = passed
            ctx.progress(f"solve {name}", 1, 1)

        def gain(ids: Sequence[str]) -> float:  # mean over the given tasks of contaminated - clean
            return _mean([float(results["contaminated"][i]) - float(results["clean"][i]) for i in ids])

        tpl_of = {t.task_id: [v.task_id for v in tpl.variants[t.task_id]] for t in leaked}
        llm_of: dict[str, list[str]] = {t.task_id: [] for t in leaked}
        for v in llm_variants:
            llm_of[v.seed_id].append(v.task_id)
        covered = [t.task_id for t in leaked if tpl_of[t.task_id]]  # the same seeds for every arm
        items = {
            "static": {"inflation": np.array([gain([i]) for i in covered])},
            "dycodeeval": {"inflation": np.array([gain(tpl_of[i]) for i in covered])},
            "signature_only": {"inflation": np.array([gain([i + SIGNATURE_ONLY_SUFFIX]) for i in covered])},
        }
        unleaked_ids = [t.task_id for t in unleaked]
        metrics: dict[str, dict[str, float]] = {
            arm: {"inflation": _mean(list(rows["inflation"]))} for arm, rows in items.items()
        }
        metrics["unleaked"] = {"inflation": gain(unleaked_ids)}
        static, dynamic = metrics["static"], metrics["dycodeeval"]
        for name in ("clean", "contaminated"):
            static[f"{name}_leaked"] = _mean([float(results[name][i]) for i in covered])
            static[f"{name}_all"] = _mean([float(results[name][t.task_id]) for t in tasks])
            dynamic[f"{name}_leaked"] = _mean(
                [_mean([float(results[name][v]) for v in tpl_of[i]]) for i in covered]
            )
            metrics["signature_only"][f"{name}_leaked"] = _mean(
                [float(results[name][i + SIGNATURE_ONLY_SUFFIX]) for i in covered]
            )
        dynamic["leaked_coverage"] = len(covered) / len(leaked)
        dynamic["clean_static_minus_dynamic"] = static["clean_leaked"] - dynamic["clean_leaked"]
        dynamic.update({k: float(v) for k, v in tpl.stats.items()})
        seed_texts = {t.task_id: t.instruction for t in leaked}
        mutated = {t.task_id: [char_mutation(t.instruction, seed=seed)] for t in leaked}
        tpl_texts = {s: [v.instruction for v in vs] for s, vs in tpl.variants.items()}
        dynamic["external_bleu"] = external_diversity(seed_texts, tpl_texts)["bleu"]
        static["char_mutation_external_bleu"] = external_diversity(seed_texts, mutated)["bleu"]

        if report is not None:  # the LLM roles' path, on the leaked seeds that got a variant
            llm: dict[str, float] = {k: float(v) for k, v in report.stats.items()}
            llm_covered = [t.task_id for t in leaked if llm_of[t.task_id]]
            llm["leaked_coverage"] = len(llm_covered) / len(leaked)
            llm["scenarios"] = float(len(report.scenarios))
            if llm_covered:
                items["llm_rewrite"] = {"inflation": np.array([gain(llm_of[i]) for i in llm_covered])}
                items["static"]["inflation_llm_subset"] = np.array([gain([i]) for i in llm_covered])
                llm["inflation"] = _mean(list(items["llm_rewrite"]["inflation"]))
                static["inflation_llm_subset"] = _mean(list(items["static"]["inflation_llm_subset"]))
            for name in ("clean", "contaminated"):
                outcomes = {s: [results[name][v] for v in llm_of[s]] for s in llm_of}
                if any(outcomes.values()):
                    llm[f"{name}_dynamic_pass1_draw"] = dynamic_pass_at_1(outcomes)
                    llm[f"{name}_stability_mean"], llm[f"{name}_stability_std"] = stability(outcomes)
                    for k in config.dypass_ks:
                        llm[f"{name}_dypass@{k}"] = dypass_at_k(outcomes, k)
            llm_texts = {s: [v.instruction for v in vs] for s, vs in report.variants.items()}
            ext, inner = external_diversity(seed_texts, llm_texts), internal_diversity(llm_texts)
            llm["external_bleu"], llm["external_cosine"] = ext["bleu"], ext["cosine"]
            llm["internal_bleu"], llm["internal_cosine"] = inner["bleu"], inner["cosine"]
            metrics["llm_rewrite"] = llm
        if config.preservation_check:  # a property of the template control: once per run (seed 0)
            ctx.progress("template control on HumanEval", 0, 1)
            dynamic.update(_template_preservation(0))
            ctx.progress("template control on HumanEval", 1, 1)

        series = {
            "leaked": sorted(leaked_ids),
            "judged_leaked_seeds": covered,
            "finetune_loss": losses,
            "scenarios": list(report.scenarios) if report is not None else [],
            "records": [
                {
                    "seed": r.seed_id,
                    "scenario": r.scenario,
                    "stage": r.stage,
                    "reason": r.reason,
                    "instruction": r.instruction[:400],
                }
                for r in (report.records if report is not None else ())
            ],
            "passed": results,
            "backend": report.backend if report is not None else "",
        }
        missing = sorted(f"{a}.{k}" for a, ms in metrics.items() for k, v in ms.items() if not np.isfinite(v))
        if missing:  # e.g. DyPass@K with fewer than K variants per seed, BLEU without variant pairs
            notes.append("not measurable (no data), left out: " + ", ".join(missing))
        metrics = {a: {k: v for k, v in ms.items() if np.isfinite(v)} for a, ms in metrics.items()}
        return SeedOutcome(metrics=metrics, series=series, notes=tuple(notes), items=items)

    def make_figures(
        self, config: DyCodeEvalCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import OURS_COLOR, PALETTE, new_figure

        fig, ax = new_figure(width=5.2)
        arms = [
            ("static", "static\n(original)", PALETTE[0]),
            ("dycodeeval", "DyCodeEval\n(template)", OURS_COLOR),
            ("llm_rewrite", "DyCodeEval\n(LLM roles)", PALETTE[1]),
            ("signature_only", "signature\nonly", PALETTE[2]),
            ("unleaked", "unleaked\n(floor)", PALETTE[3]),
        ]
        # a metric a seed could not measure (no validated variant) is absent, not NaN
        vals = [
            _mean_or_nan([o.metrics.get(a, {}).get("inflation", np.nan) for o in outcomes])
            for a, _, _ in arms
        ]
        ax.bar(np.arange(len(arms)), vals, color=[c for _, _, c in arms])
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(arms)), [label for _, label, _ in arms])
        ax.set(ylabel="Pass@1 gain from contamination", title="Contamination: who gains on leaked seeds")
        ctx.save_figure(
            fig,
            "contamination",
            "Pass@1(contaminated) - Pass@1(clean) on the same leaked seeds: original prompts, "
            "template-control variants, LLM-written variants, the signature-only control; and on the "
            "unleaked seeds (floor).",
        )


def _mean_or_nan(values: Sequence[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


CHECK = DyCodeEvalCheck()
