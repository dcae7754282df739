"""icml25 bench llm: FLOP count, exact token counts and the linear-only bound, on a tiny random model."""

from __future__ import annotations

import pytest

from icml25.llm.bench import decode_flops_per_token, linear_bound_tokens_per_s, main, measure_throughput
from icml25.llm.models import tiny_random_chat_model


def test_flops_count_every_linear_weight_twice() -> None:
    chat = tiny_random_chat_model()
    cfg = chat.model.config
    h, i, v, layers = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size, cfg.num_hidden_layers
    kv = cfg.num_key_value_heads * (h // cfg.num_attention_heads)
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * i  # q, o; k, v; gate, up, down
    assert decode_flops_per_token(chat.model) == 2.0 * (layers * per_layer + h * v)


def test_measure_throughput_counts_exactly_the_forced_tokens() -> None:
    chat = tiny_random_chat_model()
    row = measure_throughput(chat.model, chat.tokenizer, batch=3, new_tokens=5)
    assert (row.batch, row.tokens) == (3, 15) and row.tokens_per_s > 0


def test_linear_bound_is_positive_and_checks_its_model() -> None:
    import torch

    chat = tiny_random_chat_model()
    assert linear_bound_tokens_per_s(chat.model, 4) > 0
    with pytest.raises(ValueError, match="nn.Linear"):
        linear_bound_tokens_per_s(torch.nn.ReLU(), 4)


@pytest.mark.parametrize("argv", [["--new-tokens", "0"], ["--batches", "a,b"], ["--batches", "0"]])
def test_bad_arguments_exit_with_usage(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
