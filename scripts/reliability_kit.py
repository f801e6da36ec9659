"""Shared machinery for the reliability tests (tests/test_reliability_*.py) and scripts/reliability.

Repositories are made in process (fast); the commands under test run as real `swamp` processes.
Every trial returns a Tally: what was accepted, what was refused (by code), and every sign of
damage — lost updates, torn records, leftover claims, tracebacks and broken wait invariants.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
SWAMP = str(Path(sys.executable).with_name("swamp"))
PYTHON = sys.executable
FAULTY = str(ROOT / "scripts" / "reliability_faulty.py")
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TRACEBACK = "Traceback (most recent call last)"
SCRUBBED = (
    "SWAMP_REPO_DIR",
    "SWAMP_NOW",
    "SWAMP_ACTOR",
    "SWAMP_DEBUG",
    "SWAMP_MAX_CONCURRENT_STEPS",
    "SWAMP_CLAIM_TIMEOUT",
)

ECHO_EXTENSION = '''\
"""Test model type: `echo` returns its arguments."""


def echo(args, ctx):
    return {"args": args}


model = {
    "type": "@rel/echo",
    "version": "1",
    "description": "Echo arguments back",
    "methods": {
        "echo": {"description": "Return the arguments", "arguments": {"type": "object"}, "execute": echo},
    },
}
'''
ECHO_MODEL = {
    "id": "5e5e5e5e-0000-4000-8000-0000000000e1",
    "name": "echo",
    "type": "@rel/echo",
    "globalArguments": {},
    "methods": {},
}
SH_MODEL = {
    "id": "5e5e5e5e-0000-4000-8000-0000000000e2",
    "name": "sh",
    "type": "command/shell",
    "globalArguments": {},
    "methods": {"execute": {"arguments": {"run": "true"}}},
}


# -- time --------------------------------------------------------------------------------------


def iso(moment: dt.datetime) -> str:
    """An ISO-8601 UTC instant with microseconds, as SWAMP_NOW takes it."""
    return moment.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def at(seconds: float) -> str:
    return iso(T0 + dt.timedelta(seconds=seconds))


def parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- repositories and workflows ------------------------------------------------------------------


def init_repo(path: Path) -> Path:
    from swamp.protocol.requests import handle

    handle("repo.init", {"path": str(path)})
    for model in (ECHO_MODEL, SH_MODEL):
        folder = path / "models" / model["type"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{model['name']}.yaml").write_text(json.dumps(model), encoding="utf-8")
    (path / "extensions" / "models" / "rel_echo.py").write_text(ECHO_EXTENSION, encoding="utf-8")
    return path.resolve()


def write_workflow(root: Path, name: str, jobs: list[dict[str, Any]], **top: Any) -> str:
    """Every string double-quoted (the escapes carry any character exactly), numbers as YAML reads them."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style='"'))
    doc = {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"swamp-rel/{root}/{name}")), "name": name, **top}
    doc["jobs"] = jobs
    path = root / "workflows" / f"workflow-{name}.yaml"
    text = yaml.dump(doc, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1 << 30)
    path.write_text(text, encoding="utf-8")
    return name


def wait_step(name: str, timeout: float = 3600, schema: Any = None, **extra: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"type": "wait_for_signal", "timeout": timeout}
    if schema is not None:
        task["schema"] = schema
    return {"name": name, "task": task, **extra}


def gate_step(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "task": {"type": "manual_approval", "prompt": "go?"}, **extra}


def echo_step(name: str, inputs: dict[str, Any] | str, **extra: Any) -> dict[str, Any]:
    task = {"type": "model_method", "modelIdOrName": "echo", "methodName": "echo", "inputs": inputs}
    return {"name": name, "task": task, **extra}


def sh_step(name: str, run: str, **extra: Any) -> dict[str, Any]:
    task = {"type": "model_method", "modelIdOrName": "sh", "methodName": "execute", "inputs": {"run": run}}
    return {"name": name, "task": task, **extra}


def dep(step: str, kind: str = "succeeded") -> dict[str, Any]:
    return {"step": step, "condition": {"type": kind}}


def jdep(job: str, kind: str = "succeeded") -> dict[str, Any]:
    return {"job": job, "condition": {"type": kind}}


def job(name: str, *steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "steps": list(steps), **extra}


# -- driving swamp -------------------------------------------------------------------------------


class Refused(Exception):
    def __init__(self, code: str, message: str, details: dict[str, Any]):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details


@contextlib.contextmanager
def clock(now: str | None) -> Iterator[None]:
    old = os.environ.get("SWAMP_NOW")
    if now is None:
        os.environ.pop("SWAMP_NOW", None)
    else:
        os.environ["SWAMP_NOW"] = now
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SWAMP_NOW", None)
        else:
            os.environ["SWAMP_NOW"] = old


def call(root: Path, request: str, payload: dict[str, Any] | None = None, *, now: str | None = None) -> Any:
    """One request through the protocol layer, in this process. Refusals raise Refused."""
    from swamp.domain.errors import SwampError
    from swamp.protocol.requests import handle

    with clock(now or at(0)):
        try:
            return handle(request, {**(payload or {}), "repoDir": str(root)})
        except SwampError as exc:
            raise Refused(exc.code, exc.message, exc.details) from None


def attempt(
    root: Path, request: str, payload: dict[str, Any] | None = None, *, now: str | None = None
) -> Any:
    """Like call, but a refusal comes back as {"error": {code, message, details}}."""
    try:
        return call(root, request, payload, now=now)
    except Refused as exc:
        return {"error": {"code": exc.code, "message": exc.message, "details": exc.details}}


class Result(NamedTuple):
    code: int
    out: str
    err: str
    json: Any


def env_for(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED and not k.startswith("HYPOTHESIS")}
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    return env


def _parsed(out: str) -> Any:
    try:
        return json.loads(out)
    except ValueError:
        return None


