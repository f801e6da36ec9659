"""Benchmark of swamp.client (issue 16): a signal's round trip through `Client.signal` beside the
same signal sent by hand on a raw socket, printed as JSON.

One `swamp serve --socket` over one repository whose runs each wait once (opened first through
`swamp --jsonl`). Round by round, one signal goes through a raw socket connection (write the frame,
read lines until its `done`) and the next through a `Client.connect` connection (`client.signal`,
which returns at the same `done`), each to a wait of its own, so both see the same moments of a
noisy machine. Reported: median and p99 milliseconds of each, and their ratios (client / raw): what
the client's reader thread, id matching and payload building add to a round trip. No target is
asserted; `--smoke` runs a few rounds so CI keeps the script working.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from _common import make_repo, remove
from bench_all import WAITER, open_waits
from bench_serve import Server

from swamp.client import Client

SHIP = {"verdict": "ship"}


def summary(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    p99 = statistics.quantiles(ms, n=100, method="inclusive")[98] if len(ms) > 1 else ms[0]
    return {"median": round(statistics.median(ms), 3), "p99": round(p99, 3), "max": round(ms[-1], 3)}


def round_trips(server: Server, waits: list[str], warmup: int) -> tuple[list[float], list[float]]:
    """(raw socket seconds, client seconds), one signal each per round, raw first in even rounds."""
    sock, reader = server.connect()
    raw: list[float] = []
    through_client: list[float] = []
    with Client.connect(server.path) as client:

        def by_hand(i: int, wait_id: str) -> float:
            frame = {
                "type": "workflow.signal",
                "id": f"raw{i}",
                "payload": {"waitId": wait_id, "payload": SHIP},
            }
            started = time.perf_counter()
            sock.sendall((json.dumps(frame) + "\n").encode())
            for line in reader:  # type: ignore[attr-defined]
                reply = json.loads(line)
                if reply["type"] == "error":
                    raise SystemExit(f"raw signal refused: {reply['error']}")
                if reply["type"] == "done":
                    break
            return time.perf_counter() - started

        def by_client(wait_id: str) -> float:
            started = time.perf_counter()
            client.signal(wait_id, SHIP)
            return time.perf_counter() - started

        pairs = [(waits[2 * i], waits[2 * i + 1]) for i in range(len(waits) // 2)]
        for i, (first, second) in enumerate(pairs):
            if i % 2 == 0:
                took_raw, took_client = by_hand(i, first), by_client(second)
            else:
                took_client, took_raw = by_client(first), by_hand(i, second)
            if i >= warmup:
                raw.append(took_raw)
                through_client.append(took_client)
    sock.close()
    return raw, through_client


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=200, help="signals through each path")
    parser.add_argument("--warmup", type=int, default=10, help="rounds first, not counted")
    parser.add_argument("--smoke", action="store_true", help="a few rounds, to check that the script works")
    args = parser.parse_args()
    print(json.dumps(report(5 if args.smoke else args.rounds, 1 if args.smoke else args.warmup), indent=2))


def report(rounds: int, warmup: int) -> dict[str, object]:
    root = make_repo({"workflows/workflow-waiter.yaml": WAITER})
    server = None
    try:
        waits = open_waits(root, 2 * (rounds + warmup))
        server = Server(root)
        raw, through_client = round_trips(server, waits, warmup)
        server.stop()
        server = None
    finally:
        if server is not None and server.proc.poll() is None:
            server.proc.kill()
        remove(root)
    raw_ms, client_ms = summary(raw), summary(through_client)
    return {
        "benchmark": "client",
        "signals": len(raw),
        "rawSocketMs": raw_ms,
        "clientMs": client_ms,
        "ratio": {
            "median": round(client_ms["median"] / raw_ms["median"], 3),
            "p99": round(client_ms["p99"] / raw_ms["p99"], 3),
        },
    }


if __name__ == "__main__":
    main()
