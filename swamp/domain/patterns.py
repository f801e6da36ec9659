"""Schema patterns (`pattern`, `patternProperties`) run on RE2, an engine linear in the text.

Python's `re` backtracks: `^(a+)+$` against 26 a's and a `!` took 9.6 s, doubling with every
character, while the run's claim was held, so cancels and valid signals timed out behind it. RE2
answers in time linear in the text whatever the pattern. It has no backreferences and no
lookaround: a schema whose pattern needs them is refused when the schema is checked (`workflow
validate`, `workflow run`: INPUT-015), and a wait schema captured before that rule existed refuses
every payload instead of running the pattern (WAIT-045). RE2's classes are ECMA-262's: `\\d`, `\\w`
and `\\b` are ASCII, and `$` matches only at the end of the text.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

SCHEMA_VALUED = (
    *("items", "additionalProperties", "not", "if", "then", "else", "contains"),
    *("propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems"),
)
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


class UnsupportedPattern(ValueError):
    """A pattern RE2 cannot run (a backreference, lookaround, a repetition over 1000, ...)."""


@functools.lru_cache(maxsize=512)
def compiled(pattern: str) -> Any:
    """The RE2 program for `pattern`; raises UnsupportedPattern with RE2's reason."""
    import re2  # ~4 ms of import: only a schema with a pattern needs it

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        said = exc.args[0] if exc.args else ""
        reason = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
        raise UnsupportedPattern(
            f"pattern {pattern!r} cannot run in linear time ({reason}); swamp matches patterns with "
            "RE2, which has no backreferences or lookaround: rewrite it without them"
        ) from None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text` (JSON Schema's `pattern` is unanchored)."""
    return compiled(pattern).search(text) is not None


def problem(pattern: str) -> str | None:
    try:
        compiled(pattern)
    except UnsupportedPattern as exc:
        return str(exc)
    return None


def schema_patterns(schema: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(where, pattern) for every `pattern` and `patternProperties` key in the schema positions of
    `schema` (values of `enum`, `const`, `default` and unknown keywords are data and skipped)."""
    if not isinstance(schema, dict):
        return
    if isinstance(schema.get("pattern"), str):
        yield f"{path}/pattern", schema["pattern"]
    if isinstance(schema.get("patternProperties"), dict):
        for key in schema["patternProperties"]:
            yield f"{path}/patternProperties", key
    for key in SCHEMA_VALUED:
        if key in schema:
            yield from schema_patterns(schema[key], f"{path}/{key}")
    for key in SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                yield from schema_patterns(sub, f"{path}/{key}/{i}")
    for key in SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                escaped = str(name).replace("~", "~0").replace("/", "~1")
                yield from schema_patterns(sub, f"{path}/{key}/{escaped}")


def pattern_problems(schema: Any) -> list[str]:
    """`<where>: <why>` for every pattern of `schema` that RE2 cannot run."""
    found = []
    for where, pattern in schema_patterns(schema):
        why = problem(pattern)
        if why is not None:
            found.append(f"{where}: {why}")
    return found


class _LinearRe:
    """Stands in for the `re` module inside jsonschema's keyword code, whose only use of it is
    `re.search(pattern, text)` (pattern, patternProperties, additionalProperties,
    unevaluatedProperties): every search runs on RE2."""

    @staticmethod
    def search(pattern: str, text: str) -> bool:
        return search(pattern, text)

    def __getattr__(self, name: str) -> Any:
        import re

        return getattr(re, name)


def install_in_jsonschema() -> None:
    """Route jsonschema's pattern searches through RE2 (idempotent)."""
    import importlib

    for name in ("jsonschema._keywords", "jsonschema._utils", "jsonschema._legacy_keywords"):
        module = importlib.import_module(name)
        if not isinstance(getattr(module, "re", None), _LinearRe):
            module.re = _LinearRe()  # type: ignore[attr-defined]
