"""Toward Robust Hyper-Detailed Image Captioning: A Multiagent Approach and Dual Evaluation Metrics
for Factuality and Coverage (CapMAS; Lee et al., ICML 2025, https://arxiv.org/abs/2412.15484;
evaluation code: https://github.com/adobe-research/CapMAS).

CapMAS corrects hyper-detailed captions without training: an LLM decomposes the caption into atomic
propositions, an MLLM verifies each proposition *in isolation* against the image (True/False, score
``H(u) = -log(max(p(T) - p(F), eps))``, flagged when ``H(u) > pi``), and the LLM rewrites the caption
without the flagged content. The paper also scores captions by factuality (precision of atomic
propositions) and coverage (multiple-choice questions answered from the caption alone).

Implements: the pipeline over any chat LLM and any True/False verifier (``agents``: decomposer,
verifier scoring, reviser, the released evaluator's list parser, and the confidence / consistency /
isolation detectors of the motivation study); a shape world with skewed priors, exact propositions,
factuality, coverage and hallucination injection (``world``); the small captioner and VQA verifier
trained here in place of the MLLMs (``models``).
"""

from __future__ import annotations

from .agents import (
    DECOMPOSE_SYSTEM,
    REVISE_SYSTEM,
    CapMAS,
    CorrectionResult,
    DecomposedProposition,
    Decomposer,
    HFVLMVerifier,
    LLMDecomposer,
    LLMReviser,
    Reviser,
    RuleDecomposer,
    RuleReviser,
    TinyVQAVerifier,
    Verifier,
    confidence_scores,
    consistency_scores,
    detection_auroc,
    hallucination_score,
    parse_numbered_list,
    scripted_control_model,
    verifier_scores,
)
from .models import (
    CellEncoder,
    CellProbe,
    ModelConfig,
    TinyCaptioner,
    TinyVQA,
    cell_targets,
    pretrain_encoder,
    train_captioner,
    train_vqa,
    vqa_examples,
)
from .world import (
    KINDS,
    MCQ,
    TYPICAL_COLOUR,
    Proposition,
    WordVocab,
    WorldConfig,
    caption_of,
    coverage,
    factuality,
    inject_hallucinations,
    make_mcqs,
    parse_caption,
    parse_proposition,
    parse_sentence,
    perturb_proposition,
    proposition_text,
    proposition_true,
    read_caption,
    sample_scene,
    split_sentences,
)

__all__ = [
    "DECOMPOSE_SYSTEM",
    "REVISE_SYSTEM",
    "CapMAS",
    "CorrectionResult",
    "DecomposedProposition",
    "Decomposer",
    "HFVLMVerifier",
    "LLMDecomposer",
    "LLMReviser",
    "Reviser",
    "RuleDecomposer",
    "RuleReviser",
    "TinyVQAVerifier",
    "Verifier",
    "confidence_scores",
    "consistency_scores",
    "detection_auroc",
    "hallucination_score",
    "parse_numbered_list",
    "scripted_control_model",
    "verifier_scores",
    "CellEncoder",
    "CellProbe",
    "ModelConfig",
    "TinyCaptioner",
    "TinyVQA",
    "cell_targets",
    "pretrain_encoder",
    "train_captioner",
    "train_vqa",
    "vqa_examples",
    "KINDS",
    "MCQ",
    "TYPICAL_COLOUR",
    "Proposition",
    "WordVocab",
    "WorldConfig",
    "caption_of",
    "coverage",
    "factuality",
    "inject_hallucinations",
    "make_mcqs",
    "parse_caption",
    "parse_proposition",
    "parse_sentence",
    "perturb_proposition",
    "proposition_text",
    "proposition_true",
    "read_caption",
    "sample_scene",
    "split_sentences",
]
