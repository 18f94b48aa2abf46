"""Pydantic's JSON schemas made plain for agents.

* :func:`clean_schema`: no ``title`` keys, ``$defs`` inlined unless a type is recursive (then
  they are kept);
* :func:`object_schema`: a schema that describes an object as it is, any other wrapped as the
  one property :data:`RESULT_KEY` of an object (MCP's structured content is always an object).

Imports: the standard library only (it works on the schema pydantic made).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESULT_KEY = "result"
"""The key under which a non-object return value is placed in ``structured_content``."""


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        cleaned: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
                cleaned[key] = {name: _strip_titles(sub) for name, sub in value.items()}
            else:
                cleaned[key] = _strip_titles(value)
        return cleaned
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    return node


class _Recursive(Exception):
    pass


def _inline(node: Any, defs: Mapping[str, Any], expanding: tuple[str, ...]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref.removeprefix("#/$defs/")
            if key in expanding or key not in defs:
                raise _Recursive(key)
            target = _inline(defs[key], defs, (*expanding, key))
            siblings = {k: _inline(v, defs, expanding) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings}
        return {k: _inline(v, defs, expanding) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(item, defs, expanding) for item in node]
    return node


def clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema made plain: no ``title`` keys, ``$defs`` inlined when not recursive."""
    cleaned: dict[str, Any] = _strip_titles(dict(schema))
    defs = cleaned.pop("$defs", None)
    if not defs:
        return cleaned
    try:
        inlined: dict[str, Any] = _inline(cleaned, defs, ())
    except _Recursive:
        return {**cleaned, "$defs": defs}
    return inlined


def object_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """``(schema, wrapped)``: ``schema`` itself when it describes an object, else ``{"result": schema}``."""
    plain = clean_schema(schema)
    if plain.get("type") == "object":
        return plain, False
    defs = plain.pop("$defs", None)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {RESULT_KEY: plain},
        "required": [RESULT_KEY],
    }
    if defs:
        wrapper["$defs"] = defs
    return wrapper, True
