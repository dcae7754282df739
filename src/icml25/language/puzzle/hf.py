"""Puzzle children in transformers' own ``save_pretrained`` / ``from_pretrained`` path.

Part of our implementation of *Puzzle: Distillation-Based NAS for Inference-Optimized LLMs*
(Bercovich et al., ICML 2025, https://arxiv.org/abs/2411.19146). A child's layers are heterogeneous
(fewer KV heads, a narrower FFN, a linear map or nothing in place of a sub-block), which a plain
``LlamaConfig`` cannot describe. As the paper's released Nemotron-NAS models do with their
``block_configs``, :class:`PuzzleLlamaConfig` records each layer's two variants and
:class:`PuzzleLlamaForCausalLM` builds those layers before transformers loads the weights. Importing
this module registers both with ``AutoConfig`` / ``AutoModelForCausalLM`` (model type
``"icml25_puzzle_llama"``); :func:`~icml25.language.puzzle.assemble_child` returns its children
already converted when the parent is a ``LlamaForCausalLM``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

import torch
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaMLP, LlamaRMSNorm

from .blocks import ATTENTION, FFN, LinearAttention, PuzzleDecoderLayer, Variant

__all__ = ["PUZZLE_MODEL_TYPE", "PuzzleLlamaConfig", "PuzzleLlamaForCausalLM", "to_puzzle_llama"]

PUZZLE_MODEL_TYPE = "icml25_puzzle_llama"


@strict
@dataclasses.dataclass(repr=False)
class PuzzleLlamaConfig(LlamaConfig):
    """A ``LlamaConfig`` plus ``block_configs``: per layer ``{"attention": {"op", "size"}, "ffn":
    {"op", "size"}}`` with the ops of :class:`~icml25.language.puzzle.Variant` (``parent``, ``kv``,
    ``width``, ``linear``, ``noop``). The other fields describe the parent."""

    model_type = PUZZLE_MODEL_TYPE
    block_configs: list | None = None


def _attention(config: LlamaConfig, i: int, variant: Variant) -> nn.Module | None:
    d = config.hidden_size
    if variant.op == "noop":
        return None
    if variant.op == "linear":
        return LinearAttention(torch.zeros(d, d), i)
    attn = LlamaAttention(config, i)
    if variant.op == "kv":  # as kv_reduced_attention builds it: K/V projections for `size` KV heads
        kv = int(variant.size or 1)
        head_dim = attn.head_dim
        attn.k_proj = nn.Linear(d, kv * head_dim, bias=config.attention_bias)
        attn.v_proj = nn.Linear(d, kv * head_dim, bias=config.attention_bias)
        attn.num_key_value_groups = config.num_attention_heads // kv
    return attn


def _ffn(config: LlamaConfig, variant: Variant) -> nn.Module | None:
    d = config.hidden_size
    if variant.op == "noop":
        return None
    if variant.op == "linear":
        return nn.Linear(d, d, bias=False)
    mlp = LlamaMLP(config)
    if variant.op == "width":  # as width_reduced_mlp builds it
        width = int(variant.size or 1)
        mlp.gate_proj = nn.Linear(d, width, bias=config.mlp_bias)
        mlp.up_proj = nn.Linear(d, width, bias=config.mlp_bias)
        mlp.down_proj = nn.Linear(width, d, bias=config.mlp_bias)
        mlp.intermediate_size = width
    return mlp


def _layer(config: LlamaConfig, i: int, spec: dict[str, Any]) -> PuzzleDecoderLayer:
    a, f = Variant(ATTENTION, **spec["attention"]), Variant(FFN, **spec["ffn"])
    attn, mlp = _attention(config, i, a), _ffn(config, f)

    def norm(module: nn.Module | None) -> nn.Module | None:
        return None if module is None else LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    return PuzzleDecoderLayer(norm(attn), attn, norm(mlp), mlp, i)


class PuzzleLlamaForCausalLM(LlamaForCausalLM):
    """``LlamaForCausalLM`` whose decoder layers are the variants in ``config.block_configs``."""

    config_class = PuzzleLlamaConfig

    def __init__(self, config: PuzzleLlamaConfig) -> None:
        super().__init__(config)
        if config.block_configs is not None:
            if len(config.block_configs) != config.num_hidden_layers:
                raise ValueError(
                    f"block_configs: {len(config.block_configs)} entries for "
                    f"{config.num_hidden_layers} layers"
                )
            self.model.layers = nn.ModuleList(
                _layer(config, i, spec) for i, spec in enumerate(config.block_configs)
            )


def to_puzzle_llama(child: Any, variants: Sequence[tuple[Variant, Variant]]) -> PuzzleLlamaForCausalLM:
    """Turn an assembled child (a ``LlamaForCausalLM`` with :class:`PuzzleDecoderLayer` layers) into a
    :class:`PuzzleLlamaForCausalLM`, in place; ``variants[i]`` is layer i's (attention, FFN) pair."""
    if not isinstance(child, LlamaForCausalLM):
        raise TypeError(f"child must be a LlamaForCausalLM, got {type(child).__name__}")
    if len(variants) != len(child.model.layers):
        raise ValueError(f"variants: {len(variants)} pairs for {len(child.model.layers)} layers")
    dropped = ("model_type", "transformers_version", "block_configs")
    fields = {k: v for k, v in child.config.to_dict().items() if k not in dropped}
    known = {f.name for f in dataclasses.fields(PuzzleLlamaConfig)}
    blocks = [
        {"attention": {"op": a.op, "size": a.size}, "ffn": {"op": f.op, "size": f.size}} for a, f in variants
    ]
    config = PuzzleLlamaConfig(**{k: v for k, v in fields.items() if k in known}, block_configs=blocks)
    config._attn_implementation = child.config._attn_implementation
    child.__class__ = PuzzleLlamaForCausalLM  # same modules and forward; only the class that saves
    for module in child.modules():  # the model, its decoder and every attention share one config
        if module is child or getattr(module, "config", None) is not None:
            setattr(module, "config", config)  # noqa: B010 - nn.Module's typed __setattr__
    return cast(PuzzleLlamaForCausalLM, child)


AutoConfig.register(PUZZLE_MODEL_TYPE, PuzzleLlamaConfig, exist_ok=True)
AutoModelForCausalLM.register(PuzzleLlamaConfig, PuzzleLlamaForCausalLM, exist_ok=True)
