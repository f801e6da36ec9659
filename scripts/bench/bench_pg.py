"""Benchmark: swamp on PostgreSQL and on files, before and after a change, in one run (issues 17, 31).

Every measured section runs twice, interleaved round by round: once with this checkout's `swamp`
package ("after") and once with the package of `--baseline REV` ("before"; default 7aaf4bd, main
before issue 31), exported with `git archive` into a temporary folder and run from the same
virtualenv through PYTHONPATH (the report names the package file each one imported). Each figure
is given for before and after with the ratio after/before, and each target with `met`.

(costs) what one signal and one one-step continuation ask of durable storage, median of N:
    a `swamp workflow signal` process, then `swamp workflow resume` of the waiter it answered.
    Counted the same way for both packages, outside swamp (the baseline has no counting of its
    own): round trips are replies the client read on a PostgreSQL socket after sending there
    (strace; a pipeline is one, the connection's start-up none), each listed by the statement it
    began with; commits are the COMMIT records the process left in the WAL (pg_waldump between the
    insert LSNs before and after it) of transactions that wrote rows, read-only ones leaving none;
    commitsWithoutWrites are those of transactions that wrote nothing else (a NOTIFY of its own);
    on files, fsyncs (strace) and durable writes (fsyncs of files: a record write is the file's
    fsync and its folder's). Where the package has swamp/store/counts.py, its own
    SWAMP_STORE_COUNTS figures are given beside them ("selfCounted"). Targets: round trips per
    signal <= 4, commits per continuation <= 2, durable writes per continuation on files <= 2.
(deliveries) signals per second through ONE `swamp --jsonl` with C requests in flight (a new one
    written as each answer's `done` arrives; the first C warm it up), 200 and 1,000 waiting, on
    PostgreSQL and on files, beside `pgbench -b simple-update -c C -j C` TPS on the same cluster
    (run just before each size's bursts): PostgreSQL's floor for durable one-row transactions from
    C connections. cpuMsPerSignal: where a signal's time goes, the CPU time per counted signal of
    swamp (the --jsonl process and its helpers) and of PostgreSQL (every process of the cluster),
    from /proc over the counted signals only. Targets: after >= 0.6 of pgbench, after >= 5x before
    on PostgreSQL.
(oneHost) answered and continued: a `swamp serve --auto-continue` on the store (started and given
    2 s before the clock starts), N waiting runs signalled as in (deliveries); acknowledged/s is
    the signals' rate, continued/s counts the runs until every one is `succeeded` (polled: the
    runs table on PostgreSQL, the event log's run_finished lines on files). Each is the median of
    --rounds rounds (default 3; before and after in turn: ABBA...). Target: continued/s after
    >= 1.5x before on both stores.
(twoHosts) two repositories (clones of the same files, each a "host" with its own serve
    --auto-continue) on ONE PostgreSQL schema; the signals go half through each host's
    `swamp --jsonl`, C in flight in total (C/2 per host). Each run must be continued exactly once:
    the run_resumed lines of its journal, summed over both hosts' .swamp/journal, are 1 (0 is
    lost, 2 is twice). Targets: acknowledged/s after >= 4x before, continued/s >= 2.5x.
(commandStart) wall time of one `swamp workflow signal` process on PostgreSQL and on files,
    interleaved, median of N. Target: PostgreSQL <= 1.5x files.
(runStart) runs started per second through one `swamp --jsonl`, --batch at a time (default 500),
    in an empty store and beside --waiting runs (default 2,000) already waiting, on PostgreSQL and
    on files. Target: on PostgreSQL, beside the waiting runs >= 0.8x the empty store's rate (a new
    run looks only at the runs it may supersede).
(history) `waits --json`, `signal` and `resume` in a schema holding 100,000 finished runs (cloned
    server-side from a real finished run) and in an empty one. Target: each <= 1.3x.

(DBOS) deliveries, oneHost (PostgreSQL) and twoHosts also measure DBOS Transact 3.4 on the same
    cluster in the same run (dbos_side.py: its `send` to workflows waiting in `recv`, then one
    step), after each size's or round's swamp figures. Targets `aheadOfDbos...`: swamp (after)
    above DBOS: the issue's own aim, which its ratio targets were drawn from. `--no-dbos` leaves
    it out.

Each section starts its own throwaway cluster (`scripts/pg start` in a temporary folder;
PostgreSQL's durable defaults) and stops it after. No target is asserted: the report says whether
each was met. `--smoke` runs tiny sizes so the script is known to work; `--only` picks sections.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import SWAMP, cpu_seconds, env, make_repo, median_ms, remove, stop
from dbos_side import DBOS_VERSION, Dbos, peer_python

ROOT = Path(__file__).resolve().parents[2]
PG = str(ROOT / "scripts" / "pg")
BASELINE = "7aaf4bd"  # main before issue 31's changes
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
REPO_FILES = {"workflows/workflow-waiter.yaml": WAITER}


# -- which swamp runs -----------------------------------------------------------------------------------


@dataclass
class Code:
    """A `swamp` package: this checkout's ("after") or a baseline revision's ("before"), run from the
    same virtualenv with PYTHONPATH naming the folder that holds it."""

    label: str
    tree: Path  # the copy that runs
    rev: str
    source: Path  # the checkout it came from

    def env(self) -> dict[str, str]:
        return {"PYTHONPATH": str(self.tree)}

    @property
    def counts(self) -> bool:
        return (self.tree / "swamp" / "store" / "counts.py").exists()

    def describe(self) -> dict[str, Any]:
        imported = subprocess.run(
            [sys.executable, "-c", "import swamp; print(swamp.__file__)"],
            capture_output=True,
            text=True,
            env={**env(), **self.env()},
            cwd="/",  # not this checkout: `-c` puts the working folder first on sys.path
        ).stdout.strip()
        if Path(imported).resolve() != (self.tree / "swamp" / "__init__.py").resolve():
            raise SystemExit(f"the {self.label} code should import {self.tree}/swamp but imports {imported}")
        return {
            "rev": self.rev,
            "from": str(self.source),
            "package": imported,
            "hasCountsModule": self.counts,
        }


def git(*argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *argv], check=True, capture_output=True, text=True
    ).stdout.strip()


def prepare_codes(baseline: str | None, tree: Path, work: Path) -> list[Code]:
    """[before, after] (or [after] without a baseline), each a copy in `work` of a swamp package
    (with spec/, which swamp/schemas links to): the baseline's exported from git, the checkout's
    copied as it is now (a change made while the bench runs does not reach it). Both are compiled
    once, so that no measured process pays for compiling (PYTHONDONTWRITEBYTECODE, where set, would
    otherwise make every process compile the whole package, the checkout's and not the baseline's)."""
    if tree == ROOT:
        dirty = git("status", "--porcelain", "swamp", "spec")
        rev = git("rev-parse", "HEAD") + (" with uncommitted changes" if dirty else "")
    else:
        rev = f"the checkout {tree}"
    after = work / "after"
    after.mkdir(parents=True)
    for part in ("swamp", "spec"):
        shutil.copytree(
            tree / part, after / part, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    codes = [Code("after", after, rev, tree)]
    if baseline:
        try:
            full = git("rev-parse", "--verify", f"{baseline}^{{commit}}")
        except subprocess.CalledProcessError:
            raise SystemExit(
                f"--baseline {baseline} is not a commit of this repository: give one (git log) or none"
            ) from None
        folder = work / "before"
        folder.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", full, "swamp", "spec"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        codes.insert(0, Code("before", folder, full, ROOT))
    for code in codes:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(code.tree / "swamp")], check=True)
    return codes


def turns(codes: list[Code], i: int) -> list[Code]:
    """The codes in the order of round `i`: alternating, so that drift hits both alike."""
    return codes if i % 2 == 0 else codes[::-1]


def compare(
    figures: dict[str, Any], key: Callable[[dict[str, Any]], float], target: float, kind: str
) -> dict[str, Any]:
    """One target: the figure before and after, after/before, and whether it is met. `kind`: "max"
    (after <= target), "min" (after >= target) or "gain" (after/before >= target)."""
    after = key(figures["after"])
    out: dict[str, Any] = {"after": after}
    ratio = None
    if "before" in figures:
        before = key(figures["before"])
        ratio = round(after / before, 3) if before else None
        out = {"before": before, "after": after, "afterOverBefore": ratio}
    if kind == "max":
        out.update(target=f"<= {target}", met=after <= target)
    elif kind == "min":
        out.update(target=f">= {target}", met=after >= target)
    else:
        out.update(target=f">= {target}x before", met=ratio is not None and ratio >= target)
    return out


def ahead_of_dbos(
    figures: dict[str, Any], swamp: Callable[[dict[str, Any]], float], peer: Callable[[dict[str, Any]], float]
) -> dict[str, Any]:
    """The issue's own aim: swamp (after) ahead of DBOS measured beside it in the same run."""
    after, dbos = swamp(figures["after"]), peer(figures["dbos"])
    return {
        "after": after,
        "dbos": dbos,
        "afterOverDbos": round(after / dbos, 3) if dbos else None,
        "target": "> DBOS",
        "met": bool(dbos) and after > dbos,
    }


