"""Helpers for the tests: the CLI in real subprocesses, repositories, workflow builders.

`repo` is a fresh repository per test; `shared_repo` is one repository per test module for tests
that only add their own uniquely named workflows. Both come with a `command/shell` model named
`sh` and a Python extension model type `@test/echo` (definition `echo`) whose `echo` method
returns its arguments, so tests can see exactly what a step received.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

SWAMP = Path(sys.executable).with_name("swamp")
ROOT = Path(__file__).resolve().parent.parent


def swamp_for_other_accounts() -> Path:
    """A `swamp` command other OS accounts can run: SWAMP itself, or, where this checkout is out
    of their reach (a clone in a 0700 folder, under /root), the one of a shared copy of .venv and
    the package (scripts/_shared_runtime; SWAMP_SHARED_RUNTIME names the one scripts/test made).
    Made once per process; needs root, as the tests acting as other accounts do."""
    if not _FOR_OTHERS:
        _FOR_OTHERS.append(_for_others())
    return _FOR_OTHERS[0]


_FOR_OTHERS: list[Path] = []


def python_for_other_accounts() -> Path:
    """The Python of swamp_for_other_accounts() (a program importing swamp.client, run as another
    account)."""
    command = swamp_for_other_accounts()
    return SWAMP.with_name("python") if command == SWAMP else command.parent / "venv" / "bin" / "python"


def _others_can_run(command: Path) -> bool:
    probe = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", str(command), "--version"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def _for_others() -> Path:
    import atexit
    import shutil
    import tempfile

    if os.geteuid() != 0 or _others_can_run(SWAMP):
        return SWAMP
    given = os.environ.get("SWAMP_SHARED_RUNTIME")
    if given and (Path(given) / "swamp").exists():
        return Path(given) / "swamp"
    shared = Path(tempfile.mkdtemp(prefix="swamp-tests-shared-"))
    atexit.register(shutil.rmtree, shared, True)
    subprocess.run([str(ROOT / "scripts" / "_shared_runtime"), str(shared)], check=True)
    return shared / "swamp"

# Variables that change what swamp does; a test run must not inherit them from the caller.
SCRUBBED = (
    "SWAMP_REPO_DIR",
    "SWAMP_NOW",
    "SWAMP_ACTOR",
    "SWAMP_DEBUG",
    "SWAMP_MAX_CONCURRENT_STEPS",
    "NO_COLOR",
    "SWAMP_CONNECT",
)

ECHO_EXTENSION = '''\
"""A test model type: `echo` returns its arguments, `fail` raises, `items` returns a list."""


def echo(args, ctx):
    ctx.log("echo called")
    return {"args": args, "step": ctx.step_name}


def fail(args, ctx):
    raise RuntimeError(args.get("message", "boom"))


model = {
    "type": "@test/echo",
    "version": "1",
    "description": "Echo arguments back",
    "methods": {
        "echo": {"description": "Return the arguments", "arguments": {"type": "object"}, "execute": echo},
        "fail": {"description": "Raise", "arguments": {"type": "object"}, "execute": fail},
    },
}
'''

SH_MODEL = {
    "id": "5e5e5e5e-0000-4000-8000-000000000001",
    "name": "sh",
    "type": "command/shell",
    "globalArguments": {},
    "methods": {"execute": {"arguments": {"run": "true"}}},
}
ECHO_MODEL = {
    "id": "5e5e5e5e-0000-4000-8000-000000000002",
    "name": "echo",
    "type": "@test/echo",
    "globalArguments": {},
    "methods": {},
}


class Result(NamedTuple):
    code: int
    out: str
    err: str
    json: Any


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(extra or {})
    return env


def run_swamp(
    *args: str,
    cwd: Path | str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 60,
) -> Result:
    """Run the real `swamp` executable; parse stdout as JSON when --json was given."""
    done = subprocess.run(
        [str(SWAMP), *args],
        cwd=str(cwd),
        env=clean_env(env),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    parsed = None
    if "--json" in args:
        try:
            parsed = json.loads(done.stdout)
        except ValueError:
            parsed = None
    return Result(done.returncode, done.stdout, done.stderr, parsed)


# -- workflow builders -------------------------------------------------------------------------


def sh(name: str, run: str, **step: Any) -> dict[str, Any]:
    """A step that runs `run` with the builtin command/shell model `sh`."""
    return {
        "name": name,
        "task": {
            "type": "model_method",
            "modelIdOrName": "sh",
            "methodName": "execute",
            "inputs": {"run": run},
        },
        **step,
    }


def echo(name: str, inputs: dict[str, Any] | str | None = None, **step: Any) -> dict[str, Any]:
    """A step that calls the `@test/echo` extension; its outputs are `{args, step}`."""
    return {
        "name": name,
        "task": {
            "type": "model_method",
            "modelIdOrName": "echo",
            "methodName": "echo",
            "inputs": inputs if inputs is not None else {},
        },
        **step,
    }


def job(name: str, *steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": name, "steps": list(steps), **fields}


def dep(ref: str, kind: str = "succeeded", key: str = "step") -> dict[str, Any]:
    return {key: ref, "condition": {"type": kind}}


def jdep(ref: str, kind: str = "succeeded") -> dict[str, Any]:
    return dep(ref, kind, key="job")


# -- repositories ------------------------------------------------------------------------------


@dataclass
class Repo:
    root: Path

    # CLI, in a real subprocess
    def swamp(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        input: str | None = None,
        cwd: Path | str | None = None,
    ) -> Result:
        return run_swamp(*args, cwd=cwd or self.root, env=env, input=input)

    # the request layer, in process
    def handle(self, request: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        from swamp.protocol.requests import handle

        return handle(request, {**(payload or {}), "repoDir": str(self.root)})

    def run(self, workflow: str, inputs: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.handle("workflow.run", {"workflow": workflow, "inputs": inputs or {}})

    # files
    def write_workflow(
        self, name: str, jobs: Iterable[dict[str, Any]] | None = None, *, raw: str | None = None, **top: Any
    ) -> str:
        path = self.root / "workflows" / f"workflow-{name}.yaml"
        if raw is None:
            doc = {"id": str(uuid.uuid4()), "name": name, **top, "jobs": list(jobs or [])}
            raw = yaml.safe_dump(doc, sort_keys=False)
        path.write_text(raw, encoding="utf-8")
        return name

    def write_model(self, doc: dict[str, Any]) -> Path:
        path = self.root / "models" / doc["type"] / f"{doc['name']}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    def write_extension(self, filename: str, text: str) -> Path:
        path = self.root / "extensions" / "models" / filename
        path.write_text(text, encoding="utf-8")
        return path

    def run_files(self) -> list[Path]:
        base = self.root / ".swamp" / "workflow-runs"
        return sorted(base.rglob("*.json")) if base.is_dir() else []

    def read(self, name: str) -> str:
        return (self.root / name).read_text(encoding="utf-8")

    def lines(self, name: str) -> list[str]:
        path = self.root / name
        return path.read_text(encoding="utf-8").split() if path.exists() else []


def make_repo(path: Path) -> Repo:
    result = run_swamp("repo", "init", str(path), cwd=path.parent)
    assert result.code == 0, result
    repo = Repo(path.resolve())
    repo.write_model(SH_MODEL)
    repo.write_model(ECHO_MODEL)
    repo.write_extension("echo.py", ECHO_EXTENSION)
    return repo


PG_ADDRESS = os.environ.get("SWAMP_TEST_PG", "")
# A test parametrized over both stores: `store_repo(request.param, ...)` makes its repository.
BOTH_STORES = [
    pytest.param("file", id="files"),
    pytest.param(
        "pg",
        id="postgresql",
        marks=pytest.mark.skipif(
            not PG_ADDRESS.startswith("postgresql://"), reason="SWAMP_TEST_PG is not set"
        ),
    ),
]


def store_repo(store: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A repository at `path` on `store`: "file", or "pg" (a schema of its own on SWAMP_TEST_PG,
    migrated; SWAMP_STORE_URL set for the test through `monkeypatch`)."""
    if store == "pg":
        schema = f"t_{uuid.uuid4().hex[:12]}"
        monkeypatch.setenv("SWAMP_STORE_URL", f"{PG_ADDRESS}&options=-csearch_path%3D{schema}")
    else:
        monkeypatch.delenv("SWAMP_STORE_URL", raising=False)
    repo = make_repo(path)
    if store == "pg":
        assert repo.swamp("store", "migrate").code == 0
    return repo


