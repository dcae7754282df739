"""Adapters that put real Hugging Face models behind ThinkDiff's interfaces.

*I Think, Therefore I Diffuse: Enabling Multimodal In-Context Reasoning in Diffusion Models*
(ThinkDiff; Mi et al.; ICML 2025; arXiv:2502.10458).

The paper's production path is Qwen2-VL (generating, with hidden states) -> aligner -> flan-T5-XXL's
decoder for training and FLUX.1-dev's ``prompt_embeds`` at inference. These adapters expose exactly
what :class:`~icml25.generative.thinkdiff.aligner.ThinkDiffLVLM` uses, so the same training and
inference code runs on real weights when they exist locally:

    HFVisionLM                   any transformers VLM with ``generate``: greedy answers and the final-norm
                                 hidden states of the generated tokens (``output_hidden_states=True``)
    HFT5Decoder                  ``T5ForConditionalGeneration``: decoder loss on a given memory
                                 (``encoder_outputs=``) and the encoder's final-norm gain
    DiffusersPromptEmbedDecoder  a diffusers pipeline that takes ``prompt_embeds=`` (FluxPipeline,
                                 StableDiffusion3Pipeline)

transformers and diffusers are imported lazily, only by these classes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from icml25.core.validate import check_positive

from .models import Generation, _check_memory

__all__ = ["HFVisionLM", "HFT5Decoder", "DiffusersPromptEmbedDecoder"]


def _text_config(config: Any) -> Any:
    return getattr(config, "text_config", None) or config


class HFVisionLM:
    """A transformers vision-language model (e.g. ``Qwen2VLForConditionalGeneration``) as ThinkDiff's VLM.

    Args:
        model: the model; ``model.generate(**inputs, output_hidden_states=True,
            return_dict_in_generate=True)`` must return ``hidden_states`` whose last layer is the
            final-norm state (true for the Llama, Qwen2 and Mllama text stacks).
        eos_token_id: stops generation and marks the end of an answer (default: the model's config).
        decode: ``decode(ids) -> str`` for the generated texts (e.g. a tokenizer's ``decode``).
    """

    def __init__(
        self,
        model: Any,
        *,
        eos_token_id: int | None = None,
        decode: Callable[[Sequence[int]], str] | None = None,
    ) -> None:
        if not callable(getattr(model, "generate", None)):
            raise TypeError(f"model must be a transformers generation model, got {type(model).__name__}")
        self.model = model
        text = _text_config(model.config)
        self.d_model = int(text.hidden_size)
        eos = eos_token_id if eos_token_id is not None else getattr(text, "eos_token_id", None)
        self.eos_id = eos if isinstance(eos, int) else None
        self.decode = decode

    def _check(self, inputs: Mapping[str, Tensor]) -> None:
        if not isinstance(inputs, Mapping) or "input_ids" not in inputs:
            raise ValueError("inputs must be a mapping holding at least 'input_ids' (a processor's output)")
        ids = inputs["input_ids"]
        if not isinstance(ids, Tensor) or ids.ndim != 2 or ids.numel() == 0:
            raise ValueError("inputs['input_ids'] must be a non-empty (batch, length) tensor")

    @torch.no_grad()
    def generate(self, inputs: Mapping[str, Tensor], max_new_tokens: int = 128) -> Generation:
        """Greedy answers; ``features[i][j]`` is the final-norm state that emitted answer i's token j."""
        self._check(inputs)
        check_positive("max_new_tokens", max_new_tokens, integer=True)
        out = self.model.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            output_hidden_states=True,
            return_dict_in_generate=True,
            eos_token_id=self.eos_id,
        )
        n0 = inputs["input_ids"].shape[1]
        new = out.sequences[:, n0:]
        feats = torch.stack([step[-1][:, -1] for step in out.hidden_states], dim=1)  # (b, L, d)
        tokens, features = [], []
        for i in range(new.shape[0]):
            row = new[i].tolist()
            n = row.index(self.eos_id) + 1 if self.eos_id is not None and self.eos_id in row else len(row)
            n = min(n, feats.shape[1])
            tokens.append(row[:n])
            features.append(feats[i, :n].float())
        texts = [self.decode(t) if self.decode is not None else " ".join(map(str, t)) for t in tokens]
        return Generation(tokens, features, texts, self.eos_id)

    @torch.no_grad()
    def input_features(self, inputs: Mapping[str, Tensor]) -> Tensor:
        """Final-norm states ``(b, n, d)`` of the prompt tokens (the input-token ablation's features)."""
        self._check(inputs)
        return self.model(**inputs, output_hidden_states=True).hidden_states[-1].float()


class HFT5Decoder:
    """``T5ForConditionalGeneration`` as ThinkDiff's encoder-decoder LLM.

    Args:
        model: the T5 model. Its encoder may have been deleted (the official code does so to save
            memory) if ``encoder_norm_weight`` is given.
        encoder_norm_weight: the encoder's final-norm gain, when the encoder is gone.
    """

    def __init__(self, model: Any, *, encoder_norm_weight: Tensor | None = None) -> None:
        if not hasattr(model, "config") or not hasattr(model.config, "d_model"):
            raise TypeError(f"model must be a T5-style encoder-decoder, got {type(model).__name__}")
        self.model = model
        self.d_model = int(model.config.d_model)
        encoder = getattr(model, "encoder", None)
        if encoder_norm_weight is None:
            if encoder is None:
                raise ValueError("the model has no encoder: pass encoder_norm_weight")
            encoder_norm_weight = encoder.final_layer_norm.weight
        self._norm = encoder_norm_weight.detach().clone().float()

    @property
    def encoder_norm_weight(self) -> Tensor:
        return self._norm.clone()

    def loss(self, memory: Tensor, memory_mask: Tensor | None, targets: Tensor) -> Tensor:
        """Decoder cross-entropy of ``targets (b, t)`` (-100 ignored), ``memory`` as ``encoder_outputs``."""
        from transformers.modeling_outputs import BaseModelOutput

        _check_memory(memory, memory_mask, self.d_model)
        mask = None if memory_mask is None else memory_mask.long()
        out = self.model(
            encoder_outputs=BaseModelOutput(last_hidden_state=memory), attention_mask=mask, labels=targets
        )
        return out.loss

    @torch.no_grad()
    def encode(self, ids: Tensor, mask: Tensor | None = None) -> Tensor:
        """Encoder outputs ``(b, n, d)`` (the diffusion decoder's prompt space)."""
        if getattr(self.model, "encoder", None) is None:
            raise ValueError("the model's encoder was deleted; encode text with the diffusion pipeline's T5")
        return self.model.encoder(
            input_ids=ids, attention_mask=None if mask is None else mask.long()
        ).last_hidden_state


class DiffusersPromptEmbedDecoder:
    """A diffusers pipeline fed ThinkDiff's aligned features as ``prompt_embeds``.

    Args:
        pipe: e.g. ``FluxPipeline`` or ``StableDiffusion3Pipeline`` (anything accepting ``prompt_embeds=``).
        defaults: keyword arguments passed on every call (``num_inference_steps``, ``guidance_scale``,
            ``pooled_prompt_embeds``...).
    """

    def __init__(self, pipe: Any, **defaults: Any) -> None:
        if not callable(pipe):
            raise TypeError(f"pipe must be a callable diffusers pipeline, got {type(pipe).__name__}")
        self.pipe = pipe
        self.defaults = defaults

    def __call__(self, prompt_embeds: Tensor, mask: Tensor | None = None, **kwargs: Any) -> Any:
        """Generate from ``prompt_embeds (b, L, d)``; padded positions (``mask`` False) are zeroed."""
        d = prompt_embeds.shape[-1] if isinstance(prompt_embeds, Tensor) and prompt_embeds.ndim else 0
        _check_memory(prompt_embeds, mask, d, "prompt_embeds")
        if mask is not None:
            prompt_embeds = prompt_embeds * mask[..., None].to(prompt_embeds.dtype)
        return self.pipe(prompt_embeds=prompt_embeds, **{**self.defaults, **kwargs})