def gains(figures: dict[str, Any], keys: list[str]) -> dict[str, float]:
    """after/before of each numeric figure under `keys` (dotted paths)."""
    if "before" not in figures:
        return {}
    out = {}
    for path in keys:
        before, after = figures["before"], figures["after"]
        for part in path.split("."):
            before, after = before[part], after[part]
        if before:
            out[path] = round(after / before, 3)
    return out


# -- the cluster and the stores -------------------------------------------------------------------------


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

    def store(self, schema: str, code: Code) -> dict[str, str]:
        """The environment of `code`'s swamp commands on the schema `schema`, migrated here by it."""
        store_env = {**env(), "SWAMP_STORE_URL": self.url(schema), **code.env()}
        done = subprocess.run([SWAMP, "store", "migrate"], capture_output=True, text=True, env=store_env)
        if done.returncode != 0:
            raise SystemExit(f"swamp store migrate failed: {done.stdout}{done.stderr}")
        return store_env

    def sql(self, schema: str, statements: str, *args: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url(schema), autocommit=True) as conn:
            cur = conn.execute(statements, args or None)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

    def postmaster(self) -> int:
        return int((self.data / "data" / "postmaster.pid").read_text().split()[0])

    def lsn(self) -> str:
        return str(self.sql("public", "SELECT pg_current_wal_insert_lsn()")[0][0])

    def commits_between(self, start: str, end: str) -> dict[str, int]:
        """COMMIT records in the WAL from `start` to `end`: `commits`, of transactions that wrote
        rows (durable: a synchronous commit waits for its flush), and `commitsWithoutWrites`, of
        transactions whose only record is their commit (a NOTIFY sent in a transaction of its own,
        which may skip the wait with synchronous_commit off)."""
        if start == end:
            return {"commits": 0, "commitsWithoutWrites": 0}
        done = subprocess.run(
            [
                str(self.bin / "pg_waldump"),
                "-p",
                str(self.data / "data" / "pg_wal"),
                "-s",
                start,
                "-e",
                end,
            ],
            capture_output=True,
            text=True,
        )
        return wal_commits(done.stdout.splitlines())


WAL_RECORD = re.compile(r"^rmgr: (\w+)\s.*?\btx:\s+(\d+),.*?desc: (.*)$")


def wal_commits(lines: list[str]) -> dict[str, int]:
    """pg_waldump's lines: commits of transactions that wrote (a record of theirs or of one of
    their subtransactions besides the commit) and commits of transactions that wrote nothing else."""
    wrote: set[str] = set()
    commits: list[set[str]] = []
    for line in lines:
        m = WAL_RECORD.match(line)
        if not m:
            continue
        rmgr, tx, desc = m.groups()
        if rmgr == "Transaction" and desc.startswith("COMMIT"):
            subxacts = re.search(r"subxacts: ([\d ]+)", desc)
            commits.append({tx, *(subxacts.group(1).split() if subxacts else [])})
        elif tx != "0":
            wrote.add(tx)
    writing = sum(1 for xids in commits if xids & wrote)
    return {"commits": writing, "commitsWithoutWrites": len(commits) - writing}


def file_store(code: Code) -> dict[str, str]:
    return {**env(), "SWAMP_STORE_URL": "file", **code.env()}


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


# -- (costs) round trips, commits, fsyncs ---------------------------------------------------------------

