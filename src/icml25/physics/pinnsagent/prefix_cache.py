"""Prompt-prefix key/value reuse for the planner LLM of *PINNsAgent: Automated PDE Surrogation with
Large Language Models* (Wuwu et al., ICML 2025, arXiv 2501.12053).

The planner prompts (Sec. 3.4) of one search share most of their tokens: every prompt opens with
the same system message and in-context answers, a target PDE's prompts repeat its description, the
replayed knowledge and the parameter scores round after round, and only the history and the current
configuration change. :class:`PrefixReuseChatModel` is the local chat backend
(:class:`~icml25.llm.local.LocalChatModel`) with one change: the prompt's keys and values are not
recomputed for the longest token prefix it shares with a recently seen prompt. Each prompt but its
last token is encoded alone (no padding), from the reused prefix on; the batch's caches are then
left-padded into one cache, and ``model.generate`` runs exactly as in the local backend on the same
left-padded batch (same batches, seeds, sampling and stopping), starting at the last prompt token.
The logits equal the local backend's up to float round-off (a different order of the same sums),
so the sampled replies are the same except where round-off moves a sample across a boundary.

An engineering helper, not part of the method; a general shared-prefix cache would belong in
``icml25.llm``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from icml25.llm.chat import GenerationConfig, apply_stop
from icml25.llm.local import LocalChatModel, left_padded, pad_token_id

__all__ = ["PrefixReuseChatModel"]

#: per layer: (keys, values), each [1, kv_heads, tokens, head_dim]
LayerStates = list[tuple[torch.Tensor, torch.Tensor]]


def _common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the longest common prefix of two 1-D integer arrays."""
    m = min(len(a), len(b))
    diff = np.flatnonzero(a[:m] != b[:m])
    return int(diff[0]) if len(diff) else m


class PrefixReuseChatModel(LocalChatModel):
    """The local chat backend with the prompt prefill reusing cached key/value prefixes.

    Args:
        model: a decoder-only causal LM whose ``model.model`` (the body) accepts ``cache`` and
            ``position_ids`` (Llama-family models in transformers, such as SmolLM2).
        tokenizer: its tokenizer, with a chat template.
        name: identifies the backend and model (used in cache keys; keep the wrapped backend's name,
            as the replies are the same up to round-off).
        batch_size: conversations per ``generate`` call (as in the local backend: batches and seeds
            must match it for the replies to match).
        max_entries: prompts whose key/value states are kept (least recently used evicted first);
            each holds about 46 kB per token for SmolLM2-135M.

    Attributes:
        reused_tokens, computed_tokens: prompt tokens whose states were reused / computed.
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, name: str = "local", batch_size: int = 8, max_entries: int = 24
    ) -> None:
        super().__init__(model, tokenizer, name=name, batch_size=batch_size)
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries must be a positive integer, got {max_entries!r}")
        if not hasattr(model, "model"):
            raise ValueError("model must be a causal LM with its decoder body as model.model (Llama-like)")
        self.max_entries = max_entries
        self._store: OrderedDict[bytes, tuple[np.ndarray, LayerStates]] = OrderedDict()
        self._stop_criteria: dict[tuple[str, ...], Any] = {}
        self.reused_tokens = 0
        self.computed_tokens = 0

    @classmethod
    def from_local(cls, local: LocalChatModel, *, max_entries: int = 24) -> PrefixReuseChatModel:
        """The same model, tokenizer, name and batch size as ``local``, with prefix reuse."""
        if not isinstance(local, LocalChatModel):
            raise ValueError(f"local must be a LocalChatModel, got {type(local).__name__}")
        return cls(
            local.model,
            local.tokenizer,
            name=local.name,
            batch_size=local.batch_size,
            max_entries=max_entries,
        )

    def clear(self) -> None:
        """Forget every stored prefix."""
        self._store.clear()

    def _states(self, ids: np.ndarray) -> LayerStates:
        """Keys and values of ``ids[:-1]`` (one prompt, no padding), reusing the longest stored prefix."""
        from transformers import DynamicCache

        target = len(ids) - 1
        best, best_key = 0, None
        for key, (stored, _) in self._store.items():
            n = min(_common_prefix(stored, ids), target)
            if n > best:
                best, best_key = n, key
        cache = DynamicCache()
        if best_key is not None:
            self._store.move_to_end(best_key)
            for layer, (k, v) in enumerate(self._store[best_key][1]):
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
        if key not in self._store:
            self._store[key] = (ids[:target].copy(), states)
            while len(self._store) > self.max_entries:
                self._store.popitem(last=False)
        else:
            self._store.move_to_end(key)
        return states

    @torch.no_grad()
    def _generate_batch(self, prompts: list[str], config: GenerationConfig, n: int) -> list[list[str]]:
        from transformers import DynamicCache

        tok = self.tokenizer
        enc = left_padded(tok, prompts)
        ids, mask = enc["input_ids"], enc["attention_mask"]
        length = ids.shape[1]
        if int(mask.sum(dim=1).min()) < 2:  # a one-token prompt has no prefix to reuse
            return super()._generate_batch(prompts, config, n)
        rows = [self._states(ids[b][mask[b].bool()].numpy()) for b in range(len(prompts))]
        # the batch's cache: every row's states left-padded (masked out) to length - 1 tokens, each
        # row repeated n times as generate repeats the input rows for num_return_sequences
        cache = DynamicCache()
        for layer in range(len(rows[0])):
            keys, values = [], []
            for states in rows:
                k, v = states[layer]
                pad = (0, 0, length - 1 - k.shape[2], 0)
                keys += [torch.nn.functional.pad(k, pad)] * n
                values += [torch.nn.functional.pad(v, pad)] * n
            cache.update(torch.cat(keys), torch.cat(values), layer)
        sample = config.temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": config.max_tokens,
            "do_sample": sample,
            "num_return_sequences": n,
            "pad_token_id": pad_token_id(tok),
        }
        if config.stop:  # the local backend's stop_strings criterion, built once per stop tuple
            kwargs.update(stopping_criteria=self._stopping(config.stop))
        if sample:
            kwargs.update(temperature=config.temperature, top_p=config.top_p, top_k=0)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        device = next(self.model.parameters()).device
        enc = {k: v.to(device) for k, v in enc.items()}
        with torch.random.fork_rng(devices=[]):
            if config.seed is not None:
                torch.manual_seed(config.seed)
            out = self.model.generate(**enc, cache=cache, **kwargs)
        new_tokens = out[:, length:]
        texts = tok.batch_decode(new_tokens, skip_special_tokens=True)
        texts = [apply_stop(t, config.stop) for t in texts]
        return [texts[i * n : (i + 1) * n] for i in range(len(prompts))]

    def _stopping(self, stop: tuple[str, ...]) -> Any:
        """generate's ``stop_strings`` criterion (stateless), kept instead of rebuilt from the vocabulary
        at every call."""
        from transformers import StoppingCriteriaList
        from transformers.generation.stopping_criteria import StopStringCriteria

        if stop not in self._stop_criteria:
            self._stop_criteria[stop] = StopStringCriteria(self.tokenizer, list(stop))
        return StoppingCriteriaList([self._stop_criteria[stop]])
