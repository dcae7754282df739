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

__all__ = [
    "check_positive",
    "check_non_negative",
    "check_in_range",
    "check_fields",
    "check_finite_tensor",
    "check_numeric_array",
    "check_float_convertible",
    "check_finite_array",
    "check_tensor_dtype",
    "check_str",
]


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


def check_numeric_array(name: str, x: Any) -> Any:
    """``np.asarray(x)``; raise ``TypeError`` unless its dtype is bool, integer or floating.

    Strings, objects and complex numbers are refused here, naming ``name``, instead of failing deep
    inside numpy or torch (tensors are accepted as they are).
    """
    import numpy as np

    try:
        import torch

        if isinstance(x, torch.Tensor):
            if x.is_complex():
                raise TypeError(f"{name} must hold real numbers, got {x.dtype}")
            return x
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as err:
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__} ({err})") from err
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a numeric array (bool, int or float), got dtype {arr.dtype}")
    return arr


def check_float_convertible(name: str, x: Any) -> None:
    """Raise (``TypeError``/``ValueError``, as numpy would, but naming ``name``) if a string or object
    array ``x`` cannot be read as floats; other dtypes pass (scikit-learn's own checks handle them)."""
    import numpy as np

    arr = x if hasattr(x, "dtype") else None
    if arr is None:
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as err:
            raise type(err)(f"{name} must be a numeric array: {err}") from err
    if getattr(arr.dtype, "kind", "f") in "OUS":
        try:
            np.asarray(arr, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise type(err)(f"{name} must be a numeric array: {err}") from err


def check_finite_array(name: str, x: Any, *, ndim: int | None = None, nonempty: bool = True) -> None:
    """Raise ``ValueError`` unless the numeric array ``x`` has ``ndim`` dims, is non-empty and finite."""
    import numpy as np

    arr = check_numeric_array(name, x)
    shape = tuple(arr.shape)
    if ndim is not None and len(shape) != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {shape}")
    if nonempty and int(np.prod(shape)) == 0:
        raise ValueError(f"{name} is empty (shape {shape})")
    finite = (
        bool(np.isfinite(np.asarray(arr, dtype=np.float64)).all()) if not hasattr(arr, "detach") else None
    )
    if finite is None:
        import torch

        finite = arr.device.type == "meta" or not arr.is_floating_point() or bool(torch.isfinite(arr).all())
    if not finite:
        raise ValueError(f"{name} contains NaN or infinite values")


def check_tensor_dtype(name: str, x: Any, dtype: Any) -> None:
    """Raise ``TypeError`` unless ``x`` is a tensor of ``dtype`` (e.g. the model's parameter dtype)."""
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(
            f"{name} must have dtype {dtype} (the model's), got {x.dtype}; convert it with .to({dtype})"
        )


def check_str(name: str, value: Any) -> None:
    """Raise ``TypeError`` unless ``value`` is a ``str``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
