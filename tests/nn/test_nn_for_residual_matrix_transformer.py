"""TransformerBlock's bias-free and explicit-width options (added for the residual_matrix_transformer
baseline, whose transformer has no biases and any D_FF)."""

from __future__ import annotations

import pytest
import torch

from icml25.nn import TransformerBlock


def test_defaults_are_unchanged() -> None:
    block = TransformerBlock(16, 2)
    assert block.attn.proj.bias is not None
    assert block.mlp.fc1.bias is not None and block.mlp.fc2.bias is not None
    assert block.mlp.fc1.out_features == 64
    gated = TransformerBlock(16, 2, gated_mlp=True)
    assert gated.mlp.fc1.bias is None  # GatedMLP keeps its own default


def test_bias_free_block_with_explicit_mlp_width() -> None:
    block = TransformerBlock(12, 3, qkv_bias=False, proj_bias=False, mlp_bias=False, mlp_hidden=37)
    assert block.mlp.fc1.out_features == 37 and block.mlp.fc2.in_features == 37
    names = [n for n, _ in block.named_parameters() if n.endswith("bias")]
    assert all(n.startswith(("norm1", "norm2")) for n in names), names
    x = torch.randn(2, 5, 12)
    assert block(x, causal=True).shape == (2, 5, 12)
    gated = TransformerBlock(12, 3, gated_mlp=True, mlp_bias=True, mlp_hidden=20)
    assert gated.mlp.fc1.bias is not None and gated.mlp.fc1.out_features == 20


def test_mlp_hidden_must_be_positive() -> None:
    with pytest.raises(ValueError, match="mlp_hidden"):
        TransformerBlock(8, 2, mlp_hidden=0)
