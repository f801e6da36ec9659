"""Payload attacks against a real swamp binary, for scripts/reliability (stdlib only, < 60 s).

run(swamp, workdir) makes throw-away repositories under workdir and returns one result per attack,
{"attack", "held", "detail"}:
- redos-signal: a payload of 26 a's and a '!' against `pattern: ^(a+)+$` (9.6 s with a backtracking
  matcher, doubling per character) while a cancel of the same run is sent with a 1 s claim timeout:
  held when the signal is answered within 5 s and the cancel is not refused with claim_timeout.
- huge-numbers: a 400-digit integer and 1e400, as --payload text and as a JSON-lines value: held
  when every one is refused with payload_malformed (WAIT-022).
- superseded-with-receipt: a run whose wait took a signal, then a new run of the workflow: held
  when the earlier run is skipped (signal_delivered), a second signal to its wait answers
  wait_settled with the first receipt, and resuming it finishes it (WAIT-047).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

NOW = "2026-01-01T00:00:00Z"
ONE_WAIT = (
    "jobs:\n  - name: main\n    steps:\n      - name: w\n"
    "        task: {type: wait_for_signal, timeout: 600}\n"
)
TIMEOUT = 20.0  # per command: a backtracking matcher would take far longer than any answer here


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWAMP_")}
    env.update({"SWAMP_NOW": NOW, "NO_COLOR": "1", **extra})
    return env


def _swamp(swamp: str, repo: Path, *args: str, stdin: str = "", **env: str) -> tuple[int, Any, float]:
    """(exit code, stdout as JSON or text, seconds) of one command; exit -9 when it ran away."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            [swamp, *args],
            cwd=repo,
            input=stdin,
            capture_output=True,
            text=True,
            env=_env(**env),
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return -9, None, time.monotonic() - started
    try:
        out: Any = json.loads(done.stdout)
    except ValueError:
        out = done.stdout
    return done.returncode, out, time.monotonic() - started


def _repo(swamp: str, workdir: Path, name: str, workflow: str) -> Path:
    repo = workdir / f"{name}-{uuid.uuid4().hex[:8]}"
    repo.mkdir(parents=True)
    code, out, _ = _swamp(swamp, repo, "repo", "init", ".")
    if code != 0:
        raise RuntimeError(f"repo init failed: {out}")
    (repo / "workflows").mkdir(exist_ok=True)
    (repo / "workflows" / "workflow-target.yaml").write_text(
        f"id: {uuid.uuid4()}\nname: target\n{workflow}", encoding="utf-8"
    )
    return repo


def _code(out: Any) -> str:
    if isinstance(out, dict) and isinstance(out.get("error"), dict):
        return str(out["error"].get("code"))
    return "accepted" if isinstance(out, dict) else "no answer"


def _start(swamp: str, repo: Path) -> dict[str, Any]:
    code, out, _ = _swamp(swamp, repo, "workflow", "run", "target", "--json")
    if not isinstance(out, dict) or out.get("status") != "suspended":
        raise RuntimeError(f"the run did not suspend (exit {code}): {str(out)[:200]}")
    return out


