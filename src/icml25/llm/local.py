"""The local chat backend: a transformers causal LM with its tokenizer's chat template.

Conversations are rendered with ``tokenizer.apply_chat_template(..., add_generation_prompt=True)``,
left-padded into one batch and completed by ``model.generate``: greedy decoding at temperature 0
(then ``n`` > 1 repeats one completion), nucleus sampling (Holtzman et al., 2020,
https://arxiv.org/abs/1904.09751) otherwise, seeded through a forked torch RNG so that the caller's
global RNG state is left as it was. Stop strings end each sequence during generation (one criterion
per stop tuple, built once) and are applied again to the decoded text.

Prompt-prefix reuse (``prefix_cache`` > 0): prompts of one agent loop share most of their tokens (the
system message, in-context examples, a task description repeated round after round). With a prefix
cache the prompt's keys and values are not recomputed for the longest token prefix it shares with one
of the last ``prefix_cache`` prompts: each prompt but its last token is encoded alone (no padding) from
the reused prefix on, the batch's caches are left-padded into one cache, and ``model.generate`` runs on
the same left-padded batch as without it (same batches, seeds, sampling and stopping), starting at the
last prompt token. The logits equal the uncached ones up to float round-off (another order of the same
sums), so the replies are the same except where round-off moves a sample across a boundary.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
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


#: per layer: (keys, values), each [1, kv_heads, tokens, head_dim]
LayerStates = list[tuple[torch.Tensor, torch.Tensor]]


def _common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the longest common prefix of two 1-D integer arrays."""
    m = min(len(a), len(b))
    diff = np.flatnonzero(a[:m] != b[:m])
    return int(diff[0]) if len(diff) else m


class LocalChatModel(ChatModel):
    """A :class:`ChatModel` over an in-process transformers model.

    Args:
        model: a causal LM (``model.generate`` must exist).
        tokenizer: its tokenizer; must have a chat template.
        name: identifies the backend and model (used in cache keys; prefix reuse keeps it, as the
            replies are the same up to round-off).
        batch_size: conversations per ``generate`` call.
        prefix_cache: prompts whose key/value states are kept for prefix reuse (least recently used
            evicted first; about 46 kB per token each for SmolLM2-135M); 0 (default) turns reuse off.
            Needs a decoder-only LM whose body ``model.model`` accepts ``cache`` and ``position_ids``
            (Llama-family models in transformers, such as SmolLM2).

    Attributes:
        reused_tokens, computed_tokens: prompt tokens whose states prefix reuse took from the cache /
            computed (both 0 without a prefix cache).
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, name: str = "local", batch_size: int = 8, prefix_cache: int = 0
    ) -> None:
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("tokenizer has no chat template; pass a chat/instruct model's tokenizer")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if isinstance(prefix_cache, bool) or not isinstance(prefix_cache, int) or prefix_cache < 0:
            raise ValueError(f"prefix_cache must be a non-negative integer, got {prefix_cache!r}")
        if prefix_cache and not hasattr(model, "model"):
            raise ValueError("prefix_cache needs a causal LM whose decoder body is model.model (Llama-like)")
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.batch_size = batch_size
        self.prefix_cache = prefix_cache
        self._prefixes: OrderedDict[bytes, tuple[np.ndarray, LayerStates]] = OrderedDict()
        self._stop_criteria: dict[tuple[str, ...], Any] = {}
        self.reused_tokens = 0
        self.computed_tokens = 0

    def with_prefix_cache(self, entries: int = 24) -> LocalChatModel:
        """The same model, tokenizer, name and batch size with a prefix cache of ``entries`` prompts
        (an empty one of its own)."""
        if isinstance(entries, bool) or not isinstance(entries, int) or entries < 1:
            raise ValueError(f"entries must be a positive integer, got {entries!r}")
        return LocalChatModel(
            self.model, self.tokenizer, name=self.name, batch_size=self.batch_size, prefix_cache=entries
        )

    def clear_prefix_cache(self) -> None:
        """Forget every stored prompt prefix (the token counters are kept)."""
        self._prefixes.clear()

    def _prompts(self, conversations: Sequence[Conversation]) -> list[str]:
        return [
            self.tokenizer.apply_chat_template(
                validate_conversation(c), tokenize=False, add_generation_prompt=True
            )
            for c in conversations
        ]

    def _stopping(self, stop: tuple[str, ...]) -> Any:
        """generate's stop-string criterion for ``stop`` (stateless), built from the vocabulary once per
        stop tuple instead of at every call."""
        from transformers import StoppingCriteriaList
        from transformers.generation.stopping_criteria import StopStringCriteria

        if stop not in self._stop_criteria:
            self._stop_criteria[stop] = StopStringCriteria(self.tokenizer, list(stop))
        return StoppingCriteriaList([self._stop_criteria[stop]])

    def _prefix_states(self, ids: np.ndarray) -> LayerStates:
        """Keys and values of ``ids[:-1]`` (one prompt, no padding), reusing the longest stored prefix."""
        from transformers import DynamicCache

        target = len(ids) - 1
        best, best_key = 0, None
        for key, (stored, _) in self._prefixes.items():
            n = min(_common_prefix(stored, ids), target)
            if n > best:
                best, best_key = n, key
        cache = DynamicCache()
        if best_key is not None:
            self._prefixes.move_to_end(best_key)
            for layer, (k, v) in enumerate(self._prefixes[best_key][1]):
                cache.update(k[:, :, :best], v[:, :, :best], layer)
        if target > best:
            device = next(self.model.parameters()).device
            self.model.model(
                input_ids=torch.as_tensor(ids[best:target], device=device)[None],
                position_ids=torch.arange(best, target, device=device)[None],
                cache=cache,
                use_cache=True,
            )
        self.reused_tokens += best
        self.computed_tokens += target - best
        layers: list[Any] = list(cache.layers)
        states: LayerStates = [(layer.keys, layer.values) for layer in layers]
        key = ids[:target].astype(np.int64).tobytes()
        if key not in self._prefixes:
            self._prefixes[key] = (ids[:target].copy(), states)
            while len(self._prefixes) > self.prefix_cache:
                self._prefixes.popitem(last=False)
        else:
            self._prefixes.move_to_end(key)
        return states

    def _prefilled_cache(self, enc: dict[str, Any], n: int) -> Any:
        """The batch's key/value cache of every prompt but its last token, each row's states reused
        where a stored prompt shares its prefix, left-padded (masked out) to the batch's length and
        repeated ``n`` times as ``generate`` repeats the rows for ``num_return_sequences``; None where a
        prompt has a single token (nothing to reuse)."""
        from transformers import DynamicCache

        ids, mask = enc["input_ids"], enc["attention_mask"]
        length = ids.shape[1]
        if int(mask.sum(dim=1).min()) < 2:
            return None
        rows = [self._prefix_states(ids[b][mask[b].bool()].numpy()) for b in range(ids.shape[0])]
        cache = DynamicCache()
        for layer in range(len(rows[0])):
            keys, values = [], []
            for states in rows:
                k, v = states[layer]
                pad = (0, 0, length - 1 - k.shape[2], 0)
                keys += [torch.nn.functional.pad(k, pad)] * n
                values += [torch.nn.functional.pad(v, pad)] * n
            cache.update(torch.cat(keys), torch.cat(values), layer)
        return cache

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
            kwargs.update(stopping_criteria=self._stopping(tuple(config.stop)))
        if sample:
            kwargs.update(temperature=config.temperature, top_p=config.top_p, top_k=0)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if self.prefix_cache:
            cache = self._prefilled_cache(enc, n)
            if cache is not None:
                kwargs.update(cache=cache)
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
