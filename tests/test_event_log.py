"""The repository event log (store/events.py): appends from many processes at once are gap-free,
totally ordered and never torn; retention and cursor_expired; no open through a symbolic link;
and a publish that cannot append never fails the signal that caused it (app/publish.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import Repo

import swamp
from swamp.domain.errors import CursorExpired, CursorInvalid
from swamp.store.events import EventLog
from swamp.store.repo import RepoLayout

APPENDER = """
import sys
from pathlib import Path
from swamp.store.events import EventLog
from swamp.store.repo import RepoLayout
log = EventLog(RepoLayout(Path(sys.argv[1])), segment_bytes=int(sys.argv[3]), keep_segments=1000)
name = sys.argv[2]
sys.stdin.readline()  # every writer starts at once
for i in range(int(sys.argv[4])):
    size = 1 + i % 3
    log.append([{"event": "wait_opened", "writer": name, "n": i, "k": k, "pad": "x" * (i % 50)}
                for k in range(size)])
"""


def layout(tmp_path: Path) -> RepoLayout:
    (tmp_path / ".swamp").mkdir(exist_ok=True)
    return RepoLayout(tmp_path)


def seqs(events: list[dict[str, object]]) -> list[int]:
    return [int(str(e["cursor"]).rsplit("-", 1)[1]) for e in events]


def test_appends_from_many_processes_are_gap_free_ordered_and_whole(tmp_path: Path) -> None:
    writers, batches = 5, 60
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, str(tmp_path), f"w{n}", "4096", str(batches)],
            stdin=subprocess.PIPE,
            text=True,
        )
        for n in range(writers)
    ]
    layout(tmp_path)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    log = EventLog(RepoLayout(tmp_path))
    every: list[dict[str, object]] = []
    cursor = None
    while True:  # read in small pages, resuming after the last cursor each time
        page = log.read(cursor, 7)
        if not page:
            break
        every.extend(page)
        cursor = str(page[-1]["cursor"])
    total = writers * sum(1 + i % 3 for i in range(batches))
    assert seqs(every) == list(range(1, total + 1))  # gap-free, in order, each once
    assert log.latest() == every[-1]["cursor"]
    segments = sorted(os.listdir(tmp_path / ".swamp/events"))
    assert len(segments) > 2  # the small segments rolled over while writers raced
    for name in segments:  # no torn or interleaved line anywhere
        for line in (tmp_path / ".swamp/events" / name).read_bytes().splitlines():
            json.loads(line)
    for n in range(writers):  # each writer's batches whole and in its own order
        mine = [(e["n"], e["k"]) for e in every if e["writer"] == f"w{n}"]
        assert mine == [(i, k) for i in range(batches) for k in range(1 + i % 3)]


def test_retention_keeps_the_newest_segments_and_an_older_cursor_is_expired(tmp_path: Path) -> None:
    log = EventLog(layout(tmp_path), segment_bytes=1000, keep_segments=2)
    cursors = [log.append([{"event": "run_finished", "n": n, "pad": "y" * 80}])[0] for n in range(60)]
    assert len(os.listdir(tmp_path / ".swamp/events")) == 2
    kept = log.read(None, 1000)
    assert kept and seqs(kept) == list(range(seqs(kept)[0], 61))  # the newest ones, no gap
    with pytest.raises(CursorExpired) as refused:
        log.read(cursors[0], 10)
    oldest = refused.value.details["oldest"]
    assert log.read(oldest, 1000) == kept  # the cursor it names resumes with everything kept
    assert log.read(cursors[-2], 10) == kept[-1:]


def test_unknown_cursors_are_invalid(tmp_path: Path) -> None:
    log = EventLog(layout(tmp_path))
    cursor = log.append([{"event": "run_finished"}])[0]
    epoch = cursor.split("-")[0]
    for bad in ("", "nope", f"{epoch}-1", f"{epoch}-000000000009"):  # malformed; past the end
        with pytest.raises(CursorInvalid):
            log.read(bad, 10)
    with pytest.raises(CursorExpired):  # a cursor of a log that is gone (another epoch)
        log.read("00000000-000000000001" if epoch != "00000000" else "11111111-000000000001", 10)


def test_a_torn_line_is_closed_skipped_and_its_number_reused(tmp_path: Path) -> None:
    log = EventLog(layout(tmp_path))
    log.append([{"event": "wait_opened"}])
    (segment,) = (tmp_path / ".swamp/events").iterdir()
    with open(segment, "ab") as raw:  # a process killed (or a disk filled) mid-write
        raw.write(b'{"cursor":"' + segment.name[:8].encode() + b'-000000000002","event":"wa')
    assert seqs(log.read(None, 10)) == [1]
    log.append([{"event": "run_finished"}])
    found = log.read(None, 10)
    assert seqs(found) == [1, 2] and found[1]["event"] == "run_finished"


def test_the_log_never_opens_through_a_symbolic_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo = tmp_path / "repo"
    (repo / ".swamp").mkdir(parents=True)
    (repo / ".swamp/events").symlink_to(elsewhere)
    log = EventLog(RepoLayout(repo))
    with pytest.raises(OSError):
        log.append([{"event": "run_finished"}])
    with pytest.raises(OSError):
        log.read(None, 10)
    (repo / ".swamp/events").unlink()
    (repo / ".swamp/events").mkdir()
    target = elsewhere / "segment"
    target.write_text("")
    (repo / ".swamp/events/0badc0de-000000000001.jsonl").symlink_to(target)
    with pytest.raises(OSError):
        log.append([{"event": "run_finished"}])
    assert os.listdir(elsewhere) == ["segment"] and target.read_text() == ""


def test_a_signal_succeeds_when_its_events_cannot_be_appended(repo: Repo) -> None:
    repo.write_workflow(
        "gate",
        [
            {
                "name": "main",
                "steps": [{"name": "review", "task": {"type": "wait_for_signal", "timeout": 600}}],
            }
        ],
    )
    ran = repo.swamp("workflow", "run", "gate", "--json")
    assert ran.json is not None
    wait_id = ran.json["waits"][0]["waitId"]
    events = repo.root / ".swamp/events"
    for segment in events.iterdir():
        segment.unlink()
    events.rmdir()
    events.write_text("not a folder\n")  # every append now fails (ENOTDIR)
    sent = repo.swamp("workflow", "signal", wait_id, "--payload", "{}", "--resume", "--json")
    assert sent.code == 0, sent.err
    assert sent.err.count("could not append to the event log") == 1
    assert "Traceback" not in sent.err
    history = json.loads(repo.swamp("workflow", "history", "--json").out)
    assert history["runs"][0]["status"] == "succeeded"


RETENTION_AS_ANOTHER_ACCOUNT = """
import sys
from pathlib import Path
from swamp.store.events import EventLog
from swamp.store.repo import RepoLayout
log = EventLog(RepoLayout(Path(sys.argv[1])), segment_bytes=200, keep_segments=1)
cursors = [log.append([{"event": "run_finished", "n": n, "pad": "z" * 120}])[0] for n in range(4)]
print(log.retention_blocked[0] if log.retention_blocked else "", " ".join(cursors))
"""


def test_retention_that_cannot_drop_a_segment_keeps_the_events_and_says_which(tmp_path: Path) -> None:
    """EVENT-013: another account's segment in a sticky shared folder cannot be unlinked; the
    appends that roll past it still land, and the log names the segment it had to keep."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another account")
    shared = Path(tempfile.mkdtemp(prefix="swamp-shared-"))
    try:
        shared.chmod(0o755)
        log = EventLog(layout(shared), segment_bytes=200, keep_segments=1)
        first = log.append([{"event": "run_finished", "pad": "y" * 300}])[0]  # root's, full
        folder = shared / ".swamp" / "events"
        folder.chmod(0o1777)  # shared and sticky: only a file's owner may remove it
        (shared / ".swamp" / "locks").chmod(0o777)
        (shared / ".swamp" / "locks" / "events.lock").chmod(0o666)
        (root_segment,) = os.listdir(folder)
        (folder / root_segment).chmod(0o666)  # writable by all (a team's umask 000), still root's
        # The other account may not reach this checkout (a clone in a 0700 folder): it runs the
        # base interpreter on a copy of the package, in the shared folder.
        lib = shared / "lib"
        package = Path(swamp.__file__).parent
        shutil.copytree(package, lib / "swamp", ignore=shutil.ignore_patterns("__pycache__"))
        ran = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                os.path.realpath(sys.executable),
                "-S",
                "-c",
                RETENTION_AS_ANOTHER_ACCOUNT,
                str(shared),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PYTHONPATH": str(lib), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert ran.returncode == 0, ran.stderr
        blocked, *cursors = ran.stdout.split()
        assert blocked == str(folder / root_segment)
        assert root_segment in os.listdir(folder)  # kept, not lost
        assert len(cursors) == 4
        read = EventLog(layout(shared), keep_segments=1).read(first, 100)
        assert [e["cursor"] for e in read] == cursors  # every append landed, in order, no gap
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)


