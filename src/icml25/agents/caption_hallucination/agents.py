"""The CapMAS agents and the hallucination detectors of *Toward Robust Hyper-Detailed Image
Captioning: A Multiagent Approach and Dual Evaluation Metrics for Factuality and Coverage*
(Lee et al., ICML 2025, arXiv:2412.15484).

CapMAS (Sec. 3 of the paper) corrects a caption in three training-free steps:

1. **decompose** (an LLM): the caption becomes atomic propositions, output as a numbered list;
2. **verify** (an MLLM, *in isolation*): each proposition is asked as a True/False question with the
   image only, and scored ``H(u) = -log(max(p(True) - p(False), eps))``; ``H(u) > pi`` flags it;
3. **revise** (an LLM): the caption is rewritten without the flagged content, keeping the rest.

:class:`LLMDecomposer` and :class:`LLMReviser` drive any :class:`~icml25.llm.chat.ChatModel` (the
embedded SmolLM2 by default in the check, any HF model or OpenAI-compatible endpoint through the same
interface). :class:`RuleDecomposer` and :class:`RuleReviser` use the caption grammar and are a
labelled *control* (what the pipeline does with a perfect language side), never the default.
The released evaluator's list parser is :func:`parse_numbered_list`. The detectors compared in the
paper's motivation experiment (Sec. 3: confidence, consistency, isolation) are
:func:`confidence_scores`, :func:`consistency_scores` and :func:`verifier_scores`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from torch import Tensor

from icml25.core.validate import (
    check_finite_array,
    check_in_range,
    check_non_negative,
    check_numeric_array,
    check_positive,
    check_str,
)
from icml25.llm.chat import ChatModel, GenerationConfig, ScriptedChatModel

from .models import TinyCaptioner, TinyVQA, check_images
from .world import (
    Proposition,
    WordVocab,
    parse_caption,
    parse_proposition,
    parse_sentence,
    proposition_text,
    split_sentences,
)

__all__ = [
    "hallucination_score",
    "parse_numbered_list",
    "DecomposedProposition",
    "Decomposer",
    "RuleDecomposer",
    "LLMDecomposer",
    "Verifier",
    "TinyVQAVerifier",
    "HFVLMVerifier",
    "VERIFY_TEMPLATE",
    "Reviser",
    "RuleReviser",
    "LLMReviser",
    "CapMAS",
    "CorrectionResult",
    "verifier_scores",
    "confidence_scores",
    "consistency_scores",
    "detection_auroc",
    "scripted_control_model",
    "DECOMPOSE_SYSTEM",
    "REVISE_SYSTEM",
]


def hallucination_score(
    p_true: float | np.ndarray, p_false: float | np.ndarray, eps: float = 1e-8
) -> np.ndarray:
    """CapMAS's isolated-verification score ``H(u) = -log(max(p(T) - p(F), eps))`` (Sec. 3.2).

    A proposition the verifier clearly affirms scores near 0; an ambiguous or denied one scores up
    to ``-log(eps)``. Works elementwise on arrays.
    """
    check_in_range("eps", eps, 0.0, 1.0, low_open=True, high_open=True)
    pt = np.asarray(check_numeric_array("p_true", p_true), dtype=np.float64)
    pf = np.asarray(check_numeric_array("p_false", p_false), dtype=np.float64)
    check_finite_array("p_true", pt, nonempty=False)
    check_finite_array("p_false", pf, nonempty=False)
    if pt.shape != pf.shape:
        raise ValueError(f"p_true and p_false must have the same shape, got {pt.shape} and {pf.shape}")
    if ((pt < 0) | (pt > 1) | (pf < 0) | (pf > 1)).any():
        raise ValueError("p_true and p_false must be probabilities in [0, 1]")
    return -np.log(np.maximum(pt - pf, eps))


def parse_numbered_list(text: str, *, max_words: int = 245) -> list[str]:
    """Propositions from an LLM's numbered list, by the released evaluator's rule.

    Keeps lines that start with a digit and contain ``". "`` (the text after the first ``". "``);
    skips lines longer than ``max_words`` words; stops at three consecutive identical propositions
    (degenerate repetition).
    """
    check_str("text", text)
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or not line[0].isdigit() or ". " not in line:
            continue
        item = line.split(". ", 1)[1].strip()
        if not item or len(item.split()) > max_words:
            continue
        out.append(item)
        if len(out) >= 3 and out[-1] == out[-2] == out[-3]:
            return out[:-2]
    return out


@dataclass(frozen=True)
class DecomposedProposition:
    """A proposition as the decomposer wrote it, the caption sentence it came from, and its parse."""

    text: str
    sentence: int
    parsed: Proposition | None = None


@runtime_checkable
class Decomposer(Protocol):
    def decompose(self, captions: Sequence[str]) -> list[list[DecomposedProposition]]: ...


class RuleDecomposer:
    """Grammar-based decomposition (a labelled control: the language side made perfect)."""

    name = "rule"

    def decompose(self, captions: Sequence[str]) -> list[list[DecomposedProposition]]:
        out = []
        for caption in captions:
            props = []
            for i, sentence in enumerate(split_sentences(caption)):
                for p in parse_sentence(sentence, i):
                    props.append(DecomposedProposition(proposition_text(p), i, p))
            out.append(props)
        return out


DECOMPOSE_SYSTEM = (
    "Decompose the caption sentence into atomic propositions. Each proposition is one short fact "
    "that can be true or false. Output a numbered list, one proposition per line."
)
_DECOMPOSE_SHOTS = (
    (
        "a small blue square at the bottom right.",
        "1. there is a square at the bottom right.\n2. the square at the bottom right is blue.\n"
        "3. the square at the bottom right is small.",
    ),
    ("white background.", "1. the background is white."),
    (
        "a large green diamond in the centre.",
        "1. there is a diamond in the centre.\n2. the diamond in the centre is green.\n"
        "3. the diamond in the centre is large.",
    ),
    ("gray background.", "1. the background is gray."),
    (
        "a small orange cross at the left.",
        "1. there is a cross at the left.\n2. the cross at the left is orange.\n"
        "3. the cross at the left is small.",
    ),
)


def _few_shot(system: str, shots: Sequence[tuple[str, str]], query: str) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": system}]
    for user, assistant in shots:
        msgs += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    msgs.append({"role": "user", "content": query})
    return msgs


class LLMDecomposer:
    """Step 1 of CapMAS with an LLM: each caption sentence -> a numbered list of propositions.

    The paper decomposes the whole caption in one request; we ask sentence by sentence (a small
    model copies the few-shot pattern far more reliably, and each proposition keeps its sentence
    index for the reviser). Identical sentences are asked once per call.
    """

    def __init__(self, chat: ChatModel, *, max_tokens: int = 64) -> None:
        if not isinstance(chat, ChatModel):
            raise TypeError(f"chat must be a ChatModel, got {type(chat).__name__}")
        check_positive("max_tokens", max_tokens, integer=True)
        self.chat = chat
        self.max_tokens = max_tokens
        self.name = f"llm:{chat.name}"

    def decompose(self, captions: Sequence[str]) -> list[list[DecomposedProposition]]:
        per_caption = [split_sentences(c) for c in captions]
        unique = list(dict.fromkeys(s for sents in per_caption for s in sents))
        replies: dict[str, list[str]] = {}
        if unique:
            config = GenerationConfig(max_tokens=self.max_tokens, stop=("\n\n",))
            answers = self.chat.generate(
                [_few_shot(DECOMPOSE_SYSTEM, _DECOMPOSE_SHOTS, s) for s in unique], config
            )
            replies = {s: parse_numbered_list(a[0]) for s, a in zip(unique, answers, strict=True)}
        out = []
        for sents in per_caption:
            props = []
            for i, s in enumerate(sents):
                props += [DecomposedProposition(t, i, parse_proposition(t, i)) for t in replies[s]]
            out.append(props)
        return out


# ----------------------------------------------------------------------------------------------
# verification
# ----------------------------------------------------------------------------------------------


@runtime_checkable
class Verifier(Protocol):
    def prob_true_false(
        self, images: Tensor, propositions: Sequence[str], contexts: Sequence[str]
    ) -> np.ndarray:
        """``(n, 2)`` (p(True), p(False)) for image ``i``, proposition ``i``, context ``i``."""
        ...


class TinyVQAVerifier:
    """A :class:`Verifier` over :class:`~.models.TinyVQA` (context ``""`` = isolated query)."""

    def __init__(self, model: TinyVQA, vocab: WordVocab, *, batch_size: int = 256) -> None:
        self.model = model
        self.vocab = vocab
        self.batch_size = batch_size

    def prob_true_false(
        self, images: Tensor, propositions: Sequence[str], contexts: Sequence[str]
    ) -> np.ndarray:
        check_images(images)
        if not (images.shape[0] == len(propositions) == len(contexts)):
            raise ValueError(
                f"images ({images.shape[0]}), propositions ({len(propositions)}) and contexts "
                f"({len(contexts)}) must have the same length"
            )
        self.model.eval()
        parts = []
        for s in range(0, len(propositions), self.batch_size):
            sl = slice(s, s + self.batch_size)
            parts.append(self.model.prob_true_false(self.vocab, images[sl], propositions[sl], contexts[sl]))
        return np.concatenate(parts) if parts else np.zeros((0, 2))


VERIFY_TEMPLATE = "{context}Is this statement about the image true or false? {proposition} Answer:"


class HFVLMVerifier:
    """A :class:`Verifier` over a Hugging Face vision-language model (a LLaVA- or Qwen2-VL-style
    ``...ForConditionalGeneration``): ``p(True)`` and ``p(False)`` are the next-token probabilities
    of the two answer tokens after the question (paper Sec. 3.2).

    Args:
        model: called as ``model(**encode(images, prompts))``; must return ``.logits`` ``(B, L, V)``.
        encode: builds the model's inputs from images ``(B, 3, S, S)`` and prompt strings (for a real
            model: its processor, with left padding so that position -1 is each prompt's last token).
        true_id, false_id: token ids of the answers "True" and "False".
        template: the question; ``{context}`` is empty for isolated verification (CapMAS) and the
            caption plus a newline otherwise.
    """

    def __init__(
        self,
        model: Any,
        encode: Callable[[Tensor, list[str]], Mapping[str, Any]],
        *,
        true_id: int,
        false_id: int,
        template: str = VERIFY_TEMPLATE,
        batch_size: int = 16,
    ) -> None:
        for name, value in (("true_id", true_id), ("false_id", false_id)):
            check_non_negative(name, value, integer=True)
        if true_id == false_id:
            raise ValueError("true_id and false_id must differ")
        check_positive("batch_size", batch_size, integer=True)
        if "{proposition}" not in template or "{context}" not in template:
            raise ValueError("template must contain {context} and {proposition}")
        self.model = model
        self.encode = encode
        self.true_id, self.false_id = int(true_id), int(false_id)
        self.template = template
        self.batch_size = batch_size

    def prob_true_false(
        self, images: Tensor, propositions: Sequence[str], contexts: Sequence[str]
    ) -> np.ndarray:
        import torch

        check_images(images)
        if not (images.shape[0] == len(propositions) == len(contexts)):
            raise ValueError(
                f"images ({images.shape[0]}), propositions ({len(propositions)}) and contexts "
                f"({len(contexts)}) must have the same length"
            )
        prompts = [
            self.template.format(context=f"{c}\n" if c else "", proposition=p)
            for p, c in zip(propositions, contexts, strict=True)
        ]
        parts = []
        with torch.no_grad():
            for start in range(0, len(prompts), self.batch_size):
                sl = slice(start, start + self.batch_size)
                logits = self.model(**self.encode(images[sl], prompts[sl])).logits[:, -1].float()
                probs = torch.softmax(logits, dim=-1)[:, [self.true_id, self.false_id]]
                parts.append(probs.cpu().numpy().astype(np.float64))
        return np.concatenate(parts) if parts else np.zeros((0, 2))


def verifier_scores(
    verifier: Verifier,
    images: Tensor,
    propositions: Sequence[Sequence[str]],
    contexts: Sequence[str] | None = None,
    *,
    eps: float = 1e-8,
    sentences: Sequence[Sequence[int]] | None = None,
    score: str = "h",
) -> list[np.ndarray]:
    """``H(u)`` of every proposition of every image (``score="h"``), or the margin
    ``p(False) - p(True)`` (``score="margin"``): the same ordering as ``H(u)`` wherever
    ``p(True) - p(False) > eps``, continued past ``H``'s clamp, where ``H`` ties every proposition the
    verifier does not affirm. ``H(u) > pi`` is ``margin > -exp(-pi)``.

    Args:
        images: ``(N, 3, S, S)``.
        propositions: per image, the proposition texts.
        contexts: per image, the text put before each question (the caption, for non-isolated
            verification); None asks every proposition in isolation (CapMAS).
        sentences: per image, each proposition's sentence index: the context of proposition ``j``
            is then the caption *so far*, its sentences up to and including ``sentences[i][j]``
            (None: the whole context before every question).
    """
    check_images(images)
    if len(propositions) != images.shape[0]:
        raise ValueError(
            f"propositions ({len(propositions)}) must have one list per image ({images.shape[0]})"
        )
    if contexts is not None and len(contexts) != len(propositions):
        raise ValueError(f"contexts ({len(contexts)}) must have one entry per image ({len(propositions)})")
    if sentences is not None and [len(x) for x in sentences] != [len(ps) for ps in propositions]:
        raise ValueError("sentences must give one sentence index per proposition")
    index = [i for i, ps in enumerate(propositions) for _ in ps]
    flat = [p for ps in propositions for p in ps]
    if contexts is None:
        ctx = [""] * len(flat)
    elif sentences is None:
        ctx = [contexts[i] for i in index]
    else:
        split = [split_sentences(c) for c in contexts]
        ctx = [" ".join(split[i][: k + 1]) for i, ks in enumerate(sentences) for k in ks]
    if not flat:
        return [np.zeros(0) for _ in propositions]
    probs = verifier.prob_true_false(images[index], flat, ctx)
    if score == "h":
        scores = hallucination_score(probs[:, 0], probs[:, 1], eps)
    elif score == "margin":
        scores = probs[:, 1] - probs[:, 0]
    else:
        raise ValueError(f"score must be 'h' or 'margin', got {score!r}")
    out, k = [], 0
    for ps in propositions:
        out.append(scores[k : k + len(ps)])
        k += len(ps)
    return out


_CONTENT = {"exists": None, "colour": "value", "size": "value", "background": "value"}


def confidence_scores(
    captioner: TinyCaptioner,
    vocab: WordVocab,
    images: Tensor,
    captions: Sequence[str],
    props: Sequence[Sequence[Proposition]],
) -> list[np.ndarray]:
    """The confidence detector: ``-log`` of the lowest captioner probability among a proposition's
    content words in its sentence (shape and place words for ``exists``, the attribute word otherwise)."""
    check_images(images)
    if not (images.shape[0] == len(captions) == len(props)):
        raise ValueError("images, captions and props must have one entry per image")
    limit = captioner.config.max_len - 1  # longer captions are scored on their first tokens
    token_lists = [vocab.encode(c)[:limit] for c in captions]
    probs = captioner.token_probs(images, token_lists)
    out = []
    for tokens, p_tok, ps in zip(token_lists, probs, props, strict=True):
        words = [vocab.words[t] for t in tokens]
        sentence_of, k = [], 0
        for w in words:
            sentence_of.append(k)
            k += w == "."
        scores = []
        for p in ps:
            span = [j for j, s in enumerate(sentence_of) if s == p.sentence]
            if p.kind == "exists":
                targets = {p.shape, "top", "middle", "bottom", "left", "centre", "right"}
            else:
                targets = {p.value}
            hits = [j for j in span if words[j] in targets] or span
            scores.append(-math.log(max(float(np.min(p_tok[hits])), 1e-12)) if hits else 0.0)
        out.append(np.asarray(scores, dtype=np.float64))
    return out


def consistency_scores(
    samples: Sequence[Sequence[str]], props: Sequence[Sequence[Proposition]]
) -> list[np.ndarray]:
    """The consistency detector: 1 - fraction of resampled captions that state the proposition."""
    if len(samples) != len(props):
        raise ValueError("samples and props must have one entry per image")
    out = []
    for caps, ps in zip(samples, props, strict=True):
        if not caps:
            raise ValueError("every image needs at least one resampled caption")
        keys = [{q.key for q in parse_caption(c)} for c in caps]
        out.append(
            np.asarray([1.0 - sum(p.key in k for k in keys) / len(keys) for p in ps], dtype=np.float64)
        )
    return out


def detection_auroc(scores: Sequence[float] | np.ndarray, hallucinated: Sequence[bool] | np.ndarray) -> float:
    """AUROC of hallucination scores against labels (higher score = more likely hallucinated);
    NaN when there are no scores or only one class is present."""
    s = np.asarray(check_numeric_array("scores", scores), dtype=np.float64)
    y = np.asarray(hallucinated, dtype=bool)
    check_finite_array("scores", s, ndim=1, nonempty=False)
    if y.shape != s.shape:
        raise ValueError(f"hallucinated must have the shape of scores {s.shape}, got {y.shape}")
    if y.all() or not y.any():
        return float("nan")
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s))


# ----------------------------------------------------------------------------------------------
# revision
# ----------------------------------------------------------------------------------------------


@runtime_checkable
class Reviser(Protocol):
    def revise(
        self, captions: Sequence[str], flagged: Sequence[Sequence[DecomposedProposition]]
    ) -> list[str]: ...


class RuleReviser:
    """Grammar-based revision (labelled control): a flagged ``exists`` or ``background`` proposition
    deletes its sentence; a flagged colour or size proposition drops that word."""

    name = "rule"

    def revise(
        self, captions: Sequence[str], flagged: Sequence[Sequence[DecomposedProposition]]
    ) -> list[str]:
        out = []
        for caption, flags in zip(captions, flagged, strict=True):
            sentences = split_sentences(caption)
            drop: set[int] = set()
            words: dict[int, set[str]] = {}
            for f in flags:
                p = f.parsed or parse_proposition(f.text, f.sentence)
                if p is None or not 0 <= f.sentence < len(sentences):
                    continue
                if p.kind in ("exists", "background"):
                    drop.add(f.sentence)
                elif p.value is not None:
                    words.setdefault(f.sentence, set()).add(p.value)
            kept = []
            for i, s in enumerate(sentences):
                if i in drop:
                    continue
                if i in words:
                    s = " ".join(w for w in s[:-1].split() if w not in words[i]) + "."
                kept.append(s)
            out.append(" ".join(kept))
        return out


REVISE_SYSTEM = (
    "You fix image captions. Rewrite the sentence so that it no longer states the wrong facts: remove "
    "a wrong colour or size word and keep every other word. Only if the object itself is wrong "
    "(there is no such object), answer DELETE."
)
_REVISE_SHOTS = (
    ("Sentence: a small blue square in the centre.\nWrong facts: there is a square in the centre.", "DELETE"),
    (
        "Sentence: a large red triangle at the top left.\nWrong facts: the triangle at the top left is red.",
        "a large triangle at the top left.",
    ),
    ("Sentence: white background.\nWrong facts: the background is white.", "DELETE"),
    (
        "Sentence: a small green cross at the bottom.\nWrong facts: the cross at the bottom is small.",
        "a green cross at the bottom.",
    ),
    (
        "Sentence: a large yellow circle at the right.\nWrong facts: the circle at the right is yellow. "
        "the circle at the right is large.",
        "a circle at the right.",
    ),
)


class LLMReviser:
    """Step 3 of CapMAS with an LLM: every sentence holding flagged propositions is rewritten (or
    deleted) by the LLM given the sentence and its wrong facts; other sentences are kept verbatim.

    The paper's prompt was not released; this one asks for the minimal edit in the same spirit.
    Identical requests are asked once per call.
    """

    def __init__(self, chat: ChatModel, *, max_tokens: int = 32) -> None:
        if not isinstance(chat, ChatModel):
            raise TypeError(f"chat must be a ChatModel, got {type(chat).__name__}")
        check_positive("max_tokens", max_tokens, integer=True)
        self.chat = chat
        self.max_tokens = max_tokens
        self.name = f"llm:{chat.name}"

    @staticmethod
    def request(sentence: str, facts: Sequence[str]) -> str:
        return f"Sentence: {sentence}\nWrong facts: {' '.join(facts)}"

    def revise(
        self, captions: Sequence[str], flagged: Sequence[Sequence[DecomposedProposition]]
    ) -> list[str]:
        if len(captions) != len(flagged):
            raise ValueError(f"captions ({len(captions)}) and flagged ({len(flagged)}) must match")
        jobs: list[tuple[int, int, str]] = []
        split = [split_sentences(c) for c in captions]
        for ci, (sentences, flags) in enumerate(zip(split, flagged, strict=True)):
            by_sentence: dict[int, list[str]] = {}
            for f in flags:
                if 0 <= f.sentence < len(sentences):
                    by_sentence.setdefault(f.sentence, []).append(f.text)
            for si, facts in sorted(by_sentence.items()):
                jobs.append((ci, si, self.request(sentences[si], facts)))
        unique = list(dict.fromkeys(r for _, _, r in jobs))
        answers: dict[str, str] = {}
        if unique:
            config = GenerationConfig(max_tokens=self.max_tokens, stop=("\n",))
            replies = self.chat.generate([_few_shot(REVISE_SYSTEM, _REVISE_SHOTS, r) for r in unique], config)
            answers = {r: a[0].strip() for r, a in zip(unique, replies, strict=True)}
        for ci, si, r in jobs:
            reply = answers[r]
            split[ci][si] = "" if not reply or "delete" in reply.lower() else reply.split("\n")[0].strip()
        out = []
        for sentences in split:
            kept = [s if s.endswith(".") else s + "." for s in sentences if s]
            out.append(" ".join(kept))
        return out


# ----------------------------------------------------------------------------------------------
# the pipeline
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorrectionResult:
    """One corrected caption: the revision, every decomposed proposition, its ``H(u)``, the flags."""

    caption: str
    propositions: tuple[DecomposedProposition, ...]
    scores: np.ndarray
    flagged: tuple[bool, ...] = field(default_factory=tuple)


class CapMAS:
    """Decompose -> verify in isolation -> revise (paper Sec. 3.2); ``threshold`` is pi.

    Args:
        decomposer: step 1 (an LLM in the paper).
        verifier: step 2 (an MLLM asked one proposition at a time, no caption in context).
        reviser: step 3 (an LLM).
        threshold: flag ``u`` when ``H(u) > threshold`` (the released samples use pi = 1).
        eps: clamp inside ``H``.
    """

    def __init__(
        self,
        decomposer: Decomposer,
        verifier: Verifier,
        reviser: Reviser,
        *,
        threshold: float = 1.0,
        eps: float = 1e-8,
    ) -> None:
        check_in_range("threshold", threshold, 0.0)
        self.decomposer = decomposer
        self.verifier = verifier
        self.reviser = reviser
        self.threshold = float(threshold)
        self.eps = eps

    def correct(self, images: Tensor, captions: Sequence[str]) -> list[CorrectionResult]:
        """Correct ``captions[i]`` of ``images[i]`` for every ``i``."""
        check_images(images)
        if len(captions) != images.shape[0]:
            raise ValueError(f"captions ({len(captions)}) must have one entry per image ({images.shape[0]})")
        for c in captions:
            check_str("captions[i]", c)
        props = self.decomposer.decompose(captions)
        scores = verifier_scores(
            self.verifier, images, [[p.text for p in ps] for ps in props], None, eps=self.eps
        )
        flags = [[s > self.threshold for s in sc] for sc in scores]
        to_fix = [[p for p, f in zip(ps, fl, strict=True) if f] for ps, fl in zip(props, flags, strict=True)]
        revised = self.reviser.revise(captions, to_fix)
        return [
            CorrectionResult(r, tuple(ps), sc, tuple(bool(f) for f in fl))
            for r, ps, sc, fl in zip(revised, props, scores, flags, strict=True)
        ]


def scripted_control_model() -> ScriptedChatModel:
    """A labelled control chat model (not an LLM): it answers the decomposition and revision prompts
    with the grammar rules, so the LLM path runs end to end without a model (tiny scale, tests)."""
    rule_d, rule_r = RuleDecomposer(), RuleReviser()

    def respond(messages: list[dict[str, str]], config: GenerationConfig, index: int) -> str:
        system, query = messages[0]["content"], messages[-1]["content"]
        if system == DECOMPOSE_SYSTEM:
            props = rule_d.decompose([query])[0]
            return "\n".join(f"{k + 1}. {p.text}" for k, p in enumerate(props))
        if system == REVISE_SYSTEM:
            match = re.match(r"Sentence: (.*)\nWrong facts: (.*)", query, re.S)
            if match is None:
                return "DELETE"
            sentence, facts = match.group(1), re.findall(r"[^.]+\.", match.group(2))
            flags = [DecomposedProposition(f.strip(), 0, parse_proposition(f.strip(), 0)) for f in facts]
            return rule_r.revise([sentence], [flags])[0] or "DELETE"
        return ""

    return ScriptedChatModel(respond, name="scripted-control")
