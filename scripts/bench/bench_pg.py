"""Benchmark: swamp on PostgreSQL beside the engine's own floor and beside the file store (issue 17).

(a) throughput: signals per second through ONE `swamp --jsonl` with C requests in flight (a new
    one written as each answer's `done` arrives), on PostgreSQL and on the file store, beside
    `pgbench -b simple-update -c C -j C` TPS on the same cluster (after `pgbench -i`): the
    engine's own floor for durable one-row transactions from C connections. Target: swamp on
    PostgreSQL >= 0.5 of pgbench.
(b) command start: wall time of one `swamp workflow signal` process (connect included) on
    PostgreSQL and on the file store, interleaved, median of N. Target: <= 1.5x the file store.
(c) history: `waits --json`, `signal` and `resume` in a schema holding 100,000 finished runs (with
    their waits and audit entries, cloned server-side from a real finished run by INSERT ...
    SELECT) and in an empty one, in turn round by round. Target: each <= 1.3x.

Each section starts its own throwaway cluster (`scripts/pg start` in a temporary folder; PostgreSQL's
durable defaults: fsync and synchronous_commit on) and stops it after. No target is asserted: the
report says whether each was met. `--smoke` runs tiny sizes so the script is known to work.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import SWAMP, env, make_repo, median_ms, remove

ROOT = Path(__file__).resolve().parents[2]
PG = str(ROOT / "scripts" / "pg")
WAITER = """\
id: 00000000-0000-4000-8000-00000000000c
name: waiter
inputs:
  type: object
  properties:
    k: {type: integer}
jobs:
  - name: main
    steps:
      - name: review
        task:
          type: wait_for_signal
          timeout: 86400
          schema:
            type: object
            required: [verdict]
            additionalProperties: false
            properties:
              verdict: {type: string, enum: [ship, fix, abandon]}
      - name: after
        dependsOn: [{step: review, condition: {type: succeeded}}]
        task: {type: model_method, modelIdOrName: noop, methodName: run}
