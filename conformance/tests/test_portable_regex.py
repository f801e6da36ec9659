"""`$regex` is the portable subset of FORMAT.md, and the Python runner gives it ECMAScript's meaning.

The equivalence test runs every pattern of the suite (and a list of tricky ones) against a corpus of
texts in Python (``compile_portable``) and in Node.js (`new RegExp(p, "u")`), and requires the same
answer for every pair: the two runners must agree on what a scenario means.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from swamp_conformance_runner.portable_regex import PortableRegexError, compile_portable, translate
from swamp_conformance_runner.scenario import load_yaml

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

REFUSED = [
    "(?=x)",  # lookahead
    "(?!x)",
    "(?<=x)y",  # lookbehind
    "(?<!x)y",
    "(a)\\1",  # backreference
    "(?P<n>x)",  # named group
    "(?<n>x)",
    "(?s).",  # inline flags
    "(?i)a",
    "\\Aabc",
    "abc\\Z",
    "abc\\z",
    "a++",  # possessive
    "(?>a)",  # atomic
    "\\p{L}",
    "\\u0041",
    "\\x41",
    "a{",
    "a}",
    "]",
    "[]",
    "[z-a]",
    "[\\d-z]",
    "[a-\\d]",
    "^*",
    "\\:",
    "\\'",
    "(a",
    "a)",
    "[^\\S]",
    "\\",
]

ACCEPTED = [
    "abc",
    "^abc$",
    "a.c",
    "[\\s\\S]*",
    "x[\\s\\S]+?y",
    "\\d{2,4}",
    "\\w+\\b",
    "[^\\n]*",
    "[a-z0-9_-]+",
    "[-a]",
    "(?:ab|cd)*e?",
    "\\(\\)\\[\\]\\{\\}\\.\\*\\+\\?\\^\\$\\|\\/\\\\",
    "\\s",
    "\\S+",
    "[\\t\\r\\n\\f\\v]",
    "\\D\\W",
]

TEXTS = [
    "",
    "abc",
    "abc\n",
    "x\ny",
    "a\rc",
    "a\u2028c",
    "a\u00a0b",
    "\ufeff",
    "\u3000",
    "a\u0663b",  # ARABIC-INDIC DIGIT THREE: not \d in ECMAScript
    "é",
    "x ab y",
    "12345",
    "ab_c-9",
    "()[]{}.*+?^$|/\\",
    "cdcde",
    "\t\r\n\f\v",
    "word end",
    '{"a": NaN}',
    "Usage: swamp",
]


def _suite_patterns() -> list[str]:
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "$regex" and isinstance(item, str):
                    found.add(re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", "x", item))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in SCENARIOS.rglob("*.yaml"):
        walk(load_yaml(path.read_text(encoding="utf-8")))
    return sorted(found)


@pytest.mark.parametrize("pattern", REFUSED)
def test_constructs_outside_the_subset_are_refused(pattern: str) -> None:
    with pytest.raises(PortableRegexError):
        translate(pattern)


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_the_subset_is_accepted(pattern: str) -> None:
    compile_portable(pattern)


def test_dollar_is_the_end_of_the_text_and_dot_stops_at_every_line_terminator() -> None:
    assert not compile_portable("b$").search("ab\n")  # Python's own $ would match here
    assert not compile_portable("a.c").search("a\rc")
    assert compile_portable("a\\sb").search("a\u00a0b")
    assert not compile_portable("\\d").search("\u0663")


def test_every_suite_pattern_is_portable() -> None:
    patterns = _suite_patterns()
    assert len(patterns) > 50
    for pattern in patterns:
        translate(pattern)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js (CI installs it)")
def test_python_and_ecmascript_agree_on_every_pattern_and_text() -> None:
    patterns = sorted(set(_suite_patterns()) | set(ACCEPTED))
    script = (
        "const {patterns, texts} = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(patterns.map(p => { const r = new RegExp(p, 'u');"
        " return texts.map(t => r.test(t)); })));"
    )
    stdin = json.dumps({"patterns": patterns, "texts": TEXTS})
    done = subprocess.run(["node", "-e", script], input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ecmascript = json.loads(done.stdout)
    disagreements = [
        (pattern, text, verdicts[j])
        for pattern, verdicts in zip(patterns, ecmascript, strict=True)
        for j, text in enumerate(TEXTS)
        if bool(compile_portable(pattern).search(text)) != verdicts[j]
    ]
    assert not disagreements, disagreements[:10]


def _schema_patterns() -> list[str]:
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "pattern" and isinstance(item, str):
                    found.append(item)
                if key == "patternProperties" and isinstance(item, dict):
                    found.extend(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in (SCENARIOS.parent.parent / "spec" / "schemas").glob("*.json"):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return found


def test_every_schema_pattern_is_portable() -> None:
    """Both runners validate documents with spec/schemas, so their patterns are in the subset too."""
    patterns = _schema_patterns()
    assert patterns
    for pattern in patterns:
        translate(pattern)
