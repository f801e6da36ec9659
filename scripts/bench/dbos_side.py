"""DBOS Transact beside swamp in scripts/bench/pg: the issue's "ahead of DBOS" measured in the same
run, on the same cluster, with the same waiting workflows, messages and requests in flight.

The peer (dbos_peer.py) runs in a virtualenv of its own holding the pinned `dbos`, made once under
~/.cache/swamp-bench (pip, from the package registry). Where it cannot be made, the figures say
so instead of failing the bench.

What is measured, as swamp's sections measure it:
- deliveries: N+C workflows started and receiving, their process then killed (-9) so that nothing
  consumes the messages (swamp's deliveries have no serve either); one process with a DBOSClient
  sends one message to each, C threads in flight, the first C not timed.
- answered and continued: one DBOS process per host, each having started its share of the
  workflows (a workflow runs in the process that started it, as a swamp run is continued by a
  serve); one sending process per host, C/hosts threads each; acknowledged is the last send's
  return, continued the moment every workflow has succeeded (polled, as swamp's runs table is).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import cpu_seconds, stop

DBOS_VERSION = "3.4.0"
PEER = Path(__file__).with_name("dbos_peer.py")
CACHES = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
CACHE = CACHES / "swamp-bench" / f"dbos-{DBOS_VERSION}"


def peer_python() -> tuple[str | None, str]:
    """The python of the DBOS virtualenv (made on first use), or None and why not."""
    python = CACHE / "bin" / "python"
    if python.exists():
        return str(python), "cached"
    made = subprocess.run([sys.executable, "-m", "venv", str(CACHE)], capture_output=True, text=True)
    if made.returncode == 0:
        made = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"dbos=={DBOS_VERSION}", "psycopg[binary]"],
            capture_output=True,
            text=True,
        )
    if made.returncode != 0:
        subprocess.run(["rm", "-rf", str(CACHE)], check=False)
        return None, f"could not install dbos {DBOS_VERSION}: {(made.stderr or made.stdout)[-300:]}"
    return str(python), "installed"


class Dbos:
    """The DBOS peer on one cluster: each job on a system database of its own."""

    def __init__(self, python: str, address: str):
        self.python = python
        host, user = re.search(r"host=([^&]+)&user=([^&]+)", address).groups()  # type: ignore[union-attr]
        self._host, self._user = host, user

    def url(self, database: str) -> str:
        return f"postgresql://{self._user}@/{database}?host={self._host}"

    def _apps(self, database: str, shares: list[tuple[int, int]]) -> list[subprocess.Popen[bytes]]:
        """One DBOS process per (count, offset) share, each returned once all its workflows receive."""
        apps = [
            subprocess.Popen(
                [self.python, str(PEER), "app", self.url(database), f"host{i}", str(count), str(offset)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for i, (count, offset) in enumerate(shares)
        ]
        for app in apps:
            assert app.stdout is not None
            line = app.stdout.readline()
            if not line.startswith(b'{"ready"'):
                for other in apps:
                    other.kill()
                said = app.stderr.read()[-500:] if app.stderr else b""
                raise SystemExit(f"the DBOS peer did not start: {line!r} {said!r}")
        return apps

    def _deliver(self, database: str, clients: int, ids: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [self.python, str(PEER), "deliver", self.url(database), str(clients), *ids],
            stdout=subprocess.PIPE,
        )

    @staticmethod
    def _result(sender: subprocess.Popen[bytes]) -> dict[str, Any]:
        out, _ = sender.communicate(timeout=600)
        if sender.returncode != 0:
            raise SystemExit(f"the DBOS peer's sender exited {sender.returncode}")
        return dict(json.loads(out.decode().strip().splitlines()[-1]))

    def deliveries(self, name: str, size: int, clients: int, server: int | None = None) -> dict[str, Any]:
        """Also the CPU time per timed send of DBOS's sending process and, given the postmaster's
        pid `server`, of PostgreSQL (as bench_pg's burst reports)."""
        database = f"dbos_{name}"
        total = size + clients
        (app,) = self._apps(database, [(total, 0)])
        app.kill()  # the workflows stay receiving in the store; nothing consumes what is sent
        app.communicate()
        ids = [f"bench-{i}" for i in range(total)]
        sender = subprocess.Popen(
            [self.python, str(PEER), "deliver-gated", self.url(database), str(clients), *ids],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert sender.stdin is not None and sender.stdout is not None
        sender.stdout.readline()  # warmed up
        roots = [sender.pid] + ([server] if server else [])
        before = [cpu_seconds([pid]) for pid in roots]
        sender.stdin.write(b"go\n")
        sender.stdin.flush()
        got = dict(json.loads(sender.stdout.readline()))
        after = [cpu_seconds([pid]) for pid in roots]
        sender.stdin.close()
        sender.wait(timeout=600)
        if sender.returncode != 0:
            raise SystemExit(f"the DBOS peer's sender exited {sender.returncode}")
        out = {k: v for k, v in got.items() if not k.startswith("_")}
        spent = [(a - b) / got["signals"] * 1000 for a, b in zip(after, before, strict=True)]
        out["cpuMsPerSignal"] = {"dbos": round(spent[0], 3)}
        if server:
            out["cpuMsPerSignal"]["postgresql"] = round(spent[1], 3)
        return out

    def answer_and_continue(
        self, name: str, hosts: int, size: int, clients: int, bound: float
    ) -> dict[str, Any]:
        database = f"dbos_{name}"
        per_host = max(1, clients // hosts)
        share = size // hosts
        shares = [(share, i * share) for i in range(hosts)]
        apps = self._apps(database, shares)
        try:
            succeeded = self._succeeded(database)
            senders = [
                self._deliver(database, per_host, [f"bench-{i}" for i in range(offset, offset + count)])
                for count, offset in shares
            ]
            done_at, deadline = None, time.monotonic() + bound
            while time.monotonic() < deadline:
                if succeeded() >= size:
                    done_at = time.perf_counter()
                    break
                time.sleep(0.02)
            results = [self._result(sender) for sender in senders]
        finally:
            stop(apps, 30)
        started = min(r["_started"] for r in results)
        signalled = sum(r["signals"] for r in results)
        return {
            "runs": size,
            "signalsTimed": signalled,
            "errors": sum(r["errors"] for r in results),
            "acknowledgedPerSecond": round(signalled / (max(r["_ended"] for r in results) - started), 1),
            "continuedPerSecond": round(signalled / (done_at - started), 1) if done_at else None,
            "allFinishedWithin": None if done_at else f"not all finished within {bound:.0f} s",
        }

    def _succeeded(self, database: str) -> Any:
        import psycopg

        conn = psycopg.connect(f"host={self._host} user={self._user} dbname={database}", autocommit=True)

        def count() -> int:
            row = conn.execute(
                "SELECT count(*) FROM dbos.workflow_status"
                " WHERE status = 'SUCCESS' AND workflow_uuid LIKE 'bench-%'"
            ).fetchone()
            return int(row[0]) if row else 0

        return count

