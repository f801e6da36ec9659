"""`${{ }}` expressions: scanning, substitution, JavaScript truthiness, and CEL behind one interface.

An expression's value keeps its type when the expression is the whole string; an expression
embedded in text is stringified the way the original swamp does (null as empty, objects as
2-space JSON, booleans as true/false). Payloads and other data are never scanned: only fields of
a workflow definition go through `render`.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ExpressionError

EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}", re.S)
CONTEXT_NAMES = ("inputs", "self", "run", "env", "steps")


def expressions_in(text: str) -> list[str]:
    return [m.group(1) for m in EXPRESSION.finditer(text)]


def whole_expression(text: str) -> str | None:
    """The inner source when `text` is exactly one `${{ }}` expression (spaces around allowed)."""
    stripped = text.strip()
    matches = list(EXPRESSION.finditer(stripped))
    if len(matches) == 1 and matches[0].start() == 0 and matches[0].end() == len(stripped):
        return matches[0].group(1)
    return None


def is_truthy(value: Any) -> bool:
    """JavaScript truthiness: [] and {} are truthy; 0, "", null, false and NaN are falsy."""
    if value is None or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return not (value == 0 or (isinstance(value, float) and math.isnan(value)))
    if isinstance(value, str):
        return value != ""
    return True


def js_string(value: Any) -> str:
    """How a value reads when embedded in text (JavaScript `String()`, objects as JSON)."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return str(value)


def _plain(value: Any) -> Any:
    """CEL results as JSON-ready Python values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.timedelta):
        return f"{value.total_seconds()}s"
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def ensure_json(value: Any) -> Any:
    """Refuse values a JSON record cannot hold (NaN, Infinity), before they are stored."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError(f"the expression gives {value}, which JSON cannot hold")
    if isinstance(value, dict):
        for item in value.values():
            ensure_json(item)
    elif isinstance(value, list):
        for item in value:
            ensure_json(item)
    return value


class Scope:
    """One snapshot of the expression context (inputs, self, run, env, steps).

    The CEL activation is built once per scope and converts each variable lazily, the first time
    an expression touches it, so a scope is cheap to make and to share between expressions.
    """

    def __init__(self, variables: Mapping[str, Any]):
        self.variables = {name: variables.get(name, {}) for name in CONTEXT_NAMES}
        self._activation: Any = None

    def with_self(self, item: Mapping[str, Any]) -> Scope:
        return Scope({**self.variables, "self": {**self.variables.get("self", {}), **item}})

    def activation(self, env: Any) -> Any:
        if self._activation is None:
            self._activation = env.Activation(self.variables)
        return self._activation


class ExpressionEngine:
    """Compiles CEL once per source text and evaluates it against a Scope."""

    def __init__(self) -> None:
        from cel_expr_python import cel

        self._cel = cel
        self._env = cel.NewEnv(variables={name: cel.Type.DYN for name in CONTEXT_NAMES})
        self._programs: dict[str, Any] = {}

    def compile(self, source: str) -> Any:
        program = self._programs.get(source)
        if program is not None:
            return program
        try:
            program = self._env.compile(source)
        except RuntimeError as exc:
            message = _clean(str(exc))
            if "undeclared reference" in message or "Syntax error" in message:
                raise ExpressionError(message, {"expression": source}) from None
            # The checker rejects some mixed int/double literals that are fine on JSON data.
            try:
                program = self._env.compile(source, disable_check=True)
            except RuntimeError as exc2:
                raise ExpressionError(_clean(str(exc2)), {"expression": source}) from None
        self._programs[source] = program
        return program

    def evaluate(self, source: str, scope: Scope) -> Any:
        program = self.compile(source)
        try:
            value = program.eval(scope.activation(self._env))
        except Exception as exc:  # the library reports most errors as values, but not all
            raise ExpressionError(_clean(str(exc)), {"expression": source}) from None
        if value.type() == self._cel.Type.ERROR:
            raise ExpressionError(_clean(str(value.value())), {"expression": source})
        return _plain(value.plain_value())

    def render(self, value: Any, scope: Scope) -> Any:
        """Substitute every `${{ }}` in strings inside `value` (dicts and lists walked)."""
        if isinstance(value, str):
            return self.render_text(value, scope)
        if isinstance(value, dict):
            return {k: self.render(v, scope) for k, v in value.items()}
        if isinstance(value, list):
            return [self.render(v, scope) for v in value]
        return value

    def render_text(self, text: str, scope: Scope, quote: Callable[[str], str] | None = None) -> Any:
        """With `quote` (for text that a shell will parse) every value is inserted as quoted text,
        so data such as a signal payload can never become code."""
        if "${{" not in text:
            return text
        whole = whole_expression(text)
        if whole is not None and quote is None:
            return self.evaluate(whole, scope)
        wrap = quote or (lambda piece: piece)
        return EXPRESSION.sub(lambda m: wrap(js_string(self.evaluate(m.group(1), scope))), text)


def _clean(message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "expression failed"
    for prefix in ("INVALID_ARGUMENT: ", "NOT_FOUND: "):
        if first.startswith(prefix):
            first = first[len(prefix) :]
    return first.replace("ERROR: <input>:", "at ")