"""
PAYLOAD = '{"verdict":"ship"}'


class Cluster:
    """A throwaway cluster in a temporary folder (scripts/pg), stopped and removed on exit."""

    def __enter__(self) -> Cluster:
        self.folder = Path(tempfile.mkdtemp(prefix="swamp-bench-pg-"))
        self.folder.chmod(0o755)  # as root the cluster runs as the postgres account
        self.data = self.folder / "pg"
        self.address = subprocess.run(
            [PG, "start", str(self.data)], check=True, capture_output=True, text=True
        ).stdout.strip()
        self.bin = Path(
            subprocess.run([PG, "bin"], check=True, capture_output=True, text=True).stdout.strip()
        )
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run([PG, "stop", str(self.data)], check=False, capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, schema: str, database: str = "swamp") -> str:
        address = self.address.replace("///swamp?", f"///{database}?")
        return f"{address}&options=-csearch_path%3D{schema}"

    def store(self, schema: str) -> dict[str, str]:
        """The environment of swamp commands on the schema `schema`, migrated here."""
        store_env = {**env(), "SWAMP_STORE_URL": self.url(schema)}
        done = subprocess.run([SWAMP, "store", "migrate"], capture_output=True, text=True, env=store_env)
        if done.returncode != 0:
            raise SystemExit(f"swamp store migrate failed: {done.stdout}{done.stderr}")
        return store_env

    def sql(self, schema: str, statements: str, *args: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url(schema), autocommit=True) as conn:
            cur = conn.execute(statements, args or None)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []


def file_store() -> dict[str, str]:
    return {**env(), "SWAMP_STORE_URL": "file"}


def run(argv: list[str], root: Path, store: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(argv, cwd=root, capture_output=True, env=store)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv)} exited {done.returncode}: {done.stdout[-300:]!r} {done.stderr[-500:]!r}"
        )
    return done


def timed(argv: list[str], root: Path, store: dict[str, str]) -> float:
    started = time.perf_counter()
    run(argv, root, store)
    return time.perf_counter() - started


def open_waits(root: Path, store: dict[str, str], count: int, offset: int = 0) -> list[tuple[str, str]]:
    """`count` runs of the waiter suspended at their wait, through one `swamp --jsonl`: (runId, waitId)."""
    frames = "".join(
        json.dumps(
            {
                "type": "workflow.run",
                "id": f"r{i}",
                "payload": {"workflow": "waiter", "inputs": {"k": offset + i}},
            }
        )
        + "\n"
        for i in range(count)
    )
    done = subprocess.run([SWAMP, "--jsonl"], cwd=root, input=frames.encode(), capture_output=True, env=store)
    opened = []
    for line in done.stdout.decode().splitlines():
        reply = json.loads(line)
        if reply["type"] == "workflow.run":
            data = reply["payload"]["data"]
            opened.append((data["id"], data["waits"][0]["waitId"]))
        elif reply["type"] == "error":
            raise SystemExit(f"opening waits failed: {reply['error']}")
    if len(opened) != count:
        raise SystemExit(f"opened {len(opened)} waits of {count}: {done.stderr.decode()[-500:]}")
    return opened


def settle(cluster: Cluster | None = None) -> None:
    """Flush what setting up left to write back, so that the figure measured next does not pay for it."""
    if cluster is not None:
        cluster.sql("public", "CHECKPOINT")
    os.sync()
    time.sleep(0.2)


# -- (a) throughput -------------------------------------------------------------------------------------


def burst(root: Path, store: dict[str, str], waits: list[str], clients: int) -> dict[str, Any]:
    """Signal `waits` through one `swamp --jsonl`, `clients` requests in flight; the first `clients`
    warm it up (helpers started, connections made) and are not counted."""
    proc = subprocess.Popen(
        [SWAMP, "--jsonl"], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=store
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(i: int) -> None:
        frame = {
            "type": "workflow.signal",
            "id": f"s{i}",
            "payload": {"waitId": waits[i], "payload": {"verdict": "ship"}},
        }
        proc.stdin.write((json.dumps(frame) + "\n").encode())  # type: ignore[union-attr]

    warm, total = min(clients, len(waits) - 1), len(waits)
    for i in range(warm):
        send(i)
    proc.stdin.flush()
    dones, accepted, errors = 0, 0, Counter[str]()
    lines = iter(proc.stdout)
    while dones < warm:
        if json.loads(next(lines))["type"] == "done":
            dones += 1
    started = time.perf_counter()
    sent = warm
    while sent < min(total, warm + clients):
        send(sent)
        sent += 1
    proc.stdin.flush()
    in_flight = sent - warm
    for line in lines:
        reply = json.loads(line)
        if reply["type"] == "workflow.signal":
            accepted += 1
        elif reply["type"] == "error":
            errors[reply["error"]["code"]] += 1
        elif reply["type"] == "done":
            in_flight -= 1
            if sent < total:
                send(sent)
                proc.stdin.flush()
                sent += 1
                in_flight += 1
            elif in_flight == 0:
                break
    took = time.perf_counter() - started
    proc.stdin.close()
    proc.wait()
    counted = total - warm
    return {
        "signals": counted,
        "accepted": accepted,
        "errors": dict(errors),
        "signalsPerSecond": round(counted / took, 1),
    }


def pgbench(cluster: Cluster, clients: int, seconds: int) -> dict[str, Any]:
    """TPS of pgbench's simple-update script (UPDATE, SELECT, INSERT: one commit) from `clients`
    connections, on a database of its own in the same cluster."""
    cluster.sql("public", "CREATE DATABASE pgbench")
    host, user = re.search(r"host=([^&]+)&user=([^&]+)", cluster.address).groups()  # type: ignore[union-attr]
    common = ["-h", host, "-U", user]
    subprocess.run(
        [str(cluster.bin / "pgbench"), *common, "-i", "-q", "pgbench"], check=True, capture_output=True
    )
    settle(cluster)
    done = subprocess.run(
        [
            str(cluster.bin / "pgbench"),
            *common,
            "-b",
            "simple-update",
            "-c",
            str(clients),
            "-j",
            str(clients),
            "-T",
            str(seconds),
            "pgbench",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    tps = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", done.stdout)
    if not tps:
        raise SystemExit(f"pgbench printed no tps: {done.stdout}{done.stderr}")
    return {"clients": clients, "seconds": seconds, "tps": round(float(tps.group(1)), 1)}


def throughput(signals: int, clients: int, seconds: int) -> dict[str, Any]:
    helpers = {"SWAMP_SIGNAL_HELPERS": str(clients)}
    with Cluster() as cluster:
        pg_store = {**cluster.store("bench_throughput"), **helpers}
        files = {**file_store(), **helpers}
        pg_repo = make_repo({"workflows/workflow-waiter.yaml": WAITER})
        file_repo = make_repo({"workflows/workflow-waiter.yaml": WAITER})
        try:
            pg_waits = [w for _, w in open_waits(pg_repo, pg_store, signals + clients)]
            file_waits = [w for _, w in open_waits(file_repo, files, signals + clients)]
            floor = pgbench(cluster, clients, seconds)
            settle(cluster)
            on_pg = burst(pg_repo, pg_store, pg_waits, clients)
            settle(cluster)
            on_files = burst(file_repo, files, file_waits, clients)
        finally:
            remove(pg_repo)
            remove(file_repo)
    ratio = round(on_pg["signalsPerSecond"] / floor["tps"], 3)
    return {
        "clientsInFlight": clients,
        "signalHelpers": clients,
        "postgresql": on_pg,
        "fileStore": on_files,
        "pgbenchSimpleUpdate": floor,
        "ratioToPgbench": ratio,
        "ratioToFileStore": round(on_pg["signalsPerSecond"] / on_files["signalsPerSecond"], 3),
        "target": 0.5,
        "met": ratio >= 0.5,
    }


# -- (b) command start ----------------------------------------------------------------------------------


def command_start(repeats: int) -> dict[str, Any]:
    with Cluster() as cluster:
        pg_store = cluster.store("bench_start")
        files = file_store()
        pg_repo = make_repo({"workflows/workflow-waiter.yaml": WAITER})
        file_repo = make_repo({"workflows/workflow-waiter.yaml": WAITER})
        try:
            pg_waits = open_waits(pg_repo, pg_store, repeats)
            file_waits = open_waits(file_repo, files, repeats)
            settle(cluster)
            samples: dict[str, list[float]] = {"pythonPass": [], "fileStore": [], "postgresql": []}
            for i in range(repeats):  # interleaved, so that noise hits all three alike
                samples["pythonPass"].append(timed([sys.executable, "-c", "pass"], file_repo, env()))
                pairs = [
                    ("fileStore", file_repo, files, file_waits),
                    ("postgresql", pg_repo, pg_store, pg_waits),
                ]
                for name, root, store, waits in pairs if i % 2 == 0 else pairs[::-1]:
                    samples[name].append(
                        timed([SWAMP, "workflow", "signal", waits[i][1], "--payload", PAYLOAD], root, store)
                    )
        finally:
            remove(pg_repo)
            remove(file_repo)
    medians = {k: median_ms(v) for k, v in samples.items()}
    ratio = round(medians["postgresql"] / medians["fileStore"], 3)
    return {
        "repeats": repeats,
        "signalMedianMs": medians,
        "ratio": ratio,
        "target": 1.5,
        "met": ratio <= 1.5,
    }


# -- (c) history ------------------------------------------------------------------------------------------

IDS = {"wait": re.compile(r"wait_[a-z2-7]{26}"), "sig": re.compile(r"sig_[a-z2-7]{26}")}


def new_id(prefix: str, k: int) -> str:
    """SQL: an ID of the kind `prefix` (26 base32 characters), derived from the clone's run ID."""
    digest = f"md5(i.run_id || ':{prefix}{k}') || md5(i.run_id || ':{prefix.upper()}{k}')"
    return f"'{prefix}_' || translate(left({digest}, 26), '0189', 'wxyz')"


