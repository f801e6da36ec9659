"""The `$regex` dialect of scenarios: a subset that ECMAScript and RE2 both run (FORMAT.md).

A scenario is data for runners in any language, so a pattern may use only what every runner's regex
engine reads the same way. ``translate`` checks a pattern against the subset (raising
``PortableRegexError`` naming the offending construct and its offset) and returns the Python `re`
pattern with ECMAScript's meaning (`new RegExp(p, "u")`): `$` is the end of the whole text (Python's
`$` also matches before a final newline), `.` excludes every ECMAScript line terminator, `\\s` is
ECMAScript's white space, and `\\d \\w \\b` are ASCII (compile with ``re.ASCII``).
"""

from __future__ import annotations

import re
from typing import NoReturn

SYNTAX = "^$\\.*+?()[]{}|/"
CLASS_ESCAPES = {"d": r"\d", "D": r"\D", "w": r"\w", "W": r"\W"}
CONTROL_ESCAPES = {"n": r"\n", "t": r"\t", "r": r"\r", "f": r"\f", "v": r"\v"}
# ECMAScript WhiteSpace and LineTerminator code points: what `\s` matches there.
JS_SPACE = r"\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
JS_DOT = r"[^\n\r\u2028\u2029]"


class PortableRegexError(ValueError):
    pass


def translate(pattern: str) -> str:
    """The Python `re` pattern (for ``re.ASCII``) meaning what ``pattern`` means in ECMAScript."""
    parser = _Parser(pattern)
    out = parser.alternation()
    if parser.pos != len(pattern):
        parser.fail("unbalanced `)`")
    return out


def compile_portable(pattern: str) -> re.Pattern[str]:
    return re.compile(translate(pattern), re.ASCII)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> NoReturn:
        raise PortableRegexError(
            f"{what} at offset {self.pos} of {self.text!r}; $regex allows only the portable subset "
            "of conformance/FORMAT.md (no lookaround, backreferences, named groups, inline flags, \\A \\Z)"
        )

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def alternation(self) -> str:
        parts = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            parts.append(self.sequence())
        return "|".join(parts)

    def sequence(self) -> str:
        out = []
        while self.pos < len(self.text) and self.peek() not in ("|", ")"):
            atom, quantifiable = self.atom()
            quantifier = self.quantifier()
            if quantifier and not quantifiable:
                self.fail("a quantifier after an anchor")
            out.append(atom + quantifier)
        return "".join(out)

    def atom(self) -> tuple[str, bool]:
        ch = self.peek()
        if ch == "(":
            self.pos += 1
            if self.peek() == "?":
                if self.peek(2) != "?:":
                    self.fail("a group other than `(...)` and `(?:...)`")
                self.pos += 2
                inner = "(?:" + self.alternation()
            else:
                inner = "(" + self.alternation()
            if self.peek() != ")":
                self.fail("an unclosed `(`")
            self.pos += 1
            return inner + ")", True
        if ch == "[":
            return self.char_class(), True
        if ch == ".":
            self.pos += 1
            return JS_DOT, True
        if ch == "^":
            self.pos += 1
            return r"\A", False
        if ch == "$":
            self.pos += 1
            return r"\Z", False
        if ch == "\\":
            return self.escape(in_class=False)
        if ch in "*+?{}]":
            self.fail(f"a lone `{ch}` (escape it)")
        self.pos += 1
        return re.escape(ch), True

    def quantifier(self) -> str:
        ch = self.peek()
        if ch in ("*", "+", "?"):
            self.pos += 1
            q = ch
        elif ch == "{":
            m = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.text, self.pos)
            if not m:
                self.fail("a `{` that is not a quantifier {n}, {n,} or {n,m} (escape it)")
            if m.group(3) and int(m.group(3)) < int(m.group(1)):
                self.fail("a quantifier {n,m} with m < n")
            self.pos = m.end()
            q = m.group(0)
        else:
            return ""
        if self.peek() == "?":
            self.pos += 1
            q += "?"
        if self.peek() in ("*", "+", "?", "{") and self.peek() != "":
            self.fail("a possessive or doubled quantifier")
        return q

    def escape(self, *, in_class: bool) -> tuple[str, bool]:
        self.pos += 1
        ch = self.peek()
        if not ch:
            self.fail("a trailing `\\`")
        self.pos += 1
        if ch in CLASS_ESCAPES:
            return CLASS_ESCAPES[ch], True
        if ch == "s":
            return (JS_SPACE if in_class else f"[{JS_SPACE}]"), True
        if ch == "S":
            return ("" if in_class else f"[^{JS_SPACE}]"), True
        if ch in ("b", "B") and not in_class:
            return "\\" + ch, False
        if ch in CONTROL_ESCAPES:
            return CONTROL_ESCAPES[ch], True
        if ch in SYNTAX or (in_class and ch == "-"):
            return re.escape(ch), True
        self.pos -= 2
        self.fail(f"the escape `\\{ch}`")

    def char_class(self) -> str:
        self.pos += 1
        negated = self.peek() == "^"
        self.pos += negated
        if self.peek() == "]":
            self.fail("an empty class `[]`")
        out = ""
        not_space = False  # `\S` in a class: Python cannot put a complement inside a class
        while True:
            if not self.peek():
                self.fail("an unclosed `[`")
            if self.peek() == "]":
                self.pos += 1
                if not not_space:
                    return ("[^" if negated else "[") + out + "]"
                if negated:
                    self.fail("`\\S` inside a negated class")
                return f"(?:[{out}]|[^{JS_SPACE}])" if out else f"[^{JS_SPACE}]"
            not_space = not_space or self.peek(2) == "\\S"
            text, value = self.class_member()
            if value is None and self.peek() == "-" and self.peek(2) != "-]":
                self.fail("a range that starts with a class escape")
            if value is not None and self.peek() == "-" and self.peek(2)[1:] not in ("]", ""):
                self.pos += 1
                end_text, end_value = self.class_member()
                if end_value is None:
                    self.fail("a range that ends in a class escape")
                if ord(end_value) < ord(value):
                    self.fail("a range out of order")
                text += "-" + end_text
            out += text

    def class_member(self) -> tuple[str, str | None]:
        """One member of a class: its Python text and the character (None for \\d, \\s and the like)."""
        ch = self.peek()
        if ch == "[":
            self.fail("an unescaped `[` inside a class")
        if ch == "\\":
            nxt = self.peek(2)[1:]
            if nxt == "b":
                self.fail("`\\b` inside a class")
            text, _ = self.escape(in_class=True)
            if nxt in CLASS_ESCAPES or nxt in ("s", "S"):
                return text, None
            return text, {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}.get(nxt, nxt)
        self.pos += 1
        return re.escape(ch), ch
