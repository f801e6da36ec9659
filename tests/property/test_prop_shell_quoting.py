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
