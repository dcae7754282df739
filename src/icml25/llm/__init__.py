"""Language-model access: the ``ChatModel`` interface, its backends, a response cache, a code sandbox.

The loaders are importable from here (``from icml25.llm import load_causal_lm, load_chat_model``);
they are resolved lazily (PEP 562), so ``import icml25.llm.sandbox`` still imports neither torch
nor transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ChatModel",
    "load_causal_lm",
    "load_chat_model",
    "resolve_model_path",
    "tiny_random_chat_model",
    "tiny_random_llama",
]

_LAZY = {
    "ChatModel": "icml25.llm.chat",
    "load_causal_lm": "icml25.llm.models",
    "load_chat_model": "icml25.llm.models",
    "resolve_model_path": "icml25.llm.models",
    "tiny_random_chat_model": "icml25.llm.models",
    "tiny_random_llama": "icml25.llm.models",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'icml25.llm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
