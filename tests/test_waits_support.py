"""Shared helpers for tests/test_waits_*.py (no tests here): wait steps, the clock and the user,
signalling in process and through the real CLI, and reading run records back.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env, job

from swamp.store.clock import account_of

T0 = "2026-01-01T00:00:00Z"

VERDICT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict"],
    "properties": {"verdict": {"type": "string", "enum": ["ship", "fix", "abandon"]}},
}


def wait_step(name: str, timeout: float = 600, schema: Any = None, **step: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"type": "wait_for_signal", "timeout": timeout}
    if schema is not None:
        task["schema"] = schema
    return {"name": name, "task": task, **step}


def wait_workflow(repo: Repo, name: str, *steps: dict[str, Any], **top: Any) -> str:
    return repo.write_workflow(name, [job("main", *(steps or (wait_step("value"),)))], **top)


ACCOUNT = account_of(os.getuid())  # what submittedBy, decidedBy and by record: the OS account


def at(monkeypatch: pytest.MonkeyPatch, now: str = T0, user: str = "tester") -> None:
    """The in-process clock and who the caller acts for (SWAMP_ACTOR: recorded as onBehalfOf; the
    account itself is the OS user's, whatever LOGNAME and USER say)."""
    monkeypatch.setenv("SWAMP_NOW", now)
    monkeypatch.setenv("SWAMP_ACTOR", user)


def env(now: str = T0, user: str = "tester", **extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: clock and who it acts for."""
    return {"SWAMP_NOW": now, "SWAMP_ACTOR": user, **extra}


def refusal(repo: Repo, request: str, payload: dict[str, Any]) -> Any:
    """The SwampError a request is refused with, in process."""
    from swamp.domain.errors import SwampError

    with pytest.raises(SwampError) as info:
        repo.handle(request, payload)
    return info.value


def signal(
    repo: Repo, wait_id: str, value: Any = None, *, text: str | None = None, check: bool = False
) -> Any:
    payload: dict[str, Any] = {"waitId": wait_id}
    if text is not None:
        payload["payloadText"] = text
    else:
        payload["payload"] = value
    if check:
        payload["check"] = True
    return repo.handle("workflow.signal", payload)


def record_path(repo: Repo, doc: dict[str, Any]) -> Path:
    return repo.root / doc["path"]


def record(repo: Repo, doc: dict[str, Any]) -> dict[str, Any]:
    return json.loads(record_path(repo, doc).read_text(encoding="utf-8"))


def step_record(rec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for j in rec["jobs"] for s in j["steps"] if s["name"] == name)


def popen(repo: Repo, *args: str, environment: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start the real CLI without waiting for it."""
    return subprocess.Popen(
        [str(SWAMP), *args],
        cwd=str(repo.root),
        env=clean_env(environment),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, Any]:
    out, _err = proc.communicate(timeout=timeout)
    try:
        return proc.returncode, json.loads(out)
    except ValueError:
        return proc.returncode, out


def snapshot(path: Path) -> tuple[bytes, int]:
    """The bytes and the modification time of a file (a rewrite with equal bytes changes mtime)."""
    return path.read_bytes(), os.stat(path).st_mtime_ns
