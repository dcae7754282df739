"""The small vision-language models of the shape-world study of *Toward Robust Hyper-Detailed Image
Captioning: A Multiagent Approach and Dual Evaluation Metrics for Factuality and Coverage*
(Lee et al., ICML 2025, arXiv:2412.15484).

No multimodal LLM can be downloaded here, so the two roles the paper gives an MLLM are played by
small models trained in the shape world:

* :class:`TinyCaptioner` (the captioning MLLM): a CNN image encoder whose 9 cell tokens condition a
  causal transformer decoder over caption words, trained with teacher forcing on ground-truth
  captions. Its token probabilities give the paper's *confidence* detector (Sec. 3) and its
  temperature samples the *consistency* detector.
* :class:`TinyVQA` (the verifying MLLM): the same kind of image encoder and a transformer encoder
  over ``[cls] image-tokens context-words [sep] question-words``, with a two-way True/False head.
  Asked with an empty context it verifies a proposition *in isolation* (the paper's CapMAS step 2);
  with the caption as context it is the non-isolated verifier. It is trained on propositions from
  ground-truth scene graphs (never on captioner outputs), half of them with a context caption that
  is mostly, not always, right (``context_noise``), as a conversational MLLM sees its own text; the
  context is read by attention that competes with the image cells (see :class:`TinyVQA`).

Shapes: ``B`` batch, ``L`` tokens, ``d`` width; images are ``(B, 3, H, W)`` float32 in [0, 1] with
``H = W`` a multiple of 4.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_finite_tensor, check_in_range, check_positive
from icml25.data.shape_world import COLOURS, SHAPES, SIZES, Scene, render_batch
from icml25.nn.train import FitConfig, FitHistory, fit

from .world import (
    WordVocab,
    caption_of,
    inject_hallucinations,
    parse_caption,
    perturb_proposition,
    proposition_text,
    proposition_true,
    split_sentences,
)

#: how the non-isolated verifier sees the caption: up to the proposition's sentence, or whole
CONTEXT_MODES: tuple[str, ...] = ("so_far", "whole")

__all__ = [
    "ModelConfig",
    "CellEncoder",
    "TinyCaptioner",
    "TinyVQA",
    "pad_batch",
    "check_images",
    "train_captioner",
    "train_vqa",
    "vqa_examples",
    "pretrain_encoder",
    "CellProbe",
    "cell_targets",
    "CONTEXT_MODES",
]


@dataclass(frozen=True)
class ModelConfig:
    """Widths of the tiny captioner and verifier.

    Args:
        d: transformer width.
        layers: transformer layers.
        heads: attention heads.
        channels: CNN channels.
        max_len: longest token sequence (caption, or context + question).
    """

    d: int = 96
    layers: int = 2
    heads: int = 4
    channels: int = 48
    max_len: int = 96

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("d", "layers", "heads", "channels", "max_len"))
        if self.d % self.heads:
            raise ValueError(f"ModelConfig.d ({self.d}) must be a multiple of heads ({self.heads})")


def check_images(images: Tensor, name: str = "images") -> None:
    """Raise unless ``images`` is a finite float ``(B, 3, H, W)`` tensor with ``H = W`` a multiple of 4."""
    check_finite_tensor(name, images, ndim=4, floating=True)
    if images.shape[1] != 3 or images.shape[2] != images.shape[3] or images.shape[2] % 4:
        raise ValueError(
            f"{name} must have shape (B, 3, S, S) with S a multiple of 4, got {tuple(images.shape)}"
        )


class CellEncoder(nn.Module):
    """Four convolutions (two with stride 2) and an average pool onto the 3x3 grid: 9 cell tokens."""

    def __init__(self, channels: int, d: int) -> None:
        super().__init__()
        c = channels
        self.net = nn.Sequential(
            nn.Conv2d(3, c // 2, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(c // 2, c, 3, stride=2, padding=1),
            nn.GELU(),
            nn.Conv2d(c, c, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(c, d, 3, stride=2, padding=1),
            nn.GELU(),
            nn.AdaptiveAvgPool2d(3),
        )
        self.pos = nn.Parameter(torch.zeros(9, d))

    def forward(self, images: Tensor) -> Tensor:
        """``(B, 3, H, W) -> (B, 9, d)``."""
        x = self.net(images)  # (B, d, 3, 3)
        return x.flatten(2).transpose(1, 2) + self.pos


def pad_batch(seqs: Sequence[Sequence[int]], length: int | None = None, pad: int = WordVocab.PAD) -> Tensor:
    """Right-pad token lists into a ``(B, L)`` long tensor (truncating at ``length``)."""
    length = max((len(s) for s in seqs), default=1) if length is None else length
    out = torch.full((len(seqs), max(length, 1)), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        s = list(s)[:length]
        if s:
            out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


class TinyCaptioner(nn.Module):
    """CNN cell tokens + causal transformer decoder over caption words (the captioning MLLM)."""

    def __init__(
        self, vocab_size: int, config: ModelConfig = ModelConfig(), encoder: CellEncoder | None = None
    ) -> None:
        super().__init__()
        check_positive("vocab_size", vocab_size, integer=True)
        self.config = config
        d = config.d
        self.encoder = encoder if encoder is not None else CellEncoder(config.channels, d)
        self.embed = nn.Embedding(vocab_size, d)
        self.pos = nn.Parameter(torch.randn(config.max_len, d) * 0.02)
        layer = nn.TransformerDecoderLayer(
            d, config.heads, 2 * d, dropout=0.0, batch_first=True, norm_first=True
        )
        self.decoder = nn.TransformerDecoder(layer, config.layers)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab_size)

    def forward(self, images: Tensor, tokens: Tensor) -> Tensor:
        """Next-token logits ``(B, L, V)`` for input tokens ``(B, L)`` (``<bos>`` first)."""
        return self.decode(self.encoder(images), tokens)

    def decode(self, memory: Tensor, tokens: Tensor) -> Tensor:
        """Logits from cell features ``(B, 9, d)`` (the encoder's output) and tokens ``(B, L)``."""
        L = tokens.shape[1]
        if self.config.max_len < L:
            raise ValueError(f"tokens: at most {self.config.max_len} positions, got {L}")
        x = self.embed(tokens) + self.pos[:L]
        causal = torch.triu(torch.full((L, L), float("-inf")), diagonal=1)
        h = self.decoder(x, memory, tgt_mask=causal, tgt_is_causal=True)
        return self.head(self.norm(h))

    @torch.no_grad()
    def token_probs(self, images: Tensor, captions: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """p(token_t | image, tokens_<t) of every caption token (teacher forcing), one array per caption."""
        check_images(images)
        inputs = pad_batch([[WordVocab.BOS, *c] for c in captions])
        logp = torch.log_softmax(self(images, inputs), dim=-1)
        out = []
        for i, c in enumerate(captions):
            ids = torch.tensor(list(c), dtype=torch.long)
            out.append(logp[i, torch.arange(len(c)), ids].exp().numpy().astype(np.float64))
        return out

    @torch.no_grad()
    def generate(
        self,
        images: Tensor,
        *,
        max_len: int | None = None,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> list[list[int]]:
        """Captions as token lists (greedy at ``temperature == 0``, else ancestral sampling)."""
        check_images(images)
        check_in_range("temperature", temperature, 0.0)
        max_len = self.config.max_len - 1 if max_len is None else max_len
        B = images.shape[0]
        memory = self.encoder(images)
        tokens = torch.full((B, 1), WordVocab.BOS, dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        for _ in range(max_len):
            L = tokens.shape[1]
            x = self.embed(tokens) + self.pos[:L]
            causal = torch.triu(torch.full((L, L), float("-inf")), diagonal=1)
            logits = self.head(self.norm(self.decoder(x, memory, tgt_mask=causal, tgt_is_causal=True)))[:, -1]
            if temperature == 0:
                nxt = logits.argmax(-1)
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
            nxt = torch.where(done, torch.full_like(nxt, WordVocab.PAD), nxt)
            tokens = torch.cat([tokens, nxt[:, None]], dim=1)
            done |= nxt == WordVocab.EOS
            if bool(done.all()):
                break
        out = []
        for row in tokens[:, 1:].tolist():
            seq = []
            for t in row:
                if t in (WordVocab.EOS, WordVocab.PAD):
                    break
                seq.append(t)
            out.append(seq)
        return out


class TinyVQA(nn.Module):
    """True/False verifier over the 9 cell features, the question and (optionally) a context text.

    Every question word carries a learned cell-attention vector (9 logits), a learned feature query
    (``d``) and a learned text key (``d``). The question's evidence ``v`` is read by **one softmax
    over the 9 image cells and every context token**: a cell's logit is the sum of the question
    words' cell logits, a context token's logit is the question key's dot product with the token's
    key (plus its learned per-word bias). Cells contribute their features, context tokens their
    value embeddings, so the context competes with the image for the same attention mass, as text
    and image tokens do in an MLLM (the paper's Sec. 3 observation: attention to the image falls as
    the text grows). An MLP maps ``[q * v, v, q, has_context]`` to (True, False) logits. An empty
    context leaves the softmax over the cells alone: the proposition is verified in isolation.
    """

    def __init__(
        self, vocab_size: int, config: ModelConfig = ModelConfig(), encoder: CellEncoder | None = None
    ) -> None:
        super().__init__()
        check_positive("vocab_size", vocab_size, integer=True)
        self.config = config
        self.vocab_size = vocab_size
        d = config.d
        self.encoder = encoder if encoder is not None else CellEncoder(config.channels, d)
        self.where = nn.Embedding(vocab_size, 9)
        nn.init.zeros_(self.where.weight)
        self.query = nn.Embedding(vocab_size, d)
        self.text_query = nn.Embedding(vocab_size, d)
        self.text_key = nn.Embedding(vocab_size, d)
        self.text_bias = nn.Embedding(vocab_size, 1)
        nn.init.zeros_(self.text_bias.weight)
        self.text_value = nn.Embedding(vocab_size, d)
        self.vis = nn.Linear(d, d)
        self.head = nn.Sequential(nn.Linear(3 * d + 1, 2 * d), nn.GELU(), nn.Linear(2 * d, 2))

    def forward(self, images: Tensor, text: Tensor, segments: Tensor) -> Tensor:
        """``(B, 2)`` logits of (True, False); ``text``/``segments`` are ``(B, L)`` (``<sep>`` included)."""
        return self.classify(self.encoder(images), text, segments)

    def attention(self, features: Tensor, text: Tensor, segments: Tensor) -> tuple[Tensor, Tensor]:
        """``(B, 9 + L)`` joint attention over the cells and the text positions (only context tokens
        get mass there) and the ``(B, 9 + L, d)`` values it averages."""
        content = (text != WordVocab.PAD) & (text != WordVocab.SEP) & (text != WordVocab.index_of("."))
        qmask = ((segments == 2) & content).float()
        n_q = qmask.sum(1, keepdim=True).clamp(min=1)
        cell_logits = (self.where(text) * qmask[..., None]).sum(1)  # (B, 9)
        qk = (self.text_query(text) * qmask[..., None]).sum(1) / n_q  # (B, d)
        cmask = (segments == 1) & (text != WordVocab.PAD)
        tok_logits = torch.einsum("bd,bld->bl", qk, self.text_key(text)) / math.sqrt(qk.shape[-1])
        tok_logits = (tok_logits + self.text_bias(text)[..., 0]).masked_fill(~cmask, float("-inf"))
        a = torch.softmax(torch.cat([cell_logits, tok_logits], dim=1), dim=-1)
        values = torch.cat([self.vis(features), self.text_value(text)], dim=1)
        return a, values

    def classify(self, features: Tensor, text: Tensor, segments: Tensor) -> Tensor:
        """Logits from cell features ``(B, 9, d)`` and the text (segments 1 = context, 2 = question)."""
        content = (text != WordVocab.PAD) & (text != WordVocab.SEP) & (text != WordVocab.index_of("."))
        qmask = ((segments == 2) & content).float()
        q = (self.query(text) * qmask[..., None]).sum(1) / qmask.sum(1, keepdim=True).clamp(min=1)
        a, values = self.attention(features, text, segments)
        v = torch.einsum("bk,bkd->bd", a, values)
        has = ((segments == 1) & (text != WordVocab.PAD)).any(1, keepdim=True).float()
        return self.head(torch.cat([q * v, v, q, has], dim=-1))

    def image_attention(
        self, vocab: WordVocab, images: Tensor, questions: Sequence[str], contexts: Sequence[str]
    ) -> np.ndarray:
        """The share of attention each question puts on the image cells (1 without a context)."""
        text, segs = self.encode_text(vocab, questions, contexts)
        with torch.no_grad():
            a, _ = self.attention(self.encoder(images), text, segs)
        return a[:, :9].sum(1).numpy().astype(np.float64)

    def encode_text(
        self, vocab: WordVocab, questions: Sequence[str], contexts: Sequence[str]
    ) -> tuple[Tensor, Tensor]:
        """``(text, segments)`` tensors for question/context strings; a long context keeps its end."""
        rows, segs = [], []
        for q, c in zip(questions, contexts, strict=True):
            qi = vocab.encode(q)[: self.config.max_len // 2]
            ci = vocab.encode(c)
            room = self.config.max_len - len(qi)
            ci = ci[-room:] if room > 0 else []
            rows.append([*ci, WordVocab.SEP, *qi])
            segs.append([1] * len(ci) + [2] * (1 + len(qi)))
        return pad_batch(rows), pad_batch(segs, pad=0)

    @torch.no_grad()
    def prob_true_false(
        self, vocab: WordVocab, images: Tensor, questions: Sequence[str], contexts: Sequence[str]
    ) -> np.ndarray:
        """``(B, 2)`` array of (p(True), p(False)) for each (image, question, context)."""
        text, segs = self.encode_text(vocab, questions, contexts)
        return torch.softmax(self(images, text, segs), dim=-1).numpy().astype(np.float64)


# ----------------------------------------------------------------------------------------------
# training (on ground-truth scene graphs only)
# ----------------------------------------------------------------------------------------------


def train_captioner(
    model: TinyCaptioner,
    vocab: WordVocab,
    images: Tensor,
    scenes: Sequence[Scene],
    fit_config: FitConfig,
    *,
    seed: int = 0,
) -> FitHistory:
    """Teacher-forced cross-entropy on the ground-truth captions of ``scenes``."""
    check_images(images)
    if len(scenes) != images.shape[0]:
        raise ValueError(f"scenes ({len(scenes)}) and images ({images.shape[0]}) must match")
    seqs = [[WordVocab.BOS, *vocab.encode(caption_of(s)), WordVocab.EOS] for s in scenes]
    tokens = pad_batch(seqs, min(max(len(s) for s in seqs), model.config.max_len + 1))
    features = _frozen_features(model.encoder, images)

    def loss_fn(m: nn.Module, batch: tuple[Tensor, ...], gen: torch.Generator) -> Tensor:
        x, tok = batch
        L = int((tok != WordVocab.PAD).sum(1).max())
        logits = m.decode(x, tok[:, : L - 1])  # type: ignore[operator]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tok[:, 1:L].reshape(-1), ignore_index=0)

    return fit(model, loss_fn, (features, tokens), fit_config, seed=seed)


def vqa_examples(
    scenes: Sequence[Scene],
    rng: np.random.Generator,
    *,
    context_prob: float = 0.5,
    context_noise: float = 0.1,
    context_mode: str = "so_far",
) -> tuple[list[int], list[str], list[str], list[int]]:
    """Balanced verifier training data from scene graphs.

    For every ground-truth proposition of every scene: the true one and a perturbed false one, each
    asked with an empty context or (probability ``context_prob``) with the scene's caption in which
    each sentence is altered with probability ``context_noise``: with ``context_mode="so_far"`` the
    caption up to and including the proposition's sentence (the caption so far, as the non-isolated
    verifier is asked at test time), with ``"whole"`` the whole caption.

    Returns:
        ``(scene_index, question, context, label)`` lists; label 0 = True, 1 = False.
    """
    check_in_range("context_prob", context_prob, 0.0, 1.0)
    check_in_range("context_noise", context_noise, 0.0, 1.0)
    if context_mode not in CONTEXT_MODES:
        raise ValueError(f"context_mode must be one of {CONTEXT_MODES}, got {context_mode!r}")
    idx: list[int] = []
    qs: list[str] = []
    cs: list[str] = []
    ys: list[int] = []
    for i, scene in enumerate(scenes):
        caption = caption_of(scene)
        for p in parse_caption(caption):
            for prop in (p, perturb_proposition(p, scene, rng)):
                context = ""
                if rng.random() < context_prob:
                    context = inject_hallucinations(caption, scene, rng, rate=context_noise)[0]
                    if context_mode == "so_far":
                        context = " ".join(split_sentences(context)[: p.sentence + 1])
                idx.append(i)
                qs.append(proposition_text(prop))
                cs.append(context)
                ys.append(0 if proposition_true(prop, scene) else 1)
    return idx, qs, cs, ys


def train_vqa(
    model: TinyVQA,
    vocab: WordVocab,
    images: Tensor,
    scenes: Sequence[Scene],
    fit_config: FitConfig,
    *,
    seed: int = 0,
    context_prob: float = 0.5,
    context_noise: float = 0.1,
    context_mode: str = "so_far",
) -> FitHistory:
    """Cross-entropy on :func:`vqa_examples` of ``scenes`` (rendered as ``images``)."""
    check_images(images)
    if len(scenes) != images.shape[0]:
        raise ValueError(f"scenes ({len(scenes)}) and images ({images.shape[0]}) must match")
    rng = np.random.default_rng([seed, 77])
    idx, qs, cs, ys = vqa_examples(
        scenes, rng, context_prob=context_prob, context_noise=context_noise, context_mode=context_mode
    )
    text, segs = model.encode_text(vocab, qs, cs)
    index = torch.tensor(idx, dtype=torch.long)
    labels = torch.tensor(ys, dtype=torch.long)

    features = _frozen_features(model.encoder, images)

    def loss_fn(m: nn.Module, batch: tuple[Tensor, ...], gen: torch.Generator) -> Tensor:
        i, t, s, y = batch
        L = int((t != WordVocab.PAD).sum(1).max())
        return F.cross_entropy(m.classify(features[i], t[:, :L], s[:, :L]), y)  # type: ignore[operator]

    return fit(model, loss_fn, (index, text, segs, labels), fit_config, seed=seed)


def _frozen_features(encoder: CellEncoder, images: Tensor) -> Tensor:
    """Freeze the (pretrained) encoder and compute its cell features once."""
    encoder.requires_grad_(False)
    encoder.eval()
    with torch.no_grad():
        return torch.cat([encoder(images[s]) for s in batched(images.shape[0], 512)])


N_SHAPE_CLASSES = len(SHAPES) + 1  # + empty cell
N_COLOUR_CLASSES = len(COLOURS)
N_SIZE_CLASSES = len(SIZES)


def cell_targets(scenes: Sequence[Scene]) -> Tensor:
    """``(N, 9, 3)`` long targets per cell: shape (``len(SHAPES)`` = empty), colour, size (-100 if empty)."""
    out = torch.full((len(scenes), 9, 3), -100, dtype=torch.long)
    for i, scene in enumerate(scenes):
        out[i, :, 0] = len(SHAPES)
        for o in scene.objects:
            k = 3 * o.cell[0] + o.cell[1]
            out[i, k] = torch.tensor(
                [SHAPES.index(o.shape), list(COLOURS).index(o.colour), SIZES.index(o.size)]
            )
    return out


class CellProbe(nn.Module):
    """Per-cell attribute heads used to pretrain the shared vision encoder."""

    def __init__(self, encoder: CellEncoder, d: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(d, N_SHAPE_CLASSES + N_COLOUR_CLASSES + N_SIZE_CLASSES)

    def forward(self, images: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        z = self.head(self.encoder(images))  # (B, 9, classes)
        a, b = N_SHAPE_CLASSES, N_SHAPE_CLASSES + N_COLOUR_CLASSES
        return z[..., :a], z[..., a:b], z[..., b:]


def pretrain_encoder(
    encoder: CellEncoder,
    d: int,
    images: Tensor,
    scenes: Sequence[Scene],
    fit_config: FitConfig,
    *,
    seed: int = 0,
) -> tuple[FitHistory, CellProbe]:
    """Pretrain the vision encoder on per-cell shape / colour / size classification (the shared
    "vision tower" that both MLLM roles build on, as real MLLMs reuse a pretrained image encoder)."""
    check_images(images)
    if len(scenes) != images.shape[0]:
        raise ValueError(f"scenes ({len(scenes)}) and images ({images.shape[0]}) must match")
    probe = CellProbe(encoder, d)
    targets = cell_targets(scenes)

    def loss_fn(m: nn.Module, batch: tuple[Tensor, ...], gen: torch.Generator) -> Tensor:
        x, y = batch
        heads = m(x)
        return sum(
            (
                F.cross_entropy(h.reshape(-1, h.shape[-1]), y[..., k].reshape(-1), ignore_index=-100)
                for k, h in enumerate(heads)
            ),
            torch.zeros(()),
        )

    history = fit(probe, loss_fn, (images, targets), fit_config, seed=seed)
    probe.eval()
    return history, probe


def batched(n: int, size: int) -> list[slice]:
    """Slices covering ``range(n)`` in chunks of ``size``."""
    check_positive("size", size, integer=True)
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def render(scenes: Sequence[Scene], size: int) -> Tensor:
    """Render scenes (``(N, 3, size, size)``), in chunks to bound memory."""
    parts = [render_batch(list(scenes[s]), size) for s in batched(len(scenes), 256)]
    return torch.cat(parts) if parts else torch.zeros(0, 3, size, size)


def log_clip(p: float, eps: float = 1e-8) -> float:
    return -math.log(max(p, eps))
