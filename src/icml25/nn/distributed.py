"""Which process am I, and the Hugging Face ``accelerate`` handle when training runs on several.

``accelerate launch --num_processes N ...`` (or ``torchrun``) starts N copies of a command with
``RANK``/``WORLD_SIZE`` in their environment. :func:`get_accelerator` returns one shared
``accelerate.Accelerator`` in such a process (also for a single process that asks for mixed
precision through ``ACCELERATE_MIXED_PRECISION``, or with ``ICML25_ACCELERATE=1``), and None
otherwise, so plain runs never import ``accelerate``. :func:`is_main_process` decides who writes
results, checkpoints and figures.
"""

from __future__ import annotations

import atexit
import os
from typing import Any

from torch import nn

__all__ = ["world_size", "process_index", "is_main_process", "get_accelerator", "unwrap", "shutdown"]

_ACCELERATOR: Any | None = None


def world_size() -> int:
    """Number of processes of this launch (1 when not launched by accelerate/torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def process_index() -> int:
    """Global rank of this process (0 when not launched)."""
    return int(os.environ.get("RANK", "0"))


def is_main_process() -> bool:
    """True for the process that writes (rank 0)."""
    return process_index() == 0


def _wants_accelerator() -> bool:
    if world_size() > 1 or os.environ.get("ICML25_ACCELERATE", "") == "1":
        return True
    return os.environ.get("ACCELERATE_MIXED_PRECISION", "no") in ("fp16", "bf16", "fp8")


def get_accelerator() -> Any | None:
    """The process-wide ``accelerate.Accelerator`` when this run is distributed (see module doc), else None.

    Unused parameters are tolerated (``find_unused_parameters=True``): several models here have
    branches (class embeddings, guidance) that a given batch does not touch.
    """
    global _ACCELERATOR
    if not _wants_accelerator():
        return None
    if _ACCELERATOR is None:
        if world_size() > 1:
            import torch

            if not torch.cuda.is_available():  # several CPU processes: gloo, MULTI_CPU
                os.environ.setdefault("ACCELERATE_USE_CPU", "true")
        try:
            from accelerate import Accelerator
            from accelerate.utils import DistributedDataParallelKwargs
        except ImportError as err:  # pragma: no cover - accelerate is a declared dependency
            raise RuntimeError(
                "this process was launched for distributed training but `accelerate` is not installed "
                "(pip install accelerate)"
            ) from err
        _ACCELERATOR = Accelerator(
            kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)]
        )
        atexit.register(shutdown)
    return _ACCELERATOR


def shutdown() -> None:
    """Tear the process group down before the interpreter exits (registered with ``atexit``).

    Without it a gloo process group's worker threads are still joinable when the C++ runtime
    destroys them at exit, and the process dies with ``terminate called without an active
    exception`` (SIGABRT) after its work is done; under CPU load this happened in about
    four launches in ten. Safe to call twice and in a process that never joined a group.
    """
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


_WRAPPERS = ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel")


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside a DDP / accelerate wrapper (the module itself otherwise)."""
    while type(model).__name__ in _WRAPPERS:
        inner = getattr(model, "module", None)
        if not isinstance(inner, nn.Module):
            break
        model = inner
    return model
