"""Listing tables at a terminal: sized to its width, IDs and timestamps never cut, --wide whole.

Driven through a pseudo-terminal (tests/terminal.py) of 80 columns, and with COLUMNS=200; on a pipe
the layout is plain and whole."""

from __future__ import annotations

import re

import pytest
from helpers import job, make_repo
from terminal import at_terminal

NOW = {"SWAMP_NOW": "2026-01-01T00:00:00Z"}
WAIT_ID = re.compile(r"wait_[a-z2-7]{26}")
RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A timestamp at its start, and what follows it: a cut one ends in … or at the line's end mid-way.
TIMESTAMP_START = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]*\S*")
WHOLE_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    repo = make_repo(tmp_path_factory.mktemp("tables") / "repo")
    long_schema = {
        "type": "object",
        "required": ["verdict"],
        "properties": {
            "verdict": {"type": "string", "enum": ["ship", "fix", "abandon"]},
            "note": {"type": "string"},
            "reviewers": {"type": "integer"},
        },
    }
    repo.write_workflow(
        "release-x",
        [
            job(
                "review-job",
                {
                    "name": "verdict",
                    "task": {"type": "wait_for_signal", "timeout": 86400, "schema": long_schema},
                },
                {
                    "name": "sign-off",
                    "task": {"type": "manual_approval", "prompt": "Ship the release to every region?"},
                },
            )
        ],
    )
    run = repo.swamp("workflow", "run", "release-x", "--json", env=NOW)
    assert run.json["status"] == "suspended", run
    return repo, run.json["id"], run.json["waits"][0]["waitId"]


def widths(text: str) -> list[int]:
    return [len(line) for line in text.splitlines()]


def assert_no_cut_ids_or_times(text: str) -> None:
    for stamp in TIMESTAMP_START.findall(text):
        assert WHOLE_TIMESTAMP.fullmatch(stamp), f"a timestamp is cut: {stamp!r} in\n{text}"
    for word in re.findall(r"wait_\S*", text):
        assert WAIT_ID.fullmatch(word.rstrip(")")) or word == "wait_timeout", f"a wait ID is cut: {word!r}"


@pytest.mark.cli
@pytest.mark.parametrize(
    ("args", "must_show"),
    [
        (["workflow", "waits"], "wait"),
        (["workflow", "history"], "run"),
        (["workflow", "approvals"], "run"),
    ],
)
def test_tables_fit_80_columns_and_never_cut_an_id_or_a_timestamp(listed, args, must_show):
    repo, run_id, wait_id = listed
    code, text = at_terminal(args, repo.root, NOW, columns=80)
    assert code == 0, text
    table_lines = [line for line in text.splitlines() if not line.startswith(("Send", "  (", "An "))]
    assert max(widths("\n".join(table_lines))) <= 80, text
    assert_no_cut_ids_or_times(text)
    assert (wait_id if must_show == "wait" else run_id) in text, text  # the ID the next command needs
    assert "--wide" in text, text  # says what was left out and how to see it


@pytest.mark.cli
def test_at_200_columns_waits_shows_every_column_and_the_whole_run_id(listed):
    repo, run_id, wait_id = listed
    code, text = at_terminal(["workflow", "waits"], repo.root, {**NOW, "COLUMNS": "200"}, columns=80)
    assert code == 0, text
    assert run_id in text and wait_id in text, text
    assert "2026-01-02T00:00:00.000Z" in text  # the deadline, whole
    assert "{verdict: ship|fix|abandon, note?: string, reviewers?: integer}" in text
    assert "…" not in text and "--wide" not in text


@pytest.mark.cli
def test_wide_shows_every_column_whole_at_80_columns(listed):
    repo, run_id, wait_id = listed
    code, text = at_terminal(["workflow", "waits", "--wide"], repo.root, NOW, columns=80)
    assert code == 0, text
    assert run_id in text and "2026-01-02T00:00:00.000Z" in text and "reviewers?: integer}" in text
    assert "…" not in text


@pytest.mark.cli
def test_on_a_pipe_the_table_is_plain_and_whole(listed):
    repo, run_id, wait_id = listed
    result = repo.swamp("workflow", "waits", env={**NOW, "COLUMNS": "80"})
    assert result.code == 0, result
    header, row = result.out.splitlines()[:2]
    assert header.split() == ["WAIT", "WORKFLOW", "RUN", "STEP", "DEADLINE", "LEFT", "SCHEMA"]
    assert row.split()[:6] == [
        wait_id,
        "release-x",
        run_id,
        "review-job.verdict",
        "2026-01-02T00:00:00.000Z",
        "1d0h",
    ]
    assert "…" not in result.out and "\x1b[" not in result.out
    assert not set("│─╭╮╰╯┃━") & set(result.out)


@pytest.mark.cli
def test_expired_waits_are_not_offered_a_signal_and_an_empty_list_says_how_to_see_them(listed):
    repo, run_id, wait_id = listed
    later = {"SWAMP_NOW": "2026-01-03T00:00:00Z"}  # past the wait's deadline
    shown = repo.swamp("workflow", "waits", "--all", env=later)
    assert shown.code == 0 and wait_id in shown.out and "expired" in shown.out, shown
    assert "Send one with" not in shown.out
    assert "swamp workflow resume WORKFLOW --run RUN_ID" in shown.out  # what an expired wait needs
    empty = repo.swamp("workflow", "waits", env=later)
    assert empty.out.splitlines() == [
        "No open waits.",
        "Some waits are past their deadline; see them with: swamp workflow waits --all",
    ]
    assert repo.swamp("workflow", "waits", env=NOW).out.count("Send one with") == 1
