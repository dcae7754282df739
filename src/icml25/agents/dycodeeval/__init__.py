"""DyCodeEval: Dynamic Benchmarking of Reasoning Capabilities in Code Large Language Models Under
Data Contamination (Chen et al., ICML 2025, https://arxiv.org/abs/2503.04149;
code: https://github.com/SeekingDream/DyCodeEval).

Static code benchmarks leak into training data, so a high Pass@1 can reflect memorisation. DyCodeEval
rewrites each seed problem into semantically equivalent variants: the signature, the examples and
the tests stay, the narrative moves to a new real-world scenario. Four LLM roles (scenario proposer,
context generator, problem rewriter, validator) produce and filter the variants; the original tests
remain the oracle. DyPass@K spreads K attempts over K distinct variants.

Implements: the data model and ``_utils.py`` helpers (``task``), the four roles and the pipeline
with LLM and execution validation (``roles``), dynamic Pass@1, DyPass@K, grouped pass@k, stability
and BLEU / TF-IDF diversity (``metrics``), the code-model evaluation, simulated contamination by
LoRA fine-tuning (``peft``) and a labelled template control (``evaluate``). Not implemented: the
18-model study, MBPP (no offline copy).
"""

from __future__ import annotations

from .evaluate import TEMPLATE_SCENARIOS, code_prompt, contaminate, solve_and_judge, template_role_model
from .metrics import (
    char_mutation,
    dynamic_pass_at_1,
    dypass_at_k,
    external_diversity,
    grouped_pass_at_k,
    internal_diversity,
    sentence_bleu,
    stability,
    tfidf_cosine,
)
from .roles import (
    ContextGenerator,
    DyCodeEvalConfig,
    DyCodeEvalGenerator,
    ExecutionValidator,
    GenerationReport,
    LLMValidator,
    ProblemRewriter,
    ScenarioProposer,
    VariantRecord,
    summarize,
)
from .task import (
    CodeTask,
    extract_function_params,
    extract_tag,
    function_signature,
    infer_detailed_types,
    literal_call_inputs,
    normalize_scenario,
    replace_docstring,
    split_docstring,
)

__all__ = [
    "CodeTask",
    "ContextGenerator",
    "DyCodeEvalConfig",
    "DyCodeEvalGenerator",
    "ExecutionValidator",
    "GenerationReport",
    "LLMValidator",
    "ProblemRewriter",
    "ScenarioProposer",
    "TEMPLATE_SCENARIOS",
    "VariantRecord",
    "char_mutation",
    "code_prompt",
    "contaminate",
    "dynamic_pass_at_1",
    "dypass_at_k",
    "external_diversity",
    "extract_function_params",
    "extract_tag",
    "function_signature",
    "grouped_pass_at_k",
    "infer_detailed_types",
    "internal_diversity",
    "literal_call_inputs",
    "normalize_scenario",
    "replace_docstring",
    "sentence_bleu",
    "solve_and_judge",
    "split_docstring",
    "stability",
    "summarize",
    "template_role_model",
    "tfidf_cosine",
]
