"""Benchmark: what `swamp workflow watch` costs while nothing happens, and how soon it shows a change.

For each notification mechanism (inotify, and the poll that replaces it where there is none:
SWAMP_NOTIFY=poll) it starts a watch on a suspended run and prints JSON:
- idle: the CPU seconds the watch process used over `--idle` seconds of wall time after it
  started watching (from /proc/<pid>/stat; its start-up is not counted), as a percent of one core;
  the target is under 1 %;
- latency: from an event appended to the run's journal (this script plays the process executing
  the run) to the watch printing it, and from a signal saved in the record (a `workflow.signal`
  made in this process) to the watch printing `wait_settled`; median and max in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from _common import SWAMP, env, make_repo, remove

WAITS = 5
WORKFLOW = """\
id: 00000000-0000-4000-8000-0000000000a1
name: watched
jobs:
  - name: main
    steps:
""" + "".join(
    f"""      - name: ask{i}
        task: {{type: wait_for_signal, timeout: 86400, schema: {{type: boolean}}}}
"""
    for i in range(WAITS)
)


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process, from /proc (None where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def frames_of(proc: subprocess.Popen[bytes]) -> queue.Queue[tuple[float, dict[str, Any]]]:
    arrived: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            arrived.put((time.perf_counter(), json.loads(line)))

    threading.Thread(target=pump, daemon=True).start()
    return arrived


def next_event(arrived: queue.Queue[tuple[float, dict[str, Any]]], kind: str) -> float:
    while True:
        at, frame = arrived.get(timeout=30)
        if frame.get("type") == "event" and frame["event"]["event"] == kind:
            return at


def measure(mechanism: str, idle: float, samples: int) -> dict[str, object]:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from swamp.protocol.requests import handle
    from swamp.store.journal import RunJournal
    from swamp.store.repo import RepoLayout

    root = make_repo({"workflows/workflow-watched.yaml": WORKFLOW})
    extra = {"SWAMP_NOTIFY": "poll"} if mechanism == "poll" else {}
    try:
        started = subprocess.run(
            [SWAMP, "workflow", "run", "watched", "--json"],
            cwd=root,
            env=env(),
            capture_output=True,
            check=True,
        )
        run = json.loads(started.stdout)
        request = {"type": "workflow.watch", "id": "w", "payload": {"run": run["id"]}}
        proc = subprocess.Popen(
            [SWAMP, "--jsonl"],
            cwd=root,
            env={**env(), **extra},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.flush()
        arrived = frames_of(proc)
        next_event(arrived, "run_status")  # watching from here on
        time.sleep(0.5)  # let start-up work (imports, first reads) finish before counting
        before, wall = cpu_seconds(proc.pid), time.perf_counter()
        time.sleep(idle)
        after, wall = cpu_seconds(proc.pid), time.perf_counter() - wall
        idle_report: dict[str, object] = {"seconds": round(wall, 2)}
        if before is not None and after is not None:
            used = after - before
            idle_report.update(
                {
                    "cpuSeconds": round(used, 4),
                    "percentOfACore": round(100 * used / wall, 3),
                    "met": used / wall < 0.01,
                }
            )
        else:
            idle_report["note"] = "no /proc here: CPU time not measured"
        writer = RunJournal(RepoLayout(root)).writer(run["id"])
        journal_ms = []
        for i in range(samples):
            sent = time.perf_counter()
            writer.append(
                {
                    "event": "step_output",
                    "at": "2026-01-01T00:00:00.000Z",
                    "job": "main",
                    "step": "x",
                    "line": str(i),
                }
            )
            journal_ms.append((next_event(arrived, "step_output") - sent) * 1000)
            time.sleep(0.05)
        record_ms = []
        for wait in run["waits"]:
            sent = time.perf_counter()
            handle("workflow.signal", {"waitId": wait["waitId"], "payload": True, "repoDir": str(root)})
            record_ms.append((next_event(arrived, "wait_settled") - sent) * 1000)
        proc.stdin.close()
        proc.kill()
        proc.wait()
        return {
            "mechanism": mechanism,
            "idle": idle_report,
            "journalToPrintedMs": {
                "median": round(statistics.median(journal_ms), 2),
                "max": round(max(journal_ms), 2),
            },
            "signalToPrintedMs": {
                "median": round(statistics.median(record_ms), 2),
                "max": round(max(record_ms), 2),
                "note": "includes the signal's own work (validate, claim, save)",
            },
        }
    finally:
        remove(root)


def report(idle: float, samples: int) -> dict[str, object]:
    results = [measure(mechanism, idle, samples) for mechanism in ("inotify", "poll")]
    met = [r["idle"].get("met") for r in results if isinstance(r["idle"], dict)]  # type: ignore[union-attr]
    return {
        "benchmark": "watch",
        "target": "a watch on a suspended run uses under 1% of one core while idle",
        "met": all(m is True for m in met) if met and None not in met else None,
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle watching to measure")
    parser.add_argument("--samples", type=int, default=20, help="journal appends timed")
    args = parser.parse_args()
    print(json.dumps(report(args.idle, args.samples), indent=2))


if __name__ == "__main__":
    main()
