"""Physical removal of attention heads and FFN channels from a Hugging Face Llama model.

Part of our implementation of *SlimLLM: Accurate Structured Pruning for Large Language Models* (Guo
et al., ICML 2025, https://arxiv.org/abs/2505.22689). Implements the structural side of the method:
pruned heads and channels leave the model, and the regression recovery becomes a row scale and a
bias of the output projections.

Pruned weights are deleted (smaller ``nn.Linear``s), not masked. Grouped-query attention is
respected: a query head keeps reading its own KV head, a KV head is removed with the last query
head of its group, and :class:`PrunedAttention` maps each kept query head to its KV head through
an index buffer (``kv_index``), so the number of query heads may differ between groups and
layers. The regression recovery turns ``o_proj`` / ``down_proj`` into biased linears with
rescaled rows. A pruned model is saved as one safetensors file whose metadata records the
per-layer structure, and :func:`load_pruned` rebuilds it without any other file.

Notation: d hidden size, d_h head size, H query heads, G KV heads, d_ff FFN channels.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from icml25.nn.params import count_parameters

__all__ = [
    "PRUNED_MODEL_TYPE",
    "PrunedAttention",
    "check_supported",
    "head_kv_index",
    "prune_attention_heads",
    "prune_mlp_channels",
    "apply_structure",
    "decoder_param_count",
    "layer_structure",
    "save_pruned",
    "save_pruned_model",
    "PRUNED_WEIGHTS_FILE",
    "load_pruned",
]


#: The ``model_type`` of a pruned Llama saved with ``save_pretrained`` (see :mod:`.hf`).
PRUNED_MODEL_TYPE = "icml25_pruned_llama"
#: Architectures whose layers :func:`prune_attention_heads` / :func:`prune_mlp_channels` understand.
SUPPORTED_MODEL_TYPES = ("llama", PRUNED_MODEL_TYPE)


def check_supported(model: Any) -> None:
    """Refuse, in one line, a model whose architecture the surgery does not handle (Qwen2's q/k/v
    biases, Mistral's sliding window, ...): only Llama-architecture models are pruned here."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ValueError(
            f"model: SlimLLM here prunes Llama-architecture causal LMs (model_type 'llama', e.g. "
            f"SmolLM2, Llama 2/3); got model_type {model_type!r}"
        )


def _attention_interface(name: str) -> Callable[..., tuple[Tensor, Any]]:
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.llama.modeling_llama import eager_attention_forward

    return ALL_ATTENTION_FUNCTIONS.get_interface(name, eager_attention_forward)  # type: ignore[no-any-return]


class PrunedAttention(nn.Module):
    """Llama attention with any subset of query heads; ``kv_index[i]`` is the KV head of query head i.

    Same projections and forward contract as ``LlamaAttention`` (so caches, masks and
    ``generate`` work); KV heads are expanded by ``index_select`` instead of ``repeat_kv``.
    """

    def __init__(
        self,
        config: Any,
        layer_idx: int,
        kv_index: Tensor | list[int],
        *,
        o_bias: bool = False,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.num_key_value_groups = 1  # K/V are expanded to one per query head in forward
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = config.attention_dropout
        self.is_causal = True
        # validate on a Python list: under transformers' meta-device construction a tensor has no values
        heads = [int(k) for k in (kv_index.tolist() if isinstance(kv_index, Tensor) else kv_index)]
        n_heads, n_kv = len(heads), max(heads, default=-1) + 1
        if n_heads < 1 or sorted(set(heads)) != list(range(n_kv)):
            raise ValueError(f"kv_index must map >= 1 heads onto KV heads 0..G-1, got {heads}")
        self.register_buffer("kv_index", torch.tensor(heads, dtype=torch.long), persistent=True)
        d, dh, bias = config.hidden_size, self.head_dim, config.attention_bias
        self.q_proj = nn.Linear(d, n_heads * dh, bias=bias, dtype=dtype)
        self.k_proj = nn.Linear(d, n_kv * dh, bias=bias, dtype=dtype)
        self.v_proj = nn.Linear(d, n_kv * dh, bias=bias, dtype=dtype)
        self.o_proj = nn.Linear(n_heads * dh, d, bias=bias or o_bias, dtype=dtype)

    @property
    def num_heads(self) -> int:
        kv_index: Tensor = self.kv_index  # type: ignore[assignment]
        return int(kv_index.numel())

    def forward(
        self,
        hidden_states: Tensor,
        position_embeddings: tuple[Tensor, Tensor] | None = None,
        attention_mask: Tensor | None = None,
        cache: Any = None,
        past_key_values: Any = None,
        **kwargs: Any,
    ) -> tuple[Tensor, Any]:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        cache = cache if cache is not None else past_key_values
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)  # [B, H', T, d_h]
        k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)  # [B, G', T, d_h]
        v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if position_embeddings is None:
            raise ValueError("PrunedAttention needs position_embeddings (cos, sin)")
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx, kwargs=kwargs)
        k = k.index_select(1, self.kv_index)  # [B, H', S, d_h]: each query head's own KV head
        v = v.index_select(1, self.kv_index)
        kwargs.pop("position_ids", None)
        kwargs.pop("use_cache", None)
        attend = _attention_interface(self.config._attn_implementation)
        out, weights = attend(
            self,
            q,
            k,
            v,
            attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
            **kwargs,
        )
        out = out.reshape(*input_shape, -1).contiguous()
        return self.o_proj(out), weights


