"""The chat-model interface every LLM-driven paper talks to.

A :class:`ChatModel` takes conversations (lists of ``{"role", "content"}`` messages) and returns
``n`` completions for each. Backends (the embedded local model, an OpenAI-compatible HTTP server,
a cache in front of either) implement :meth:`ChatModel.generate`; callers use :meth:`ChatModel.chat`
for one conversation or ``generate`` for a batch. :class:`ScriptedChatModel` answers from a Python
function: it is the test double for code that drives a model (agent roles, pipelines).
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any

from icml25.core.samples import log_sample
from icml25.core.validate import check_fields, check_in_range

__all__ = [
    "ROLES",
    "Message",
    "Conversation",
    "GenerationConfig",
    "ChatModel",
    "ScriptedChatModel",
    "validate_conversation",
    "apply_stop",
]

ROLES = ("system", "user", "assistant")

Message = Mapping[str, str]
Conversation = Sequence[Message]


@dataclass(frozen=True)
class GenerationConfig:
    """Sampling parameters shared by every backend.

    Args:
        n: completions per conversation.
        temperature: 0 means greedy decoding (then ``n`` > 1 repeats the same completion on a
            deterministic backend).
        top_p: nucleus sampling mass.
        max_tokens: new tokens per completion.
        seed: makes sampling reproducible where the backend supports it.
        stop: strings at which a completion is cut (the stop string itself is removed).
    """

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None
    stop: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("n", "max_tokens"), non_negative=("temperature",))
        check_in_range("GenerationConfig.top_p", self.top_p, 0.0, 1.0, low_open=True)
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError(f"stop must be a tuple of non-empty strings, got {self.stop!r}")


def validate_conversation(messages: Conversation) -> list[dict[str, str]]:
    """Check roles and contents and return plain dicts; raises ``ValueError`` naming the bad message."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence) or not messages:
        raise ValueError("a conversation must be a non-empty sequence of {'role', 'content'} messages")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or set(message) != {"role", "content"}:
            raise ValueError(f"message {i} must have exactly the keys 'role' and 'content', got {message!r}")
        role, content = message["role"], message["content"]
        if role not in ROLES:
            raise ValueError(f"message {i}: role must be one of {ROLES}, got {role!r}")
        if not isinstance(content, str):
            raise ValueError(f"message {i}: content must be a string, got {type(content).__name__}")
        out.append({"role": role, "content": content})
    return out


def apply_stop(text: str, stop: Sequence[str]) -> str:
    """Cut ``text`` at the first occurrence of any stop string."""
    cut = min((i for s in stop if (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]


_DEPTH: ContextVar[int] = ContextVar("icml25_chat_depth", default=0)


def _recorded(generate: Callable[..., list[list[str]]]) -> Callable[..., list[list[str]]]:
    @functools.wraps(generate)
    def wrapper(
        self: ChatModel, conversations: Sequence[Conversation], config: GenerationConfig
    ) -> list[list[str]]:
        depth = _DEPTH.get()
        token = _DEPTH.set(depth + 1)
        try:
            replies = generate(self, conversations, config)
        finally:
            _DEPTH.reset(token)
        if depth == 0:
            settings = asdict(config)
            for conversation, answer in zip(conversations, replies, strict=False):
                log_sample(
                    {
                        "model": self.name,
                        "messages": [dict(m) for m in conversation],
                        "config": settings,
                        "replies": list(answer),
                    }
                )
        return replies

    return wrapper


class ChatModel(abc.ABC):
    """Conversations in, ``n`` completions per conversation out.

    Subclasses set :attr:`name` (it identifies backend and model, e.g. in cache keys) and implement
    :meth:`generate`. Every subclass's ``generate`` is wrapped so that each conversation and its
    replies are logged (:func:`icml25.core.samples.log_sample`; a model wrapping another, such as
    the response cache, is logged once, at the outermost call).
    """

    name: str = "chat-model"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "generate" in cls.__dict__ and not getattr(
            cls.__dict__["generate"], "__isabstractmethod__", False
        ):
            cls.generate = _recorded(cls.__dict__["generate"])  # type: ignore[method-assign]

    @abc.abstractmethod
    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig) -> list[list[str]]:
        """Return ``config.n`` completions for each conversation, in order."""

    def chat(
        self,
        messages: Conversation,
        *,
        n: int = 1,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 256,
        seed: int | None = None,
        stop: Sequence[str] = (),
    ) -> list[str]:
        """``n`` completions of one conversation."""
        config = GenerationConfig(
            n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed, stop=tuple(stop)
        )
        return self.generate([messages], config)[0]


Responder = Callable[[list[dict[str, str]], GenerationConfig, int], str]


class ScriptedChatModel(ChatModel):
    """Answers from ``respond(messages, config, sample_index)``: a deterministic stand-in for tests.

    ``calls`` records every conversation it was asked, so tests can check the prompts a pipeline sends.
    """

    def __init__(self, respond: Responder, name: str = "scripted") -> None:
        self.respond = respond
        self.name = name
        self.calls: list[list[dict[str, str]]] = []

    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig) -> list[list[str]]:
        results = []
        for conversation in conversations:
            messages = validate_conversation(conversation)
            self.calls.append(messages)
            replies = [self.respond(messages, config, i) for i in range(config.n)]
            results.append([apply_stop(reply, config.stop) for reply in replies])
        return results
