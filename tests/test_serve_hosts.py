"""Several serves on one store (SERVE-039..043), at a scale a scenario does not reach: two
`serve --auto-continue --enforce-deadlines` in one repository (standing for two hosts on the file
store) while one process signals many waits at once and other runs are past their deadline. Each
run's after-step appends its run ID to a shared file: every ID must be there exactly once, and
every expired wait failed once. scripts/reliability --store postgresql does the same on a database.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from helpers import SWAMP, Repo, clean_env, job, make_repo

RUNS = 24
DUE = 4
BOUND = 120.0


def _workflow(repo: Repo, name: str, timeout: int, out: Path) -> None:
    review = {"name": "review", "allowFailure": True, "task": {"type": "wait_for_signal", "timeout": timeout}}
    after = {
        "name": "after",
        "dependsOn": [{"step": "review", "condition": {"type": "completed"}}],
        "task": {
            "type": "model_method",
            "modelIdOrName": "sh",
            "methodName": "execute",
            "inputs": {"run": f"echo ${{{{ run.id }}}} >> {out}"},
        },
    }
    repo.write_workflow(name, [job("main", review, after)], inputs={"type": "object"})


def _jsonl(repo: Repo, requests: list[dict[str, object]], **env: str) -> list[dict[str, object]]:
    done = subprocess.run(
        [str(SWAMP), "--jsonl"],
        cwd=repo.root,
        env=clean_env({"SWAMP_STORE_URL": "file", **env}),
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _events(repo: Repo, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [str(SWAMP), "events", *args, "--timeout", "0", "--json"],
        cwd=repo.root,
        env=clean_env({"SWAMP_STORE_URL": "file"}),
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 0, done
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


def _start(repo: Repo, name: str, count: int, **env: str) -> list[tuple[str, str]]:
    frames = _jsonl(
        repo,
        [{"type": "workflow.run", "id": f"r{i}", "payload": {"workflow": name}} for i in range(count)],
        **env,
    )
    runs = [f["payload"]["data"] for f in frames if f["type"] == "workflow.run"]  # type: ignore[index]
    return [(r["id"], r["waits"][0]["waitId"]) for r in runs]  # type: ignore[index]


def test_two_serves_continue_each_run_once_and_fail_each_deadline_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    cursor = _events(repo)["cursor"]
    out = tmp_path / "continued.txt"
    _workflow(repo, "rel", 86400, out)
    _workflow(repo, "due", 60, out)
    runs = _start(repo, "rel", RUNS)
    late = _start(repo, "due", DUE, SWAMP_NOW="2026-01-01T00:00:00Z")  # long expired by now
    assert len(runs) == RUNS and len(late) == DUE
    serves = [
        subprocess.Popen(
            [str(SWAMP), "serve", "--auto-continue", "--enforce-deadlines"],
            cwd=repo.root,
            env=clean_env({"SWAMP_STORE_URL": "file"}),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        frames = _jsonl(
            repo,
            [{"type": "workflow.signal", "id": w, "payload": {"waitId": w, "payload": 1}} for _, w in runs],
        )
        assert sum(1 for f in frames if f["type"] == "workflow.signal") == RUNS
        expected = {r for r, _ in runs + late}
        deadline = time.monotonic() + BOUND
        while True:
            seen = Counter(out.read_text().split()) if out.exists() else Counter()
            if set(seen) >= expected or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        time.sleep(1)  # a second continuation, if any, would have appended by now
        seen = Counter(out.read_text().split())
        assert {r: seen[r] for r in expected} == dict.fromkeys(expected, 1)
    finally:
        for serve in serves:
            serve.send_signal(signal.SIGTERM)
        logs = [serve.communicate(timeout=30)[1] for serve in serves]
    assert not any("Traceback" in log for log in logs), logs
    settled = _events(repo, "--after", cursor, "--kind", "wait_settled")["events"]
    timed_out = Counter(e["runId"] for e in settled if e["outcome"] == "timed_out")
    assert timed_out == Counter({r: 1 for r, _ in late})  # each deadline enforced once
    assert Counter(e["waitId"] for e in settled) == Counter({w: 1 for _, w in runs + late})
