"""Pruned Llama models in transformers' own ``save_pretrained`` / ``from_pretrained`` path.

Part of our implementation of *SlimLLM: Accurate Structured Pruning for Large Language Models* (Guo
et al., ICML 2025, https://arxiv.org/abs/2505.22689). SlimLLM's layer-wise ratios leave every decoder
layer with its own number of heads and FFN channels (and the regression recovery adds biases to the
output projections), which a plain ``LlamaConfig`` cannot describe. :class:`PrunedLlamaConfig` is a
``LlamaConfig`` that also records each layer's structure, and :class:`PrunedLlamaForCausalLM` builds
that structure before transformers loads the weights. Importing this module registers both with
``AutoConfig`` / ``AutoModelForCausalLM`` (model type ``"icml25_pruned_llama"``), so::

    import icml25.language.slimllm.hf  # noqa: F401 - registers the pruned-Llama classes
    from transformers import AutoModelForCausalLM

    pruned, report = prune_model(model, calib, PruneConfig(sparsity=0.2))
    pruned.save_pretrained("pruned")                           # config.json + model.safetensors
    again = AutoModelForCausalLM.from_pretrained("pruned")     # a PrunedLlamaForCausalLM

:func:`~icml25.language.slimllm.prune_model` returns its models already converted.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from .surgery import PRUNED_MODEL_TYPE, apply_structure, layer_structure

__all__ = ["PRUNED_MODEL_TYPE", "PrunedLlamaConfig", "PrunedLlamaForCausalLM", "to_pruned_llama"]


@strict
@dataclasses.dataclass(repr=False)
class PrunedLlamaConfig(LlamaConfig):
    """A ``LlamaConfig`` plus ``pruned_layers``: one dict per decoder layer with ``kv_index`` (the KV
    head of each kept query head, ``None`` for an unpruned attention), ``o_bias``, ``d_ff`` and
    ``down_bias``. ``num_attention_heads`` and ``intermediate_size`` keep the dense model's values
    (the rotary embedding and ``head_dim`` are derived from them); the layers' sizes come from
    ``pruned_layers``."""

    model_type = PRUNED_MODEL_TYPE
    pruned_layers: list | None = None


class PrunedLlamaForCausalLM(LlamaForCausalLM):
    """``LlamaForCausalLM`` whose decoder layers have the sizes recorded in ``config.pruned_layers``."""

    config_class = PrunedLlamaConfig

    def __init__(self, config: PrunedLlamaConfig) -> None:
        super().__init__(config)
        if config.pruned_layers is not None:
            apply_structure(self, config, config.pruned_layers)


def to_pruned_llama(model: Any) -> PrunedLlamaForCausalLM:
    """Turn a (pruned or dense) ``LlamaForCausalLM`` into a :class:`PrunedLlamaForCausalLM`, in place.

    The weights are untouched; the config gains the per-layer structure and the model type that
    ``AutoModelForCausalLM.from_pretrained`` maps back to this class.
    """
    if not isinstance(model, LlamaForCausalLM):
        raise TypeError(f"model must be a LlamaForCausalLM, got {type(model).__name__}")
    dropped = ("model_type", "transformers_version")
    fields = {k: v for k, v in model.config.to_dict().items() if k not in dropped}
    fields["pruned_layers"] = layer_structure(model)
    known = {f.name for f in dataclasses.fields(PrunedLlamaConfig)}
    config = PrunedLlamaConfig(**{k: v for k, v in fields.items() if k in known})
    config._attn_implementation = model.config._attn_implementation
    model.__class__ = PrunedLlamaForCausalLM  # same modules and forward; only the class that saves
    for module in model.modules():  # the model, its decoder and every attention share one config
        if module is model or getattr(module, "config", None) is not None:
            setattr(module, "config", config)  # noqa: B010 - nn.Module's typed __setattr__
    return cast(PrunedLlamaForCausalLM, model)


AutoConfig.register(PRUNED_MODEL_TYPE, PrunedLlamaConfig, exist_ok=True)
AutoModelForCausalLM.register(PrunedLlamaConfig, PrunedLlamaForCausalLM, exist_ok=True)
