"""Adversarial attacks on swamp's store, against a real swamp binary: links planted under .swamp,
path-shaped run references, self-holding and exploding YAML aliases, read-only storage, and a
step that prints 100 MB. Each attack runs in a throw-away repository under `workdir` and reports
whether the rule held, with a short figure. Standard library only; the whole run takes well under
60 s. scripts/reliability calls run(swamp, workdir)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SH_MODEL = """\
id: 00000000-0000-4000-8000-00000000a77a
name: sh
type: command/shell
methods:
  execute:
    arguments:
      run: "true"
"""
WAITER_ID = "a7000000-0000-4000-8000-000000000001"
WAITER = f"""\
id: {WAITER_ID}
name: waiter
jobs:
  - name: main
    steps:
      - {{name: value, task: {{type: wait_for_signal, timeout: 600}}}}
"""


class _Swamp:
    def __init__(self, swamp: str, root: Path):
        self.swamp, self.root = swamp, root

    def __call__(self, *args: str, wrapper: list[str] | None = None, timeout: float = 60) -> dict[str, Any]:
        """Run swamp ARGS --json; returns {code, json, stderr, seconds, rssKb}."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SWAMP_")}
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.monotonic()
            proc = subprocess.Popen(
                [*(wrapper or []), self.swamp, *args, "--json"],
                cwd=self.root,
                env=env,
                stdout=out,
                stderr=err,
            )
            try:
                _, status, usage = _wait4(proc, timeout)
            except TimeoutError:
                proc.kill()
                proc.wait()
                return {"code": None, "json": None, "stderr": "timed out", "seconds": timeout, "rssKb": None}
            seconds = time.monotonic() - started
            out.seek(0)
            err.seek(0)
            text = out.read().decode("utf-8", "replace")
            try:
                body = json.loads(text)
            except ValueError:
                body = None
            return {
                "code": os.waitstatus_to_exitcode(status),
                "json": body,
                "stderr": err.read().decode("utf-8", "replace")[-300:],
                "seconds": round(seconds, 2),
                "rssKb": usage.ru_maxrss,
            }


def _wait4(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, int, Any]:
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return pid, status, usage
        if time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(0.02)


def _repo(swamp: str, workdir: Path, name: str) -> _Swamp:
    root = workdir / name / "repo"
    shutil.rmtree(root.parent, ignore_errors=True)
    root.mkdir(parents=True)
    subprocess.run([swamp, "repo", "init", str(root)], capture_output=True, check=True, timeout=60)
    (root / "models" / "command" / "shell").mkdir(parents=True, exist_ok=True)
    (root / "models" / "command" / "shell" / "sh.yaml").write_text(SH_MODEL)
    (root / "workflows" / "workflow-waiter.yaml").write_text(WAITER)
    return _Swamp(swamp, root)


def _code(result: dict[str, Any]) -> str | None:
    body = result["json"]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("code"))
    return None


def _suspended(sw: _Swamp) -> tuple[str, str]:
    result = sw("workflow", "run", "waiter")
    body = result["json"] or {}
    if body.get("status") != "suspended":
        raise RuntimeError(f"the waiter did not suspend: {result['stderr'] or body}")
    return str(body["id"]), str(body["waits"][0]["waitId"])


def _planted_link(swamp: str, workdir: Path, where: str) -> dict[str, Any]:
    """A link to a file outside the repository planted at the run's swap file, record or audit
    trail; a signal must be refused with storage_error and the outside file keep its bytes."""
    sw = _repo(swamp, workdir, f"link-{where}")
    run_id, wait_id = _suspended(sw)
    folder = sw.root / ".swamp" / "workflow-runs" / WAITER_ID
    outside = sw.root.parent / "outside.txt"
    # A copy of the record: a store that follows the link reads it as the run and carries on.
    original = (folder / f"{run_id}.json").read_bytes()
    outside.write_bytes(original)
    target = {
        "swap": folder / f".{run_id}.json.swap",
        "record": folder / f"{run_id}.json",
        "audit": folder / f"{run_id}.audit.jsonl",
    }[where]
    target.unlink(missing_ok=True)
    os.symlink(outside, target)
    result = sw("workflow", "signal", wait_id, "--payload", '"secret payload"')
    untouched = outside.read_bytes() == original
    code = _code(result)
    return {
        "attack": f"symlink-at-{where}",
        "held": untouched and code == "storage_error",
        "detail": f"signal -> {code or result['code']}; the outside file is "
        + ("untouched" if untouched else "WRITTEN"),
    }


def _path_shaped_run_ids(swamp: str, workdir: Path) -> dict[str, Any]:
    sw = _repo(swamp, workdir, "run-refs")
    outside = sw.root / "outside"
    outside.mkdir()
    record = {
        "formatVersion": 1, "id": "x", "workflowId": WAITER_ID, "workflowName": "waiter",
        "status": "suspended", "createdAt": "2026-01-01T00:00:00.000Z", "inputs": {}, "tags": {}, "jobs": [],
    }  # fmt: skip
    (outside / "x.json").write_text(json.dumps(record))
    refs = ["../../outside/x", "../../../././././././././././outside/x", "a/b", ".x", "/etc/passwd"]
    failures = []
    for ref in refs:
        for args in (("workflow", "history", "get", ref), ("workflow", "resume", "waiter", "--run", ref)):
            result = sw(*args)
            details = ((result["json"] or {}).get("error") or {}).get("details") or {}
            if _code(result) != "run_not_found" or details.get("reason") != "malformed":
                failures.append(f"{' '.join(args[:2])} {ref!r} -> {_code(result) or result['code']}")
    return {
        "attack": "path-shaped-run-ids",
        "held": not failures,
        "detail": "; ".join(failures) or f"{2 * len(refs)} references refused as malformed",
    }


