"""The payload prompt: `swamp workflow signal WAIT_ID` at a terminal, with no `--payload`, asks for
the message from the wait's schema instead of failing with a usage error.

It asks field by field: required fields first, then optional ones (Enter skips them); an enum as
numbered choices; integers, numbers and booleans parsed and checked as they are typed, each value
against its own part of the schema (the same validator `signal` uses), so a mistake is shown at
once and asked again. Nested objects are asked field by field too (to a few levels); anything else
the prompt cannot ask for (arrays, unions, references, a schema with no properties) is typed as
JSON. Then it shows the whole payload, checks it against the whole schema, and asks for a
confirmation (default no). What it returns is the payload as JSON text: `signal` sends it exactly
as it sends `--payload`, with the same checks. Ctrl-C or end of input cancels (the caller sends
nothing). Only the terminal sees it: off a terminal `signal` keeps its usage error.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from ..domain.inputs import InputValidationService
from ..store.notify import readable
from .output import out, stdout, style
from .terminal_text import shown, shown_doc

SCHEMA_SHOWN = 300  # characters of a schema shown above a JSON field (wait show shows it whole)
MAX_DEPTH = 3  # nested objects asked field by field down to this depth; deeper ones as JSON
SIMPLE = ("string", "integer", "number", "boolean", "null")
BOUNDS = (("minimum", "≥"), ("maximum", "≤"), ("minLength", "length ≥"), ("maxLength", "length ≤"))


class Declined(Exception):
    """The person answered no at the confirmation: nothing is sent."""


def ask_payload(wait: dict[str, Any]) -> bytes:
    """Ask for the payload of `wait` (a `workflow.wait.show` result); its JSON text, as typed in
    `--payload`. Raises KeyboardInterrupt or EOFError when cancelled, Declined when refused."""
    schema = wait.get("schema")
    checker = InputValidationService()
    about = shown_doc(wait)  # CLI-030: what is printed of the wait; the schema itself stays exact
    step = f"{about.get('jobName')}.{about.get('stepName')}"
    out(
        f"Wait {style(str(about.get('waitId')), bold=True)}: step {step} "
        f"of {about.get('workflowName')} (run {about.get('runId')})"
    )
    if about.get("description"):
        out(f"  {about['description']}")
    out(f"  deadline {about.get('deadline')}")
    out(style("Enter the payload; Ctrl-C cancels, nothing is sent before you confirm.", dim=True))
    value = _Asker(checker).value(schema, "payload", required=True, depth=0)
    while True:
        problems = _problems(checker, value, schema)
        if not problems:
            break
        out(style("That payload does not fit the wait's schema:", "red"))
        for problem in problems:
            out(f"  - {shown(problem)}")
        value = _Asker(checker).raw_json(schema, "payload", required=True)
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    out("Payload:")
    for line in json.dumps(value, ensure_ascii=False, indent=2).splitlines():
        out(f"  {shown(line)}")
    answer = _ask(f"Send it to {about.get('waitId')}? [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise Declined()
    return text.encode("utf-8")


def _ask(prompt: str) -> str:
    """One line from the terminal (EOFError at end of input, KeyboardInterrupt on Ctrl-C).

    Not `input()`: a Ctrl-C that lands between the prompt being written and the read starting
    would leave `input()` blocked in its read with the interrupt pending. Waiting in `poll` with
    a short timeout lets a pending Ctrl-C be raised within a quarter of a second."""
    out_stream = stdout()
    out_stream.write(shown(prompt))
    out_stream.flush()
    while not readable([sys.stdin.fileno()], 0.25):
        pass
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\r\n")


def _problems(checker: InputValidationService, value: Any, schema: Any) -> list[str]:
    try:
        return [str(p) for p in checker.problems(value, schema)]
    except Exception:  # a part of a schema that cannot stand alone ($ref to its root): the whole decides
        return []


def _kind(schema: Any) -> str | None:
    """The one simple type the prompt can ask for, or None."""
    if not isinstance(schema, dict) or "$ref" in json.dumps(schema):
        return None
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "enum"
    if "const" in schema:
        return "const"
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: asked as a string that may also be null
        others = [k for k in kind if k != "null"]
        kind = others[0] if len(others) == 1 and "null" in kind else None
    if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        return "object" if isinstance(schema.get("properties"), dict) and schema["properties"] else None
    return kind if kind in SIMPLE else None


def _describe(schema: dict[str, Any], kind: str) -> str:
    bounds = [f"{word} {schema[key]}" for key, word in BOUNDS if key in schema]
    return ", ".join([f"{kind} or null" if _nullable(schema) else kind, *bounds])


def _nullable(schema: dict[str, Any]) -> bool:
    return isinstance(schema.get("type"), list) and "null" in schema["type"]


class _Asker:
    def __init__(self, checker: InputValidationService) -> None:
        self.checker = checker

    def value(self, schema: Any, name: str, *, required: bool, depth: int) -> Any:
        """The value of one field (or of the whole payload); `_SKIP` for a skipped optional one."""
        kind = _kind(schema)
        if kind == "object" and depth < MAX_DEPTH:
            return self.fields(schema, name, depth)
        if kind is None or kind == "object":
            return self.raw_json(schema, name, required=required)
        assert isinstance(schema, dict)
        if kind == "const":
            out(f"{name}: {shown(json.dumps(schema['const'], ensure_ascii=False))} (the only value allowed)")
            return schema["const"]
        if kind == "null":
            return None
        if schema.get("description"):
            out(style(f"{name}: {schema['description']}", dim=True))
        if kind == "enum":
            return self.choice(schema, name, required=required)
        return self.typed(schema, kind, name, required=required)

    def fields(self, schema: dict[str, Any], name: str, depth: int) -> dict[str, Any]:
        properties: dict[str, Any] = schema["properties"]
        required = [key for key in schema.get("required") or [] if key in properties]
        optional = [key for key in properties if key not in required]
        prefix = "" if depth == 0 else f"{name}."  # `name` is for people: shown (CLI-030)
        result: dict[str, Any] = {}
        for key in [*required, *optional]:
            label = prefix + shown(key)
            value = self.value(properties[key], label, required=key in required, depth=depth + 1)
            if value is not _SKIP:
                result[key] = value
        return result

    def choice(self, schema: dict[str, Any], name: str, *, required: bool) -> Any:
        options = list(schema["enum"])
        labels = [o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in options]
        out(f"{name}:")
        for number, label in enumerate(labels, 1):
            out(f"  {number}) {shown(label)}")
        hint = f"[1-{len(options)}]" + ("" if required else ", Enter to skip")
        while True:
            text = _ask(f"{name} {hint}: ").strip()
            if not text and not required:
                return _SKIP
            if text.isdigit() and 1 <= int(text) <= len(options):
                return options[int(text) - 1]
            if text in labels:
                return options[labels.index(text)]
            out(style(f"  choose a number from 1 to {len(options)}", "red"))

    def typed(self, schema: dict[str, Any], kind: str, name: str, *, required: bool) -> Any:
        default = schema.get("default")
        has_default = "default" in schema
        suffix = (
            f" (optional, {_describe(schema, kind)}; Enter to skip)"
            if not required
            else f" ({_describe(schema, kind)}"
            + (f"; Enter for {shown(json.dumps(default, ensure_ascii=False))}" if has_default else "")
            + ")"
        )
        while True:
            text = _ask(f"{name}{suffix}: ")
            if (text == "") if kind == "string" else not text.strip():
                if not required:
                    return _SKIP
                if has_default:
                    return default
                empty = ' (type "" for an empty string)' if kind == "string" else ""
                out(style(f"  {name} is required{empty}", "red"))
                continue
            null = _nullable(schema) and text.strip() == "null"
            parsed, problem = (None, None) if null else _parse(text, kind)
            if problem is None:
                problems = _problems(self.checker, parsed, schema)
                if not problems:
                    return parsed
                problem = "; ".join(p.lstrip("/: ") for p in problems)
            out(style(f"  {problem}", "red"))  # style shows it

    def raw_json(self, schema: Any, name: str, *, required: bool) -> Any:
        about = json.dumps(schema, ensure_ascii=False) if schema not in (None, {}, True) else "any JSON value"
        about = shown(about)
        if len(about) > SCHEMA_SHOWN:
            about = about[: SCHEMA_SHOWN - 1] + "…"
        what = "the payload" if name == "payload" else name
        out(f"Type {what} as JSON, on one line (the prompt cannot ask for it field by field).")
        out(style(f"  schema: {about}", dim=True))
        while True:
            text = _ask(f"{name} (JSON{'' if required else ', Enter to skip'}): ")
            if not text.strip():
                if not required:
                    return _SKIP
                out(style(f"  {name} is required", "red"))
                continue
            try:
                parsed = json.loads(text)
            except ValueError as exc:
                out(style(f"  not valid JSON: {exc}", "red"))
                continue
            problems = _problems(self.checker, parsed, schema)
            if not problems:
                return parsed
            for problem in problems:
                out(style(f"  - {problem}", "red"))


def _parse(text: str, kind: str) -> tuple[Any, str | None]:
    """`text` as a value of `kind`, or why it is not one."""
    if kind == "string":
        return ("" if text == '""' else text), None
    stripped = text.strip()
    if kind == "boolean":
        lowered = stripped.lower()
        if lowered in ("y", "yes", "true"):
            return True, None
        if lowered in ("n", "no", "false"):
            return False, None
        return None, "answer yes or no"
    if kind == "integer":
        try:
            return int(stripped), None
        except ValueError:
            return None, "type a whole number"
    try:
        number = json.loads(stripped)
    except ValueError:
        number = None
    if isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number):
        return number, None
    return None, "type a number"


class _Skip:
    """An optional field left out."""


_SKIP: Any = _Skip()
