"""Checkpoints: a module's tensors, its config and metadata in one safetensors file, written atomically.

The file is plain safetensors (https://github.com/huggingface/safetensors): no pickle, so loading a
file from elsewhere cannot run code. The config (a dataclass or a dict, stored as JSON) and string
metadata go into the safetensors header. Tied (shared) tensors are stored once and re-tied on load.
Writes go to a temporary file in the target folder that is then renamed over the target, so an
interrupted save never leaves a half-written checkpoint.

:class:`PretrainedMixin` gives a model the Hugging Face folder convention on top of this:
``save_pretrained(folder)`` writes ``config.json`` and one safetensors weights file,
``from_pretrained(folder)`` rebuilds the model from them, as transformers and diffusers models do.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import torch
from torch import Tensor, nn

from icml25.core.claims import to_jsonable

__all__ = ["Checkpoint", "PretrainedMixin", "save_checkpoint", "load_checkpoint"]

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


CONFIG_NAME = "config.json"
_M = TypeVar("_M", bound="PretrainedMixin")


def _write_text_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class PretrainedMixin:
    """``save_pretrained`` / ``from_pretrained`` in the Hugging Face folder layout, for an ``nn.Module``
    built as ``cls(config)`` from a dataclass config.

    A subclass sets ``config_class`` (the dataclass) and ``weights_name`` (``"model.safetensors"`` as
    transformers names it, ``"diffusion_pytorch_model.safetensors"`` for a diffusers-style model). The
    folder holds ``config.json`` (the config's fields plus ``_class_name``, as diffusers writes it) and
    the weights as plain safetensors (:func:`save_checkpoint`, so the file also loads with
    ``safetensors.torch.load_file``). Nothing is downloaded: ``from_pretrained`` reads a local folder.
    """

    config_class: ClassVar[type]
    weights_name: ClassVar[str] = "model.safetensors"
    config: Any

    def save_pretrained(self, save_directory: str | os.PathLike[str]) -> Path:
        """Write ``config.json`` and the weights into ``save_directory`` (created); return the folder."""
        if not isinstance(self, nn.Module):
            raise TypeError(f"{type(self).__name__}: PretrainedMixin needs an nn.Module")
        folder = Path(save_directory)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"save_directory: {folder} exists and is not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        save_checkpoint(folder / self.weights_name, self, config=self.config)
        fields = _config_dict(self.config) or {}
        config = {"_class_name": type(self).__name__, **fields}
        _write_text_atomic(folder / CONFIG_NAME, json.dumps(config, indent=2, sort_keys=True) + "\n")
        return folder

    @classmethod
    def from_pretrained(
        cls: type[_M],
        pretrained_model_name_or_path: str | os.PathLike[str],
        *,
        torch_dtype: torch.dtype | None = None,
        device: str | torch.device = "cpu",
    ) -> _M:
        """Rebuild a model that :meth:`save_pretrained` wrote, on ``device`` and in eval mode.

        ``torch_dtype`` casts the floating-point weights (default: the dtype they were saved in).
        """
        folder = Path(pretrained_model_name_or_path)
        if not folder.is_dir():
            raise FileNotFoundError(
                f"pretrained_model_name_or_path: no folder at {folder} (models load from a local folder "
                "written by save_pretrained; nothing is downloaded)"
            )
        config_path, weights_path = folder / CONFIG_NAME, folder / cls.weights_name
        for needed in (config_path, weights_path):
            if not needed.is_file():
                raise FileNotFoundError(
                    f"pretrained_model_name_or_path: {folder} has no {needed.name}; was it written by "
                    f"{cls.__name__}.save_pretrained?"
                )
        raw = json.loads(config_path.read_text(encoding="utf-8"))
        saved_class = raw.pop("_class_name", cls.__name__)
        if saved_class != cls.__name__:
            raise ValueError(
                f"pretrained_model_name_or_path: {folder} holds a {saved_class}, not a {cls.__name__}"
            )
        fields = {k: v for k, v in raw.items() if not k.startswith("_")}
        known = {f.name for f in dataclasses.fields(cls.config_class)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ValueError(f"{config_path}: keys {unknown} are not fields of {cls.config_class.__name__}")
        model = cls(cls.config_class(**fields))  # type: ignore[call-arg]
        if not isinstance(model, nn.Module):
            raise TypeError(f"{cls.__name__}: PretrainedMixin needs an nn.Module")
        ckpt = load_checkpoint(weights_path)
        dtype = torch_dtype
        if dtype is None:
            saved = {t.dtype for t in ckpt.state_dict.values() if t.is_floating_point()}
            dtype = saved.pop() if len(saved) == 1 else None
        if dtype is not None:
            if not dtype.is_floating_point:
                raise ValueError(f"torch_dtype must be a floating-point dtype, got {dtype}")
            model = model.to(dtype)
        model.load_state_dict(ckpt.state_dict)
        return model.to(torch.device(device)).eval()
