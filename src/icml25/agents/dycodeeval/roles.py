"""The four DyCodeEval agent roles as prompts over a :class:`~icml25.llm.chat.ChatModel`, and the pipeline.

*DyCodeEval: Dynamic Benchmarking of Reasoning Capabilities in Code Large Language Models Under Data
Contamination* (Chen et al., ICML 2025, https://arxiv.org/abs/2503.04149), Sec. 3 and the official
``gen_problem.py``: scenario proposer -> context generator -> problem rewriter -> validator, then
``make_new_code_task`` (docstring replacement). The prompts are our own wording of the paper's
specifications (``_dycodeeval_pt.py``); sampling settings are the paper's (proposer T = 0.8,
100 tokens; context T = 0.6, top-p 0.95, 200 tokens; rewriter T = 0.6, top-p 0.95, 512 tokens;
validator T = 0.2, 10 tokens, keep iff the reply starts with "yes").

On top of the LLM validator, :class:`ExecutionValidator` keeps a variant only if it is
semantically equivalent by execution: the variant prompt parses, the entry function's signature is
unchanged, and the canonical solution under the variant's prompt passes the original tests in the
sandbox (the metamorphic relation the paper relies on).

A context or rewrite reply without its ``<context>`` / ``<new_problem>`` tag is rejected (stage
``format``), as the official code only keeps tagged text; ``lenient_tags=True`` restores our earlier
choice for weak models (the whole reply is used, counted in the format-fallback rates). Every
variant's fate is kept as a :class:`VariantRecord`.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from icml25.core.validate import check_fields
from icml25.llm.chat import ChatModel, Conversation, GenerationConfig
from icml25.llm.code_eval import build_program
from icml25.llm.sandbox import run_python

from .task import (
    CodeTask,
    extract_function_params,
    extract_tag,
    function_signature,
    infer_detailed_types,
    literal_call_inputs,
    normalize_scenario,
)

__all__ = [
    "INITIAL_DOMAINS",
    "INITIAL_EXAMPLE",
    "DyCodeEvalConfig",
    "ScenarioProposer",
    "ContextGenerator",
    "ProblemRewriter",
    "LLMValidator",
    "ExecutionValidator",
    "VariantRecord",
    "GenerationReport",
    "DyCodeEvalGenerator",
    "ROLE_TAGS",
    "safe_generate",
    "summarize",
]

INITIAL_DOMAINS = ("banking", "healthcare", "education", "transportation", "social networking")
INITIAL_EXAMPLE = "Banking: fraud detection in card transactions"
ROLE_TAGS = {
    "proposer": "DyCodeEval scenario proposer",
    "context": "DyCodeEval context generator",
    "rewriter": "DyCodeEval problem rewriter",
    "validator": "DyCodeEval validator",
}


@dataclass(frozen=True)
class DyCodeEvalConfig:
    """Pipeline settings; defaults are the paper's (50 scenarios x 10 contexts per problem).

    Args:
        scenario_num: stop proposing after more than this many distinct scenarios.
        context_num: variants (scenarios) per seed problem.
        prompts_per_round: proposer prompts per round (paper: 10).
        max_rounds: give up proposing after this many rounds (our addition: a weak model may
            never reach ``scenario_num``).
        use_llm_validator: also require the LLM validator's "yes".
        proposer_tokens, context_tokens, rewriter_tokens, validator_tokens: max new tokens.
        exec_timeout_s: sandbox limit for the execution check.
        lenient_tags: accept a context / rewrite reply without its tag (the whole reply is used);
            default False, the official behaviour: such a reply is rejected at stage ``format``.
    """

    scenario_num: int = 50
    context_num: int = 10
    prompts_per_round: int = 10
    max_rounds: int = 10
    use_llm_validator: bool = True
    proposer_tokens: int = 100
    context_tokens: int = 200
    rewriter_tokens: int = 512
    validator_tokens: int = 10
    exec_timeout_s: float = 3.0
    lenient_tags: bool = False

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "scenario_num",
                "context_num",
                "prompts_per_round",
                "max_rounds",
                "proposer_tokens",
                "context_tokens",
                "rewriter_tokens",
                "validator_tokens",
            ),
        )


def _conv(role: str, user: str) -> Conversation:
    return [
        {"role": "system", "content": f"You are the {ROLE_TAGS[role]}."},
        {"role": "user", "content": user},
    ]


class ScenarioProposer:
    """Proposes ``Domain: subtopic`` scenarios from a growing domain/example pool (Sec. 3, role 1)."""

    def __init__(self, config: DyCodeEvalConfig) -> None:
        self.config = config

    @staticmethod
    def prompt(domains: Sequence[str], example: str) -> Conversation:
        return _conv(
            "proposer",
            "List new real-world application scenarios for programming problems. Each scenario is "
            "general but practical, written as 'Domain: subtopic', one per line, each inside "
            "<scenario></scenario> tags.\n"
            f"Domains to draw from: {', '.join(domains)}.\n"
            f"Example: <scenario>{example}</scenario>",
        )

    def propose(self, model: ChatModel, rng: random.Random) -> tuple[list[str], int]:
        """Return (distinct scenarios, replies without a <scenario> tag)."""
        domains, examples = list(INITIAL_DOMAINS), [INITIAL_EXAMPLE]
        found: dict[str, None] = {}
        fallbacks = 0
        for round_ in range(self.config.max_rounds):
            convs = [
                self.prompt(rng.sample(domains, min(5, len(domains))), rng.choice(examples))
                for _ in range(self.config.prompts_per_round)
            ]
            cfg = GenerationConfig(
                temperature=0.8, max_tokens=self.config.proposer_tokens, seed=rng.randrange(2**31)
            )
            for reply in safe_generate(model, convs, cfg):
                if isinstance(reply, Exception):
                    fallbacks += 1
                    continue
                items = extract_tag(reply, "scenario")
                if not items:
                    fallbacks += 1
                    items = reply.splitlines()
                for item in items:
                    for line in item.splitlines():
                        s = normalize_scenario(line)
                        if s is not None and s not in found:
                            found[s] = None
                            examples.append(s)
                            domain = s.split(":")[0].strip().lower()
                            if domain not in domains:
                                domains.append(domain)
            if len(found) > self.config.scenario_num:
                break
            del round_
        return list(found), fallbacks


class ContextGenerator:
    """Describes each parameter's role in a scenario (Sec. 3, role 2)."""

    @staticmethod
    def prompt(task: CodeTask, scenario: str) -> Conversation:
        params = extract_function_params(task.prompt, task.entry_point)
        types = infer_detailed_types(literal_call_inputs(task))
        lines = [
            f"{p}: {types[i] if i < len(types) and len(types) == len(params) else 'unknown'}"
            for i, p in enumerate(params)
        ]
        return _conv(
            "context",
            f"Problem: {task.instruction}\nVariables:\n" + "\n".join(lines) + f"\nScenario: {scenario}\n"
            "For each variable write exactly one line that says what it represents in this scenario. "
            "Put all lines inside <context></context> tags.",
        )


