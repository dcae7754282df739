"""Neural-network building blocks shared by the papers: one copy of each.

* :mod:`~icml25.nn.attention` — scaled dot-product attention with masks, biases and a KV cache;
  :class:`MultiheadAttention`.
* :mod:`~icml25.nn.blocks` — RMSNorm, MLP / gated MLP, adaLN ``modulate``, the pre-norm
  :class:`TransformerBlock` (optionally adaLN-Zero conditioned).
* :mod:`~icml25.nn.embeddings` — sinusoidal and 2-D sin-cos positions, timestep embedder, RoPE,
  ALiBi, patchify / unpatchify.
* :mod:`~icml25.nn.flow_matching` — conditional flow matching on the linear path (t = 0 noise,
  t = 1 data): interpolant, target velocity, loss for any velocity network, Euler sampler, times.
* :mod:`~icml25.nn.diffusion` — DDPM/DDIM pieces: linear/cosine schedules (equal to diffusers'
  betas), Gaussian and Laplace noise, VP/additive forward process, epsilon-prediction loss, DDIM
  (one step equals diffusers' DDIMScheduler) and flow-matching Euler samplers with a differentiable
  option, EMA of weights, a small conditional UNet.
* :mod:`~icml25.nn.optim` — matrix-only weight decay groups, the warm-up/cosine schedule.
* :mod:`~icml25.nn.train` — :func:`fit`, the one training loop (runs under ``accelerate``).
* :mod:`~icml25.nn.checkpoint` — atomic safetensors checkpoints with config and metadata.
* :mod:`~icml25.nn.params` — parameter counts and size matching of baselines.
* :mod:`~icml25.nn.distributed` — process rank and the ``accelerate`` handle.
"""

from icml25.nn.attention import KVCache, MultiheadAttention, scaled_dot_product_attention
from icml25.nn.blocks import MLP, GatedMLP, RMSNorm, TransformerBlock, modulate
from icml25.nn.checkpoint import Checkpoint, PretrainedMixin, load_checkpoint, save_checkpoint
from icml25.nn.diffusion import (
    EMA,
    NoiseSchedule,
    SmallUNet,
    alphas_cumprod,
    beta_schedule,
    ddim_sample,
    ddim_step,
    ddpm_loss,
    flow_euler_sample,
    predict_x0,
    q_sample,
    sample_noise,
)
from icml25.nn.distributed import get_accelerator, is_main_process, unwrap
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
from icml25.nn.flow_matching import (
    euler_sample,
    flow_matching_loss,
    linear_path,
    sample_times,
    target_velocity,
)
from icml25.nn.optim import make_optimizer, param_groups, warmup_cosine
from icml25.nn.params import count_parameters, match_width
from icml25.nn.train import EvalRecord, FitConfig, FitHistory, fit

__all__ = [
    "EMA",
    "NoiseSchedule",
    "SmallUNet",
    "alphas_cumprod",
    "beta_schedule",
    "ddim_sample",
    "ddim_step",
    "ddpm_loss",
    "flow_euler_sample",
    "predict_x0",
    "q_sample",
    "sample_noise",
    "KVCache",
    "MultiheadAttention",
    "scaled_dot_product_attention",
    "MLP",
    "GatedMLP",
    "RMSNorm",
    "TransformerBlock",
    "modulate",
    "Checkpoint",
    "PretrainedMixin",
    "load_checkpoint",
    "save_checkpoint",
    "get_accelerator",
    "is_main_process",
    "unwrap",
    "RotaryEmbedding",
    "TimestepEmbedder",
    "alibi_bias",
    "alibi_slopes",
    "patchify",
    "sincos_2d",
    "sinusoidal_embedding",
    "unpatchify",
    "make_optimizer",
    "param_groups",
    "warmup_cosine",
    "count_parameters",
    "match_width",
    "EvalRecord",
    "FitConfig",
    "FitHistory",
    "fit",
    "euler_sample",
    "flow_matching_loss",
    "linear_path",
    "sample_times",
    "target_velocity",
]
