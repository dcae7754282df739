"""--set overrides: parsing and type checking against frozen config dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

from icml25.core.config import ConfigError, apply_overrides, parse_overrides


@dataclass(frozen=True)
class Cfg:
    p: int = 61
    lr: float = 1e-3
    ops: tuple[str, ...] = ("add", "mul")
    kernel: Literal["gaussian", "quadratic"] = "gaussian"
    width: int | None = None
    center: bool = True

    def __post_init__(self) -> None:
        if self.p < 2:
            raise ValueError("p must be >= 2")


def test_parse_literals_and_strings() -> None:
    out = parse_overrides(["p=41", "lr=1e-2", "ops=('mul',)", "kernel=quadratic", "center=False"])
    assert out == {"p": 41, "lr": 0.01, "ops": ("mul",), "kernel": "quadratic", "center": False}


@pytest.mark.parametrize("bad", ["p", "=3", "1x=3", "a b=1"])
def test_parse_rejects_malformed(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_overrides([bad])


def test_apply_coerces_losslessly() -> None:
    cfg = apply_overrides(Cfg(), {"lr": 1, "ops": "mul", "width": 8})
    assert cfg.lr == 1.0 and isinstance(cfg.lr, float) and cfg.ops == ("mul",) and cfg.width == 8
    assert apply_overrides(Cfg(), {"width": None}).width is None
    assert apply_overrides(Cfg(), parse_overrides(["ops=add,mul"])).ops == ("add", "mul")


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"pp": 3}, "did you mean p"),
        ({"p": 2.5}, "expected an int"),
        ({"p": True}, "expected an int"),
        ({"lr": "fast"}, "expected a float"),
        ({"kernel": "laplace"}, "expected one of"),
        ({"center": 1}, "True or False"),
        ({"ops": (1, 2)}, "expected a string"),
        ({"p": 1}, "p must be"),
    ],
)
def test_apply_rejects(overrides: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        apply_overrides(Cfg(), overrides)


def test_apply_leaves_original_untouched() -> None:
    cfg = Cfg()
    apply_overrides(cfg, {"p": 5})
    assert cfg.p == 61
