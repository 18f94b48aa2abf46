"""The quick check of tool arguments: never a yes that jsonschema would refuse."""

from __future__ import annotations

import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from awf_mcp.builtins.provider import DEFINITIONS
from awf_mcp.core.quickcheck import DIALECTS, quick_check

VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 2, 7, 10**20, 0.0, 1.0, 1.5, -0.5, float("nan"), float("inf"),
    "", "x", "content", "files_with_matches", "count", [], ["x"], {}, {"a": 1},
]  # fmt: skip

NAMES = ["path", "offset", "limit", "pattern", "x", "extra"]


def random_arguments(chooser: random.Random, names: list[str]) -> dict[str, Any]:
    return {name: chooser.choice(VALUES) for name in chooser.sample(names, chooser.randint(0, len(names)))}


def random_property(chooser: random.Random) -> dict[str, Any]:
    kinds = ["string", "integer", "number", "boolean", "null", "array", "object"]
    schema: dict[str, Any] = {"type": chooser.choice([chooser.choice(kinds), chooser.sample(kinds, 2)])}
    if chooser.random() < 0.4:
        schema["minimum"] = chooser.choice([0, 1, -1.5, 2])
    if chooser.random() < 0.3:
        schema["maximum"] = chooser.choice([1, 7, 2.5])
    if chooser.random() < 0.2:
        schema["enum"] = chooser.sample(["x", "content", "count", ""], 2)
    if chooser.random() < 0.3:
        schema["description"] = "d"
    return schema


def random_schema(chooser: random.Random) -> dict[str, Any]:
    properties = {name: random_property(chooser) for name in chooser.sample(NAMES, chooser.randint(0, 4))}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties and chooser.random() < 0.7:
        schema["required"] = chooser.sample(sorted(properties), chooser.randint(1, len(properties)))
    if chooser.random() < 0.7:
        schema["additionalProperties"] = chooser.random() < 0.3
    return schema


def test_a_yes_is_always_a_yes_of_jsonschema() -> None:
    chooser = random.Random(14)
    said_yes = 0
    for _ in range(400):
        schema = random_schema(chooser)
        accepts = quick_check(schema)
        assert accepts is not None, schema
        validator = Draft202012Validator(schema)
        for _ in range(40):
            arguments = random_arguments(chooser, NAMES)
            if accepts(arguments):
                said_yes += 1
                assert validator.is_valid(arguments), (schema, arguments)
    assert said_yes > 1000  # the check is not merely always "ask jsonschema"


@pytest.mark.parametrize("definition", DEFINITIONS, ids=lambda definition: definition.name)
def test_the_builtin_schemas_are_checked_quickly_and_exactly(definition: Any) -> None:
    schema = dict(definition.input_schema)
    accepts = quick_check(schema)
    assert accepts is not None
    validator = Draft202012Validator(schema)
    names = [*schema["properties"], "extra"]
    chooser = random.Random(definition.name)
    for _ in range(3000):
        arguments = random_arguments(chooser, names)
        valid = validator.is_valid(arguments)
        # Exact for these schemas, except integral floats, which only jsonschema accepts as integers.
        if not any(type(value) is float for value in arguments.values()):
            assert accepts(arguments) == valid, arguments
        elif accepts(arguments):
            assert valid, arguments


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 3}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}},
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": True}}},
        {"type": "object", "properties": {"a": {"description": "any value"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "array"},
        {"type": "object", "$schema": "http://json-schema.org/draft-03/schema#"},
        {"type": "object", "$schema": "https://example.com/my-dialect"},
        {"type": "object", "$schema": 7},
    ],
)
def test_a_schema_beyond_the_simple_ones_is_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert quick_check(schema) is None


@pytest.mark.parametrize("dialect", [*sorted(DIALECTS), "http://json-schema.org/draft-07/schema#"])
def test_a_yes_under_a_named_draft_is_a_yes_of_that_draft(dialect: str) -> None:
    chooser = random.Random(dialect)
    said_yes = 0
    for _ in range(200):
        schema = {"$schema": dialect, **random_schema(chooser)}
        accepts = quick_check(schema)
        assert accepts is not None, schema
        validator = validator_for(schema)(schema)
        assert validator.META_SCHEMA["$schema"].removesuffix("#") == dialect.removesuffix("#")
        for _ in range(40):
            arguments = random_arguments(chooser, NAMES)
            if accepts(arguments):
                said_yes += 1
                assert validator.is_valid(arguments), (schema, arguments)
    assert said_yes > 500
