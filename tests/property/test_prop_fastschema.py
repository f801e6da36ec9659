"""The schema fast path (swamp.domain.fastschema) and the validation service answer exactly as the
reference validator, jsonschema's Draft202012Validator, on random (schema, value) pairs."""

from __future__ import annotations

from typing import Any

import pytest
from conftest_hypothesis import scaled
from hypothesis import assume, given, settings
from jsongen import schema_and_value
from jsonschema import Draft202012Validator

from swamp.domain import fastschema
from swamp.domain.inputs import InputValidationService


def resolves(pointer: str, document: Any) -> bool:
    here = document
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(here, dict) and part in here:
            here = here[part]
        elif isinstance(here, list) and part.isdigit() and int(part) < len(here):
            here = here[int(part)]
        else:
            return False
    return True


@settings(max_examples=scaled(20))
@given(schema_and_value(fast=True))
def test_fast_path_agrees_with_jsonschema(pair: tuple[Any, Any]) -> None:
    schema, value = pair
    assume(fastschema.supported(schema))  # in case a keyword leaves the fast path
    reference = Draft202012Validator(schema).is_valid(value)
    found = fastschema.problems(value, schema)
    assert (not found) == reference, f"fast path says {found or 'valid'}; jsonschema says {reference}"


@settings(max_examples=scaled(8))
@given(schema_and_value())
def test_validation_service_agrees_with_jsonschema(pair: tuple[Any, Any]) -> None:
    """Whichever way the service goes (fast path or jsonschema), it answers as the reference, and
    every problem it reports points into the value: at a member that is there, or (a missing
    `required` member, WAIT-023) at a member of an object that is there."""
    schema, value = pair
    reference = Draft202012Validator(schema).is_valid(value)
    problems = InputValidationService().problems(value, schema)
    assert (not problems) == reference, problems
    for problem in problems:
        parent = problem.pointer.rpartition("/")[0]
        missing = "required property" in problem.message and problem.pointer and resolves(parent, value)
        assert resolves(problem.pointer, value) or missing, (problem, value)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"enum": [[1], [True]]}, [True]),
        ({"const": {"a": [1.0]}}, {"a": [1]}),
        ({"enum": [1]}, True),
        ({"type": "integer"}, 1.0),
        ({"uniqueItems": True}, [1, True]),
        ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}]),
        ({"maxLength": 1}, "😀"),
        ({"pattern": "^é"}, "é!"),
        ({"properties": {"a": False}}, {"a": None}),
        ({"items": False}, []),
        ({"additionalProperties": {"type": "string"}, "properties": {"b": {}}}, {"b": 1, "c": 2}),
        ({"exclusiveMinimum": 18446744073709551615}, 18446744073709551616),
        ({"maximum": 1e308}, 10**400),
    ],
)
def test_edge_cases_agree(schema: Any, value: Any) -> None:
    reference = Draft202012Validator(schema).is_valid(value)
    if fastschema.supported(schema):
        assert (not fastschema.problems(value, schema)) == reference
    assert (not InputValidationService().problems(value, schema)) == reference


def test_unique_items_with_nested_booleans() -> None:
    """uniqueItems is left to jsonschema (its equality differs from JSON equality for nested booleans)."""
    schema, value = {"uniqueItems": True}, [[1], [True], [1]]
    assert not fastschema.supported(schema)
    assert (not InputValidationService().problems(value, schema)) == Draft202012Validator(schema).is_valid(
        value
    )
