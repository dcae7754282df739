"""Claim check for *Autoformulation of Mathematical Optimization Models Using LLMs* (Astorga, Liu,
Xiao, van der Schaar; ICML 2025, https://arxiv.org/abs/2411.01679).

Claim (abstract, Sec. 5): MCTS over the formulation hierarchy with LLM value estimates (priors) and
symbolic pruning formulates problems more accurately than flat sampling, and both the priors and
the pruning matter (ablations).

Setup: generated NL4OPT-style LP/MILP word problems (six families, new numbers and wording per
seed) with reference optima from HiGHS. Every arm gets the same budget of LLM completions per
problem (formulator samples, ranking samples and judge samples all count; a flat complete
formulation counts as four field generations):

    mcts            MCTS + symbolic pruning + LLM ranking priors (the method)
    flat            flat best-of-N: complete formulations, best solved one by judge score
    mcts_noprune    MCTS without symbolic pruning
    mcts_nopriors   MCTS with uniform priors (no ranking calls, so more expansions)

The LLM is ``model`` (default the embedded SmolLM2-135M-Instruct; any HF folder, GGUF or
``openai:NAME`` endpoint). Requests that are identical across arms (same prompt, same derived seed)
are answered once and reused (common random numbers; each arm is still charged for them).
``control_*`` arms rerun the four methods with :func:`scripted_control_model` (reference
formulations with a 35 % error rate per field and a noisy judge): a labelled control that isolates
the search algorithm from the LLM's skill; it is no criterion's subject.

Criteria, declared before any small run: accuracy (relative tolerance 1e-2) of ``mcts`` above
``flat``, above ``mcts_noprune`` and above ``mcts_nopriors``; pruning removes at least 30 % of the
valid candidates (the paper's expectation of substantial duplication). ``tiny`` runs the same
pipeline with the scripted control model in place of the LLM (no model download), 2 problems.

Outcome at ``small`` (seeds 0-2, 2026-12-04, 408 s on a loaded machine): not reproduced. SmolLM2-135M
gets no problem right in any arm (9 problems); only about 30 % of its section samples parse and
compile, a flat complete formulation never does, and pruning merges 16 % of the valid candidates.
In the scripted control (12 problems per seed, 24 completions), flat best-of-N (0.86) beats MCTS
(0.47); removing priors lowers MCTS accuracy (0.31) and removing pruning raises it (0.72): at this
budget MCTS follows about one root-to-leaf path, and merging duplicates hides how often a candidate
was sampled, which is the signal a noisy ranker needs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, NeedsResource, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields
from icml25.llm.chat import ChatModel, Conversation, GenerationConfig

from .data import FAMILIES, is_correct, synthetic_problems
from .roles import Budget, LLMRoles, scripted_control_model
from .search import AutoformulationMCTS, FlatSampler

ARMS = ("mcts", "flat", "mcts_noprune", "mcts_nopriors")


@dataclass(frozen=True)
class AutoformulationCheckConfig:
    """One configuration of the check.

    Args:
        model: ``"smollm2-135m-instruct"`` (embedded), an HF folder / GGUF, ``"openai:NAME"``, or
            ``"scripted"`` (the labelled control model for every arm; smoke only).
        n_problems: generated problems per seed (cycling over the six families).
        budget: LLM completions per problem and arm.
        n_samples, n_top, n_rank, n_judge: formulator samples per expansion, children kept, ranking
            samples, judge samples per solved leaf (official: 8, 3, 5, 5).
        flat_batch: complete formulations per flat request.
        temperature: sampling temperature of every role.
        level_tokens, flat_tokens, rank_tokens, judge_tokens: new-token limits.
        control: also run the four methods with the scripted control model.
        control_problems: generated problems per seed for the control arms (cheap: no LLM).
        control_epsilon, control_noise: its per-field error rate and judge noise.
        rel_tol: correctness tolerance (also reported at 1e-4).
        batch_size: conversations per forward pass of the local model.
    """

    model: str = "smollm2-135m-instruct"
    n_problems: int = 3
    budget: int = 24
    n_samples: int = 4
    n_top: int = 3
    n_rank: int = 1
    n_judge: int = 1
    flat_batch: int = 4
    temperature: float = 0.8
    level_tokens: int = 24
    flat_tokens: int = 64
    rank_tokens: int = 8
    judge_tokens: int = 3
    control: bool = True
    control_problems: int = 12
    control_epsilon: float = 0.35
    control_noise: float = 1.0
    rel_tol: float = 1e-2
    batch_size: int = 8

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "n_problems",
                "control_problems",
                "budget",
                "n_samples",
                "n_top",
                "n_rank",
                "n_judge",
                "flat_batch",
                "level_tokens",
                "flat_tokens",
                "rank_tokens",
                "judge_tokens",
                "batch_size",
            ),
            positive=("rel_tol",),
            non_negative=("temperature", "control_noise"),
        )
        if not 0 <= self.control_epsilon <= 1:
            raise ValueError(f"control_epsilon must lie in [0, 1], got {self.control_epsilon}")


_SMALL = ("small", "full")
CLAIM = Claim(
    statement=(
        "At an equal budget of LLM completions, MCTS over the formulation hierarchy with LLM ranking "
        "priors and symbolic pruning finds correct formulations (optimal value matches the reference) "
        "more often than flat best-of-N sampling, MCTS without pruning, and MCTS without priors; pruning "
        "removes a substantial share of candidates."
    ),
    source="Abstract; Sec. 5 (NL4OPT accuracy, ablations of pruning and value estimation)",
    ours="mcts",
    baselines=("flat", "mcts_noprune", "mcts_nopriors"),
    criteria=(
        Criterion(
            "beats_flat",
            arm="mcts",
            metric="accuracy",
            op=">",
            other_arm="flat",
            description="MCTS+pruning+priors is more accurate than flat best-of-N at equal budget",
        ),
        Criterion(
            "pruning_helps",
            arm="mcts",
            metric="accuracy",
            op=">",
            other_arm="mcts_noprune",
            description="removing symbolic pruning lowers accuracy",
        ),
        Criterion(
            "priors_help",
            arm="mcts",
            metric="accuracy",
            op=">",
            other_arm="mcts_nopriors",
            description="replacing LLM priors by uniform ones lowers accuracy",
        ),
        Criterion(
            "pruning_substantial",
            arm="mcts",
            metric="pruned_fraction",
            op=">=",
            threshold=0.3,
            description="symbolic pruning merges >= 30% of the valid candidates",
        ),
        Criterion(
            "tiny_runs",
            arm="mcts",
            metric="valid_fraction",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="smoke: some proposed components parse and compile",
        ),
    ),
    headline="beats_flat",
    headline_baseline="flat.accuracy",
    min_seeds=3,
    setup_notes=(
        "SmolLM2-135M-Instruct (embedded, CPU) plays formulator, ranker and judge; generated NL4OPT-style "
        "LP/MILP word problems (six families) with HiGHS reference optima; equal budgets of LLM completions "
        "per problem (paper: GPT-4o, NL4OPT/IndustryOR/ComplexOR/MAMO, a fully expanded tree). Labelled "
        "control arms use a scripted proposer/judge on the same problems."
    ),
    requires=("llm",),
)


class MemoChatModel(ChatModel):
    """Answers a repeated (conversation, config) request from memory (common random numbers)."""

    def __init__(self, backend: ChatModel) -> None:
        self.backend = backend
        self.name = f"memo:{backend.name}"
        self.memo: dict[str, list[str]] = {}
        self.backend_requests = 0

    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig) -> list[list[str]]:
        out: list[list[str] | None] = []
        todo = []
        for conv in conversations:
            key = hashlib.sha256(
                json.dumps([list(map(dict, conv)), dataclasses.asdict(config)], sort_keys=True).encode()
            ).hexdigest()
            out.append(self.memo.get(key))
            if out[-1] is None:
                todo.append((len(out) - 1, key, conv))
        if todo:
            self.backend_requests += len(todo)
            fresh = self.backend.generate([c for _, _, c in todo], config)
            for (i, key, _), replies in zip(todo, fresh, strict=True):
                self.memo[key] = replies
                out[i] = replies
        return [r for r in out if r is not None]


def _load_model(spec: str, batch_size: int) -> ChatModel:
    try:
        if spec.startswith("openai:"):
            from icml25.llm.models import load_chat_model

            return load_chat_model(spec, cache=False)
        from icml25.llm.local import LocalChatModel
        from icml25.llm.models import load_causal_lm

        model, tokenizer = load_causal_lm(spec)
        return LocalChatModel(model, tokenizer, name=f"local:{spec}", batch_size=batch_size)
    except (ImportError, FileNotFoundError, OSError) as err:
        raise NeedsResource("llm", f"cannot load {spec}: {err}") from err


def _run_arms(
    chat: ChatModel,
    problems: Sequence[Any],
    config: AutoformulationCheckConfig,
    seed: int,
    prefix: str,
    ctx: RunContext,
) -> tuple[dict[str, dict[str, float]], list[dict[str, Any]]]:
    metrics: dict[str, dict[str, float]] = {}
    records: list[dict[str, Any]] = []
    for arm in ARMS:
        roles = LLMRoles(
            chat,
            temperature=config.temperature,
            level_tokens=config.level_tokens,
            flat_tokens=config.flat_tokens,
            rank_tokens=config.rank_tokens,
            judge_tokens=config.judge_tokens,
            seed=seed,
        )
        searcher: AutoformulationMCTS | FlatSampler
        if arm == "flat":
            searcher = FlatSampler(roles, batch=config.flat_batch, n_judge=config.n_judge)
        else:
            searcher = AutoformulationMCTS(
                roles,
                n_samples=config.n_samples,
                n_top=config.n_top,
                n_rank=config.n_rank,
                n_judge=config.n_judge,
                prune=arm != "mcts_noprune",
                priors=arm != "mcts_nopriors",
            )
        acc, acc4, cover, solved, requests, completions, pruned, valid, invalid, leaves = (
            [] for _ in range(10)
        )
        for k, problem in enumerate(problems):
            ctx.progress(f"{prefix}{arm}", k, len(problems))
            roles.reset(seed * 10_000 + k)  # the same seeds in every arm: identical requests are shared
            budget = Budget(config.budget)
            result = searcher.search(problem.text, budget)
            acc.append(is_correct(result.value, problem.answer, rel_tol=config.rel_tol))
            acc4.append(is_correct(result.value, problem.answer, rel_tol=1e-4))
            cover.append(
                any(is_correct(leaf.value, problem.answer, rel_tol=config.rel_tol) for leaf in result.leaves)
            )
            solved.append(result.value is not None)
            requests.append(budget.requests)
            completions.append(budget.completions)
            pruned.append(result.stats["pruned"])
            valid.append(result.stats["valid"])
            invalid.append(result.stats["invalid"])
            leaves.append(result.stats["leaves"])
            records.append(
                {
                    "arm": prefix + arm,
                    "problem": problem.uid,
                    "answer": problem.answer,
                    "value": result.value,
                    "correct": acc[-1],
                    "formulation": result.form.to_text() if result.form is not None else None,
                    "stats": result.stats,
                    "by_role": dict(budget.by_role),
                }
            )
        ctx.progress(f"{prefix}{arm}", len(problems), len(problems))
        proposed = sum(valid) + sum(invalid)
        metrics[prefix + arm] = {
            "accuracy": float(np.mean(acc)),
            "accuracy_1e-4": float(np.mean(acc4)),
            "coverage": float(np.mean(cover)),
            "solved_fraction": float(np.mean(solved)),
            "llm_requests": float(np.mean(requests)),
            "llm_completions": float(np.mean(completions)),
            "pruned_fraction": float(sum(pruned) / sum(valid)) if sum(valid) else 0.0,
            "valid_fraction": float(sum(valid) / proposed) if proposed else 0.0,
            "leaves": float(np.mean(leaves)),
        }
    return metrics, records


class AutoformulationCheck(ClaimCheck[AutoformulationCheckConfig]):
    slug = "autoformulation"
    claim = CLAIM
    presets = {
        "tiny": AutoformulationCheckConfig(
            model="scripted", n_problems=2, budget=40, n_samples=6, control=False
        ),
        "small": AutoformulationCheckConfig(),
        "full": AutoformulationCheckConfig(
            n_problems=240,
            budget=512,
            n_samples=8,
            n_top=3,
            n_rank=5,
            n_judge=5,
            level_tokens=256,
            flat_tokens=768,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def claim_for(self, config: AutoformulationCheckConfig) -> Claim:
        if config.model == "smollm2-135m-instruct":
            return self.claim
        who = "the scripted control model (not an LLM)" if config.model == "scripted" else config.model
        return dataclasses.replace(
            self.claim,
            setup_notes=f"{who} plays formulator, ranker and judge; {config.n_problems} generated problems "
            f"per seed; budget {config.budget} completions per problem and arm.",
        )

    def run_seed(self, config: AutoformulationCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        problems = synthetic_problems(config.n_problems, seed=seed)
        control = scripted_control_model(
            problems, epsilon=config.control_epsilon, judge_noise=config.control_noise, seed=seed
        )
        notes = []
        if config.model == "scripted":
            chat: ChatModel = control
            notes.append("model: scripted control (reference formulations with errors), not an LLM")
        else:
            chat = _load_model(config.model, config.batch_size)
            notes.append(f"model: {config.model}")
        memo = MemoChatModel(chat)
        metrics, records = _run_arms(memo, problems, config, seed, "", ctx)
        metrics["mcts"]["backend_requests_all_arms"] = float(memo.backend_requests)
        if config.control and config.model != "scripted":
            ctrl_problems = synthetic_problems(config.control_problems, seed=seed)
            ctrl_memo = MemoChatModel(
                scripted_control_model(
                    ctrl_problems, epsilon=config.control_epsilon, judge_noise=config.control_noise, seed=seed
                )
            )
            ctrl_metrics, ctrl_records = _run_arms(ctrl_memo, ctrl_problems, config, seed, "control_", ctx)
            metrics.update(ctrl_metrics)
            records += ctrl_records
            notes.append(
                f"control_* arms: scripted proposer/judge on {config.control_problems} problems "
                "(labelled control isolating the search, not an LLM)"
            )
        return SeedOutcome(
            metrics=metrics,
            series={
                "records": records,
                "families": sorted({p.family for p in problems}),
                "all_families": list(FAMILIES),
            },
            notes=tuple(notes),
        )

    def make_figures(
        self, config: AutoformulationCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import OURS_COLOR, PALETTE, new_figure

        groups = [""] + (["control_"] if any("control_mcts" in o.metrics for o in outcomes) else [])
        fig, axes = new_figure(ncols=2, width=8.4)
        x = np.arange(len(ARMS))
        for g, prefix in enumerate(groups):
            for ax, metric in zip(axes, ("accuracy", "pruned_fraction"), strict=True):
                vals = np.array([[o.metrics[prefix + a][metric] for a in ARMS] for o in outcomes])
                label = "SmolLM2 / model" if not prefix else "scripted control"
                ax.bar(
                    x + (g - 0.5 * (len(groups) - 1)) * 0.38,
                    vals.mean(0),
                    width=0.38,
                    yerr=vals.std(0) if len(outcomes) > 1 else None,
                    color=OURS_COLOR if not prefix else PALETTE[1],
                    label=label,
                )
                ax.set_xticks(x, [a.replace("_", "\n") for a in ARMS])
                ax.set(ylabel=metric.replace("_", " "), ylim=(0, 1.05))
        axes[0].legend()
        axes[0].set_title("accuracy at equal LLM budget")
        axes[1].set_title("share of candidates pruned")
        ctx.save_figure(
            fig,
            "accuracy_by_arm",
            "Accuracy (optimal value within 1% of the reference) and the share of valid candidates merged by "
            "symbolic pruning, per arm, mean and sd over seeds; the model's arms and the scripted control's.",
        )


CHECK = AutoformulationCheck()
