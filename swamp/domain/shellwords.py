"""Where each `${{ }}` of a shell argument lands as `sh` parses it, and how its value is put there
as data, never code (MODEL-014, WAIT-038, EXPR-017).

Why a scanner: one shell-quoted word (`shlex.quote`) is only data where the shell reads an unquoted
word. Inside "...", '...', a here-document or `$'...'` the same text closes and reopens quotes, so a
payload such as `$(touch x)` ran. The scanner reads the `run` text the way POSIX sh (and bash) do —
quotes, escapes, `$(...)` (recursively), backticks, `$((...))`, `${...}`, comments and
here-documents — and names the context of every expression. Two ways to insert a value follow from
it: by reference (command/shell: the value travels in an environment variable, and the text gets a
reference shaped for the context, GitHub's guidance for `run:`), and inline (an extension type's
shell arguments, whose process swamp does not start: the value is shell-quoted for the context).
Contexts where no form is safe are refused, with the safe form in the message. Pure: no I/O.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from .errors import UnsafeShellText
from .expressions import EXPRESSION, js_string

VALUE_PREFIX = "SWAMP_VALUE_"
HOLE = "\x00"  # stands for one expression while the text is scanned (a command cannot hold NUL)
_BLANK = " \t"
_ENDS_WORD = " \t\n;&|()<>"
_KEYWORDS_BEFORE_COMMAND = {"then", "do", "else", "elif", "if", "while", "until", "!", "{", "in"}
# Operators with which bash's [[ ]] evaluates both sides as arithmetic (so a value could run code).
_ARITHMETIC_TESTS = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}
_ARITHMETIC = (
    "inside shell arithmetic, where bash evaluates a value as an arithmetic expression (which can "
    "run commands): compute the number in the expression instead, e.g. ${{ inputs.n + 1 }}"
)


class Context(Enum):
    """Where an expression sits; each has one safe form (by reference and inline)."""

    WORD = "an unquoted word"
    DOUBLE = 'inside "..."'
    SINGLE = "inside '...'"
    ANSI = "inside $'...'"
    HEREDOC = "in a here-document body"
    COMMENT = "in a comment"


@dataclass(frozen=True)
class Hole:
    """One `${{ }}` of the text: its span, its inner source and its context. For a here-document
    body, `delimiter` is the word that ends it (inline insertion must not produce that line) and
    `strip_tabs` whether it is a `<<-` body (whose lines lose their leading tabs)."""

    start: int
    end: int
    source: str
    context: Context
    delimiter: str = ""
    strip_tabs: bool = False


@dataclass(frozen=True)
class ShellArguments:
    """Which arguments of a model method a shell parses, and how values reach that shell: through
    the environment of the command (builtin command/shell) or quoted inline (extension types)."""

    names: frozenset[str] = frozenset()
    by_environment: bool = False


@dataclass(frozen=True)
class ShellText:
    """A shell argument with its values inserted: the text, and the variables it refers to."""

    text: str
    environment: dict[str, str]


def shown(source: str) -> str:
    """An expression as a one-line message shows it."""
    return "${{ " + " ".join(source.split()) + " }}"


def value_name(index: int) -> str:
    return f"{VALUE_PREFIX}{index}"


def scan(template: str, *, inline: bool = False) -> list[Hole]:
    """The context of every expression of `template`, in order; UnsafeShellText where one has no
    safe form (or, `inline`, where sh implementations disagree on the text around it)."""
    matches = list(EXPRESSION.finditer(template))
    if not matches:
        return []
    if HOLE in template:
        raise UnsafeShellText("The shell text holds a NUL character: remove it")
    pieces: list[str] = []
    last = 0
    for m in matches:
        pieces += [template[last : m.start()], HOLE]
        last = m.end()
    pieces.append(template[last:])
    scanner = _Scanner("".join(pieces), [m.group(0) for m in matches])
    contexts = scanner.run()
    if len(contexts) != len(matches):  # pragma: no cover - a hole the reading stepped over
        raise UnsafeShellText("The shell text could not be read around its expressions: simplify it")
    if inline and scanner.ansi_strings:
        first = matches[0].group(0)
        raise UnsafeShellText(
            f"{first}: this text uses $'...', which sh implementations read differently (dash has "
            "none), so a value cannot be quoted inline safely: use '...' instead"
        )
    return [
        Hole(m.start(), m.end(), m.group(1), context, delimiter, strip)
        for m, (context, delimiter, strip) in zip(matches, contexts, strict=True)
    ]


def reference(context: Context, name: str) -> str:
    """The text that refers to variable `name` as exactly its value, in `context`."""
    if context is Context.WORD or context is Context.COMMENT:
        return f'"${{{name}}}"'
    if context is Context.SINGLE:
        return f"'\"${{{name}}}\"'"
    if context is Context.ANSI:
        return f"'\"${{{name}}}\"$'"
    return f"${{{name}}}"  # inside "..." and in a here-document body


def quoted(hole: Hole, value: str) -> str:
    """`value` as literal text in the context of `hole`, with no variable (inline insertion)."""
    context = hole.context
    if context is Context.WORD:
        return shlex.quote(value)
    if context is Context.COMMENT:
        return value.replace("\n", " ")
    if context is Context.DOUBLE:
        return f'"{shlex.quote(value)}"'
    if context is Context.SINGLE:
        return f"'{shlex.quote(value)}'"
    if context is Context.HEREDOC:
        for line in value.split("\n"):
            if hole.strip_tabs and line.startswith("\t"):
                raise UnsafeShellText(
                    f"{shown(hole.source)}: its value holds a line starting with a tab, which a "
                    "<<- here-document strips: use << instead of <<-"
                )
            if hole.delimiter and line.lstrip("\t").startswith(hole.delimiter):
                raise UnsafeShellText(
                    f"{shown(hole.source)}: its value holds a line starting with the "
                    f"here-document delimiter {hole.delimiter}, which would end the here-document: "
                    "choose a delimiter the value cannot contain"
                )
        return "".join("\\" + c if c in "\\$`" else c for c in value)
    raise UnsafeShellText(f"{shown(hole.source)}: {context.value} has no inline form")  # pragma: no cover


def insert_values(
    template: str,
    evaluate: Callable[[str], object],
    *,
    by_environment: bool,
    first_index: int = 1,
) -> ShellText:
    """Scan `template`, evaluate each expression (EXPR-005 text) and insert it as data. By
    environment: variable `SWAMP_VALUE_<n>` per expression, numbered from `first_index`."""
    holes = scan(template, inline=not by_environment)
    out: list[str] = []
    environment: dict[str, str] = {}
    last = 0
    for n, hole in enumerate(holes, start=first_index):
        value = _receivable(js_string(evaluate(hole.source)), shown(hole.source))
        out.append(template[last : hole.start])
        if by_environment:
            name = value_name(n)
            environment[name] = value
            out.append(reference(hole.context, name))
        else:
            out.append(quoted(hole, value))
        last = hole.end
    out.append(template[last:])
    return ShellText("".join(out), environment)


def whole_value(value: object, *, by_environment: bool, index: int = 1) -> ShellText:
    """A shell argument that is one computed value (a whole-`inputs` expression): one word."""
    text = _receivable(js_string(value), "the expression")
    if by_environment:
        name = value_name(index)
        return ShellText(reference(Context.WORD, name), {name: text})
    return ShellText(shlex.quote(text), {})


def _receivable(value: str, what: str) -> str:
    """`value` if a process can receive it as text: no NUL byte, no lone UTF-16 surrogate."""
    if "\x00" in value:
        raise UnsafeShellText(
            f"The value of {what} holds a NUL byte, which a command cannot receive: remove it from the value"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafeShellText(
            f"The value of {what} holds a lone UTF-16 surrogate, which is not text a command can "
            "receive: remove it from the value"
        ) from None
    return value


# -- the scanner ----------------------------------------------------------------------------------


class _Scanner:
    """A recursive-descent reader of sh text at the level of quoting (not a full grammar): it
    tracks what decides how a character is read — quotes, escapes, substitutions, comments and
    here-documents — and records the context of every HOLE."""

    def __init__(self, text: str, originals: list[str]):
        self.t = text
        self.originals = originals
        self.found: list[tuple[Context, str, bool]] = []
        self.limit = len(text)
        self.ansi_strings = False
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, quoted)

    # results and refusals

    def run(self) -> list[tuple[Context, str, bool]]:
        self.command(0, closing=False, forbidden=None)
        return self.found

    def shown_span(self, a: int, b: int) -> str:
        """The template's text from a to b, with the expressions back in place."""
        return "".join(self.expression(k) if self.t[k] == HOLE else self.t[k] for k in range(a, b))

    def index_at(self, i: int) -> int:
        return self.t.count(HOLE, 0, i)

    def expression(self, i: int) -> str:
        original = self.originals[self.index_at(i)]
        return shown(original[3:-2]) if "\n" in original else original

    def hole(
        self, i: int, context: Context, forbidden: str | None, delimiter: str = "", strip: bool = False
    ) -> None:
        if forbidden is not None:
            raise UnsafeShellText(f"{self.expression(i)} is {forbidden}")
        if len(self.found) != self.index_at(i):  # pragma: no cover - the scan never skips a hole
            raise UnsafeShellText("The shell text could not be read: simplify it around the expressions")
        self.found.append((context, delimiter, strip))

    def unparsable(self, what: str, i: int) -> UnsafeShellText:
        line = self.t.count("\n", 0, i) + 1
        return UnsafeShellText(
            f"The shell text cannot be read: {what} at line {line} is never closed; close it "
            "(swamp reads the text as sh does to keep each expression's value data)"
        )

    # contexts

    def command(self, i: int, *, closing: bool, forbidden: str | None) -> int:
        """Commands until EOF (or, `closing`, the `)` of `$(`); returns the index after it."""
        t = self.t
        start = i
        depth = 0
        cases = 0
        word: list[str] = []
        word_start = True
        command_position = True
        last_word = ""
        test_from: int | None = None  # holes found before the `[[` being read
        test_arithmetic = False

        def end_word() -> None:
            nonlocal command_position, cases, last_word, test_from, test_arithmetic
            if word:
                text = "".join(word)
                if command_position and text == "case":
                    cases += 1
                elif command_position and text == "esac":
                    cases = max(0, cases - 1)
                if command_position and text == "[[":
                    test_from, test_arithmetic = len(self.found), False
                elif test_from is not None and text in _ARITHMETIC_TESTS:
                    test_arithmetic = True
                elif test_from is not None and text == "]]":
                    if test_arithmetic and len(self.found) > test_from:
                        first = shown(self.originals[test_from][3:-2])
                        raise UnsafeShellText(
                            f"{first} is inside [[ ]] with an arithmetic comparison "
                            "(-eq, -lt, ...), where bash evaluates a value as arithmetic (which can run "
                            "commands): use [ ... ] instead of [[ ... ]], or compare in the expression"
                        )
                    test_from = None
                command_position = text in _KEYWORDS_BEFORE_COMMAND
                last_word = text
                word.clear()

        while True:
            if i >= self.limit:
                if closing:
                    raise self.unparsable("$(", start - 2)
                end_word()
                return i
            c = t[i]
            if c == HOLE:
                self.hole(i, Context.WORD, forbidden)
                word.append(c)
                word_start = False
                i += 1
            elif c == "\\":
                if i + 1 < self.limit and t[i + 1] == HOLE:
                    raise self.escaped(i + 1)
                if i + 1 < self.limit and t[i + 1] != "\n":
                    word.append(t[i + 1])
                    word_start = False
                i += 2
            elif c == "'":
                i = self.single(i + 1, forbidden)
                word.append("'")
                word_start = False
            elif c == '"':
                i = self.double(i + 1, forbidden)
                word.append('"')
                word_start = False
            elif c == "`":
                i = self.backtick(i + 1, forbidden)
                word.append("`")
                word_start = False
            elif c == "$":
                i = self.dollar(i, forbidden, quoted=False)
                word.append("$")
                word_start = False
            elif c == "#" and word_start:
                end = t.find("\n", i, self.limit)
                end = self.limit if end < 0 else end
                for k in range(i, end):
                    if t[k] == HOLE:
                        self.hole(k, Context.COMMENT, forbidden)
                i = end
            elif c == "\n":
                end_word()
                i = self.heredoc_bodies(i + 1, forbidden)
                word_start = command_position = True
            elif c in _BLANK:
                end_word()
                word_start = True
                i += 1
            elif c == "<" and t.startswith("<<<", i):
                end_word()
                word_start = True
                i += 3
            elif c == "<" and t.startswith("<<", i):
                end_word()
                i = self.heredoc_operator(i + 2, forbidden)
                word_start = True
            elif c in ";&|<>":
                end_word()
                if c in ";&|":
                    command_position = True
                word_start = True
                i += 1
            elif c == "(" and t.startswith("((", i) and (command_position or last_word == "for") and not word:
                i = self.arithmetic(i + 2, forbidden)
                word_start = True
                command_position = False
            elif c == "(":
                end_word()
                depth += 1
                word_start = command_position = True
                i += 1
            elif c == ")":
                end_word()
                if depth > 0:
                    depth -= 1
                elif closing and cases == 0:
                    if self.heredocs:
                        raise self.unparsable("a here-document", i)
                    return i + 1
                word_start = command_position = True
                i += 1
            else:
                word.append(c)
                word_start = False
                i += 1

    def single(self, i: int, forbidden: str | None) -> int:
        end = self.t.find("'", i, self.limit)
        if end < 0:
            raise self.unparsable("'", i - 1)
        for k in range(i, end):
            if self.t[k] == HOLE:
                self.hole(k, Context.SINGLE, forbidden)
        return end + 1

    def ansi(self, i: int, forbidden: str | None) -> int:
        self.ansi_strings = True
        t = self.t
        start = i
        while i < self.limit:
            c = t[i]
            if c == "'":
                return i + 1
            if c == "\\":
                if i + 1 < self.limit and t[i + 1] == HOLE:
                    raise self.escaped(i + 1)
                i += 2
                continue
            if c == HOLE:
                self.hole(i, Context.ANSI, forbidden)
            i += 1
        raise self.unparsable("$'", start - 2)

    def double(self, i: int, forbidden: str | None) -> int:
        t = self.t
        start = i
        while i < self.limit:
            c = t[i]
            if c == '"':
                return i + 1
            if c == "\\":
                if i + 1 < self.limit and t[i + 1] == HOLE:
                    raise self.escaped(i + 1)
                i += 2
            elif c == "`":
                i = self.backtick(i + 1, forbidden)
            elif c == "$":
                i = self.dollar(i, forbidden, quoted=True)
            else:
                if c == HOLE:
                    self.hole(i, Context.DOUBLE, forbidden)
                i += 1
        raise self.unparsable('"', start - 1)

    def backtick(self, i: int, forbidden: str | None) -> int:
        t = self.t
        start = i
        while i < self.limit:
            c = t[i]
            if c == "`":
                return i + 1
            if c == HOLE or (c == "\\" and i + 1 < self.limit and t[i + 1] == HOLE):
                k = i if c == HOLE else i + 1
                end = t.find("`", k, self.limit)
                inner = self.shown_span(start, self.limit if end < 0 else end)
                self.hole(
                    k,
                    Context.WORD,
                    forbidden
                    or "inside backticks, where a value cannot be kept as data: use $(...) instead of "
                    f"backticks: $({inner if chr(10) not in inner else '...'})",
                )
            i += 2 if c == "\\" else 1
        raise self.unparsable("`", start - 1)

    def dollar(self, i: int, forbidden: str | None, *, quoted: bool) -> int:
        """At a `$`: a substitution, a parameter expansion, $'...' or a plain `$`."""
        t = self.t
        nxt = t[i + 1] if i + 1 < self.limit else ""
        if nxt == HOLE:
            raise UnsafeShellText(
                f"{self.expression(i + 1)} follows a $, which would join it to a shell parameter: "
                "remove the $ or write it as \\$"
            )
        if nxt == "(":
            if i + 2 < self.limit and t[i + 2] == "(":
                return self.arithmetic(i + 3, forbidden)
            return self.command(i + 2, closing=True, forbidden=forbidden)
        if nxt == "{":
            return self.parameter(i + 2, forbidden, quoted=quoted)
        if nxt == "[":
            return self.arithmetic(i + 2, forbidden, bracket=True)
        if nxt == "'" and not quoted:
            return self.ansi(i + 2, forbidden)
        if nxt == '"' and not quoted:
            return self.double(i + 2, forbidden)
        return i + 1

    def parameter(self, i: int, forbidden: str | None, *, quoted: bool) -> int:
        t = self.t
        start = i
        refuse = forbidden or (
            "inside ${...}, where a value cannot be kept as data: move it out of ${...} (compute a "
            "default in the expression itself, e.g. ${{ has(inputs.x) ? inputs.x : 'default' }})"
        )
        while i < self.limit:
            c = t[i]
            if c == "}":
                return i + 1
            if c == "\\":
                if i + 1 < self.limit and t[i + 1] == HOLE:
                    self.hole(i + 1, Context.WORD, refuse)
                i += 2
            elif c == "'" and not quoted:
                i = self.single(i + 1, refuse)
            elif c == '"':
                i = self.double(i + 1, refuse)
            elif c == "`":
                i = self.backtick(i + 1, refuse)
            elif c == "$":
                i = self.dollar(i, refuse, quoted=quoted)
            else:
                if c == HOLE:
                    self.hole(i, Context.WORD, refuse)
                i += 1
        raise self.unparsable("${", start - 2)

    def arithmetic(self, i: int, forbidden: str | None, *, bracket: bool = False) -> int:
        """$(( )), (( )) or (bracket) $[ ]: returns the index after its end."""
        t = self.t
        start = i
        depth = 0
        refuse = forbidden or _ARITHMETIC
        while i < self.limit:
            c = t[i]
            if c == ("[" if bracket else "("):
                depth += 1
                i += 1
            elif bracket and c == "]":
                if depth == 0:
                    return i + 1
                depth -= 1
                i += 1
            elif c == ")" and not bracket:
                if depth > 0:
                    depth -= 1
                    i += 1
                elif t.startswith("))", i):
                    return i + 2
                else:
                    raise UnsafeShellText(
                        "The shell text cannot be read: $(( starts arithmetic; for a command "
                        "substitution of a subshell write $( ( ... ) )"
                    )
            elif c == "$":
                i = self.dollar(i, refuse, quoted=True)
            elif c == "`":
                i = self.backtick(i + 1, refuse)
            elif c == '"':
                i = self.double(i + 1, refuse)
            elif c == "\\":
                if i + 1 < self.limit and t[i + 1] == HOLE:
                    self.hole(i + 1, Context.WORD, refuse)
                i += 2
            else:
                if c == HOLE:
                    self.hole(i, Context.WORD, refuse)
                i += 1
        raise self.unparsable("$[" if bracket else "((", start - 2)

    # here-documents

    def heredoc_operator(self, i: int, forbidden: str | None) -> int:
        """After `<<` (or `<<-`): read the delimiter word and queue the body for the next line."""
        t = self.t
        strip = i < self.limit and t[i] == "-"
        i += 1 if strip else 0
        while i < self.limit and t[i] in _BLANK:
            i += 1
        delimiter: list[str] = []
        quoted = False
        while i < self.limit and t[i] not in _ENDS_WORD:
            c = t[i]
            if c == HOLE:
                self.hole(
                    i,
                    Context.WORD,
                    forbidden or "a here-document delimiter: write the delimiter literally, e.g. <<EOF",
                )
            if c in "'\"":
                end = t.find(c, i + 1, self.limit)
                if end < 0:
                    raise self.unparsable(c, i)
                part = t[i + 1 : end]
                if HOLE in part:
                    self.hole(
                        i + 1 + part.index(HOLE),
                        Context.WORD,
                        forbidden or "a here-document delimiter: write the delimiter literally, e.g. <<EOF",
                    )
                delimiter.append(part)
                quoted = True
                i = end + 1
            elif c == "\\":
                if i + 1 < self.limit and t[i + 1] == HOLE:
                    self.hole(
                        i + 1,
                        Context.WORD,
                        forbidden or "a here-document delimiter: write the delimiter literally, e.g. <<EOF",
                    )
                quoted = True
                delimiter.append(t[i + 1 : i + 2])
                i += 2
            else:
                delimiter.append(c)
                i += 1
        if not delimiter:
            raise UnsafeShellText("The shell text cannot be read: a here-document (<<) has no delimiter word")
        self.heredocs.append(("".join(delimiter), strip, quoted))
        return i

    def heredoc_bodies(self, i: int, forbidden: str | None) -> int:
        """At the start of the line after a command line: read the bodies it queued."""
        pending, self.heredocs = self.heredocs, []
        t = self.t
        for delimiter, strip, quoted in pending:
            body_start = i
            body_end = self.limit
            while i < self.limit:
                line_end = t.find("\n", i, self.limit)
                line = t[i : self.limit if line_end < 0 else line_end]
                if (line.lstrip("\t") if strip else line) == delimiter:
                    body_end = i
                    i = self.limit if line_end < 0 else line_end + 1
                    break
                i = self.limit if line_end < 0 else line_end + 1
            if quoted:
                k = t.find(HOLE, body_start, body_end)
                if k >= 0:
                    self.hole(
                        k,
                        Context.HEREDOC,
                        forbidden
                        or f"in the body of a here-document with a quoted delimiter (<<'{delimiter}'), "
                        f"which takes its text literally: use an unquoted delimiter (<<{delimiter}) and "
                        "write any other $, ` or \\ of the body as \\$, \\` or \\\\",
                    )
            else:
                self.heredoc_body(body_start, body_end, delimiter, strip, forbidden)
        return i

    def heredoc_body(self, i: int, end: int, delimiter: str, strip: bool, forbidden: str | None) -> None:
        outer, self.limit = self.limit, end
        t = self.t
        try:
            while i < end:
                c = t[i]
                if c == "\\":
                    if i + 1 < end and t[i + 1] == HOLE:
                        raise self.escaped(i + 1)
                    i += 2
                elif c == "$":
                    i = self.dollar(i, forbidden, quoted=True)
                elif c == "`":
                    i = self.backtick(i + 1, forbidden)
                else:
                    if c == HOLE:
                        self.hole(i, Context.HEREDOC, forbidden, delimiter, strip)
                    i += 1
        finally:
            self.limit = outer

    def escaped(self, i: int) -> UnsafeShellText:
        return UnsafeShellText(
            f"{self.expression(i)} follows a backslash, which would escape the start of its value: "
            "remove the backslash (the value is inserted as data anyway)"
        )
