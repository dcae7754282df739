"""icml25.nn.attention: masks, biases and the KV cache against a naive softmax reference."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.nn.attention import KVCache, MultiheadAttention, attention_mask, scaled_dot_product_attention
from icml25.nn.embeddings import RotaryEmbedding, alibi_bias


def naive_attention(q, k, v, *, causal=False, pad=None, bias=None, scale=None):
    n, m, e = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1 / math.sqrt(e) if scale is None else scale
    logits = q @ k.transpose(-1, -2) * scale
    if bias is not None:
        logits = logits + bias
    for i in range(n):
        for j in range(m):
            if causal and j > i + (m - n):
                logits[..., i, j] = -math.inf
    if pad is not None:
        logits = logits.masked_fill(~pad[:, None, None, :], -math.inf)
    w = torch.softmax(logits, dim=-1)
    return torch.nan_to_num(w) @ v


def qkv(b=2, h=3, n=5, m=None, e=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = n if m is None else m
    return (
        torch.randn(b, h, n, e, generator=g),
        torch.randn(b, h, m, e, generator=g),
        torch.randn(b, h, m, e, generator=g),
    )


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_matches_naive(causal):
    q, k, v = qkv()
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, causal=causal), naive_attention(q, k, v, causal=causal)
    )


def test_causal_with_longer_keys_uses_bottom_right_alignment():
    q, k, v = qkv(n=3, m=7)
    out = scaled_dot_product_attention(q, k, v, causal=True)
    torch.testing.assert_close(out, naive_attention(q, k, v, causal=True))
    # the last query sees every key: equal to unmasked attention for that row
    torch.testing.assert_close(out[..., -1, :], naive_attention(q, k, v)[..., -1, :])


def test_padding_mask_and_bias():
    q, k, v = qkv(n=4)
    pad = torch.tensor([[True, True, False, True], [True, False, False, False]])
    bias = torch.randn(1, 3, 4, 4, generator=torch.Generator().manual_seed(1))
    out = scaled_dot_product_attention(q, k, v, key_padding_mask=pad, bias=bias, causal=True)
    torch.testing.assert_close(out, naive_attention(q, k, v, pad=pad, bias=bias, causal=True))
    assert torch.isfinite(out).all()


def test_fully_masked_row_is_zero_not_nan():
    q, k, v = qkv(b=1, n=2)
    pad = torch.tensor([[False, False]])
    out = scaled_dot_product_attention(q, k, v, key_padding_mask=pad)
    assert torch.equal(out, torch.zeros_like(out))


def test_attention_mask_shape_error_names_argument():
    with pytest.raises(ValueError, match="key_padding_mask"):
        attention_mask(3, 3, key_padding_mask=torch.ones(2, 4, dtype=torch.bool))


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 7), heads=st.sampled_from([1, 2, 4]), seed=st.integers(0, 1000))
def test_kv_cache_decoding_equals_full_causal_pass(n, heads, seed):
    torch.manual_seed(seed)
    attn = MultiheadAttention(8, heads).eval()
    x = torch.randn(2, n, 8)
    full = attn(x, causal=True)
    cache = KVCache()
    steps = [attn(x[:, t : t + 1], causal=True, cache=cache) for t in range(n)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-6)
    assert len(cache) == n
    cache.reset()
    assert len(cache) == 0


def test_kv_cache_prefill_then_append_with_rope():
    torch.manual_seed(0)
    attn = MultiheadAttention(16, 2).eval()
    rope = RotaryEmbedding(8)
    x = torch.randn(1, 6, 16)
    full = attn(x, causal=True, rotary=rope)
    cache = KVCache()
    head = attn(x[:, :4], causal=True, cache=cache, rotary=rope)
    tail = [attn(x[:, t : t + 1], causal=True, cache=cache, rotary=rope) for t in (4, 5)]
    torch.testing.assert_close(torch.cat([head, *tail], dim=1), full, rtol=1e-5, atol=1e-6)


def test_alibi_bias_through_the_layer_matches_naive():
    torch.manual_seed(0)
    attn = MultiheadAttention(8, 2).eval()
    x = torch.randn(1, 5, 8)
    bias = alibi_bias(2, 5)[None]
    out = attn(x, causal=True, bias=bias)
    q, k, v = attn.qkv(x).view(1, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
    ref = naive_attention(q, k, v, causal=True, bias=bias).transpose(1, 2).reshape(1, 5, 8)
    torch.testing.assert_close(out, attn.proj(ref), rtol=1e-5, atol=1e-6)


def test_temperature_divides_logits_and_qk_norm_runs():
    torch.manual_seed(0)
    attn = MultiheadAttention(8, head_dim=4, qk_norm="rms").eval()
    x = torch.randn(2, 3, 8)
    hot, cold = attn(x, temperature=1e6), attn(x)
    # τ → ∞ is uniform attention: every token gets the mean of the values
    v = attn.qkv(x).view(2, 3, 3, 2, 4)[:, :, 2]
    uniform = attn.proj(v.mean(1, keepdim=True).expand(-1, 3, -1, -1).reshape(2, 3, 8))
    torch.testing.assert_close(hot, uniform, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(cold, uniform)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dim": 10, "num_heads": 3}, "divisible"),
        ({"dim": 8, "head_dim": 3}, "head_dim"),
        ({"dim": 8, "num_heads": 2, "qk_norm": "batch"}, "qk_norm"),
    ],
)
def test_bad_construction(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MultiheadAttention(**kwargs)


def test_bad_input_shape_and_temperature():
    attn = MultiheadAttention(8, 2)
    with pytest.raises(ValueError, match="x must be"):
        attn(torch.randn(2, 8))
    with pytest.raises(ValueError, match="temperature"):
        attn(torch.randn(1, 2, 8), temperature=0.0)
