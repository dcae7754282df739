"""The local backend's prompt-prefix cache: the same replies as without it, states equal to a one-pass
prefill, a bounded store, and clear errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from icml25.llm.chat import GenerationConfig


def _sharp_tiny_chat_model() -> Any:
    """The tiny random chat model with larger weights: peaked logits, so that a wrong key/value cache
    changes the sampled replies (the default init gives near-uniform logits that hide it)."""
    from icml25.llm.models import tiny_random_chat_model

    local = tiny_random_chat_model()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in local.model.parameters():
            if param.ndim > 1:
                param.copy_(torch.randn(param.shape, generator=g) * 0.6)
    return local


def _agent_like_conversations(k: int) -> list[list[dict[str, str]]]:
    """Conversations that share a system message and differ in the tail, of unequal lengths."""
    system = {"role": "system", "content": "You tune PINN hyperparameters. Answer with one JSON object."}
    return [
        [system, {"role": "user", "content": f"PDE {i % 3}: " + "u_t = u_xx " * (i % 4) + f"current lr={i}"}]
        for i in range(k)
    ]


@pytest.mark.parametrize(("temperature", "n"), [(0.7, 1), (0.7, 2), (0.0, 1)])
def test_prefix_cache_gives_the_uncached_replies(temperature: float, n: int) -> None:
    """Cached equals uncached: the same batches, seeds and sampling give the same replies, and later
    rounds reuse the stored prefixes (more conversations than one batch, so two batches per call)."""
    local = _sharp_tiny_chat_model()
    local.batch_size = 4
    reuse = local.with_prefix_cache(16)
    assert reuse.name == local.name and reuse.batch_size == 4 and local.prefix_cache == 0
    convs = _agent_like_conversations(7)
    for round_ in range(3):
        gen = GenerationConfig(n=n, temperature=temperature, max_tokens=10, seed=round_, stop=("}",))
        want = local.generate(convs, gen)
        assert reuse.generate(convs, gen) == want
        assert all(len(r) == n for r in want)
        convs = [c[:-1] + [{"role": "user", "content": c[-1]["content"] + f" round {round_}"}] for c in convs]
    assert reuse.reused_tokens > reuse.computed_tokens > 0
    assert local.reused_tokens == local.computed_tokens == 0


def test_prefix_states_match_a_one_pass_prefill_and_the_store_is_bounded() -> None:
    from transformers import DynamicCache

    local = _sharp_tiny_chat_model()
    reuse = local.with_prefix_cache(2)
    prompts = reuse._prompts(_agent_like_conversations(3))
    ids = [np.asarray(local.tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    for x in ids:
        states = reuse._prefix_states(x)
        cache = DynamicCache()
        with torch.no_grad():
            local.model.model(input_ids=torch.as_tensor(x[:-1])[None], cache=cache, use_cache=True)
        for (k, v), layer in zip(states, cache.layers, strict=True):
            assert k.shape == layer.keys.shape == (1, 1, len(x) - 1, 8)
            torch.testing.assert_close(k, layer.keys, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(v, layer.values, rtol=1e-5, atol=1e-6)
    assert reuse.reused_tokens > 0 and len(reuse._prefixes) == 2
    reuse.clear_prefix_cache()
    assert len(reuse._prefixes) == 0


def test_the_stop_criterion_is_built_once_per_stop_tuple() -> None:
    local = _sharp_tiny_chat_model()
    gen = GenerationConfig(n=1, temperature=0.0, max_tokens=4, seed=0, stop=("}",))
    local.generate(_agent_like_conversations(2), gen)
    first = local._stop_criteria[("}",)]
    local.generate(_agent_like_conversations(3), gen)
    assert local._stop_criteria[("}",)] is first and len(local._stop_criteria) == 1


def test_prefix_cache_bad_inputs_raise_naming_the_argument() -> None:
    from icml25.llm.local import LocalChatModel

    local = _sharp_tiny_chat_model()
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="prefix_cache"):
            LocalChatModel(local.model, local.tokenizer, prefix_cache=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="entries"):
        local.with_prefix_cache(0)
    with pytest.raises(ValueError, match="model.model"):
        LocalChatModel(torch.nn.Linear(2, 2), local.tokenizer, prefix_cache=4)
