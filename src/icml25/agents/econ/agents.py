"""The LLM side of ECON: decoding strategies, role prompts, the response pool and the baselines.

Paper: Xie et al., ICML 2025 (arXiv 2506.08292), Sec. 3.1. One episode is one question:

1. the coordinator writes a short solving strategy (no answer; temperature 0.3 in the code);
2. each executor answers independently, never seeing the other executors' outputs, with the
   decoding strategy its belief network chose (prompt style, temperature, top-p);
3. the coordinator reads the question, the strategy and all answers and commits to a final
   ``\\boxed{}`` answer (temperature 0.1).

:func:`build_response_pool` runs steps 1-2 once for every question and every strategy of the grid
(one sample per executor), so that the multi-agent RL can replay many episodes over real LLM
responses without regenerating them (our budget choice: the learned game is the *empirical* game
of these samples). Baselines at a shared token budget: single-agent chain of thought,
self-consistency (Wang et al., 2023; majority over k samples) and multi-agent debate (Du et al.,
2024; agents read the others' previous answers for R rounds, then a majority vote).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_positive
from icml25.llm.chat import ChatModel, GenerationConfig

from .problems import ArithmeticProblem, parse_answer
from .rewards import embed_texts, format_score, shows_reasoning

__all__ = [
    "STYLES",
    "DecodingStrategy",
    "strategy_grid",
    "TokenCounter",
    "executor_messages",
    "strategy_messages",
    "commitment_messages",
    "ResponsePool",
    "build_response_pool",
    "MethodResult",
    "majority_vote",
    "chain_of_thought",
    "self_consistency",
    "multi_agent_debate",
    "coordinator_commitment",
]

STYLES = ("cot", "strategy")


@dataclass(frozen=True)
class DecodingStrategy:
    """One executor action: prompt ``style`` (``"cot"`` or ``"strategy"``), temperature and top-p."""

    style: str
    temperature: float
    top_p: float = 0.9

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {self.style!r}")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be positive and finite, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {self.top_p}")

    def embedding(self) -> list[float]:
        """The prompt embedding ``e_i = [T, p, style]`` the mixer attends over."""
        return [self.temperature, self.top_p, float(STYLES.index(self.style))]


def strategy_grid(
    styles: Sequence[str] = STYLES,
    temperatures: Sequence[float] = (0.3, 1.0),
    top_ps: Sequence[float] = (0.9,),
) -> tuple[DecodingStrategy, ...]:
    """The discrete action set: every (style, temperature, top-p) combination."""
    if not styles or not temperatures or not top_ps:
        raise ValueError("styles, temperatures and top_ps must be non-empty")
    return tuple(
        DecodingStrategy(s, float(t), float(p)) for s in styles for t in temperatures for p in top_ps
    )


class TokenCounter:
    """Counts tokens with the model's tokenizer when it has one, else ~4 characters per token."""

    def __init__(self, model: ChatModel) -> None:
        obj: object = model
        tok = None
        for _ in range(3):
            tok = getattr(obj, "tokenizer", None)
            if tok is not None:
                break
            obj = getattr(obj, "backend", None)
        self.tokenizer = tok

    def __call__(self, text: str) -> int:
        if self.tokenizer is not None:
            return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return math.ceil(len(text) / 4)

    def messages(self, messages: Sequence[dict[str, str]]) -> int:
        return sum(self(m["content"]) for m in messages)


def strategy_messages(question: str) -> list[dict[str, str]]:
    """Coordinator step 1: a short strategy that names the method, not the answer."""
    return [
        {
            "role": "user",
            "content": "In one or two sentences, describe how to solve this problem. Do not compute the "
            f"answer. The final answer must be written as \\boxed{{number}}.\n\nProblem: {question}",
        }
    ]


def executor_messages(question: str, strategy: str, style: str) -> list[dict[str, str]]:
    """Executor prompt of one decoding style (plain chain of thought, or follow the coordinator)."""
    if style == "cot":
        text = (
            "Solve the problem step by step, then write the final answer as \\boxed{number}.\n\n"
            f"Problem: {question}"
        )
    elif style == "strategy":
        text = (
            f"Problem: {question}\nStrategy: {strategy.strip()}\n"
            "Follow the strategy, compute step by step, and end with \\boxed{number}."
        )
    else:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    return [{"role": "user", "content": text}]


def commitment_messages(
    question: str, strategy: str, responses: Sequence[str], tail: int = 240
) -> list[dict[str, str]]:
    """Coordinator step 3: read every executor's answer and commit to one final answer."""
    if not responses:
        raise ValueError("responses must be non-empty")
    lines = "\n".join(f"Agent {i + 1}: ...{r.strip()[-tail:]}" for i, r in enumerate(responses))
    return [
        {
            "role": "user",
            "content": f"Problem: {question}\nStrategy: {strategy.strip()}\n"
            f"Answers from the agents:\n{lines}\n"
            "Which final answer is correct? Reply only with \\boxed{number}.",
        }
    ]


