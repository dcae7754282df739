"""Merges described the way mergekit describes them: a YAML recipe with ``merge_method``,
``base_model``, ``models`` and ``parameters``.

Part of our implementation of *No Task Left Behind: Isotropic Model Merging with Common and
Task-Specific Subspaces* (Marczak et al., ICML 2025, arXiv 2502.04959). mergekit's merge methods run
inside its own tensor-graph engine; rather than register Iso-C / Iso-CTS there, a recipe with the
same fields runs our merges (``icml25 merge RECIPE OUT`` writes the merged model folder)::

    merge_method: iso_cts          # iso_c | iso_cts | tsv_m | ties | task_arithmetic | average
    base_model: ./smollm2-135m     # a model folder or weights file
    models:                        # full fine-tunes, or PEFT LoRA adapter folders
      - model: ./ft-math
      - model: ./lora-code
    parameters:
      alpha: 1.0                   # the merged model is base + alpha * merged task matrix (Sec. 3)
      common_space_fraction: 0.8   # iso_cts only; ties takes density
    dtype: float32                 # of the written weights (default: the base model's)

Each fine-tune's task vector is ``θ_t − θ_0`` (:func:`~.merging.task_vectors`); each adapter's is
``s · B A`` (:func:`~.adapters.lora_task_vector`), zero on the weights it leaves alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .adapters import lora_task_vector
from .merging import (
    StateDict,
    apply_merge,
    load_state_dict,
    merge_average,
    merge_iso_c,
    merge_iso_cts,
    merge_task_arithmetic,
    merge_ties,
    merge_tsv_m,
    task_vectors,
)

__all__ = ["MERGE_METHODS", "MergeRecipe", "parse_recipe", "run_recipe"]

#: merge_method -> (merge function, the parameters it takes besides alpha)
MERGE_METHODS: dict[str, tuple[Callable[..., dict[str, Tensor]], tuple[str, ...]]] = {
    "iso_c": (merge_iso_c, ()),
    "iso_cts": (merge_iso_cts, ("common_space_fraction",)),
    "tsv_m": (merge_tsv_m, ()),
    "ties": (merge_ties, ("density", "trim_scope")),
    "task_arithmetic": (merge_task_arithmetic, ()),
    "average": (merge_average, ()),
}
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class MergeRecipe:
    """One merge: ``base_model + alpha · merge_method(task vectors of models)``."""

    merge_method: str
    base_model: str
    models: tuple[str, ...]
    alpha: float = 1.0
    parameters: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.merge_method not in MERGE_METHODS:
            raise ValueError(
                f"merge_method must be one of {sorted(MERGE_METHODS)}, got {self.merge_method!r}"
            )
        if not self.models:
            raise ValueError("models must list at least one model or adapter")
        allowed = MERGE_METHODS[self.merge_method][1]
        unknown = sorted(set(self.parameters) - set(allowed))
        if unknown:
            raise ValueError(
                f"parameters {unknown} do not apply to {self.merge_method} (it takes alpha"
                + (f" and {', '.join(allowed)})" if allowed else ")")
            )
        if self.dtype is not None and self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}")


def _model_path(entry: Any, where: str) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, Mapping) and isinstance(entry.get("model"), str):
        return str(entry["model"])
    raise ValueError(f"{where} must be a path or a mapping with a 'model' path, got {entry!r}")


def parse_recipe(text: str, *, relative_to: str | Path | None = None) -> MergeRecipe:
    """A :class:`MergeRecipe` from YAML text (mergekit's field names); paths that are relative are
    taken from ``relative_to`` (the recipe's folder) when given."""
    import yaml

    data = yaml.safe_load(text)
    if not isinstance(data, Mapping):
        raise ValueError("recipe must be a YAML mapping with merge_method, base_model and models")
    missing = [k for k in ("merge_method", "base_model", "models") if k not in data]
    if missing:
        raise ValueError(f"recipe lacks {missing}")
    unknown = sorted(set(data) - {"merge_method", "base_model", "models", "parameters", "dtype"})
    if unknown:
        raise ValueError(f"recipe has unknown fields {unknown}")
    if not isinstance(data["models"], list):
        raise ValueError("models must be a list of {model: PATH} entries")

    def resolve(path: str) -> str:
        p = Path(path).expanduser()
        return str(p if p.is_absolute() or relative_to is None else Path(relative_to) / p)

    params = dict(data.get("parameters") or {})
    alpha = params.pop("alpha", params.pop("scaling", 1.0))
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise ValueError(f"parameters.alpha must be a number, got {alpha!r}")
    return MergeRecipe(
        merge_method=str(data["merge_method"]),
        base_model=resolve(_model_path(data["base_model"], "base_model")),
        models=tuple(resolve(_model_path(m, f"models[{i}]")) for i, m in enumerate(data["models"])),
        alpha=float(alpha),
        parameters=params,
        dtype=data.get("dtype"),
    )


def _is_adapter(path: str) -> bool:
    return (Path(path) / "adapter_config.json").is_file()


def run_recipe(recipe: MergeRecipe, *, base: StateDict | None = None) -> dict[str, Tensor]:
    """The merged model's state dict: ``θ_0 + α · merge(Δ_1, …, Δ_T)`` over the base model's names."""
    theta0 = dict(base) if base is not None else load_state_dict(recipe.base_model)
    vectors: list[dict[str, Tensor]] = []
    full = [m for m in recipe.models if not _is_adapter(m)]
    full_vectors = iter(task_vectors(theta0, full)) if full else iter(())
    for model in recipe.models:
        vectors.append(lora_task_vector(model, base=theta0) if _is_adapter(model) else next(full_vectors))
    names = sorted({name for tv in vectors for name in tv})
    for name in names:
        if name not in theta0:
            raise ValueError(f"a task vector changes {name!r}, which base_model does not have")
    vectors = [{n: tv.get(n, torch.zeros(theta0[n].shape)) for n in names} for tv in vectors]
    merge, _ = MERGE_METHODS[recipe.merge_method]
    merged = apply_merge(theta0, merge(vectors, **recipe.parameters), recipe.alpha)
    if recipe.dtype is not None:
        dtype = _DTYPES[recipe.dtype]
        merged = {k: v.to(dtype) if v.is_floating_point() else v for k, v in merged.items()}
    return merged
