"""Values in shell arguments are data in every quoting context (EXPR-017, MODEL-014..017, WAIT-038).

For arbitrary text — shell metacharacters, quotes, backslashes, line breaks, `$(...)`, backquotes,
here-document delimiters, any Unicode, no NUL — put in every context the scanner makes safe
(unquoted, next to other characters, "...", '...', $'...', `$(...)`, a here-document body, a
comment), the command sees exactly the value and creates no file: through the command/shell model
in process (the environment, under sh) and under bash, and inline (extension types' quoting)
under both. One script per shell and mode holds every context, so an example costs four processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from swamp.domain.errors import UnsafeShellText
from swamp.domain.shellwords import insert_values
from swamp.models.shell import execute
from swamp.models.types import MethodContext

SEP = "\x1e"  # between the contexts' outputs; kept out of the values
X = "${{ inputs.v }}"
INLINE_DELIMITER = "ZZ_END"
FRAGMENTS = [
    "$(touch pwned)", "`touch pwned2`", "'", '"', "\\", "\n", "\t", "EOF", "\nEOF\n", "ZZ_END", "$",
    "${HOME}", "$HOME", "$'", "*", "?", "~", " ", ";", "&&", "|", ">out", "<", "#", "!", "%s", "%",
    "${{ x }}", "'\"'\"'", "\\'", "é", "日本", "\U0001f600", "\r", ")", "(", "}", "{",
]  # fmt: skip
TEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00" + SEP)
VALUES = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(TEXT, max_size=6)), max_size=10).map("".join)
SHELLS = [s for s in ("dash", "bash") if shutil.which(s)] or ["sh"]


def _ansi_supported(shell: str) -> bool:
    done = subprocess.run([shell, "-c", "printf %s $'a'"], capture_output=True, text=True, timeout=10)
    return done.stdout == "a"


ANSI = {shell: _ansi_supported(shell) for shell in SHELLS}


def contexts(value: str, *, inline: bool, shell: str) -> list[tuple[str, str]]:
    """(template, what the command prints) for every context; each prints SEP after itself."""
    out = [
        (f"printf '%s{SEP}' {X}", value),
        (f"printf '%s{SEP}' a{X}b", f"a{value}b"),
        (f"printf '%s{SEP}' \"[{X}] $HOME\"", f"[{value}] {os.environ.get('HOME', '')}"),
        (f"printf '%s{SEP}' 'it''s [{X}]'", f"its [{value}]"),
        (f"printf '%s{SEP}' \"$(printf '%s' {X})\"", value.rstrip("\n")),
        (f"printf '%s{SEP}' \"$(printf '%s' \"<{X}>\")\"", f"<{value}>"),
        (f"printf '%s{SEP}' ok # it's {X}", "ok"),
    ]
    delimiter = INLINE_DELIMITER if inline else "EOF"
    heredoc = (f"cat <<{delimiter}\n[{X}]\n{delimiter}\nprintf '{SEP}'", f"[{value}]\n")
    if inline and any(line.lstrip("\t").startswith(delimiter) for line in value.split("\n")):
        try:
            insert_values(heredoc[0], lambda source: value, by_environment=False)
        except UnsafeShellText:
            pass
        else:  # pragma: no cover - the failure it reports
            raise AssertionError("a value holding the here-document's delimiter line was spliced in")
    else:
        out.append(heredoc)
    if not inline:
        out.append((f"printf '%s{SEP}' $'[{X}]'", f"[{value}]" if ANSI[shell] else f"$[{value}$]"))
    return out


def run(shell: str, value: str, workdir: Path, *, inline: bool) -> None:
    cases = contexts(value, inline=inline, shell=shell)
    script = "\n".join(template for template, _ in cases)
    text = insert_values(script, lambda source: value, by_environment=not inline)
    expected = [want for _, want in cases]
    if shell == "dash" and not inline:  # the command/shell model itself, in process
        ctx = MethodContext(str(workdir), "sh", "command/shell", "execute", "r", "w", "s", {})
        ctx.shell_values = text.environment
        stdout = execute({"run": text.text}, ctx)["stdout"]
        # The model records output as text read with universal newlines: \r\n and \r read as \n.
        expected = [want.replace("\r\n", "\n").replace("\r", "\n") for want in expected]
    else:
        done = subprocess.run(
            [shell, "-c", text.text],
            cwd=workdir,
            env={**os.environ, **text.environment},
            capture_output=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        stdout = done.stdout.decode()
    assert stdout.split(SEP)[:-1] == expected
    assert stdout.endswith(SEP)
    assert list(workdir.iterdir()) == []


@settings(max_examples=settings.default.max_examples * 2)
@given(value=VALUES)
def test_a_value_is_exactly_what_the_command_sees_in_every_context(tmp_path_factory, value):
    workdir = tmp_path_factory.mktemp("sh")
    for shell in SHELLS:
        for inline in (False, True):
            run(shell, value, workdir, inline=inline)


# Pieces of sh text around expressions: quotes, substitutions, here-documents, comments, cases.
PIECES = [
    X, X, X, "'", '"', "$", "$(", ")", "(", "${x:-", "}", "<<E\n", "<<'E'\n", "<<-E\n", "\nE\n", "\n",
    "\\", "#", " ", ";", "printf %s ", "echo ", "a", "$'", "\\'", "`", "cat ", "case a in a) ", ";; esac",
    "{ ", " }", "$HOME", "x=", "\t",
]  # fmt: skip


def _nest(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, inner).map("".join),
        inner.map(lambda w: "'" + w.replace("'", "") + "'"),
        inner.map(lambda w: '"' + w.replace('"', "") + '"'),
        inner.map(lambda w: "$'" + w.replace("'", "") + "'"),
        inner.map(lambda w: "$(printf %s " + w + ")"),
        inner.map(lambda w: '"$(printf %s ' + w + ')"'),
        inner.map(lambda w: "$(case a in a) printf %s " + w + ";; esac)"),
    )


WORDS = st.recursive(st.sampled_from([X, "a", "$HOME", "%", "x y"]), _nest, max_leaves=6)
COMMANDS = st.one_of(
    st.lists(WORDS, min_size=1, max_size=3).map(lambda ws: "printf '%s|' " + " ".join(ws)),
    st.lists(WORDS, min_size=1, max_size=3).map(lambda ws: "cat <<E\n" + " ".join(ws) + "\nE"),
    st.lists(WORDS, min_size=1, max_size=3).map(lambda ws: "cat <<-E\n\t" + " ".join(ws) + "\n\tE"),
    WORDS.map(lambda w: "printf 'x|' # " + w),
    WORDS.map(lambda w: "x=" + w + "; printf '%s|' \"$x\""),
)
STRUCTURED = st.lists(COMMANDS, min_size=1, max_size=3).map("\n".join)
PIECED = st.lists(st.sampled_from(PIECES), min_size=1, max_size=14).map("".join)
TEMPLATES = st.one_of(STRUCTURED, PIECED).filter(lambda t: X in t and "$$" not in t)  # $$: the PID


def _outcome(shell: str, text: str, env: dict[str, str], workdir: Path) -> tuple[bytes, int] | None:
    try:
        done = subprocess.run(
            [shell, "-c", text],
            cwd=workdir,
            env={**os.environ, **env},
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=10,
        )
    except subprocess.TimeoutExpired:  # pragma: no cover - none of the pieces waits
        return None
    return done.stdout, done.returncode


@settings(max_examples=settings.default.max_examples * 2)
@given(template=TEMPLATES)
def test_the_scanner_reads_each_context_as_the_shell_does(tmp_path_factory, template):
    """Differential: for a value every context reads alike (`%`), the text with references must do
    exactly what the text with the value written in does, under each shell. A context the scanner
    got wrong gets the wrong reference form, which prints quotes or fails."""
    try:
        text = insert_values(template, lambda source: "%", by_environment=True)
    except UnsafeShellText:
        return
    workdir = tmp_path_factory.mktemp("diff")
    for shell in SHELLS:
        if "$'" in template and not ANSI[shell]:
            continue  # MODEL-015: a sh without $'...' reads a `$` before each piece (data all the same)
        written = _outcome(shell, template.replace(X, "%"), {}, workdir)
        referenced = _outcome(shell, text.text, text.environment, workdir)
        assert referenced == written, (shell, text.text)
