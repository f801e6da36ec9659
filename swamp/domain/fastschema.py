"""A fast path for the common part of the schema dialect, so `signal` need not import jsonschema.

It covers the keywords payload and input schemas use most (type, enum, const, properties,
required, additionalProperties, items, length, size and range bounds, pattern, and
annotations). It answers exactly as jsonschema's Draft 2020-12 validator does for those keywords
(a property test compares the two); for a schema using anything else it answers None and the
caller uses jsonschema itself.
"""

from __future__ import annotations

from typing import Any

from . import patterns

ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "format",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$schema",
        "$id",
        "contentMediaType",
        "contentEncoding",
    }
)
CHECKED = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "pattern",
    }
)
SUPPORTED = ANNOTATIONS | CHECKED
TYPES = ("string", "number", "integer", "boolean", "null", "array", "object")


def supported(schema: Any) -> bool:
    """Whether every keyword of `schema` (recursively) is one this fast path answers."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not set(schema) <= SUPPORTED:
        return False
    kind = schema.get("type")
    if kind is not None and not (
        (isinstance(kind, str) and kind in TYPES)
        or (isinstance(kind, list) and kind and all(isinstance(k, str) and k in TYPES for k in kind))
    ):
        return False
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(supported(s) for s in props.values()):
        return False
    for key in ("additionalProperties", "items"):
        if key in schema and not supported(schema[key]):
            return False
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return False
    if "enum" in schema and not isinstance(schema["enum"], list):
        return False
    for key in ("minItems", "maxItems", "minLength", "maxLength"):
        if key in schema and (isinstance(schema[key], bool) or not isinstance(schema[key], int)):
            return False
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema and (isinstance(schema[key], bool) or not isinstance(schema[key], (int, float))):
            return False
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            return False
        if patterns.problem(schema["pattern"]) is not None:
            return False
    return True


def is_type(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return kind == "number" or isinstance(value, int) or value.is_integer()


def equal(a: Any, b: Any) -> bool:
    """JSON equality as jsonschema sees it: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return a is None and b is None


def problems(value: Any, schema: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """(instance path, message) for every failure; the schema must be `supported`."""
    if schema is True:
        return []
    if schema is False:
        return [(path, "False schema does not allow " + repr(value))]
    out: list[tuple[tuple[Any, ...], str]] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(is_type(value, k) for k in kinds):
            shown = ", ".join(repr(k) for k in kinds)
            out.append((path, f"{value!r} is not of type {shown}"))
    if "enum" in schema and not any(equal(value, e) for e in schema["enum"]):
        out.append((path, f"{value!r} is not one of {schema['enum']!r}"))
    if "const" in schema and not equal(value, schema["const"]):
        out.append((path, f"{schema['const']!r} was expected"))
    if isinstance(value, dict):
        out += _object(value, schema, path)
    elif isinstance(value, list):
        out += _array(value, schema, path)
    elif isinstance(value, str):
        out += _string(value, schema, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out += _number(value, schema, path)
    return out


def _object(value: dict[str, Any], schema: dict[str, Any], path: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    props = schema.get("properties", {})
    for name, sub in props.items():
        if name in value:
            out += problems(value[name], sub, (*path, name))
    for name in schema.get("required", []):
        if name not in value:  # WAIT-023: the pointer names the missing member
            out.append(((*path, name), f"{name!r} is a required property"))
    extra = schema.get("additionalProperties")
    if extra is not None:
        unexpected = [k for k in value if k not in props]
        if extra is False:  # WAIT-023: one error per unexpected member, pointing at it
            out += [
                ((*path, k), f"Additional properties are not allowed ({k!r} was unexpected)")
                for k in unexpected
            ]
        elif isinstance(extra, dict):
            for name in unexpected:
                out += problems(value[name], extra, (*path, name))
    return out


def _array(value: list[Any], schema: dict[str, Any], path: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    if "items" in schema:
        for i, item in enumerate(value):
            out += problems(item, schema["items"], (*path, i))
    if "minItems" in schema and len(value) < schema["minItems"]:
        out.append(
            (path, f"{value!r} should be non-empty" if schema["minItems"] == 1 else f"{value!r} is too short")
        )
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        out.append(
            (
                path,
                f"{value!r} is expected to be empty" if schema["maxItems"] == 0 else f"{value!r} is too long",
            )
        )
    return out


def _string(value: str, schema: dict[str, Any], path: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        out.append(
            (
                path,
                f"{value!r} should be non-empty" if schema["minLength"] == 1 else f"{value!r} is too short",
            )
        )
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.append(
            (
                path,
                f"{value!r} is expected to be empty"
                if schema["maxLength"] == 0
                else f"{value!r} is too long",
            )
        )
    if "pattern" in schema and not patterns.search(schema["pattern"], value):
        out.append((path, f"{value!r} does not match {schema['pattern']!r}"))
    return out


def _number(value: float, schema: dict[str, Any], path: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    if "minimum" in schema and value < schema["minimum"]:
        out.append((path, f"{value!r} is less than the minimum of {schema['minimum']!r}"))
    if "maximum" in schema and value > schema["maximum"]:
        out.append((path, f"{value!r} is greater than the maximum of {schema['maximum']!r}"))
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        out.append(
            (path, f"{value!r} is less than or equal to the minimum of {schema['exclusiveMinimum']!r}")
        )
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        out.append(
            (path, f"{value!r} is greater than or equal to the maximum of {schema['exclusiveMaximum']!r}")
        )
    return out
