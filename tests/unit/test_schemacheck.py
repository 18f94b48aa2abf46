"""Schema validation with RE2: same answers as jsonschema where ``re`` is safe, and no backtracking.

Every test that feeds ``(a+)+$`` forty ``a`` and a ``!`` would run for hours under Python's
``re``; it finishes here because RE2 matches it.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from awf_mcp.core.schemacheck import first_problem, linear_validator

EVIL = "(a+)+$"
EVIL_VALUE = "a" * 40 + "!"

SCHEMAS: list[tuple[dict[str, Any], list[Any]]] = [
    ({"pattern": "^[a-z]+$"}, ["abc", "abC", "", 5]),
    ({"pattern": "é+"}, ["café", "cafe"]),
    (
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
        [{"x-a": 1}, {"x-a": "1"}, {"y": 1}, {}],
    ),
    (
        {
            "type": "object",
            "properties": {"a": {}},
            "patternProperties": {"^b": {}},
            "additionalProperties": {"type": "string"},
        },
        [{"a": 1, "b1": 2, "c": "s"}, {"c": 3}],
    ),
    (
        {
            "type": "object",
            "allOf": [{"patternProperties": {"^p": {"type": "number"}}}],
            "unevaluatedProperties": False,
        },
        [{"p1": 1}, {"p1": "x"}, {"q": 1}],
    ),
    (
        {
            "$defs": {"k": {"patternProperties": {"^k": {}}}},
            "$ref": "#/$defs/k",
            "unevaluatedProperties": {"type": "null"},
        },
        [{"k": 1, "z": None}, {"z": 1}],
    ),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, [{"ab": 1}, {"A": 1}]),
]


@pytest.mark.parametrize(("schema", "instances"), SCHEMAS)
def test_answers_agree_with_jsonschema_where_re_is_safe(schema: dict[str, Any], instances: list[Any]) -> None:
    ours = linear_validator(schema)
    theirs = Draft202012Validator(schema)
    for instance in instances:
        assert ours.is_valid(instance) == theirs.is_valid(instance), instance
        if not theirs.is_valid(instance):
            assert first_problem(ours, instance) is not None


@pytest.mark.parametrize(
    ("schema", "instance", "message"),
    [
        ({"pattern": EVIL}, EVIL_VALUE, "does not match '(a+)+$'"),
        (
            {"patternProperties": {EVIL: {"type": "integer"}}},
            {EVIL_VALUE: "x", "aaa": "x"},
            "aaa: 'x' is not of type 'integer'",
        ),
        (
            {"patternProperties": {EVIL: {}}, "additionalProperties": False},
            {EVIL_VALUE: 1},
            "not match any of the regexes",
        ),
        (
            {"allOf": [{"patternProperties": {EVIL: {}}}], "unevaluatedProperties": False},
            {EVIL_VALUE: 1},
            "Unevaluated",
        ),
        ({"propertyNames": {"pattern": EVIL}}, {EVIL_VALUE: 1}, "does not match"),
    ],
)
def test_a_backtracking_pattern_is_matched_in_linear_time(
    schema: dict[str, Any], instance: Any, message: str
) -> None:
    problem = first_problem(linear_validator(schema), instance)
    assert problem is not None and message in problem


@pytest.mark.parametrize(
    "schema",
    [
        {"pattern": "^(?!x)"},
        {"pattern": r"(a)\1"},
        {"patternProperties": {"(?<=a)b": {}}},
        {"patternProperties": {"(?=a)": {}}, "additionalProperties": False},
        {"unevaluatedProperties": False, "patternProperties": {"^(?!x)": {}}},
    ],
)
def test_a_pattern_re2_refuses_fails_closed(schema: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    instance: Any = "abc" if "pattern" in schema else {"abc": 1}
    problem = first_problem(linear_validator(schema), instance)
    assert problem is not None and "cannot be checked: RE2 refuses it" in problem


def test_dollar_matches_only_at_the_end_as_in_ecma_262() -> None:
    assert not linear_validator({"pattern": "^[a-z]+$"}).is_valid("abc\n")  # Python's re would accept it


def test_text_with_lone_surrogates_is_matched_not_raised() -> None:
    validator = linear_validator({"pattern": "^caf.\\.txt$"})
    assert validator.is_valid("caf\udce9.txt")
    assert not linear_validator({"pattern": "^[a-z]+$"}).is_valid("ab\udce9")


def test_a_pattern_that_is_not_a_string_is_an_error_not_a_crash() -> None:
    problem = first_problem(linear_validator({"pattern": 5}), "x")
    assert problem is not None and "not a string" in problem


def test_a_remote_ref_is_never_fetched() -> None:
    from referencing.exceptions import Unresolvable

    validator = linear_validator({"$ref": "http://127.0.0.1:9/schema.json"})
    with pytest.raises(Unresolvable):
        validator.is_valid({})


def test_the_draft_named_by_schema_is_used_and_checked() -> None:
    from jsonschema import SchemaError

    draft7 = linear_validator({"$schema": "http://json-schema.org/draft-07/schema#", "pattern": EVIL})
    assert not draft7.is_valid(EVIL_VALUE)
    with pytest.raises(SchemaError):
        linear_validator({"type": 5}, check=True)
