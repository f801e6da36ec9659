"""Expected-vs-actual matching for conformance scenarios.

Pure functions over JSON values (dict, list, str, int, float, bool, None):

* ``match(expected, actual, captures)`` returns a list of ``Mismatch`` (empty = match);
  ``$capture`` matchers store values into ``captures``.
* ``substitute(value, captures)`` replaces ``${name}`` references (never ``${{ ... }}``).
* ``match_frames(expected, actual, captures, only)`` applies the JSON-lines frame rules.

A problem with the scenario itself (unknown matcher, bad regex, unknown capture) raises
``ScenarioError``; a difference in the implementation's output is a ``Mismatch``.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from .portable_regex import PortableRegexError, compile_portable

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_REF = re.compile(r"\$(\$?)\{(" + IDENT + r")\}")
_WHOLE_REF = re.compile(r"\$\{(" + IDENT + r")\}")
_IDENT = re.compile(IDENT)
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

MATCHERS = ("$any", "$absent", "$type", "$regex", "$contains", "$len", "$capture", "$not", "$eq", "$extract")
TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")


class ScenarioError(Exception):
    """The scenario is wrong (not the implementation under test)."""


@dataclass(frozen=True)
class Mismatch:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


# ----------------------------------------------------------------------------- helpers


def json_text(value: Any, indent: int | None = None) -> str:
    """A JSON value as the runner sends it (FORMAT.md §10): Python's json.dumps with
    ensure_ascii=False, ", " and ": " separators (with `indent`, "," and ": "), keys in their order,
    integers with all their digits, other numbers as repr() of the float. The Node runner's
    json.mjs dumpJson writes the same text."""
    return json.dumps(value, ensure_ascii=False, indent=indent)


def short(value: Any, limit: int = 200) -> str:
    """A one-line JSON rendering of ``value``, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _has_type(value: Any, name: str) -> bool:
    if name == "integer":
        return json_type(value) == "number" and float(value).is_integer()
    return json_type(value) == name


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true != 1 and "1" != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if json_type(a) != json_type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


def is_matcher(value: Any) -> bool:
    """A matcher object: a non-empty dict whose keys all start with a single ``$``."""
    return (
        isinstance(value, dict)
        and bool(value)
        and all(isinstance(k, str) and k.startswith("$") and not k.startswith("$$") for k in value)
    )


def _is_matcher_key(key: Any) -> bool:
    return isinstance(key, str) and key.startswith("$") and not key.startswith("$$")


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if _PLAIN_KEY.fullmatch(key) else f"{path}[{json.dumps(key)}]"


# ----------------------------------------------------------------------------- checking


def check_expected(expected: Any, path: str = "$", *, as_value: bool = False) -> None:
    """Raise ScenarioError if ``expected`` uses matchers wrongly. Does not look at data."""
    if isinstance(expected, list):
        for i, item in enumerate(expected):
            check_expected(item, f"{path}[{i}]")
        return
    if not isinstance(expected, dict):
        return
    if not is_matcher(expected):
        if any(_is_matcher_key(k) for k in expected):
            raise ScenarioError(
                f"{path}: an object mixes matcher keys ($...) with plain keys; "
                "write a literal key that starts with $ as $$key"
            )
        for key, value in expected.items():
            sub = _child(path, key[1:] if key.startswith("$$") else key)
            check_expected(value, sub, as_value=True)
        return
    unknown = sorted(set(expected) - set(MATCHERS))
    if unknown:
        raise ScenarioError(f"{path}: unknown matcher {', '.join(unknown)} (known: {', '.join(MATCHERS)})")
    if "$absent" in expected:
        if expected != {"$absent": True}:
            raise ScenarioError(f"{path}: $absent must be written alone as {{$absent: true}}")
        if not as_value:
            raise ScenarioError(f"{path}: $absent is only meaningful as the value of an object key")
    for key, arg in expected.items():
        _check_matcher_arg(key, arg, path)