def cli(
    root: Path,
    *args: str,
    now: str | None = None,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
    timeout: float = 120,
    program: list[str] | None = None,
) -> Result:
    extra = {"SWAMP_NOW": now or at(0), **(env or {})}
    done = subprocess.run(
        [*(program or [SWAMP]), *args],
        cwd=str(root),
        env=env_for(extra),
        input=input,
        capture_output=True,
        timeout=timeout,
    )
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    return Result(done.returncode, out, err, _parsed(out))


def spawn(
    root: Path, *args: str, now: str | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A swamp process in its own process group (so a kill takes its children too)."""
    extra = {"SWAMP_NOW": now or at(0), **(env or {})}
    return subprocess.Popen(
        [SWAMP, *args],
        cwd=str(root),
        env=env_for(extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen[bytes], timeout: float = 120) -> Result:
    out_b, err_b = proc.communicate(timeout=timeout)
    out, err = out_b.decode("utf-8", "replace"), err_b.decode("utf-8", "replace")
    return Result(proc.returncode, out, err, _parsed(out))


def kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def run_many(procs: list[subprocess.Popen[bytes]], timeout: float = 120) -> list[Result]:
    return [finish(p, timeout) for p in procs]


def error_code(result: Result) -> str | None:
    doc = result.json
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        return str(doc["error"].get("code"))
    return None


# -- looking at the datastore ----------------------------------------------------------------------


def record_files(root: Path) -> list[Path]:
    base = root / ".swamp" / "workflow-runs"
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob("*/*.json") if not p.name.startswith("."))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every run record, byte for byte."""
    return {str(p.relative_to(root)): p.read_bytes() for p in record_files(root)}


def load_record(path: Path) -> dict[str, Any]:
    """A record as swamp reads it; raises if it is torn or unreadable."""
    from swamp.domain.run import WorkflowRun

    data = json.loads(path.read_bytes())
    WorkflowRun.from_dict(data, str(path))
    return data  # type: ignore[no-any-return]


def records(root: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """(readable records, paths of torn/unreadable ones)."""
    good, torn = [], []
    for path in record_files(root):
        try:
            good.append(load_record(path))
        except Exception:  # any failure to read back is a torn record
            torn.append(str(path))
    return good, torn


def the_run(root: Path, run_id: str) -> dict[str, Any]:
    for path in record_files(root):
        if path.stem == run_id:
            return load_record(path)
    raise AssertionError(f"no record for run {run_id}")


def steps_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for j in doc["jobs"] for s in j["steps"]]


def step_named(doc: dict[str, Any], name: str) -> dict[str, Any]:
    for step in steps_of(doc):
        if step["name"] == name:
            return step
    raise AssertionError(f"no step {name} in run {doc['id']}: {[s['name'] for s in steps_of(doc)]}")


def waits_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["wait"]["waitId"]: s for s in steps_of(doc) if s.get("wait")}


TERMINAL = {"succeeded", "failed", "cancelled"}


def violations(doc: dict[str, Any]) -> list[str]:
    """Broken wait invariants of one record (empty when all hold)."""
    from swamp.domain.waits import payload_digest

    found = []
    run = doc["id"][:8]
    for step in steps_of(doc):
        where = f"run {run} step {step['name']}"
        if doc["status"] in TERMINAL and step["status"] in ("waiting", "waiting_approval"):
            found.append(f"{where}: {step['status']} in a {doc['status']} run")
        wait = step.get("wait")
        if not wait:
            continue
        receipt, outcome = wait.get("receipt"), wait.get("outcome")
        if step["status"] == "waiting":
            if receipt is not None or outcome is not None:
                found.append(f"{where}: waiting but settled ({outcome}, receipt {receipt is not None})")
            continue
        if outcome is None:
            found.append(f"{where}: {step['status']} with an unsettled wait")
        if (outcome == "received") != (receipt is not None):
            found.append(f"{where}: outcome {outcome} with receipt {receipt is not None}")
        if outcome == "received":
            outputs = step.get("outputs") or {}
            if step["status"] != "succeeded":
                found.append(f"{where}: received but {step['status']}")
            signed = ("id", "waitId", "receivedAt", "submittedBy", "onBehalfOf")
            if outputs.get("signal") != {k: receipt[k] for k in signed if k in receipt}:
                found.append(f"{where}: outputs.signal differs from the receipt")
            if payload_digest(outputs.get("payload")) != receipt.get("payloadSha256"):
                found.append(f"{where}: stored payload does not match the receipt digest")
        elif outcome in ("timed_out", "cancelled", "rejected") and step["status"] != "failed":
            found.append(f"{where}: outcome {outcome} but {step['status']}")
    return found


def claim_held(root: Path, run_id: str) -> bool:
    """Whether some process holds the run's claim right now (a non-blocking flock probe)."""
    import fcntl

    path = root / ".swamp" / "locks" / f"{run_id}.lock"
    if not path.exists():
        return False
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return False


def has_traceback(*texts: str) -> bool:
    return any(TRACEBACK in t or "\nTraceback" in t for t in texts)


# -- tallies --------------------------------------------------------------------------------------


