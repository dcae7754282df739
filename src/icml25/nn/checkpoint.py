"""Checkpoints: a module's tensors, its config and metadata in one safetensors file, written atomically.

The file is plain safetensors (https://github.com/huggingface/safetensors): no pickle, so loading a
file from elsewhere cannot run code. The config (a dataclass or a dict, stored as JSON) and string
metadata go into the safetensors header. Tied (shared) tensors are stored once and re-tied on load.
Writes go to a temporary file in the target folder that is then renamed over the target, so an
interrupted save never leaves a half-written checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from icml25.core.claims import to_jsonable

__all__ = ["Checkpoint", "save_checkpoint", "load_checkpoint"]

_CONFIG_KEY = "icml25.config"
_CLASS_KEY = "icml25.class"
_ALIAS_KEY = "icml25.aliases"
_RESERVED = (_CONFIG_KEY, _CLASS_KEY, _ALIAS_KEY)


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint file holds: ``state_dict``, the ``config`` as a dict, the module's class
    path (``"package.module:Class"``) and the remaining string ``metadata``."""

    state_dict: dict[str, Tensor]
    config: dict[str, Any] | None
    module_class: str
    metadata: dict[str, str]


def _config_dict(config: Any) -> dict[str, Any] | None:
    if config is None:
        return None
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dict(to_jsonable(dataclasses.asdict(config)))
    if isinstance(config, Mapping):
        return dict(to_jsonable(dict(config)))
    raise TypeError(f"config must be a dataclass instance, a mapping or None, got {type(config).__name__}")


def save_checkpoint(
    path: str | os.PathLike[str],
    module: nn.Module,
    *,
    config: Any = None,
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write ``module``'s state dict, ``config`` and ``metadata`` to ``path`` (atomic); return the path."""
    from safetensors.torch import save_file

    path = Path(path)
    meta = dict(metadata or {})
    for meta_key, value in meta.items():
        if meta_key in _RESERVED or not isinstance(meta_key, str) or not isinstance(value, str):
            raise ValueError(
                f"metadata must map str to str and avoid {_RESERVED}, got {meta_key!r}: {value!r}"
            )
    tensors: dict[str, Tensor] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple[int, int, tuple[int, ...], torch.dtype], str] = {}
    for name, tensor in module.state_dict().items():
        t = tensor.detach()
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.dtype)
        if t.numel() and key in seen:
            aliases[name] = seen[key]
            continue
        seen[key] = name
        tensors[name] = t.cpu().contiguous().clone()
    meta[_CLASS_KEY] = f"{type(module).__module__}:{type(module).__qualname__}"
    meta[_CONFIG_KEY] = json.dumps(_config_dict(config))
    meta[_ALIAS_KEY] = json.dumps(aliases)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata=meta)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_checkpoint(
    path: str | os.PathLike[str], module: nn.Module | None = None, *, strict: bool = True
) -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint`; with ``module``, load the tensors into it."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    state: dict[str, Tensor] = {}
    try:
        with safe_open(str(path), framework="pt") as f:  # type: ignore[no-untyped-call]
            meta = dict(f.metadata() or {})
            for key in f.keys():  # noqa: SIM118 - safe_open is not a mapping
                state[key] = f.get_tensor(key)
    except Exception as err:  # noqa: BLE001 - any parse failure is a bad file
        raise ValueError(f"{path} is not a readable safetensors checkpoint: {err}") from err
    aliases = json.loads(meta.pop(_ALIAS_KEY, "{}"))
    for name, source in aliases.items():
        state[name] = state[source]
    config = json.loads(meta.pop(_CONFIG_KEY, "null"))
    module_class = meta.pop(_CLASS_KEY, "")
    if module is not None:
        module.load_state_dict(state, strict=strict)
    return Checkpoint(state_dict=state, config=config, module_class=module_class, metadata=meta)