def step_of(doc: dict[str, Any], job_name: str, step_name: str) -> dict[str, Any]:
    for j in doc["jobs"]:
        if j["name"] == job_name:
            for s in j["steps"]:
                if s["name"] == step_name:
                    return s
    raise AssertionError(f"no step {job_name}.{step_name} in {[j['name'] for j in doc['jobs']]}")


def job_of(doc: dict[str, Any], job_name: str) -> dict[str, Any]:
    for j in doc["jobs"]:
        if j["name"] == job_name:
            return j
    raise AssertionError(f"no job {job_name}")


def statuses(doc: dict[str, Any], job_name: str) -> dict[str, str]:
    return {s["name"]: s["status"] for s in job_of(doc, job_name)["steps"]}


HOOK_WAIT = "wait_" + "a" * 26


@dataclass
class Site:
    """A repository holding one suspended run: where a hook runs, and whose audit trail it joins."""

    root: Path
    workflow_id: str
    run_id: str

    def job(self, command: str, timeout: float = 20, **extra: Any) -> dict[str, Any]:
        return {
            "hook": "waitOpened",
            "command": command,
            "timeout": timeout,
            "waitId": HOOK_WAIT,
            "runId": self.run_id,
            "workflowId": self.workflow_id,
            "audit": str(self.audit_file),
            "stdin": json.dumps({"waitId": HOOK_WAIT}),
            **extra,
        }

    @property
    def audit_file(self) -> Path:
        return self.root / ".swamp" / "workflow-runs" / self.workflow_id / f"{self.run_id}.audit.jsonl"

    def trail(self) -> list[dict[str, Any]]:
        """The hook entries of the run's audit trail."""
        if not self.audit_file.exists():
            return []
        entries = [json.loads(line) for line in self.audit_file.read_text().splitlines()]
        return [entry for entry in entries if entry.get("action") == "hook"]


def built_once(factory: Any, name: str, build: Any) -> Any:
    """A module fixture's value built by one pytest-xdist worker and read by the others: xdist
    builds a module-scoped fixture once per worker that runs one of its tests, and the corpora
    cost seconds each (the run's shared temporary folder holds it, under a lock; the value must
    pickle). Without xdist, `build()`."""
    import fcntl
    import pickle

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build()
    shared = Path(factory.getbasetemp()).parent  # one per run: popen-gwN's parent
    with open(shared / f"built-once-{name}.lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        path = shared / f"built-once-{name}.pickle"
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = build()
        path.write_bytes(pickle.dumps(value))
        return value