def head_kv_index(attn: Any) -> Tensor:
    """``[H]`` KV head of each query head of a ``LlamaAttention`` or :class:`PrunedAttention`."""
    if isinstance(attn, PrunedAttention):
        kv_index: Tensor = attn.kv_index  # type: ignore[assignment]
        return kv_index.clone()
    config = attn.config
    groups = config.num_attention_heads // config.num_key_value_heads
    return torch.arange(config.num_attention_heads) // groups


def _linear(weight: Tensor, bias: Tensor | None) -> nn.Linear:
    out = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, dtype=weight.dtype)
    with torch.no_grad():
        out.weight.copy_(weight)
        if bias is not None:
            out.bias.copy_(bias)
    return out


def _recovered(
    w: Tensor, b: Tensor | None, scale: Tensor | None, shift: Tensor | None
) -> tuple[Tensor, Tensor | None]:
    """Rows of an output projection after the regression recovery y_j = a_j x_j + b_j."""
    if scale is None:
        return w, b
    a = scale.to(w.dtype)
    w = w * a[:, None]
    bias = (b * a if b is not None else torch.zeros_like(a)) + (shift.to(w.dtype) if shift is not None else 0)
    return w, bias


@torch.no_grad()
def prune_attention_heads(
    layer: Any, keep: Tensor, *, scale: Tensor | None = None, shift: Tensor | None = None
) -> PrunedAttention:
    """Replace ``layer.self_attn`` by a :class:`PrunedAttention` holding only the ``keep`` query heads.

    Args:
        layer: a Llama decoder layer.
        keep: ``[H]`` bool mask of query heads to keep (at least one).
        scale, shift: optional ``[d]`` regression a, b applied to ``o_proj``.
    """
    attn = layer.self_attn
    kv = head_kv_index(attn)
    keep = torch.as_tensor(keep, dtype=torch.bool)
    if keep.shape != kv.shape:
        raise ValueError(f"keep must be a bool mask of shape [{kv.numel()}], got {tuple(keep.shape)}")
    if not keep.any():
        raise ValueError("keep: cannot remove every attention head of a layer")
    dh = attn.head_dim
    heads = torch.nonzero(keep).flatten()
    kv_kept = torch.unique(kv[heads])  # sorted KV heads still used
    new_index = torch.searchsorted(kv_kept, kv[heads])
    rows_q = (heads[:, None] * dh + torch.arange(dh)).flatten()
    rows_kv = (kv_kept[:, None] * dh + torch.arange(dh)).flatten()
    w_o, b_o = _recovered(attn.o_proj.weight[:, rows_q], attn.o_proj.bias, scale, shift)
    new = PrunedAttention(attn.config, attn.layer_idx, new_index, o_bias=b_o is not None, dtype=w_o.dtype)
    pick = lambda lin, rows: (lin.weight[rows], None if lin.bias is None else lin.bias[rows])  # noqa: E731
    new.q_proj = _linear(*pick(attn.q_proj, rows_q))
    new.k_proj = _linear(*pick(attn.k_proj, rows_kv))
    new.v_proj = _linear(*pick(attn.v_proj, rows_kv))
    new.o_proj = _linear(w_o, b_o)
    new.to(attn.q_proj.weight.device)
    new.train(attn.training)
    layer.self_attn = new
    return new


@torch.no_grad()
def prune_mlp_channels(
    layer: Any, keep: Tensor, *, scale: Tensor | None = None, shift: Tensor | None = None
) -> None:
    """Keep only the ``keep`` FFN channels: rows of gate/up, columns of down (+ optional regression)."""
    mlp = layer.mlp
    d_ff = mlp.gate_proj.weight.shape[0]
    keep = torch.as_tensor(keep, dtype=torch.bool)
    if keep.shape != (d_ff,):
        raise ValueError(f"keep must be a bool mask of shape [{d_ff}], got {tuple(keep.shape)}")
    if not keep.any():
        raise ValueError("keep: cannot remove every FFN channel of a layer")
    idx = torch.nonzero(keep).flatten()
    for name in ("gate_proj", "up_proj"):
        lin = getattr(mlp, name)
        setattr(mlp, name, _linear(lin.weight[idx], None if lin.bias is None else lin.bias[idx]))
    w_d, b_d = _recovered(mlp.down_proj.weight[:, idx], mlp.down_proj.bias, scale, shift)
    mlp.down_proj = _linear(w_d, b_d)
    if hasattr(mlp, "intermediate_size"):
        mlp.intermediate_size = int(idx.numel())


def decoder_param_count(model: Any) -> int:
    """Parameters inside the decoder layers (embeddings, final norm and LM head excluded)."""
    return count_parameters(model.model.layers, trainable_only=False)  # type: ignore[union-attr]


