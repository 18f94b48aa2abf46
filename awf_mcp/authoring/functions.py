"""What a decorated function says about itself: its name and its docstring.

* :func:`function_name`: the function's ``__name__``, which must be an identifier (else
  :class:`TypeError`: the decorator's ``name=`` names it instead);
* :func:`served_name`: ``<plugin>_<name>``, a name that already starts with ``<plugin>_`` kept as it is;
* :func:`parse_docstring`: a Google-style docstring split into its description and each argument's
  text (the ``Args:`` section, under any of its usual headers).

Imports: the standard library only.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

F = typing.TypeVar("F", bound=Callable[..., Any])
"""The type of a function a decorator marks and returns unchanged."""

_ARGS_HEADERS = frozenset({"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"})
_ENTRY = re.compile(r"^\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(?P<text>.*)$")


def function_name(function: Callable[..., Any]) -> str:
    """``function.__name__``; :class:`TypeError` when it has none that is an identifier."""
    name = getattr(function, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"@tool object {function!r} has no usable __name__; pass @tool(name=...)")
    return name


def served_name(plugin: str, base: str) -> str:
    """The served name of ``base``: ``<plugin>_<base>``, kept as is when already prefixed."""
    return base if base.startswith(f"{plugin}_") else f"{plugin}_{base}"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description without ``Args:``, per-argument text)."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    kept: list[str] = []
    arguments: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        header = line.strip()
        if not (header.endswith(":") and header[:-1].strip().lower() in _ARGS_HEADERS):
            kept.append(line)
            index += 1
            continue
        base = _indent(line)
        index += 1
        entry_indent: int | None = None
        current: str | None = None
        while index < len(lines):
            body = lines[index]
            if body.strip() and _indent(body) <= base:
                break
            index += 1
            if not body.strip():
                continue
            if entry_indent is None:
                entry_indent = _indent(body)
            match = _ENTRY.match(body.strip()) if _indent(body) <= entry_indent else None
            if match:
                current = match["name"]
                arguments[current] = match["text"].strip()
            elif current is not None:
                arguments[current] = f"{arguments[current]} {body.strip()}".strip()
    text = "\n".join(kept)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, arguments
