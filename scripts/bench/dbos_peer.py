"""DBOS Transact, the peer scripts/bench/pg measures swamp against: the same jobs on the same cluster.

Run by the python of a virtualenv holding `dbos` (bench_pg.py makes one with the pinned version).
The waiter is swamp's bench waiter in DBOS's terms: a workflow that receives one message on the
topic "verdict" (`DBOS.recv`), then runs one step. Each command prints one JSON line.

  app URL EXECUTOR N OFFSET  launch DBOS as executor EXECUTOR on the system database URL, start
                             workflows bench-OFFSET .. bench-(OFFSET+N-1), print {"ready": N} once
                             every one of them is receiving, then serve until SIGTERM or stdin ends.
  deliver URL CLIENTS ID...  send {"verdict": "ship"} to each workflow ID from a DBOSClient with
                             CLIENTS threads; the first CLIENTS sends warm it up and are not timed.
                             Prints signals, signalsPerSecond and the perf_counter at the first
                             timed send and after the last (CLOCK_MONOTONIC: comparable across
                             processes of this machine).
  deliver-gated URL CLIENTS ID...  the same, but after the warm-up it prints {"warm": C} and goes
                             on at the next line of stdin, and after its result it waits for
                             stdin's end (so that the bench can read its CPU time around the
                             timed sends).
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from typing import Any

from dbos import DBOS, DBOSClient, DBOSConfig

TOPIC = "verdict"
_receiving = 0
_receiving_lock = threading.Lock()


@DBOS.step()
def after(message: Any) -> str:
    return str(message["verdict"]) if isinstance(message, dict) else "none"


@DBOS.workflow()
def waiter(k: int) -> str:
    global _receiving
    with _receiving_lock:
        _receiving += 1
    return after(DBOS.recv(TOPIC, timeout_seconds=86400))


def app(url: str, executor: str, count: int, offset: int) -> None:
    config: DBOSConfig = {
        "name": "bench",
        "system_database_url": url,
        "executor_id": executor,
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()
    for i in range(offset, offset + count):
        from dbos import SetWorkflowID

        with SetWorkflowID(f"bench-{i}"):
            DBOS.start_workflow(waiter, i)
    while _receiving < count:
        time.sleep(0.01)
    print(json.dumps({"ready": count}), flush=True)
    sys.stdin.read()  # until the bench closes it (or SIGTERM ends the process)
    DBOS.destroy()


def deliver(url: str, clients: int, ids: list[str], gated: bool = False) -> None:
    client = DBOSClient(system_database_url=url, system_database_pool_size=clients + 1)
    work: queue.Queue[str | None] = queue.Queue()
    warm = min(clients, len(ids) - 1)
    errors: list[str] = []

    def sender() -> None:
        while (destination := work.get()) is not None:
            try:
                client.send(destination, {"verdict": "ship"}, TOPIC)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                errors.append(type(exc).__name__)

    def send_all(batch: list[str]) -> None:
        threads = [threading.Thread(target=sender) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for destination in batch:
            work.put(destination)
        for _ in threads:
            work.put(None)
        for thread in threads:
            thread.join()

    send_all(ids[:warm])
    if gated:  # the bench measures CPU from here: say so, and go on when it answers
        print(json.dumps({"warm": warm}), flush=True)
        sys.stdin.readline()
    started = time.perf_counter()
    send_all(ids[warm:])
    ended = time.perf_counter()
    counted = len(ids) - warm
    print(
        json.dumps(
            {
                "signals": counted,
                "errors": len(errors),
                "signalsPerSecond": round(counted / (ended - started), 1),
                "_started": started,
                "_ended": ended,
            }
        ),
        flush=True,
    )
    if gated:  # until the bench has measured: its CPU is read while this process still runs
        sys.stdin.read()
    client.destroy()


def main() -> None:
    command, url, *rest = sys.argv[1:]
    if command == "app":
        app(url, rest[0], int(rest[1]), int(rest[2]))
    elif command == "deliver":
        deliver(url, int(rest[0]), rest[1:])
    elif command == "deliver-gated":
        deliver(url, int(rest[0]), rest[1:], gated=True)
    else:
        raise SystemExit(f"dbos_peer: no command {command}")


if __name__ == "__main__":
    main()
