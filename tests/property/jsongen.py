"""Hypothesis strategies: JSON values, and JSON Schemas (Draft 2020-12) drawn around a value.

`schema_for(value)` describes a value with random keywords of the dialect: most hold for the value
by construction, some are nudged so they fail, and some reach outside swamp's fast path (anyOf,
not, multipleOf, $ref...), so the reference validator answers both ways about equally often.
Workflow files are written with PyYAML's safe dumper, which escapes whatever YAML cannot carry raw.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from hypothesis import strategies as st

TEXT_CHARS = st.characters(codec="utf-8")  # every code point but the surrogates
SHORT_TEXT = st.text(TEXT_CHARS, max_size=6) | st.sampled_from(
    ["", "a", "ship", "${{ inputs.x }}", "é", "😀"]
)
KEYS = st.text(TEXT_CHARS, max_size=4) | st.sampled_from(["a", "b", "n", "verdict", "signal", "$ref", "0"])
INTS = st.integers(-(2**63), 2**64 - 1) | st.integers(-5, 5)
FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.5, -0.0, 1.0, 2.5, 1e-7, 1e300]
)
SCALARS = st.none() | st.booleans() | INTS | FLOATS | SHORT_TEXT
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=10,
)
TYPES = ["string", "number", "integer", "boolean", "null", "array", "object"]
PATTERNS = ["^a", "b$", "[0-9]", "^$", "\\d+", ".", "^[a-z]*$", "é", "^\\$\\{\\{"]


def type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def depth(value: Any) -> int:
    """How many arrays and objects the deepest value sits inside (a scalar: 0)."""
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def size(value: Any) -> int:
    return len(compact(value).encode("utf-8"))


def same(a: Any, b: Any) -> bool:
    """Equal as JSON documents, and of the same JSON kinds all the way down (1 is not 1.0 or true)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a == 0:
        return math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def _near(draw: Any, number: float | int) -> float | int:
    """A bound at, just around, or far from `number`."""
    if isinstance(number, float) and not math.isfinite(number):
        return 0
    choice = draw(st.sampled_from(["at", "below", "above", "far"]))
    if choice == "at":
        return number
    if choice == "far":
        return draw(st.integers(-10, 10))
    step = draw(st.sampled_from([1, 0.5, 1e-9])) if isinstance(number, float) else 1
    return number - step if choice == "below" else number + step