def test_a_blocked_retention_is_said_once_and_the_publish_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from swamp.app.publish import append_events

    log = EventLog(layout(tmp_path), segment_bytes=200, keep_segments=1)
    real_unlink = os.unlink

    def refuse(path: str, *args: object, **kwargs: object) -> None:
        if str(path).startswith(log.folder):
            raise PermissionError(1, "Operation not permitted", path)
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", refuse)
    app = SimpleNamespace(events=log)
    for n in range(5):
        append_events(app, [{"event": "run_finished", "n": n, "pad": "y" * 250}])  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert err.count("swamp: warning: the event log could not drop its oldest part") == 1, err
    assert "Operation not permitted" in err and "grows past its bound" in err
    assert [e["n"] for e in log.read(None, 100)] == [0, 1, 2, 3, 4]  # nothing lost
    assert not log.warned  # no append failed


def plant(segment: Path, cursor: str) -> None:
    with open(segment, "ab") as raw:
        line = {"cursor": cursor, "event": "run_finished", "runId": "planted"}
        raw.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")  # as swamp writes one


def test_a_planted_line_moves_no_number_and_hides_nothing(tmp_path: Path) -> None:
    """EVENT-022: a line with a far-off cursor, or one replayed, is skipped by appends and reads."""
    log = EventLog(layout(tmp_path))
    epoch = log.append([{"event": "wait_opened"}])[0][:8]
    (segment,) = (tmp_path / ".swamp/events").iterdir()
    plant(segment, f"{epoch}-999999999998")
    plant(segment, f"{epoch}-000000000001")  # a replay of the first line
    writer = EventLog(layout(tmp_path))
    assert [c[9:] for c in writer.append([{"event": "a"}, {"event": "b"}])] == [
        "000000000002",
        "000000000003",
    ]
    reader = EventLog(layout(tmp_path))
    found = reader.read(None, 100)
    assert seqs(found) == [1, 2, 3] and all(e.get("runId") != "planted" for e in found)
    assert len(reader.skipped) == 2 and all("does not follow" in text for text in reader.skipped)
    assert reader.latest() == f"{epoch}-000000000003"
    assert EventLog(layout(tmp_path)).count_skipped() == 2


