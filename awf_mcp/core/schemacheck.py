"""JSON Schema validation that no schema can stall: every regular expression is matched by RE2.

``jsonschema`` matches ``pattern`` and ``patternProperties`` with Python's ``re``, which
backtracks: ``(a+)+$`` against forty ``a`` and a ``!`` runs for hours, holding the GIL, so
neither the event loop nor a signal handler gets to run. A tool's schema comes from a plugin
or an upstream server, its arguments from the model, its structured content from the tool.

Contract
--------
* :func:`linear_validator` builds a ``jsonschema`` validator (the draft ``$schema`` names,
  else ``default``) whose keywords that match regular expressions — ``pattern``,
  ``patternProperties``, and the ``additionalProperties`` and ``unevaluatedProperties``
  that depend on them — match with RE2: time linear in the string whatever the pattern,
  and RE2 lets go of the GIL while it matches. Python's ``re`` never runs on a schema's
  pattern. Each pattern is compiled once (:data:`PATTERN_CACHE` patterns are kept, each
  within :data:`PATTERN_MEMORY` bytes). ``format`` stays an annotation, as in ``jsonschema``.
* A ``$ref`` resolves within the schema and the drafts' own metaschemas: nothing is
  fetched from the network.
* A pattern RE2 refuses (a backreference, a lookaround, ``\\Z``, or too large) is never
  run by anything else: a value it applies to fails validation with a sentence that says
  the pattern cannot be checked, and the pattern is logged once as a warning. What cannot
  be checked is refused, not let through.
* RE2 follows its own syntax (https://github.com/google/re2/wiki/Syntax), closer to the
  ECMA-262 dialect JSON Schema names than Python's: ``$`` matches only at the very end,
  ``\\d`` only ASCII digits.
* :func:`first_problem` is the one sentence for an instance's first error (by path), or
  ``None``; it may take long for a huge instance, so callers run it in a worker thread.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

log = logging.getLogger("awf_mcp.core.schemacheck")

PATTERN_CACHE = 128
"""Compiled patterns kept (the least recently used is dropped first)."""

PATTERN_MEMORY = 2 << 20
"""Bytes RE2 may use for one compiled pattern (its program and matching cache); a pattern too
large to compile within it is refused. With :data:`PATTERN_CACHE`, at most 256 MiB in all."""

Validator = Any
"""A ``jsonschema`` validator instance (``jsonschema`` is imported on first need: it takes a while)."""


class _Uncheckable(Exception):
    """A pattern RE2 refuses; the message says which and why."""


@functools.lru_cache(maxsize=PATTERN_CACHE)
def _compiled(pattern: str) -> Any:
    """The RE2 regex for ``pattern``, or the sentence saying why there is none."""
    import re2

    from awf_mcp.ports import visible_text

    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    options.max_mem = PATTERN_MEMORY
    try:
        return re2.compile(pattern.encode("utf-8", "surrogatepass"), options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        sentence = (
            f"the schema's pattern {visible_text(pattern)!r} cannot be checked: RE2 refuses it ({text}), "
            "and awf-mcp runs no pattern that could backtrack"
        )
        log.warning("%s; values it applies to are refused", sentence)
        return sentence


def _search(pattern: Any, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (``re.search``), in linear time."""
    if not isinstance(pattern, str):
        raise _Uncheckable(f"the schema's pattern {pattern!r} is not a string")
    regex = _compiled(pattern)
    if isinstance(regex, str):
        raise _Uncheckable(regex)
    return regex.search(text.encode("utf-8", "surrogatepass")) is not None


