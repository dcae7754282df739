"""Argument and config-field checks that fail with one clear sentence naming the culprit.

Config dataclasses call :func:`check_fields` from ``__post_init__`` instead of hand-written loops;
library functions call :func:`check_positive` / :func:`check_in_range` on their arguments. Every
error is a ``ValueError`` whose message starts with the qualified name (``TrainConfig.steps``),
says what was expected and what was given.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

__all__ = ["check_positive", "check_non_negative", "check_in_range", "check_fields", "check_finite_tensor"]


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_positive(name: str, value: Any, *, integer: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite number > 0 (an int if ``integer``)."""
    if integer:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
        return
    if not _is_real(value) or not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def check_non_negative(name: str, value: Any, *, integer: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite number >= 0 (an int if ``integer``)."""
    if integer:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        return
    if not _is_real(value) or not math.isfinite(float(value)) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def check_in_range(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """Raise ``ValueError`` unless ``low <= value <= high`` (strict where ``*_open``); None = unbounded."""
    ok = _is_real(value) and not math.isnan(float(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must lie in {left}{lo}, {hi}{right}, got {value!r}")


def check_fields(
    obj: Any,
    *,
    positive: Iterable[str] = (),
    positive_int: Iterable[str] = (),
    non_negative: Iterable[str] = (),
    non_negative_int: Iterable[str] = (),
    unit_interval: Iterable[str] = (),
    probability: Iterable[str] = (),
) -> None:
    """Validate dataclass fields by kind; the message names ``Class.field``.

    ``unit_interval`` fields must lie in [0, 1]; ``probability`` fields in [0, 1).
    """
    owner = type(obj).__name__
    for field in positive_int:
        check_positive(f"{owner}.{field}", getattr(obj, field), integer=True)
    for field in positive:
        check_positive(f"{owner}.{field}", getattr(obj, field))
    for field in non_negative_int:
        check_non_negative(f"{owner}.{field}", getattr(obj, field), integer=True)
    for field in non_negative:
        check_non_negative(f"{owner}.{field}", getattr(obj, field))
    for field in unit_interval:
        check_in_range(f"{owner}.{field}", getattr(obj, field), 0.0, 1.0)
    for field in probability:
        check_in_range(f"{owner}.{field}", getattr(obj, field), 0.0, 1.0, high_open=True)


def check_finite_tensor(name: str, x: Any, *, ndim: int | None = None, floating: bool = False) -> None:
    """Raise ``ValueError`` unless ``x`` is a tensor (of ``ndim`` dims) without NaN/inf.

    Meta tensors (shape-only) skip the value check.
    """
    import torch

    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}")
    if floating and not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if x.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)})")
    if x.device.type != "meta" and (x.is_floating_point() or x.is_complex()) and not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinite values")
