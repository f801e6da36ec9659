"""Request payloads checked against spec/schemas/requests.schema.json, compiled once per type.

The schema is the one statement of what each request takes (PROTO-010); this module turns a
type's `$defs` entry into a small check (field names, required ones, allowed JSON types) the first
time that type is asked for, so a request costs a dict walk, not a jsonschema validation, and
jsonschema is never imported on the signal path. It compiles only the keywords request payloads
use (`type`, `properties`, `required`, `additionalProperties: false`, a local `$ref`, annotations);
a schema with any other keyword is refused when it is compiled (tests/test_request_schemas.py
compiles every type and compares the verdicts with jsonschema's).

The refusals are PROTO-007's `invalid_request`, each message naming the field. Two readings go
beyond the schema's words, for callers inside this process: a `bytes` value is a string (the CLI
passes a payload file's raw bytes as `payloadText`), and a number must be finite (NaN and
infinity are not JSON). An integral float for an `integer` field becomes an int (JSON counts 2.0
as an integer; the use case gets 2).
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

from ..domain.errors import InvalidRequest

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
REQUESTS_SCHEMA = SCHEMAS / "requests.schema.json"
ANNOTATIONS = frozenset({"description", "title", "$comment", "default", "examples"})
JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "null", "object", "array"})
WANTED = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
}


PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str, bytes),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}


class FieldCheck:
    """One field of a payload: its name, the JSON types it takes (None: any), whether it is needed.

    A plain class, not a dataclass: a dataclass compiles its methods when its module is imported,
    which every command pays for before its first request (measured: ~1 ms per dataclass)."""

    __slots__ = ("name", "kinds", "required", "accepts")

    def __init__(self, name: str, kinds: frozenset[str] | None, required: bool) -> None:
        self.name = name
        self.kinds = kinds
        self.required = required
        # exact Python types that pass as they are (the fast path): type(True) is bool, never int
        self.accepts = frozenset(t for k in kinds or () for t in PYTHON_TYPES[k])


class PayloadCheck:
    """One request type's payload rule, compiled from its schema."""

    __slots__ = ("request_type", "fields", "names")

    def __init__(self, request_type: str, fields: tuple[FieldCheck, ...]) -> None:
        self.request_type = request_type
        self.fields = fields
        self.names = frozenset(f.name for f in fields)

    def __call__(self, payload: Any) -> dict[str, Any]:
        if payload is None:
            payload = {}
        if not isinstance(payload, dict):
            raise InvalidRequest(f"payload of '{self.request_type}' must be an object")
        if not self.names.issuperset(payload):
            unknown = sorted(str(k) for k in payload if k not in self.names)
            valid = ", ".join(f.name for f in self.fields) or "none"
            raise InvalidRequest(
                f"payload of '{self.request_type}' has unknown field(s): {', '.join(unknown)}; "
                f"valid fields: {valid}",
                {"unknown": unknown},
            )
        normalized: dict[str, Any] | None = None
        for field in self.fields:
            name = field.name
            if name not in payload:
                if field.required:
                    raise self._missing(name)
                continue
            value = payload[name]
            kind = type(value)
            if kind in field.accepts:
                if kind is float and not math.isfinite(value):
                    raise self._wrong(name, "a finite number")
                continue
            if field.kinds is None:
                continue
            if value is None:
                if field.required:
                    raise self._missing(name)
                continue  # "null" is in accepts for every optional field; kept for other schemas
            if isinstance(value, float) and "integer" in field.kinds and value.is_integer():
                normalized = normalized if normalized is not None else dict(payload)
                normalized[name] = int(value)
                continue
            if json_type(value) in field.kinds and not isinstance(value, bool):
                continue  # a subclass of an accepted type (an int subclass, a marked dict)
            raise self._wrong(name, " or ".join(WANTED[k] for k in sorted(field.kinds - {"null"})))
        return normalized if normalized is not None else payload

    def _missing(self, name: str) -> InvalidRequest:
        return InvalidRequest(f"payload of '{self.request_type}' needs '{name}'", {"missing": name})

    def _wrong(self, name: str, wanted: str) -> InvalidRequest:
        return InvalidRequest(
            f"'{name}' in the payload of '{self.request_type}' must be {wanted}", {"field": name}
        )


def json_type(value: Any) -> str | None:
    """The JSON type of a value as read from a frame (bytes count as a string; None: not JSON)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, (str, bytes)):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return None


class SchemaNotCompilable(ValueError):
    """The schema says something this compiler would not check; widen the compiler or the schema."""


class RequestSchemas:
    """The `$defs` of requests.schema.json, each compiled on first use."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.defs: dict[str, Any] = document.get("$defs", {})
        self.types: tuple[str, ...] = tuple(document["properties"]["type"]["enum"])
        self._compiled: dict[str, PayloadCheck] = {}

    @classmethod
    def load(cls, path: Path = REQUESTS_SCHEMA) -> RequestSchemas:
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def check(self, request_type: str) -> PayloadCheck:
        found = self._compiled.get(request_type)
        if found is None:
            found = self._compiled[request_type] = self.compile(request_type)
        return found

    def _resolve(self, schema: Any, where: str) -> Any:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema:
            ref = schema["$ref"]
            if len(schema) > 1 and set(schema) - ANNOTATIONS - {"$ref"}:
                raise SchemaNotCompilable(f"{where}: $ref beside other keywords")
            if not isinstance(ref, str) or not ref.startswith("#/$defs/") or seen > 16:
                raise SchemaNotCompilable(f"{where}: only local #/$defs/ references compile, not {ref!r}")
            schema = self.defs[ref[len("#/$defs/") :]]
            seen += 1
        return schema

    def compile(self, request_type: str) -> PayloadCheck:
        where = f"requests.schema.json#/$defs/{request_type}"
        if request_type not in self.types or request_type not in self.defs:
            raise SchemaNotCompilable(f"{where}: no such request type")
        schema = self._resolve(self.defs[request_type], where)
        extra = set(schema) - ANNOTATIONS - {"type", "properties", "required", "additionalProperties"}
        if extra or schema.get("type") != "object" or schema.get("additionalProperties") is not False:
            raise SchemaNotCompilable(
                f"{where}: a payload is an object with additionalProperties false and nothing else"
                + (f" (found {sorted(extra)})" if extra else "")
            )
        required = schema.get("required", [])
        properties = schema.get("properties", {})
        fields = []
        for name, sub in properties.items():
            kinds = self._kinds(sub, f"{where}/properties/{name}")
            fields.append(FieldCheck(name, kinds, name in required))
        if set(required) - set(properties):
            raise SchemaNotCompilable(f"{where}: required names a field it does not define")
        return PayloadCheck(request_type, tuple(fields))

    def _kinds(self, schema: Any, where: str) -> frozenset[str] | None:
        schema = self._resolve(schema, where)
        if schema is True:
            return None
        if not isinstance(schema, dict) or set(schema) - ANNOTATIONS - {"type"}:
            raise SchemaNotCompilable(f"{where}: a field's schema compiles only from `type` and annotations")
        if "type" not in schema:
            return None
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not kinds or not set(kinds) <= JSON_TYPES:
            raise SchemaNotCompilable(f"{where}: unknown type {schema['type']!r}")
        return frozenset(kinds)


@functools.cache
def request_schemas() -> RequestSchemas:
    """The installed requests.schema.json, read once per process."""
    return RequestSchemas.load()