def _refusing_uncheckable(keyword: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """``keyword`` with a pattern RE2 refuses turned into the validation error that says so."""

    @functools.wraps(keyword)
    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        from jsonschema import ValidationError

        try:
            yield from keyword(validator, value, instance, schema)
        except _Uncheckable as exc:
            yield ValidationError(str(exc))

    return checked


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r:.200} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The keys neither ``properties`` nor ``patternProperties`` cover (``find_additional_properties``)."""
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        key
        for key in instance
        if key not in properties and not any(_search(pattern, key) for pattern in patterns)
    ]


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        shown = ", ".join(repr(extra) for extra in sorted(extras, key=str))
        if "patternProperties" in schema:
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{shown} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({shown} {verb} unexpected)")


def _is_valid(errors: Iterator[Any]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: Mapping[str, Any], schema: Any) -> list[str]:
    """The keys some keyword of ``schema`` evaluates (``find_evaluated_property_keys_by_schema``)."""
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []
    for keyword in ("$ref", "$dynamicRef"):
        reference = schema.get(keyword)
        if reference is not None:
            resolved = validator._resolver.lookup(reference)
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys += _evaluated_keys(inner, instance, resolved.contents)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys += properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys += [key for key, value in instance.items() if _is_valid(validator.descend(value, subschema))]
    for pattern in schema.get("patternProperties", {}):
        keys += [key for key in instance if _search(pattern, key)]
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys += _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _is_valid(validator.descend(instance, subschema)):
                keys += _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys += _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys += _evaluated_keys(validator, instance, schema["else"])
    return keys


def _unevaluated_properties(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    evaluated = set(_evaluated_keys(validator, instance, schema))
    invalid = [
        key
        for key in instance
        if key not in evaluated
        and not _is_valid(validator.descend(instance[key], unevaluated, path=key, schema_path=key))
    ]
    if invalid and unevaluated is False:
        shown = ", ".join(repr(key) for key in sorted(invalid, key=str))
        verb = "was" if len(invalid) == 1 else "were"
        yield ValidationError(f"Unevaluated properties are not allowed ({shown} {verb} unexpected)")
    elif invalid:
        shown = ", ".join(repr(key) for key in invalid)
        verb = "was" if len(invalid) == 1 else "were"
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema "
            f"({shown} {verb} unevaluated and invalid)"
        )


_LINEAR: Mapping[str, Callable[..., Iterator[Any]]] = {
    "pattern": _refusing_uncheckable(_pattern),
    "patternProperties": _refusing_uncheckable(_pattern_properties),
    "additionalProperties": _refusing_uncheckable(_additional_properties),
    "unevaluatedProperties": _refusing_uncheckable(_unevaluated_properties),
}
"""The keywords that match regular expressions, each with its RE2 version."""


@functools.cache
def _linear_class(base: Any) -> Any:
    from jsonschema.validators import extend

    replaced = {keyword: function for keyword, function in _LINEAR.items() if keyword in base.VALIDATORS}
    return extend(base, replaced)


def linear_validator(schema: Mapping[str, Any], *, default: Any = None, check: bool = False) -> Validator:
    """A validator for ``schema`` that matches every pattern with RE2; see the module docstring.

    ``default`` is the draft when ``schema`` names none (Draft 2020-12 when not given). With
    ``check``, the schema itself is checked first (``jsonschema.SchemaError`` when invalid).
    """
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for
    from referencing import Registry

    base = validator_for(schema, default=default or Draft202012Validator)
    if check:
        base.check_schema(schema)
    return _linear_class(base)(schema, registry=Registry())


def _order(part: Any) -> tuple[int, int, str]:
    """A sort key for one step of an error's path: indexes in order, then names."""
    return (0, part, "") if isinstance(part, int) else (1, 0, str(part))


def first_problem(validator: Validator, instance: Any) -> str | None:
    """The first error of ``instance`` (by path) as ``path: message``, or ``None`` when it is valid."""
    errors = sorted(validator.iter_errors(instance), key=lambda error: [_order(part) for part in error.path])
    if not errors:
        return None
    error = errors[0]
    where = ".".join(str(part) for part in error.path)
    return f"{where}: {error.message}" if where else str(error.message)