def test_cursors_past_twelve_digits_are_still_cursors_and_the_log_follows_them(tmp_path: Path) -> None:
    """EVENT-022: a log whose numbers pass 12 digits goes on; past 18 an append is refused."""
    log = EventLog(layout(tmp_path))
    epoch = log.append([{"event": "x"}])[0][:8]
    for seq in (999_999_999_999, 10**17):  # a log that rolled over there (its segment says so)
        name = tmp_path / f".swamp/events/{epoch}-{seq:012d}.jsonl"
        name.write_text("")
        (tmp_path / ".swamp/locks/events.lock").write_text(f"{epoch}-{seq:018d} {0:020d} {seq - 1:018d}\n")
        got = log.append([{"event": "a"}, {"event": "b"}])
        assert got == [f"{epoch}-{seq:012d}", f"{epoch}-{seq + 1:012d}"]
        assert log.read(got[0], 10)[0]["cursor"] == got[1]
        assert log.latest() == got[1]
    (tmp_path / f".swamp/events/{epoch}-{10**18 - 1:012d}.jsonl").write_text("")
    (tmp_path / ".swamp/locks/events.lock").write_text(
        f"{epoch}-{10**18 - 1:018d} {0:020d} {10**18 - 2:018d}\n"
    )
    assert log.append([{"event": "fits"}]) == [f"{epoch}-{10**18 - 1}"]
    with pytest.raises(OSError, match="18 digits"):
        log.append([{"event": "too far"}])