@dataclass
class Tally:
    trials: int = 0
    accepted: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    torn: int = 0
    leftover_claims: int = 0
    tracebacks: int = 0
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> Tally:
        self.trials += other.trials
        self.accepted += other.accepted
        self.refused.update(other.refused)
        self.lost += other.lost
        self.torn += other.torn
        self.leftover_claims += other.leftover_claims
        self.tracebacks += other.tracebacks
        self.violations += other.violations
        self.notes += other.notes
        return self

    def saw(self, result: Result) -> None:
        """Count one command's answer (JSON mode)."""
        if has_traceback(result.out, result.err):
            self.tracebacks += 1
            self.notes.append("traceback: " + (result.err or result.out)[-400:])
        code = error_code(result)
        if result.code == 0 and code is None:
            self.accepted += 1
        else:
            self.refused[code or f"exit {result.code}"] += 1

    def inspect(self, root: Path, run_ids: list[str] | None = None) -> list[dict[str, Any]]:
        """Torn records, broken invariants and claims still held, for every run of the repo."""
        docs, torn = records(root)
        self.torn += len(torn)
        self.violations += [f"torn record {t}" for t in torn]
        for doc in docs:
            self.violations += violations(doc)
        for run_id in run_ids or [d["id"] for d in docs]:
            if claim_held(root, run_id):
                self.leftover_claims += 1
                self.violations.append(f"claim of run {run_id[:8]} still held")
        return docs

    @property
    def clean(self) -> bool:
        return not (self.lost or self.torn or self.leftover_claims or self.tracebacks or self.violations)

    def summary(self) -> dict[str, Any]:
        return {
            "trials": self.trials,
            "accepted": self.accepted,
            "refusedByCode": dict(sorted(self.refused.items())),
            "lostUpdates": self.lost,
            "tornRecords": self.torn,
            "leftoverClaims": self.leftover_claims,
            "tracebacks": self.tracebacks,
            "violations": len(self.violations),
        }


# -- the workflows the trials use ------------------------------------------------------------------

COUNT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["n"],
    "properties": {"n": {"type": "integer"}, "by": {"type": "string"}},
}


def one_wait_workflow(root: Path, name: str = "storm", *, gate: bool = False) -> str:
    steps = [wait_step("review", 3600, COUNT_SCHEMA)]
    if gate:
        steps.append(gate_step("gate"))
    after = echo_step("after", {"payload": "${{ steps.review.outputs.payload }}"}, dependsOn=[dep("review")])
    if gate:
        after["dependsOn"].append(dep("gate"))
    steps.append(after)
    return write_workflow(root, name, [job("main", *steps)])