def layer_structure(model: Any) -> list[dict[str, Any]]:
    """Each decoder layer's shape after pruning: ``kv_index`` (``None``: attention untouched),
    ``o_bias``, ``d_ff`` and ``down_bias``; :func:`apply_structure` rebuilds layers from it."""
    out = []
    for layer in model.model.layers:  # type: ignore[union-attr]
        attn = layer.self_attn
        out.append(
            {
                "kv_index": head_kv_index(attn).tolist() if isinstance(attn, PrunedAttention) else None,
                "o_bias": attn.o_proj.bias is not None,
                "d_ff": int(layer.mlp.gate_proj.weight.shape[0]),
                "down_bias": layer.mlp.down_proj.bias is not None,
            }
        )
    return out


def save_pruned(model: Any, path: str | Path) -> Path:
    """Write ``model`` (dense or pruned Llama) as one safetensors file, atomically; returns the path."""
    from safetensors.torch import save_model

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    config = model.config.to_dict()  # type: ignore[union-attr,operator]
    config.pop("quantization_config", None)
    meta = {
        "format": "icml25-pruned-llama",
        "config": json.dumps(config),
        "layers": json.dumps(layer_structure(model)),
    }
    tmp = path.with_name(f".{path.name}.tmp")
    save_model(model, str(tmp), metadata=meta)
    tmp.replace(path)
    return path


#: The weights file of a folder written by :func:`save_pruned_model`.
PRUNED_WEIGHTS_FILE = "model.safetensors"


def save_pruned_model(model: Any, tokenizer: Any, folder: str | Path) -> Path:
    """Write a pruned (or dense) Llama and its tokenizer to ``folder``, ready for reuse.

    The folder holds :data:`PRUNED_WEIGHTS_FILE` (see :func:`save_pruned`) and the tokenizer's
    files, so ``icml25.llm.load_causal_lm(folder)`` (and ``--set model=<folder>`` in any check that
    takes a model) returns the pruned model with its tokenizer. Returns the folder.
    """
    if tokenizer is None or not hasattr(tokenizer, "save_pretrained"):
        raise TypeError(f"tokenizer must be a Hugging Face tokenizer, got {type(tokenizer).__name__}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(folder))
    save_pruned(model, folder / PRUNED_WEIGHTS_FILE)  # last: its atomic rename marks the folder complete
    return folder


def apply_structure(model: Any, config: Any, specs: list[dict[str, Any]]) -> None:
    """Give ``model``'s decoder layers the sizes in ``specs`` (from :func:`layer_structure`); the new
    modules are uninitialised until weights are loaded. Used on load, never on a trained model."""
    layers = model.model.layers
    if len(specs) != len(layers):
        raise ValueError(f"specs: {len(specs)} layer structures for a model with {len(layers)} layers")
    for layer, spec in zip(layers, specs, strict=True):
        if spec["kv_index"] is not None:
            layer.self_attn = PrunedAttention(
                config, layer.self_attn.layer_idx, spec["kv_index"], o_bias=spec["o_bias"]
            )
        mlp = layer.mlp
        d, d_ff = config.hidden_size, spec["d_ff"]
        mlp.gate_proj = nn.Linear(d, d_ff, bias=False)
        mlp.up_proj = nn.Linear(d, d_ff, bias=False)
        mlp.down_proj = nn.Linear(d_ff, d, bias=spec["down_bias"])
        if hasattr(mlp, "intermediate_size"):
            mlp.intermediate_size = d_ff


def load_pruned(path: str | Path, *, dtype: torch.dtype = torch.float32) -> nn.Module:
    """Rebuild a model written by :func:`save_pruned` (structure from the file's metadata), as a
    :class:`~icml25.language.slimllm.hf.PrunedLlamaForCausalLM` (so ``save_pretrained`` works on it)."""
    from safetensors import safe_open
    from safetensors.torch import load_model
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    if meta.get("format") != "icml25-pruned-llama":
        raise ValueError(f"path: {path} was not written by save_pruned")
    fields = json.loads(meta["config"])
    fields.pop("pruned_layers", None)  # a model converted by to_pruned_llama records it twice
    fields["model_type"] = "llama"
    config = LlamaConfig.from_dict(fields)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    apply_structure(model, config, json.loads(meta["layers"]))
    model = model.to_empty(device="cpu")
    model.to(dtype)  # type: ignore[arg-type]
    model.model.rotary_emb = type(model.model.rotary_emb)(config=config)  # recompute inv_freq buffers
    model.tie_weights()  # tied embeddings are stored once; tie before loading so both names share it
    missing, unexpected = load_model(model, str(path), strict=False)
    tied = {"model.embed_tokens.weight", "lm_head.weight"} if config.tie_word_embeddings else set()
    if unexpected or set(missing) - tied:
        raise ValueError(f"path: {path} does not match its recorded structure ({missing}, {unexpected})")
    model.eval()
    from .hf import to_pruned_llama  # transformers is loaded by now

    return to_pruned_llama(model)