def _check_matcher_arg(key: str, arg: Any, path: str) -> None:
    where = f"{path}: {key}"
    if key == "$any" and arg is not True:
        raise ScenarioError(f"{where} takes true")
    if key == "$type":
        names = arg if isinstance(arg, list) else [arg]
        bad = [n for n in names if n not in TYPES]
        if bad or not names:
            raise ScenarioError(f"{where} takes one of {', '.join(TYPES)} or a list, got {short(arg)}")
    if key == "$regex":
        if not isinstance(arg, str):
            raise ScenarioError(f"{where} takes a string")
        if "${" not in arg:  # may still hold a capture reference; checked again after substitution
            _compile(arg, where)
    if key == "$extract":
        _check_extract(arg, where)
    if key == "$capture" and not (isinstance(arg, str) and _IDENT.fullmatch(arg)):
        raise ScenarioError(f"{where} takes an identifier (letters, digits, _), got {short(arg)}")
    if key == "$len" and not (isinstance(arg, int) and not isinstance(arg, bool)):
        if not is_matcher(arg):
            raise ScenarioError(f"{where} takes an integer or a matcher")
        check_expected(arg, f"{path}.length")
    if key == "$not":
        check_expected(arg, path)
    if key == "$contains":
        for i, item in enumerate(arg if isinstance(arg, list) else [arg]):
            check_expected(item, f"{path}.$contains[{i}]")


def _check_extract(arg: Any, where: str) -> None:
    """`{$extract: {regex: P, name: N}}`: P a portable regex, N an identifier, nothing else."""
    if not (isinstance(arg, dict) and set(arg) == {"regex", "name"} and isinstance(arg["regex"], str)):
        raise ScenarioError(f"{where} takes {{regex: PATTERN, name: NAME}}, got {short(arg)}")
    if not (isinstance(arg["name"], str) and _IDENT.fullmatch(arg["name"])):
        raise ScenarioError(
            f"{where} name takes an identifier (letters, digits, _), got {short(arg['name'])}"
        )
    if "${" not in arg["regex"]:
        _compile(arg["regex"], where)


def extracted(pattern: re.Pattern[str], text: str) -> str | None:
    """The text `$extract` stores: the first group of the first match (the whole match when the
    pattern has no group, "" when the group took no part); None when nothing matches."""
    found = pattern.search(text)
    if found is None:
        return None
    return (found.group(1) or "") if pattern.groups else found.group(0)


@functools.cache
def _compile_cached(pattern: str) -> re.Pattern[str]:
    return compile_portable(pattern)


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    """``pattern`` checked against the portable subset (FORMAT.md) and compiled with its meaning."""
    try:
        return _compile_cached(pattern)
    except PortableRegexError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    except re.error as exc:
        raise ScenarioError(f"{where}: invalid regular expression {pattern!r}: {exc}") from None


# ----------------------------------------------------------------------------- matching


def match(expected: Any, actual: Any, captures: dict[str, Any], path: str = "$") -> list[Mismatch]:
    """Match ``actual`` against ``expected``; returns the mismatches (empty list = match)."""
    if is_matcher(expected):
        if "$absent" in expected:
            raise ScenarioError(f"{path}: $absent is only meaningful as the value of an object key")
        return _match_matcher(expected, actual, captures, path)
    if isinstance(expected, dict):
        return _match_dict(expected, actual, captures, path)
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [Mismatch(path, f"expected an array, got {short(actual)}")]
        if len(expected) != len(actual):
            return [
                Mismatch(
                    path,
                    f"expected an array of {len(expected)} items, got {len(actual)}: {short(actual)}",
                )
            ]
        out: list[Mismatch] = []
        for i, (exp, act) in enumerate(zip(expected, actual, strict=True)):
            out += match(exp, act, captures, f"{path}[{i}]")
        return out
    if json_equal(expected, actual):
        return []
    return [Mismatch(path, f"expected {short(expected)}, got {short(actual)}")]


def _match_dict(expected: dict[str, Any], actual: Any, captures: dict[str, Any], path: str) -> list[Mismatch]:
    if any(_is_matcher_key(k) for k in expected):
        raise ScenarioError(f"{path}: an object mixes matcher keys ($...) with plain keys")
    if not isinstance(actual, dict):
        return [Mismatch(path, f"expected an object, got {short(actual)}")]
    out: list[Mismatch] = []
    for key, exp in expected.items():
        real = key[1:] if key.startswith("$$") else key
        sub = _child(path, real)
        if is_matcher(exp) and "$absent" in exp:
            check_expected(exp, sub, as_value=True)
            if real in actual:
                out.append(Mismatch(sub, f"expected no such key, got {short(actual[real])}"))
        elif real not in actual:
            out.append(Mismatch(sub, f"missing key (expected {short(exp)})"))
        else:
            out += match(exp, actual[real], captures, sub)
    return out


