"""A fast, sound meta-schema check, so `workflow run`, `resume` and `validate` need not import jsonschema.

Every run and every `workflow validate` checks the inputs schema and each wait's schema against
Draft 2020-12's meta-schema (checks.py; WF-013, INPUT-001). Done by
`Draft202012Validator.check_schema`, that imports jsonschema, referencing, attrs, rpds and
jsonschema_specifications. Measured on the development machine (CPU time, median of 9 runs):
`python -c pass` 8 ms, `python -c "import jsonschema"` 73 ms; in a copy of examples/release,
`workflow validate release` went from 145-148 ms to 102-113 ms and `workflow run release --json`
from 171-178 ms to 143-152 ms once this check let them skip jsonschema.

`meta_valid` answers True only when the meta-schema surely accepts the schema: every keyword is one
of a known set and every value has the shape the meta-schema gives it (a subschema is a mapping or a
boolean; `type` is a simple type or a non-empty list of distinct ones; `required` a list of
distinct strings; `minLength` and the like non-negative integers, 2.0 included as the meta-schema
counts it; `pattern` compiles as jsonschema's `regex` format checks it, with Python's `re`; `$ref`
a local reference any URI-reference checker accepts; ...). Anything else, an unknown keyword or
anything the meta-schema might refuse, answers False, "not sure": the caller then asks jsonschema,
so every message stays jsonschema's own.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})

# A local reference ('#', '#/$defs/name', ...) made of characters RFC 3986 allows unescaped in a
# fragment, so every uri-reference checker jsonschema may use (rfc3987, rfc3986-validator) accepts it.
LOCAL_REF = re.compile(r"#(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*\Z")
# `$schema`: an http(s) URI with a plain host name and path, which every uri checker accepts.
PLAIN_URI = re.compile(
    r"https?://[A-Za-z0-9]+(?:-+[A-Za-z0-9]+)*(?:\.[A-Za-z0-9]+(?:-+[A-Za-z0-9]+)*)*"
    r"(?:/[A-Za-z0-9._~-]*)*#?\Z"
)


# Subschemas nested deeper than this are left to jsonschema, which spends about a dozen stack
# frames a level (it fails with RecursionError past 80 to 120 levels): a schema that deep then
# gets what it got before, whatever that is.
MAX_DEPTH = 32


def meta_valid(schema: Any) -> bool:
    """True when Draft 2020-12's meta-schema accepts `schema` for certain; False when not sure."""
    try:
        return _schema(schema, 0)
    except RecursionError:
        return False


def _schema(value: Any, depth: int) -> bool:
    if isinstance(value, bool):
        return True
    if not isinstance(value, dict) or depth > MAX_DEPTH:
        return False
    for key, item in value.items():
        if not isinstance(key, str):
            return False
        nested = SUBSCHEMAS.get(key)
        if nested is not None:
            if not nested(item, depth + 1):
                return False
            continue
        check = KEYWORDS.get(key)
        if check is None or not check(item):
            return False
    return True


