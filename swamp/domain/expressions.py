"""`${{ }}` expressions: scanning, substitution, JavaScript truthiness, and CEL behind one interface.

An expression's value keeps its type when the expression is the whole string; an expression
embedded in text is stringified the way the original swamp does (null as empty, objects as
2-space JSON, booleans as true/false). Payloads and other data are never scanned: only fields of
a workflow definition go through `render`.

A plain path (`steps.review.outputs.payload`, `self.item["a b"][0]`) is read in Python and gives
the stored value exactly (EXPR-015); every other expression goes to CEL, which sees the data
through `cel_view`: integers beyond 64 bits as doubles, U+0000 as U+FFFD (EXPR-016).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

from .errors import ExpressionError

if TYPE_CHECKING:
    from .celtree import Node

EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}", re.S)
CONTEXT_NAMES = ("inputs", "self", "run", "env", "steps")

# A plain path: a context name, then `.ident`, `[index]` or `["key"]` / `['key']` (no escapes).
_WS = r"[ \t\n\r\f]*"
_IDENT = r"([A-Za-z_][A-Za-z0-9_]*)"
_INDEX = r"(0|[1-9][0-9]{0,17})"  # fits an int64 literal
_KEY = r""""([^"\\\r\n]*)"|'([^'\\\r\n]*)'"""
_PATH_ROOT = re.compile(_WS + _IDENT)
_PATH_SELECTOR = re.compile(f"{_WS}(?:\\.{_WS}{_IDENT}|\\[{_WS}(?:{_INDEX}|{_KEY}){_WS}\\])")
_PATH_END = re.compile(_WS + r"\Z")
# CEL's reserved words: a path naming one is left to CEL (some are syntax errors there).
_RESERVED: Final = frozenset(
    ("as", "break", "const", "continue", "else", "false", "for", "function", "if", "import", "in")
    + ("let", "loop", "package", "namespace", "null", "return", "true", "var", "void", "while")
)
# The context names an expression mentions: only those are shown to CEL through `cel_view`.
_MENTION = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(CONTEXT_NAMES) + r")(?![A-Za-z0-9_])")
_MISSING: Final[Any] = object()
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # CEL's int and uint together


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


def cel_view(value: Any) -> Any:
    """`value` as CEL is shown it: an integer outside [-2**63, 2**64-1] becomes a double (as
    JavaScript reads every JSON number; beyond the double range, +/-inf), and U+0000 in a string
    or key becomes U+FFFD (CEL's adapter would cut the string there). The very same object comes
    back when nothing needs changing. Two keys that differ only in U+0000 / U+FFFD become one."""
    kind = type(value)
    if kind is str:
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if kind is int:
        return value if _INT_MIN <= value <= _INT_MAX else _as_double(value)
    if isinstance(value, dict):
        for index, (key, item) in enumerate(value.items()):
            new_key, new_item = cel_view(key), cel_view(item)
            if new_key is not key or new_item is not item:
                copied = dict(islice(value.items(), index))
                copied[new_key] = new_item
                for rest_key, rest_item in islice(value.items(), index + 1, None):
                    copied[cel_view(rest_key)] = cel_view(rest_item)
                return copied
        return value
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            new_item = cel_view(item)
            if new_item is not item:
                return [*value[:index], new_item, *(cel_view(v) for v in value[index + 1 :])]
        return value
    return value


def _as_double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


PlainPath = tuple[str, tuple[str | int, ...]]


def plain_path(source: str) -> PlainPath | None:
    """(root, selectors) when `source` is a plain path (see the module doc), else None."""
    match = _PATH_ROOT.match(source)
    if match is None or match.group(1) not in CONTEXT_NAMES:
        return None
    root = match.group(1)
    selectors: list[str | int] = []
    position = match.end()
    while _PATH_END.match(source, position) is None:
        match = _PATH_SELECTOR.match(source, position)
        if match is None:
            return None
        field, index, double_quoted, single_quoted = match.groups()
        if field is not None:
            if field in _RESERVED:
                return None
            selectors.append(field)
        elif index is not None:
            selectors.append(int(index))
        else:
            selectors.append(double_quoted if double_quoted is not None else single_quoted)
        position = match.end()
    return root, tuple(selectors)


def _resolve(path: PlainPath, variables: Mapping[str, Any]) -> Any:
    """The value at `path`, or _MISSING when any step of it does not exist."""
    root, selectors = path
    value = variables.get(root, _MISSING)
    for selector in selectors:
        if isinstance(selector, str):
            if not isinstance(value, dict):
                return _MISSING
            value = value.get(selector, _MISSING)
            if value is _MISSING:
                return _MISSING
        elif isinstance(value, (list, tuple)) and selector < len(value):
            value = value[selector]
        else:
            return _MISSING
    return value