SYSCALL = re.compile(r"^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\((\d+)<([^>]*)>)")
RESULT = re.compile(r"=\s+(-?\d+)")
SENDS = {"sendto", "send", "sendmsg", "write", "writev"}
RECEIVES = {"recvfrom", "recv", "recvmsg", "read"}
STATEMENT = re.compile(
    r"(?:(?<![A-Za-z])|(?<=\\[a-z]))"  # after a non-letter or an escape such as \r
    r"(?:SELECT|INSERT|UPDATE|DELETE|WITH|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|LISTEN|NOTIFY|SET|LOCK)"
    r"\b[^\\\"]*"
)


def traced(
    argv: list[str], root: Path, store: dict[str, str], calls: str
) -> tuple[list[str], dict[str, int]]:
    """Run `argv` under strace (only `calls`, -yy naming each descriptor's file or socket) and with
    SWAMP_STORE_COUNTS: the trace's lines, and the process's own counts where its swamp has them."""
    if shutil.which("strace") is None:
        raise SystemExit(
            "the costs section counts with strace, which is not installed: apt-get install strace"
        )
    with tempfile.TemporaryDirectory(prefix="swamp-bench-trace-") as folder:
        trace, counts = Path(folder) / "trace", Path(folder) / "counts"
        run(
            ["strace", "-f", "-qq", "-yy", "-s", "80", "-e", f"trace={calls}", "-o", str(trace), *argv],
            root,
            {**store, "SWAMP_STORE_COUNTS": str(counts)},
        )
        own = json.loads(counts.read_text().splitlines()[-1]) if counts.exists() else {}
        own.pop("pid", None)
        return trace.read_text().splitlines(), own


def round_trips(lines: list[str]) -> tuple[int, list[str]]:
    """Round trips to PostgreSQL in a trace: replies read on a PostgreSQL socket after the client
    sent there, less one start-up exchange per connection (a farewell that waits for no reply is
    none). Requests sent together (a pipeline) count once: the client waited once. With them, the
    start of the first statement each round trip sent (what the trace shows of it)."""
    sockets: set[str] = set()
    pending: dict[str, tuple[str, str]] = {}
    last: dict[str, str] = {}
    sent: dict[str, list[str]] = {}
    statements: list[str] = []
    replies = connections = 0
    for line in lines:
        m = SYSCALL.match(line)
        if not m:
            continue
        tid = m.group(1)
        if m.group(2):  # "<... recvfrom resumed>": the call began on an earlier line
            if tid not in pending:
                continue
            name, fd = pending.pop(tid)
        else:
            name, fd = m.group(3), m.group(5)
            if name == "connect" and ".s.PGSQL." in line:
                inode = re.match(r"UNIX-STREAM:\[(\d+)", fd)
                if inode:
                    sockets.add(inode.group(1))
                    connections += 1
                continue
            if name in SENDS:
                text = STATEMENT.search(line)
                if text:
                    sent.setdefault(fd, []).append(text.group(0))
            if "<unfinished ...>" in line:
                pending[tid] = (name, fd)
                continue
        inode_match = re.match(r"UNIX-STREAM:\[(\d+)", fd)
        if not inode_match or inode_match.group(1) not in sockets:
            continue
        inode = inode_match.group(1)
        result = RESULT.findall(line)
        if not result or int(result[-1]) <= 0:
            continue  # EAGAIN and the like: nothing went either way
        if name in SENDS:
            last[inode] = "send"
        elif name in RECEIVES:
            if last.get(inode) == "send":
                replies += 1
                texts = sent.pop(fd, [])
                if texts:
                    statements.append(texts[0])
            last[inode] = "recv"
    return replies - connections, statements


def fsyncs(lines: list[str]) -> dict[str, int]:
    """fsyncs in a trace, and of them the durable writes: fsyncs of files (a folder's fsync makes a
    rename durable; it is the second half of one record write, not a write of its own)."""
    total = writes = 0
    for line in lines:
        m = SYSCALL.match(line)
        if not m or m.group(3) not in ("fsync", "fdatasync"):
            continue
        total += 1
        if not Path(m.group(5)).is_dir():
            writes += 1
    return {"fsyncs": total, "durableWrites": writes}


def median_of(samples: list[dict[str, int]]) -> dict[str, float]:
    keys = samples[0].keys() if samples else []
    return {k: statistics.median(s[k] for s in samples) for k in keys}


