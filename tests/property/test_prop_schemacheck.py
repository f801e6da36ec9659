"""The fast meta-schema check (swamp.domain.schemacheck) never vouches for a schema that Draft
2020-12's meta-schema refuses, and `schema_problems` gives the very list it gave when jsonschema
checked every schema, on random nested schemas, valid and invalid: every keyword the check knows
(and some it does not), each with a value of the right shape or a near miss."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from conftest_hypothesis import scaled
from hypothesis import event, given, settings
from hypothesis import strategies as st
from jsongen import JSON, TYPES
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from swamp.domain import schemacheck
from swamp.domain.inputs import InputValidationService

NEAR_INTEGERS = st.sampled_from([0, 1, 3, 2.0, -0.0, 1e300, 10**30, -1, 2.5, True, "2", None, float("inf")])
NUMBERS = st.sampled_from([0, -1, 0.5, 1e308, -(10**400), float("nan"), float("inf"), True, "1", None])
TYPE_NAMES = st.sampled_from(TYPES) | st.sampled_from(["text", "Integer", "int"])
PATTERNS = st.sampled_from(
    ["^a", "[0-9]+", "", "(", "[", "a{2,1}", "(a)\\1", "(?<=a)b", "\\p{L}", "(?P<x>a)(?P<x>a)", "[[a]"]
)
REFS = st.sampled_from(
    [
        "#",
        "#/$defs/a",
        "#/properties/a",
        "#/$defs/missing",
        "#/properties/a b",
        "#/%7e",
        "#/%zz",
        "#a",
        "",
        "other.json#/a",
        "http://example.com/s",
        "#/$defs/a~1b",
    ]
)
URIS = st.sampled_from(
    [
        "https://json-schema.org/draft/2020-12/schema",
        "http://json-schema.org/draft-07/schema#",
        "not a uri",
        "urn:example:x",
        "https://",
        "https://a..b/c",
        "http://x-/y",
        1,
    ]
)
STRINGS = st.sampled_from(["a", "b", "verdict", "", "é"])
COMMON = ["type", "properties", "required", "additionalProperties", "items", "enum", "minLength", "pattern"]
UNKNOWN = ["$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "dependencies", "x-note", "foo"]
SCHEMA_VALUED = [
    "items",
    "contains",
    "additionalProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
]
SCHEMA_LISTS = ["prefixItems", "allOf", "anyOf", "oneOf"]
SCHEMA_MAPS = ["properties", "$defs", "definitions", "dependentSchemas", "patternProperties"]
NON_NEGATIVE = [
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
]
STRING_VALUED = ["title", "description", "$comment", "format", "contentEncoding", "contentMediaType"]
BOOLEAN_VALUED = ["uniqueItems", "deprecated", "readOnly", "writeOnly"]


def schemas(depth: int = 3) -> st.SearchStrategy[Any]:
    """A schema (or, now and then, something that is not one), nested up to `depth` levels."""
    if depth == 0:
        return st.booleans() | st.just({}) | st.dictionaries(st.sampled_from(["type", "title"]), TYPE_NAMES)
    inner = st.deferred(lambda: schemas(depth - 1))
    maybe = inner | st.sampled_from([1, "x", None, [], [True]])  # not a schema: a near miss
    strings = st.lists(STRINGS, max_size=3) | st.sampled_from([["a", "a"], ["b", "a", "b"]])  # duplicates
    names = STRINGS | PATTERNS
    values: dict[str, st.SearchStrategy[Any]] = {
        "type": TYPE_NAMES
        | st.lists(TYPE_NAMES, max_size=3)
        | st.lists(TYPE_NAMES | st.integers(0, 1), max_size=2)
        | st.sampled_from([["null", "null"], ["string", "integer", "string"]]),
        "required": strings | st.lists(STRINGS | st.integers(0, 1), max_size=2) | STRINGS,
        "dependentRequired": st.dictionaries(STRINGS, strings, max_size=2) | st.just([]),
        "enum": st.lists(JSON, max_size=3) | JSON,
        "examples": st.lists(JSON, max_size=3) | JSON,
        "const": JSON,
        "default": JSON,
        "pattern": PATTERNS | st.integers(0, 1),
        "$ref": REFS | st.integers(0, 1),
        "$schema": URIS,
        "multipleOf": NUMBERS,
        **{k: NUMBERS for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")},
        **{k: NEAR_INTEGERS for k in NON_NEGATIVE},
        **{k: STRINGS | st.sampled_from([1, None, ["a"]]) for k in STRING_VALUED},
        **{k: st.booleans() | st.sampled_from([0, 1, "true", None]) for k in BOOLEAN_VALUED},
        **{k: maybe for k in SCHEMA_VALUED},
        **{k: st.lists(maybe, max_size=3) | maybe for k in SCHEMA_LISTS},
        **{k: st.dictionaries(names, maybe, max_size=3) | st.sampled_from([[], "x"]) for k in SCHEMA_MAPS},
        **{k: JSON for k in UNKNOWN},
    }
    known = sorted(set(values) - set(UNKNOWN))
    common = st.sampled_from(COMMON) | st.sampled_from(known)  # what workflows use, more often
    one = common.flatmap(lambda k: st.tuples(st.just(k), values[k]))
    rare = st.sampled_from(UNKNOWN).flatmap(lambda k: st.tuples(st.just(k), values[k]))
    pairs = st.lists(one, max_size=4) | st.lists(one | rare, max_size=3)  # unknown keywords now and then
    return st.booleans() | pairs.map(dict)


def meta_schema_accepts(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return True


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
@settings(max_examples=scaled(12))
@given(schemas())
def test_the_fast_check_never_vouches_for_what_the_meta_schema_refuses(schema: Any) -> None:
    vouched = schemacheck.meta_valid(schema)
    accepted = meta_schema_accepts(schema)
    event(f"vouched={vouched} accepted={accepted}")
    assert accepted or not vouched, f"vouched for a schema the meta-schema refuses: {schema!r}"
    with mock.patch.object(schemacheck, "meta_valid", lambda _schema: False):
        before = InputValidationService().schema_problems(schema)
    assert InputValidationService().schema_problems(schema) == before
