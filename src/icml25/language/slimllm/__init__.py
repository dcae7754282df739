"""SlimLLM: Accurate Structured Pruning for Large Language Models (ICML 2025).

https://arxiv.org/abs/2505.22689 · official code https://github.com/guojialong1/Slimllm

SlimLLM removes whole attention heads and whole FFN channels of a Llama-style decoder, judging
each head by how much the layer's attention output changes without it (Pearson similarity, with a
greedy swap search) and each FFN channel by its input norms and its projection onto the principal
output directions; a per-output-dimension linear regression rescales the pruned output projections,
and layers that change their input least are pruned hardest. Here it prunes the pretrained
SmolLM2-135M (grouped-query attention respected) or any Hugging Face ``LlamaForCausalLM``.

Implements: the four parts of the method (the Pearson-similarity head score with the greedy
search of Algorithm 1, the feature-space FFN channel score, the linear-regression recovery of the
output projections, and the layer-wise pruning ratio from each layer's input/output cosine
similarity), the magnitude, Wanda-structured and Taylor (LLM-Pruner-like) baselines and random
pruning (any of which can take the layer-wise ratio and the regression), and a per-window held-out
loss for paired comparisons of pruned models; LoRA recovery is left out. See ``pruner.py`` for every
choice made where the paper is open.
"""

from .calibration import calibration_windows, encode_text
from .evaluation import draw_windows, window_nll
from .pruner import METHODS, DenseStats, PruneConfig, PruneReport, dense_statistics, prune_model
from .scores import (
    ffn_channel_scores,
    fit_output_regression,
    greedy_head_search,
    head_moments,
    head_scores,
    layer_ratios,
    magnitude_scores,
    pearson_similarity,
    taylor_scores,
    wanda_scores,
)
from .surgery import (
    PrunedAttention,
    decoder_param_count,
    head_kv_index,
    load_pruned,
    prune_attention_heads,
    prune_mlp_channels,
    save_pruned,
    save_pruned_model,
)

__all__ = [
    "METHODS",
    "calibration_windows",
    "encode_text",
    "DenseStats",
    "PruneConfig",
    "PruneReport",
    "PrunedAttention",
    "decoder_param_count",
    "dense_statistics",
    "draw_windows",
    "ffn_channel_scores",
    "fit_output_regression",
    "greedy_head_search",
    "head_kv_index",
    "head_moments",
    "head_scores",
    "layer_ratios",
    "load_pruned",
    "magnitude_scores",
    "pearson_similarity",
    "prune_attention_heads",
    "prune_mlp_channels",
    "prune_model",
    "save_pruned",
    "save_pruned_model",
    "taylor_scores",
    "wanda_scores",
    "window_nll",
]