SELF_HOLDING = """\
id: a7000000-0000-4000-8000-000000000002
name: selfref
inputs:
  schema: &s {type: object, properties: {x: *s}}
jobs:
  - name: main
    steps:
      - {name: gate, task: {type: manual_approval, prompt: "ok?"}}
"""
LAUGHS = (
    "id: a7000000-0000-4000-8000-000000000003\nname: laughs\n"
    + f"a0: &a0 [{', '.join(['lol'] * 10)}]\n"
    + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))
    + "jobs: []\n"
)


def _yaml_aliases(swamp: str, workdir: Path) -> dict[str, Any]:
    sw = _repo(swamp, workdir, "yaml")
    (sw.root / "workflows" / "workflow-selfref.yaml").write_text(SELF_HOLDING)
    (sw.root / "workflows" / "workflow-laughs.yaml").write_text(LAUGHS)
    result = sw("workflow", "validate", timeout=30)
    body = result["json"] or {}
    passed = {w.get("workflowName") for w in body.get("workflows", []) if w.get("passed")}
    listed = sw("workflow", "list", timeout=30)
    broken = {b["path"]: b["error"]["code"] for b in (listed["json"] or {}).get("broken", [])}
    held = (
        result["code"] == 1
        and passed == {"waiter"}
        and broken.get("workflows/workflow-selfref.yaml") == "workflow_invalid"
        and broken.get("workflows/workflow-laughs.yaml") == "workflow_invalid"
    )
    return {
        "attack": "yaml-self-holding-anchor-and-alias-bomb",
        "held": held,
        "detail": f"validate exit {result['code']} in {result['seconds']} s, peak RSS {result['rssKb']} KB; "
        f"passed {sorted(p for p in passed if p)}; broken {broken}",
    }


def _read_only_storage(swamp: str, workdir: Path) -> dict[str, Any]:
    sw = _repo(swamp, workdir, "read-only")
    _, wait_id = _suspended(sw)
    script = 'mount --bind .swamp .swamp && mount -o remount,bind,ro .swamp && exec "$@"'
    wrapper = ["unshare", "-m", "sh", "-c", script, "sh"]
    usable = (
        os.geteuid() == 0
        and shutil.which("unshare") is not None
        and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
    )
    how = "read-only bind mount"
    if not usable:  # no mount namespace here: a file where .swamp/locks should be
        shutil.rmtree(sw.root / ".swamp" / "locks", ignore_errors=True)
        (sw.root / ".swamp" / "locks").write_text("not a folder\n")
        wrapper, how = [], ".swamp/locks is a file"
    codes = {}
    for name, args in (
        ("signal", ("workflow", "signal", wait_id, "--payload", "1")),
        ("run", ("workflow", "run", "waiter")),
    ):
        result = sw(*args, wrapper=wrapper)
        codes[name] = _code(result) or result["code"]
        if "Traceback" in result["stderr"]:
            codes[name] = "traceback"
    return {
        "attack": "read-only-storage",
        "held": set(codes.values()) == {"storage_error"},
        "detail": f"{how}: " + ", ".join(f"{k} -> {v}" for k, v in codes.items()),
    }


def _loud_step(swamp: str, workdir: Path) -> dict[str, Any]:
    sw = _repo(swamp, workdir, "loud")
    (sw.root / "workflows" / "workflow-loud.yaml").write_text(
        "id: a7000000-0000-4000-8000-000000000004\nname: loud\njobs:\n  - name: main\n    steps:\n"
        "      - name: print\n        task:\n          type: model_method\n          modelIdOrName: sh\n"
        "          methodName: execute\n          inputs:\n"
        "            run: head -c 100000000 /dev/zero | tr '\\0' x | fold -w 999\n"
    )
    result = sw("workflow", "run", "loud", timeout=45)
    records = list((sw.root / ".swamp" / "workflow-runs").glob("*/*.json"))
    size = records[0].stat().st_size if records else None
    body = result["json"] or {}
    held = body.get("status") == "succeeded" and size is not None and size < 1_000_000
    return {
        "attack": "step-prints-100MB",
        "held": held,
        "detail": f"record {size} bytes, swamp peak RSS {result['rssKb']} KB, {result['seconds']} s, "
        f"status {body.get('status') or _code(result) or result['code']}",
    }


def run(swamp: str, workdir: Path) -> list[dict[str, Any]]:
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    attacks: list[tuple[str, Any]] = [
        ("symlink-at-swap", lambda: _planted_link(swamp, workdir, "swap")),
        ("symlink-at-record", lambda: _planted_link(swamp, workdir, "record")),
        ("symlink-at-audit", lambda: _planted_link(swamp, workdir, "audit")),
        ("path-shaped-run-ids", lambda: _path_shaped_run_ids(swamp, workdir)),
        ("yaml-self-holding-anchor-and-alias-bomb", lambda: _yaml_aliases(swamp, workdir)),
        ("read-only-storage", lambda: _read_only_storage(swamp, workdir)),
        ("step-prints-100MB", lambda: _loud_step(swamp, workdir)),
    ]
    results = []
    for name, attack in attacks:
        try:
            results.append(attack())
        except Exception as exc:  # an attack that cannot be set up is reported, not raised
            results.append({"attack": name, "held": False, "detail": f"could not run: {exc!r}"[:200]})
    return results


if __name__ == "__main__":
    binary = sys.argv[1] if len(sys.argv) > 1 else shutil.which("swamp") or "swamp"
    with tempfile.TemporaryDirectory() as scratch:
        print(json.dumps(run(binary, Path(scratch)), indent=2))