def columns(cluster: Cluster, schema: str, table: str) -> list[str]:
    return [
        r[0]
        for r in cluster.sql(
            schema,
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = %s ORDER BY ordinal_position",
            table,
        )
    ]


def clone_history(cluster: Cluster, schema: str, template: str, count: int) -> dict[str, int]:
    """`count` copies of the finished run `template` (its runs row, its waits rows, its audit
    entries), each with a run ID, wait IDs and signal IDs of its own, written server-side."""
    record = cluster.sql(schema, "SELECT record FROM runs WHERE run_id = %s", template)[0][0]
    replace = [(template, "i.run_id")]
    for prefix, pattern in IDS.items():
        replace += [(old, new_id(prefix, k)) for k, old in enumerate(dict.fromkeys(pattern.findall(record)))]

    def rewritten(expr: str) -> str:
        for old, new in replace:
            expr = f"replace({expr}, '{old}', {new})"
        return expr

    def insert(table: str, special: dict[str, str], skip: tuple[str, ...] = ()) -> str:
        cols = [c for c in columns(cluster, schema, table) if c not in skip]
        exprs = [special.get(c, f"t.{c}") for c in cols]
        return (
            f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(exprs)} "
            f"FROM {table} t CROSS JOIN clone_ids i WHERE t.run_id = '{template}'"
        )

    wait_case = (
        "CASE t.wait_id "
        + " ".join(f"WHEN '{old}' THEN {new}" for old, new in replace if old.startswith("wait_"))
        + " ELSE t.wait_id || i.run_id END"
    )
    statements = [
        "CREATE TEMP TABLE clone_ids AS SELECT gen_random_uuid()::text AS run_id "
        f"FROM generate_series(1, {int(count)})",
        insert(
            "runs",
            {
                "run_id": "i.run_id",
                "record": rewritten("t.record"),
                "inputs_sha256": "encode(sha256(i.run_id::bytea), 'hex')",
            },
        ),
        insert("waits", {"wait_id": wait_case, "run_id": "i.run_id"}),
        insert("audit", {"run_id": "i.run_id", "entry": rewritten("t.entry")}, skip=("id",)),
    ]
    import psycopg

    with psycopg.connect(cluster.url(schema), autocommit=True) as conn:
        with conn.transaction():
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]
        for table in ("runs", "waits", "audit"):
            conn.execute(f"VACUUM ANALYZE {table}")  # type: ignore[arg-type]
        counts = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "waits", "audit")
        }  # type: ignore[arg-type,index]
    return counts


