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
