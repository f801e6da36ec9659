"""The shell-word scanner and value insertion for shell arguments (MODEL-014..017, EXPR-017):
which context each `${{ }}` lands in, which contexts are refused and with what safe form, and that
the inserted text hands a hostile value to dash and bash as exactly that value."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from swamp.domain.errors import UnsafeShellText
from swamp.domain.shellwords import Context, insert_values, scan, whole_value

X = "${{ inputs.x }}"
SHELLS = [s for s in ("dash", "bash") if shutil.which(s)] or ["sh"]
HOSTILE = "it's \"$(touch p1)\" `touch p2` \\ $HOME ${PATH} ; touch p3 *\nEOF\n\t$'x' end %s"


@pytest.mark.parametrize(
    ("template", "contexts"),
    [
        (f"echo {X}", [Context.WORD]),
        (f"echo a{X}b {X}", [Context.WORD, Context.WORD]),
        (f'echo "got {X}!"', [Context.DOUBLE]),
        (f"echo 'got {X}!'", [Context.SINGLE]),
        (f"echo $'got {X}'", [Context.ANSI]),
        (f"cat <<EOF\n{X}\nEOF\necho {X}", [Context.HEREDOC, Context.WORD]),
        (f"cat <<-EOF >out\n\t{X}\n\tEOF", [Context.HEREDOC]),
        (f'echo "$(printf %s "{X}") {X}"', [Context.DOUBLE, Context.DOUBLE]),
        (f"echo $(echo $(echo '{X}'))", [Context.SINGLE]),
        (f"echo ok # it's {X}\necho {X}", [Context.COMMENT, Context.WORD]),
        (f"echo a#{X}", [Context.WORD]),
        (f"echo $# {X}", [Context.WORD]),
        (f"cat <<< {X}", [Context.WORD]),
        (f'x=$(case a in a) echo "{X}";; esac)', [Context.DOUBLE]),
        (f"echo ${{HOME}} \\$ {X}", [Context.WORD]),
        (f'echo "a\\"{X}"', [Context.DOUBLE]),
        (f"echo $(cat <<E\n{X}\nE\n) '{X}'", [Context.HEREDOC, Context.SINGLE]),
        (f'[[ "{X}" == yes ]]', [Context.DOUBLE]),
    ],
)
def test_the_scanner_names_the_context_of_every_expression(template, contexts):
    assert [hole.context for hole in scan(template)] == contexts


@pytest.mark.parametrize(
    ("template", "says"),
    [
        (f"echo `echo {X}`", f"use $(...) instead of backticks: $(echo {X})"),
        (f'echo "`echo {X}`"', "instead of backticks"),
        (f"echo $(( {X} + 1 ))", "inside shell arithmetic"),
        (f"echo $[ {X} ]", "inside shell arithmetic"),
        (f"(( {X} > 1 ))", "inside shell arithmetic"),
        (f"for (( i = 0; i < {X}; i++ )); do :; done", "inside shell arithmetic"),
        (f'[[ "{X}" -lt 3 ]]', "use [ ... ] instead of [[ ... ]]"),
        (f"echo ${{A:-{X}}}", "move it out of ${...}"),
        (f'echo "${{A:-"{X}"}}"', "move it out of ${...}"),
        (f"cat <<'EOF'\n{X}\nEOF", "use an unquoted delimiter (<<EOF)"),
        (f'cat <<"E"F\n{X}\nEF', "use an unquoted delimiter (<<EF)"),
        (f"cat <<{X}\nx\n", "a here-document delimiter: write the delimiter literally"),
        (f"echo \\{X}", "follows a backslash"),
        (f'echo "\\{X}"', "follows a backslash"),
        (f"echo ${X}", "follows a $"),
        (f"echo 'abc {X}", "' at line 1 is never closed"),
        (f'echo "{X}', '" at line 1 is never closed'),
        (f"echo\necho $(echo {X}", "$( at line 2 is never closed"),
        (f"echo $'{X}", "$' at line 1 is never closed"),
        (f"echo $(cat <<E) {X}\nE\n", "a here-document at line 1 is never closed"),
    ],
)
def test_a_context_with_no_safe_form_is_refused_with_the_safe_form(template, says):
    with pytest.raises(UnsafeShellText) as refused:
        scan(template)
    assert says in refused.value.message
    assert "\n" not in refused.value.message


def test_text_without_expressions_is_not_read_at_all():
    assert scan("echo `unbalanced") == []


def test_inline_quoting_refuses_dollar_single_quotes_anywhere_in_the_text():
    scan(f"echo $'a' {X}")
    with pytest.raises(UnsafeShellText, match=r"use '\.\.\.' instead"):
        scan(f"echo $'a' {X}", inline=True)


def test_values_go_to_numbered_variables_referenced_for_their_context():
    text = insert_values(
        f"echo {X} \"{X}\" '{X}' $'{X}'", lambda source: "v", by_environment=True, first_index=3
    )
    assert text.text == (
        "echo \"${SWAMP_VALUE_3}\" \"${SWAMP_VALUE_4}\" ''\"${SWAMP_VALUE_5}\"'' $''\"${SWAMP_VALUE_6}\"$''"
    )
    assert text.environment == {f"SWAMP_VALUE_{n}": "v" for n in (3, 4, 5, 6)}


def test_values_are_stringified_as_in_text_and_null_is_an_empty_word():
    values = iter([None, 2.0, [1]])
    text = insert_values(f"f {X} {X} {X}", lambda source: next(values), by_environment=True)
    assert list(text.environment.values()) == ["", "2", "[\n  1\n]"]
    assert whole_value(None, by_environment=False).text == "''"


@pytest.mark.parametrize("value", ["a\x00b", "\ud800"])
def test_a_value_no_command_can_receive_is_refused(value):
    with pytest.raises(UnsafeShellText, match="NUL byte|lone UTF-16 surrogate"):
        insert_values(f"echo {X}", lambda source: value, by_environment=True)


def test_inline_here_document_refuses_a_value_that_would_end_it():
    with pytest.raises(UnsafeShellText, match="delimiter EOF"):
        insert_values(f"cat <<EOF\n{X}\nEOF", lambda s: "a\nEOF\ntouch p", by_environment=False)
    with pytest.raises(UnsafeShellText, match="<<-"):
        insert_values(f"cat <<-EOF\n{X}\nEOF", lambda s: "a\n\tb", by_environment=False)


CONTEXTS = [
    # (template, what the command prints for value v)
    (f"printf '%s|' {X}", lambda v: v + "|"),
    (f"printf '%s|' a{X}b", lambda v: "a" + v + "b|"),
    (f"printf '%s|' \"[{X}]\"", lambda v: "[" + v + "]|"),
    (f"printf '%s|' '[{X}]'", lambda v: "[" + v + "]|"),
    (f"cat <<EOT\n[{X}]\nEOT", lambda v: "[" + v + "]\n"),
    (f"printf '%s|' \"$(printf '%s' {X})\"", lambda v: v.rstrip("\n") + "|"),
    (f"printf '%s|' ok # {X}", lambda v: "ok|"),
]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("by_environment", [True, False], ids=["environment", "inline"])
@pytest.mark.parametrize(("template", "expected"), CONTEXTS, ids=[str(i) for i in range(len(CONTEXTS))])
def test_a_hostile_value_reaches_the_shell_exactly_and_runs_nothing(
    tmp_path: Path, shell, by_environment, template, expected
):
    text = insert_values(template, lambda source: HOSTILE, by_environment=by_environment)
    done = subprocess.run(
        [shell, "-c", text.text],
        cwd=tmp_path,
        env={**os.environ, **text.environment},
        capture_output=True,
        timeout=30,
    )
    assert (done.stdout.decode(), done.returncode) == (expected(HOSTILE), 0)
    assert list(tmp_path.iterdir()) == []