class ProblemRewriter:
    """Rewrites the instruction into the scenario, same algorithm and constraints (Sec. 3, role 3)."""

    @staticmethod
    def prompt(task: CodeTask, scenario: str, context: str) -> Conversation:
        n = task.instruction.count(".") + 1
        return _conv(
            "rewriter",
            f"Original problem: {task.instruction}\nScenario: {scenario}\n"
            f"Variables in the scenario:\n{context}\n"
            "Rewrite the problem so that it is set in the scenario. Keep its complexity, constraints "
            "and solution approach; give no input/output examples; be clear and concise; use "
            f"between {n} and {n + 1} sentences. "
            "Put the new problem inside <new_problem></new_problem> tags.",
        )


class LLMValidator:
    """Binary judge: do the original and rewritten instructions mean the same (Sec. 3, role 4)."""

    @staticmethod
    def prompt(original: str, rewritten: str) -> Conversation:
        return _conv(
            "validator",
            f"Problem A: {original}\nProblem B: {rewritten}\n"
            "Do A and B ask for the same computation, so that one program solves both? Answer Yes or No.",
        )

    @staticmethod
    def accepts(reply: str) -> bool:
        return reply.strip().lower().startswith("yes")  # the paper's rule (ProblemGen.verifier)


class ExecutionValidator:
    """Keeps a variant iff its prompt parses, its signature is the seed's, and the canonical solution
    under the variant's prompt passes the original tests (in the sandbox)."""

    def __init__(self, timeout_s: float = 3.0, memory_mb: int = 512) -> None:
        self.timeout_s, self.memory_mb = timeout_s, memory_mb

    def check(self, seed: CodeTask, variant: CodeTask) -> tuple[bool, str]:
        try:
            same = function_signature(variant.prompt, variant.entry_point) == function_signature(
                seed.prompt, seed.entry_point
            )
        except (SyntaxError, ValueError) as err:
            return False, f"parse: {err}"
        if not same:
            return False, "signature changed"
        result = run_python(
            build_program(variant, variant.canonical_solution),
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
        )
        if not result.ok:
            return False, f"execution: {result.status} {result.reason}"[:200]
        return True, ""