@dataclass
class ResponsePool:
    """Every executor's response to every question under every strategy of the grid.

    Arrays are indexed ``[question, action, agent]``; ``answers`` holds NaN where no number was
    found; ``embeddings`` is ``(Q, A, N, d)``; ``obs`` embeds question + coordinator strategy.
    """

    problems: list[ArithmeticProblem]
    grid: tuple[DecodingStrategy, ...]
    strategies: list[str]
    strategy_tokens: np.ndarray
    texts: list[list[list[str]]]
    answers: np.ndarray
    tokens: np.ndarray
    embeddings: np.ndarray
    formats: np.ndarray
    reasoning: np.ndarray
    obs: np.ndarray

    @property
    def truths(self) -> np.ndarray:
        return np.array([p.answer for p in self.problems], dtype=np.float64)

    @property
    def n_agents(self) -> int:
        return int(self.answers.shape[2])

    def answer(self, q: int, a: int, i: int) -> float | None:
        v = self.answers[q, a, i]
        return None if np.isnan(v) else float(v)


def build_response_pool(
    model: ChatModel,
    problems: Sequence[ArithmeticProblem],
    grid: Sequence[DecodingStrategy],
    *,
    n_agents: int = 3,
    max_tokens: int = 64,
    strategy_tokens: int = 24,
    seed: int = 0,
    embed_dim: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> ResponsePool:
    """Run the coordinator's strategy step and every executor under every strategy once.

    Agent i's response under strategy a is the i-th of ``n_agents`` samples drawn with that
    strategy's decoding parameters (seeded), so agents sharing a strategy still answer differently.
    """
    if not isinstance(model, ChatModel):
        raise TypeError(f"model must be a ChatModel, got {type(model).__name__}")
    if not problems:
        raise ValueError("problems must be non-empty")
    if not grid:
        raise ValueError("grid must be non-empty")
    for name, v in (
        ("n_agents", n_agents),
        ("max_tokens", max_tokens),
        ("strategy_tokens", strategy_tokens),
        ("embed_dim", embed_dim),
    ):
        check_positive(name, v, integer=True)
    count = TokenCounter(model)
    questions = [p.question for p in problems]
    q_n, a_n = len(problems), len(grid)
    total = a_n + 1
    strategies = [
        r[0]
        for r in model.generate(
            [strategy_messages(q) for q in questions],
            GenerationConfig(temperature=0.3, top_p=0.9, max_tokens=strategy_tokens, seed=seed),
        )
    ]
    if progress:
        progress(1, total)
    texts: list[list[list[str]]] = [[[] for _ in range(a_n)] for _ in range(q_n)]
    for a, strat in enumerate(grid):
        convs = [executor_messages(q, s, strat.style) for q, s in zip(questions, strategies, strict=True)]
        cfg = GenerationConfig(
            n=n_agents,
            temperature=strat.temperature,
            top_p=strat.top_p,
            max_tokens=max_tokens,
            seed=seed + 1 + a,
        )
        for q, outs in enumerate(model.generate(convs, cfg)):
            texts[q][a] = list(outs)
        if progress:
            progress(a + 2, total)
    flat = [t for per_q in texts for per_a in per_q for t in per_a]
    shape = (q_n, a_n, n_agents)
    parsed = [parse_answer(t) for t in flat]
    return ResponsePool(
        problems=list(problems),
        grid=tuple(grid),
        strategies=strategies,
        strategy_tokens=np.array([count(s) for s in strategies]),
        texts=texts,
        answers=np.array([np.nan if v is None else v for v in parsed]).reshape(shape),
        tokens=np.array([count(t) for t in flat]).reshape(shape),
        embeddings=embed_texts(flat, embed_dim).reshape(*shape, embed_dim),
        formats=np.array([format_score(t) for t in flat]).reshape(shape),
        reasoning=np.array([shows_reasoning(t) for t in flat]).reshape(shape),
        obs=embed_texts([f"{q} {s}" for q, s in zip(questions, strategies, strict=True)], embed_dim),
    )


@dataclass
class MethodResult:
    """Per-question final answers, generated tokens and prompt tokens of one method."""

    answers: list[float | None]
    generated_tokens: np.ndarray
    prompt_tokens: np.ndarray
    texts: list[list[str]]

    def accuracy(self, truths: Sequence[float]) -> np.ndarray:
        return np.array(
            [a is not None and abs(a - t) < 1e-6 for a, t in zip(self.answers, truths, strict=True)],
            dtype=np.float64,
        )


def majority_vote(answers: Sequence[float | None], weights: Sequence[float] | None = None) -> float | None:
    """The (weighted) plurality answer; ties go to the answer given first; ``None`` if none parsed."""
    w = [1.0] * len(answers) if weights is None else list(weights)
    if len(w) != len(answers):
        raise ValueError(f"weights must match answers ({len(answers)}), got {len(w)}")
    score: dict[float, float] = {}
    order: list[float] = []
    for a, wi in zip(answers, w, strict=True):
        if a is None or (isinstance(a, float) and math.isnan(a)):
            continue
        if a not in score:
            order.append(a)
        score[a] = score.get(a, 0.0) + wi
    if not order:
        return None
    best = max(score.values())
    return next(a for a in order if score[a] >= best - 1e-12)


def chain_of_thought(model: ChatModel, questions: Sequence[str], *, max_tokens: int) -> MethodResult:
    """One greedy chain-of-thought answer per question."""
    count = TokenCounter(model)
    convs = [executor_messages(q, "", "cot") for q in questions]
    outs = model.generate(convs, GenerationConfig(temperature=0.0, max_tokens=max_tokens))
    return MethodResult(
        answers=[parse_answer(o[0]) for o in outs],
        generated_tokens=np.array([count(o[0]) for o in outs]),
        prompt_tokens=np.array([count.messages(c) for c in convs]),
        texts=outs,
    )


def self_consistency(
    model: ChatModel,
    questions: Sequence[str],
    *,
    k: int,
    max_tokens: int,
    temperature: float = 0.7,
    seed: int = 0,
) -> MethodResult:
    """``k`` sampled chains of thought per question and a majority vote over their answers."""
    check_positive("k", k, integer=True)
    count = TokenCounter(model)
    convs = [executor_messages(q, "", "cot") for q in questions]
    outs = model.generate(
        convs, GenerationConfig(n=k, temperature=temperature, top_p=0.9, max_tokens=max_tokens, seed=seed)
    )
    return MethodResult(
        answers=[majority_vote([parse_answer(t) for t in o]) for o in outs],
        generated_tokens=np.array([sum(count(t) for t in o) for o in outs]),
        prompt_tokens=np.array([k * count.messages(c) for c in convs]),
        texts=outs,
    )


def _debate_messages(question: str, own: str, others: Sequence[str], tail: int = 200) -> list[dict[str, str]]:
    lines = "\n".join(f"Agent {j + 1}: ...{o.strip()[-tail:]}" for j, o in enumerate(others))
    return [
        {
            "role": "user",
            "content": f"Problem: {question}\nYour previous answer: ...{own.strip()[-tail:]}\n"
            f"Other agents answered:\n{lines}\nUsing their reasoning as extra advice, solve the problem "
            "again step by step and end with \\boxed{number}.",
        }
    ]


def multi_agent_debate(
    model: ChatModel,
    questions: Sequence[str],
    *,
    agents: int,
    rounds: int,
    max_tokens: int,
    temperature: float = 0.7,
    seed: int = 0,
) -> MethodResult:
    """Debate: independent first answers, ``rounds - 1`` rounds reading the others, a final majority."""
    check_positive("agents", agents, integer=True)
    check_positive("rounds", rounds, integer=True)
    count = TokenCounter(model)
    first = [executor_messages(q, "", "cot") for q in questions]
    cfg = GenerationConfig(n=agents, temperature=temperature, top_p=0.9, max_tokens=max_tokens, seed=seed)
    current = model.generate(first, cfg)
    gen = np.array([sum(count(t) for t in o) for o in current])
    prompt = np.array([agents * count.messages(c) for c in first])
    history = [[list(o)] for o in current]
    for r in range(1, rounds):
        convs = [
            _debate_messages(q, current[qi][i], [current[qi][j] for j in range(agents) if j != i])
            for qi, q in enumerate(questions)
            for i in range(agents)
        ]
        outs = model.generate(
            convs, GenerationConfig(temperature=temperature, top_p=0.9, max_tokens=max_tokens, seed=seed + r)
        )
        current = [[outs[qi * agents + i][0] for i in range(agents)] for qi in range(len(questions))]
        for qi in range(len(questions)):
            history[qi].append(current[qi])
            gen[qi] += sum(count(t) for t in current[qi])
            prompt[qi] += sum(count.messages(convs[qi * agents + i]) for i in range(agents))
    return MethodResult(
        answers=[majority_vote([parse_answer(t) for t in o]) for o in current],
        generated_tokens=gen,
        prompt_tokens=prompt,
        texts=[[t for rnd in h for t in rnd] for h in history],
    )


def coordinator_commitment(
    model: ChatModel,
    questions: Sequence[str],
    strategies: Sequence[str],
    responses: Sequence[Sequence[str]],
    *,
    max_tokens: int = 16,
    seed: int = 0,
) -> MethodResult:
    """Coordinator step 3 for a batch of questions (temperature 0.1 as in the code)."""
    count = TokenCounter(model)
    convs = [commitment_messages(q, s, r) for q, s, r in zip(questions, strategies, responses, strict=True)]
    outs = model.generate(
        convs, GenerationConfig(temperature=0.1, top_p=0.9, max_tokens=max_tokens, seed=seed)
    )
    return MethodResult(
        answers=[parse_answer(o[0]) for o in outs],
        generated_tokens=np.array([count(o[0]) for o in outs]),
        prompt_tokens=np.array([count.messages(c) for c in convs]),
        texts=outs,
    )
