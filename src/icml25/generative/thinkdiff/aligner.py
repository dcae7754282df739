"""ThinkDiff's aligner and its captioning-only training signal.

*I Think, Therefore I Diffuse: Enabling Multimodal In-Context Reasoning in Diffusion Models*
(ThinkDiff; Mi et al.; ICML 2025; arXiv:2502.10458; code github.com/MiZhenxing/ThinkDiff).

Sec. 3.2 (ThinkDiff-LVLM): a frozen VLM answers a captioning instruction; the final-norm hidden
states of its *generated* tokens ``Z = [z_1 .. z_L]`` are cut at a random ``s ~ U{1, .., min(L-1, 128)}``
(the official ``random_split_output_embed``), the aligner maps ``Z_{1:s}`` into the encoder-output
space of an encoder-decoder LLM, and the frozen LLM *decoder* is trained (only the aligner has
gradients) to produce the continuation tokens ``s+1 .. L`` with cross-entropy (Eq. 1). Because a
text-conditioned diffusion decoder (FLUX) reads the same encoder space, the aligned features can
replace its prompt embeddings at inference: the VLM reasons over interleaved images and text, and
its answer's features become the image prompt.

The aligner is ``Linear(d_vlm -> d_t5) - GELU - Linear(d_t5 -> d_t5) - RMSNorm`` (official type
``mlp2x_gelu_t5_norm``), with the RMSNorm gain initialised from the LLM encoder's final norm
(``layer_norm_reinit_weight_with_language_encoder``); the paper's Fig. 7 ablation finds training
unstable without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_positive
from icml25.nn.blocks import RMSNorm

__all__ = [
    "Aligner",
    "SplitBatch",
    "random_split_batch",
    "pad_features",
    "VisionLanguageModel",
    "EncoderDecoderLM",
    "ThinkDiffLVLM",
]


class Aligner(nn.Module):
    """``Linear - GELU - Linear - RMSNorm`` from VLM features (d_in) to the LLM encoder space (d_out).

    Args:
        d_in: VLM hidden width.
        d_out: LLM (T5) width.
        norm: ``"rms"`` (the paper's) or ``None`` (the Fig. 7 ablation without the norm).
        norm_init: ``(d_out,)`` gain copied into the RMSNorm (the T5 encoder's final-norm weight);
            None keeps the default ones.
    """

    def __init__(
        self, d_in: int, d_out: int, *, norm: str | None = "rms", norm_init: Tensor | None = None
    ) -> None:
        super().__init__()
        check_positive("d_in", d_in, integer=True)
        check_positive("d_out", d_out, integer=True)
        if norm not in ("rms", None):
            raise ValueError(f"norm must be 'rms' or None, got {norm!r}")
        self.d_in, self.d_out = int(d_in), int(d_out)
        self.net = nn.Sequential(nn.Linear(d_in, d_out), nn.GELU(), nn.Linear(d_out, d_out))
        self.norm = RMSNorm(d_out) if norm == "rms" else None
        if norm_init is not None:
            if self.norm is None:
                raise ValueError("norm_init needs norm='rms'")
            check_finite_tensor("norm_init", norm_init, ndim=1, floating=True)
            if norm_init.shape[0] != d_out:
                raise ValueError(f"norm_init must have shape ({d_out},), got {tuple(norm_init.shape)}")
            assert self.norm.weight is not None
            with torch.no_grad():
                self.norm.weight.copy_(norm_init)

    def forward(self, z: Tensor) -> Tensor:
        """``(b, s, d_in) -> (b, s, d_out)``."""
        check_finite_tensor("z", z, floating=True)
        if z.shape[-1] != self.d_in:
            raise ValueError(f"z must end in d_in={self.d_in} features, got shape {tuple(z.shape)}")
        h = self.net(z)
        return h if self.norm is None else self.norm(h)


@dataclass(frozen=True)
class SplitBatch:
    """A batch after the random split.

    Attributes:
        features: ``(b, s_max, d)`` kept features ``Z_{1:s}``, right-padded with zeros.
        mask: ``(b, s_max)`` bool, True for kept features.
        targets: ``(b, t_max)`` continuation token ids, ``ignore_index`` where padded.
        splits: ``(b,)`` the split points s.
    """

    features: Tensor
    mask: Tensor
    targets: Tensor
    splits: Tensor


def pad_features(feats: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    """Right-pad ``[(L_i, d)]`` to ``(b, max L, d)`` with a bool mask (True = real)."""
    if len(feats) == 0:
        raise ValueError("feats must hold at least one sequence")
    d = feats[0].shape[-1]
    for i, f in enumerate(feats):
        check_finite_tensor(f"feats[{i}]", f, ndim=2, floating=True)
        if f.shape[-1] != d:
            raise ValueError(f"feats[{i}] has {f.shape[-1]} features, feats[0] has {d}")
    n = max(f.shape[0] for f in feats)
    out = feats[0].new_zeros(len(feats), n, d)
    mask = torch.zeros(len(feats), n, dtype=torch.bool)
    for i, f in enumerate(feats):
        out[i, : f.shape[0]] = f
        mask[i, : f.shape[0]] = True
    return out, mask


def random_split_batch(
    feats: Sequence[Tensor],
    token_ids: Sequence[Sequence[int]],
    *,
    max_split: int = 128,
    generator: torch.Generator | None = None,
    retokenize: Callable[[Sequence[int]], Sequence[int]] | None = None,
    ignore_index: int = -100,
) -> SplitBatch:
    """Cut each answer at ``s ~ U{1, .., min(L-1, max_split)}``: keep ``Z_{1:s}``, target ``y_{s+1:L}``.

    Args:
        feats: per example ``(L, d)`` features of the L generated tokens.
        token_ids: per example the L generated token ids (VLM vocabulary).
        max_split: the largest split point (official ``output_embed_max_split_len``: 128).
        generator: draws the split points.
        retokenize: maps the continuation's VLM ids to LLM ids (the paper decodes to text and
            re-tokenizes with the T5 tokenizer); identity by default.
        ignore_index: the target padding value.

    Raises:
        ValueError: mismatched lengths, an answer shorter than 2 tokens, bad features.
    """
    check_positive("max_split", max_split, integer=True)
    if len(feats) != len(token_ids):
        raise ValueError(
            f"feats and token_ids must have one entry per example, got {len(feats)} and {len(token_ids)}"
        )
    if len(feats) == 0:
        raise ValueError("feats must hold at least one example")
    kept, targets, splits = [], [], []
    for i, (f, ids) in enumerate(zip(feats, token_ids, strict=True)):
        check_finite_tensor(f"feats[{i}]", f, ndim=2, floating=True)
        n = len(ids)
        if f.shape[0] != n:
            raise ValueError(f"feats[{i}] has {f.shape[0]} rows but token_ids[{i}] has {n} tokens")
        if n < 2:
            raise ValueError(f"token_ids[{i}] has {n} tokens; a split needs at least 2")
        hi = min(n - 1, max_split)
        s = int(torch.randint(1, hi + 1, (1,), generator=generator))
        kept.append(f[:s])
        cont = list(ids[s:])
        targets.append(list(retokenize(cont)) if retokenize is not None else cont)
        splits.append(s)
    features, mask = pad_features(kept)
    t_max = max(1, max(len(t) for t in targets))
    tgt = torch.full((len(targets), t_max), ignore_index, dtype=torch.long)
    for i, t in enumerate(targets):
        tgt[i, : len(t)] = torch.as_tensor(t, dtype=torch.long)
    return SplitBatch(features, mask, tgt, torch.tensor(splits))


@runtime_checkable
class VisionLanguageModel(Protocol):
    """What ThinkDiff needs of a VLM: greedy answers with the final-norm features of their tokens."""

    d_model: int

    def generate(self, inputs: Any, max_new_tokens: int = ...) -> Any: ...


@runtime_checkable
class EncoderDecoderLM(Protocol):
    """What ThinkDiff needs of a T5-style LLM: its width, its encoder's final-norm gain and a decoder loss."""

    @property
    def d_model(self) -> int: ...

    @property
    def encoder_norm_weight(self) -> Tensor: ...

    def loss(self, memory: Tensor, memory_mask: Tensor | None, targets: Tensor) -> Tensor: ...


class ThinkDiffLVLM(nn.Module):
    """ThinkDiff-LVLM: frozen VLM + frozen LLM decoder + trainable :class:`Aligner`.

    Args:
        vlm: a :class:`VisionLanguageModel` (``generate(inputs, max_new_tokens)`` returning an object with
            ``tokens``, ``features`` and ``texts``, as :class:`~.models.Generation`).
        lm: an :class:`EncoderDecoderLM` whose decoder supplies the training loss.
        aligner: the trainable map; default ``Aligner(vlm.d_model, lm.d_model, norm_init=lm's norm)``.
    """

    def __init__(self, vlm: Any, lm: Any, aligner: Aligner | None = None) -> None:
        super().__init__()
        self.vlm, self.lm = vlm, lm
        self.aligner = (
            aligner
            if aligner is not None
            else Aligner(vlm.d_model, lm.d_model, norm_init=lm.encoder_norm_weight)
        )
        for module in (vlm, lm):
            if isinstance(module, nn.Module):
                module.requires_grad_(False)

    def training_loss(self, batch: SplitBatch) -> Tensor:
        """Eq. 1: cross-entropy of the frozen decoder on the continuation, given the aligned prefix."""
        return self.lm.loss(self.aligner(batch.features), batch.mask, batch.targets)

    @torch.no_grad()
    def condition(
        self, inputs: Any, *, max_new_tokens: int = 128, drop_eos: bool = True
    ) -> tuple[Tensor, Tensor, list[str]]:
        """Inference: the VLM answers ``inputs``; its token features become prompt embeddings.

        Returns:
            ``(prompt_embeds (b, L, d_t5), mask (b, L), generated texts)``. With ``drop_eos`` the
            feature that emitted ``<eos>`` is left out (training never keeps it, since s <= L-1).
        """
        gen = self.vlm.generate(inputs, max_new_tokens=max_new_tokens)
        eos = getattr(gen, "eos_id", None)
        feats = [
            f[:-1] if (drop_eos and f.shape[0] > 1 and eos is not None and t[-1] == eos) else f
            for f, t in zip(gen.features, gen.tokens, strict=True)
        ]
        z, mask = pad_features(feats)
        return self.aligner(z) * mask[..., None], mask, list(gen.texts)
