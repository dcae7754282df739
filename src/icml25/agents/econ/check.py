"""Claim check for *From Debate to Equilibrium: Belief-Driven Multi-Agent LLM Reasoning via
Bayesian Nash Equilibrium* (ECON; Xie et al., ICML 2025, https://arxiv.org/abs/2506.08292).

Claim (abstract, Sec. 5): coordinating executor LLMs through learned beliefs toward a Bayesian
Nash equilibrium beats existing multi-LLM methods (multi-agent debate among them) while spending
fewer tokens, because the executors never exchange messages.

Setup (``small``): the embedded SmolLM2-135M-Instruct plays the coordinator and all 3 executors.
Problems are GSM-style arithmetic word problems generated in code (one operation, exact integer
answers). An executor's action is a decoding strategy from a grid (prompt style {plain chain of
thought, follow the coordinator's strategy} x temperature {0.3, 1.0}, top-p 0.9). Every
question's strategy and every executor's response under every action are generated once (the
response pool); ECON's hierarchical RL then replays episodes over this empirical game.

Arms (same test questions, same model, same maximum generated-token budget per question
``B = strategy + N x executor + commitment`` tokens):
    econ             ECON, coordinator LLM commitment over the executors' greedy-strategy answers
                     (falls back to the Q-weighted vote when the commitment holds no number).
    econ_vote        ECON, commitment = plurality vote weighted by softmax(Q_i) (no commitment call).
    independent      independent learners (non-equilibrium ablation): the same belief networks and
                     policy gradient, each agent trained on its own correctness only; plurality vote.
    cot              one greedy chain of thought with ``B`` new tokens.
    self_consistency ``k`` = 4 sampled chains of ``B/4`` tokens each, majority vote.
    debate           2 agents x 2 rounds of ``B/4`` tokens each, majority vote (Du et al., 2024).

Choices, declared before any small number was seen:
* learning rate of ECON and of the ablation from the same sweep, chosen on a validation split of
  the training questions by the expected commitment error of the learned profile
  (``best_on_validation``);
* exploitability = Bayesian NashConv of the learned stochastic profile on the test questions'
  empirical game, the agents' shaped rewards as payoffs (0 at an equilibrium);
* criteria (thresholds are config fields): ECON accuracy >= self-consistency + ``margin_sc``;
  ECON accuracy >= debate; ECON total tokens (prompt + generated) <= ``token_factor`` x debate's;
  ECON NashConv < the ablation's; ECON NashConv at the end of training <= at the first evaluation;
* the test set (``n_test`` questions) and the response pool are shared by the seeds (the LLM
  budget allows one pool); seeds change the train/validation split, network initialisation,
  RL sampling and the commitment's sampling.

Tiny (smoke, < 10 s) runs the same pipeline with a scripted simulated LLM
(:mod:`icml25.agents.econ.simulate`), labelled as such. Full is the paper's scale (400-token
executors, 50-token strategy and commitment, 128-wide beliefs); one update of it is run by the tests.

Outcome at ``small`` (3 seeds, 2026-12-04, 392 s on a loaded 2-core machine): not reproduced.
ECON 0.37 test accuracy (0.5/0.3/0.3) against self-consistency 0.40, chain of thought 0.30 and
debate 0.20 at the same 232-token generation cap; ECON reads more prompt tokens than debate (726
vs 671 per question: the commitment prompt carries every executor's answer). The equilibrium part
behaves as intended: test NashConv 0.21 against 0.33 for independent learners, training NashConv
falls from 0.30 to 0.08 and per-episode regret on the training questions from 0.29 to 0.00. With 10
test questions one question is 0.1 accuracy, so the accuracy ordering is within noise.
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
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields
from icml25.llm.chat import ChatModel

from .agents import (
    ResponsePool,
    build_response_pool,
    chain_of_thought,
    coordinator_commitment,
    multi_agent_debate,
    self_consistency,
    strategy_grid,
)
from .game import bayesian_nash_conv
from .problems import ArithmeticProblem, answers_match, make_arithmetic_problems
from .trainer import ECONConfig, ECONTrainer, EmpiricalGame, IndependentLearners


@dataclass(frozen=True)
class ECONCheckConfig:
    """One configuration of the ECON check.

    Args:
        model: ``"smollm2-135m-instruct"`` (any ``load_chat_model`` spec: a local HF folder or GGUF,
            or ``"openai:NAME"`` for an OpenAI-compatible endpoint) or ``"simulated"`` (smoke).
        cache: put the SQLite response cache in front of the model.
        n_train, n_test: training (incl. validation) and test questions; ``n_val`` of the training
            questions validate the learning rate.
        min_steps, max_steps: operations per problem.
        n_agents: executors.
        temperatures, top_p: the decoding-strategy grid (with both prompt styles).
        executor_tokens, strategy_tokens, commitment_tokens: new tokens per role.
        sc_samples: self-consistency samples; debate_agents, debate_rounds: debate shape.
        baseline_temperature: sampling temperature of self-consistency and debate.
        steps, batch_size, lrs: RL updates, questions per update, learning-rate sweep.
        belief_dim, hidden, group_dim: network widths.
        llm_batch: conversations per generate call of the local model.
        margin_sc, token_factor: criterion thresholds.
    """

    model: str = "smollm2-135m-instruct"
    cache: bool = False
    n_train: int = 14
    n_val: int = 4
    n_test: int = 10
    min_steps: int = 1
    max_steps: int = 1
    n_agents: int = 3
    temperatures: tuple[float, ...] = (0.3, 1.0)
    top_p: float = 0.9
    executor_tokens: int = 64
    strategy_tokens: int = 24
    commitment_tokens: int = 16
    sc_samples: int = 4
    debate_agents: int = 2
    debate_rounds: int = 2
    baseline_temperature: float = 0.7
    steps: int = 200
    batch_size: int = 16
    lrs: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
    belief_dim: int = 64
    hidden: int = 128
    group_dim: int = 64
    llm_batch: int = 32
    margin_sc: float = 0.02
    token_factor: float = 1.0

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "n_train",
                "n_val",
                "n_test",
                "min_steps",
                "max_steps",
                "n_agents",
                "executor_tokens",
                "strategy_tokens",
                "commitment_tokens",
                "sc_samples",
                "debate_agents",
                "debate_rounds",
                "steps",
                "batch_size",
                "belief_dim",
                "hidden",
                "group_dim",
                "llm_batch",
            ),
            positive=("baseline_temperature", "token_factor"),
        )
        if self.n_val >= self.n_train:
            raise ValueError(f"n_val ({self.n_val}) must be smaller than n_train ({self.n_train})")
        if not self.lrs or min(self.lrs) <= 0:
            raise ValueError(f"lrs must be positive, got {self.lrs}")
        if not self.temperatures or min(self.temperatures) <= 0:
            raise ValueError(f"temperatures must be positive, got {self.temperatures}")

    @property
    def budget(self) -> int:
        """Maximum generated tokens per question, shared by every arm."""
        return self.strategy_tokens + self.n_agents * self.executor_tokens + self.commitment_tokens


def _criteria(config: ECONCheckConfig) -> tuple[Criterion, ...]:
    small = ("small", "full")
    return (
        Criterion(
            "beats_self_consistency",
            arm="econ",
            metric="accuracy",
            op=">=",
            other_arm="self_consistency",
            other_metric="accuracy_plus_margin",
            scales=small,
            description=f"ECON accuracy >= self-consistency accuracy + {config.margin_sc} at equal budget",
        ),
        Criterion(
            "beats_debate",
            arm="econ",
            metric="accuracy",
            op=">=",
            other_arm="debate",
            scales=small,
            description="ECON accuracy >= multi-agent debate accuracy at equal token budget",
        ),
        Criterion(
            "fewer_tokens_than_debate",
            arm="econ",
            metric="total_tokens",
            op="<=",
            other_arm="debate",
            factor=config.token_factor,
            scales=small,
            description=f"ECON prompt+generated tokens <= {config.token_factor} x debate's",
        ),
        Criterion(
            "less_exploitable_than_independent",
            arm="econ",
            metric="nash_conv",
            op="<",
            other_arm="independent",
            scales=small,
            description="ECON's learned profile has lower NashConv than independent learners'",
        ),
        Criterion(
            "nash_conv_decreases",
            arm="econ",
            metric="nash_conv_change",
            op="<=",
            threshold=0.0,
            scales=small,
            description="ECON's training NashConv does not rise from first to last evaluation",
        ),
        Criterion(
            "tiny_runs",
            arm="econ",
            metric="accuracy",
            op=">=",
            threshold=0.0,
            scales=("tiny",),
            description="smoke: the pipeline produces an accuracy",
        ),
    )


CLAIM = Claim(
    statement=(
        "Coordinating executor LLMs through learned beliefs toward a Bayesian Nash equilibrium (ECON) is "
        "more accurate than self-consistency and multi-agent debate at an equal token budget, uses fewer "
        "tokens than "
        "debate, and learns a less exploitable strategy profile than independent learners."
    ),
    source="Abstract, Sec. 3-5 (+11.2% over multi-LLM baselines; no inter-executor messages)",
    ours="econ",
    baselines=("econ_vote", "independent", "cot", "self_consistency", "debate"),
    criteria=_criteria(ECONCheckConfig()),
    headline="beats_self_consistency",
    headline_baseline="self_consistency.accuracy",
    min_seeds=3,
    setup_notes=(
        "SmolLM2-135M-Instruct (embedded, CPU) as coordinator and 3 executors; GSM-style arithmetic "
        "generated in code (one operation); strategies = {CoT, follow-strategy} x T {0.3, 1.0}; one "
        "response pool (14 train + 10 test questions) shared by the seeds; all arms capped at the same "
        "generated-token budget per question "
        "(paper: LLaMA3.1 8B-405B etc. on GSM8K, MATH, TravelPlanner)."
    ),
    requires=("llm",),
)


@functools.cache
def _chat_model(spec: str, cache: bool, batch: int) -> ChatModel:
    from icml25.llm.models import load_chat_model

    try:
        model = load_chat_model(spec, cache=cache)
    except (ImportError, FileNotFoundError, OSError) as err:
        raise NeedsResource("llm", f"cannot load {spec}: {err}") from err
    inner = getattr(model, "backend", model)
    if hasattr(inner, "batch_size"):
        inner.batch_size = batch
    return model


@functools.cache
def _shared(
    config: ECONCheckConfig,
) -> tuple[list[ArithmeticProblem], ResponsePool, dict[str, Any], ChatModel]:
    """Problems, response pool and baseline results: generated once, shared by the seeds."""
    n = config.n_train + config.n_test
    problems = make_arithmetic_problems(n, seed=12345, min_steps=config.min_steps, max_steps=config.max_steps)
    if config.model == "simulated":
        from .simulate import simulated_chat_model

        model: ChatModel = simulated_chat_model(problems)
    else:
        model = _chat_model(config.model, config.cache, config.llm_batch)
    grid = strategy_grid(temperatures=config.temperatures, top_ps=(config.top_p,))
    pool = build_response_pool(
        model,
        problems,
        grid,
        n_agents=config.n_agents,
        max_tokens=config.executor_tokens,
        strategy_tokens=config.strategy_tokens,
        seed=0,
    )
    test_q = [p.question for p in problems[config.n_train :]]
    b = config.budget
    per_call = max(1, b // config.sc_samples)
    debate_call = max(1, b // (config.debate_agents * config.debate_rounds))
    baselines = {
        "cot": chain_of_thought(model, test_q, max_tokens=b),
        "self_consistency": self_consistency(
            model,
            test_q,
            k=config.sc_samples,
            max_tokens=per_call,
            temperature=config.baseline_temperature,
            seed=1,
        ),
        "debate": multi_agent_debate(
            model,
            test_q,
            agents=config.debate_agents,
            rounds=config.debate_rounds,
            max_tokens=debate_call,
            temperature=config.baseline_temperature,
            seed=2,
        ),
    }
    return problems, pool, baselines, model


def _report(ctx: RunContext, task: str, done: int, total: int) -> None:
    ctx.progress(task, done, total)


def _val_error(trainer: ECONTrainer, game: EmpiricalGame, val: Sequence[int]) -> float:
    dec = trainer.decide(val)
    return 1.0 - float(np.mean([game.expected_team(q, p) for q, p in zip(val, dec.profiles, strict=True)]))


class ECONCheck(ClaimCheck[ECONCheckConfig]):
    slug = "econ"
    claim = CLAIM
    presets = {
        "tiny": ECONCheckConfig(
            model="simulated", n_train=10, n_val=3, n_test=8, steps=40, lrs=(1e-3,), llm_batch=8
        ),
        "small": ECONCheckConfig(),
        "full": ECONCheckConfig(
            n_train=1000,
            n_val=100,
            n_test=1319,
            min_steps=2,
            max_steps=8,
            executor_tokens=400,
            strategy_tokens=50,
            commitment_tokens=50,
            steps=2000,
            belief_dim=128,
            hidden=256,
            group_dim=128,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def claim_for(self, config: ECONCheckConfig) -> Claim:
        claim = dataclasses.replace(CLAIM, criteria=_criteria(config))
        if config.model == "simulated":
            claim = dataclasses.replace(
                claim, setup_notes="Scripted simulated LLM (smoke only); " + CLAIM.setup_notes
            )
        elif config.model != ECONCheckConfig.model:
            claim = dataclasses.replace(claim, setup_notes=f"Model {config.model}; " + CLAIM.setup_notes)
        return claim

    def run_seed(self, config: ECONCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        ctx.progress("response pool and baselines (LLM)", 0, 1)
        problems, pool, baselines, model = _shared(config)
        ctx.progress("response pool and baselines (LLM)", 1, 1)
        rng = np.random.default_rng(seed)
        train_all = rng.permutation(config.n_train)
        val, train = [int(q) for q in train_all[: config.n_val]], [int(q) for q in train_all[config.n_val :]]
        test = list(range(config.n_train, config.n_train + config.n_test))
        truths = [float(problems[q].answer) for q in test]
        game = EmpiricalGame(pool)

        def econ_config(lr: float) -> ECONConfig:
            return ECONConfig(
                belief_dim=config.belief_dim,
                hidden=config.hidden,
                group_dim=config.group_dim,
                lr=lr,
                batch_size=config.batch_size,
                steps=config.steps,
                eval_every=max(1, config.steps // 10),
            )

        trained: dict[str, dict[float, ECONTrainer]] = {"econ": {}, "independent": {}}
        for name, cls in (("econ", ECONTrainer), ("independent", IndependentLearners)):
            for k, lr in enumerate(config.lrs):
                tr = cls(game, econ_config(lr), seed=seed * 1000 + k)
                task = f"train {name} lr={lr:g}"
                tr.fit(train, progress=functools.partial(_report, ctx, task))
                trained[name][lr] = tr
        chosen = {
            name: best_on_validation(runs, lambda tr: _val_error(tr, game, val))
            for name, runs in trained.items()
        }
        econ, indep = trained["econ"][chosen["econ"]], trained["independent"][chosen["independent"]]

        agents = np.arange(config.n_agents)
        dec = econ.decide(test)
        responses = [
            [pool.texts[q][a][i] for i, a in enumerate(acts)]
            for q, acts in zip(test, dec.actions, strict=True)
        ]
        commit = coordinator_commitment(
            model,
            [problems[q].question for q in test],
            [pool.strategies[q] for q in test],
            responses,
            max_tokens=config.commitment_tokens,
            seed=seed,
        )
        fallback = sum(c is None for c in commit.answers)
        final = [c if c is not None else v for c, v in zip(commit.answers, dec.vote_answers, strict=True)]
        exec_tokens = dec.executor_tokens.sum(1)
        strat_tokens = pool.strategy_tokens[test]
        exec_prompt = np.array([0.0 for _ in test])
        from .agents import TokenCounter, executor_messages, strategy_messages

        count = TokenCounter(model)
        for k, (q, acts) in enumerate(zip(test, dec.actions, strict=True)):
            exec_prompt[k] = count.messages(strategy_messages(problems[q].question)) + sum(
                count.messages(
                    executor_messages(problems[q].question, pool.strategies[q], pool.grid[a].style)
                )
                for a in acts
            )

        def acc(answers: Sequence[float | None]) -> float:
            return float(np.mean([answers_match(a, t) for a, t in zip(answers, truths, strict=True)]))

        econ_gen = strat_tokens + exec_tokens + commit.generated_tokens
        w = econ.reward_weights
        pay = np.stack([game.payoffs(q, w) for q in test])
        dec_ind = indep.decide(test)
        grid_sc = next(
            (
                a
                for a, s in enumerate(pool.grid)
                if s.style == "cot" and s.temperature == max(config.temperatures)
            ),
            0,
        )
        fixed = np.zeros((len(test), config.n_agents, len(pool.grid)))
        fixed[:, :, grid_sc] = 1.0
        log = econ.log
        quarter = max(1, len(log.regret) // 4)
        metrics: dict[str, dict[str, float]] = {
            "econ": {
                "accuracy": acc(final),
                "generated_tokens": float(econ_gen.mean()),
                "total_tokens": float((econ_gen + exec_prompt + commit.prompt_tokens).mean()),
                "nash_conv": bayesian_nash_conv(pay, dec.profiles.astype(np.float64)),
                "nash_conv_first": log.nash_conv[0],
                "nash_conv_last": log.nash_conv[-1],
                "nash_conv_change": log.nash_conv[-1] - log.nash_conv[0],
                "regret_first_quarter": float(np.mean(log.regret[:quarter])),
                "regret_last_quarter": float(np.mean(log.regret[-quarter:])),
                "commitment_fallbacks": float(fallback),
                "lr": chosen["econ"],
                "val_error": _val_error(econ, game, val),
                "pool_oracle_accuracy": float(np.mean([game.oracle(q) for q in test])),
            },
            "econ_vote": {
                "accuracy": acc(dec.vote_answers),
                "generated_tokens": float((strat_tokens + exec_tokens).mean()),
            },
            "independent": {
                "accuracy": acc(dec_ind.vote_answers),
                "generated_tokens": float((strat_tokens + dec_ind.executor_tokens.sum(1)).mean()),
                "nash_conv": bayesian_nash_conv(pay, dec_ind.profiles.astype(np.float64)),
                "lr": chosen["independent"],
                "val_error": _val_error(indep, game, val),
            },
        }
        for name, res in baselines.items():
            metrics[name] = {
                "accuracy": acc(res.answers),
                "generated_tokens": float(res.generated_tokens.mean()),
                "total_tokens": float((res.generated_tokens + res.prompt_tokens).mean()),
            }
        metrics["self_consistency"]["accuracy_plus_margin"] = (
            metrics["self_consistency"]["accuracy"] + config.margin_sc
        )
        metrics["self_consistency"]["nash_conv_grid_analog"] = bayesian_nash_conv(pay, fixed)
        metrics["econ"]["budget"] = float(config.budget)
        # the pool's per-strategy accuracy, for the report
        for a, s in enumerate(pool.grid):
            correct = pool.answers[test][:, a] == np.array(truths)[:, None]
            metrics["econ_vote"][f"pool_acc_{s.style}_T{s.temperature:g}"] = float(correct.mean())
        series = {
            "train_regret": log.regret,
            "eval_steps": log.eval_steps,
            "econ_nash_conv": log.nash_conv,
            "independent_nash_conv": indep.log.nash_conv,
            "econ_actions": dec.actions.tolist(),
            "independent_actions": dec_ind.actions.tolist(),
            "grid": [dataclasses.asdict(s) for s in pool.grid],
            "commitments": [o[0] for o in commit.texts],
            "example_response": pool.texts[test[0]][0][0][:300],
            "example_strategy": pool.strategies[test[0]][:300],
            "tokens_agents": agents.tolist(),
        }
        notes = [
            f"model: {config.model}"
            + (" (scripted simulator, smoke only)" if config.model == "simulated" else "")
        ]
        if fallback:
            notes.append(f"{fallback} commitment(s) held no number; the Q-weighted vote was used for them")
        return SeedOutcome(metrics=metrics, series=series, notes=tuple(notes))

    def make_figures(self, config: ECONCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import OURS_COLOR, PALETTE, new_figure

        fig, axes = new_figure(ncols=2, width=4.6)
        ax = axes[0]
        arms = ("econ", "econ_vote", "independent", "cot", "self_consistency", "debate")
        for k, arm in enumerate(arms):
            accs = [o.metrics[arm]["accuracy"] for o in outcomes]
            toks = [o.metrics[arm]["generated_tokens"] for o in outcomes]
            color = OURS_COLOR if arm == "econ" else PALETTE[k % len(PALETTE)]
            ax.errorbar(np.mean(toks), np.mean(accs), yerr=np.std(accs), fmt="o", color=color, label=arm)
        ax.axvline(config.budget, color="grey", ls=":", lw=1)
        ax.set(xlabel="generated tokens per question", ylabel="test accuracy", title="Accuracy vs tokens")
        ax.legend(fontsize=7)
        ax = axes[1]
        for o in outcomes:
            steps = o.series["eval_steps"]
            ax.plot(steps, o.series["econ_nash_conv"], color=OURS_COLOR, alpha=0.8)
            ax.plot(
                steps[: len(o.series["independent_nash_conv"])],
                o.series["independent_nash_conv"],
                color=PALETTE[1],
                alpha=0.8,
            )
        ax.plot([], [], color=OURS_COLOR, label="ECON")
        ax.plot([], [], color=PALETTE[1], label="independent learners")
        ax.set(xlabel="update", ylabel="NashConv (train questions)", title="Exploitability during training")
        ax.legend(fontsize=7)
        ctx.save_figure(
            fig,
            "econ_accuracy_nashconv",
            "Left: test accuracy vs mean generated tokens per question (dotted: the shared budget). "
            "Right: Bayesian "
            "NashConv of the learned strategy profile on the training questions during training, per seed.",
        )


CHECK = ECONCheck()
