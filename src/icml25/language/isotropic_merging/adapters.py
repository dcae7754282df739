"""Task matrices from PEFT LoRA adapters, for merging adapters with the rules of :mod:`.merging`.

Part of our implementation of *No Task Left Behind: Isotropic Model Merging with Common and
Task-Specific Subspaces* (Marczak et al., ICML 2025, arXiv 2502.04959). The paper merges full
fine-tunes, whose task matrix is ``Δ_t = θ_t − θ_0`` (Section 3). A LoRA adapter is such a fine-tune
written in factored form: its task matrix for a weight ``W`` is ``Δ = s · B A`` with the adapter's
scale ``s = α / r`` (``α / √r`` with rsLoRA), transposed where the base layer stores ``Wᵀ``
(``fan_in_fan_out``, GPT-2's ``Conv1D``) and for embeddings, exactly what PEFT adds to ``W`` when it
merges the adapter. :func:`lora_task_vector` reads one adapter (a folder written by PEFT's
``save_pretrained`` or a ``PeftModel``); :func:`lora_task_vectors` makes the task vectors of several
adapters share one set of names (zeros where an adapter does not touch a weight), ready for
:func:`~.merging.merge_iso_c`, :func:`~.merging.merge_iso_cts` or any other rule, and for
:func:`~.merging.apply_merge` on the base model's state dict.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .merging import StateDict, load_state_dict

__all__ = ["lora_task_vector", "lora_task_vectors"]

_PREFIX = "base_model.model."
_LORA_KEY = re.compile(
    r"^(?P<module>.+)\.(?P<part>lora_A|lora_B|lora_embedding_A|lora_embedding_B)(\.weight)?$"
)


def _pattern_value(patterns: Mapping[str, Any], module: str, default: Any) -> Any:
    """PEFT's ``rank_pattern`` / ``alpha_pattern`` lookup: the first pattern matching the module
    name's end (``(.*\\.)?pattern$``)."""
    for pattern, value in patterns.items():
        if re.match(rf"(.*\.)?{pattern}$", module):
            return value
    return default


def _adapter_folder(adapter: Any, scratch: Path) -> Path:
    if isinstance(adapter, (str, Path)):
        folder = Path(adapter)
        if not (folder / "adapter_config.json").is_file():
            raise ValueError(f"adapter: {folder} is not a PEFT adapter folder (no adapter_config.json)")
        return folder
    if hasattr(adapter, "peft_config") and hasattr(adapter, "save_pretrained"):
        adapter.save_pretrained(str(scratch))  # the adapter only: its config and LoRA factors
        return scratch
    raise TypeError(f"adapter must be a PEFT adapter folder or a PeftModel, got {type(adapter).__name__}")


def lora_task_vector(adapter: str | Path | Any, *, base: StateDict | None = None) -> dict[str, Tensor]:
    """The task matrices ``Δ = s · B A`` of one LoRA adapter, keyed by the base model's names.

    Args:
        adapter: a folder written by PEFT's ``save_pretrained`` (``adapter_config.json`` plus
            ``adapter_model.safetensors``) or a ``PeftModel`` (its active adapter).
        base: the base model's state dict; needed only when the adapter also saves whole modules
            (``modules_to_save``), whose task vector is ``θ − θ_0``.

    Returns:
        ``{base parameter name: Δ (float32, the parameter's shape)}``.

    Raises:
        ValueError: not a LoRA adapter, DoRA (its update is not a fixed ``Δ``), unpaired factors, or
            saved whole modules without ``base``.
    """
    with tempfile.TemporaryDirectory() as scratch:
        folder = _adapter_folder(adapter, Path(scratch))
        config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
        if config.get("peft_type", "LORA") != "LORA":
            raise ValueError(f"adapter: {folder} is a {config.get('peft_type')} adapter, not LoRA")
        if config.get("use_dora"):
            raise ValueError("adapter: DoRA rescales the merged weight's columns; its Δ is not B A")
        weights = sorted(folder.glob("adapter_model*.safetensors")) or sorted(
            folder.glob("adapter_model*.bin")
        )
        if not weights:
            raise ValueError(f"adapter: {folder} holds no adapter_model.safetensors or adapter_model.bin")
        state: dict[str, Tensor] = {}
        for f in weights:
            state.update(load_state_dict(f))
    r, alpha = int(config["r"]), float(config["lora_alpha"])
    rank_pattern, alpha_pattern = config.get("rank_pattern") or {}, config.get("alpha_pattern") or {}
    factors: dict[str, dict[str, Tensor]] = {}
    whole: dict[str, Tensor] = {}
    for key, tensor in state.items():
        name = key[len(_PREFIX) :] if key.startswith(_PREFIX) else key
        match = _LORA_KEY.match(name)
        if match:
            factors.setdefault(match["module"], {})[match["part"]] = tensor.float()
        elif ".base_layer." in name:
            continue  # a frozen base weight PEFT saves beside embedding factors: no change, Δ = 0
        else:
            whole[name.replace(".modules_to_save.default", "").replace(".modules_to_save", "")] = tensor
    deltas: dict[str, Tensor] = {}
    for module, parts in factors.items():
        rank = int(_pattern_value(rank_pattern, module, r))
        scale_alpha = float(_pattern_value(alpha_pattern, module, alpha))
        scale = scale_alpha / (math.sqrt(rank) if config.get("use_rslora") else rank)
        if {"lora_A", "lora_B"} <= parts.keys():
            delta = parts["lora_B"] @ parts["lora_A"]  # (out, r) @ (r, in)
            if config.get("fan_in_fan_out"):
                delta = delta.T
        elif {"lora_embedding_A", "lora_embedding_B"} <= parts.keys():
            delta = (parts["lora_embedding_B"] @ parts["lora_embedding_A"]).T  # (vocab, dim)
        else:
            raise ValueError(f"adapter: module {module!r} has an unpaired LoRA factor ({sorted(parts)})")
        deltas[f"{module}.weight"] = delta * scale
    if whole:
        if base is None:
            raise ValueError(
                f"adapter saves whole modules ({sorted(whole)[:3]} ...): pass base= to take their "
                "task vectors θ − θ_0"
            )
        for name, tensor in whole.items():
            if name not in base:
                raise ValueError(f"adapter: saved module weight {name!r} is not in base")
            deltas[name] = tensor.float() - base[name].float()
    if not deltas:
        raise ValueError("adapter: no LoRA factors found")
    return deltas


def lora_task_vectors(
    adapters: Sequence[str | Path | Any], *, base: StateDict | None = None
) -> list[dict[str, Tensor]]:
    """:func:`lora_task_vector` of each adapter, over the union of their weights (zeros where an
    adapter leaves a weight alone), so every merge rule sees one set of names."""
    if isinstance(adapters, (str, Path)) or not isinstance(adapters, Sequence) or not adapters:
        raise ValueError("adapters must be a non-empty sequence of adapter folders or PeftModels")
    vectors = [lora_task_vector(a, base=base) for a in adapters]
    shapes: dict[str, torch.Size] = {}
    for i, tv in enumerate(vectors):
        for name, delta in tv.items():
            if shapes.setdefault(name, delta.shape) != delta.shape:
                raise ValueError(
                    f"adapters[{i}][{name!r}] has shape {tuple(delta.shape)}, another {shapes[name]}"
                )
    return [
        {name: tv.get(name, torch.zeros(shape)) for name, shape in sorted(shapes.items())} for tv in vectors
    ]
