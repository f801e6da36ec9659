"""An answer form from a wait's captured JSON Schema, and the submitted form back into a payload.

Pure functions (no Starlette, no Jinja2): `build_form` turns a schema into fields the page template
renders, `read_form` turns the submitted fields back into a JSON payload (typed by the schema), and
`errors_by_field` places the core's refusals (JSON pointers) beside the fields they concern.

The form only shapes what a person types: it checks nothing the schema says. A value it cannot
type (an integer field holding "abc") goes to the core as typed, and the core's own schema check
refuses it with the core's message (GATEWAY-026), so the rules of a payload live in one place. The
one refusal made here is a JSON textarea that does not parse: there is no value to send.

A field's name is `$` followed by the JSON pointer of the value it fills (`$/verdict`,
`$/details/notes`; `$` alone for a payload that is not an object), so a pointer in a core error
finds its field by name, and no schema property can collide with the form's own fields (`_csrf`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..domain.jsonpointer import MISSING, pointer_target

LONG_ENUM = 6  # more choices than this: a select instead of radio buttons
SHORT_TEXT = 120  # a string whose maxLength is at most this is one line; longer (or unbounded) a textarea
MAX_DEPTH = 6  # nested objects deeper than this are a JSON textarea
INPUT_FORMATS = {"date": "date", "email": "email", "uri": "url", "url": "url"}

Form = Mapping[str, list[str]]  # the submitted fields: each name with its values, in order


@dataclass
class Option:
    value: str  # what the browser sends: the string itself, or the JSON of a value that is not one
    label: str
    checked: bool = False


@dataclass
class Field:
    """One control of the form (or a fieldset of them, `kind == "fieldset"`)."""

    name: str
    kind: str  # radio, select, checkbox, checkboxes, input, textarea, json, fieldset
    label: str
    required: bool
    id: str = ""
    input_type: str = "text"  # for kind "input": text, number, date, email, url
    description: str | None = None
    value: str = ""  # what the control shows (typed, or the default)
    checked: bool = False  # a checkbox
    options: list[Option] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)  # min, max, step, maxlength, minlength
    children: list[Field] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def walk(self) -> list[Field]:
        return [self, *(f for child in self.children for f in child.walk())]


def field_name(pointer: str) -> str:
    return "$" + pointer


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _resolve(schema: Any, root: Any, depth: int = 0) -> Any:
    """A schema with a local `$ref` ('#/$defs/x') followed; anything else as it is."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < 8:
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        node = pointer_target(root, ref[1:].split("/")[1:])
        if node is MISSING:
            return schema
        schema, depth = node, depth + 1
    return schema


def _type(schema: dict[str, Any]) -> str | None:
    """The one type a control can stand for: a `type`, or a type with `null` beside it."""
    kind = schema.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return others[0] if len(others) == 1 and isinstance(others[0], str) else None
    return kind if isinstance(kind, str) else None


def _enum_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _enum_of(schema: Any) -> list[Any] | None:
    if isinstance(schema, dict):
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return list(schema["enum"])
        if "const" in schema:
            return [schema["const"]]
    return None


def _number_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    return str(value)


