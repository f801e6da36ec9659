"""scripts/reliability --store postgresql: several hosts on one PostgreSQL store (issue 17).

Starts its own throwaway cluster (scripts/pg start, in a temporary directory; stopped and removed
at the end) and runs, each trial on a schema of its own, with two repository checkouts standing
for two hosts:

- `hosts`: two serves (--auto-continue --enforce-deadlines, one per checkout) while 16 processes
  (`swamp --jsonl`, half on each host) signal 200 waits at once, and some runs have a wait already
  past its deadline. Every run must be continued exactly once (its after-step appends its run ID
  to a file shared by both hosts: each ID once), every deadline enforced once (one wait_settled
  timed_out event per expired wait), every accepted signal settled in its record, and no advisory
  lock left once the serves stop.
- `kill-serve` / `kill-signaller`: the same with one serve, or one signalling process, killed with
  SIGKILL at a random moment. Waits whose signal was not acknowledged are signalled again; then
  every run is continued once, except those the killed serve was executing, which are left
  interrupted (`running`, claim free) and never continued twice; no lock is left.
- `restart`: the database restarted (scripts/pg restart) while 4 processes send signals one
  command at a time: a command meeting the restart answers storage_error (exit 1) with the next
  step, and is retried; afterwards every wait holds one receipt with one `accepted` audit entry
  and one wait_settled event (nothing half-written, nothing twice), and the serves, which lost
  their connections, go on and continue every run once (a run one of them was executing when
  the database went away is reported as interrupted).

Prints one JSON document (trial counts and findings) and exits 1 when anything was lost, done
twice, half-written, or left locked.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SWAMP = str(ROOT / ".venv" / "bin" / "swamp")
BOUND = 180.0  # seconds any one wait for the serves gives up after (a finding, not a hang)
SH_MODEL = """id: 5e5e5e5e-0000-4000-8000-000000000001
name: sh
type: command/shell
globalArguments: {}
methods:
  execute:
    arguments: {run: "true"}
"""


def workflow(name: str, wf_id: str, timeout: int, out: Path) -> str:
    return f"""id: {wf_id}
name: {name}
inputs: {{type: object, properties: {{k: {{type: integer}}}}}}
jobs:
  - name: main
    steps:
      - name: review
        allowFailure: true
        task: {{type: wait_for_signal, timeout: {timeout}}}
      - name: after
        dependsOn: [{{step: review, condition: {{type: completed}}}}]
        task:
          type: model_method
          modelIdOrName: sh
          methodName: execute
          inputs: {{run: "echo ${{{{ run.id }}}} >> {out}"}}
