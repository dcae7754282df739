"""Isotropic model merging (Iso-C, Iso-CTS), task arithmetic, TIES and the subspace-alignment ratio,
from *No Task Left Behind: Isotropic Model Merging with Common and Task-Specific Subspaces*
(Marczak et al., ICML 2025, arXiv 2502.04959)."""

from .merging import (
    StateDict,
    apply_merge,
    is_matrix_param,
    load_state_dict,
    mean_sar,
    merge_average,
    merge_iso_c,
    merge_iso_cts,
    merge_task_arithmetic,
    merge_ties,
    normalized_accuracy,
    subspace_alignment_ratio,
    task_vectors,
)
from .tasks import (
    TASK_NAMES,
    LabelCodec,
    TaskData,
    encode_task,
    finetune_subset,
    label_accuracy,
    make_task,
    trainable_matrix_names,
)

__all__ = [
    "TASK_NAMES",
    "LabelCodec",
    "StateDict",
    "TaskData",
    "apply_merge",
    "encode_task",
    "finetune_subset",
    "is_matrix_param",
    "label_accuracy",
    "load_state_dict",
    "make_task",
    "mean_sar",
    "merge_average",
    "merge_iso_c",
    "merge_iso_cts",
    "merge_task_arithmetic",
    "merge_ties",
    "normalized_accuracy",
    "subspace_alignment_ratio",
    "task_vectors",
    "trainable_matrix_names",
]