class Scope:
    """One snapshot of the expression context (inputs, self, run, env, steps).

    CEL sees each variable through `cel_view`, computed the first time an expression names it and
    at most once per scope; a scope made by `with_self` shares its parent's views of everything but
    `self`. The CEL activation shows the views of the names an expression mentions (the others as
    they are: CEL converts a variable only when an expression touches it) and is rebuilt, with the
    union, only when a later expression mentions a name it lacks.
    """

    def __init__(self, variables: Mapping[str, Any]):
        self.variables = {name: variables.get(name, {}) for name in CONTEXT_NAMES}
        self._views: dict[str, Any] = {}
        self._base: Scope | None = None  # the scope whose variables, but for `self`, are ours
        self._activation: tuple[frozenset[str], Any] | None = None

    def with_self(self, item: Mapping[str, Any]) -> Scope:
        child = Scope({**self.variables, "self": {**self.variables.get("self", {}), **item}})
        child._base = self._base or self
        return child

    def cel_variable(self, name: str) -> Any:
        """The variable as CEL sees it (`cel_view`), computed once."""
        if name != "self" and self._base is not None:
            return self._base.cel_variable(name)
        view = self._views.get(name, _MISSING)
        if view is _MISSING:
            view = self._views[name] = cel_view(self.variables[name])
        return view

    def activation(self, env: Any, names: frozenset[str] = frozenset(CONTEXT_NAMES)) -> Any:
        current = self._activation  # one read: scopes are shared between threads
        if current is not None and names <= current[0]:
            return current[1]
        if current is not None:
            names = names | current[0]
        data = {
            name: self.cel_variable(name) if name in names else self.variables[name] for name in CONTEXT_NAMES
        }
        activation = env.Activation(data)
        self._activation = (names, activation)
        return activation


class ExpressionEngine:
    """Compiles CEL once per source text and evaluates it against a Scope."""

    def __init__(self, names: tuple[str, ...] = CONTEXT_NAMES) -> None:
        """`names`: the variables expressions may name (a webhook route's are `body` and `headers`)."""
        from cel_expr_python import cel

        self._cel = cel
        self._env = cel.NewEnv(variables={name: cel.Type.DYN for name in names})
        self._programs: dict[str, Any] = {}
        self._paths: dict[str, PlainPath | None] = {}
        self._mentions: dict[str, frozenset[str]] = {}

    def compile(self, source: str) -> Any:
        program = self._programs.get(source)
        if program is not None:
            return program
        try:
            program = self._env.compile(source)
        except RuntimeError as exc:
            message = _clean(str(exc))
            if "undeclared reference" in message or "Syntax error" in message:
                if "undeclared reference" in message:
                    message = _hyphen_hint(source) or message
                raise ExpressionError(message, {"expression": source}) from None
            # The checker rejects some mixed int/double literals that are fine on JSON data.
            try:
                program = self._env.compile(source, disable_check=True)
            except RuntimeError as exc2:
                raise ExpressionError(_clean(str(exc2)), {"expression": source}) from None
        self._programs[source] = program
        return program

    def syntax_tree(self, source: str) -> Node:
        """The tree CEL evaluates for `source` (celtree.py); ExpressionError when it does not compile."""
        from .celtree import tree_of

        return tree_of(self.compile(source).serialize())

    def evaluate(self, source: str, scope: Scope) -> Any:
        path = self._paths.get(source, _MISSING)
        if path is _MISSING:
            path = self._paths[source] = plain_path(source)
        if path is not None:
            found = _resolve(path, scope.variables)
            if found is not _MISSING:
                return _plain(found)  # a copy: the caller may change it, the record must not
        program = self.compile(source)
        names = self._mentions.get(source)
        if names is None:
            names = self._mentions[source] = frozenset(_MENTION.findall(source))
        try:
            value = program.eval(scope.activation(self._env, names))
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

    def render_text(self, text: str, scope: Scope) -> Any:
        """A whole expression keeps its value's type (EXPR-004); embedded ones become text (EXPR-005).
        Text a shell parses is rendered by `shellwords.insert_values` instead (MODEL-014)."""
        if "${{" not in text:
            return text
        whole = whole_expression(text)
        if whole is not None:
            return self.evaluate(whole, scope)
        return EXPRESSION.sub(lambda m: js_string(self.evaluate(m.group(1), scope)), text)


# `steps.qa-verdict`: CEL reads a subtraction, `steps.qa` minus an undeclared `verdict`.
_HYPHENATED = re.compile(
    r"(?<![A-Za-z0-9_.\]])(" + "|".join(CONTEXT_NAMES) + r")\.([A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+)"
)


def _hyphen_hint(source: str) -> str | None:
    """The message for an undeclared reference that comes from a name holding '-' (EXPR-020)."""
    found = _HYPHENATED.search(source)
    if found is None:
        return None
    root, name = found.groups()
    fixed = _HYPHENATED.sub(lambda m: f'{m.group(1)}["{m.group(2)}"]', source)
    return (
        f"{root}.{name} reads as a subtraction ({root}.{name.split('-')[0]} minus"
        f" {name.split('-', 1)[1]}): a name holding '-' is written in brackets, {root}[\"{name}\"]"
        f" ({root}['{name}'] inside a double-quoted YAML value), e.g. ${{{{ {fixed} }}}}"
    )


def _clean(message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "expression failed"
    for prefix in ("INVALID_ARGUMENT: ", "NOT_FOUND: "):
        if first.startswith(prefix):
            first = first[len(prefix) :]
    return first.replace("ERROR: <input>:", "at ")