@dataclass(frozen=True)
class VariantRecord:
    """What happened to one (seed, scenario) attempt.

    ``status``: ``accepted`` or ``rejected``; ``stage``: where it was decided (``model_error``,
    ``format``, ``llm_validator``, ``signature``, ``execution``, ``accepted``).
    """

    seed_id: str
    scenario: str
    status: str
    stage: str
    reason: str = ""
    instruction: str = ""
    context_fallback: bool = False
    rewrite_fallback: bool = False


@dataclass(frozen=True)
class GenerationReport:
    """Variants per seed (accepted only), every attempt's record, the scenarios and the backend name."""

    variants: dict[str, list[CodeTask]]
    records: tuple[VariantRecord, ...]
    scenarios: tuple[str, ...]
    backend: str
    proposer_fallbacks: int = 0
    stats: dict[str, float] = field(default_factory=dict)


def _clean_rewrite(text: str) -> str:
    text = re.sub(r"```.*?(```|\Z)", " ", text, flags=re.DOTALL)
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith(">>>"))
    text = text.replace('"""', "'''").replace("\\", "/").strip()
    return re.sub(r"\s+\n", "\n", text)[:1500]


class DyCodeEvalGenerator:
    """Runs the four roles over seed tasks and keeps validated variants (the paper's ``gen_problem.py``).

    Args:
        model: the generator LLM (any :class:`ChatModel`; the paper uses Claude 3.5).
        config: :class:`DyCodeEvalConfig`.
        seed: seeds scenario sampling and the sampling seeds sent to the model.
        callback: called with the name of each stage as it starts (progress reporting).
    """

    def __init__(
        self,
        model: ChatModel,
        config: DyCodeEvalConfig | None = None,
        *,
        seed: int = 0,
        callback: Callable[[str], None] | None = None,
    ) -> None:
        self.model = model
        self.callback = callback
        self.config = config or DyCodeEvalConfig()
        self.seed = seed
        self.executor = ExecutionValidator(timeout_s=self.config.exec_timeout_s)

    def _stage(self, name: str) -> None:
        if self.callback is not None:
            self.callback(name)

    def generate(self, tasks: Sequence[CodeTask], scenarios: Sequence[str] | None = None) -> GenerationReport:
        """Variants for every task; ``scenarios`` skips the proposer (e.g. a persisted pool)."""
        if not tasks:
            raise ValueError("tasks must not be empty")
        rng = random.Random(self.seed)
        cfg = self.config
        fallbacks = 0
        self._stage("proposer")
        if scenarios is None:
            scenarios, fallbacks = ScenarioProposer(cfg).propose(self.model, rng)
        pool = list(dict.fromkeys(scenarios))
        if not pool:
            records = tuple(
                VariantRecord(t.seed_id, "", "rejected", "format", "no scenario proposed") for t in tasks
            )
            return GenerationReport(
                {t.seed_id: [] for t in tasks}, records, (), self.model.name, fallbacks, summarize(records)
            )
        jobs = [(task, s) for task in tasks for s in rng.sample(pool, min(cfg.context_num, len(pool)))]

        self._stage("context")
        ctx_cfg = GenerationConfig(
            temperature=0.6, top_p=0.95, max_tokens=cfg.context_tokens, seed=rng.randrange(2**31)
        )
        ctx_replies = safe_generate(self.model, [ContextGenerator.prompt(t, s) for t, s in jobs], ctx_cfg)
        errors: dict[int, str] = {}
        contexts, ctx_fb = [], []
        for i, reply in enumerate(ctx_replies):
            if isinstance(reply, Exception):
                errors[i], reply = f"model error (context): {type(reply).__name__}: {reply}"[:200], ""
            tagged = extract_tag(reply, "context")
            ctx_fb.append(not tagged)
            contexts.append((tagged[0] if tagged else reply).strip()[:800])

        self._stage("rewriter")
        rw_cfg = GenerationConfig(
            temperature=0.6, top_p=0.95, max_tokens=cfg.rewriter_tokens, seed=rng.randrange(2**31)
        )
        # strict tags: a job whose context reply has no <context> tag is not sent to the rewriter
        rw_todo = [i for i in range(len(jobs)) if cfg.lenient_tags or not ctx_fb[i]]
        rw_sent = safe_generate(
            self.model, [ProblemRewriter.prompt(*jobs[i], contexts[i]) for i in rw_todo], rw_cfg
        )
        rw_replies: list[str | Exception] = [""] * len(jobs)
        for i, reply in zip(rw_todo, rw_sent, strict=True):
            rw_replies[i] = reply
        rewrites, rw_fb = [], []
        for i, reply in enumerate(rw_replies):
            if isinstance(reply, Exception):
                errors.setdefault(i, f"model error (rewriter): {type(reply).__name__}: {reply}"[:200])
                reply = ""
            if i in errors:
                reply = ""
            tagged = extract_tag(reply, "new_problem")
            rw_fb.append(not tagged)
            untagged = (not tagged or ctx_fb[i]) and not cfg.lenient_tags
            rewrites.append("" if untagged else _clean_rewrite(tagged[0] if tagged else reply))

        self._stage("validator")
        verdicts = [True] * len(jobs)
        if cfg.use_llm_validator:
            val_cfg = GenerationConfig(
                temperature=0.2, max_tokens=cfg.validator_tokens, seed=rng.randrange(2**31)
            )
            todo = [i for i, r in enumerate(rewrites) if r]
            replies = safe_generate(
                self.model, [LLMValidator.prompt(jobs[i][0].instruction, rewrites[i]) for i in todo], val_cfg
            )
            for i, reply in zip(todo, replies, strict=True):
                if isinstance(reply, Exception):
                    errors[i] = f"model error (validator): {type(reply).__name__}: {reply}"[:200]
                    verdicts[i] = False
                else:
                    verdicts[i] = LLMValidator.accepts(reply)

        self._stage("execution")
        variants: dict[str, list[CodeTask]] = {t.seed_id: [] for t in tasks}
        found: list[VariantRecord] = []
        counter: Counter[str] = Counter()
        for i, ((task, scenario), text) in enumerate(zip(jobs, rewrites, strict=True)):

            def record(stage: str, reason: str = "", task: CodeTask = task, i: int = i) -> VariantRecord:
                return VariantRecord(
                    seed_id=task.seed_id,
                    scenario=jobs[i][1],
                    status="accepted" if stage == "accepted" else "rejected",
                    stage=stage,
                    reason=reason,
                    instruction=rewrites[i],
                    context_fallback=ctx_fb[i],
                    rewrite_fallback=rw_fb[i],
                )

            if i in errors:
                found.append(record("model_error", errors[i]))
                continue
            if not text:
                missing = "no <context> tag" if ctx_fb[i] else "no <new_problem> tag"
                untagged = (rw_fb[i] or ctx_fb[i]) and not cfg.lenient_tags
                found.append(record("format", missing if untagged else "empty rewrite"))
                continue
            if not verdicts[i]:
                found.append(record("llm_validator", "judged different"))
                continue
            counter[task.seed_id] += 1
            try:
                variant = task.with_instruction(
                    text, task_id=f"{task.seed_id}#v{counter[task.seed_id]}", scenario=scenario
                )
            except (SyntaxError, ValueError) as err:
                found.append(record("signature", f"parse: {err}"))
                continue
            ok, reason = self.executor.check(task, variant)
            if not ok:
                found.append(
                    record("signature" if reason.startswith(("signature", "parse")) else "execution", reason)
                )
                continue
            variants[task.seed_id].append(variant)
            found.append(record("accepted"))
        recs = tuple(found)
        return GenerationReport(variants, recs, tuple(pool), self.model.name, fallbacks, summarize(recs))


