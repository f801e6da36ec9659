"""The benchmarks stay runnable: `scripts/bench/all --smoke` (tiny sizes) gives a whole report.

No target is asserted (performance is measured by the scripts, never by tests); this only keeps
the benchmark code from rotting as swamp changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_all_smoke_prints_a_complete_report():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench" / "bench_all.py"), "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["benchmark"] == "all" and report["smoke"] is True
    start = report["commandStart"]["medianMs"]
    assert all(start[key] > 0 for key in ("pythonPass", "signal", "waitsJson", "help"))
    assert report["commandStart"]["signalImportsTop"], "the import profile of signal is missing"
    assert set(report["history"]["ratio"]) == {"waits", "signal", "approvals", "resume"}
    throughput = report["throughput"]
    assert throughput["accepted"] == throughput["signals"] > 0
    assert throughput["signalsPerSecond"] > 0 and throughput["durableWriteFloorPerSecond"] > 0
    assert all(ms > 0 for ms in report["engine"]["medianMs"].values())
    assert isinstance(report["engine"]["perStepUs"], float)  # may be negative: tiny sizes are noise
    assert report["expressions"]["contextSteps"] > 0
    watched = report["watch"]["results"]
    assert {r["mechanism"] for r in watched} == {"inotify", "poll"}
    assert all(r["journalToPrintedMs"]["median"] > 0 and r["signalToPrintedMs"]["max"] > 0 for r in watched)
    published = report["events"]
    assert published["signals"] == 3 and published["subscriptionEnded"] == "cancelled"
    assert published["signalToSubscriberMs"]["median"] > 0 and published["signalToSubscriberMs"]["p99"] > 0
    assert "percentOfACore" in published["idle"] or "note" in published["idle"]
    roundtrip = report["client"]
    assert roundtrip["signals"] == 5 and roundtrip["clientMs"]["median"] > 0
    assert roundtrip["rawSocketMs"]["p99"] > 0
    assert roundtrip["ratio"]["median"] > 0
    for section in ("commandStart", "history", "throughput", "engine"):
        assert isinstance(report[section]["met"], bool), section


def test_bench_pg_counts_round_trips_and_durable_writes_from_a_trace(tmp_path):
    """scripts/bench/pg counts what a process asks of storage from its strace, the same way for any
    revision: a round trip is a reply read after a send (the start-up exchange and a farewell with
    no reply are none, a pipeline is one), a durable write is an fsync of a file (not a folder), a
    commit counts as durable when its transaction wrote something besides the commit record."""
    sys.path.insert(0, str(ROOT / "scripts" / "bench"))
    try:
        from bench_pg import fsyncs, round_trips, wal_commits
    finally:
        sys.path.pop(0)
    pg = "UNIX-STREAM:[700->701]"
    trace = [
        '9 connect(3<UNIX-STREAM:[700]>, {sa_family=AF_UNIX, sun_path="/s/.s.PGSQL.5432"}, 110) = 0',
        f'9 sendto(3<{pg}>, "\\0\\0\\0X\\0\\3\\0\\0user\\0postgres"..., 88, MSG_NOSIGNAL, NULL, 0) = 88',
        f'9 recvfrom(3<{pg}>, "R\\0\\0\\0\\10"..., 16384, 0, NULL, NULL) = 415',
        f'9 sendto(3<{pg}>, "P\\0\\0\\0A\\0SELECT 1 FROM held WHERE"..., 103, MSG_NOSIGNAL, NULL, 0) = 103',
        f"9 recvfrom(3<{pg}>, 0x55, 16384, 0, NULL, NULL) = -1 EAGAIN (Resource temporarily unavailable)",
        f"9 recvfrom(3<{pg}>,  <unfinished ...>",
        '10 sendto(4<UNIX-STREAM:[800->801]>, "SELECT elsewhere"..., 9, 0, NULL, 0) = 9',
        '9 <... recvfrom resumed>"1\\0\\0\\0\\0042"..., 16384, 0, NULL, NULL) = 72',
        f'9 sendto(3<{pg}>, "P\\0\\0\\0\\rBEGIN\\0"..., 51, MSG_NOSIGNAL, NULL, 0) = 51',
        f'9 sendto(3<{pg}>, "P\\0\\0\\0\\rCOMMIT\\0"..., 52, MSG_NOSIGNAL, NULL, 0) = 52',
        f'9 recvfrom(3<{pg}>, "1\\0\\0\\0\\0042"..., 16384, 0, NULL, NULL) = 64',
        f'9 sendto(3<{pg}>, "X\\0\\0\\0\\4", 5, MSG_NOSIGNAL, NULL, 0) = 5',
    ]
    assert round_trips(trace) == (2, ["SELECT 1 FROM held WHERE", "BEGIN"])
    record = tmp_path / "run.json"
    synced = [
        f"5 fsync(4<{tmp_path}/.run.json.swap>) = 0",
        f"5 fsync(4<{tmp_path}>) = 0",
        f"5 fdatasync(5<{record}>) = 0",
        "5 +++ exited with 0 +++",
    ]
    assert fsyncs(synced) == {"fsyncs": 3, "durableWrites": 2}
    wal = [  # pg_waldump: a write in a subtransaction, then a NOTIFY alone
        "rmgr: Heap        len (rec/tot): 59/59, tx:        754, lsn: 0/0A, prev 0/09, desc: INSERT off 2",
        "rmgr: Standby     len (rec/tot): 54/54, tx:          0, lsn: 0/0B, prev 0/0A, desc: RUNNING_XACTS",
        "rmgr: Transaction len (rec/tot):     46/    46, tx:        753, lsn: 0/0C, prev 0/0B, desc: COMMIT "
        "2026-12-03 17:57:28.696370 UTC; subxacts: 754",
        "rmgr: Transaction len (rec/tot):     34/    34, tx:        755, lsn: 0/0D, prev 0/0C, desc: COMMIT "
        "2026-12-03 17:57:28.696825 UTC",
    ]
    assert wal_commits(wal) == {"commits": 1, "commitsWithoutWrites": 1}
