"""ECON's reward shaping and text embeddings.

Paper: Xie et al., ICML 2025 (arXiv 2506.08292), Sec. 3.3 and the public code's environment and
reward generator. Each executor i gets ``r_i = a_1 r_AL + a_2 r_TS + a_3 r_CC`` with components in
[0, 1]:

* TS (task-specific): 1 if the coordinator's commitment is correct;
* AL (action likelihood, agreement with the group outcome): 0.6 [executor's answer = commitment's]
  + 0.25 cos(response, commitment) + 0.15 format score (1 with ``\\boxed{}``, 0.5 with only a number);
* CC (collaborative contribution): 0.3 [executor correct] + 0.3 (distinct answers / N)
  + 0.2 cos(response, commitment) + 0.2 [response shows a computation].

The weights are fixed (0.3, 0.5, 0.2) in the code's environment step; :class:`DynamicRewardWeights`
is the learned alternative (softmax of logits fitted by Adam to the critics' expected rewards,
initial (0.4, 0.4, 0.2)). Cosines use a hashing embedding (the paper: BAAI/bge-large-en-v1.5),
our offline substitute.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml25.core.validate import check_finite_array, check_positive

from .problems import answers_match

__all__ = [
    "embed_texts",
    "RewardModel",
    "RewardComponents",
    "DynamicRewardWeights",
    "format_score",
    "shows_reasoning",
]


def embed_texts(texts: Sequence[str], dim: int = 256) -> np.ndarray:
    """L2-normalised hashing embeddings of word uni- and bigrams, ``(len(texts), dim)`` float32.

    An all-zero row stands for a text without words.
    """
    from sklearn.feature_extraction.text import HashingVectorizer

    check_positive("dim", dim, integer=True)
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a sequence of strings")
    if len(texts) == 0:
        raise ValueError("texts must be non-empty")
    vec = HashingVectorizer(n_features=dim, alternate_sign=False, norm="l2", ngram_range=(1, 2))
    return np.asarray(vec.transform(list(texts)).toarray(), dtype=np.float32)


def format_score(text: str) -> float:
    """1 with a ``\\boxed{}`` answer, 0.5 with only a number, 0 otherwise."""
    if "\\boxed{" in text:
        return 1.0
    return 0.5 if re.search(r"\d", text) else 0.0


def shows_reasoning(text: str) -> float:
    """1 if the response writes out a computation (an operator or '=' between numbers)."""
    return 1.0 if re.search(r"\d\s*[-+*/x=]\s*\d", text) else 0.0


@dataclass(frozen=True)
class RewardComponents:
    """Per-agent components ``al``, ``cc`` (shape ``(N,)``) and the shared ``ts``."""

    al: np.ndarray
    ts: float
    cc: np.ndarray

    def stacked(self) -> np.ndarray:
        """``(N, 3)`` in the order (AL, TS, CC)."""
        return np.stack([self.al, np.full_like(self.al, self.ts), self.cc], axis=-1)


class RewardModel:
    """``r_i = w_AL r_AL + w_TS r_TS + w_CC r_CC`` (weights default to the code's 0.3/0.5/0.2)."""

    def __init__(self, weights: tuple[float, float, float] = (0.3, 0.5, 0.2)) -> None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (3,):
            raise ValueError(f"weights must hold 3 numbers (AL, TS, CC), got {weights!r}")
        check_finite_array("weights", w)
        if (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"weights must be non-negative with a positive sum, got {weights!r}")
        self.weights = w / w.sum()

    def components(
        self,
        answers: Sequence[float | None],
        embeddings: np.ndarray,
        formats: np.ndarray,
        reasoning: np.ndarray,
        commitment: float | None,
        commitment_embedding: np.ndarray,
        truth: float,
    ) -> RewardComponents:
        n = len(answers)
        if n == 0:
            raise ValueError("answers must be non-empty")
        emb = np.asarray(embeddings, dtype=np.float64)
        if emb.ndim != 2 or emb.shape[0] != n:
            raise ValueError(f"embeddings must have shape ({n}, d), got {emb.shape}")
        if np.asarray(commitment_embedding).shape != (emb.shape[1],):
            raise ValueError(f"commitment_embedding must have shape ({emb.shape[1]},)")
        check_finite_array("embeddings", emb)
        cos = emb @ np.asarray(commitment_embedding, dtype=np.float64)
        agree = np.array([answers_match(a, commitment) for a in answers], dtype=np.float64)
        correct = np.array([answers_match(a, truth) for a in answers], dtype=np.float64)
        distinct = len({a for a in answers if a is not None}) / n
        al = 0.6 * agree + 0.25 * cos + 0.15 * np.asarray(formats, dtype=np.float64)
        cc = 0.3 * correct + 0.3 * distinct + 0.2 * cos + 0.2 * np.asarray(reasoning, dtype=np.float64)
        return RewardComponents(al=al, ts=float(answers_match(commitment, truth)), cc=cc)

    def __call__(self, parts: RewardComponents) -> np.ndarray:
        """Per-agent rewards ``(N,)`` in [0, 1]."""
        return parts.stacked() @ self.weights


class DynamicRewardWeights(torch.nn.Module):
    """Learned reward weights ``alpha = softmax(logits)``, fitted to expected rewards.

    :meth:`update` takes one Adam step on ``sum (alpha . components - expected)^2``.
    """

    def __init__(self, initial: tuple[float, float, float] = (0.4, 0.4, 0.2), lr: float = 1e-3) -> None:
        super().__init__()
        w = torch.tensor(initial, dtype=torch.float32)
        if w.shape != (3,) or not torch.isfinite(w).all() or (w <= 0).any():
            raise ValueError(f"initial must be 3 positive numbers, got {initial!r}")
        check_positive("lr", lr)
        self.logits = torch.nn.Parameter(torch.log(w / w.sum()))
        self.opt = torch.optim.Adam(self.parameters(), lr=lr)

    @property
    def weights(self) -> np.ndarray:
        return torch.softmax(self.logits, 0).detach().numpy().astype(np.float64)

    def update(self, components: torch.Tensor, expected: torch.Tensor) -> float:
        """``components (..., 3)``, ``expected (...)`` -> the loss before the step."""
        if components.shape[-1] != 3 or components.shape[:-1] != expected.shape:
            raise ValueError(
                f"components must be (..., 3) matching expected {tuple(expected.shape)}, "
                f"got {tuple(components.shape)}"
            )
        loss = ((components @ torch.softmax(self.logits, 0) - expected.detach()) ** 2).sum()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return float(loss.detach())
