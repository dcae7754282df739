"""--set overrides: parsing and type checking against frozen config dataclasses."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from icml25.core.config import ConfigError, apply_overrides, config_to_dict, parse_overrides
from icml25.core.validate import check_fields


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
    for text, want in (("false", False), ("TRUE", True), ("False", False)):  # --set center=false
        assert apply_overrides(Cfg(), parse_overrides([f"center={text}"])).center is want


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"pp": 3}, "did you mean p"),
        ({"p": 2.5}, "expected an int"),
        ({"p": True}, "expected an int"),
        ({"lr": "fast"}, "expected a float"),
        ({"kernel": "laplace"}, "expected one of"),
        ({"center": 1}, "True or False"),
        ({"center": "yes"}, "True or False"),
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


# -- nested configs: dotted keys ------------------------------------------------------------------


@dataclass(frozen=True)
class Encoder:
    depth: int = 2
    dropout: float = 0.0

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("depth",), probability=("dropout",))


@dataclass(frozen=True)
class Model:
    channels: int = 32
    kernel: Literal["gaussian", "quadratic"] = "gaussian"
    encoder: Encoder = field(default_factory=Encoder)

    def __post_init__(self) -> None:
        if self.channels % 8:
            raise ValueError("Model.channels must be a multiple of 8")


@dataclass(frozen=True)
class Outer:
    lr: float = 1e-3
    model: Model = field(default_factory=Model)
    ops: tuple[str, ...] = ("add",)
    out: Path = Path("runs")


def test_parse_dotted_keys() -> None:
    out = parse_overrides(["model.channels=64", "model.encoder.depth=3", "lr=0.1"])
    assert out == {"model.channels": 64, "model.encoder.depth": 3, "lr": 0.1}


@pytest.mark.parametrize("bad", ["model.=3", ".channels=3", "model..depth=1", "model.1x=2", "a.b c=1"])
def test_parse_rejects_malformed_dotted(bad: str) -> None:
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides([bad])


def test_dotted_override_walks_into_nested_config() -> None:
    cfg = apply_overrides(Outer(), parse_overrides(["model.channels=64"]))
    assert cfg.model.channels == 64 and cfg.model.kernel == "gaussian" and cfg.lr == 1e-3
    assert isinstance(cfg.model, Model) and cfg.model.encoder == Encoder()


def test_several_nested_overrides_combine_at_every_depth() -> None:
    overrides = parse_overrides(
        ["model.channels=16", "model.kernel=quadratic", "model.encoder.depth=4", "model.encoder.dropout=0.5"]
    )
    cfg = apply_overrides(Outer(), {**overrides, "lr": 1})
    assert cfg == Outer(
        lr=1.0, model=Model(channels=16, kernel="quadratic", encoder=Encoder(depth=4, dropout=0.5))
    )
    assert isinstance(cfg.lr, float)


def test_nested_override_leaves_original_untouched() -> None:
    cfg = Outer()
    apply_overrides(cfg, {"model.encoder.depth": 7})
    assert cfg.model.encoder.depth == 2


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"model.chanels": 64}, r"'model\.chanels'.*did you mean model\.channels"),
        ({"model.encoder.dept": 3}, r"did you mean model\.encoder\.depth"),
        ({"modle.channels": 64}, r"'modle\.channels'.*did you mean model\b"),
        ({"model.channels": 6.5}, r"model\.channels: expected an int"),
        ({"model.encoder.depth": True}, r"model\.encoder\.depth: expected an int"),
        ({"model.kernel": "laplace"}, r"model\.kernel: expected one of"),
        ({"lr.value": 1.0}, r"lr is a float, not a config"),
        ({"model": Model(), "model.channels": 8}, "both as a whole and field by field"),
    ],
)
def test_nested_override_rejects(overrides: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        apply_overrides(Outer(), overrides)


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"model.channels": 12}, r"^model: Model\.channels must be a multiple of 8"),
        ({"model.encoder.depth": 0}, r"^model\.encoder: Encoder\.depth must be a positive integer"),
        ({"model.encoder.dropout": 1.0}, r"Encoder\.dropout must lie in \[0, 1\)"),
    ],
)
def test_nested_post_init_errors_become_config_errors(overrides: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        apply_overrides(Outer(), overrides)


def test_whole_nested_config_can_still_be_replaced() -> None:
    assert apply_overrides(Outer(), {"model": Model(channels=8)}).model == Model(channels=8)
    with pytest.raises(ConfigError, match="expected Model"):
        apply_overrides(Outer(), {"model": 8})


def test_config_to_dict_is_nested_json_and_applies_back() -> None:
    cfg = Outer(model=Model(channels=16, encoder=Encoder(depth=3)), ops=("add", "mul"))
    as_dict = config_to_dict(cfg)
    assert as_dict == {
        "lr": 1e-3,
        "model": {"channels": 16, "kernel": "gaussian", "encoder": {"depth": 3, "dropout": 0.0}},
        "ops": ["add", "mul"],
        "out": "runs",
    }
    assert json.loads(json.dumps(as_dict, allow_nan=False)) == as_dict
    assert apply_overrides(Outer(), as_dict) == cfg  # a nested dict sets the nested config's fields


def test_config_to_dict_converts_numpy_and_non_finite() -> None:
    @dataclass(frozen=True)
    class Loose:
        scale: object = np.float32(0.5)
        grid: object = field(default_factory=lambda: np.arange(3))
        tol: float = math.nan

    assert config_to_dict(Loose()) == {"scale": 0.5, "grid": [0, 1, 2], "tol": None}
