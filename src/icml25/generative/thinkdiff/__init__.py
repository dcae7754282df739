"""ThinkDiff: *I Think, Therefore I Diffuse: Enabling Multimodal In-Context Reasoning in Diffusion Models*
(Zhenxing Mi et al.; ICML 2025; arXiv:2502.10458; code https://github.com/MiZhenxing/ThinkDiff, not a
dependency).

A vision-language model (VLM) can reason over interleaved images and text; a text-conditioned
diffusion decoder (FLUX, SD3) reads the outputs of a T5 *encoder*. ThinkDiff aligns the VLM's
generated-token features to the *decoder* of the same T5 with a plain captioning loss (only an
aligner is trained), then feeds the aligned features to the diffusion decoder as its prompt, so the
VLM's in-context reasoning reaches image generation without reasoning-to-image training data.

Implements: the aligner and the random-split training signal (``aligner.py``, Sec. 3.2, Eq. 1),
small frozen stand-ins for the VLM, T5, the diffusion decoder and the judge (``models.py``), a
shape world with CoBSAT-like tasks (``world.py``), training of the world and of every arm's aligner
(``training.py``), adapters for real transformers / diffusers models (``hf.py``) and the claim check
(``check.py``).

    from icml25.generative.thinkdiff import ToyWorld, WorldTrainConfig, train_world, ThinkDiffLVLM
    world = ToyWorld(12)
    modules = train_world(world, WorldTrainConfig(image_size=12, patch=6))
    model = ThinkDiffLVLM(modules.vlm, modules.t5)          # aligner with the T5 encoder's norm gain
    loss = model.training_loss(random_split_batch(features, token_ids))
    embeds, mask, text = model.condition(icl_inputs(world, prompt, modules.vlm.config.patches))
    images = modules.decoder.sample(embeds, mask, steps=20, cfg=2.0)
"""

from __future__ import annotations

from .aligner import (
    Aligner,
    EncoderDecoderLM,
    SplitBatch,
    ThinkDiffLVLM,
    VisionLanguageModel,
    pad_features,
    random_split_batch,
)
from .hf import DiffusersPromptEmbedDecoder, HFT5Decoder, HFVisionLM
from .models import (
    AttributeJudge,
    CrossAttention,
    Generation,
    TinyFlowDecoder,
    TinyFlowDecoderConfig,
    TinyT5,
    TinyT5Config,
    TinyVLM,
    TinyVLMConfig,
    VLMInputs,
)
from .training import (
    ARMS,
    TRAINED_ARMS,
    AlignmentData,
    WorldModules,
    WorldTrainConfig,
    alignment_data,
    answer_ids,
    arm_prompt_embeds,
    caption_inputs,
    empty_world_modules,
    icl_inputs,
    judge_accuracy,
    make_aligner,
    round_trip_ok,
    texts_to_ids,
    train_aligner,
    train_flow_decoder,
    train_judge,
    train_tiny_t5,
    train_tiny_vlm,
    train_world,
)
from .world import CAPTION_ORDERS, TASKS, Prompt, ToyWorld, Vocab, cobsat_like_tasks, sample_prompts

__all__ = [
    "ARMS",
    "CAPTION_ORDERS",
    "TASKS",
    "TRAINED_ARMS",
    "Aligner",
    "AlignmentData",
    "AttributeJudge",
    "CrossAttention",
    "DiffusersPromptEmbedDecoder",
    "EncoderDecoderLM",
    "Generation",
    "HFT5Decoder",
    "HFVisionLM",
    "Prompt",
    "SplitBatch",
    "ThinkDiffLVLM",
    "TinyFlowDecoder",
    "TinyFlowDecoderConfig",
    "TinyT5",
    "TinyT5Config",
    "TinyVLM",
    "TinyVLMConfig",
    "ToyWorld",
    "VLMInputs",
    "VisionLanguageModel",
    "Vocab",
    "WorldModules",
    "WorldTrainConfig",
    "alignment_data",
    "answer_ids",
    "arm_prompt_embeds",
    "caption_inputs",
    "cobsat_like_tasks",
    "empty_world_modules",
    "icl_inputs",
    "judge_accuracy",
    "make_aligner",
    "pad_features",
    "random_split_batch",
    "round_trip_ok",
    "sample_prompts",
    "texts_to_ids",
    "train_aligner",
    "train_flow_decoder",
    "train_judge",
    "train_tiny_t5",
    "train_tiny_vlm",
    "train_world",
]