def safe_generate(
    model: ChatModel, convs: Sequence[Conversation], config: GenerationConfig
) -> list[str | Exception]:
    """One reply per conversation; a backend error (e.g. an endpoint timeout) becomes that entry's value.

    A failing batch is retried one conversation at a time so that one bad request costs only itself.
    """
    if not convs:
        return []
    try:
        return [r[0] for r in model.generate(convs, config)]
    except Exception:  # noqa: BLE001 - any backend failure is recorded, the run continues
        out: list[str | Exception] = []
        for conv in convs:
            try:
                out.append(model.generate([conv], config)[0][0])
            except Exception as err:  # noqa: BLE001
                out.append(err)
        return out


def summarize(records: Sequence[VariantRecord]) -> dict[str, float]:
    """Counts per stage, acceptance rate and format-fallback rates of a generation run."""
    n = len(records)
    stages = Counter(r.stage for r in records)
    out: dict[str, float] = {"proposed": float(n), "accepted": float(stages["accepted"])}
    out["acceptance_rate"] = stages["accepted"] / n if n else 0.0
    for stage in ("model_error", "format", "llm_validator", "signature", "execution"):
        out[f"rejected_{stage}"] = float(stages[stage])
    out["context_format_fallback_rate"] = sum(r.context_fallback for r in records) / n if n else 0.0
    out["rewrite_format_fallback_rate"] = sum(r.rewrite_fallback for r in records) / n if n else 0.0
    return out
