"""icml25.nn.blocks and icml25.nn.embeddings against naive formulas."""

from __future__ import annotations

import math

import pytest
import torch

from icml25.nn.blocks import MLP, GatedMLP, RMSNorm, TransformerBlock, modulate
from icml25.nn.embeddings import (
    RotaryEmbedding,
    TimestepEmbedder,
    alibi_bias,
    alibi_slopes,
    patchify,
    sincos_2d,
    sinusoidal_embedding,
    unpatchify,
)


def test_rmsnorm_formula():
    x = torch.randn(3, 5)
    norm = RMSNorm(5, eps=0.0)
    with torch.no_grad():
        norm.weight.copy_(torch.arange(1.0, 6.0))
    expected = x / x.pow(2).mean(-1, keepdim=True).sqrt() * torch.arange(1.0, 6.0)
    torch.testing.assert_close(norm(x), expected)


def test_gated_mlp_is_swiglu():
    torch.manual_seed(0)
    m = GatedMLP(4, 6)
    x = torch.randn(2, 4)
    expected = m.fc2(torch.nn.functional.silu(m.fc1(x)) * m.gate(x))
    torch.testing.assert_close(m(x), expected)
    with pytest.raises(ValueError, match="activation"):
        MLP(4, 8, activation="tanhh")


def test_modulate():
    x, shift, scale = torch.ones(2, 3, 4), torch.full((2, 1, 4), 2.0), torch.full((2, 1, 4), 0.5)
    torch.testing.assert_close(modulate(x, shift, scale), torch.full((2, 3, 4), 3.5))


def test_adaln_zero_block_starts_as_identity_and_plain_block_is_prenorm():
    torch.manual_seed(0)
    block = TransformerBlock(8, 2, cond_dim=6)
    torch.nn.init.zeros_(block.adaLN.weight)
    torch.nn.init.zeros_(block.adaLN.bias)
    x, c = torch.randn(2, 3, 8), torch.randn(2, 6)
    torch.testing.assert_close(block(x, c), x)
    one_plus = TransformerBlock(8, 2, cond_dim=6, gate="one_plus")
    torch.nn.init.zeros_(one_plus.adaLN.weight)
    torch.nn.init.zeros_(one_plus.adaLN.bias)
    plain = TransformerBlock(8, 2)
    plain.load_state_dict({k: v for k, v in one_plus.state_dict().items() if not k.startswith("adaLN")})
    torch.testing.assert_close(one_plus(x, c), plain(x))  # zero shift/scale, gate 1: the plain block
    with pytest.raises(ValueError, match="cond_dim"):
        block(x)
    with pytest.raises(ValueError, match="no conditioning"):
        plain(x, c)


def test_block_causal_cache_equals_full():
    torch.manual_seed(0)
    block = TransformerBlock(8, 2, norm="rms", gated_mlp=True).eval()
    from icml25.nn.attention import KVCache

    x = torch.randn(1, 4, 8)
    cache = KVCache()
    steps = torch.cat([block(x[:, t : t + 1], causal=True, cache=cache) for t in range(4)], dim=1)
    torch.testing.assert_close(steps, block(x, causal=True), rtol=1e-5, atol=1e-6)


def test_sinusoidal_embedding_formula_and_odd_dim():
    t = torch.tensor([0.0, 3.0])
    emb = sinusoidal_embedding(t, 6, max_period=100.0)
    freqs = [100.0 ** (-i / 3) for i in range(3)]
    expected = torch.tensor(
        [[math.cos(s * f) for f in freqs] + [math.sin(s * f) for f in freqs] for s in (0.0, 3.0)]
    )
    torch.testing.assert_close(emb, expected)
    assert sinusoidal_embedding(t, 7).shape == (2, 7)
    assert TimestepEmbedder(16, freq_dim=8)(t).shape == (2, 16)


def test_sincos_2d_rows_then_columns():
    table = sincos_2d(8, 2, 3)
    assert table.shape == (6, 8)
    # token (row 1, col 2) = index 5; first quarter is sin(row * ω)
    omega = [1.0, 1 / 100.0]
    torch.testing.assert_close(table[5, :2], torch.tensor([math.sin(1 * w) for w in omega]))
    torch.testing.assert_close(table[5, 4:6], torch.tensor([math.sin(2 * w) for w in omega]))
    with pytest.raises(ValueError, match="multiple of 4"):
        sincos_2d(6, 2, 2)


def test_rope_rotates_pairs_and_preserves_norm_and_relative_dot():
    rope = RotaryEmbedding(4, base=100.0)
    x = torch.randn(1, 1, 3, 4)
    out = rope(x)
    for pos in range(3):
        for i, f in enumerate((1.0, 100.0**-0.5)):
            a, b = x[0, 0, pos, i], x[0, 0, pos, i + 2]
            c, s = math.cos(pos * f), math.sin(pos * f)
            torch.testing.assert_close(out[0, 0, pos, i], a * c - b * s)
            torch.testing.assert_close(out[0, 0, pos, i + 2], b * c + a * s)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1))
    q, k = torch.randn(1, 1, 1, 4), torch.randn(1, 1, 1, 4)
    d1 = (rope(q, offset=2) * rope(k, offset=0)).sum()
    d2 = (rope(q, offset=7) * rope(k, offset=5)).sum()
    torch.testing.assert_close(d1, d2)  # depends only on the offset difference
    with pytest.raises(ValueError, match="even"):
        RotaryEmbedding(5)


def test_alibi_slopes_and_bias():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0 ** -(k + 1) for k in range(8)]))
    s6 = alibi_slopes(6)  # 4 from the power of two, then 2 interleaved from 8
    torch.testing.assert_close(s6, torch.tensor([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]))
    bias = alibi_bias(2, 3)
    assert bias.shape == (2, 3, 3)
    torch.testing.assert_close(bias[0, 2], -alibi_slopes(2)[0] * torch.tensor([2.0, 1.0, 0.0]))


def test_patchify_roundtrip_and_layout():
    x = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).view(2, 3, 4, 4)
    u = patchify(x, 2)
    assert u.shape == (2, 4, 12)
    torch.testing.assert_close(u, torch.nn.functional.unfold(x, 2, stride=2).transpose(1, 2))
    torch.testing.assert_close(unpatchify(u, 2, 3, 4), x)
    with pytest.raises(ValueError, match="divisible"):
        patchify(x, 3)