def costs(repeats: int, codes: list[Code]) -> dict[str, Any]:
    signal_argv = [SWAMP, "workflow", "signal", "WAIT", "--payload", PAYLOAD]
    samples: dict[str, dict[str, list[dict[str, int]]]] = {
        code.label: {
            k: []
            for k in (
                "pgSignal",
                "pgResume",
                "pgSignalOwn",
                "pgResumeOwn",
                "fileSignal",
                "fileResume",
                "fileSignalOwn",
                "fileResumeOwn",
            )
        }
        for code in codes
    }
    exchanges: dict[str, dict[str, list[str]]] = {code.label: {} for code in codes}
    with Cluster() as cluster:
        setups = {}
        try:
            for code in codes:
                pg_repo, file_repo = make_repo(REPO_FILES, code.env()), make_repo(REPO_FILES, code.env())
                pg_store, files = cluster.store(f"bench_costs_{code.label}", code), file_store(code)
                setups[code.label] = (
                    pg_repo,
                    pg_store,
                    open_waits(pg_repo, pg_store, repeats + 1),
                    file_repo,
                    files,
                    open_waits(file_repo, files, repeats + 1),
                )
            for code in codes:  # one untraced round each first: caches warm, nothing measured
                pg_repo, pg_store, pg_runs, file_repo, files, file_runs = setups[code.label]
                for root, store, (run_id, wait) in (
                    (pg_repo, pg_store, pg_runs[-1]),
                    (file_repo, files, file_runs[-1]),
                ):
                    run([*signal_argv[:3], wait, *signal_argv[4:]], root, store)
                    run([SWAMP, "workflow", "resume", "waiter", "--run", run_id], root, store)
            settle(cluster)
            for i in range(repeats):
                for code in turns(codes, i):
                    pg_repo, pg_store, pg_runs, file_repo, files, file_runs = setups[code.label]
                    got = samples[code.label]
                    run_id, wait = pg_runs[i]
                    before = cluster.lsn()
                    lines, own = traced(
                        [*signal_argv[:3], wait, *signal_argv[4:]], pg_repo, pg_store, "network"
                    )
                    middle = cluster.lsn()
                    trips, sent = round_trips(lines)
                    exchanges[code.label].setdefault("signal", sent)
                    got["pgSignal"].append({"roundTrips": trips, **cluster.commits_between(before, middle)})
                    got["pgSignalOwn"].append(own)
                    lines, own = traced(
                        [SWAMP, "workflow", "resume", "waiter", "--run", run_id], pg_repo, pg_store, "network"
                    )
                    after = cluster.lsn()
                    trips, sent = round_trips(lines)
                    exchanges[code.label].setdefault("continuation", sent)
                    got["pgResume"].append({"roundTrips": trips, **cluster.commits_between(middle, after)})
                    got["pgResumeOwn"].append(own)
                    run_id, wait = file_runs[i]
                    lines, own = traced(
                        [*signal_argv[:3], wait, *signal_argv[4:]], file_repo, files, "fsync,fdatasync"
                    )
                    got["fileSignal"].append(fsyncs(lines))
                    got["fileSignalOwn"].append(own)
                    lines, own = traced(
                        [SWAMP, "workflow", "resume", "waiter", "--run", run_id],
                        file_repo,
                        files,
                        "fsync,fdatasync",
                    )
                    got["fileResume"].append(fsyncs(lines))
                    got["fileResumeOwn"].append(own)
        finally:
            for setup in setups.values():
                remove(setup[0])
                remove(setup[3])
    figures: dict[str, Any] = {}
    for code in codes:
        got = {k: median_of(v) for k, v in samples[code.label].items()}
        figures[code.label] = {
            "postgresql": {"signal": got["pgSignal"], "continuation": got["pgResume"]},
            "fileStore": {"signal": got["fileSignal"], "continuation": got["fileResume"]},
            "postgresqlRoundTrips": exchanges[code.label],  # what each sent first, in order (one sample)
        }
        if code.counts:

            def only(counted: dict[str, float], keys: tuple[str, ...]) -> dict[str, float]:
                return {k: v for k, v in counted.items() if k in keys}

            pg_keys, file_keys = ("roundTrips", "commits"), ("fsyncs",)
            figures[code.label]["selfCounted"] = {
                "postgresql": {
                    "signal": only(got["pgSignalOwn"], pg_keys),
                    "continuation": only(got["pgResumeOwn"], pg_keys),
                },
                "fileStore": {
                    "signal": only(got["fileSignalOwn"], file_keys),
                    "continuation": only(got["fileResumeOwn"], file_keys),
                },
            }
    return {
        "repeats": repeats,
        "counting": "round trips: replies after sends on PostgreSQL sockets (strace), less "
        "connection start-ups; commits: COMMIT records in the WAL the process wrote (pg_waldump); "
        "files: fsyncs (strace), durable writes = fsyncs of files. The same for both packages; "
        "selfCounted is SWAMP_STORE_COUNTS.",
        **figures,
        "targets": {
            "roundTripsPerSignal": compare(
                figures, lambda f: f["postgresql"]["signal"]["roundTrips"], 4, "max"
            ),
            "commitsPerContinuation": compare(
                figures, lambda f: f["postgresql"]["continuation"]["commits"], 2, "max"
            ),
            "fileDurableWritesPerContinuation": compare(
                figures, lambda f: f["fileStore"]["continuation"]["durableWrites"], 2, "max"
            ),
        },
    }


# -- (deliveries) signals per second beside pgbench -----------------------------------------------------


def burst(
    root: Path, store: dict[str, str], waits: list[str], clients: int, server: int | None = None
) -> dict[str, Any]:
    """Signal `waits` through one `swamp --jsonl`, `clients` requests in flight; the first `clients`
    warm it up (helpers started, connections made) and are not counted. The CPU time per counted
    signal of swamp (that process and its helpers) and, given the postmaster's pid `server`, of
    PostgreSQL (every process of the cluster), over the counted signals only."""
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
    swamp_cpu = cpu_seconds([proc.pid])
    server_cpu = cpu_seconds([server]) if server else 0.0
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
    ended = time.perf_counter()
    swamp_cpu = cpu_seconds([proc.pid]) - swamp_cpu
    server_cpu = cpu_seconds([server]) - server_cpu if server else 0.0
    proc.stdin.close()
    proc.wait()
    counted = total - warm
    cpu = {"swamp": round(swamp_cpu / counted * 1000, 3)}
    if server:
        cpu["postgresql"] = round(server_cpu / counted * 1000, 3)
    return {
        "signals": counted,
        "accepted": accepted,
        "errors": dict(errors),
        "signalsPerSecond": round(counted / (ended - started), 1),
        "cpuMsPerSignal": cpu,
        "_started": started,
        "_ended": ended,
    }


def pgbench(cluster: Cluster, clients: int, seconds: int) -> dict[str, Any]:
    """TPS of pgbench's simple-update script (UPDATE, SELECT, INSERT: one commit) from `clients`
    connections, on a database of its own in the same cluster (made on the first call)."""
    host, user = re.search(r"host=([^&]+)&user=([^&]+)", cluster.address).groups()  # type: ignore[union-attr]
    common = ["-h", host, "-U", user]
    if not cluster.sql("public", "SELECT 1 FROM pg_database WHERE datname = 'pgbench'"):
        cluster.sql("public", "CREATE DATABASE pgbench")
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


def public(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if not k.startswith("_")}