@st.composite
def schema_for(draw: Any, value: Any, level: int = 0, fast: bool = False) -> Any:
    """A schema whose keywords mostly describe `value` (see the module docstring); with `fast`, only
    keywords of swamp's fast path."""
    if level > 3 or draw(st.integers(0, 20)) == 0:
        return draw(st.sampled_from([True, False, {}]))
    schema: dict[str, Any] = {}
    kind = type_of(value)
    if draw(st.booleans()):
        if draw(st.integers(0, 5)) == 0:
            schema["type"] = draw(st.sampled_from(TYPES))
        elif kind == "integer" and draw(st.booleans()):
            schema["type"] = "number"
        else:
            chosen = draw(st.sampled_from([kind, [kind, "null"], [kind, "string"]]))
            schema["type"] = sorted(set(chosen)) if isinstance(chosen, list) else chosen
    if draw(st.integers(0, 6)) == 0:
        pool = draw(st.lists(SCALARS, max_size=3))
        schema["enum"] = pool + ([value] if draw(st.booleans()) else [])
        if not schema["enum"]:
            schema["enum"] = [value]
    if draw(st.integers(0, 10)) == 0:
        schema["const"] = value if draw(st.booleans()) else draw(SCALARS)
    if isinstance(value, dict):
        keys = list(value)
        props = {}
        for key in keys:
            if draw(st.integers(0, 3)):
                props[key] = draw(schema_for(value[key], level + 1, fast))
        if draw(st.integers(0, 4)) == 0:
            props[draw(KEYS)] = draw(schema_for(draw(SCALARS), level + 1, fast))
        if props:
            schema["properties"] = props
        if keys or draw(st.booleans()):
            required = [k for k in keys if draw(st.booleans())]
            if draw(st.integers(0, 5)) == 0:
                required.append(draw(KEYS))
            if required:
                schema["required"] = sorted(set(required))
        extra = draw(st.integers(0, 5))
        if extra == 0:
            schema["additionalProperties"] = False
        elif extra == 1:
            schema["additionalProperties"] = draw(schema_for(draw(SCALARS), level + 1, fast))
        if not fast and draw(st.integers(0, 5)) == 0:
            schema[draw(st.sampled_from(["minProperties", "maxProperties"]))] = (
                len(keys) + draw(st.integers(-1, 1)) if keys else 0
            )
    elif isinstance(value, list):
        if value and draw(st.booleans()):
            schema["items"] = draw(schema_for(value[draw(st.integers(0, len(value) - 1))], level + 1, fast))
        for key in ("minItems", "maxItems"):
            if draw(st.integers(0, 3)) == 0:
                schema[key] = max(0, len(value) + draw(st.integers(-1, 1)))
        if not fast and draw(st.integers(0, 4)) == 0:  # jsonschema's own equality: not in the fast path
            schema["uniqueItems"] = draw(st.booleans())
        if not fast and draw(st.integers(0, 6)) == 0 and value:
            schema["prefixItems"] = [draw(schema_for(value[0], level + 1))]
        if not fast and draw(st.integers(0, 6)) == 0 and value:
            schema["contains"] = draw(schema_for(value[-1], level + 1))
    elif isinstance(value, str):
        for key in ("minLength", "maxLength"):
            if draw(st.integers(0, 3)) == 0:
                schema[key] = max(0, len(value) + draw(st.integers(-1, 1)))
        if draw(st.integers(0, 3)) == 0:
            head = value[: draw(st.integers(0, 2))]
            schema["pattern"] = (
                "^" + re.escape(head) if draw(st.booleans()) else draw(st.sampled_from(PATTERNS))
            )
        if draw(st.integers(0, 8)) == 0:
            schema["format"] = draw(st.sampled_from(["email", "date-time", "uri"]))  # an annotation only
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if draw(st.integers(0, 3)) == 0:
                schema[key] = _near(draw, value)
        if not fast and draw(st.integers(0, 8)) == 0:
            schema["multipleOf"] = draw(st.sampled_from([1, 2, 0.5, 3]))
    # Beyond the fast path: combinators, negation, conditionals, references.
    outside = -1 if fast else draw(st.integers(0, 12))
    if outside == 0:
        schema["anyOf"] = [draw(schema_for(value, level + 1)), draw(schema_for(draw(SCALARS), level + 1))]
    elif outside == 1:
        schema["oneOf"] = [draw(schema_for(value, level + 1)), {"type": draw(st.sampled_from(TYPES))}]
    elif outside == 2:
        schema["allOf"] = [draw(schema_for(value, level + 1))]
    elif outside == 3:
        schema["not"] = {"type": draw(st.sampled_from(TYPES))}
    elif outside == 4 and level == 0:  # a local reference resolves against the root
        schema["$defs"] = {"inner": draw(schema_for(value, level + 1))}
        schema["$ref"] = "#/$defs/inner"
    elif outside == 5:
        schema["if"] = {"type": kind}
        schema["then"] = draw(schema_for(value, level + 1))
    if draw(st.integers(0, 10)) == 0:
        schema[draw(st.sampled_from(["title", "description", "$comment"]))] = draw(SHORT_TEXT)
    return schema


@st.composite
def schema_and_value(draw: Any, fast: bool = False) -> tuple[Any, Any]:
    """A valid Draft 2020-12 schema and a value drawn with (or, sometimes, apart from) it."""
    from jsonschema import Draft202012Validator

    value = draw(JSON)
    schema = draw(schema_for(value, fast=fast))
    if draw(st.integers(0, 4)) == 0:
        value = draw(JSON)  # the same schema, an unrelated value
    from hypothesis import assume
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        assume(False)
    return schema, value


DATA_KEYWORDS = ("enum", "const", "default", "examples")


def ref_in_data(schema: Any, inside: bool = False) -> bool:
    """Whether a `"$ref": "<string>"` pair sits inside data (enum, const, default, examples)."""
    if isinstance(schema, dict):
        if inside and isinstance(schema.get("$ref"), str):
            return True
        return any(ref_in_data(v, inside or k in DATA_KEYWORDS) for k, v in schema.items())
    if isinstance(schema, list):
        return any(ref_in_data(v, inside) for v in schema)
    return False