def start_run(root: Path, workflow: str, inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = call(root, "workflow.run", {"workflow": workflow, "inputs": inputs or {}})
    assert doc["status"] == "suspended", doc["status"]
    return doc  # type: ignore[no-any-return]


@contextlib.contextmanager
def scratch(fallback: Path | None = None) -> Iterator[Path]:
    """A directory for throw-away repositories, on tmpfs when there is one: the datastore fsyncs
    every record, which costs ten times more on a disk, and power loss is not what is tested."""
    import shutil
    import tempfile

    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        path = Path(tempfile.mkdtemp(prefix="swamp-rel-", dir=shm))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
    else:
        base = fallback or Path(tempfile.mkdtemp(prefix="swamp-rel-"))
        base.mkdir(parents=True, exist_ok=True)
        yield base


def fresh(base: Path, label: str) -> Path:
    path = base / f"{label}-{uuid.uuid4().hex[:8]}"
    return init_repo(path)


# -- trials: concurrency ---------------------------------------------------------------------------


def trial_one_wait(base: Path, n: int, rng: random.Random) -> Tally:
    """n processes signal one wait at once: exactly one is taken, every other one is wait_settled
    with the stored receipt (and samePayload true iff its payload is the one taken)."""
    tally = Tally(trials=1)
    root = fresh(base, "one")
    run = start_run(root, one_wait_workflow(root))
    wait_id = run["waits"][0]["waitId"]
    # two senders share a payload; each acts for its own person (SWAMP_ACTOR: onBehalfOf)
    payloads = [{"n": i % max(2, n - 1), "by": f"sender{i}"} for i in range(n)]
    for i in range(n - 1):
        if payloads[i]["n"] == payloads[n - 1]["n"]:
            payloads[n - 1] = dict(payloads[i])  # the same JSON value, from another user
    users = [f"sender{i}" for i in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    procs = [
        spawn(
            root,
            "workflow",
            "signal",
            wait_id,
            "--payload",
            json.dumps(payloads[i]),
            "--json",
            now=at(1),
            env={"SWAMP_CLAIM_TIMEOUT": "60", "SWAMP_ACTOR": users[i]},
        )
        for i in order
    ]
    results = [r for _, r in sorted(zip(order, run_many(procs), strict=True))]
    for r in results:
        tally.saw(r)
    winners = [(p, r) for p, r in zip(payloads, results, strict=True) if r.code == 0]
    doc = tally.inspect(root)[0]
    step = step_named(doc, "review")
    receipt = (step.get("wait") or {}).get("receipt")
    if len(winners) != 1 or receipt is None:
        tally.lost += max(1, len(winners) - 1)
        tally.violations.append(f"one wait: {len(winners)} signals accepted, receipt {receipt}")
        return tally
    payload, won = winners[0]
    stored = {k: receipt[k] for k in ("id", "waitId", "receivedAt", "submittedBy", "onBehalfOf")}
    winner_user = users[results.index(won)]
    if receipt["onBehalfOf"] != winner_user:
        tally.violations.append(f"one wait: onBehalfOf {receipt['onBehalfOf']}, sent by {winner_user}")
    if won.json.get("signal") != stored or step["outputs"]["payload"] != payload:
        tally.lost += 1
        tally.violations.append("one wait: the accepted signal is not the stored one")
    for p, r in zip(payloads, results, strict=True):
        if r.code == 0:
            continue
        details = ((r.json or {}).get("error") or {}).get("details") or {}
        if error_code(r) != "wait_settled" or details.get("receipt") != stored:
            tally.violations.append(f"one wait: a loser got {error_code(r)} {details.get('receipt')}")
        elif details.get("samePayload") is not (p == payload):
            tally.violations.append(
                f"one wait: samePayload {details.get('samePayload')} for {p} vs {payload}"
            )
    audit = _audit(root, doc)
    if sorted(e.get("code") for e in audit) != sorted(["accepted"] + ["wait_settled"] * (n - 1)):
        tally.violations.append(f"one wait: audit trail {[e.get('code') for e in audit]}")
    return tally


def _audit(root: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    path = root / ".swamp" / "workflow-runs" / doc["workflowId"] / f"{doc['id']}.audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def foreach_workflow(root: Path, items: list[str]) -> str:
    review = wait_step(
        "review-${{ self.item }}",
        3600,
        {"type": "object", "required": ["item", "k"], "properties": {"item": {"type": "string"}}},
        forEach={"item": "item", "in": "${{ " + json.dumps(items) + " }}"},
    )
    collect = echo_step(
        "collect", {"got": {i: "${{ steps['review-" + i + "'].outputs.payload }}" for i in items}}
    )
    return write_workflow(
        root, "fan", [job("waits", review), job("after", collect, dependsOn=[jdep("waits")])]
    )


def trial_foreach(base: Path, n: int, rng: random.Random) -> Tally:
    """n waits of one run (forEach), each signalled by its own process at once: all taken, each
    step keeps its own payload, and after resume a later step reads every one of them."""
    tally = Tally(trials=1)
    root = fresh(base, "fan")
    items = [f"i{k}" for k in range(n)]
    run = start_run(root, foreach_workflow(root, items))
    by_step = {w["stepName"]: w["waitId"] for w in run["waits"]}
    if len(by_step) != n or len(set(by_step.values())) != n:
        tally.violations.append(f"forEach opened {len(by_step)} waits with {len(set(by_step.values()))} IDs")
        return tally
    sent = {}
    order = list(items)
    rng.shuffle(order)
    procs = []
    for k, item in enumerate(order):
        payload = {"item": item, "k": k, "pad": "x" * rng.randrange(0, 200)}
        sent[item] = payload
        procs.append(
            spawn(
                root,
                "workflow",
                "signal",
                by_step[f"review-{item}"],
                "--payload",
                json.dumps(payload),
                "--json",
                now=at(1),
                env={"SWAMP_CLAIM_TIMEOUT": "60"},
            )
        )
    for r in run_many(procs):
        tally.saw(r)
    doc = tally.inspect(root)[0]
    for item in items:
        step = step_named(doc, f"review-{item}")
        if step["status"] != "succeeded" or (step.get("outputs") or {}).get("payload") != sent[item]:
            tally.lost += 1
            tally.violations.append(f"forEach: review-{item} is {step['status']} with {step.get('outputs')}")
    if tally.lost:
        return tally
    done = call(root, "workflow.resume", {"workflow": "fan", "run": run["id"]}, now=at(2))
    got = step_named(done, "collect").get("outputs", {}).get("args", {}).get("got")
    if done["status"] != "succeeded" or got != sent:
        tally.lost += 1
        tally.violations.append(f"forEach: after resume the run is {done['status']}, collect saw {got}")
    return tally


RACES = ("resume", "cancel", "reject-wait", "reject-gate")


def trial_race(base: Path, kind: str, rng: random.Random) -> Tally:
    """A signal and another command at once; whichever wins, the run ends in one consistent state."""
    tally = Tally(trials=1)
    root = fresh(base, f"race-{kind}")
    gate = kind == "reject-gate"
    wf = one_wait_workflow(root, "race", gate=gate)
    run = start_run(root, wf)
    wait_id = run["waits"][0]["waitId"]
    payload = {"n": rng.randrange(1000), "by": kind}
    other = {
        "resume": ["workflow", "resume", wf, "--run", run["id"], "--json"],
        "cancel": ["workflow", "cancel", wf, "--run", run["id"], "--json"],
        "reject-wait": ["workflow", "reject", wait_id, "--json"],
        "reject-gate": ["workflow", "reject", wf, "gate", "--run", run["id"], "--json"],
    }[kind]
    env = {"SWAMP_CLAIM_TIMEOUT": "60"}
    signal_args = ["workflow", "signal", wait_id, "--payload", json.dumps(payload), "--json"]
    pair = [signal_args, other]
    if rng.random() < 0.5:
        pair.reverse()
    procs = [spawn(root, *args, now=at(1), env=env) for args in pair]
    results = dict(zip((tuple(a) for a in pair), run_many(procs), strict=True))
    sig, oth = results[tuple(signal_args)], results[tuple(other)]
    tally.saw(sig)
    tally.saw(oth)
    doc = tally.inspect(root)[0]
    step = step_named(doc, "review")
    taken = sig.code == 0
    receipt = (step.get("wait") or {}).get("receipt")
    if taken and (receipt is None or receipt["id"] != sig.json["signal"]["id"]):
        tally.lost += 1
        tally.violations.append(f"race {kind}: accepted signal missing from the record")
    if not taken and receipt is not None:
        tally.violations.append(f"race {kind}: refused signal ({error_code(sig)}) but a receipt is stored")
    if kind == "resume":
        if not taken:
            tally.violations.append(f"race resume: the signal was refused ({error_code(sig)})")
        if oth.code != 0 and error_code(oth) != "wait_open":
            tally.violations.append(f"race resume: resume got {error_code(oth)}")
        if doc["status"] == "suspended":
            doc = call(root, "workflow.resume", {"workflow": wf, "run": run["id"]}, now=at(2))
        after = (step_named(doc, "after").get("outputs") or {}).get("args", {}).get("payload")
        if taken and (doc["status"] != "succeeded" or after != payload):
            tally.lost += 1
            tally.violations.append(f"race resume: run {doc['status']}, after saw {after}")
    elif kind == "cancel":
        if doc["status"] != "cancelled" or oth.code != 0:
            tally.violations.append(f"race cancel: run {doc['status']}, cancel exit {oth.code}")
        if not taken and (error_code(sig) != "wait_settled" or step["wait"].get("outcome") != "cancelled"):
            tally.violations.append(
                f"race cancel: signal {error_code(sig)}, outcome {step['wait'].get('outcome')}"
            )
    elif kind == "reject-wait":
        if taken == (oth.code == 0):
            tally.violations.append(f"race reject-wait: signal exit {sig.code}, reject exit {oth.code}")
        expected = "suspended" if taken else "failed"
        if doc["status"] != expected:
            tally.violations.append(f"race reject-wait: run {doc['status']}, expected {expected}")
    elif kind == "reject-gate":
        if oth.code != 0 or doc["status"] != "failed":
            tally.violations.append(f"race reject-gate: reject exit {oth.code}, run {doc['status']}")
        if not taken and step["wait"].get("outcome") != "rejected":
            tally.violations.append(f"race reject-gate: outcome {step['wait'].get('outcome')}")
    return tally


# -- trials: kill -9 -------------------------------------------------------------------------------

KILL_TARGETS = ("signal", "resume", "run")


def kill_workflow(root: Path) -> str:
    """pre (a short shell step) -> review (a wait) -> mid (shell) -> second (a wait) -> after."""
    steps = [
        sh_step("pre", "sleep 0.05"),
        wait_step("review", 3600, COUNT_SCHEMA, dependsOn=[dep("pre")]),
        sh_step("mid", "sleep 0.05", dependsOn=[dep("review")]),
        wait_step("second", 3600, {"type": "object"}, dependsOn=[dep("mid")]),
        echo_step("after", {"p": "${{ steps.review.outputs.payload }}"}, dependsOn=[dep("second")]),
    ]
    return write_workflow(root, "crash", [job("main", *steps)])


def trial_kill(base: Path, target: str, rng: random.Random, window: float | None = None) -> Tally:
    """Start `target` as a real process, SIGKILL it at a random moment, then check the datastore:
    every record reads, every wait is open without a receipt or settled with one, no claim is left,
    nothing acknowledged before the kill is lost, and the next commands carry the run to its end."""
    tally = Tally(trials=1)
    root = fresh(base, f"kill-{target}")
    wf = kill_workflow(root)
    acknowledged: dict[str, dict[str, Any]] = {}
    run_id = None
    if target in ("signal", "resume"):
        run = start_run(root, wf)
        run_id = run["id"]
        first = run["waits"][0]["waitId"]
        if target == "resume":
            ack = call(root, "workflow.signal", {"waitId": first, "payload": {"n": 1}}, now=at(1))
            acknowledged[first] = ack["signal"]
            proc = spawn(root, "workflow", "resume", wf, "--run", run_id, "--json", now=at(2))
        else:
            proc = spawn(root, "workflow", "signal", first, "--payload", '{"n": 7}', "--json", now=at(1))
    else:
        proc = spawn(root, "workflow", "run", wf, "--json", now=at(0))
    delay = rng.uniform(
        0, window if window is not None else {"signal": 0.8, "resume": 1.6, "run": 1.8}[target]
    )
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    finished = proc.poll() is not None
    kill(proc)
    tally.notes.append(f"kill {target} after {delay:.3f}s ({'already finished' if finished else 'killed'})")
    docs = tally.inspect(root)
    if run_id is None:
        if not docs:
            tally.accepted += 1  # killed before the run was recorded: nothing to check further
            return tally
        run_id = docs[0]["id"]
    doc = the_run(root, run_id)
    for wait_id, signal_doc in acknowledged.items():
        receipt = waits_of(doc).get(wait_id, {}).get("wait", {}).get("receipt")
        if receipt is None or receipt["id"] != signal_doc["id"]:
            tally.lost += 1
            tally.violations.append(f"kill {target}: acknowledged signal {signal_doc['id']} lost")
    _carry_on(root, wf, run_id, tally)
    return tally


def _carry_on(root: Path, wf: str, run_id: str, tally: Tally) -> None:
    """The next commands (each trying the claim once, so a leftover claim shows as claim_timeout)
    take the run to an end: signal what is open, resume, retry an interrupted run."""
    for round_no in range(6):
        now = at(10 + round_no)
        doc = the_run(root, run_id)
        if doc["status"] in TERMINAL:
            tally.violations += violations(doc)
            return
        if doc["status"] == "suspended":
            for wait_id, step in waits_of(doc).items():
                if step["status"] == "waiting":
                    answer = attempt(
                        root,
                        "workflow.signal",
                        {"waitId": wait_id, "payload": {"n": 2}, "claimTimeout": 0},
                        now=now,
                    )
                    _count(tally, answer)
        answer = attempt(root, "workflow.resume", {"workflow": wf, "run": run_id, "claimTimeout": 0}, now=now)
        _count(tally, answer)
        code = (answer.get("error") or {}).get("code") if isinstance(answer, dict) else None
        if code == "run_not_suspended" and the_run(root, run_id)["status"] == "failed":
            tally.violations += violations(the_run(root, run_id))
            return
    tally.violations.append(
        f"run {run_id[:8]} did not finish after the kill: {the_run(root, run_id)['status']}"
    )


def _count(tally: Tally, answer: Any) -> None:
    code = (answer.get("error") or {}).get("code") if isinstance(answer, dict) else None
    if code == "claim_timeout":
        tally.leftover_claims += 1
        tally.violations.append("a claim was still held after the kill")
    elif code:
        tally.refused[code] += 1
    else:
        tally.accepted += 1


# -- trials: a fresh repository, and storage faults ------------------------------------------------


def trial_fresh_runs(base: Path, n: int, rng: random.Random) -> Tally:
    """n `workflow run` processes at once in a repository that has never run anything (so the
    active-run index is built while the runs are being recorded): every run is listed by `waits`."""
    tally = Tally(trials=1)
    root = fresh(base, "fresh")
    names = [one_wait_workflow(root, f"fresh{k}") for k in range(n)]
    rng.shuffle(names)
    results = run_many([spawn(root, "workflow", "run", name, "--json") for name in names])
    for r in results:
        tally.saw(r)
    tally.inspect(root)
    listed = call(root, "workflow.waits", {}, now=at(1))["waits"]
    started = [r.json["id"] for r in results if r.code == 0 and isinstance(r.json, dict)]
    missing = sorted(set(started) - {w["runId"] for w in listed})
    if missing or len(started) != n:
        tally.lost += len(missing) + (n - len(started))
        tally.violations.append(f"fresh repo: {len(started)}/{n} runs started, not listed: {missing}")
    return tally


STORAGE_FAULTS = {
    "enospc": "No space left on device",
    "erofs": "Read-only file system",
    "eacces": "Permission denied",
}
STORAGE_VERBS = ("signal", "resume", "cancel", "reject", "run")


def trial_storage(base: Path, fault: str, verb: str) -> Tally:
    """One command with every durable write failing: a refusal without a traceback that names the OS
    error, the old record byte-identical, no temporary file left, and the run still usable after."""
    tally = Tally(trials=1)
    root = fresh(base, f"{fault}-{verb}")
    wf = one_wait_workflow(root, "disk")
    run = start_run(root, wf)
    wait_id = run["waits"][0]["waitId"]
    if verb == "resume":
        call(root, "workflow.signal", {"waitId": wait_id, "payload": {"n": 1}}, now=at(1))
    before = snapshot(root)
    args = {
        "signal": ["workflow", "signal", wait_id, "--payload", '{"n": 5}'],
        "resume": ["workflow", "resume", wf, "--run", run["id"]],
        "cancel": ["workflow", "cancel", wf, "--run", run["id"]],
        "reject": ["workflow", "reject", wait_id],
        "run": ["workflow", "run", wf],
    }[verb]
    result = cli(root, *args, "--json", now=at(2), program=[PYTHON, FAULTY, fault])
    tally.saw(result)
    error = (result.json or {}).get("error") if isinstance(result.json, dict) else None
    if result.code == 0 or not error or STORAGE_FAULTS[fault] not in str(error.get("message")):
        tally.violations.append(f"{fault} {verb}: exit {result.code}, answer {result.out[:300]}")
    if snapshot(root) != before:
        tally.lost += 1
        tally.violations.append(f"{fault} {verb}: a failed write changed a record")
    left = [str(p) for p in (root / ".swamp").rglob("*.tmp")]
    if left:
        tally.violations.append(f"{fault} {verb}: temporary files left: {left}")
    tally.inspect(root)
    if verb == "resume":
        after = attempt(root, "workflow.resume", {"workflow": wf, "run": run["id"]}, now=at(3))
        ok = isinstance(after, dict) and after.get("status") == "succeeded"
    else:
        after = attempt(root, "workflow.signal", {"waitId": wait_id, "payload": {"n": 5}}, now=at(3))
        ok = isinstance(after, dict) and after.get("payload") == {"n": 5}
    if not ok:
        tally.violations.append(f"{fault} {verb}: the run is not usable on a healthy disk: {after}")
    return tally


# -- trials: a subscription across a serve killed mid-stream (issue 16) -------------------------------


class _Subscriber:
    """One raw socket connection to `swamp serve --socket` holding an events.subscribe; keeps the
    cursors of the event frames it read whole (a line cut short by a kill is not an event)."""

    def __init__(self, path: str, after: str):
        import socket
        import threading

        self.events: list[dict[str, Any]] = []
        self.ended: dict[str, Any] | None = None
        self.changed = threading.Condition()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.sock.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        request = {"type": "events.subscribe", "id": "s", "payload": {"after": after}}
        self.sock.sendall((json.dumps(request) + "\n").encode())
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with self.sock.makefile("rb") as reader:
            for line in reader:
                try:
                    frame = json.loads(line)
                except ValueError:
                    continue  # the last line, cut short by the kill
                with self.changed:
                    if frame.get("type") == "event":
                        self.events.append(frame["event"])
                    elif frame.get("type") == "events.subscribe":
                        self.ended = frame["payload"]["data"]
                    self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_for(self, done: Any, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not done(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
        return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def trial_serve_kill_subscription(base: Path, rng: random.Random, runs: int = 4) -> Tally:
    """A client subscribed through `swamp serve --socket` while other processes run, signal and
    resume `runs` runs; serve is killed with SIGKILL after a random number of events; a new serve
    starts on the same socket and the client subscribes again after the last cursor it read. What
    the two subscriptions streamed must be exactly the log (nothing lost, nothing twice, same
    order), and the log must hold each run's four events, matching its record."""
    import threading

    tally = Tally(trials=1)
    root = fresh(base, "sub")
    wf = one_wait_workflow(root)
    start = cli(root, "events", "--timeout", "0", "--json")
    tally.saw(start)
    path = str(root / "serve.sock")
    serve = spawn(root, "serve", "--socket", path)
    first = _Subscriber(path, start.json["cursor"])
    errors: list[str] = []

    def drive(k: int) -> None:
        try:
            ran = cli(root, "workflow", "run", wf, "--json", now=at(k))
            tally.saw(ran)
            wait_id = ran.json["waits"][0]["waitId"]
            tally.saw(cli(root, "workflow", "signal", wait_id, "--payload", json.dumps({"n": k}), "--json"))
            tally.saw(cli(root, "workflow", "resume", wf, "--run", ran.json["id"], "--json"))
        except Exception as exc:  # reported as a violation below
            errors.append(f"driver {k}: {type(exc).__name__}: {exc}")

    drivers = [threading.Thread(target=drive, args=(k,)) for k in range(runs)]
    for driver in drivers:
        driver.start()
    kill_after = rng.randrange(1, runs * 4)
    first.wait_for(lambda s: len(s.events) >= kill_after, timeout=60)
    kill(serve)
    first.wait_for(lambda s: False, timeout=0.2)  # what was in flight on the socket arrives
    first.close()
    got_first = list(first.events)
    resume_after = got_first[-1]["cursor"] if got_first else start.json["cursor"]
    tally.notes.append(f"serve killed after {len(got_first)} events (aimed at {kill_after})")
    serve = spawn(root, "serve", "--socket", path)
    second = _Subscriber(path, resume_after)
    for driver in drivers:
        driver.join(timeout=120)
    tally.violations += errors
    log = cli(root, "events", "--after", start.json["cursor"], "--timeout", "0", "--json")
    tally.saw(log)
    logged = log.json["events"] if isinstance(log.json, dict) else []
    last = logged[-1]["cursor"] if logged else None
    second.wait_for(lambda s: bool(s.events) and s.events[-1]["cursor"] == last or last == resume_after)
    kill(serve)
    second.close()
    streamed = [e["cursor"] for e in got_first + second.events]
    expected = [e["cursor"] for e in logged]
    duplicates = len(streamed) - len(set(streamed))
    missing = [c for c in expected if c not in set(streamed)]
    if duplicates:
        tally.violations.append(f"subscription: {duplicates} event(s) streamed twice across the reconnect")
    if missing:
        tally.lost += len(missing)
        tally.violations.append(f"subscription: {len(missing)} event(s) of the log never streamed")
    if not missing and not duplicates and streamed != expected:
        tally.violations.append("subscription: events streamed out of log order")
    docs = tally.inspect(root)
    for doc in docs:
        mine = [e for e in logged if e["runId"] == doc["id"]]
        kinds = [e["event"] for e in mine]
        if kinds != ["wait_opened", "run_suspended", "wait_settled", "run_finished"]:
            tally.violations.append(f"log of run {doc['id'][:8]}: {kinds}")
            continue
        receipt = step_named(doc, "review")["wait"].get("receipt") or {}
        if mine[2].get("signalId") != receipt.get("id") or mine[3]["status"] != doc["status"]:
            tally.violations.append(f"log of run {doc['id'][:8]} does not match its record")
    counts = f"streamed {len(streamed)} events ({len(got_first)} before the kill)"
    tally.notes.append(f"{counts}; the log has {len(expected)}")
    return tally

# -- trials: early signals racing the step that opens their wait (WAIT-075) -------------------------

EARLY_KILLS = (None, "run", "signal")


def early_workflow(root: Path, name: str, pre_sleep: float, sibling_sleep: float = 0.0) -> str:
    """pre (sleeps a moment) -> review (a wait, its ID reserved) and beside it `sibling` (sleeps:
    the wait is open while the run still executes, so the executor's look at the opening and its
    last look before letting the claim go are apart) -> after (echoes the payload)."""
    steps = [
        sh_step("pre", f"sleep {pre_sleep:.3f}"),
        wait_step("review", 3600, COUNT_SCHEMA, dependsOn=[dep("pre")]),
        sh_step("sibling", f"sleep {sibling_sleep:.3f}", dependsOn=[dep("pre")]),
        echo_step("after", {"payload": "${{ steps.review.outputs.payload }}"}, dependsOn=[dep("review")]),
    ]
    return write_workflow(root, name, [job("main", *steps)])


def _reserved_id(
    root: Path, workflow: str, proc: subprocess.Popen[bytes], timeout: float = 30
) -> tuple[str, str] | None:
    """(runId, the review step's reserved wait ID) as soon as the run's first record is saved."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in record_files(root):
            try:
                doc = load_record(path)
            except Exception:
                continue
            if doc.get("workflowName") != workflow:
                continue
            reserved = step_named(doc, "review").get("reservedWaitId")
            if reserved:
                return doc["id"], reserved
        if proc.poll() is not None and not record_files(root):
            return None
        time.sleep(0.002)
    return None


class _ThreadProc:
    """A run executing in a thread, seen as a process by _reserved_id."""

    def __init__(self, thread: Any):
        self.thread = thread

    def poll(self) -> int | None:
        return None if self.thread.is_alive() else 0


def early_race(
    root: Path,
    name: str,
    *,
    pre_sleep: float,
    signal_delay: float,
    sibling_sleep: float = 0.0,
    payload: dict[str, Any],
    kill: str | None = None,
    kill_after: float = 0.0,
    in_process: bool = False,
) -> tuple[Tally, dict[str, Any]]:
    """Start a run whose wait is reserved, send an early signal to it `signal_delay` seconds after
    the run's first save (before, while or after the step opens), optionally SIGKILL the run or the
    signal `kill_after` seconds later, carry the run to its end, and check: a signal acknowledged
    (exit 0) is applied exactly once with its payload unchanged (or, when a retry reset its wait,
    refused in the audit trail), a refused one never, and nothing stays held."""
    tally = Tally(trials=1)
    wf = early_workflow(root, name, pre_sleep, sibling_sleep)
    if in_process:  # the run executes in a thread of this process: no process start either
        import threading

        ran: list[Any] = []
        runner = threading.Thread(target=lambda: ran.append(attempt(root, "workflow.run", {"workflow": wf})))
        runner.start()
        run_proc: Any = _ThreadProc(runner)
    else:
        run_proc = spawn(root, "workflow", "run", wf, "--json", now=at(0))
    found = _reserved_id(root, wf, run_proc)
    if found is None:
        tally.violations.append(f"early {name}: the run never recorded its reservation")
        if not in_process:
            kill(run_proc)
        return tally, {}
    run_id, wait_id = found
    time.sleep(signal_delay)
    results: dict[str, Result] = {}
    answer: Any = None
    if in_process:  # no process start: the signal lands anywhere in the window, to the millisecond
        answer = attempt(root, "workflow.signal", {"waitId": wait_id, "payload": payload, "claimTimeout": 30})
        _count(tally, answer)
    else:
        args = ["workflow", "signal", wait_id, "--payload", json.dumps(payload), "--json"]
        sig_proc = spawn(root, *args, now=at(1), env={"SWAMP_CLAIM_TIMEOUT": "30"})
        if kill is not None:
            time.sleep(kill_after)
            globals()["kill"](run_proc if kill == "run" else sig_proc)
        if sig_proc.returncode is None:
            results["signal"] = finish(sig_proc)
            tally.saw(results["signal"])
            answer = results["signal"].json if results["signal"].code == 0 else None
    if in_process:
        runner.join(120)
        _count(tally, ran[0] if ran else {"error": {"code": "run did not finish"}})
    elif run_proc.returncode is None:
        results["run"] = finish(run_proc)
        tally.saw(results["run"])
    acknowledged = isinstance(answer, dict) and "error" not in answer and "signal" in answer
    signal_id = answer["signal"]["id"] if acknowledged else None
    _carry_early(root, wf, run_id, wait_id, tally)
    tally.inspect(root)
    doc = the_run(root, run_id)
    audit = _audit(root, doc)
    receipts = {
        s["wait"]["receipt"]["id"]: s
        for s in steps_of(doc)
        if (s.get("wait") or {}).get("receipt") is not None
    }
    accepted = Counter(e.get("signalId") for e in audit if e.get("code") == "accepted")
    outcome = {
        "acknowledged": acknowledged,
        "held": bool(acknowledged and answer.get("held")),
    }
    if signal_id is not None:
        refused_held = [
            e
            for e in audit
            if e.get("signalId") == signal_id and e.get("held") and e.get("code") != "accepted"
        ]
        if signal_id in receipts:
            after = (step_named(doc, "after").get("outputs") or {}).get("args", {}).get("payload")
            if step_named(doc, "review")["outputs"]["payload"] != payload or (
                doc["status"] == "succeeded" and after != payload
            ):
                tally.violations.append(f"early {name}: payload changed: {after!r} != {payload!r}")
            if refused_held:
                tally.violations.append(
                    f"early {name}: signal {signal_id} applied, then refused: {refused_held}"
                )
            if accepted[signal_id] != 1:
                tally.violations.append(
                    f"early {name}: signal {signal_id} accepted {accepted[signal_id]} times"
                )
            outcome["applied"] = True
        elif refused_held and wait_id in doc.get("retiredWaitIds", []):
            outcome["refusedAfterReset"] = True
        else:
            tally.lost += 1
            tally.violations.append(
                f"early {name}: acknowledged signal {signal_id} neither applied nor refused"
            )
    # Every signal held (a sender killed after holding one included) is applied or refused.
    for entry in audit:
        held_id = entry.get("signalId")
        settled = held_id in receipts or any(e.get("signalId") == held_id and e.get("held") for e in audit)
        if entry.get("code") == "held" and not settled:
            tally.lost += 1
            tally.violations.append(f"early {name}: held signal {held_id} neither applied nor refused")
    outcome["heldRecorded"] = any(e.get("code") == "held" for e in audit)
    if accepted and max(accepted.values()) > 1:
        tally.violations.append(f"early {name}: a signal was accepted twice: {dict(accepted)}")
    held_dir = root / ".swamp" / "held"
    leftover = [p.name for p in held_dir.iterdir() if not p.name.startswith(".")] if held_dir.is_dir() else []
    if leftover and doc["status"] in TERMINAL:
        tally.violations.append(f"early {name}: held signals left after the run finished: {leftover}")
    return tally, outcome


def _carry_early(root: Path, wf: str, run_id: str, wait_id: str, tally: Tally) -> None:
    """Take the run to its end: answer what is open (no early signal came through), resume, and
    retry a run whose process was killed from its first step."""
    for round_no in range(6):
        now = at(10 + round_no)
        doc = the_run(root, run_id)
        if doc["status"] in TERMINAL:
            if doc["status"] == "failed" and round_no < 5 and doc.get("interruption"):
                answer = attempt(
                    root, "workflow.resume", {"workflow": wf, "run": run_id, "from": "pre"}, now=now
                )
                _count(tally, answer)
                continue
            return
        if doc["status"] == "suspended":
            review = step_named(doc, "review")
            if review["status"] == "waiting":
                answer = attempt(
                    root,
                    "workflow.signal",
                    {"waitId": review["wait"]["waitId"], "payload": {"n": -1}},
                    now=now,
                )
                _count(tally, answer)
        answer = attempt(root, "workflow.resume", {"workflow": wf, "run": run_id, "claimTimeout": 5}, now=now)
        _count(tally, answer)
    tally.violations.append(f"early: run {run_id[:8]} did not finish: {the_run(root, run_id)['status']}")


def trial_early(base: Path, rng: random.Random, kill_target: str | None = None) -> Tally:
    """One early signal racing the step that opens its wait: sent in process (any moment of the
    window) when nothing is killed, else as a process (a signal process starts in ~150 ms, so the
    step before the wait sleeps longer) with the run or the signal killed at a random moment."""
    root = fresh(base, "early")
    sibling = rng.choice([0.0, 0.03, 0.1])
    if kill_target is None:
        pre, delay, kill_after = rng.choice([0.0, 0.02, 0.05]), 0.0, 0.0
        delay = rng.uniform(0, pre + sibling + 0.05)
    elif kill_target == "run":  # a signal process takes ~150-400 ms to start here
        pre, delay, kill_after = rng.choice([0.2, 0.35, 0.5]), 0.0, rng.uniform(0, 0.3)
        delay = rng.uniform(0, pre * 0.6)
    else:
        pre, delay, kill_after = rng.choice([0.6, 0.9]), rng.uniform(0, 0.2), rng.uniform(0.15, 0.8)
    tally, outcome = early_race(
        root,
        "early",
        pre_sleep=pre,
        sibling_sleep=sibling,
        signal_delay=delay,
        payload={"n": rng.randrange(1 << 20), "by": "early"},
        kill=kill_target,
        kill_after=kill_after,
        in_process=kill_target is None,
    )
    tally.notes.append(f"early kill={kill_target}: {outcome}")
    return tally