def history(finished: int, repeats: int) -> dict[str, Any]:
    with Cluster() as cluster:
        stores = {"empty": cluster.store("bench_history_empty"), "full": cluster.store("bench_history_full")}
        repos = {name: make_repo({"workflows/workflow-waiter.yaml": WAITER}) for name in stores}
        try:
            full_root, full = repos["full"], stores["full"]
            [(template, wait_id)] = open_waits(full_root, full, 1, offset=-1)
            run([SWAMP, "workflow", "signal", wait_id, "--payload", PAYLOAD], full_root, full)
            run([SWAMP, "workflow", "resume", "waiter", "--run", template], full_root, full)
            rows = clone_history(cluster, "bench_history_full", template, finished)
            clone = cluster.sql(
                "bench_history_full", "SELECT run_id FROM runs WHERE run_id <> %s LIMIT 1", template
            )
            shown = json.loads(
                run([SWAMP, "workflow", "history", "get", clone[0][0], "--json"], full_root, full).stdout
            )
            if shown.get("status") != "succeeded":  # a clone swamp cannot read would measure nothing real
                raise SystemExit(f"a cloned run does not read back as a finished run: {shown}")
            prepared = {
                name: open_waits(repos[name], stores[name], repeats, offset=1_000_000) for name in stores
            }
            samples = {name: {"waits": [], "signal": [], "resume": []} for name in stores}  # type: ignore[var-annotated]
            settle(cluster)
            for i in range(repeats):
                for name in ("empty", "full") if i % 2 == 0 else ("full", "empty"):
                    root, store, (run_id, wait) = repos[name], stores[name], prepared[name][i]
                    samples[name]["waits"].append(timed([SWAMP, "workflow", "waits", "--json"], root, store))
                    samples[name]["signal"].append(
                        timed([SWAMP, "workflow", "signal", wait, "--payload", PAYLOAD], root, store)
                    )
                    samples[name]["resume"].append(
                        timed([SWAMP, "workflow", "resume", "waiter", "--run", run_id], root, store)
                    )
        finally:
            for root in repos.values():
                remove(root)
    base = {k: median_ms(v) for k, v in samples["empty"].items()}
    loaded = {k: median_ms(v) for k, v in samples["full"].items()}
    ratios = {k: round(loaded[k] / base[k], 3) for k in base}
    return {
        "finishedRuns": finished,
        "rowsInTheFullSchema": rows,
        "repeats": repeats,
        "emptyMs": base,
        "withHistoryMs": loaded,
        "ratio": ratios,
        "target": 1.3,
        "met": all(r <= 1.3 for r in ratios.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the script, not the targets")
    parser.add_argument(
        "--clients", type=int, default=4, help="requests in flight, pgbench -c/-j (default 4)"
    )
    parser.add_argument("--signals", type=int, default=1000, help="signals timed in (a) (default 1000)")
    parser.add_argument("--pgbench-seconds", type=int, default=10, help="pgbench -T (default 10)")
    parser.add_argument("--repeats", type=int, default=15, help="samples of each command in (b) and (c)")
    parser.add_argument("--history", type=int, default=100_000, help="finished runs in (c) (default 100000)")
    parser.add_argument("--only", choices=("throughput", "start", "history"), help="one section only")
    args = parser.parse_args()
    if args.smoke:
        args.signals, args.pgbench_seconds, args.repeats, args.history = 20, 2, 3, 200
    sections = {
        "throughput": lambda: throughput(args.signals, args.clients, args.pgbench_seconds),
        "commandStart": lambda: command_start(args.repeats),
        "history": lambda: history(args.history, args.repeats),
    }
    chosen = {"throughput": "throughput", "start": "commandStart", "history": "history"}.get(args.only or "")
    report: dict[str, Any] = {"benchmark": "pg", "smoke": args.smoke}
    for name, measure in sections.items():
        if chosen in (None, name):
            report[name] = measure()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