def deliveries(
    sizes: list[int], clients: int, seconds: int, codes: list[Code], peer: str | None
) -> dict[str, Any]:
    helpers = {"SWAMP_SIGNAL_HELPERS": str(clients)}
    out: dict[str, Any] = {"clientsInFlight": clients, "signalHelpers": clients}
    targets: dict[str, Any] = {}
    with Cluster() as cluster:
        dbos = Dbos(peer, cluster.address) if peer else None
        for size in sizes:
            repos: list[Path] = []
            try:
                prepared = {}
                for code in codes:
                    pg_store = {**cluster.store(f"bench_deliver_{code.label}_{size}", code), **helpers}
                    files = {**file_store(code), **helpers}
                    pg_repo, file_repo = make_repo(REPO_FILES, code.env()), make_repo(REPO_FILES, code.env())
                    repos += [pg_repo, file_repo]
                    prepared[code.label] = {
                        "postgresql": (
                            pg_repo,
                            pg_store,
                            [w for _, w in open_waits(pg_repo, pg_store, size + clients)],
                        ),
                        "fileStore": (
                            file_repo,
                            files,
                            [w for _, w in open_waits(file_repo, files, size + clients)],
                        ),
                    }
                floor = pgbench(cluster, clients, seconds)  # just before: the machine's load drifts
                figures: dict[str, Any] = {code.label: {} for code in codes}
                for i, store in enumerate(("postgresql", "fileStore")):
                    for code in turns(codes, i + size):
                        settle(cluster)
                        root, store_env, waits = prepared[code.label][store]
                        server = cluster.postmaster() if store == "postgresql" else None
                        figures[code.label][store] = public(burst(root, store_env, waits, clients, server))
                if dbos:
                    settle(cluster)
                    figures["dbos"] = dbos.deliveries(
                        f"deliver_{size}", size, clients, cluster.postmaster()
                    )
            finally:
                for root in repos:
                    remove(root)
            for code in codes:
                figures[code.label]["ratioToPgbench"] = round(
                    figures[code.label]["postgresql"]["signalsPerSecond"] / floor["tps"], 3
                )
            if "dbos" in figures:
                figures["dbos"]["ratioToPgbench"] = round(
                    figures["dbos"]["signalsPerSecond"] / floor["tps"], 3
                )
                targets[f"aheadOfDbos{size}"] = ahead_of_dbos(
                    figures, lambda f: f["postgresql"]["signalsPerSecond"], lambda f: f["signalsPerSecond"]
                )
            out[f"waiting{size}"] = {
                "pgbenchSimpleUpdate": floor,
                **figures,
                "afterOverBefore": gains(
                    figures, ["postgresql.signalsPerSecond", "fileStore.signalsPerSecond"]
                ),
            }
            targets[f"ratioToPgbench{size}"] = compare(figures, lambda f: f["ratioToPgbench"], 0.6, "min")
            targets[f"postgresqlGain{size}"] = compare(
                figures, lambda f: f["postgresql"]["signalsPerSecond"], 5, "gain"
            )
    out["targets"] = targets
    return out


# -- (oneHost, twoHosts) answered and continued with serve --auto-continue ------------------------------


def pg_succeeded(cluster: Cluster, schema: str) -> Callable[[], int]:
    """Succeeded runs in the schema (one connection, kept until the cluster stops)."""
    import psycopg

    conn = psycopg.connect(cluster.url(schema), autocommit=True)

    def count() -> int:
        row = conn.execute("SELECT count(*) FROM runs WHERE status = 'succeeded'").fetchone()
        return int(row[0]) if row else 0

    return count


def files_finished(root: Path) -> Callable[[], int]:
    """run_finished lines in the repository's event log, read on from where the last call stopped."""
    offsets: dict[Path, int] = {}
    seen = [0]

    def count() -> int:
        for path in sorted((root / ".swamp" / "events").glob("*.jsonl")):
            with open(path, "rb") as log:
                log.seek(offsets.get(path, 0))
                data = log.read()
            whole = data[: data.rfind(b"\n") + 1]
            offsets[path] = offsets.get(path, 0) + len(whole)
            seen[0] += whole.count(b'"event":"run_finished"')
        return seen[0]

    return count


def resumed_counts(hosts: list[Path], run_ids: list[str]) -> dict[str, int]:
    """How many times each run was continued: its journals' run_resumed lines over every host."""
    counts = Counter[str]()
    for host in hosts:
        for run_id in run_ids:
            journal = host / ".swamp" / "journal" / f"{run_id}.jsonl"
            if journal.exists():
                counts[run_id] += journal.read_text().count('"event":"run_resumed"')
    return {run_id: counts[run_id] for run_id in run_ids}