@dataclass
class _Builder:
    root: Any
    form: Form | None  # the submitted fields, when showing them again
    ids: int = 0

    def submitted(self, name: str) -> list[str] | None:
        return None if self.form is None else list(self.form.get(name, []))

    def shown(self, typed: list[str] | None, default: Any) -> Any:
        """What a control shows: what was submitted (even nothing), else the schema's default."""
        if self.form is None:
            return default
        return typed[0] if typed else ""

    def next_id(self) -> str:
        self.ids += 1
        return f"f{self.ids}"

    def build(self, schema: Any, pointer: str, label: str, required: bool, default: Any, depth: int) -> Field:
        schema = _resolve(schema, self.root)
        if not isinstance(schema, dict):
            schema = {}
        if "default" in schema and default is None:
            default = schema["default"]
        name = field_name(pointer)
        title = schema.get("title") if isinstance(schema.get("title"), str) else None
        description = schema.get("description") if isinstance(schema.get("description"), str) else None
        f = Field(name=name, kind="json", label=title or label, required=required, description=description)
        f.id = self.next_id()
        typed = self.submitted(name)
        kind = _type(schema)
        enum = _enum_of(schema)
        items = _resolve(schema.get("items"), self.root)
        if enum is not None:
            chosen = self.shown(typed, None if default is None else _enum_text(default))
            f.options = [Option(_enum_text(v), _enum_text(v), _enum_text(v) == chosen) for v in enum]
            f.kind = "select" if len(enum) > LONG_ENUM else "radio"
        elif kind == "boolean":
            f.kind = "checkbox"
            f.checked = "true" in (typed or []) if self.form is not None else default is True
        elif kind == "array" and _enum_of(items) is not None:
            picked = (
                set(typed or [])
                if self.form is not None
                else {_enum_text(v) for v in (default if isinstance(default, list) else [])}
            )
            f.kind = "checkboxes"
            choices = [_enum_text(v) for v in _enum_of(items) or []]
            f.options = [Option(text, text, text in picked) for text in choices]
        elif kind == "object" and isinstance(schema.get("properties"), dict) and depth < MAX_DEPTH:
            f.kind = "fieldset"
            needed = schema.get("required") if isinstance(schema.get("required"), list) else []
            defaults = default if isinstance(default, dict) else {}
            for key, sub in schema["properties"].items():
                f.children.append(
                    self.build(
                        sub, f"{pointer}/{_escape(key)}", key, key in needed, defaults.get(key), depth + 1
                    )
                )
        elif kind == "string":
            f.kind = "input"
            fmt = schema.get("format")
            max_length = schema.get("maxLength")
            if isinstance(fmt, str) and fmt in INPUT_FORMATS:
                f.input_type = INPUT_FORMATS[fmt]
            elif not (isinstance(max_length, int) and max_length <= SHORT_TEXT) and "pattern" not in schema:
                f.kind = "textarea"
            for key, attr in (("maxLength", "maxlength"), ("minLength", "minlength")):
                if isinstance(schema.get(key), int) and not isinstance(schema.get(key), bool):
                    f.attrs[attr] = str(schema[key])
            f.value = self.shown(typed, default if isinstance(default, str) else "")
        elif kind in ("integer", "number"):
            f.kind, f.input_type = "input", "number"
            low = schema.get("minimum", schema.get("exclusiveMinimum"))
            high = schema.get("maximum", schema.get("exclusiveMaximum"))
            if _number_text(low):
                f.attrs["min"] = _number_text(low)
            if _number_text(high):
                f.attrs["max"] = _number_text(high)
            step = schema.get("multipleOf")
            f.attrs["step"] = _number_text(step) or ("1" if kind == "integer" else "any")
            f.value = self.shown(typed, _number_text(default))
        else:
            f.kind = "json"
            f.value = self.shown(typed, "" if default is None else json.dumps(default, indent=2))
        return f


def build_form(schema: Any, form: Form | None = None) -> list[Field]:
    """The fields of an answer form for a wait's schema: its properties, each as the control that
    fits it, required ones marked, defaults filled (or, given `form`, what was submitted)."""
    builder = _Builder(schema, form)
    root = _resolve(schema, schema)
    if isinstance(root, dict) and _type(root) == "object" and isinstance(root.get("properties"), dict):
        top = builder.build(root, "", "", True, None, 0)
        return top.children
    return [builder.build(root, "", "Answer", True, None, 0)]


@dataclass
class Reading:
    """A submitted form read against the schema: the payload, and fields whose text is not JSON."""

    payload: Any
    has_payload: bool
    errors: dict[str, list[str]]


_INTEGER = re.compile(r"[+-]?\d+")


