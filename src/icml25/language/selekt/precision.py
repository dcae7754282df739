"""Which precision SeleKT's fine-tuning and generation run in: bfloat16 autocast only where the
processor runs bfloat16 natively.

Part of our implementation of *Robust Learning of Diverse Code Edits* (Aggarwal et al., ICML 2025,
arXiv 2503.03656). The paper trains in bf16. On a CPU without bfloat16 instructions (AVX2 only)
torch emulates a bfloat16 matmul, which runs far slower than float32 (measured here with oneDNN
held to AVX2: 0.5 GFLOP/s against 47 GFLOP/s on one thread; one SmolLM2 training step 236 s
against 9 s), so ``"auto"`` picks float32 there and bfloat16 where the processor has it:

* on a CUDA device: bf16 where ``torch.cuda.is_bf16_supported()``, else fp32;
* on a CPU: bf16 where its feature flags (``/proc/cpuinfo``) list ``amx_bf16`` or ``avx512_bf16``
  (x86) or ``bf16`` (Arm), else fp32; where the flags cannot be read (not Linux), a short matmul
  measurement decides (:func:`icml25.core.runtime.resolve_precision`: bf16 if a bfloat16 matmul
  runs faster than a float32 one).

:func:`choose_precision` returns the choice and the reason, which the claim check stores with its
result.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from icml25.core.runtime import cpu_flags  # re-exported: the shared /proc/cpuinfo reader

__all__ = ["NATIVE_BF16_FLAGS", "choose_precision", "cpu_flags"]

NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16", "bf16")  # x86 AMX, x86 AVX512-BF16, Arm BF16


def _measured() -> str:
    from icml25.core.runtime import resolve_precision

    return resolve_precision("auto")


def choose_precision(
    requested: str,
    device: str | torch.device = "cpu",
    *,
    flags: Callable[[], frozenset[str] | None] | None = None,
    cuda_bf16: Callable[[], bool] | None = None,
    measure: Callable[[], str] | None = None,
) -> tuple[str, str]:
    """``(precision, reason)``: ``"fp32"`` or ``"bf16"`` for ``requested`` on ``device``.

    ``"fp32"``/``"bf16"`` are returned as given; ``"auto"`` picks bf16 only where ``device`` runs
    bfloat16 natively (see the module docstring). ``flags``, ``cuda_bf16`` and ``measure`` are the
    probes (default: :func:`cpu_flags`, ``torch.cuda.is_bf16_supported`` and the matmul
    measurement; replaceable, e.g. in tests).
    """
    if requested in ("fp32", "bf16"):
        return requested, "set in the config"
    if requested != "auto":
        raise ValueError(f"precision must be 'auto', 'fp32' or 'bf16', got {requested!r}")
    dev = torch.device(device)
    if dev.type == "cuda":
        supported = (cuda_bf16 or torch.cuda.is_bf16_supported)()
        if supported:
            return "bf16", "auto: the CUDA device supports bfloat16"
        return "fp32", "auto: the CUDA device has no bfloat16 support"
    if dev.type != "cpu":
        return "fp32", f"auto: no bfloat16 rule for device type {dev.type!r}"
    capability = torch.backends.cpu.get_cpu_capability()
    found = (flags or cpu_flags)()
    if found is None:
        chosen = (measure or _measured)()
        faster = "faster" if chosen == "bf16" else "slower"
        return (
            chosen,
            f"auto: CPU flags unreadable ({capability}); a bfloat16 matmul measured {faster} than float32",
        )
    native = [f for f in NATIVE_BF16_FLAGS if f in found]
    if native:
        return "bf16", f"auto: the CPU runs bfloat16 natively ({', '.join(native)}; {capability})"
    return "fp32", f"auto: the CPU has no native bfloat16 ({capability}; emulated bfloat16 is far slower)"
