"""The RMT as a transformers causal LM: ``labels=``, ``attention_mask=``, ``generate()`` with a KV
cache, ``save_pretrained`` / ``from_pretrained``.

Part of our implementation of *Residual Matrix Transformers: Scaling the Size of the Residual
Stream* (Mak & Flanigan, ICML 2025, https://arxiv.org/abs/2506.22696). :class:`RMTForCausalLM` is a
``PreTrainedModel`` holding one :class:`~.model.ResidualMatrixTransformer` (the same parameters, the
same forward, Eq. 12-27); :class:`RMTLMConfig` carries the fields of :class:`~.model.RMTConfig`.
Importing this module registers both with ``AutoConfig`` / ``AutoModelForCausalLM`` (model type
``"icml25_rmt"``)::

    from icml25.language.residual_matrix_transformer.hf import RMTForCausalLM, RMTLMConfig

    model = RMTForCausalLM(RMTLMConfig(vocab_size=256, n_ctx=64, n_layers=2, d_key=8, d_value=16,
                                       rank=4, d_ff=128))
    out = model(input_ids=ids, attention_mask=mask, labels=ids)    # out.loss, out.logits
    model.generate(ids, attention_mask=mask, max_new_tokens=8)    # cached, left padding works
    model.save_pretrained("rmt"); AutoModelForCausalLM.from_pretrained("rmt")

The cache is transformers' ``DynamicCache`` (per layer: keys and values of the R heads). With
left padding the learned positions count real tokens only, as GPT-2 in transformers does.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from huggingface_hub.dataclasses import strict
from torch import Tensor, nn
from transformers import AutoConfig, AutoModelForCausalLM, GenerationMixin, PreTrainedConfig, PreTrainedModel
from transformers.cache_utils import Cache, DynamicCache
from transformers.modeling_outputs import CausalLMOutputWithPast

from .model import ResidualMatrixTransformer, RMTConfig

__all__ = ["RMT_MODEL_TYPE", "RMTForCausalLM", "RMTLMConfig"]

RMT_MODEL_TYPE = "icml25_rmt"
_RMT_FIELDS = tuple(f.name for f in dataclasses.fields(RMTConfig))


@strict
@dataclasses.dataclass(repr=False)
class RMTLMConfig(PreTrainedConfig):
    """The fields of :class:`~.model.RMTConfig` (same defaults: the released GPT-2-small-scale RMT)
    as a transformers config."""

    model_type = RMT_MODEL_TYPE

    vocab_size: int = 50257
    n_ctx: int = 512
    n_layers: int = 12
    d_key: int = 32
    d_value: int = 64
    rank: int = 12
    d_ff: int = 3072
    norm: str = "layer"
    norm_eps: float = 1e-6
    pos: str = "learned"
    init_std: float = 1.0
    zero_init_query: bool = True
    zero_init_unembed: bool = True
    residual_scaling: bool = True
    inverse_layer_scaling: bool = True
    activation: str = "gelu_tanh"

    def to_rmt(self) -> RMTConfig:
        """The :class:`~.model.RMTConfig` with these fields (validated there)."""
        return RMTConfig(**{name: getattr(self, name) for name in _RMT_FIELDS})

    @classmethod
    def from_rmt(cls, cfg: RMTConfig, **kwargs: Any) -> RMTLMConfig:
        return cls(**dataclasses.asdict(cfg), **kwargs)

    @property
    def num_hidden_layers(self) -> int:  # what transformers' caches and generate read
        return self.n_layers


class _LayerCache:
    """One layer's view of a transformers ``Cache``, with the ``append``/``len`` of ``KVCache``."""

    def __init__(self, cache: Cache, layer: int) -> None:
        self.cache, self.layer = cache, layer

    def __len__(self) -> int:
        return int(self.cache.get_seq_length(self.layer))

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        return self.cache.update(k, v, self.layer)  # type: ignore[no-any-return]


class RMTForCausalLM(PreTrainedModel, GenerationMixin):
    """A :class:`~.model.ResidualMatrixTransformer` (``self.rmt``) behind the transformers causal-LM
    interface. ``forward`` returns ``CausalLMOutputWithPast`` with the shifted next-token loss when
    ``labels`` are given (``-100`` ignored)."""

    config_class = RMTLMConfig
    base_model_prefix = "rmt"
    main_input_name = "input_ids"
    _supports_cache_class = True

    def __init__(self, config: RMTLMConfig) -> None:
        super().__init__(config)
        self.rmt = ResidualMatrixTransformer(config.to_rmt())
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        """The RMT initialises itself (fan-in normal with App. C.1's tricks) in its constructor."""

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        cache: Cache | None = None,
        labels: Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        cache = cache if cache is not None else kwargs.pop("past_key_values", None)  # the older name
        if use_cache and cache is None:
            cache = DynamicCache()
        past = 0 if cache is None else int(cache.get_seq_length())
        n = input_ids.shape[-1]
        key_padding_mask = None
        if attention_mask is not None:
            if attention_mask.shape != (input_ids.shape[0], past + n):
                raise ValueError(
                    f"attention_mask must be (batch, {past + n}) for {past} cached and {n} new tokens, "
                    f"got {tuple(attention_mask.shape)}"
                )
            key_padding_mask = attention_mask.bool()
            if position_ids is None:  # real tokens only: left padding does not shift positions
                position_ids = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)[:, past:]
        if position_ids is None and past:
            position_ids = torch.arange(past, past + n, device=input_ids.device).expand_as(input_ids)
        caches = None
        if cache is not None:
            caches = [_LayerCache(cache, i) for i in range(self.config.n_layers)]
        logits = self.rmt(
            input_ids,
            key_padding_mask=key_padding_mask,
            positions=position_ids,
            caches=caches,  # type: ignore[arg-type]
        )
        loss = None
        if labels is not None:
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                labels[:, 1:].reshape(-1).to(logits.device),
                ignore_index=-100,
            )
        return CausalLMOutputWithPast(loss=loss, logits=logits, cache=cache)


AutoConfig.register(RMT_MODEL_TYPE, RMTLMConfig, exist_ok=True)
AutoModelForCausalLM.register(RMTLMConfig, RMTForCausalLM, exist_ok=True)
