"""Influence scores and top-fraction selection, for *NICE Data Selection for Instruction Tuning in
LLMs with Non-differentiable Evaluation Metric* (Wang et al., ICML 2025,
https://openreview.net/forum?id=2wt8m5HUBs), Section 3 (``matching_nice.py`` in the official code).

With ℓ2-normalised training directions Γ̂_c(z) and validation vectors ĝ_c(x') at checkpoints c,

    s(z) = max_j mean_{x' ∈ V_j} Σ_c η̄_c ⟨Γ̂_c(z), ĝ_c(x')⟩,

where η̄_c is the mean learning rate of warm-up epoch c, renormalised to sum to one, and V_j are the
validation prompts of sub-task j (one sub-task: a plain mean). The top fraction of the pool by s(z)
is selected. NICE and LESS share this step and differ only in ĝ: a policy gradient of the metric
(NICE) or the next-token-loss gradient of a reference answer (LESS).

Sign: Γ and ĝ are both *loss* gradients (NICE's ĝ is the gradient of the reward-weighted NLL), so a
large positive s(z) means a step on z lowers the validation loss, i.e. raises the expected reward.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from icml25.core.validate import check_finite_tensor, check_in_range

__all__ = ["checkpoint_weights", "influence_scores", "normalize_rows", "select_top_fraction"]


def normalize_rows(x: Tensor, eps: float = 1e-12) -> Tensor:
    """Rows of ``x`` divided by their ℓ2 norms (a zero row stays zero)."""
    check_finite_tensor("x", x, ndim=2, floating=True)
    return x / x.norm(dim=1, keepdim=True).clamp_min(eps)


def checkpoint_weights(epoch_lrs: Sequence[float]) -> list[float]:
    """η̄_c: the mean learning rate of each warm-up epoch, renormalised to sum to one."""
    lrs = [float(v) for v in epoch_lrs]
    if not lrs:
        raise ValueError("epoch_lrs must not be empty")
    if any(not math.isfinite(v) or v < 0 for v in lrs) or sum(lrs) <= 0:
        raise ValueError(f"epoch_lrs must be finite, non-negative and not all zero, got {lrs}")
    total = sum(lrs)
    return [v / total for v in lrs]


def influence_scores(
    train_feats: Sequence[Tensor],
    val_feats: Sequence[Tensor],
    ckpt_weights: Sequence[float] | None = None,
    *,
    val_subtask: Tensor | None = None,
) -> Tensor:
    """s(z) for every pool example (rows are ℓ2-normalised here).

    Args:
        train_feats: one ``[N, d]`` tensor per checkpoint (Adam-preconditioned, projected).
        val_feats: one ``[V, d]`` tensor per checkpoint (same d as the matching train features).
        ckpt_weights: η̄_c per checkpoint (default: equal); renormalised to sum to one.
        val_subtask: optional ``[V]`` long tensor of sub-task ids; the score is the maximum over
            sub-tasks of the mean over each sub-task's prompts.

    Returns:
        ``[N]`` float32 scores.
    """
    if not isinstance(train_feats, Sequence) or not isinstance(val_feats, Sequence):
        raise TypeError("train_feats and val_feats must be sequences of tensors (one per checkpoint)")
    if not train_feats or len(train_feats) != len(val_feats):
        raise ValueError(
            f"train_feats and val_feats must hold one tensor per checkpoint, got {len(train_feats)} "
            f"and {len(val_feats)}"
        )
    weights = checkpoint_weights(ckpt_weights if ckpt_weights is not None else [1.0] * len(train_feats))
    if len(weights) != len(train_feats):
        raise ValueError(f"ckpt_weights must have {len(train_feats)} entries, got {len(weights)}")
    n = v = None
    total: Tensor | None = None
    for c, (tf, vf, w) in enumerate(zip(train_feats, val_feats, weights, strict=True)):
        check_finite_tensor(f"train_feats[{c}]", tf, ndim=2, floating=True)
        check_finite_tensor(f"val_feats[{c}]", vf, ndim=2, floating=True)
        if tf.shape[1] != vf.shape[1]:
            raise ValueError(
                f"train_feats[{c}] and val_feats[{c}] must share their feature dimension, got "
                f"{tf.shape[1]} and {vf.shape[1]}"
            )
        if n is None:
            n, v = tf.shape[0], vf.shape[0]
        elif tf.shape[0] != n or vf.shape[0] != v:
            raise ValueError("every checkpoint must have the same number of train and validation rows")
        sim = w * (normalize_rows(tf.float()) @ normalize_rows(vf.float()).T)  # [N, V]
        total = sim if total is None else total + sim
    assert total is not None
    if val_subtask is None:
        return total.mean(dim=1)
    if not isinstance(val_subtask, Tensor) or val_subtask.dtype != torch.long or val_subtask.shape != (v,):
        raise ValueError(f"val_subtask must be a [{v}] long tensor of sub-task ids")
    per_task = [total[:, val_subtask == j].mean(dim=1) for j in torch.unique(val_subtask).tolist()]
    return torch.stack(per_task, dim=1).max(dim=1).values


def select_top_fraction(scores: Tensor, frac: float = 0.05) -> Tensor:
    """Indices of the ``max(1, round(frac · N))`` highest scores, best first (ties: lower index first)."""
    check_finite_tensor("scores", scores, ndim=1, floating=True)
    if isinstance(frac, bool) or not isinstance(frac, (int, float)):
        raise TypeError(f"frac must be a float in (0, 1], got {type(frac).__name__}")
    check_in_range("frac", float(frac), 0.0, 1.0, low_open=True)
    k = max(1, round(frac * scores.numel()))
    return torch.sort(scores, descending=True, stable=True).indices[:k]
