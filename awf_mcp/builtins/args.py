"""Defensive readers for tool arguments.

The caller validates arguments against each tool's input schema before a call,
but a provider may be called directly (a unit test, another plugin), so every
tool reads its arguments through these helpers: a wrong type or a value out of
range becomes a :class:`~awf_mcp.ports.ToolError` naming the argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from awf_mcp.ports import ToolError


def string_argument(arguments: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    """String argument ``key``; refused when required and missing, or when not a string."""
    value = arguments.get(key)
    if value is None:
        if required:
            raise ToolError(f"argument '{key}' is required")
        return None
    if not isinstance(value, str):
        raise ToolError(f"argument '{key}' must be a string, got {type(value).__name__}")
    return value


def required_string(arguments: Mapping[str, Any], key: str) -> str:
    """String argument ``key``, which must be present."""
    value = string_argument(arguments, key)
    assert value is not None
    return value


def int_argument(
    arguments: Mapping[str, Any], key: str, default: int, *, minimum: int, maximum: int | None = None
) -> int:
    """Integer argument ``key`` (or ``default``), refused outside ``minimum``..``maximum``."""
    value = arguments.get(key)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"argument '{key}' must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ToolError(f"argument '{key}' must be {bounds}, got {value}")
    return value


def optional_int(
    arguments: Mapping[str, Any], key: str, *, minimum: int, maximum: int | None = None
) -> int | None:
    """Integer argument ``key`` when given, else ``None``; range-checked like :func:`int_argument`."""
    if arguments.get(key) is None:
        return None
    return int_argument(arguments, key, minimum, minimum=minimum, maximum=maximum)


def bool_argument(arguments: Mapping[str, Any], key: str, default: bool = False) -> bool:
    """Boolean argument ``key`` (or ``default``); refused when not a boolean."""
    value = arguments.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ToolError(f"argument '{key}' must be true or false, got {value!r}")
    return value
