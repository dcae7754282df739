"""Argument and config-field checks: one clear ValueError naming ``Class.field``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pytest

from icml25.core.validate import (
    check_fields,
    check_finite_tensor,
    check_in_range,
    check_non_negative,
    check_positive,
)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 10
    lr: float = 1e-3
    warmup: int = 0
    weight_decay: float = 0.0
    mix: float = 0.5
    dropout: float = 0.1

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("steps",),
            positive=("lr",),
            non_negative_int=("warmup",),
            non_negative=("weight_decay",),
            unit_interval=("mix",),
            probability=("dropout",),
        )


def test_valid_config_passes() -> None:
    TrainConfig()
    TrainConfig(steps=1, lr=np.float32(0.5), warmup=np.int64(0), mix=1.0, dropout=0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("steps", 0, "a positive integer"),
        ("steps", True, "a positive integer"),  # bool is not an int here
        ("steps", 2.0, "a positive integer"),
        ("lr", 0.0, "a finite number > 0"),
        ("lr", math.nan, "a finite number > 0"),
        ("lr", math.inf, "a finite number > 0"),
        ("lr", True, "a finite number > 0"),
        ("warmup", -1, "an integer >= 0"),
        ("warmup", False, "an integer >= 0"),
        ("weight_decay", -1e-9, "a finite number >= 0"),
        ("weight_decay", math.nan, "a finite number >= 0"),
        ("mix", 1.5, r"lie in \[0, 1\]"),
        ("mix", math.nan, r"lie in \[0, 1\]"),
        ("dropout", 1.0, r"lie in \[0, 1\)"),
        ("dropout", -0.1, r"lie in \[0, 1\)"),
    ],
)
def test_bad_field_message_names_class_field_and_value(field: str, value: object, expected: str) -> None:
    with pytest.raises(ValueError, match=rf"^TrainConfig\.{field} must (be|lie in) ") as err:
        TrainConfig(**{field: value})  # type: ignore[arg-type]
    message = str(err.value)
    assert re.search(expected, message), message
    assert message.endswith(f"got {value!r}")


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_bool_is_rejected_as_int(value: object) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        check_positive("n", value, integer=True)
    with pytest.raises(ValueError, match="integer >= 0"):
        check_non_negative("n", value, integer=True)
    with pytest.raises(ValueError, match="lie in"):
        check_in_range("n", value, 0, 1)


def test_positive_and_non_negative_bounds() -> None:
    check_positive("n", 1, integer=True)
    check_positive("n", np.int32(7), integer=True)
    check_positive("x", 1e-300)
    check_non_negative("n", 0, integer=True)
    check_non_negative("x", 0.0)
    with pytest.raises(ValueError, match="x must be a finite number > 0"):
        check_positive("x", -np.inf)


@pytest.mark.parametrize(
    "value, low_open, high_open, ok",
    [
        (0.0, False, False, True),
        (1.0, False, False, True),
        (0.0, True, False, False),
        (1.0, False, True, False),
        (0.5, True, True, True),
        (1e-12, True, True, True),
    ],
)
def test_in_range_open_and_closed_bounds(value: float, low_open: bool, high_open: bool, ok: bool) -> None:
    if ok:
        check_in_range("p", value, 0.0, 1.0, low_open=low_open, high_open=high_open)
        return
    left, right = "(" if low_open else "[", ")" if high_open else "]"
    with pytest.raises(ValueError, match=rf"^p must lie in \{left}0, 1\{right}, got {value!r}$"):
        check_in_range("p", value, 0.0, 1.0, low_open=low_open, high_open=high_open)


def test_in_range_unbounded_sides_and_nan() -> None:
    check_in_range("t", -1e9, None, 0.0)
    check_in_range("t", 1e9, 0.0, None)
    check_in_range("t", math.inf, 0.0, None)
    with pytest.raises(ValueError, match=r"t must lie in \[-inf, 0\], got nan"):
        check_in_range("t", math.nan, None, 0.0)
    with pytest.raises(ValueError, match=r"t must lie in \(0, inf\]"):
        check_in_range("t", 0, 0.0, None, low_open=True)
    with pytest.raises(ValueError, match="lie in"):
        check_in_range("t", "0.5", 0.0, 1.0)


def test_finite_tensor() -> None:
    torch = pytest.importorskip("torch")
    check_finite_tensor("x", torch.ones(2, 3), ndim=2, floating=True)
    check_finite_tensor("m", torch.empty(2, device="meta"))  # shape only: values are not checked
    with pytest.raises(ValueError, match="x contains NaN"):
        check_finite_tensor("x", torch.tensor([1.0, math.nan]))
    with pytest.raises(ValueError, match="x must have 2 dimensions, got shape"):
        check_finite_tensor("x", torch.ones(3), ndim=2)
    with pytest.raises(ValueError, match="floating-point"):
        check_finite_tensor("x", torch.ones(3, dtype=torch.long), floating=True)
    with pytest.raises(ValueError, match="x must be a torch.Tensor, got list"):
        check_finite_tensor("x", [1.0])
    with pytest.raises(ValueError, match="empty"):
        check_finite_tensor("x", torch.ones(0))
