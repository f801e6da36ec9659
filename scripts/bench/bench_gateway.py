"""Benchmark of `swamp gateway` (issue 29), printed as JSON:

- idle resident memory: VmRSS of the gateway process once it answers /healthz, and again after
  the answers below;
- POST-to-receipt latency: `POST /v1/waits/{waitId}/signal` with a bearer token, one at a time,
  from the request sent to the receipt read (p50, p95, in ms);
- answers per second with `--clients` concurrent clients (default 50), each answering its own
  waits, from the first request to the last receipt.

Every wait is its own run (`waiter` of bench_all.py), opened and granted a token through
`swamp --jsonl` first. The gateway runs with `--no-continue` unless `--continue` is given (then
each answer also runs the rest of its run, as a link's answer does by default), and with a rate
limit high enough not to count. `--smoke` runs tiny sizes so CI keeps the script working; no target
is asserted anywhere.
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _common import SWAMP, env, make_repo, remove
from bench_all import WAITER, jsonl, open_waits
from bench_serve import rss_mib


def grant_all(root: Path, wait_ids: list[str]) -> list[str]:
    frames = [
        {"type": "workflow.wait.grant", "id": f"g{i}", "payload": {"waitId": w, "uses": 1}}
        for i, w in enumerate(wait_ids)
    ]
    replies, _ = jsonl(root, frames)
    tokens = {
        r["id"]: r["payload"]["data"]["permission"]["token"]
        for r in replies
        if r["type"] == frames[0]["type"]
    }
    return [tokens[f"g{i}"] for i in range(len(wait_ids))]


class Gateway:
    def __init__(self, root: Path, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [SWAMP, "gateway", "--listen", "127.0.0.1:0", "--rate", "1000000", *flags],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env(),
        )
        assert self.proc.stdout is not None
        self.url = json.loads(self.proc.stdout.readline())["listening"]
        parts = urlsplit(self.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=60)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def answer(conn: http.client.HTTPConnection, wait_id: str, token: str) -> None:
    body = b'{"verdict":"ship"}'
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    conn.request("POST", f"/v1/waits/{wait_id}/signal", body=body, headers=headers)
    reply = conn.getresponse()
    data = reply.read()
    if reply.status != 200:
        raise SystemExit(f"POST {wait_id}: {reply.status} {data[:300]!r}")


def healthy(gw: Gateway) -> None:
    conn = gw.connection()
    conn.request("GET", "/healthz")
    assert conn.getresponse().read() == b'{"status":"ok"}'
    conn.close()


def latency(gw: Gateway, pairs: list[tuple[str, str]]) -> dict[str, float]:
    samples = []
    conn = gw.connection()
    for wait_id, token in pairs:
        started = time.perf_counter()
        answer(conn, wait_id, token)
        samples.append(time.perf_counter() - started)
    conn.close()
    ordered = sorted(samples)
    return {
        "count": len(samples),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1),
    }


def throughput(gw: Gateway, pairs: list[tuple[str, str]], clients: int) -> dict[str, Any]:
    shares = [pairs[i::clients] for i in range(clients)]
    errors: list[BaseException] = []
    start = threading.Barrier(clients + 1)

    def client(share: list[tuple[str, str]]) -> None:
        conn = gw.connection()
        start.wait()
        try:
            for wait_id, token in share:
                answer(conn, wait_id, token)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(share,)) for share in shares]
    for thread in threads:
        thread.start()
    start.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - started
    if errors:
        raise SystemExit(f"{len(errors)} client(s) failed: {errors[0]}")
    return {
        "answers": len(pairs),
        "clients": clients,
        "seconds": round(took, 2),
        "per_second": round(len(pairs) / took, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI keeps the script working)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--sequential", type=int, default=100, help="answers timed one at a time")
    parser.add_argument("--concurrent", type=int, default=500, help="answers sent by the clients")
    parser.add_argument(
        "--continue", dest="resume", action="store_true", help="each answer continues its run"
    )
    args = parser.parse_args()
    if args.smoke:
        args.sequential, args.concurrent, args.clients = 5, 10, 5
    root = make_repo({"workflows/workflow-waiter.yaml": WAITER})
    try:
        total = args.sequential + args.concurrent
        wait_ids = open_waits(root, total)
        pairs = list(zip(wait_ids, grant_all(root, wait_ids), strict=True))
        gw = Gateway(root, *([] if args.resume else ["--no-continue"]))
        try:
            healthy(gw)
            time.sleep(0.5)
            idle = rss_mib(gw.proc.pid)
            report = {
                "benchmark": "gateway",
                "smoke": args.smoke,
                "continue": args.resume,
                "idle_rss_mib": idle.get("VmRSS"),
                "latency": latency(gw, pairs[: args.sequential]),
                "throughput": throughput(gw, pairs[args.sequential :], args.clients),
                "rss_after_mib": rss_mib(gw.proc.pid),
            }
        finally:
            gw.stop()
    finally:
        remove(root)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
