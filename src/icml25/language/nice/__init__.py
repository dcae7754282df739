"""NICE: data selection for instruction tuning with a non-differentiable evaluation metric, from
*NICE Data Selection for Instruction Tuning in LLMs with Non-differentiable Evaluation Metric*
(Wang et al., ICML 2025, https://openreview.net/forum?id=2wt8m5HUBs).

LESS-style gradient features of the pool (:mod:`.features`, :mod:`.lora`), NICE's policy-gradient
validation vectors (:mod:`.policy`), influence scores and top-fraction selection (:mod:`.selection`),
and a verifiable arithmetic pool to test it on (:mod:`.arithmetic`).
"""

from .arithmetic import (
    GROUPS,
    ArithmeticPool,
    addition_reward,
    answer_text,
    base_corpus,
    flawed_pair,
    heldout_pair,
    last_integer,
    make_pool,
    target_prompts,
)
from .features import (
    RandomProjector,
    adam_preconditioned_grads,
    example_gradients,
    sequence_nll,
    trainable_parameters,
)
from .lora import (
    LoraCheckpoint,
    LoraRun,
    LoraTrainConfig,
    checkpoint_features,
    encode_examples,
    load_checkpoint,
    train_lora,
)
from .policy import (
    PolicyGradient,
    RewardFn,
    generate,
    policy_gradient_vector,
    reward_weights,
    weighted_nll_gradient,
)
from .selection import checkpoint_weights, influence_scores, normalize_rows, select_top_fraction

__all__ = [
    "GROUPS",
    "ArithmeticPool",
    "LoraCheckpoint",
    "LoraRun",
    "LoraTrainConfig",
    "PolicyGradient",
    "RandomProjector",
    "RewardFn",
    "adam_preconditioned_grads",
    "addition_reward",
    "answer_text",
    "base_corpus",
    "flawed_pair",
    "checkpoint_features",
    "checkpoint_weights",
    "encode_examples",
    "example_gradients",
    "generate",
    "heldout_pair",
    "influence_scores",
    "last_integer",
    "load_checkpoint",
    "make_pool",
    "normalize_rows",
    "policy_gradient_vector",
    "reward_weights",
    "select_top_fraction",
    "sequence_nll",
    "target_prompts",
    "train_lora",
    "trainable_parameters",
    "weighted_nll_gradient",
]
