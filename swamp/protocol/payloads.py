"""Request payloads checked against spec/schemas/requests.schema.json, compiled once per type.

The schema is the one statement of what each request takes (PROTO-010); this module turns a
type's `$defs` entry into a small check (field names, required ones, allowed JSON types, bounds)
the first time that type is asked for, so a request costs a dict walk, not a jsonschema validation,
and jsonschema is never imported on the signal path. It compiles only the keywords request payloads
use (`type`, `properties`, `required`, `additionalProperties: false`, a local `$ref`, annotations;
for a field `minimum` and `maximum`, and `items` with `type`, `enum` and `minLength`);
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
FIELD_KEYWORDS = frozenset({"type", "minimum", "maximum", "items"})
ITEM_KEYWORDS = frozenset({"type", "enum", "minLength"})
JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "null", "object", "array"})
WANTED = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
}
PLURAL = {
    "string": "strings",
    "integer": "integers",
    "number": "numbers",
    "boolean": "booleans",
    "null": "nulls",
    "object": "objects",
    "array": "arrays",
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

    __slots__ = ("name", "kinds", "required", "accepts", "limits")

    def __init__(
        self, name: str, kinds: frozenset[str] | None, required: bool, limits: Limits | None = None
    ) -> None:
        self.name = name
        self.kinds = kinds
        self.required = required
        # exact Python types that pass as they are (the fast path): type(True) is bool, never int
        self.accepts = frozenset(t for k in kinds or () for t in PYTHON_TYPES[k])
        self.limits = limits  # None: the type is the whole rule (most fields)


class Limits:
    """What a field's schema says beyond its type: a number's bounds, an array's items."""

    __slots__ = ("minimum", "maximum", "item_kinds", "item_enum", "item_min_length")

    def __init__(self, schema: dict[str, Any], items: dict[str, Any]) -> None:
        self.minimum: float | None = schema.get("minimum")
        self.maximum: float | None = schema.get("maximum")
        kinds = items.get("type")
        self.item_kinds: frozenset[str] | None = (
            None if kinds is None else frozenset(kinds if isinstance(kinds, list) else [kinds])
        )
        self.item_enum: tuple[Any, ...] | None = tuple(items["enum"]) if "enum" in items else None
        self.item_min_length: int | None = items.get("minLength")

    def check(self, request_type: str, name: str, value: Any) -> None:
        """Refuse a value of the field's type that its bounds or item rules do not allow."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum
            ):
                raise _wrong(request_type, name, self._range())
        elif isinstance(value, list):
            for item in value:
                self._check_item(request_type, name, item)

    def _range(self) -> str:
        bounds = [f">= {_number(self.minimum)}"] if self.minimum is not None else []
        bounds += [f"<= {_number(self.maximum)}"] if self.maximum is not None else []
        return "a finite number " + " and ".join(bounds)

    def _check_item(self, request_type: str, name: str, item: Any) -> None:
        kinds = self.item_kinds
        if kinds is not None and not _is_kind(item, kinds):
            raise _wrong(request_type, name, "an array of " + " or ".join(PLURAL[k] for k in sorted(kinds)))
        if self.item_enum is not None and not any(_same(item, allowed) for allowed in self.item_enum):
            raise InvalidRequest(
                f"{item!r} in '{name}' of the payload of '{request_type}' is not one of: "
                + ", ".join(str(allowed) for allowed in self.item_enum),
                {"field": name, "value": item},
            )
        least = self.item_min_length
        if least is not None and isinstance(item, str) and len(item) < least:
            wanted = "non-empty strings" if least == 1 else f"strings of at least {least} characters"
            raise _wrong(request_type, name, "an array of " + wanted)


def _number(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _is_kind(value: Any, kinds: frozenset[str]) -> bool:
    kind = json_type(value)
    if kind in kinds:
        return True
    if kind == "integer" and "number" in kinds:
        return True
    return kind == "number" and "integer" in kinds and math.isfinite(value) and float(value).is_integer()


def _same(value: Any, allowed: Any) -> bool:
    """JSON equality: true is not 1."""
    return bool(value == allowed and isinstance(value, bool) == isinstance(allowed, bool))


def _wrong(request_type: str, name: str, wanted: str) -> InvalidRequest:
    return InvalidRequest(f"'{name}' in the payload of '{request_type}' must be {wanted}", {"field": name})


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
                if field.limits is not None and value is not None:
                    field.limits.check(self.request_type, name, value)
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
                if field.limits is not None:
                    field.limits.check(self.request_type, name, value)
                continue
            if json_type(value) in field.kinds and not isinstance(value, bool):
                # a subclass of an accepted type (an int subclass, a marked dict)
                if field.limits is not None:
                    field.limits.check(self.request_type, name, value)
                continue
            raise self._wrong(name, " or ".join(WANTED[k] for k in sorted(field.kinds - {"null"})))
        return normalized if normalized is not None else payload

    def _missing(self, name: str) -> InvalidRequest:
        return InvalidRequest(f"payload of '{self.request_type}' needs '{name}'", {"missing": name})

    def _wrong(self, name: str, wanted: str) -> InvalidRequest:
        return _wrong(self.request_type, name, wanted)


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
            kinds, limits = self._field(sub, f"{where}/properties/{name}")
            fields.append(FieldCheck(name, kinds, name in required, limits))
        if set(required) - set(properties):
            raise SchemaNotCompilable(f"{where}: required names a field it does not define")
        return PayloadCheck(request_type, tuple(fields))

    def _field(self, schema: Any, where: str) -> tuple[frozenset[str] | None, Limits | None]:
        schema = self._resolve(schema, where)
        if schema is True:
            return None, None
        if not isinstance(schema, dict) or set(schema) - ANNOTATIONS - FIELD_KEYWORDS:
            raise SchemaNotCompilable(
                f"{where}: a field's schema compiles only from `type`, `minimum`, `maximum`, `items` "
                "and annotations"
            )
        for bound in ("minimum", "maximum"):
            if bound in schema and (
                not isinstance(schema[bound], (int, float)) or isinstance(schema[bound], bool)
            ):
                raise SchemaNotCompilable(f"{where}: {bound} must be a number")
        items = self._resolve(schema.get("items", {}), f"{where}/items")
        if not isinstance(items, dict) or set(items) - ANNOTATIONS - ITEM_KEYWORDS:
            raise SchemaNotCompilable(f"{where}/items: compiles only from `type`, `enum`, `minLength`")
        if "type" in items:
            self._kinds(items["type"], f"{where}/items")
        limits = Limits(schema, items) if set(schema) & {"minimum", "maximum", "items"} else None
        if "type" not in schema:
            return None, limits
        return self._kinds(schema["type"], where), limits

    def _kinds(self, declared: Any, where: str) -> frozenset[str]:
        kinds = declared if isinstance(declared, list) else [declared]
        if not kinds or not set(kinds) <= JSON_TYPES:
            raise SchemaNotCompilable(f"{where}: unknown type {declared!r}")
        return frozenset(kinds)


@functools.cache
def request_schemas() -> RequestSchemas:
    """The installed requests.schema.json, read once per process."""
    return RequestSchemas.load()
