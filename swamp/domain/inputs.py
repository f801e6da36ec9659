"""InputValidationService: one JSON Schema dialect (Draft 2020-12) for workflow inputs and payloads.

A schema may only reference itself (`$ref: "#/..."`); remote references are refused when the schema
is checked and never fetched. Patterns run on RE2, in time linear in the value (patterns.py); one RE2
cannot run is refused when the schema is checked. Validators are compiled once per schema text.
The meta-schema check asks jsonschema only when schemacheck.py cannot vouch for the schema.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from . import patterns, schemacheck
from .errors import InputInvalid


@dataclass(frozen=True)
class SchemaProblem:
    pointer: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"pointer": self.pointer, "message": self.message}

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message}"


def _pointer(path: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _member_problems(error: Any) -> list[tuple[list[Any], str]]:
    """`error` as (path, message) with the path of the member at fault (WAIT-023): a missing
    member's own path for `required`, one problem per unexpected member for
    `additionalProperties: false`; every other error has the path of the value that fails."""
    where = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        for name in error.validator_value:
            if isinstance(name, str) and error.message == f"{name!r} is a required property":
                return [([*where, name], error.message)]
    if error.validator == "additionalProperties" and error.validator_value is False:
        from jsonschema._utils import find_additional_properties

        extras = list(find_additional_properties(error.instance, error.schema))
        if extras and isinstance(error.instance, dict):
            return [
                ([*where, k], f"Additional properties are not allowed ({k!r} was unexpected)") for k in extras
            ]
    return [(where, error.message)]


DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})  # their values are data, not schemas
REF_KEYWORDS = ("$ref", "$dynamicRef")


def _refs(schema: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in REF_KEYWORDS and isinstance(value, str):
                yield f"{path}/{key}", value
            elif key not in DATA_KEYWORDS:
                yield from _refs(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from _refs(value, f"{path}/{i}")


def _resolves(schema: Any, ref: str) -> bool:
    """Whether a local reference ('#', '#/a/b') points at something in `schema`."""
    if ref in ("#", ""):
        return True
    if not ref.startswith("#/"):
        return True  # an anchor ('#name'): jsonschema resolves those itself
    from .jsonpointer import MISSING, pointer_target

    return pointer_target(schema, ref[2:].split("/")) is not MISSING


def _refuse_retrieval(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


class InputValidationService:
    def __init__(self) -> None:
        self._validators: dict[str, Any] = {}

    def schema_problems(self, schema: Any) -> list[str]:
        """Why `schema` is not an acceptable JSON Schema (empty when it is)."""
        if not isinstance(schema, (dict, bool)):
            return ["a schema must be a mapping (a JSON Schema object)"]
        problems = [
            f"{where}: only local references ('#/...') are allowed, got '{ref}'"
            for where, ref in _refs(schema)
            if not ref.startswith("#")
        ]
        problems += [
            f"{where}: '{ref}' points at nothing in this schema"
            for where, ref in _refs(schema)
            if ref.startswith("#") and not _resolves(schema, ref)
        ]
        if not schemacheck.meta_valid(schema):  # not surely valid: jsonschema says what is wrong
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                problems.append(f"{_pointer(exc.absolute_path) or '/'}: {exc.message}")
        return problems + patterns.pattern_problems(schema)

    def _validator(self, schema: Any) -> Any:
        key = json.dumps(schema, sort_keys=True)
        validator = self._validators.get(key)
        if validator is None:
            from jsonschema import Draft202012Validator
            from referencing import Registry

            patterns.install_in_jsonschema()
            validator = Draft202012Validator(
                schema,
                registry=Registry(retrieve=_refuse_retrieval),  # type: ignore[call-arg]
            )
            self._validators[key] = validator
        return validator

    def problems(self, value: Any, schema: Any) -> list[SchemaProblem]:
        """Every way `value` fails `schema`, each with its JSON pointer, in document order."""
        from . import fastschema

        if fastschema.supported(schema):
            found = sorted(fastschema.problems(value, schema), key=lambda p: (list(map(str, p[0])), p[1]))
            return [SchemaProblem(_pointer(where), message) for where, message in found]
        unrunnable = patterns.pattern_problems(schema)
        if unrunnable:  # a schema captured before INPUT-015: refuse rather than backtrack
            return [SchemaProblem("", "the schema cannot be checked: " + p) for p in unrunnable]
        checked = sorted(
            (p for e in self._validator(schema).iter_errors(value) for p in _member_problems(e)),
            key=lambda p: (list(map(str, p[0])), p[1]),
        )
        return [SchemaProblem(_pointer(where), message) for where, message in checked]

    # -- workflow inputs ------------------------------------------------------------------------

    @staticmethod
    def coerce(values: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
        """Strings given on a command line become the declared top-level types."""
        props = schema.get("properties") or {}
        out = dict(values)
        for key, value in values.items():
            declared = props.get(key, {}).get("type") if isinstance(props.get(key), dict) else None
            if not isinstance(value, str) or declared in (None, "string"):
                continue
            out[key] = _coerce_one(value, declared)
        return out

    @staticmethod
    def apply_defaults(values: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
        out = dict(values)
        for key, prop in (schema.get("properties") or {}).items():
            if key not in out and isinstance(prop, dict) and "default" in prop:
                out[key] = copy.deepcopy(prop["default"])
        return out

    def prepare_inputs(self, values: dict[str, Any], schema: dict[str, Any] | None) -> dict[str, Any]:
        """Coerce, apply defaults and validate. Raises InputInvalid listing every problem."""
        if schema is None:
            return dict(values)
        prepared = self.apply_defaults(self.coerce(values, schema), schema)
        problems = self.problems(prepared, schema)
        if problems:
            listed = "; ".join(str(p) for p in problems)
            raise InputInvalid(
                f"Input validation failed: {listed}. Fix the --input values and run again.",
                {"errors": [p.to_dict() for p in problems]},
            )
        return prepared


def _coerce_one(value: str, declared: Any) -> Any:
    types = declared if isinstance(declared, list) else [declared]
    for kind in types:
        if kind in ("integer", "number"):
            try:
                number = float(value)
            except ValueError:
                continue
            if kind == "integer" and number.is_integer():
                return int(number)
            if kind == "number":
                return number  # a double, so CEL arithmetic with other doubles works
        elif kind == "boolean" and value in ("true", "false"):
            return value == "true"
        elif kind in ("array", "object"):
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            if isinstance(parsed, list if kind == "array" else dict):
                return parsed
        elif kind == "null" and value == "null":
            return None
    return value
