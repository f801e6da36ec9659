"""Benchmark of `swamp serve` (issue: swamp serve), printed as JSON:

- idle resident memory: VmRSS of the serve process once it answers on its socket (target < 80 MiB),
  and again after the signal run below; the signal helpers it starts at launch are reported beside
  it, each a process of its own;
- idle CPU: the share of one CPU an idle serve uses, plain and with --enforce-deadlines (which
  looks at every active run once a second) over the repository left by the signal run;
- signals per second delivered through ONE socket connection to distinct waits (one wait per run,
  the runs opened first through `swamp --jsonl`), beside the durable-write floor of the same disk
  measured in the same run (write, fsync, rename, fsync dir of a file the size of a run record;
  `durable_floor` of bench_all.py). Target: at least 70% of the floor. The headline rate sends
  every signal at once (pipelined) and counts from the first send to the last `done`, in --trials
  bursts (the first on the serve measured above, each other on a fresh serve over a copy of the
  repository taken before any signal), each beside the floors just before and after it; the
  median ratio is reported, with every trial beside it. A smaller
  one-at-a-time sample (send, wait for done, next) is reported beside it.

`--smoke` runs tiny sizes so CI keeps the script working; no target is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import SWAMP, env, make_repo, remove
from bench_all import WAITER, beside_floors, copies_of, durable_floor, open_waits, settle

MIB = 1024 * 1024


def rss_mib(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak) of a process, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = round(int(value.split()[0]) * 1024 / MIB, 1)
    return fields


def child_pids(pid: int) -> list[int]:
    """The processes `pid` started (serve's signal helpers)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return sorted(set(found))


def cpu_percent(pid: int, seconds: float) -> float:
    """The share of one CPU (user + system) that a process uses over the next `seconds`."""

    def ticks() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime

    before, started = ticks(), time.perf_counter()
    time.sleep(seconds)
    used = (ticks() - before) / os.sysconf("SC_CLK_TCK")
    return round(100 * used / (time.perf_counter() - started), 1)


class Server:
    """`swamp serve --socket` in the repository, ready once a connection is accepted."""

    def __init__(self, root: Path, *flags: str):
        self.path = root / "serve.sock"
        self.proc = subprocess.Popen(
            [SWAMP, "serve", "--socket", str(self.path), *flags],
            cwd=root,
            env=env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        started = time.perf_counter()
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(
                    f"swamp serve exited {self.proc.returncode}: {self.proc.stderr.read().decode()}"
                )
            try:
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.connect(str(self.path))
                probe.close()
                break
            except OSError:
                probe.close()
            if time.perf_counter() - started > 30:
                raise SystemExit("swamp serve did not listen within 30 s")
            time.sleep(0.02)
        self.ready_after = time.perf_counter() - started

    def connect(self) -> tuple[socket.socket, object]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(self.path))
        if os.stat(self.path).st_uid not in (os.getuid(), 0):  # not our serve's: send it nothing
            sock.close()
            raise PermissionError(f"{self.path} belongs to another user")
        return sock, sock.makefile("r", encoding="utf-8")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.stderr is not None:
                self.proc.stderr.close()


def signal_frames(waits: list[str], prefix: str) -> list[dict[str, object]]:
    return [
        {
            "type": "workflow.signal",
            "id": f"{prefix}{i}",
            "payload": {"waitId": w, "payload": {"verdict": "ship"}},
        }
        for i, w in enumerate(waits)
    ]


def pipelined(server: Server, waits: list[str]) -> dict[str, object]:
    """Every signal at once on one connection; rate from the first send to the last done."""
    sock, reader = server.connect()
    text = "".join(json.dumps(f) + "\n" for f in signal_frames(waits, "p")).encode()
    accepted = refused = done = 0
    codes: dict[str, int] = {}
    started = time.perf_counter()
    sock.sendall(text)
    for line in reader:  # type: ignore[attr-defined]
        reply = json.loads(line)
        if reply["type"] == "workflow.signal":
            accepted += 1
        elif reply["type"] == "error":
            refused += 1
            code = reply["error"]["code"]
            codes[code] = codes.get(code, 0) + 1
        elif reply["type"] == "done":
            done += 1
            if done == len(waits):
                break
    took = time.perf_counter() - started
    sock.close()
    return {
        "signals": len(waits),
        "accepted": accepted,
        "refused": refused,
        "refusedCodes": codes,
        "seconds": round(took, 3),
        "signalsPerSecond": round(len(waits) / took, 1),
    }


def one_at_a_time(server: Server, waits: list[str]) -> dict[str, object]:
    """Send a signal, wait for its done, send the next: the round-trip rate of one client."""
    sock, reader = server.connect()
    accepted = 0
    started = time.perf_counter()
    for frame in signal_frames(waits, "q"):
        sock.sendall((json.dumps(frame) + "\n").encode())
        for line in reader:  # type: ignore[attr-defined]
            reply = json.loads(line)
            accepted += reply["type"] == "workflow.signal"
            if reply["type"] == "done":
                break
    took = time.perf_counter() - started
    sock.close()
    return {
        "signals": len(waits),
        "accepted": accepted,
        "seconds": round(took, 3),
        "signalsPerSecond": round(len(waits) / took, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1000, help="runs (one wait each), signalled at once")
    parser.add_argument("--trials", type=int, default=3, help="pipelined bursts (median reported)")
    parser.add_argument("--sequential", type=int, default=100, help="more runs, signalled one at a time")
    parser.add_argument("--idle-seconds", type=float, default=3.0, help="how long idle CPU is measured")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check that the script works")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.sequential, args.idle_seconds, args.trials = 20, 5, 1.0, 2
    root = make_repo({"workflows/workflow-waiter.yaml": WAITER})
    server = None
    try:
        started = time.perf_counter()
        waits = open_waits(root, args.runs + args.sequential)
        opened_in = time.perf_counter() - started
        if len(waits) != args.runs + args.sequential:
            raise SystemExit(f"opened {len(waits)} waits, wanted {args.runs + args.sequential}")
        records = list(root.glob(".swamp/workflow-runs/*/*.json"))
        record_size = round(sum(p.stat().st_size for p in records) / len(records))

        copies = copies_of(root, args.trials - 1)  # before any signal: each burst signals the same waits
        floor_size = min(max(args.runs, 50), 500)

        server = Server(root)
        ready_after = server.ready_after
        time.sleep(1.0)  # let it settle (its helpers start at launch): nothing is asked of it yet
        idle = rss_mib(server.proc.pid)
        helpers_idle = [rss_mib(child).get("VmRSS") for child in child_pids(server.proc.pid)]
        idle_cpu = cpu_percent(server.proc.pid, args.idle_seconds)
        floors: list[float] = []
        bursts: list[dict[str, Any]] = []
        settle()
        floors.append(durable_floor(record_size, floor_size))
        settle()
        bursts.append(pipelined(server, waits[: args.runs]))
        sequential = one_at_a_time(server, waits[args.runs :])
        after = rss_mib(server.proc.pid)
        exit_code = server.stop()
        for copy in copies:  # a fresh serve on each copy, warmed as the first one was
            server = Server(copy)
            time.sleep(1.0)
            settle()
            floors.append(durable_floor(record_size, floor_size))
            settle()
            bursts.append(pipelined(server, waits[: args.runs]))
            server.stop()
            server = None
        server = Server(root, "--enforce-deadlines")  # every run is still suspended (not resumed)
        time.sleep(0.5)
        deadlines_cpu = cpu_percent(server.proc.pid, args.idle_seconds)
        deadlines_rss = rss_mib(server.proc.pid)
        server.stop()
        server = None
        settle()
        floors.append(durable_floor(record_size, floor_size))
    finally:
        if server is not None and server.proc.poll() is None:
            server.proc.kill()
        for repo in [root, *copies]:
            remove(repo)
    middle = beside_floors(bursts, floors)
    report = {
        "benchmark": "serve",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "memory": {
            "idleRssMiB": idle.get("VmRSS"),
            "idlePeakRssMiB": idle.get("VmHWM"),
            "rssAfterSignalsMiB": after.get("VmRSS"),
            # Started at launch to answer pipelined signals (SWAMP_SIGNAL_HELPERS); not in the target.
            "signalHelpersIdleRssMiB": helpers_idle,
            "readyAfterSeconds": round(ready_after, 3),
            "targetMiB": 80,
            "met": (idle.get("VmRSS") or 1e9) < 80,
        },
        "idleCpu": {
            "seconds": args.idle_seconds,
            "percentOfOneCpu": idle_cpu,
            "enforceDeadlinesPercentOfOneCpu": deadlines_cpu,
            "enforceDeadlinesActiveRuns": len(waits),
            "enforceDeadlinesRssMiB": deadlines_rss.get("VmRSS"),
        },
        "signals": {
            "runsOpened": len(waits),
            "openedInSeconds": round(opened_in, 2),
            "recordBytes": record_size,
            "pipelined": middle,  # the median of the trials by ratio
            "pipelinedTrials": bursts,
            "oneAtATime": sequential,
            "durableWriteFloorPerSecond": max(middle["floorBeforeAndAfter"]),
            "floorBeforeAndAfter": middle["floorBeforeAndAfter"],
            "ratioToFloor": middle["ratioToFloor"],
            "target": 0.7,
            "met": middle["ratioToFloor"] >= 0.7,
        },
        "serveExitCode": exit_code,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
