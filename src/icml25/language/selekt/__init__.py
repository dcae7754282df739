"""SeleKT sparse adaptation and a verified code-edit data pipeline, from *Robust Learning of
Diverse Code Edits* (Aggarwal et al., ICML 2025, arXiv 2503.03656)."""

from .data import (
    DEFAULT_MODULES,
    EDIT_CATEGORIES,
    INSTRUCTION_STYLES,
    CodeEditSample,
    SeedFunction,
    build_edit_dataset,
    edit_messages,
    edit_success,
    edit_success_many,
    edit_target,
    extract_function,
    find_seed_functions,
    generate_tests,
    llm_instruction,
    make_seed_functions,
    mutate_bug,
    rename_variables,
    run_tests,
    template_instruction,
)
from .finetune import ChatCodec, FinetuneConfig, FinetuneResult, completion_loss, encode_pairs, finetune
from .generation import greedy_generate
from .precision import choose_precision
from .projection import SeleKT, changed_fraction, snapshot_base, sparse_project_, topk_mask

__all__ = [
    "choose_precision",
    "DEFAULT_MODULES",
    "EDIT_CATEGORIES",
    "INSTRUCTION_STYLES",
    "ChatCodec",
    "CodeEditSample",
    "FinetuneConfig",
    "FinetuneResult",
    "SeedFunction",
    "SeleKT",
    "build_edit_dataset",
    "changed_fraction",
    "completion_loss",
    "edit_messages",
    "edit_success",
    "edit_success_many",
    "edit_target",
    "encode_pairs",
    "extract_function",
    "find_seed_functions",
    "finetune",
    "generate_tests",
    "greedy_generate",
    "llm_instruction",
    "make_seed_functions",
    "mutate_bug",
    "rename_variables",
    "run_tests",
    "snapshot_base",
    "sparse_project_",
    "template_instruction",
    "topk_mask",
]