def _anything(value: Any) -> bool:
    return True


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _non_negative_integer(value: Any) -> bool:
    """`{"type": "integer", "minimum": 0}`: jsonschema counts 2.0 as an integer."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, float) and value.is_integer() and value >= 0


def _positive_number(value: Any) -> bool:
    """multipleOf: `{"type": "number", "exclusiveMinimum": 0}`."""
    return _number(value) and value > 0


def _distinct_strings(value: Any) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(item, str) for item in value)
        and len(set(value)) == len(value)
    )


def _type(value: Any) -> bool:
    if isinstance(value, str):
        return value in TYPES
    return (
        isinstance(value, list)
        and len(value) >= 1
        and all(isinstance(item, str) and item in TYPES for item in value)
        and len(set(value)) == len(value)
    )


def _list(value: Any) -> bool:
    return isinstance(value, list)


def _compile_uncached(pattern: str) -> Any:
    """re.compile without re's cache: a pattern compiled before (by jsonschema validating a
    payload, or by this check) comes from the cache without its warning, so the same schema would
    be vouched for or not depending on what ran before (tests/test_schemacheck.py found it)."""
    import importlib

    compiler = importlib.import_module("re._compiler" if hasattr(re, "_compiler") else "sre_compile")
    return compiler.compile(pattern, 0)


def _regex(value: Any) -> bool:
    """The meta-schema's `"format": "regex"`, which jsonschema checks with Python's re.compile."""
    if not isinstance(value, str):
        return False
    try:
        with warnings.catch_warnings():
            # A pattern re warns about ("Possible nested set"): jsonschema compiles it and warns
            # from its own line, as it always did.
            warnings.simplefilter("error")
            _compile_uncached(value)
    except Exception:  # re.error is what jsonschema reports; anything else: let it say
        return False
    return True


def _schema_array(value: Any, depth: int) -> bool:
    return isinstance(value, list) and len(value) >= 1 and all(_schema(item, depth) for item in value)


def _schema_map(value: Any, depth: int) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and _schema(v, depth) for k, v in value.items())


def _pattern_map(value: Any, depth: int) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and _regex(k) and _schema(v, depth) for k, v in value.items()
    )


def _dependent_required(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and _distinct_strings(v) for k, v in value.items()
    )


def _local_ref(value: Any) -> bool:
    return isinstance(value, str) and LOCAL_REF.match(value) is not None


def _plain_uri(value: Any) -> bool:
    return isinstance(value, str) and PLAIN_URI.match(value) is not None


# Each keyword this check knows, with what the Draft 2020-12 meta-schema asks of its value (its
# vocabulary in brackets). Left out (answered by jsonschema): $id, $anchor, $dynamicAnchor,
# $dynamicRef, $vocabulary, dependencies, $recursiveAnchor, $recursiveRef, and every keyword the
# meta-schema does not name.
KEYWORDS: dict[str, Callable[[Any], bool]] = {
    # core
    "$schema": _plain_uri,
    "$ref": _local_ref,
    "$comment": _string,
    # validation
    "type": _type,
    "const": _anything,
    "enum": _list,
    "multipleOf": _positive_number,
    "maximum": _number,
    "exclusiveMaximum": _number,
    "minimum": _number,
    "exclusiveMinimum": _number,
    "maxLength": _non_negative_integer,
    "minLength": _non_negative_integer,
    "pattern": _regex,
    "maxItems": _non_negative_integer,
    "minItems": _non_negative_integer,
    "uniqueItems": _boolean,
    "maxContains": _non_negative_integer,
    "minContains": _non_negative_integer,
    "maxProperties": _non_negative_integer,
    "minProperties": _non_negative_integer,
    "required": _distinct_strings,
    "dependentRequired": _dependent_required,
    # meta-data
    "title": _string,
    "description": _string,
    "default": _anything,
    "deprecated": _boolean,
    "readOnly": _boolean,
    "writeOnly": _boolean,
    "examples": _list,
    # format-annotation, content
    "format": _string,
    "contentEncoding": _string,
    "contentMediaType": _string,
}

# The keywords whose value is a schema, a non-empty list of schemas, or a map of them.
SUBSCHEMAS: dict[str, Callable[[Any, int], bool]] = {
    # core (and the top-level meta-schema's deprecated `definitions`)
    "$defs": _schema_map,
    "definitions": _schema_map,
    # applicator
    "prefixItems": _schema_array,
    "items": _schema,
    "contains": _schema,
    "additionalProperties": _schema,
    "properties": _schema_map,
    "patternProperties": _pattern_map,  # its keys: format regex
    "dependentSchemas": _schema_map,
    "propertyNames": _schema,
    "if": _schema,
    "then": _schema,
    "else": _schema,
    "allOf": _schema_array,
    "anyOf": _schema_array,
    "oneOf": _schema_array,
    "not": _schema,
    # unevaluated
    "unevaluatedItems": _schema,
    "unevaluatedProperties": _schema,
    # content
    "contentSchema": _schema,
}