def answer_and_continue(
    hosts: list[Path],
    store: dict[str, str],
    runs: list[tuple[str, str]],
    clients: int,
    finished: Callable[[], int],
    bound: float,
    server: int | None = None,
) -> dict[str, Any]:
    """A `serve --auto-continue` in each host; `runs`' waits signalled, half through each host's
    `swamp --jsonl`, `clients` in flight in total; the clock runs from the first timed signal (after
    each --jsonl's warm-up) to the last answer (acknowledged) and to the last run finished (continued).
    Where the CPU went, per run over the whole round (warm-up included): the serves, the signalling
    --jsonl processes with their helpers, and, given the postmaster's pid `server`, PostgreSQL."""
    logs = [open(host / ".swamp" / "bench-serve.log", "wb") for host in hosts]  # noqa: SIM115
    serves = [
        subprocess.Popen(
            [SWAMP, "serve", "--auto-continue"],
            cwd=host,
            env=store,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        for host, log in zip(hosts, logs, strict=True)
    ]
    results: list[dict[str, Any]] = [{} for _ in hosts]
    try:
        time.sleep(2.0)  # imports, connections, LISTEN: a serve's start-up is not what is measured
        for host, serve in zip(hosts, serves, strict=True):
            if serve.poll() is not None:
                said = (host / ".swamp" / "bench-serve.log").read_text(errors="replace")[-500:]
                raise SystemExit(f"swamp serve exited {serve.returncode}: {said}")
        per_host = max(1, clients // len(hosts))
        helpers = {**store, "SWAMP_SIGNAL_HELPERS": str(per_host)}
        shares = [[w for _, w in runs[i :: len(hosts)]] for i in range(len(hosts))]

        def signal_share(i: int) -> None:
            results[i] = burst(hosts[i], helpers, shares[i], per_host)

        threads = [threading.Thread(target=signal_share, args=(i,)) for i in range(len(hosts))]
        serve_pids = [serve.pid for serve in serves]
        serves_cpu, server_cpu = cpu_seconds(serve_pids), cpu_seconds([server]) if server else 0.0
        for thread in threads:
            thread.start()
        total, done_at = len(runs), None
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            if finished() >= total:
                done_at = time.perf_counter()
                break
            time.sleep(0.02)
        serves_cpu = cpu_seconds(serve_pids) - serves_cpu
        server_cpu = cpu_seconds([server]) - server_cpu if server else 0.0
        for thread in threads:
            thread.join()
    finally:
        stop(serves, 60)
        for log in logs:
            log.close()
    if not all(results):
        raise SystemExit("a signalling --jsonl process did not finish")
    started = min(r["_started"] for r in results)
    signalled = sum(r["signals"] for r in results)
    times = resumed_counts(hosts, [run_id for run_id, _ in runs])
    return {
        "runs": total,
        "signalsTimed": signalled,
        "accepted": sum(r["accepted"] for r in results),
        "errors": dict(sum((Counter(r["errors"]) for r in results), Counter())),
        "acknowledgedPerSecond": round(signalled / (max(r["_ended"] for r in results) - started), 1),
        "continuedPerSecond": round(signalled / (done_at - started), 1) if done_at else None,
        "allFinishedWithin": None
        if done_at
        else f"not all finished within {bound:.0f} s ({finished()} of {total})",
        "continuedOnce": sum(1 for n in times.values() if n == 1),
        "lost": sum(1 for n in times.values() if n == 0),
        "continuedTwice": sum(1 for n in times.values() if n > 1),
        "cpuMsPerRun": {
            "serves": round(serves_cpu / total * 1000, 3),
            "signalling": round(
                sum(r["cpuMsPerSignal"]["swamp"] * r["signals"] for r in results) / signalled, 3
            ),
            **({"postgresql": round(server_cpu / total * 1000, 3)} if server else {}),
        },
    }


def rates_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Several rounds of answering and continuing (swamp's or DBOS's) as one figure: the median
    rates (each round's kept), the runs summed, the rounds that did not finish."""
    continued = [r["continuedPerSecond"] for r in results]
    return {
        "rounds": len(results),
        "runs": sum(r["runs"] for r in results),
        "acknowledgedPerSecond": round(statistics.median(r["acknowledgedPerSecond"] for r in results), 1),
        "continuedPerSecond": None if None in continued else round(statistics.median(continued), 1),
        "perRound": [[r["acknowledgedPerSecond"], r["continuedPerSecond"]] for r in results],
        "notAllFinished": [r["allFinishedWithin"] for r in results if r["allFinishedWithin"]],
    }


def dbos_rounds_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Several rounds of Dbos.answer_and_continue: rates_of, with the failed sends summed."""
    return {**rates_of(results), "errors": sum(r["errors"] for r in results)}


def rounds_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Several rounds of answer_and_continue: rates_of, with the answers and continuations summed."""
    return {
        **rates_of(results),
        "accepted": sum(r["accepted"] for r in results),
        "errors": dict(sum((Counter(r["errors"]) for r in results), Counter())),
        "continuedOnce": sum(r["continuedOnce"] for r in results),
        "lost": sum(r["lost"] for r in results),
        "continuedTwice": sum(r["continuedTwice"] for r in results),
        "cpuMsPerRun": {
            part: round(statistics.median(r["cpuMsPerRun"][part] for r in results), 3)
            for part in results[0]["cpuMsPerRun"]
        },
    }


def one_host(
    sizes: list[int], clients: int, rounds: int, codes: list[Code], peer: str | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"clientsInFlight": clients, "rounds": rounds}
    targets: dict[str, Any] = {}
    with Cluster() as cluster:
        dbos = Dbos(peer, cluster.address) if peer else None
        for size in sizes:
            for i, store in enumerate(("postgresql", "fileStore")):
                results: dict[str, list[dict[str, Any]]] = {code.label: [] for code in codes}
                peer_rounds: list[dict[str, Any]] = []
                for r in range(rounds):
                    for code in turns(codes, r + i):
                        root = make_repo(REPO_FILES, code.env())
                        try:
                            server = None
                            if store == "postgresql":
                                schema = f"bench_one_{code.label}_{size}_{r}"
                                store_env = cluster.store(schema, code)
                                finished, server = pg_succeeded(cluster, schema), cluster.postmaster()
                            else:
                                store_env, finished = file_store(code), files_finished(root)
                            runs = open_waits(root, store_env, size)
                            settle(cluster)
                            results[code.label].append(
                                answer_and_continue(
                                    [root], store_env, runs, clients, finished, 60 + size, server
                                )
                            )
                        finally:
                            remove(root)
                    if dbos and store == "postgresql":
                        settle(cluster)
                        peer_rounds.append(
                            dbos.answer_and_continue(f"one_{size}_{r}", 1, size, clients, 60 + size)
                        )
                figures = {label: rounds_of(got) for label, got in results.items()}
                if peer_rounds:
                    figures["dbos"] = dbos_rounds_of(peer_rounds)
                    targets[f"{store}{size}AheadOfDbos"] = ahead_of_dbos(
                        figures,
                        lambda f: f["continuedPerSecond"] or 0,
                        lambda f: f["continuedPerSecond"] or 0,
                    )
                out[f"{store}{size}"] = {
                    **figures,
                    "afterOverBefore": gains(figures, ["acknowledgedPerSecond", "continuedPerSecond"]),
                }
                targets[f"{store}{size}Continued"] = compare(
                    figures, lambda f: f["continuedPerSecond"] or 0, 1.5, "gain"
                )
    out["targets"] = targets
    return out


def two_hosts(size: int, clients: int, rounds: int, codes: list[Code], peer: str | None) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {code.label: [] for code in codes}
    peer_rounds: list[dict[str, Any]] = []
    with Cluster() as cluster:
        dbos = Dbos(peer, cluster.address) if peer else None
        for r in range(rounds):
            for code in turns(codes, r):
                schema = f"bench_two_{code.label}_{r}"
                store_env = cluster.store(schema, code)
                hosts = [make_repo(REPO_FILES, code.env()) for _ in range(2)]
                try:
                    runs = open_waits(hosts[0], store_env, size)
                    finished = pg_succeeded(cluster, schema)
                    settle(cluster)
                    results[code.label].append(
                        answer_and_continue(
                            hosts, store_env, runs, clients, finished, 60 + size, cluster.postmaster()
                        )
                    )
                finally:
                    for host in hosts:
                        remove(host)
            if dbos:
                settle(cluster)
                peer_rounds.append(dbos.answer_and_continue(f"two_{r}", 2, size, clients, 60 + size))
    figures = {label: rounds_of(got) for label, got in results.items()}
    ahead = {}
    if peer_rounds:
        figures["dbos"] = dbos_rounds_of(peer_rounds)
        ahead = {
            "acknowledgedAheadOfDbos": ahead_of_dbos(
                figures, lambda f: f["acknowledgedPerSecond"], lambda f: f["acknowledgedPerSecond"]
            ),
            "continuedAheadOfDbos": ahead_of_dbos(
                figures, lambda f: f["continuedPerSecond"] or 0, lambda f: f["continuedPerSecond"] or 0
            ),
        }
    return {
        "hosts": 2,
        "clientsInFlight": f"{clients} in total, {max(1, clients // 2)} per host",
        "rounds": rounds,
        **figures,
        "afterOverBefore": gains(figures, ["acknowledgedPerSecond", "continuedPerSecond"]),
        "targets": {
            "acknowledged": compare(figures, lambda f: f["acknowledgedPerSecond"], 4, "gain"),
            "continued": compare(figures, lambda f: f["continuedPerSecond"] or 0, 2.5, "gain"),
            "eachContinuedOnce": {
                label: f["continuedOnce"] == f["runs"] and f["lost"] == 0 and f["continuedTwice"] == 0
                for label, f in figures.items()
                if label != "dbos"
            },
            **ahead,
        },
    }


# -- (commandStart) -------------------------------------------------------------------------------------


def command_start(repeats: int, codes: list[Code]) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {
        code.label: {"fileStore": [], "postgresql": []} for code in codes
    }
    python_pass: list[float] = []
    with Cluster() as cluster:
        setups: dict[str, list[tuple[str, Path, dict[str, str], list[tuple[str, str]]]]] = {}
        try:
            for code in codes:
                pg_store, files = cluster.store(f"bench_start_{code.label}", code), file_store(code)
                pg_repo, file_repo = make_repo(REPO_FILES, code.env()), make_repo(REPO_FILES, code.env())
                setups[code.label] = [
                    ("fileStore", file_repo, files, open_waits(file_repo, files, repeats)),
                    ("postgresql", pg_repo, pg_store, open_waits(pg_repo, pg_store, repeats)),
                ]
            settle(cluster)
            for i in range(repeats):  # interleaved, so that noise hits all alike
                python_pass.append(timed([sys.executable, "-c", "pass"], ROOT, env()))
                for code in turns(codes, i):
                    pairs = setups[code.label]
                    for name, root, store, waits in pairs if i % 2 == 0 else pairs[::-1]:
                        samples[code.label][name].append(
                            timed(
                                [SWAMP, "workflow", "signal", waits[i][1], "--payload", PAYLOAD], root, store
                            )
                        )
        finally:
            for pairs in setups.values():
                for _, root, _, _ in pairs:
                    remove(root)
    figures: dict[str, Any] = {}
    for code in codes:
        medians = {k: median_ms(v) for k, v in samples[code.label].items()}
        figures[code.label] = {
            "signalMedianMs": medians,
            "ratio": round(medians["postgresql"] / medians["fileStore"], 3),
        }
    return {
        "repeats": repeats,
        "pythonPassMedianMs": median_ms(python_pass),
        **figures,
        "afterOverBefore": gains(figures, ["signalMedianMs.postgresql", "signalMedianMs.fileStore"]),
        "targets": {"postgresqlOverFiles": compare(figures, lambda f: f["ratio"], 1.5, "max")},
    }


# -- (runStart) -----------------------------------------------------------------------------------------


def started_per_second(root: Path, store: dict[str, str], count: int, offset: int) -> float:
    """Runs started per second, opening `count` waits through one `swamp --jsonl`."""
    started = time.perf_counter()
    open_waits(root, store, count, offset=offset)
    return count / (time.perf_counter() - started)


def run_start(waiting: int, batch: int, codes: list[Code]) -> dict[str, Any]:
    """Runs started per second through one `swamp --jsonl` (`batch` at a time, each suspending at
    its wait), first in an empty store, then beside `waiting` runs already waiting there."""
    figures: dict[str, Any] = {}
    with Cluster() as cluster:
        for code in codes:
            stores = {
                "postgresql": cluster.store(f"bench_runstart_{code.label}", code),
                "fileStore": file_store(code),
            }
            got: dict[str, dict[str, float]] = {}
            for name, store in stores.items():
                root = make_repo(REPO_FILES, code.env())
                try:
                    empty = started_per_second(root, store, batch, 0)
                    open_waits(root, store, waiting - batch, offset=batch)
                    settle(cluster)
                    beside = started_per_second(root, store, batch, waiting)
                finally:
                    remove(root)
                got[name] = {
                    "emptyPerSecond": round(empty, 1),
                    "besideWaitingPerSecond": round(beside, 1),
                    "ratio": round(beside / empty, 3),
                }
            figures[code.label] = got
    return {
        "waiting": waiting,
        "batch": batch,
        **figures,
        "afterOverBefore": gains(
            figures, [f"{name}.besideWaitingPerSecond" for name in ("postgresql", "fileStore")]
        ),
        "targets": {
            "postgresqlBesideWaitingOverEmpty": compare(
                figures, lambda f: f["postgresql"]["ratio"], 0.8, "min"
            )
        },
    }


# -- (history) ------------------------------------------------------------------------------------------

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


def history(finished: int, repeats: int, codes: list[Code]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with Cluster() as cluster:
        prepared: dict[str, dict[str, tuple[Path, dict[str, str], list[tuple[str, str]]]]] = {}
        rows: dict[str, dict[str, int]] = {}
        try:
            for code in codes:
                schemas = {name: f"bench_history_{name}_{code.label}" for name in ("empty", "full")}
                stores = {name: cluster.store(schema, code) for name, schema in schemas.items()}
                repos = {name: make_repo(REPO_FILES, code.env()) for name in stores}
                prepared[code.label] = {name: (repos[name], stores[name], []) for name in stores}
                full_root, full = repos["full"], stores["full"]
                [(template, wait_id)] = open_waits(full_root, full, 1, offset=-1)
                run([SWAMP, "workflow", "signal", wait_id, "--payload", PAYLOAD], full_root, full)
                run([SWAMP, "workflow", "resume", "waiter", "--run", template], full_root, full)
                rows[code.label] = clone_history(cluster, schemas["full"], template, finished)
                clone = cluster.sql(
                    schemas["full"], "SELECT run_id FROM runs WHERE run_id <> %s LIMIT 1", template
                )
                shown = json.loads(
                    run([SWAMP, "workflow", "history", "get", clone[0][0], "--json"], full_root, full).stdout
                )
                if shown.get("status") != "succeeded":  # a clone swamp cannot read would measure nothing real
                    raise SystemExit(f"a cloned run does not read back as a finished run: {shown}")
                for name in stores:
                    prepared[code.label][name][2].extend(
                        open_waits(repos[name], stores[name], repeats, offset=1_000_000)
                    )
            samples = {
                code.label: {name: {"waits": [], "signal": [], "resume": []} for name in ("empty", "full")}
                for code in codes
            }  # type: ignore[var-annotated]
            settle(cluster)
            for i in range(repeats):
                for code in turns(codes, i):
                    for name in ("empty", "full") if i % 2 == 0 else ("full", "empty"):
                        root, store, waits = prepared[code.label][name]
                        run_id, wait = waits[i]
                        got = samples[code.label][name]
                        got["waits"].append(timed([SWAMP, "workflow", "waits", "--json"], root, store))
                        got["signal"].append(
                            timed([SWAMP, "workflow", "signal", wait, "--payload", PAYLOAD], root, store)
                        )
                        got["resume"].append(
                            timed([SWAMP, "workflow", "resume", "waiter", "--run", run_id], root, store)
                        )
        finally:
            for setup in prepared.values():
                for root, _, _ in setup.values():
                    remove(root)
    for code in codes:
        base = {k: median_ms(v) for k, v in samples[code.label]["empty"].items()}
        loaded = {k: median_ms(v) for k, v in samples[code.label]["full"].items()}
        figures[code.label] = {
            "emptyMs": base,
            "withHistoryMs": loaded,
            "ratio": {k: round(loaded[k] / base[k], 3) for k in base},
        }
    return {
        "finishedRuns": finished,
        "rowsInTheFullSchema": rows,
        "repeats": repeats,
        **figures,
        "afterOverBefore": gains(figures, [f"withHistoryMs.{k}" for k in ("waits", "signal", "resume")]),
        "targets": {
            k: compare(figures, lambda f, k=k: f["ratio"][k], 1.3, "max")
            for k in ("waits", "signal", "resume")
        },
    }


# -- the report -----------------------------------------------------------------------------------------

SECTIONS = ("costs", "deliveries", "oneHost", "twoHosts", "commandStart", "runStart", "history")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the script, not the targets")
    parser.add_argument(
        "--only", default="", help=f"comma-separated sections to run: {', '.join(SECTIONS)} (default: all)"
    )
    parser.add_argument(
        "--baseline",
        default=BASELINE,
        metavar="REV",
        help=f"the revision measured as 'before' (default {BASELINE}: main before issue 31); none",
    )
    parser.add_argument(
        "--tree",
        type=Path,
        default=ROOT,
        metavar="DIR",
        help="the checkout whose swamp package is 'after' (default: this one), e.g. another worktree",
    )
    parser.add_argument(
        "--clients", type=int, default=4, help="requests in flight, pgbench -c/-j (default 4)"
    )
    parser.add_argument(
        "--sizes", default="200,1000", help="waiting runs in deliveries and oneHost (default 200,1000)"
    )
    parser.add_argument("--two-hosts", type=int, default=200, help="runs in twoHosts (default 200)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of oneHost and twoHosts, medians reported (default 3)"
    )
    parser.add_argument(
        "--costs", type=int, default=5, help="signals and continuations counted in costs (default 5)"
    )
    parser.add_argument(
        "--no-dbos", action="store_true", help="leave out DBOS, measured beside swamp (dbos_side.py)"
    )
    parser.add_argument("--pgbench-seconds", type=int, default=10, help="pgbench -T (default 10)")
    parser.add_argument(
        "--repeats", type=int, default=15, help="samples of each command in commandStart, history"
    )
    parser.add_argument(
        "--history", type=int, default=100_000, help="finished runs in history (default 100000)"
    )
    parser.add_argument(
        "--waiting", type=int, default=2000, help="runs waiting beside those runStart starts (default 2000)"
    )
    parser.add_argument("--batch", type=int, default=500, help="runs runStart starts at a time (default 500)")
    args = parser.parse_args()
    chosen = [s for s in args.only.split(",") if s] or list(SECTIONS)
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"--only: no section {', '.join(unknown)}; choose among {', '.join(SECTIONS)}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.smoke:
        sizes, args.two_hosts, args.costs, args.pgbench_seconds, args.rounds = [12], 12, 1, 2, 1
        args.repeats, args.history, args.waiting, args.batch = 2, 200, 24, 12
    baseline = None if args.baseline.lower() == "none" else args.baseline
    with tempfile.TemporaryDirectory(prefix="swamp-bench-code-") as work:
        codes = prepare_codes(baseline, args.tree.resolve(), Path(work))
        peer, peer_said = (None, "--no-dbos") if args.no_dbos else peer_python()
        report: dict[str, Any] = {
            "benchmark": "pg",
            "smoke": args.smoke,
            "code": {code.label: code.describe() for code in codes},
            "dbos": {"version": DBOS_VERSION, "python": peer, "said": peer_said},
        }
        sections: dict[str, Callable[[], dict[str, Any]]] = {
            "costs": lambda: costs(args.costs, codes),
            "deliveries": lambda: deliveries(sizes, args.clients, args.pgbench_seconds, codes, peer),
            "oneHost": lambda: one_host(sizes, args.clients, args.rounds, codes, peer),
            "twoHosts": lambda: two_hosts(args.two_hosts, args.clients, args.rounds, codes, peer),
            "commandStart": lambda: command_start(args.repeats, codes),
            "runStart": lambda: run_start(args.waiting, args.batch, codes),
            "history": lambda: history(args.history, args.repeats, codes),
        }
        for name in SECTIONS:
            if name in chosen:
                started = time.monotonic()
                report[name] = {**sections[name](), "seconds": round(time.monotonic() - started, 1)}
    report["targets"] = {
        f"{name}.{target}": verdict
        for name in SECTIONS
        if name in report
        for target, verdict in report[name]["targets"].items()
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
