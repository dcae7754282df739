"""Configs are frozen dataclasses; ``--set key=value`` overrides are parsed and type-checked here."""

from __future__ import annotations

import ast
import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

__all__ = ["ConfigError", "apply_overrides", "parse_overrides", "config_to_dict"]

C = TypeVar("C")


class ConfigError(ValueError):
    """A malformed or ill-typed configuration override."""


def parse_overrides(pairs: Iterable[str]) -> dict[str, Any]:
    """Parse ``["lr=1e-3", "ops=('add',)"]`` into a dict; values go through ``ast.literal_eval``.

    A value that is not a Python literal is taken as a plain string (``op=mul``).
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ConfigError(f"--set expects key=value with an identifier key, got {pair!r}")
        raw = raw.strip()
        try:
            value: Any = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        out[key] = value
    return out


def _check_type(name: str, value: Any, annotation: Any) -> Any:
    """Return ``value`` coerced to ``annotation`` where that is lossless, else raise ConfigError."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for arm in args:
            try:
                return _check_type(name, value, arm)
            except ConfigError:
                continue
        raise ConfigError(f"{name}: {value!r} does not match {annotation}")
    if annotation is type(None):
        if value is None:
            return None
        raise ConfigError(f"{name}: expected None, got {value!r}")
    if origin is typing.Literal:
        if value in args:
            return value
        raise ConfigError(f"{name}: expected one of {list(args)}, got {value!r}")
    if origin is tuple:
        if isinstance(value, str):
            value = tuple(v.strip() for v in value.split(",") if v.strip())  # ops=add or ops=add,mul
        elif not isinstance(value, list | tuple):
            value = (value,)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_check_type(name, v, args[0]) for v in value)
        if args and len(args) != len(value):
            raise ConfigError(f"{name}: expected a tuple of {len(args)} items, got {value!r}")
        return (
            tuple(_check_type(name, v, a) for v, a in zip(value, args, strict=False))
            if args
            else tuple(value)
        )
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name}: expected a float, got {value!r}")
        return float(value)
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name}: expected an int, got {value!r}")
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name}: expected True or False, got {value!r}")
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: expected a string, got {value!r}")
        return value
    if isinstance(annotation, type) and not isinstance(value, annotation):
        raise ConfigError(f"{name}: expected {annotation.__name__}, got {value!r}")
    return value


def apply_overrides(config: C, overrides: Mapping[str, Any]) -> C:
    """A copy of the frozen dataclass ``config`` with ``overrides`` applied and type-checked."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError("apply_overrides expects a dataclass instance")
    hints = typing.get_type_hints(type(config))
    fields = {f.name for f in dataclasses.fields(config)}
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in fields:
            import difflib

            close = difflib.get_close_matches(key, sorted(fields), n=3)
            hint = (
                f" (did you mean {', '.join(close)}?)" if close else f" (known: {', '.join(sorted(fields))})"
            )
            raise ConfigError(f"unknown config key {key!r} for {type(config).__name__}{hint}")
        changes[key] = _check_type(key, value, hints[key])
    try:
        return dataclasses.replace(config, **changes)
    except (ValueError, TypeError) as err:  # __post_init__ validation
        raise ConfigError(str(err)) from err


def config_to_dict(config: Any) -> dict[str, Any]:
    """JSON-friendly dict of a dataclass config (tuples become lists)."""
    return dataclasses.asdict(config)
