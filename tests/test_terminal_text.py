"""Nothing from a run reaches a terminal raw (CLI-030), where the conformance runner cannot go: a
line planted in the run's journal while `watch` follows it, the payload prompt and the elapsed-time
line at a pseudo-terminal; and an `--input` that is not UTF-8 (INPUT-012), which the runner cannot
send (it sends argv as Unicode text). The scenarios cli-terminal-text-* cover the rest."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest
from helpers import SWAMP, clean_env, job, make_repo, run_swamp, sh
from terminal import Terminal

from swamp.cli.terminal_text import own_line, shown, shown_doc

NOW = {"SWAMP_NOW": "2026-01-01T00:00:00Z"}
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what must never reach the terminal from a run
OSC52 = "\x1b]52;c;aGk=\x07"  # writes "hi" to the clipboard


def test_shown_escapes_c0_del_c1_and_undecodable_bytes_but_keeps_tab_and_newline():
    assert shown("a\x1b[2Jb\x07\x00\x7f\x9b\x85c") == "a\\x1b[2Jb\\x07\\x00\\x7f\\x9b\\x85c"
    assert shown("tab\there\nnext") == "tab\there\nnext"
    assert shown(b"x\xffy".decode("utf-8", "surrogateescape")) == "x\\xffy"
    assert shown("lone \ud800") == "lone \\ud800"
    assert shown("ünï ✓ \u2028") == "ünï ✓ \u2028"  # printable Unicode stays as it is
    assert shown(shown("\x1b")) == shown("\x1b")  # idempotent: shown twice is shown once
    assert shown_doc({"k\x1b": ["v\x07", 1, None, {"n": "\r"}]}) == {
        "k\\x1b": ["v\\x07", 1, None, {"n": "\\x0d"}]
    }


def test_the_last_guard_lets_only_swamps_own_colour_through_and_only_with_colour():
    line = "\x1b[32mok\x1b[0m " + OSC52 + " \x1b[2J"
    assert own_line(line, colour=True) == "\x1b[32mok\x1b[0m \\x1b]52;c;aGk=\\x07 \\x1b[2J"
    assert own_line(line, colour=False) == "\\x1b[32mok\\x1b[0m \\x1b]52;c;aGk=\\x07 \\x1b[2J"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = make_repo(tmp_path_factory.mktemp("terminal-text") / "repo")
    wait = {
        "name": "review\x1b]0;title\x07",
        "task": {
            "type": "wait_for_signal",
            "timeout": 600,
            "description": "Check ${{ inputs.note }}",
            "schema": {
                "type": "object",
                "required": ["ok\x1b[2J"],
                "properties": {"ok\x1b[2J": {"type": "boolean", "description": "say " + OSC52}},
            },
        },
    }
    repo.write_workflow(
        "asks", [job("main\x1b[H", wait)], inputs={"properties": {"note": {"type": "string"}}}
    )
    repo.write_workflow("slow", [job("main", sh("wait\x1b]0;title\x07", "sleep 1.6"))])
    return repo


def suspended(repo) -> dict:
    run = repo.swamp("workflow", "run", "asks", "--input", "note=" + OSC52, "--json", env=NOW)
    assert run.code == 0 and run.json["status"] == "suspended", run
    return run.json


@pytest.mark.cli
def test_a_line_planted_in_the_journal_is_shown_escaped_by_watch(repo):
    run = suspended(repo)
    journal = repo.root / ".swamp" / "journal" / f"{run['id']}.jsonl"
    last = json.loads(journal.read_text(encoding="utf-8").splitlines()[-1])["seq"]
    watch = subprocess.Popen(
        [str(SWAMP), "workflow", "watch", run["id"], "--timeout", "60"],
        cwd=repo.root,
        env=clean_env(NOW),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline()  # `Watching: ...`: its journal reader has started
        assert first.startswith(b"Watching"), first
        planted = {"event": "step_output", "job": "x\x1b[2J", "step": "y", "stream": "stdout", "line": OSC52}
        with journal.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"seq": last + 1, "event": planted}) + "\n")
        answer = repo.swamp(
            "workflow",
            "signal",
            run["waits"][0]["waitId"],
            "--payload",
            '{"ok\\u001b[2J": true}',
            "--resume",
            env=NOW,
        )
        assert answer.code == 0, answer
        rest, errors = watch.communicate(timeout=60)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    shown_text = (first + rest).decode("utf-8")
    assert watch.returncode == 0, (shown_text, errors)
    assert "x\\x1b[2J │   y │ \\x1b]52;c;aGk=\\x07" in shown_text
    assert not RAW.search(shown_text), shown_text


@pytest.mark.cli
def test_the_payload_prompt_shows_the_wait_and_its_fields_escaped(repo):
    run = suspended(repo)
    term = Terminal(["workflow", "signal", run["waits"][0]["waitId"]], repo.root, NOW)
    before = term.expect("(boolean): ")
    term.line("yes")
    term.expect("[y/N] ")
    term.line("n")
    code, seen = term.finish()
    assert code == 1
    assert "step main\\x1b[H.review\\x1b]0;title\\x07 of asks" in before
    assert "Check \\x1b]52;c;aGk=\\x07" in before
    assert "ok\\x1b[2J: say \\x1b]52;c;aGk=\\x07" in seen
    assert "\x1b]" not in seen and "\x07" not in seen  # CSI sequences are swamp's colours here


@pytest.mark.cli
def test_the_elapsed_time_line_at_a_terminal_shows_the_step_name_escaped(repo):
    code, seen = Terminal(["workflow", "run", "slow"], repo.root, NOW, columns=120).finish()
    assert code == 0, seen
    assert "main │ ◐ wait\\x1b]0;title\\x07 1s" in seen
    assert "\x1b]" not in seen and "\x07" not in seen


@pytest.mark.cli
@pytest.mark.parametrize("value", [b"note=a\xffb", b'{"note": "a\xffb"}', b"n\xffote=1"])
def test_an_input_that_is_not_utf8_is_a_usage_error_that_says_what_to_do(repo, value):
    for json_mode in (False, True):
        args = [os.fsencode(str(SWAMP)), b"workflow", b"run", b"asks", b"--input", value]
        done = subprocess.run(
            args + ([b"--json"] if json_mode else []), cwd=repo.root, env=clean_env(NOW), capture_output=True
        )
        assert done.returncode == 2, done
        text = (done.stdout if json_mode else done.stderr).decode("utf-8")  # itself UTF-8
        if json_mode:
            error = json.loads(text)["error"]
            assert error["code"] == "usage_error"
            text = error["message"]
        else:
            assert done.stdout == b"" and "(usage_error)" in text
        assert "not UTF-8 text (byte 0xff" in text and "convert the value to UTF-8" in text
        assert "\\xff" in text and "internal_error" not in text


@pytest.mark.cli
def test_completion_escapes_descriptions_and_offers_no_name_holding_a_control_character(repo):
    run = suspended(repo)

    def zsh(words: str) -> list[str]:
        env = {**NOW, "_SWAMP_COMPLETE": "zsh_complete", "COMP_WORDS": words, "COMP_CWORD": "3"}
        return run_swamp(cwd=repo.root, env=env).out.splitlines()

    # zsh prints each candidate's description: the wait's step names come from the workflow file
    offered = zsh("swamp workflow signal w")
    assert run["waits"][0]["waitId"] in offered
    assert "asks main\\x1b[H.review\\x1b]0;title\\x07: Check \\x1b]52;c;aGk=\\x07" in offered
    assert not any(RAW.search(line) for line in offered), offered
    repo.write_workflow("bad\x1b]0;t\x07name", [job("main", sh("s", "true"))])
    offered = zsh("swamp workflow run b")
    assert not any(RAW.search(line) for line in offered), offered


def test_serves_log_shows_a_socket_path_with_control_characters_as_escapes(tmp_path):
    """CLI-030 for `swamp serve`'s own log (stderr or --log-file): a path, a name or a message in a
    log line is shown as for log mode."""
    repo = make_repo(tmp_path / "repo")
    socket = tmp_path / "s\x1b]0;owned\x07.sock"
    log = tmp_path / "serve.log"
    serve = subprocess.Popen(
        [SWAMP, "serve", "--socket", str(socket), "--log-file", str(log)],
        cwd=repo.root, env=clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(600):  # until it says where it listens (at most a minute)
            if log.exists() and "ready" in log.read_text(errors="replace"):
                break
            time.sleep(0.1)
        serve.terminate()
        serve.wait(timeout=60)
    finally:
        serve.kill()
    text = log.read_text(encoding="utf-8", errors="surrogateescape")
    assert "listening on" in text and "s\\x1b]0;owned\\x07.sock" in text, text
    assert not RAW.search(text.replace("\n", "")), text


def test_a_json_document_is_utf8_when_an_argument_is_not(tmp_path):
    """CLI-030: the refusal of `workflow run <0xff>` names the argument escaped, not as a raw byte."""
    repo = make_repo(tmp_path / "repo")
    done = subprocess.run(
        [SWAMP, "workflow", "run", os.fsdecode(b"x\xffy"), "--json"], cwd=repo.root, env=clean_env(),
        capture_output=True, timeout=60,
    )  # fmt: skip
    document = json.loads(done.stdout.decode("utf-8"))  # strict: a raw 0xff fails here
    assert done.returncode == 3 and document["error"]["code"] == "workflow_not_found"
    assert "x\udcffy" in document["error"]["message"]
