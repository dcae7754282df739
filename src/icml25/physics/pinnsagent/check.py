"""Claim check for *PINNsAgent: Automated PDE Surrogation with Large Language Models* (Wuwu et al.,
ICML 2025, arXiv 2501.12053).

Claim (Table 2, Table 3): with five trainings per new PDE, PINNsAgent (PGKR warm start + memory-tree
search) finds PINN configurations with lower test error than random search and Bayesian
optimisation (TPE) on most PDEs, and removing PGKR degrades it.

The check separates the mechanism the paper proposes from the quality of the planner LLM:

    pinnsagent         PGKR warm start + PUCT memory tree whose expansions come from a SCRIPTED planner
                       (LLM-free surrogate of the planner, a labelled control: it edits the parameters
                       the knowledge-base scores rank highest, values by success rate). The headline.
    pinnsagent_no_pgkr the same tree started from the default configuration (ablation, Table 3).
    pinnsagent_llm     the same tree with expansions proposed by the planner LLM (embedded
                       SmolLM2-135M-Instruct by default; replies that do not parse fall back to the
                       scripted planner and are counted).
    random, tpe        uniform random search; optuna TPESampler (2 startup trials), as in the paper.
References (never baselines to beat):
    default_config     one training of the default configuration: what no search scores.
    kb_best            the best of the target's own knowledge-base runs (``kb_per_pde`` random
                       trainings, 8x the search budget), which no arm sees: what a long search reaches.

Protocol. 1. The knowledge base (``kb_per_pde`` random trainings per PDE, the default configuration
first, ``steps`` Adam-family steps each) is built ONCE with a fixed seed and shared by every seed
(as the paper's is precomputed). 2. For each target PDE the leave-one-out base (its rows removed)
feeds PGKR (top-1 by weighted label cosine) and the memory tree's parameter scores (the release's
exploration scores, continuous parameters with the release's continuous formula). 3. Every arm gets
``budget`` trainings of the same length on the same memoised objective (fixed training seed): no arm
has a tuned hyperparameter (the learning rate is searched; PUCT c, temperatures and TPE's startup
count are the paper's/release's values), so every arm gets the same (empty) validation sweep.
4. Metric per (seed, PDE): the best log10 relative L2 test error found (capped at 2). A seed
changes the searches' randomness (scripted edits, random draws, TPE, LLM sampling).

Criteria (declared before any small-scale number was seen). Arm-vs-arm criteria are paired over
(seed, PDE) items with the two-stage bootstrap; smallest effect of interest 0.2 decades of error
(a 1.6x lower error): the paper's gaps to random search are 1-4 decades (Table 2), and 0.2 decades is
the smallest improvement we would call better at five trainings (the earlier 100-step run had a seed
spread of 0.12-0.21 decades per PDE).
    * beats_random (headline), beats_tpe: pinnsagent's best log10 L2 < random's / TPE's.
    * pgkr_helps: pinnsagent's < pinnsagent_no_pgkr's (Table 3).
    * wins_most: fraction of PDEs where pinnsagent beats both random and TPE (per seed, mean) >= 0.5
      (the paper: 12/14).
    * llm_beats_random: pinnsagent_llm's < random's (behind the scoped gate llm_replies_parse).
Gates:
    * search_has_headroom: kb_best is >= 0.3 decades below default_config (mean over PDEs): the
      configuration matters on these PDEs by more than the smallest effect, so search can show.
    * llm_replies_parse (scoped, guards llm_beats_random only): >= 50 % of the LLM's replies parse into
      a new in-space edit; else the LLM path is `needs` a stronger planner LLM.
Tiny scale checks only that the pipeline runs (two PDEs, a tiny randomly initialised Llama with a
character-level tokenizer, both built in code, as the "LLM"; its noise exercises the fallback).

Changed after seeing run 20261205T231616888842Z-b0937a (7 PDEs x 3 seeds, 150 steps: headline
-0.172 decades, 95 % CI [-0.468, +0.116], about 2.9x the units needed; the LLM gate passed at exactly
0.50), because the headline's spread is between target PDEs and the parse rate sat on the gate's
threshold: (1) three more target PDEs from the suite's families (Helmholtz 2-D, a 5-D Poisson as in
PINNacle's PNd, a 2-D heat equation), ten in all, at 100 training steps instead of 150 so that the
run stays within its time; (2) the planner prompt shows configurations as ``name=value`` pairs (not
JSON, which SmolLM2 copied back unchanged), asks for one changed parameter with two one-key JSON
examples, and generation stops at the first ``}``. No criterion, threshold or smallest effect changed.

Changed for time only (issue 45: the small check took 664 s at one thread in the main job), not
after seeing any result of this change: the PINN trainer computes the residual's derivatives by
propagating value, gradient and the needed pure second derivatives forward through the layers in
one pass (``derivatives="jet"``) instead of one nested autograd call per derivative, domain,
boundary and initial-velocity points in the same pass, and torch's fused (Adam, AdamW, SGD) or
multi-tensor (RMSprop) optimizer step. Same design, PDEs, budgets, seeds, criteria and
thresholds; the loss is the same function, so the results differ from the earlier trainer
(``derivatives="autograd"``, kept op for op) only by float round-off growing along each training
(measured on the first 6 knowledge-base configurations of each of the ten PDEs, 100 steps, one
thread, interleaved: HEAD's trainer and ``derivatives="autograd"`` agree bit for bit on 8 of 8; jet against
autograd: median |delta log10 L2| 0, 90th percentile 1.5e-6 decades, 3 of 60 above 0.01 and one at
0.18 decades, a training that diverges differently; 1.72x faster in total, 1.27x-2.72x per PDE).

Changed for time only, a second time (issue 45: the planner LLM's prompt prefill was then the largest
part), not after seeing any result of the change: the embedded model reuses the keys and values of
the token prefix a prompt shares with a recent prompt (``prefix_reuse``; the ``prefix_cache`` of
:class:`~icml25.llm.local.LocalChatModel`:
the same batches, seeds, sampling and stopping as the local backend, each prompt's uncached tokens
encoded alone, the batch's caches left-padded into one). The planner prompts of one target share
their first ~450-650 of ~600-850 tokens round after round, so about a third of the prompt tokens are
encoded (seed 0: 11,046 of 28,904). The logits equal the local backend's up to round-off; replayed on the
40 recorded planner calls of seed 0 (one thread, interleaved with the local backend), the 40 replies
are identical and the calls take 2.13x less time. ``prefix_reuse=False``
runs the plain local backend. Same design, budgets, seeds, criteria and thresholds.

Deviations (config flags in brackets): ten small PDEs with closed-form or Cole-Hopf references
instead of PINNacle's 14; trainings of ``steps`` = 100 steps instead of 20,000; a reduced search space
(width <= ``max_width``, depth <= ``max_depth``, point counts <= ``max_points``); a knowledge base of
40 random runs per PDE instead of 136-369 converged ones; a scripted planner as the headline arm and a
135M model instead of GPT-4o for the LLM arm; the relative L2 error instead of the MSE (the scores are
invariant: log MSE = 2 log L2 + const per PDE, and the scores are min-max normalised per PDE);
``scoring="categorical"`` runs our earlier all-categorical scoring.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, NeedsResource, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields

from .agent import (
    AgentSearch,
    Evaluator,
    SearchTrace,
    build_knowledge_base,
    close_json,
    random_search,
    run_agents,
    tpe_search,
)
from .knowledge import PGKR, SCORINGS, KnowledgeBase, parameter_stats
from .pdes import PDE_SUITE
from .pinn import DEFAULT_SPACE, DERIVATIVES, SearchSpace

OURS = "pinnsagent"
NO_PGKR = "pinnsagent_no_pgkr"
LLM = "pinnsagent_llm"
BASELINES = ("random", "tpe")
REFERENCES = ("default_config", "kb_best")
SEARCH_ARMS = (OURS, NO_PGKR, LLM, *BASELINES)
ARMS = (*SEARCH_ARMS, *REFERENCES)
#: smallest effect of interest on best log10 relative L2 (decades)
EFFECT = 0.2
EFFECT_SOURCE = (
    "declared: 0.2 decades (1.6x lower error), the smallest gain we would call better at 5 trainings; "
    "the paper's gaps to random search are 1-4 decades (Table 2)"
)
_SMALL = ("small", "full")


@dataclass(frozen=True)
class PINNsAgentCheckConfig:
    """One claim-check configuration.

    Args:
        model: ``load_chat_model`` spec of the planner LLM (a local HF folder, GGUF, or
            ``openai:<name>``); ``"tiny-random"`` = :func:`tiny_chat_model`; ``""`` skips the LLM arm.
        cache: put the response cache in front of the model.
        prefix_reuse: a local model reuses the keys and values of the prompt prefix it shares with
            recent prompts (the local backend's ``prefix_cache``: same batches, seeds and sampling, the
            prefill computed once per shared prefix; ``False`` runs the plain local backend).
        pdes: the suite (every PDE is a target once).
        steps: training steps per PINN (knowledge base and searches alike).
        max_width, max_depth, max_points: caps on the search space (``max_points`` caps the domain
            points; the boundary points are capped at a quarter of it).
        kb_per_pde: knowledge-base trainings per PDE (built once, shared by the seeds).
        kb_seed: seed of the knowledge base's random configurations.
        budget: trainings per search.
        c: PUCT exploration constant.
        temperature, max_tokens: planner sampling.
        encoder: PGKR encoder (``labels`` or ``text``).
        scoring: parameter scoring of the memory tree (``official`` or ``categorical``).
        derivatives: how the PINN trainer differentiates the network (``jet``: derivatives propagated
            forward with the values, the default since the speed pass; ``autograd``: the earlier
            nested autograd calls, op for op).
        win_fraction_min: the wins criterion threshold.
        headroom_min: the headroom gate threshold (decades).
        llm_valid_min: the LLM-parse gate threshold.
    """

    model: str = "smollm2-135m-instruct"
    cache: bool = True
    prefix_reuse: bool = True
    pdes: tuple[str, ...] = (
        "poisson1d",
        "poisson2d",
        "helmholtz2d",
        "poissonnd",
        "heat1d",
        "heat2d",
        "wave1d",
        "advection1d",
        "burgers1d",
        "allen_cahn1d",
    )
    steps: int = 100
    max_width: int = 32
    max_depth: int = 4
    max_points: int = 256
    kb_per_pde: int = 40
    kb_seed: int = 10_000
    budget: int = 5
    c: float = 1.0
    temperature: float = 0.7
    max_tokens: int = 32
    encoder: str = "labels"
    scoring: str = "official"
    derivatives: str = "jet"
    win_fraction_min: float = 0.5
    headroom_min: float = 0.3
    llm_valid_min: float = 0.5

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "steps",
                "max_width",
                "max_depth",
                "max_points",
                "kb_per_pde",
                "budget",
                "max_tokens",
            ),
        )
        if len(self.pdes) < 2 or any(p not in PDE_SUITE for p in self.pdes):
            raise ValueError(f"pdes must name >= 2 PDEs of {sorted(PDE_SUITE)}, got {self.pdes}")
        if self.encoder not in ("labels", "text"):
            raise ValueError(f"encoder must be labels or text, got {self.encoder!r}")
        if self.scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {SCORINGS}, got {self.scoring!r}")
        if self.derivatives not in DERIVATIVES:
            raise ValueError(f"derivatives must be one of {DERIVATIVES}, got {self.derivatives!r}")

    def space(self) -> SearchSpace:
        """The search space with this config's caps."""
        v = dict(DEFAULT_SPACE)
        caps = {
            "depth": self.max_depth,
            "n_domain": self.max_points,
            "n_boundary": max(1, self.max_points // 4),
        }
        for key, cap in caps.items():
            v[key] = tuple(x for x in v[key] if x <= cap) or (min(v[key]),)
        return SearchSpace(v, max_width=self.max_width)


def _vs(name: str, arm: str, other: str, description: str) -> Criterion:
    return Criterion(
        name,
        arm=arm,
        metric="best_log_l2",
        op="<",
        other_arm=other,
        smallest_effect=EFFECT,
        effect_source=EFFECT_SOURCE,
        scales=_SMALL,
        description=description,
    )


def _criteria(config: PINNsAgentCheckConfig) -> tuple[Criterion, ...]:
    return (
        _vs(
            "beats_random",
            OURS,
            "random",
            "PINNsAgent (scripted planner) reaches a lower best log10 L2 than random search, paired over "
            "(seed, PDE)",
        ),
        _vs("beats_tpe", OURS, "tpe", "PINNsAgent (scripted planner) below TPE, paired over (seed, PDE)"),
        _vs(
            "pgkr_helps",
            OURS,
            NO_PGKR,
            "removing the PGKR warm start (start from the default configuration) raises the error",
        ),
        Criterion(
            "wins_most",
            arm=OURS,
            metric="win_fraction",
            op=">=",
            threshold=config.win_fraction_min,
            scales=_SMALL,
            description="fraction of PDEs where PINNsAgent beats both random and TPE >= win_fraction_min",
        ),
        _vs(
            "llm_beats_random",
            LLM,
            "random",
            "LLM path: PINNsAgent with the planner LLM below random search, paired over (seed, PDE)",
        ),
        Criterion(
            "tiny_runs",
            arm=OURS,
            metric="mean_best_log_l2",
            op="<=",
            threshold=2.0,
            scales=("tiny",),
            description="smoke: the pipeline returns a capped error",
        ),
    )


def _gates(config: PINNsAgentCheckConfig) -> tuple[Criterion, ...]:
    return (
        Criterion(
            "search_has_headroom",
            arm="kb_best",
            metric="gain_over_default",
            op=">=",
            threshold=config.headroom_min,
            scales=_SMALL,
            description=(
                "the best of the target's own knowledge-base runs is >= headroom_min decades below the "
                "default configuration (mean over PDEs): the configuration matters, so a search can show"
            ),
        ),
        Criterion(
            "llm_replies_parse",
            arm=LLM,
            metric="llm_valid_fraction",
            op=">=",
            threshold=config.llm_valid_min,
            scales=_SMALL,
            needs="a planner LLM whose replies parse into new in-space edits",
            guards=("llm_beats_random",),
            description=(
                "share of the LLM's replies that parse into a new in-space edit >= llm_valid_min (scoped: "
                "else only llm_beats_random is set aside)"
            ),
        ),
    )


CLAIM = Claim(
    statement=(
        "With five trainings per new PDE, PINNsAgent's physics-guided knowledge replay and memory-tree "
        "search finds PINN configurations with lower test error than random search and TPE, and removing "
        "the knowledge replay degrades it."
    ),
    source="Table 2, Table 3, Sec. 3.3-3.4, Sec. 4",
    ours=OURS,
    baselines=(NO_PGKR, *BASELINES, LLM),
    references=REFERENCES,
    controls=("kb_best",),
    criteria=_criteria(PINNsAgentCheckConfig()),
    gates=_gates(PINNsAgentCheckConfig()),
    headline="beats_random",
    min_seeds=3,
    setup_notes=(
        "Headline arm = LLM-free surrogate of the planner (scripted, a labelled control) on the paper's "
        "PGKR + memory tree; pinnsagent_llm = the embedded SmolLM2-135M-Instruct as planner (behind a "
        "scoped gate). 10 small PDEs (Poisson 1-D/2-D/5-D, Helmholtz 2-D, heat 1-D/2-D, wave, advection, "
        "Burgers via Cole-Hopf, manufactured Allen-Cahn); 100-step PINN trainings; knowledge base of 40 "
        "random trainings per PDE "
        "built once and shared by the seeds, used leave-one-out; the release's exploration scores; 5 "
        "trainings per search (paper: GPT-4o, 14 PINNacle PDEs, 20k iterations, 136-369 runs per PDE)."
    ),
    requires=("llm",),
)


@functools.cache
def tiny_chat_model() -> Any:
    """A tiny randomly initialised Llama (1 layer, width 16) with a character-level tokenizer, both
    built in code: a fast stand-in LLM for the smoke scale (its replies are noise)."""
    from icml25.llm.models import tiny_random_chat_model

    return tiny_random_chat_model()


#: the prefix-reusing models built in this process (their stores are emptied at every run's start,
#: so that a run's replies never depend on what ran before it in the process)
_PREFIX_MODELS: list[Any] = []


def _with_prefix_reuse(local: Any) -> Any:
    """``local`` (a :class:`~icml25.llm.local.LocalChatModel`) with a prefix cache of the last 24 prompts."""
    model = local.with_prefix_cache(24)
    _PREFIX_MODELS.append(model)
    return model


@functools.cache
def _chat_model(spec: str, cache: bool, prefix_reuse: bool) -> Any:
    try:
        if spec == "tiny-random":
            model = tiny_chat_model()
            return _with_prefix_reuse(model) if prefix_reuse else model
        from icml25.llm.models import load_chat_model

        model = load_chat_model(spec, cache=cache)
    except (ImportError, FileNotFoundError, OSError) as err:
        raise NeedsResource("llm", f"cannot load {spec}: {err}") from err
    if not prefix_reuse:
        return model
    from icml25.llm.cache import CachedChatModel
    from icml25.llm.local import LocalChatModel

    if isinstance(model, CachedChatModel) and isinstance(model.backend, LocalChatModel):
        # the same SQLite file and backend name: the replies are the local backend's up to round-off
        return CachedChatModel(_with_prefix_reuse(model.backend), model.path)
    if isinstance(model, LocalChatModel):
        return _with_prefix_reuse(model)
    return model  # an HTTP backend: its server does its own prompt caching


@functools.cache
def _evaluator(config: PINNsAgentCheckConfig) -> Evaluator:
    """One memoised objective per setting, shared by all seeds and arms."""
    return Evaluator(
        {p: PDE_SUITE[p] for p in config.pdes},
        config.space(),
        steps=config.steps,
        derivatives=config.derivatives,
    )


@functools.cache
def _knowledge_base(config: PINNsAgentCheckConfig) -> KnowledgeBase:
    """The knowledge base, built once per setting (fixed ``kb_seed``) and shared by every seed."""
    ev = _evaluator(config)
    return build_knowledge_base(config.pdes, ev.space, ev, per_pde=config.kb_per_pde, seed=config.kb_seed)


class PINNsAgentCheck(ClaimCheck[PINNsAgentCheckConfig]):
    slug = "pinnsagent"
    claim = CLAIM
    presets = {
        "tiny": PINNsAgentCheckConfig(
            model="tiny-random",
            cache=False,
            pdes=("poisson1d", "heat1d"),
            steps=20,
            max_width=16,
            kb_per_pde=2,
            budget=2,
            max_tokens=8,
        ),
        "small": PINNsAgentCheckConfig(),
        "full": PINNsAgentCheckConfig(
            pdes=tuple(PDE_SUITE),
            steps=20_000,
            max_width=64,
            max_depth=5,
            max_points=512,
            kb_per_pde=200,
            budget=5,
            max_tokens=256,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 10}

    def claim_for(self, config: PINNsAgentCheckConfig) -> Claim:
        claim = dataclasses.replace(CLAIM, criteria=_criteria(config), gates=_gates(config))
        if config.model != PINNsAgentCheckConfig.model:
            claim = dataclasses.replace(
                claim, setup_notes=f"Planner model {config.model or '(none)'}; " + CLAIM.setup_notes
            )
        return claim

    def begin_run(self, config: PINNsAgentCheckConfig) -> None:
        for model in _PREFIX_MODELS:  # the seeds of one run share the stored prefixes; runs do not
            model.clear_prefix_cache()

    def run_seed(self, config: PINNsAgentCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        ev = _evaluator(config)
        space = ev.space
        before = ev.trainings
        ctx.progress("knowledge base (shared by the seeds)", 0, 1)
        kb = _knowledge_base(config)
        ctx.progress("knowledge base (shared by the seeds)", 1, 1)
        pgkr = PGKR(PDE_SUITE, encoder=config.encoder)
        generate = self._generator(config, seed) if config.model else None
        reuse = [m for m in _PREFIX_MODELS if config.model and config.prefix_reuse]
        tokens_before = [(m.reused_tokens, m.computed_tokens) for m in reuse]

        traces: dict[str, dict[str, SearchTrace]] = {arm: {} for arm in SEARCH_ARMS}
        retrieved_names: dict[str, str] = {}
        agent_arms = (OURS, NO_PGKR, LLM) if generate is not None else (OURS, NO_PGKR)
        agents: dict[str, list[AgentSearch]] = {arm: [] for arm in agent_arms}
        for k, target in enumerate(config.pdes):
            loo = kb.without(target)
            stats = parameter_stats(loo, space, scoring=config.scoring)
            hits = pgkr.retrieve(PDE_SUITE[target], loo, k=1)
            retrieved_names[target] = hits[0].pde if hits else "(none: default config)"
            for j, arm in enumerate(agent_arms):
                agents[arm].append(
                    AgentSearch(
                        PDE_SUITE[target],
                        loo,
                        space,
                        stats,
                        [] if arm == NO_PGKR else hits,
                        budget=config.budget,
                        proposer="llm" if arm == LLM else "scripted",
                        rng=np.random.default_rng([seed, k, j]),
                        c=config.c,
                    )
                )
        for arm in agent_arms:
            ctx.progress(f"agent searches: {arm}", 0, 1)
            run_agents(agents[arm], ev, generate if arm == LLM else None)
            for target, a in zip(config.pdes, agents[arm], strict=True):
                traces[arm][target] = a.trace
        for k, target in enumerate(config.pdes):
            ctx.progress("random search and TPE", k, len(config.pdes))
            traces["random"][target] = random_search(
                target, space, ev, budget=config.budget, rng=np.random.default_rng([seed, k, 7])
            )
            traces["tpe"][target] = tpe_search(target, space, ev, budget=config.budget, seed=seed * 100 + k)

        arms_run = [a for a in SEARCH_ARMS if traces[a]]
        best = {arm: [traces[arm][t].best_log_l2() for t in config.pdes] for arm in arms_run}
        best["default_config"] = [ev(t, space.default()).log_l2 for t in config.pdes]
        best["kb_best"] = [min(r.log_l2 for r in kb.of(t)) for t in config.pdes]
        metrics: dict[str, dict[str, float]] = {}
        items: dict[str, dict[str, np.ndarray]] = {}
        for arm, vals in best.items():
            m = {f"best_log_l2_{t}": v for t, v in zip(config.pdes, vals, strict=True)}
            m["best_log_l2"] = m["mean_best_log_l2"] = float(np.mean(vals))
            items[arm] = {"best_log_l2": np.asarray(vals, dtype=float)}
            metrics[arm] = m
        for arm in arms_run:
            others = [b for b in BASELINES if b != arm]
            metrics[arm]["win_fraction"] = float(
                np.mean([all(best[arm][i] < best[b][i] for b in others) for i in range(len(config.pdes))])
            )
            calls = sum(tr.llm_calls for tr in traces[arm].values())
            if calls:
                metrics[arm]["llm_calls"] = float(calls)
                metrics[arm]["llm_valid_fraction"] = sum(tr.llm_valid for tr in traces[arm].values()) / calls
        metrics["kb_best"]["gain_over_default"] = float(
            np.mean(best["default_config"]) - np.mean(best["kb_best"])
        )
        series = {
            "pdes": list(config.pdes),
            "retrieved": retrieved_names,
            "curves": {
                arm: {
                    t: np.minimum.accumulate([r.log_l2 for r in traces[arm][t].results]).tolist()
                    for t in config.pdes
                }
                for arm in arms_run
            },
            "agent_configs": {arm: {t: traces[arm][t].configs for t in config.pdes} for arm in agent_arms},
            # trainings not already in the process-wide evaluator cache: depends on what ran
            # before in this process, so it is a series entry, not a metric
            "new_trainings_this_seed": ev.trainings - before,
            # prompt tokens (before each prompt's last) whose keys/values were reused / computed
            "prompt_tokens_reused_computed": [
                sum(m.reused_tokens - r for m, (r, _) in zip(reuse, tokens_before, strict=True)),
                sum(m.computed_tokens - c for m, (_, c) in zip(reuse, tokens_before, strict=True)),
            ],
        }
        notes = [
            f"{OURS} and {NO_PGKR} use the scripted planner (LLM-free surrogate, a labelled control); "
            f"{LLM} uses {config.model or '(no model: arm skipped)'}",
            f"PGKR neighbours: {retrieved_names}",
        ]
        return SeedOutcome(metrics=metrics, series=series, items=items, notes=tuple(notes))

    @staticmethod
    def _generator(config: PINNsAgentCheckConfig, seed: int) -> Any:
        model = _chat_model(config.model, config.cache, config.prefix_reuse)
        from icml25.llm.chat import GenerationConfig

        rounds = [0]

        def generate(convs: list[list[dict[str, str]]]) -> list[str]:
            rounds[0] += 1
            gen = GenerationConfig(
                n=1,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                seed=seed * 1000 + rounds[0],
                stop=("}",),
            )
            return [close_json(r[0]) for r in model.generate(convs, gen)]

        return generate

    def make_figures(
        self, config: PINNsAgentCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import OURS_COLOR, PALETTE, new_figure

        fig, axes = new_figure(ncols=2, width=4.8)
        ax = axes[0]
        pdes = list(config.pdes)
        xs = np.arange(len(pdes))
        shown = [a for a in ARMS if a in outcomes[0].metrics]
        for k, arm in enumerate(shown):
            vals = np.array([[o.metrics[arm][f"best_log_l2_{t}"] for t in pdes] for o in outcomes])
            color = OURS_COLOR if arm == OURS else PALETTE[(k + 1) % len(PALETTE)]
            ax.errorbar(
                xs + 0.12 * (k - len(shown) / 2),
                vals.mean(0),
                yerr=vals.std(0),
                fmt="o",
                ms=4,
                color=color,
                label=arm,
            )
        ax.set_xticks(xs, pdes, rotation=45, ha="right", fontsize=7)
        ax.set(
            ylabel="best log10 rel. L2 (lower is better)", title=f"Best error in {config.budget} trainings"
        )
        ax.legend(fontsize=7)
        ax = axes[1]
        for k, arm in enumerate(a for a in shown if a in outcomes[0].series["curves"]):
            curves = np.array([[o.series["curves"][arm][t] for t in pdes] for o in outcomes])
            mean = curves.mean(axis=(0, 1))
            color = OURS_COLOR if arm == OURS else PALETTE[(k + 1) % len(PALETTE)]
            ax.plot(np.arange(1, len(mean) + 1), mean, marker="o", color=color, label=arm)
        ax.set(xlabel="training #", ylabel="mean best-so-far log10 rel. L2", title="Search progress")
        ax.legend(fontsize=7)
        ctx.save_figure(
            fig,
            "pinnsagent_best_error",
            "Left: best relative L2 error per PDE after the trial budget (mean +- std over seeds). Right: "
            "best-so-far error against the number of trainings, averaged over PDEs and seeds.",
        )


CHECK = PINNsAgentCheck()
