"""A scripted stand-in LLM for smoke runs and tests (no weights needed).

Not from ECON (Xie et al., ICML 2025, arXiv 2506.08292) itself: a
:class:`~icml25.llm.chat.ScriptedChatModel` that plays every ECON role on
the generated arithmetic problems. An executor answers correctly with probability
``sigmoid(skill - 0.8 s - 2 (T - T*(s))^2 + 0.5 [follows the strategy])`` for a problem of ``s``
steps, ``T*(s) = 0.2 + 0.3 s``; otherwise it gives the shared trap answer (truth + s) with
probability ``exp(-T)`` (low temperature -> correlated errors) and a random wrong number else. The
coordinator's strategy is a fixed sentence; its commitment is the plurality of the listed answers;
a debater adopts the plurality of the others with probability 0.6. Draws are seeded by the request.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

import numpy as np

from icml25.llm.chat import GenerationConfig, ScriptedChatModel

from .agents import majority_vote
from .problems import ArithmeticProblem, parse_answer

__all__ = ["simulated_chat_model"]


def simulated_chat_model(problems: Sequence[ArithmeticProblem], *, skill: float = 1.0) -> ScriptedChatModel:
    """The scripted model for ``problems`` (questions it does not know get a random number)."""
    if not problems:
        raise ValueError("problems must be non-empty")
    if not math.isfinite(skill):
        raise ValueError(f"skill must be finite, got {skill}")
    known = {p.question: p for p in problems}

    def rng_for(messages: list[dict[str, str]], config: GenerationConfig, i: int) -> np.random.Generator:
        key = repr((messages, config.temperature, config.top_p, config.seed, i)).encode()
        return np.random.default_rng(int.from_bytes(hashlib.sha256(key).digest()[:8], "little"))

    def respond(messages: list[dict[str, str]], config: GenerationConfig, i: int) -> str:
        text = messages[-1]["content"]
        rng = rng_for(messages, config, i)
        prob = next((p for q, p in known.items() if q in text), None)
        if text.startswith("In one or two sentences"):
            return "Track the number after each event, one step at a time."
        if "Answers from the agents" in text or "Other agents answered" in text:
            listed = [parse_answer(line) for line in re.findall(r"Agent \d+: (.*)", text)]
            vote = majority_vote(listed)
            if "Answers from the agents" in text or rng.random() < 0.6:
                return f"The answer is \\boxed{{{vote:g}}}" if vote is not None else "I am not sure."
        if prob is None:
            return f"\\boxed{{{int(rng.integers(0, 100))}}}"
        s, temp = prob.steps, max(config.temperature, 0.05)
        follows = 0.5 if "Strategy:" in text else 0.0
        p_ok = 1 / (1 + math.exp(-(skill - 0.8 * s - 2 * (temp - (0.2 + 0.3 * s)) ** 2 + follows)))
        if rng.random() < p_ok:
            value = prob.answer
        elif rng.random() < math.exp(-temp):
            value = prob.answer + s
        else:
            value = prob.answer + int(rng.integers(-9, 10)) or prob.answer + 11
        return f"Step by step: {prob.answer - 1} + 1 = {value}. \\boxed{{{value}}}"

    return ScriptedChatModel(respond, "simulated-econ")