def redos_signal(swamp: str, workdir: Path) -> dict[str, Any]:
    repo = _repo(
        swamp,
        workdir,
        "redos",
        "jobs:\n  - name: main\n    steps:\n      - name: w\n        task: {type: wait_for_signal, "
        'timeout: 600, schema: {type: string, pattern: "^(a+)+$"}}\n',
    )
    run = _start(swamp, repo)
    wait_id = run["waits"][0]["waitId"]
    evil = json.dumps("a" * 26 + "!")
    started = time.monotonic()
    signal = subprocess.Popen(
        [swamp, "workflow", "signal", wait_id, "--payload", evil, "--json"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    try:
        cancel_code, cancel_out, _ = _swamp(
            swamp, repo, "workflow", "cancel", "target", "--run", run["id"], "--json", SWAMP_CLAIM_TIMEOUT="1"
        )
        try:
            out_text, _ = signal.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            signal.kill()
            out_text, _ = signal.communicate()
    finally:
        if signal.poll() is None:
            signal.kill()
    seconds = time.monotonic() - started
    try:
        answer = _code(json.loads(out_text))
    except ValueError:
        answer = "no answer"
    cancel = _code(cancel_out) if cancel_code != 0 else "cancelled"
    held = (
        seconds < 5
        and answer in ("payload_invalid", "wait_settled", "run_terminal")
        and cancel == "cancelled"
    )
    return {
        "attack": "redos-signal",
        "held": held,
        "detail": f"26-a payload answered {answer} in {seconds:.2f} s; concurrent cancel: {cancel}",
    }


def huge_numbers(swamp: str, workdir: Path) -> dict[str, Any]:
    repo = _repo(
        swamp,
        workdir,
        "numbers",
        ONE_WAIT,
    )
    wait_id = _start(swamp, repo)["waits"][0]["waitId"]
    digits = "9" * 400
    answers = {}
    for label, text in (("400-digit --payload", digits), ("1e400 --payload", "1e400")):
        _, out, _ = _swamp(swamp, repo, "workflow", "signal", wait_id, "--payload", text, "--json")
        answers[label] = _code(out)
    frames = "".join(
        json.dumps({"type": "workflow.signal", "id": rid, "payload": {"waitId": wait_id, "payload": 0}})[:-3]
        + value
        + "}}\n"
        for rid, value in (("big", digits), ("inf", "1e400"))
    )
    _, out, _ = _swamp(swamp, repo, "--jsonl", stdin=frames)
    for line in str(out).splitlines() if not isinstance(out, dict) else [json.dumps(out)]:
        try:
            frame = json.loads(line)
        except ValueError:
            continue
        if frame.get("type") != "done" and frame.get("id") in ("big", "inf"):
            answers[f"{frame['id']} as a frame value"] = _code(frame if frame.get("type") == "error" else {})
    held = len(answers) == 4 and all(code == "payload_malformed" for code in answers.values())
    shown = ", ".join(f"{k}: {v}" for k, v in answers.items())
    return {"attack": "huge-numbers", "held": held, "detail": shown}


def superseded_with_receipt(swamp: str, workdir: Path) -> dict[str, Any]:
    repo = _repo(
        swamp,
        workdir,
        "supersede",
        ONE_WAIT,
    )
    first = _start(swamp, repo)
    wait_id = first["waits"][0]["waitId"]
    code, taken, _ = _swamp(swamp, repo, "workflow", "signal", wait_id, "--payload", '{"n": 1}', "--json")
    if code != 0:
        return {
            "attack": "superseded-with-receipt",
            "held": False,
            "detail": f"signal refused: {_code(taken)}",
        }
    _, second, _ = _swamp(swamp, repo, "workflow", "run", "target", "--json")
    entry = next((e for e in (second or {}).get("superseded", []) if e.get("runId") == first["id"]), {})
    _, again, _ = _swamp(swamp, repo, "workflow", "signal", wait_id, "--payload", '{"n": 2}', "--json")
    same_receipt = (
        _code(again) == "wait_settled"
        and again["error"].get("details", {}).get("receipt", {}).get("id") == taken["signal"]["id"]
    )
    _, resumed, _ = _swamp(swamp, repo, "workflow", "resume", "target", "--run", first["id"], "--json")
    status = resumed.get("status") if isinstance(resumed, dict) else _code(resumed)
    held = entry.get("reason") == "signal_delivered" and same_receipt and status == "succeeded"
    return {
        "attack": "superseded-with-receipt",
        "held": held,
        "detail": f"earlier run {entry.get('action')} ({entry.get('reason')}); second signal "
        f"{_code(again)}{' with the first receipt' if same_receipt else ''}; resume: {status}",
    }


def run(swamp: str, workdir: Path) -> list[dict[str, Any]]:
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    for attack in (redos_signal, huge_numbers, superseded_with_receipt):
        try:
            results.append(attack(swamp, workdir))
        except Exception as exc:  # an attack that cannot even be set up did not hold
            name = attack.__name__.replace("_", "-")
            results.append({"attack": name, "held": False, "detail": f"{type(exc).__name__}: {exc}"[:300]})
    return results


if __name__ == "__main__":
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        print(json.dumps(run(sys.argv[1] if len(sys.argv) > 1 else "swamp", Path(scratch)), indent=2))