"""


@dataclass
class Findings:
    trials: int = 0
    runs: int = 0
    continued_once: int = 0
    continued_twice: int = 0
    not_continued: int = 0
    interrupted: int = 0
    deadlines: int = 0
    deadlines_enforced_once: int = 0
    signals_sent: int = 0
    signals_accepted: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    storage_errors: int = 0
    storage_error_messages: set[str] = field(default_factory=set)
    retried_ok: int = 0
    half_written: int = 0
    leftover_locks: int = 0
    tracebacks: int = 0
    seconds: float = 0.0
    violations: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        doc = {k: v for k, v in self.__dict__.items() if k not in ("refused", "storage_error_messages")}
        doc["refused"] = dict(self.refused)
        doc["storage_error_messages"] = sorted(self.storage_error_messages)[:3]
        doc["seconds"] = round(self.seconds, 1)
        return doc


class Cluster:
    def __init__(self, folder: Path):
        self.folder = folder
        done = subprocess.run(
            [str(ROOT / "scripts" / "pg"), "start", str(folder)], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"scripts/pg start failed: {done.stderr.strip()[-400:]}")
        self.address = done.stdout.strip().splitlines()[-1]

    def url(self, schema: str) -> str:
        return f"{self.address}{'&' if '?' in self.address else '?'}options=-csearch_path%3D{schema}"

    def restart(self) -> None:
        subprocess.run(
            [str(ROOT / "scripts" / "pg"), "restart", str(self.folder)], capture_output=True, check=True
        )

    def stop(self) -> None:
        subprocess.run([str(ROOT / "scripts" / "pg"), "stop", str(self.folder)], capture_output=True)

    def query(self, url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            return list(conn.execute(sql, params).fetchall())


class Trial:
    """Two checkouts of one repository on one schema, with their serves."""

    def __init__(self, base: Path, cluster: Cluster, name: str):
        self.dir = base / f"{name}-{uuid.uuid4().hex[:8]}"
        self.dir.mkdir(parents=True)
        self.cluster = cluster
        self.url = cluster.url(f"rel_{name.replace('-', '_')}_{uuid.uuid4().hex[:8]}")
        self.out = self.dir / "continued.txt"
        self.hosts = [self._checkout(f"host{i}") for i in (1, 2)]
        self.serves: list[subprocess.Popen[str]] = []

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SWAMP_")}
        return {**env, "SWAMP_STORE_URL": self.url, **extra}

    def _checkout(self, name: str) -> Path:
        path = self.dir / name
        done = subprocess.run(
            [SWAMP, "repo", "init", str(path)], env=self.env(), capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"repo init: {done.stdout}{done.stderr}")
        (path / "models" / "command" / "shell").mkdir(parents=True, exist_ok=True)
        (path / "models" / "command" / "shell" / "sh.yaml").write_text(SH_MODEL)
        (path / "workflows" / "workflow-rel.yaml").write_text(
            workflow("rel", "5e000011-0000-4000-8000-000000000001", 86400, self.out)
        )
        (path / "workflows" / "workflow-due.yaml").write_text(
            workflow("due", "5e000011-0000-4000-8000-000000000002", 60, self.out)
        )
        return path

    def jsonl(self, host: Path, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [SWAMP, "--jsonl"],
            cwd=host,
            env=self.env(**env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def start_runs(self, name: str, count: int, **env: str) -> list[tuple[str, str]]:
        """(runId, waitId) of `count` new runs of `name`, started through one --jsonl process."""
        requests = [
            {"type": "workflow.run", "id": f"r{i}", "payload": {"workflow": name, "inputs": {"k": i}}}
            for i in range(count)
        ]
        out, _ = self.jsonl(self.hosts[0], **env).communicate(lines_of(requests), timeout=BOUND)
        found = []
        for frame in map(json.loads, out.splitlines()):
            if frame["type"] == "workflow.run":
                data = frame["payload"]["data"]
                found.append((data["id"], data["waits"][0]["waitId"]))
        if len(found) != count:
            raise RuntimeError(f"started {len(found)} of {count} runs")
        return found

    def start_serves(self) -> None:
        for i, host in enumerate(self.hosts):
            self.serves.append(
                subprocess.Popen(
                    [
                        SWAMP,
                        "serve",
                        "--auto-continue",
                        "--enforce-deadlines",
                        "--log-file",
                        str(self.dir / f"serve{i}.log"),
                    ],
                    cwd=host,
                    env=self.env(),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            )

    def stop_serves(self) -> None:
        for serve in self.serves:
            if serve.poll() is None:
                serve.send_signal(signal.SIGTERM)
        for serve in self.serves:
            try:
                serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait()

    def signal_all(self, waits: list[str], processes: int, kill_one: int | None = None) -> dict[str, str]:
        """Send each wait a signal through `processes` --jsonl processes at once (half per host);
        `kill_one`: SIGKILL the first once so many of its signals committed (mid-burst, maybe
        mid-transaction). Returns waitId -> outcome."""
        shares = [waits[i::processes] for i in range(processes)]
        procs = [self.jsonl(self.hosts[i % 2]) for i in range(len(shares))]
        answers: list[tuple[str, str]] = [("", "")] * len(procs)

        def talk(index: int) -> None:
            requests = [
                {"type": "workflow.signal", "id": w, "payload": {"waitId": w, "payload": 1}}
                for w in shares[index]
            ]
            try:
                answers[index] = procs[index].communicate(lines_of(requests), timeout=BOUND)
            except (OSError, ValueError):  # killed while it was read
                answers[index] = ("", "")

        talkers = [threading.Thread(target=talk, args=(i,)) for i in range(len(procs))]
        for talker in talkers:
            talker.start()
        if kill_one is not None:
            first = shares[0]
            self.when(lambda: self.settled(first) >= kill_one, procs[0].kill).join(BOUND)
        for talker in talkers:
            talker.join(BOUND)
        outcomes: dict[str, str] = {}
        for out, err in answers:
            if "Traceback" in err:
                outcomes["traceback"] = err[-300:]
            for frame in map(json.loads, out.splitlines()):
                if frame["type"] == "workflow.signal":
                    outcomes[frame["id"]] = "accepted"
                elif frame["type"] == "error" and frame["id"]:
                    outcomes[frame["id"]] = frame["error"]["code"]
        return outcomes

    def settled(self, waits: list[str]) -> int:
        """How many of `waits` hold a receipt (their signal committed)."""
        return len(waits) - len(self.open_waits(waits)) if waits else 0

    def when(self, ready: Any, act: Any) -> threading.Thread:
        """Run `act()` once `ready()` holds (checked every 50 ms, BOUND at most)."""

        def watch() -> None:
            deadline = time.monotonic() + BOUND
            while time.monotonic() < deadline:
                try:
                    if ready():
                        break
                except Exception:  # the database restarting: look again
                    pass
                time.sleep(0.05)
            act()

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread

    def statuses(self) -> Counter[str]:
        return Counter(s for (s,) in self.cluster.query(self.url, "SELECT status FROM runs"))

    def settle(self, total: int) -> bool:
        """Wait until no run is suspended or running with its claim held (BOUND at most). The
        claim is the advisory lock keyed by `<schema>:<runId>` (a serve holds other advisory
        locks for as long as it lives: its announcements)."""
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            rows = self.cluster.query(
                self.url,
                "SELECT count(*) FROM runs r WHERE r.status = 'suspended' OR r.status = 'running' AND "
                "EXISTS (SELECT 1 FROM pg_locks l, (SELECT hashtextextended(current_schema() || ':' || "
                "r.run_id, 0) AS key) k WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
                "AND l.classid::bigint = ((k.key >> 32) & 4294967295) "
                "AND l.objid::bigint = (k.key & 4294967295))",
            )
            if rows[0][0] == 0:
                return True
            time.sleep(0.3)
        return False

    def open_waits(self, waits: list[str]) -> list[str]:
        rows = self.cluster.query(self.url, "SELECT record FROM runs WHERE status = 'suspended'")
        still = set()
        for (record,) in rows:
            for job in json.loads(record)["jobs"]:
                for step in job["steps"]:
                    if step.get("status") == "waiting" and step.get("wait"):
                        still.add(step["wait"]["waitId"])
        return [w for w in waits if w in still]

    def check(self, findings: Findings, runs: list[tuple[str, str]], due: list[str]) -> None:
        lines = Counter(self.out.read_text().split()) if self.out.exists() else Counter()
        records = {
            r: (s, json.loads(rec))
            for r, s, rec in self.cluster.query(self.url, "SELECT run_id, status, record FROM runs")
        }
        interrupted = {r for r, (s, _) in records.items() if s == "running"}
        for run_id, _ in runs:
            findings.runs += 1
            seen = lines.get(run_id, 0)
            if seen > 1:
                findings.continued_twice += 1
                findings.violations.append(f"run {run_id} continued {seen} times")
            elif run_id in interrupted:
                findings.interrupted += 1
            elif seen == 1:
                findings.continued_once += 1
            else:
                findings.not_continued += 1
                findings.violations.append(f"run {run_id} ({records[run_id][0]}) was never continued")
        timed_out = Counter(
            run_id
            for run_id, body in self.cluster.query(
                self.url, "SELECT run_id, body FROM events WHERE kind = 'wait_settled'"
            )
            if json.loads(body).get("outcome") == "timed_out"
        )
        for run_id in due:
            findings.deadlines += 1
            if timed_out.get(run_id) == 1:
                findings.deadlines_enforced_once += 1
            else:
                findings.violations.append(
                    f"run {run_id}: its deadline was enforced {timed_out.get(run_id, 0)} times"
                )
        # Nothing half-written: a receipt in a record has exactly one `accepted` audit entry.
        accepted = Counter(
            json.loads(entry).get("waitId")
            for (entry,) in self.cluster.query(self.url, "SELECT entry FROM audit")
            if json.loads(entry).get("code") == "accepted"
        )
        for _, (_, record) in records.items():
            for job in record["jobs"]:
                for step in job["steps"]:
                    wait = step.get("wait") or {}
                    if wait.get("receipt") and accepted.get(wait["waitId"]) != 1:
                        findings.half_written += 1
                        entries = accepted.get(wait["waitId"], 0)
                        findings.violations.append(f"wait {wait['waitId']}: receipt, {entries} audit entries")
        self.stop_serves()
        locks = self.cluster.query(self.url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")[0][
            0
        ]
        findings.leftover_locks += locks
        if locks:
            findings.violations.append(f"{locks} advisory lock(s) held after every process stopped")
        for log in self.dir.glob("serve*.log"):
            if "Traceback" in log.read_text():
                findings.tracebacks += 1
                findings.violations.append(f"{log.name}: a traceback")


def lines_of(requests: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in requests)


def trial_hosts(
    base: Path,
    cluster: Cluster,
    findings: Findings,
    runs: int,
    due: int,
    signallers: int,
    kill: str | None,
    rng: random.Random,
) -> None:
    trial = Trial(base, cluster, kill or "hosts")
    try:
        started = trial.start_runs("rel", runs)
        past = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
        late = trial.start_runs("due", due, SWAMP_NOW=past)
        trial.start_serves()
        waits = [w for _, w in started]
        killer = None
        if kill == "kill-serve":
            # Once some runs were continued: the serve may be executing one, or saving it.
            enough = rng.randrange(1, max(2, len(waits) // 3))
            killer = trial.when(
                lambda: trial.out.exists() and len(trial.out.read_text().split()) >= enough,
                trial.serves[0].kill,
            )
        outcomes = trial.signal_all(
            waits, signallers, rng.uniform(0.2, 1.5) if kill == "kill-signaller" else None
        )
        if killer is not None:
            killer.join()
        findings.signals_sent += len(waits)
        findings.signals_accepted += sum(1 for w in waits if outcomes.get(w) == "accepted")
        findings.refused.update(v for k, v in outcomes.items() if v != "accepted" and k != "traceback")
        if "traceback" in outcomes:
            findings.tracebacks += 1
            findings.violations.append(f"a signaller: {outcomes['traceback']}")
        if kill == "kill-serve":  # the surviving host's serve goes on; a restarted one would too
            trial.serves = trial.serves[1:]
        retry = trial.open_waits(waits)  # a killed signaller's unsent signals: sent again
        if retry:
            again = trial.signal_all(retry, 1)
            findings.refused.update(v for v in again.values() if v != "accepted")
        if not trial.settle(len(started) + len(late)):
            findings.violations.append(
                f"{kill or 'hosts'}: runs still open after {BOUND:g}s: {dict(trial.statuses())}"
            )
        acknowledged = [w for w in waits if outcomes.get(w) == "accepted"]
        for wait_id in trial.open_waits(acknowledged):
            findings.violations.append(f"wait {wait_id}: an acknowledged signal was lost")
        trial.check(findings, started + late, [r for r, _ in late])
        findings.trials += 1
    finally:
        trial.stop_serves()


def trial_restart(base: Path, cluster: Cluster, findings: Findings, runs: int, rng: random.Random) -> None:
    trial = Trial(base, cluster, "restart")
    try:
        started = trial.start_runs("rel", runs)
        trial.start_serves()
        waits = [w for _, w in started]
        shares = [waits[i::4] for i in range(4)]
        lock = threading.Lock()

        def signaller(index: int, share: list[str]) -> None:
            for wait_id in share:
                first = True
                while True:
                    done = subprocess.run(
                        [SWAMP, "workflow", "signal", wait_id, "--payload", "1", "--json"],
                        cwd=trial.hosts[index % 2],
                        env=trial.env(),
                        capture_output=True,
                        text=True,
                        timeout=BOUND,
                    )
                    code = (
                        (json.loads(done.stdout).get("error") or {}).get("code")
                        if done.stdout.strip()
                        else None
                    )
                    with lock:
                        if "Traceback" in done.stderr:
                            findings.tracebacks += 1
                            findings.violations.append(f"signal {wait_id}: traceback")
                        if done.returncode == 0:
                            findings.signals_accepted += 1
                            findings.retried_ok += 0 if first else 1
                            break
                        if code == "wait_settled" and not first:  # committed; its answer was lost
                            findings.retried_ok += 1
                            break
                        if code in ("storage_error", "claim_timeout"):
                            findings.storage_errors += code == "storage_error"
                            if code == "storage_error":
                                findings.storage_error_messages.add(
                                    json.loads(done.stdout)["error"]["message"]
                                )
                                if done.returncode != 1:
                                    findings.violations.append(f"storage_error with exit {done.returncode}")
                        else:
                            findings.violations.append(f"signal {wait_id}: exit {done.returncode} {code}")
                            break
                    first = False
                    time.sleep(0.2)

        threads = [threading.Thread(target=signaller, args=(i, s)) for i, s in enumerate(shares)]
        for thread in threads:
            thread.start()
        enough = rng.randrange(2, max(3, len(waits) // 2))  # mid-burst: some signals in, more to come
        trial.when(lambda: trial.settled(waits) >= enough, cluster.restart).join(BOUND)
        for thread in threads:
            thread.join(BOUND)
        findings.signals_sent += len(waits)
        if not trial.settle(len(started)):
            findings.violations.append(f"restart: runs still open after {BOUND:g}s: {dict(trial.statuses())}")
        trial.check(findings, started, [])
        findings.trials += 1
    finally:
        trial.stop_serves()


def main(quick: bool, seed: int | None) -> dict[str, Any]:
    seed = seed if seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    base = Path(
        tempfile.mkdtemp(prefix="swamp-rel-pg-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    )
    os.chmod(base, 0o755)  # as root the cluster runs as `postgres`, which must reach its folder
    cluster = Cluster(base / "cluster")
    report: dict[str, Any] = {"store": "postgresql", "seed": seed, "plan": "quick" if quick else "default"}
    try:
        plan = [
            (
                "hosts",
                lambda f: trial_hosts(
                    base, cluster, f, 40 if quick else 200, 4 if quick else 20, 16, None, rng
                ),
                1,
            ),
            (
                "kill-serve",
                lambda f: trial_hosts(base, cluster, f, 20 if quick else 60, 2, 4, "kill-serve", rng),
                1 if quick else 3,
            ),
            (
                "kill-signaller",
                lambda f: trial_hosts(base, cluster, f, 20 if quick else 60, 2, 4, "kill-signaller", rng),
                1 if quick else 3,
            ),
            (
                "restart",
                lambda f: trial_restart(base, cluster, f, 12 if quick else 40, rng),
                1 if quick else 2,
            ),
        ]
        trials = {}
        for name, run, count in plan:
            findings = Findings()
            began = time.monotonic()
            for _ in range(count):
                try:
                    run(findings)
                except Exception as exc:  # a trial that cannot finish is a finding
                    findings.violations.append(
                        f"{name}: the trial itself failed: {type(exc).__name__}: {exc}"
                    )
            findings.seconds = time.monotonic() - began
            trials[name] = findings.as_json()
            print(
                f"reliability (postgresql): {name}: {findings.trials} trials, "
                f"{len(findings.violations)} violations",
                file=__import__("sys").stderr,
                flush=True,
            )
        report["trials"] = trials
        report["ok"] = all(not t["violations"] for t in trials.values())
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)
    return report
