"""Change notifications (store/notify.py), by inotify and by the poll that replaces it: a change
made after the watcher exists is seen (appended, replaced by a rename, created in a folder that
did not exist yet), and nothing else wakes it. No timing is asserted: every wait that must see a
change has its change made before it, and one that must not returns at its bound."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from swamp.store.notify import Changes

MODES = [
    pytest.param(False, id="inotify", marks=pytest.mark.skipif(sys.platform != "linux", reason="Linux only")),
    pytest.param(True, id="poll"),
]


def watcher(paths: list[Path], poll: bool) -> Changes:
    changes = Changes([str(p) for p in paths], poll=poll, poll_seconds=0.01)
    assert changes.mechanism == ("poll" if poll else "inotify")
    return changes


@pytest.mark.parametrize("poll", MODES)
def test_an_append_is_seen_and_quiet_is_a_timeout(tmp_path: Path, poll: bool) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text("1\n")
    with watcher([log], poll) as changes:
        assert changes.wait(0.05) is False
        with log.open("a") as f:
            f.write("2\n")
        assert changes.wait(10) is True
        assert changes.wait(0.05) is False


@pytest.mark.parametrize("poll", MODES)
def test_a_file_replaced_by_rename_is_seen(tmp_path: Path, poll: bool) -> None:
    record = tmp_path / "run.json"
    record.write_text('{"status": "suspended"}')
    with watcher([record], poll) as changes:
        swap = tmp_path / ".run.json.swap"
        swap.write_text('{"status": "running"}  ')
        os.replace(swap, record)
        assert changes.wait(10) is True


@pytest.mark.parametrize("poll", MODES)
def test_a_file_created_in_a_folder_that_did_not_exist_is_seen(tmp_path: Path, poll: bool) -> None:
    journal = tmp_path / "journal" / "run.jsonl"
    with watcher([journal], poll) as changes:
        journal.parent.mkdir()
        journal.write_text("1\n")
        assert changes.wait(10) is True
        while changes.wait(0.05):  # the folder, then the file: drain what was queued
            pass
        with journal.open("a") as f:
            f.write("2\n")
        assert changes.wait(10) is True


def test_inotify_is_not_woken_by_other_files_of_the_folder(tmp_path: Path) -> None:
    if sys.platform != "linux":
        pytest.skip("Linux only")
    mine, other = tmp_path / "mine.jsonl", tmp_path / "other.jsonl"
    mine.write_text("")
    with watcher([mine], poll=False) as changes:
        other.write_text("someone else's run\n")
        assert changes.wait(0.1) is False
        mine.write_text("mine\n")
        assert changes.wait(10) is True


def test_swamp_notify_poll_forces_the_poll(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWAMP_NOTIFY", "poll")
    with Changes([str(tmp_path / "x")]) as changes:
        assert changes.mechanism == "poll"


@pytest.mark.parametrize("poll", MODES)
def test_a_watched_folder_wakes_for_any_name_in_it_even_one_created_later(tmp_path: Path, poll: bool) -> None:
    folder = tmp_path / ".swamp" / "events"  # the event log's folder, before the log exists
    (tmp_path / ".swamp").mkdir()
    with Changes([], folders=[str(folder)], poll=poll, poll_seconds=0.01) as changes:
        assert changes.wait(0.05) is False
        folder.mkdir()
        (folder / "a1b2c3d4-000000000001.jsonl").write_text("")
        assert changes.wait(10) is True
        while changes.wait(0.05):  # the creation may come as several wake-ups
            pass
        with (folder / "a1b2c3d4-000000000001.jsonl").open("a") as f:
            f.write("{}\n")
        assert changes.wait(10) is True
        while changes.wait(0.05):
            pass
        (folder / "a1b2c3d4-000000000002.jsonl").write_text("{}\n")  # a new segment
        assert changes.wait(10) is True
