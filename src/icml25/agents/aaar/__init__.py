"""AAAR-1.0 benchmark pipeline: *AAAR-1.0: Assessing AI's Potential to Assist Research* (Lou et al.,
ICML 2025, arXiv 2410.22394).

The three tasks' data schema and a loader for the released files (:mod:`.schema`), the paper's
metrics (:mod:`.metrics`), prompting and parsing for any chat model (:mod:`.prompts`), and a small
built-in synthetic set with the benchmark's trivial baselines (:mod:`.synth`).
"""

from .metrics import (
    Embedder,
    TfidfEmbedder,
    binary_prf,
    choice_accuracy,
    cosine_matrix,
    itf_idf,
    rouge_scores,
    sn_prf,
    soft_match,
    soft_prf,
)
from .prompts import (
    equation_binary_prompt,
    equation_choice_prompt,
    experiment_prompt,
    explain_experiments,
    explanation_prompt,
    parse_binary,
    parse_choice,
    parse_numbered_list,
    predict_equation_binary,
    predict_equation_choice,
    predict_experiments,
    predict_weaknesses,
    split_chunks,
    truncate_context,
    weakness_prompt,
)
from .schema import EquationInstance, ExperimentInstance, WeaknessInstance, load_records
from .synth import (
    GENERIC_EXPERIMENTS,
    GENERIC_WEAKNESSES,
    SynthBenchmark,
    SynthPaper,
    copy_input,
    make_benchmark,
    paraphrase,
)

__all__ = [
    "EquationInstance",
    "ExperimentInstance",
    "WeaknessInstance",
    "load_records",
    "Embedder",
    "TfidfEmbedder",
    "binary_prf",
    "choice_accuracy",
    "cosine_matrix",
    "soft_prf",
    "soft_match",
    "rouge_scores",
    "sn_prf",
    "itf_idf",
    "truncate_context",
    "split_chunks",
    "equation_binary_prompt",
    "equation_choice_prompt",
    "experiment_prompt",
    "explanation_prompt",
    "weakness_prompt",
    "parse_binary",
    "parse_choice",
    "parse_numbered_list",
    "predict_equation_binary",
    "predict_equation_choice",
    "predict_experiments",
    "explain_experiments",
    "predict_weaknesses",
    "SynthPaper",
    "SynthBenchmark",
    "make_benchmark",
    "GENERIC_EXPERIMENTS",
    "GENERIC_WEAKNESSES",
    "copy_input",
    "paraphrase",
]
