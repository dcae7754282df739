"""The local chat backend: a transformers causal LM with its tokenizer's chat template.

Conversations are rendered with ``tokenizer.apply_chat_template(..., add_generation_prompt=True)``,
left-padded into one batch and completed by ``model.generate``: greedy decoding at temperature 0
(then ``n`` > 1 repeats one completion), nucleus sampling (Holtzman et al., 2020,
https://arxiv.org/abs/1904.09751) otherwise, seeded through a forked torch RNG so that the caller's
global RNG state is left as it was. Stop strings are applied to the decoded text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from icml25.llm.chat import ChatModel, Conversation, GenerationConfig, apply_stop, validate_conversation

__all__ = ["LocalChatModel", "left_padded", "pad_token_id"]


def left_padded(tokenizer: Any, prompts: list[str]) -> dict[str, Any]:
    """``prompts`` tokenised into one left-padded batch (the new tokens then line up at the right),
    leaving the tokenizer's own padding side as it was."""
    old_side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        return dict(tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False))
    finally:
        tokenizer.padding_side = old_side


def pad_token_id(tokenizer: Any) -> int:
    """The tokenizer's padding id, else its end-of-sequence id."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


class LocalChatModel(ChatModel):
    """A :class:`ChatModel` over an in-process transformers model.

    Args:
        model: a causal LM (``model.generate`` must exist).
        tokenizer: its tokenizer; must have a chat template.
        name: identifies the backend and model (used in cache keys).
        batch_size: conversations per ``generate`` call.
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "local", batch_size: int = 8) -> None:
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("tokenizer has no chat template; pass a chat/instruct model's tokenizer")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.batch_size = batch_size

    def _prompts(self, conversations: Sequence[Conversation]) -> list[str]:
        return [
            self.tokenizer.apply_chat_template(
                validate_conversation(c), tokenize=False, add_generation_prompt=True
            )
            for c in conversations
        ]

    @torch.no_grad()
    def _generate_batch(self, prompts: list[str], config: GenerationConfig, n: int) -> list[list[str]]:
        tok = self.tokenizer
        enc = left_padded(tok, prompts)
        sample = config.temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": config.max_tokens,
            "do_sample": sample,
            "num_return_sequences": n,
            "pad_token_id": pad_token_id(tok),
        }
        if config.stop:  # halt each sequence at its stop string instead of running to max_tokens
            kwargs.update(stop_strings=list(config.stop), tokenizer=tok)
        if sample:
            kwargs.update(temperature=config.temperature, top_p=config.top_p, top_k=0)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        device = next(self.model.parameters()).device
        enc = {k: v.to(device) for k, v in enc.items()}
        with torch.random.fork_rng(devices=[]):
            if config.seed is not None:
                torch.manual_seed(config.seed)
            out = self.model.generate(**enc, **kwargs)
        new_tokens = out[:, enc["input_ids"].shape[1] :]
        texts = tok.batch_decode(new_tokens, skip_special_tokens=True)
        texts = [apply_stop(t, config.stop) for t in texts]
        return [texts[i * n : (i + 1) * n] for i in range(len(prompts))]

    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig) -> list[list[str]]:
        prompts = self._prompts(conversations)
        greedy = config.temperature == 0
        n = 1 if greedy else config.n
        results: list[list[str]] = []
        for start in range(0, len(prompts), self.batch_size):
            results.extend(self._generate_batch(prompts[start : start + self.batch_size], config, n))
        if greedy:
            results = [r * config.n for r in results]
        return results
