"""A quick yes for tool arguments that a simple input schema accepts, before ``jsonschema`` runs.

Checking a call's arguments with ``jsonschema`` costs about 9 µs, even for the usual flat
schema of a few typed properties; this check costs about 1 µs. It never replaces the full
validation, it only spares it:

Contract
--------
* :func:`quick_check` returns ``None`` for a schema it does not fully understand: anything
  but ``type: object`` with ``properties`` (each with ``type``, ``minimum``, ``maximum``,
  ``enum`` of strings, and annotations), ``required``, a boolean ``additionalProperties`` and
  a ``$schema`` naming one of :data:`DIALECTS` (what most upstream servers send: zod's
  schemas name draft-07). The caller then always runs the full validator.
* Otherwise it returns a function of the arguments that returns ``True`` only for arguments
  that Draft 2020-12 validation accepts, and ``False`` when in doubt: ``False`` means "run the
  full validator" (``jsonschema`` with RE2 for patterns, :mod:`awf_mcp.core.schemacheck`),
  which words the error. So results and error messages are the full validator's whichever
  way a call goes. The keywords read here mean the same in every draft of :data:`DIALECTS`
  (the full validator is the one ``$schema`` names), so one check stands in for each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

QuickCheck = Callable[[Mapping[str, Any]], bool]
"""``True``: the arguments are valid; ``False``: ask the full validator."""

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated"})
_OBJECT_KEYWORDS = (
    frozenset({"type", "properties", "required", "additionalProperties", "$schema"}) | _ANNOTATIONS
)
DIALECTS = frozenset(
    {
        "http://json-schema.org/draft-04/schema",
        "http://json-schema.org/draft-06/schema",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    }
)
"""The ``$schema`` values (with or without the trailing ``#``) a quick check is made for: drafts in
which ``type``, ``properties``, ``required``, ``additionalProperties``, ``enum``, ``minimum`` and
``maximum`` mean what they mean in Draft 2020-12 (draft-04's boolean ``exclusiveMinimum`` is a
keyword this module does not read)."""
_PROPERTY_KEYWORDS = frozenset({"type", "minimum", "maximum", "enum"}) | _ANNOTATIONS


def _is_integer(value: Any) -> bool:
    return type(value) is int


def _is_number(value: Any) -> bool:
    return type(value) is int or (type(value) is float and not math.isnan(value))


# Each says yes only where jsonschema's Draft 2020-12 type checker does (bool is no integer).
_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: type(value) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: type(value) is bool,
    "null": lambda value: value is None,
    "array": lambda value: type(value) is list,
    "object": lambda value: type(value) is dict,
}


def _bound(value: Any) -> bool:
    return type(value) in (int, float) and not (type(value) is float and math.isnan(value))


def _property_check(schema: Any) -> Callable[[Any], bool] | None:
    """A check of one property's value, or ``None`` when ``schema`` is more than this module reads."""
    if not isinstance(schema, Mapping) or not schema.keys() <= _PROPERTY_KEYWORDS:
        return None
    kinds = schema.get("type")
    names = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(names, list) or not names or not all(name in _TYPES for name in names):
        return None
    tests = tuple(_TYPES[name] for name in names)
    if any(key in schema and not _bound(schema[key]) for key in ("minimum", "maximum")):
        return None
    low, high = schema.get("minimum"), schema.get("maximum")
    choices: frozenset[str] | None = None
    if "enum" in schema:
        members = schema["enum"]
        if not isinstance(members, list) or not all(type(member) is str for member in members):
            return None
        choices = frozenset(members)

    def check(value: Any) -> bool:
        if not any(test(value) for test in tests):
            return False
        if _is_number(value) and ((low is not None and value < low) or (high is not None and value > high)):
            return False
        return choices is None or (type(value) is str and value in choices)

    return check


def quick_check(schema: Mapping[str, Any]) -> QuickCheck | None:
    """The quick check of arguments against ``schema``; ``None`` when it takes the full validator."""
    if not schema.keys() <= _OBJECT_KEYWORDS or schema.get("type", "object") != "object":
        return None
    dialect = schema.get("$schema", "https://json-schema.org/draft/2020-12/schema")
    if not isinstance(dialect, str) or dialect.removesuffix("#") not in DIALECTS:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(closed, bool):
        return None
    if not isinstance(required, list) or not all(type(name) is str for name in required):
        return None
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, subschema in properties.items():
        check = _property_check(subschema)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)

    def accepts(arguments: Mapping[str, Any]) -> bool:
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if closed is False:
                    return False
            elif not check(value):
                return False
        return True

    return accepts
