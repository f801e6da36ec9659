"""The payload prompt of `swamp workflow signal WAIT_ID` at a terminal (no --payload), driven through a
pseudo-terminal (tests/terminal.py): fields from the wait's schema, required first, enums as numbered
choices, values checked as typed, JSON for what cannot be asked, a preview, a confirmation; Ctrl-C,
end of input and "no" send nothing; off a terminal the usage error stays."""

from __future__ import annotations

import json

import pytest
from helpers import job, make_repo
from terminal import Terminal

NOW = {"SWAMP_NOW": "2026-01-01T00:00:00Z"}
SCHEMA = {
    "type": "object",
    "required": ["verdict", "reviewers", "details"],
    "properties": {
        "note": {"type": "string"},
        "verdict": {"enum": ["ship", "fix", "abandon"]},
        "reviewers": {"type": "integer", "minimum": 1},
        "urgent": {"type": "boolean"},
        "details": {
            "type": "object",
            "required": ["ticket"],
            "properties": {
                "size": {"type": "number"},
                "ticket": {"type": "string", "pattern": "^REL-[0-9]+$"},
            },
        },
        "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {"type": ["string", "null"]},
    },
}


@pytest.fixture(scope="module")
def prompt_repo(tmp_path_factory):
    repo = make_repo(tmp_path_factory.mktemp("prompt") / "repo")
    repo.write_workflow("review", [job("main", waiting("verdict", SCHEMA, 86400))])
    repo.write_workflow("count", [job("main", waiting("n", {"type": "integer", "minimum": 1}, 60))])
    return repo


def waiting(name: str, schema: dict, timeout: int) -> dict:
    return {"name": name, "task": {"type": "wait_for_signal", "timeout": timeout, "schema": schema}}


def open_wait(repo, workflow: str = "review") -> str:
    run = repo.swamp("workflow", "run", workflow, "--json", env=NOW)
    assert run.json["status"] == "suspended", run
    return run.json["waits"][0]["waitId"]


def wait_doc(repo, wait_id: str) -> dict:
    return repo.swamp("workflow", "wait", "show", wait_id, "--json", env=NOW).json


@pytest.mark.cli
def test_the_prompt_asks_each_field_checks_it_previews_and_sends_on_yes(prompt_repo):
    wait_id = open_wait(prompt_repo)
    term = Terminal(["workflow", "signal", wait_id], prompt_repo.root, NOW)
    term.expect("step main.verdict of review")
    # required fields first, in `required` order; the enum as numbered choices
    assert "1) ship\n  2) fix\n  3) abandon" in term.expect("verdict [1-3]: ")
    term.line("4")
    term.expect("choose a number from 1 to 3")
    term.expect("verdict [1-3]: ")
    term.line("1")
    term.expect("reviewers (integer, ≥ 1): ")
    term.line("two")
    term.expect("type a whole number")
    term.expect("reviewers (integer, ≥ 1): ")
    term.line("0")
    term.expect("minimum of 1")
    term.expect("reviewers (integer, ≥ 1): ")
    term.line("2")
    term.expect("details.ticket (string): ")  # a nested object, field by field
    term.line("nope")
    term.expect("does not match")
    term.expect("details.ticket (string): ")
    term.line("REL-42")
    term.expect("details.size (optional, number; Enter to skip): ")
    term.line("")
    # then the optional ones, in schema order
    term.expect("note (optional, string; Enter to skip): ")
    term.line("ship it; $(rm -rf /)")
    term.expect("urgent (optional, boolean; Enter to skip): ")
    term.line("yes")
    term.expect("tags (JSON, Enter to skip): ")  # an array: typed as JSON
    term.line('["eu", "us"')
    term.expect("not valid JSON")
    term.expect("tags (JSON, Enter to skip): ")
    term.line('["eu", "us"]')
    term.expect("owner (optional, string or null; Enter to skip): ")  # a nullable type
    term.line("null")
    preview = term.expect(f"Send it to {wait_id}? [y/N] ")
    expected = {
        "verdict": "ship",
        "reviewers": 2,
        "details": {"ticket": "REL-42"},
        "note": "ship it; $(rm -rf /)",
        "urgent": True,
        "tags": ["eu", "us"],
        "owner": None,
    }
    assert json.loads(preview.split("Payload:", 1)[1]) == expected
    assert wait_doc(prompt_repo, wait_id)["status"] == "open"  # nothing sent before the answer
    term.line("y")
    term.expect("Continue the run now? [Y/n] ")  # CLI-039: the run waits for nothing more
    term.line("n")
    code, text = term.finish()
    assert code == 0, text
    assert "Signal accepted" in text
    doc = wait_doc(prompt_repo, wait_id)
    assert doc["status"] == "received" and doc["payload"] == expected


@pytest.mark.parametrize("answer", ["", "n"])
@pytest.mark.cli
def test_anything_but_yes_at_the_confirmation_sends_nothing(prompt_repo, answer):
    wait_id = open_wait(prompt_repo, "count")
    term = Terminal(["workflow", "signal", wait_id], prompt_repo.root, NOW)
    term.expect("payload (integer, ≥ 1): ")
    term.line("3")
    term.expect("[y/N] ")
    term.line(answer)
    code, text = term.finish()
    assert code == 1 and "Not sent." in text, text
    assert wait_doc(prompt_repo, wait_id)["status"] == "open"


@pytest.mark.parametrize(("keys", "name"), [("\x03", "ctrl-c"), ("\x04", "end of input")])
@pytest.mark.cli
def test_ctrl_c_or_end_of_input_cancels_with_nothing_sent(prompt_repo, keys, name):
    wait_id = open_wait(prompt_repo)
    term = Terminal(["workflow", "signal", wait_id], prompt_repo.root, NOW)
    term.expect("verdict [1-3]: ")
    term.line("2")
    term.expect("reviewers (integer, ≥ 1): ")
    term.send(keys)
    code, text = term.finish()
    assert code == 130, text
    assert "Cancelled: nothing was sent." in text and "Traceback" not in text
    assert wait_doc(prompt_repo, wait_id)["status"] == "open"


@pytest.mark.cli
def test_a_wait_that_is_not_open_is_refused_without_asking(prompt_repo):
    wait_id = open_wait(prompt_repo, "count")
    later = {"SWAMP_NOW": "2026-01-01T00:05:00Z"}  # past the 60 s deadline
    code, text = Terminal(["workflow", "signal", wait_id], prompt_repo.root, later).finish()
    assert code == 3 and "wait_expired" in text and "payload" not in text.split("Error")[0], text
    code, text = Terminal(["workflow", "signal", "wait_" + "a" * 26], prompt_repo.root, NOW).finish()
    assert code == 3 and "wait_not_found" in text, text


@pytest.mark.cli
def test_off_a_terminal_a_missing_payload_stays_a_usage_error(prompt_repo):
    wait_id = open_wait(prompt_repo, "count")
    result = prompt_repo.swamp("workflow", "signal", wait_id, env=NOW)
    assert result.code == 2 and "--payload" in result.err, result
    result = prompt_repo.swamp("workflow", "signal", wait_id, "--json", env=NOW)
    assert result.code == 2 and result.json["error"]["code"] == "usage_error"
    assert wait_doc(prompt_repo, wait_id)["status"] == "open"