def _match_matcher(
    expected: dict[str, Any], actual: Any, captures: dict[str, Any], path: str
) -> list[Mismatch]:
    check_expected(expected, path)
    out: list[Mismatch] = []
    pulled = ""  # what `$extract` found
    for key, arg in expected.items():
        if key == "$type":
            names = arg if isinstance(arg, list) else [arg]
            if not any(_has_type(actual, n) for n in names):
                got = f"{json_type(actual)} {short(actual)}"
                out.append(Mismatch(path, f"expected type {' or '.join(names)}, got {got}"))
        elif key == "$regex":
            if not isinstance(actual, str) or not _compile(arg, f"{path}: $regex").search(actual):
                out.append(Mismatch(path, f"expected a string matching /{arg}/, got {short(actual)}"))
        elif key == "$contains":
            out += _match_contains(arg, actual, captures, path)
        elif key == "$len":
            if not isinstance(actual, (str, list, dict)):
                out.append(Mismatch(path, f"expected something with a length, got {short(actual)}"))
            elif match(arg, len(actual), dict(captures), f"{path}.length"):
                got = f"{len(actual)}: {short(actual)}"
                out.append(Mismatch(path, f"expected length {short(arg)}, got {got}"))
        elif key == "$not":
            if not match(arg, actual, dict(captures), path):
                out.append(Mismatch(path, f"expected anything but {short(arg)}, got {short(actual)}"))
        elif key == "$eq" and not json_equal(arg, actual):
            out.append(Mismatch(path, f"expected exactly {short(arg)}, got {short(actual)}"))
        elif key == "$extract":
            found = None
            if isinstance(actual, str):
                found = extracted(_compile(arg["regex"], f"{path}: $extract"), actual)
            if found is None:
                out.append(
                    Mismatch(path, f"expected a string matching /{arg['regex']}/, got {short(actual)}")
                )
            else:
                pulled = found
    if not out and "$capture" in expected:
        captures[expected["$capture"]] = copy.deepcopy(actual)
    if not out and "$extract" in expected:
        captures[expected["$extract"]["name"]] = pulled
    return out


def _match_contains(arg: Any, actual: Any, captures: dict[str, Any], path: str) -> list[Mismatch]:
    if isinstance(actual, str):
        if not isinstance(arg, str):
            return [Mismatch(path, f"expected an array containing {short(arg)}, got {short(actual)}")]
        if arg in actual:
            return []
        return [Mismatch(path, f"expected a string containing {short(arg)}, got {short(actual, 1000)}")]
    if not isinstance(actual, list):
        return [Mismatch(path, f"expected a string or an array containing {short(arg)}, got {short(actual)}")]
    out: list[Mismatch] = []
    for item in arg if isinstance(arg, list) else [arg]:
        tried: list[list[Mismatch]] = []
        for i, element in enumerate(actual):
            trial = dict(captures)
            problems = match(item, element, trial, f"{path}[{i}]")
            if not problems:
                captures.update(trial)
                break
            tried.append(problems)
        else:
            out.append(Mismatch(path, f"no element matches {short(item)}{_closest(tried)}"))
    return out


def _closest(tried: list[list[Mismatch]], limit: int = 3) -> str:
    """The mismatches of the elements that came closest (fewest mismatches), for a hint."""
    if not tried:
        return " (the array is empty)"
    fewest = min(len(problems) for problems in tried)
    best = [problems for problems in tried if len(problems) == fewest][:limit]
    return "; closest: " + " | ".join("; ".join(map(str, problems)) for problems in best)


# ----------------------------------------------------------------------------- captures


