"""The run journal (store/journal.py): sequence numbers without gaps across executions, a line
torn by a crash skipped, the size bound, and no write through a symbolic link."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from swamp.store import journal as journal_module
from swamp.store.journal import RunJournal
from swamp.store.repo import RepoLayout

RUN = "0f0f0f0f-0000-4000-8000-000000000001"


def event(kind: str, **fields: object) -> dict[str, object]:
    return {"event": kind, "at": "2026-01-01T00:00:00.000Z", **fields}


def output(line: str) -> dict[str, object]:
    return event("step_output", job="main", step="s", line=line)


@pytest.fixture
def journal(tmp_path: Path) -> RunJournal:
    (tmp_path / ".swamp").mkdir()
    return RunJournal(RepoLayout(tmp_path))


def test_a_resumed_run_continues_the_numbering_and_a_torn_line_is_skipped(journal: RunJournal) -> None:
    first = journal.writer(RUN)
    first.append(event("run_started", runId=RUN, workflow="w"))
    first.append(output("one"))
    first.append(event("run_suspended", runId=RUN, waiting=[]))
    with open(journal.path(RUN), "ab") as raw:  # a process killed mid-write
        raw.write(b'{"seq":4,"event":{"event":"step_out')
    second = journal.writer(RUN)
    second.append(event("run_resumed", runId=RUN, workflow="w"))
    second.append(event("run_completed", runId=RUN, status="succeeded"))
    entries = journal.read(RUN)
    assert [seq for seq, _ in entries] == [1, 2, 3, 4, 5]
    assert [e["event"] for _, e in entries] == [
        "run_started",
        "step_output",
        "run_suspended",
        "run_resumed",
        "run_completed",
    ]
    assert [seq for seq, _ in journal.read(RUN, after_seq=3)] == [4, 5]


def test_past_the_output_cap_output_lines_are_dropped_with_one_marker(
    journal: RunJournal, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "OUTPUT_CAP", 2000)
    monkeypatch.setattr(journal_module, "TOTAL_CAP", 4000)
    writer = journal.writer(RUN)
    for i in range(100):
        writer.append(output(f"line {i:03d} " + "x" * 40))
    writer.append(event("step_succeeded", job="main", step="s"))
    entries = journal.read(RUN)
    kinds = [e["event"] for _, e in entries]
    assert kinds.count("journal_truncated") == 1
    marker = kinds.index("journal_truncated")
    assert set(kinds[:marker]) == {"step_output"} and kinds[marker + 1 :] == ["step_succeeded"]
    assert entries[marker][1]["dropping"] == "step_output"
    assert [seq for seq, _ in entries] == list(range(1, len(entries) + 1))
    assert os.path.getsize(journal.path(RUN)) <= 2000 + 200
    # A later execution finds the cap reached: no output, no second marker.
    again = journal.writer(RUN)
    again.append(output("more"))
    again.append(event("run_completed", runId=RUN, status="succeeded"))
    kinds = [e["event"] for _, e in journal.read(RUN)]
    assert kinds.count("journal_truncated") == 1 and kinds[-1] == "run_completed" and "more" not in str(kinds)


def test_past_the_total_cap_nothing_more_is_written(
    journal: RunJournal, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "OUTPUT_CAP", 1000)
    monkeypatch.setattr(journal_module, "TOTAL_CAP", 3000)
    writer = journal.writer(RUN)
    for i in range(200):
        writer.append(event("step_started", job="main", step=f"step-{i:03d}", task="model_method"))
    size = os.path.getsize(journal.path(RUN))
    assert 2500 < size <= 3000 + 200
    entries = journal.read(RUN)
    assert entries[-1][1] == {
        "event": "journal_truncated",
        "at": "2026-01-01T00:00:00.000Z",
        "dropping": "all",
    }
    journal.writer(RUN).append(event("run_completed", runId=RUN, status="succeeded"))
    assert os.path.getsize(journal.path(RUN)) == size


def test_the_journal_folder_as_a_symlink_is_never_written_through(
    journal: RunJournal, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / ".swamp" / "journal")
    journal.writer(RUN).append(event("run_started", runId=RUN, workflow="w"))  # never raises
    assert list(elsewhere.iterdir()) == []


def test_a_follower_reads_only_what_was_appended_since(journal: RunJournal) -> None:
    writer = journal.writer(RUN)
    writer.append(output("before"))
    follower = journal.follow(RUN)
    assert follower.new_events() == []
    writer.append(output("after"))
    with open(journal.path(RUN), "ab") as raw:  # a line still being written is left for later
        raw.write(json.dumps({"seq": 3, "event": output("half")}).encode()[:20])
    assert [e["line"] for _, e in follower.new_events()] == ["after"]
