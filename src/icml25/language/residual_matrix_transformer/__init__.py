"""Residual Matrix Transformers: Scaling the Size of the Residual Stream (Mak & Flanigan, ICML 2025).

https://arxiv.org/abs/2506.22696 · official code https://github.com/bmac3/residual-matrix-transformer

The RMT replaces each token's residual-stream vector with a ``D_k × D_v`` outer-product memory:
layers store data vectors under learned key vectors (``X += Σ_h w_h ⊗ x_h``) and retrieve them by
contraction (``x = r ·₁ X``), so the attention projections become key vectors and the residual
stream can grow (through D_k) at almost no parameter or FLOP cost. This package holds the RMT
language model, its transformer twin built from :mod:`icml25.nn`, exact parameter and FLOP counts
for both (App. A, Table 7), and the byte-level training recipe of App. C.1.

Implements: Eq. (12)-(27) (:func:`read`, :func:`write`, :class:`ResidualMatrixTransformer`), the
transformer of Eq. (1)-(11) (:class:`GPT`), Table 7 / App. A counts (:func:`param_count`,
:func:`paper_param_count`, :func:`flop_count`), z-loss, AdamW grouping and schedule (App. C.1).
Left out: muTransfer's per-parameter multipliers (the released config uses none), gradient
checkpointing, mixed precision and the lm-eval downstream tasks.
"""

from .flops import (
    FlopCount,
    flop_count,
    flops_per_token,
    measure_flops,
    non_embedding_param_count,
    paper_param_count,
    param_count,
)
from .model import GPT, GPTConfig, ResidualMatrixTransformer, RMTConfig, lecun_normal_, read, write
from .training import (
    ByteData,
    LMHistory,
    LMTrainConfig,
    NgramModel,
    bits_per_byte,
    byte_data,
    byte_tensor,
    eval_windows,
    flops_to_reach,
    lm_loss,
    lm_optimizer,
    lm_param_groups,
    random_windows,
    spread_windows,
    train_lm,
    value_at_flops,
    window_bits,
)

__all__ = [
    "RMTConfig",
    "GPTConfig",
    "ResidualMatrixTransformer",
    "GPT",
    "read",
    "write",
    "lecun_normal_",
    "FlopCount",
    "flop_count",
    "flops_per_token",
    "measure_flops",
    "param_count",
    "non_embedding_param_count",
    "paper_param_count",
    "LMTrainConfig",
    "LMHistory",
    "ByteData",
    "byte_tensor",
    "byte_data",
    "lm_loss",
    "lm_param_groups",
    "lm_optimizer",
    "eval_windows",
    "bits_per_byte",
    "window_bits",
    "random_windows",
    "spread_windows",
    "NgramModel",
    "train_lm",
    "value_at_flops",
    "flops_to_reach",
]
