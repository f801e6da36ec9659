"""Benchmark: events from another process reaching a subscriber of `swamp serve`, printed as JSON.

- latency: a raw client on `swamp serve --socket` holds one `events.subscribe` (kinds
  `wait_settled`); for each of --signals waits, this script runs `swamp workflow signal` as a
  separate process and times from just before starting it to the `wait_settled` frame arriving
  on the socket (median, p99, max in milliseconds). The signal command's own start-up and work
  are inside that time, so its median (measured beside it, `signalCommandMs`) is reported too:
  the difference is what publishing and subscribing add.
- idle: the CPU seconds the subscribed serve process used over --idle seconds of wall time with
  nothing happening (from /proc/<pid>/stat), as a percent of one core (target: under 1 %).

`--smoke` runs tiny sizes so CI keeps the script working; no target is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import socket
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from _common import SWAMP, env, make_repo, remove
from bench_watch import cpu_seconds

WORKFLOW = """\
id: 00000000-0000-4000-8000-0000000000e1
name: waiter
inputs:
  type: object
  properties:
    k: {type: integer}
jobs:
  - name: main
    steps:
      - name: review
        task: {type: wait_for_signal, timeout: 86400, schema: {type: boolean}}
"""


def open_waits(root: Path, count: int) -> list[str]:
    frames = "".join(
        json.dumps(
            {"type": "workflow.run", "id": f"r{k}", "payload": {"workflow": "waiter", "inputs": {"k": k}}}
        )
        + "\n"
        for k in range(count)
    )
    done = subprocess.run(
        [SWAMP, "--jsonl"], cwd=root, input=frames.encode(), capture_output=True, env=env(), check=True
    )
    waits = []
    for line in done.stdout.splitlines():
        frame = json.loads(line)
        if frame.get("type") == "workflow.run":
            waits.append(frame["payload"]["data"]["waits"][0]["waitId"])
    return waits


def frames_of(sock: socket.socket) -> queue.Queue[tuple[float, dict[str, Any]]]:
    arrived: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()

    def pump() -> None:
        with sock.makefile("rb") as reader:
            for line in reader:
                arrived.put((time.perf_counter(), json.loads(line)))

    threading.Thread(target=pump, daemon=True).start()
    return arrived


def next_frame(
    arrived: queue.Queue[tuple[float, dict[str, Any]]], wanted: str
) -> tuple[float, dict[str, Any]]:
    while True:
        at, frame = arrived.get(timeout=60)
        if frame.get("type") == wanted:
            return at, frame


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def report(signals: int, idle: float) -> dict[str, object]:
    root = make_repo({"workflows/workflow-waiter.yaml": WORKFLOW})
    serve = None
    try:
        waits = open_waits(root, signals + 1)
        spare = waits.pop()
        path = str(root / "serve.sock")
        serve = subprocess.Popen(
            [SWAMP, "serve", "--socket", path],
            cwd=root,
            env=env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise SystemExit("swamp serve did not listen within 30 s")
            time.sleep(0.02)
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        arrived = frames_of(client)
        client.sendall(b'{"type":"serve.status","id":"ready"}\n')
        next_frame(arrived, "serve.status")
        request = {"type": "events.subscribe", "id": "s", "payload": {"kinds": ["wait_settled"]}}
        client.sendall((json.dumps(request) + "\n").encode())
        time.sleep(1.0)  # the subscription is in its loop; start-up work is done
        before, wall = cpu_seconds(serve.pid), time.perf_counter()
        time.sleep(idle)
        after, wall = cpu_seconds(serve.pid), time.perf_counter() - wall
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
        latency, command = [], []
        for wait_id in waits:
            sent = time.perf_counter()
            subprocess.run(
                [SWAMP, "workflow", "signal", wait_id, "--payload", "true"],
                cwd=root,
                env=env(),
                capture_output=True,
                check=True,
            )
            finished = time.perf_counter()
            at, frame = next_frame(arrived, "event")
            assert frame["event"]["waitId"] == wait_id, frame
            latency.append((at - sent) * 1000)
            command.append((finished - sent) * 1000)
        client.sendall(b'{"type":"cancel","id":"c","payload":{"id":"s"}}\n')
        _, ended = next_frame(arrived, "events.subscribe")
        client.close()
        del spare
        return {
            "benchmark": "events",
            "signals": len(latency),
            "signalToSubscriberMs": {
                "median": round(statistics.median(latency), 2),
                "p99": round(percentile(latency, 0.99), 2),
                "max": round(max(latency), 2),
            },
            "signalCommandMs": {"median": round(statistics.median(command), 2)},
            "idle": idle_report,
            "subscriptionEnded": ended["payload"]["data"]["outcome"],
            "target": "a subscribed serve uses under 1% of one core while idle",
            "met": idle_report.get("met"),
        }
    finally:
        if serve is not None:
            serve.terminate()
            try:
                serve.wait(timeout=15)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait()
        remove(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--signals", type=int, default=50, help="signals timed, each a CLI process")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle subscription measured")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check that the script works")
    args = parser.parse_args()
    signals, idle = (3, 1.0) if args.smoke else (args.signals, args.idle)
    print(json.dumps(report(signals, idle), indent=2))


if __name__ == "__main__":
    main()