def substitute(value: Any, captures: dict[str, Any], path: str = "$") -> Any:
    """Replace ``${name}`` with captured values; ``$${name}`` is a literal ``${name}``.

    A whole-string reference keeps the captured value's type; an embedded one is stringified
    (strings as-is, other values as JSON). ``${{ ... }}`` is never touched.
    """
    if isinstance(value, str):
        return _substitute_str(value, captures, path)
    if isinstance(value, list):
        return [substitute(v, captures, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for key, v in value.items():
            new_key = _substitute_str(key, captures, path) if isinstance(key, str) else key
            if not isinstance(new_key, str):
                new_key = json_text(new_key)
            out[new_key] = substitute(v, captures, _child(path, str(new_key)))
        return out
    return value


def _lookup(name: str, captures: dict[str, Any], path: str) -> Any:
    if name not in captures:
        known = ", ".join(sorted(captures)) or "none"
        raise ScenarioError(
            f"{path}: unknown capture ${{{name}}} (captured so far: {known}); "
            f"write $${{{name}}} for a literal ${{{name}}}"
        )
    return captures[name]


def _substitute_str(text: str, captures: dict[str, Any], path: str) -> Any:
    whole = _WHOLE_REF.fullmatch(text)
    if whole:
        return copy.deepcopy(_lookup(whole.group(1), captures, path))

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return "${" + m.group(2) + "}"
        value = _lookup(m.group(2), captures, path)
        return value if isinstance(value, str) else json_text(value)

    return _REF.sub(repl, text)


def references(value: Any) -> set[str]:
    """Capture names that ``value`` refers to with ``${name}`` (in strings and keys)."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(m.group(2) for m in _REF.finditer(value) if not m.group(1))
    elif isinstance(value, list):
        for v in value:
            found |= references(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            found |= references(k) | references(v)
    return found


def captured_names(expected: Any) -> set[str]:
    """Capture names that a successful match of ``expected`` defines."""
    found: set[str] = set()
    if isinstance(expected, list):
        for v in expected:
            found |= captured_names(v)
    elif is_matcher(expected):
        if isinstance(expected.get("$capture"), str):
            found.add(expected["$capture"])
        if isinstance(expected.get("$extract"), dict) and isinstance(expected["$extract"].get("name"), str):
            found.add(expected["$extract"]["name"])
        if "$contains" in expected:
            found |= captured_names(expected["$contains"])
    elif isinstance(expected, dict):
        for v in expected.values():
            found |= captured_names(v)
    return found


# ----------------------------------------------------------------------------- frames


def _id_key(expected: Any) -> str | None:
    """Frames with the same literal ``id`` are ordered; None = no literal id (unordered)."""
    if isinstance(expected, dict) and not is_matcher(expected) and "id" in expected:
        ident = expected["id"]
        if ident is None or isinstance(ident, (str, int, float)):
            return json.dumps(ident)
    return None


def match_frames(
    expected: list[Any], actual: list[Any], captures: dict[str, Any], *, only: bool = False
) -> list[str]:
    """Match expected frames to distinct actual frames; returns problems (empty = match).

    Expected frames with the same literal ``id`` must match actual frames in the same order;
    frames of different ids may interleave freely. Expected frames without a literal id are
    matched after the others, in any order. With ``only``, every actual frame must be matched.
    """
    return assign_frames(expected, actual, captures, only=only)[0]


def assign_frames(
    expected: list[Any],
    actual: list[Any],
    captures: dict[str, Any],
    *,
    only: bool = False,
    numbers: list[int] | None = None,
) -> tuple[list[str], dict[int, int]]:
    """``match_frames``, also returning which actual frame each expected frame took
    (actual index -> expected index). ``numbers`` are the frame numbers to show in messages
    (default: the index in ``actual``)."""
    shown = numbers if numbers is not None else list(range(len(actual)))
    used: dict[int, int] = {}  # actual index -> expected index
    last: dict[str, int] = {}  # id key -> actual index matched last
    problems: list[str] = []
    order = [i for i, e in enumerate(expected) if _id_key(e) is not None]
    order += [i for i, e in enumerate(expected) if _id_key(e) is None]
    for i in order:
        exp = expected[i]
        key = _id_key(exp)
        start = last[key] + 1 if key is not None and key in last else 0
        for j in range(start, len(actual)):
            if j in used:
                continue
            trial = dict(captures)
            if not match(exp, actual[j], trial):
                captures.update(trial)
                used[j] = i
                if key is not None:
                    last[key] = j
                break
        else:
            problems.append(_explain_unmatched(i, exp, actual, used, captures, shown))
    if only:
        for j, frame in enumerate(actual):
            if j not in used:
                problems.append(
                    f"actual frame #{shown[j]} was not expected (only: true): {short(frame, 400)}"
                )
    return problems, used


def _explain_unmatched(
    i: int, exp: Any, actual: list[Any], used: dict[int, int], captures: dict[str, Any], shown: list[int]
) -> str:
    lines = [f"expected frame [{i}] matched no actual frame: {short(exp, 400)}"]
    key = _id_key(exp)
    if key is not None:
        candidates = [j for j, f in enumerate(actual) if isinstance(f, dict) and _id_key(f) == key]
        if not candidates:
            lines.append(f"    no actual frame has id {key}")
    else:
        candidates = list(range(len(actual)))
    for j in candidates:
        problems = match(exp, actual[j], dict(captures))
        if not problems:
            why = (
                f"already matched by expected frame [{used[j]}]"
                if j in used
                else "comes before a frame already matched for the same id "
                "(frames with the same id must keep the expected order)"
            )
            lines.append(f"    actual frame #{shown[j]} matches but {why}")
        else:
            lines.append(f"    actual frame #{shown[j]}: " + "; ".join(map(str, problems)))
    return "\n".join(lines)