def _number(text: str, integer: bool) -> Any:
    """A number typed in a field; text that is no finite number stays text (the core refuses it)."""
    stripped = text.strip()
    if _INTEGER.fullmatch(stripped) and len(stripped) <= 400:
        return int(stripped)
    try:
        value = float(stripped)
    except ValueError:
        return text
    if not math.isfinite(value):
        return text
    return int(value) if integer and value.is_integer() else value


def _enum_value(text: str, enum: list[Any]) -> Any:
    for value in enum:
        if _enum_text(value) == text:
            return value
    return text  # not one of the choices: the core refuses it, naming them


_ABSENT = object()


def _read(f: Field, schema: Any, root: Any, form: Form, errors: dict[str, list[str]]) -> Any:
    schema = _resolve(schema, root)
    schema = schema if isinstance(schema, dict) else {}
    values = list(form.get(f.name, []))
    text = values[0] if values else ""
    if f.kind == "fieldset":
        properties = schema.get("properties") or {}
        out: dict[str, Any] = {}
        for child, (key, sub) in zip(f.children, properties.items(), strict=True):
            value = _read(child, sub, root, form, errors)
            if value is not _ABSENT:
                out[key] = value
        return out if out or f.required else _ABSENT
    if f.kind == "checkbox":
        return "true" in values
    if f.kind == "checkboxes":
        enum = _enum_of(_resolve(schema.get("items"), root)) or []
        chosen = [_enum_value(v, enum) for v in values]
        return chosen if chosen or f.required else _ABSENT
    if text == "":
        return _ABSENT  # an empty field is left out (a required one: the core says it is missing)
    if f.kind in ("radio", "select"):
        return _enum_value(text, _enum_of(schema) or [])
    if f.kind == "input" and f.input_type == "number":
        return _number(text, _type(schema) == "integer")
    if f.kind in ("input", "textarea"):
        return text
    try:
        return json.loads(text)
    except ValueError as exc:
        errors.setdefault(f.name, []).append(f"This is not JSON: {exc}")
        return _ABSENT


def read_form(schema: Any, form: Form) -> Reading:
    """The payload a submitted form stands for, typed by the schema: an integer field's "3" is 3,
    an empty optional field is left out, a checkbox is true or false, a JSON textarea is parsed
    (text that does not parse is an error of that field, and the payload leaves it out)."""
    fields = build_form(schema, form)
    errors: dict[str, list[str]] = {}
    root = _resolve(schema, schema)
    if len(fields) == 1 and fields[0].name == "$":
        value = _read(fields[0], root, schema, form, errors)
        return Reading(None if value is _ABSENT else value, value is not _ABSENT, errors)
    properties = root.get("properties") if isinstance(root, dict) else {}
    payload: dict[str, Any] = {}
    for f, (key, sub) in zip(fields, (properties or {}).items(), strict=True):
        value = _read(f, sub, schema, form, errors)
        if value is not _ABSENT:
            payload[key] = value
    return Reading(payload, True, errors)


def errors_by_field(fields: list[Field], problems: list[Any]) -> tuple[dict[str, list[str]], list[str]]:
    """The core's schema problems (`{pointer, message}`) by the field each concerns: the field of the
    pointer, or of its nearest enclosing value that has one; a problem of the payload as a whole
    (or of no field) is general."""
    names = {f.name for top in fields for f in top.walk()}
    by_field: dict[str, list[str]] = {}
    general: list[str] = []
    for problem in problems:
        pointer = str(problem.get("pointer", "")) if isinstance(problem, dict) else ""
        message = str(problem.get("message", problem)) if isinstance(problem, dict) else str(problem)
        while pointer and field_name(pointer) not in names:
            pointer = pointer.rpartition("/")[0]
        name = field_name(pointer)
        if name in names:
            by_field.setdefault(name, []).append(message)
        else:
            general.append(message)
    return by_field, general


def attach_errors(fields: list[Field], errors: Mapping[str, list[str]]) -> None:
    for top in fields:
        for f in top.walk():
            f.errors = list(errors.get(f.name, []))
