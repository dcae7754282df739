"""Configs are frozen dataclasses; ``--set key=value`` overrides are parsed and type-checked here.

A key may be dotted (``model.channels=64``, ``model.encoder.depth=3``): it walks into fields that
are themselves dataclass instances, overrides the innermost field, and rebuilds every parent with
:func:`dataclasses.replace`, so each level's ``__post_init__`` validation runs again.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any, TypeVar

from icml25.core.claims import to_jsonable

__all__ = ["ConfigError", "apply_overrides", "parse_overrides", "config_to_dict"]

C = TypeVar("C")


class ConfigError(ValueError):
    """A malformed or ill-typed configuration override."""


def parse_overrides(pairs: Iterable[str]) -> dict[str, Any]:
    """Parse ``["lr=1e-3", "ops=('add',)", "model.width=64"]`` into a dict of (dotted) keys.

    Values go through ``ast.literal_eval``; a value that is not a Python literal is taken as a
    plain string (``op=mul``). Keys are identifiers, or identifiers joined by dots for fields of
    nested config dataclasses.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not all(part.isidentifier() for part in key.split(".")):
            raise ConfigError(
                f"--set expects key=value with an identifier (or dotted identifiers) as key, got {pair!r}"
            )
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
        if isinstance(value, str) and value.lower() in ("true", "false"):  # --set flag=true
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise ConfigError(f"{name}: expected True or False, got {value!r}")
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: expected a string, got {value!r}")
        return value
    if isinstance(annotation, type) and issubclass(annotation, PurePath) and isinstance(value, str):
        return annotation(value)  # paths are stored as strings
    if isinstance(annotation, type) and not isinstance(value, annotation):
        raise ConfigError(f"{name}: expected {annotation.__name__}, got {value!r}")
    return value


def _unknown_key(path: str, key: str, config: Any, fields: Iterable[str]) -> ConfigError:
    """The error for ``key`` (relative to ``path``), whose first part ``config`` lacks.

    Close matches are spelled as full dotted paths, so they can be pasted back into ``--set``.
    """
    head = key.partition(".")[0]
    full = [f"{path}{f}" for f in sorted(fields)]
    close = difflib.get_close_matches(path + head, full, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else f" (known: {', '.join(full)})"
    return ConfigError(f"unknown config key {path + key!r} for {type(config).__name__}{hint}")


def _apply(config: Any, overrides: Mapping[str, Any], path: str) -> Any:
    """``config`` with (dotted) ``overrides`` applied; ``path`` (``"model."``) prefixes messages."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError("apply_overrides expects a dataclass instance")
    hints = typing.get_type_hints(type(config))
    fields = {f.name for f in dataclasses.fields(config)}
    direct: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in overrides.items():
        head, dot, rest = key.partition(".")
        if head not in fields:
            raise _unknown_key(path, key, config, fields)
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    changes: dict[str, Any] = {}
    for key, value in direct.items():
        name = path + key
        if key in nested:
            first = next(iter(nested[key]))
            raise ConfigError(f"{name} is set both as a whole and field by field ({name}.{first})")
        current = getattr(config, key)
        if isinstance(value, Mapping) and dataclasses.is_dataclass(current) and not isinstance(current, type):
            changes[key] = _apply(current, value, name + ".")  # a nested config given as a dict
        else:
            changes[key] = _check_type(name, value, hints[key])
    for key, sub in nested.items():
        current = getattr(config, key)
        if not dataclasses.is_dataclass(current) or isinstance(current, type):
            kind = type(current).__name__
            raise ConfigError(
                f"cannot set {path}{key}.{next(iter(sub))}: {path}{key} is a {kind}, not a config"
            )
        changes[key] = _apply(current, sub, f"{path}{key}.")
    try:
        return dataclasses.replace(config, **changes)
    except (ValueError, TypeError) as err:  # __post_init__ validation
        prefix = f"{path.rstrip('.')}: " if path else ""
        raise ConfigError(f"{prefix}{err}") from err


def apply_overrides(config: C, overrides: Mapping[str, Any]) -> C:
    """A copy of the frozen dataclass ``config`` with ``overrides`` applied and type-checked.

    Args:
        config: a dataclass instance; it is left untouched.
        overrides: ``{field: value}``. A dotted key (``"model.channels"``) sets a field of a
            nested dataclass; several keys into the same nested config combine. A mapping given
            for a nested-config field overrides that config's fields (so :func:`config_to_dict`
            output applies back).

    Returns:
        The new config, every changed level rebuilt with ``dataclasses.replace``.

    Raises:
        ConfigError: an unknown key (with close matches), an ill-typed value, or a
            ``__post_init__`` validation error of any level.
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError("apply_overrides expects a dataclass instance")
    result: C = _apply(config, overrides, "")
    return result


def config_to_dict(config: Any) -> dict[str, Any]:
    """JSON-friendly nested dict of a dataclass config (tuples become lists, paths strings)."""
    out: dict[str, Any] = to_jsonable(dataclasses.asdict(config))
    return out