def test_a_planted_segment_between_two_of_the_log_is_skipped_and_older_ones_stay(tmp_path: Path) -> None:
    """EVENT-023: the log's segments are the chain back from the one appended to last."""
    log = EventLog(layout(tmp_path), segment_bytes=300, keep_segments=100)  # two events a segment
    cursors = [log.append([{"event": "run_finished", "n": n, "pad": "y" * 150}])[0] for n in range(4)]
    epoch = cursors[0][:8]
    planted = tmp_path / f".swamp/events/{epoch}-000000000002.jsonl"
    assert not planted.exists()
    planted.write_text("")
    plant(planted, f"{epoch}-000000000007")
    plant(planted, f"{epoch}-000000000008")  # it does not hold the cursor before the next one's first
    reader = EventLog(layout(tmp_path))
    found = reader.read(None, 100)
    assert [e["cursor"] for e in found] == cursors and all(e.get("runId") != "planted" for e in found)
    assert reader.read(cursors[0], 100) == found[1:]
    assert any("000000000002.jsonl: a segment that does not follow" in text for text in reader.skipped)


def test_a_log_an_older_swamp_wrote_without_a_head_is_read_and_appended_to(tmp_path: Path) -> None:
    log = EventLog(layout(tmp_path))
    first = log.append([{"event": "a"}])[0]
    (tmp_path / ".swamp/locks/events.lock").write_text("")  # no head kept (or a torn one)
    assert EventLog(layout(tmp_path)).latest() == first
    second = EventLog(layout(tmp_path)).append([{"event": "b"}])[0]
    assert seqs(EventLog(layout(tmp_path)).read(None, 10)) == [1, 2] and second[9:] == "000000000002"
    assert (tmp_path / ".swamp/locks/events.lock").read_text().startswith(first[:8])


def test_an_append_reads_only_the_tail_of_its_segment_when_the_head_is_kept(tmp_path: Path) -> None:
    """The head in the lock file spares an append the scan of its whole segment; a head that
    does not match the segment's tail is not believed."""
    log = EventLog(layout(tmp_path))
    epoch = log.append([{"event": "a"}, {"event": "b"}])[0][:8]
    lock = tmp_path / ".swamp/locks/events.lock"
    size = (tmp_path / f".swamp/events/{epoch}-000000000001.jsonl").stat().st_size
    assert lock.read_text() == f"{epoch}-{1:018d} {size:020d} {2:018d}\n"
    lock.write_text(f"{epoch}-{1:018d} {size:020d} {900:018d}\n")  # forged: the tail says 2
    assert EventLog(layout(tmp_path)).append([{"event": "c"}])[0][9:] == "000000000003"


def test_a_head_behind_the_segment_is_followed_from_where_it_ends(tmp_path: Path) -> None:
    """Lines appended after the head was written (by an older swamp, say) are followed from it;
    a head whose line says otherwise is not believed."""
    log = EventLog(layout(tmp_path))
    epoch = log.append([{"event": "a"}, {"event": "b"}])[0][:8]
    lock = tmp_path / ".swamp/locks/events.lock"
    behind = lock.read_text()
    log.append([{"event": "c"}])
    lock.write_text(behind)
    assert EventLog(layout(tmp_path)).latest() == f"{epoch}-000000000003"
    lock.write_text(behind.replace(f"{2:018d}", f"{7:018d}"))  # its line says 2, not 7
    assert EventLog(layout(tmp_path)).append([{"event": "d"}]) == [f"{epoch}-000000000004"]
    reader = EventLog(layout(tmp_path))
    assert seqs(reader.read(None, 10)) == [1, 2, 3, 4] and reader.skipped == []
