"""Attacks on issue 26's items 6 and 9: hooks that leave processes behind, and an event log taken
over by one planted line or segment.

Hooks (HOOK-014, HOOK-015): a waitOpened hook `sleep 300 & ...` for several waits, then one that
escapes its process group with `setsid`. Held: once each hook's outcome is audited, none of the
processes it started is alive (the `setsid` one only where the machine offers a writable cgroup
v2; elsewhere the attack says so and counts as held, as spec/hooks.md documents the fallback).

Event log (EVENT-022, EVENT-023): after two events, a line with cursor `<epoch>-999999999998` is
appended to the newest segment; a segment with a higher first number, and one of another epoch,
are put beside it. Held: later events keep their numbers (3, 4, ...) and are all streamed by
`swamp events --after`, which says on stderr what it skipped, and `store status` counts it.

Self-contained (standard library only), against a real swamp binary:
`run(swamp, workdir) -> [{"attack", "held", "detail"}]`, well under 60 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import subprocess
import time
from typing import Any

NOW = "2026-01-01T00:00:00Z"
WORKFLOW = """id: {id}
name: {name}
jobs:
  - name: main
    steps:
      - name: review
        task: {{type: wait_for_signal, timeout: 3600, schema: {{type: integer}}}}
"""
PLANTED = (
    '{{"cursor":"{cursor}","event":"run_finished","at":"{now}","runId":"planted",'
    '"workflow":"x","workflowId":"x","status":"succeeded"}}\n'
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWAMP_")}
    env["SWAMP_NOW"] = NOW
    return env


def _swamp(swamp: str, repo: pathlib.Path, *args: str) -> tuple[int, Any, str]:
    done = subprocess.run(
        [swamp, *args],
        cwd=repo,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    try:
        doc = json.loads(done.stdout) if "--json" in args else done.stdout
    except ValueError:
        doc = None
    return done.returncode, doc, done.stderr


def _repo(workdir: pathlib.Path, name: str, settings: str = "version: 1\n") -> pathlib.Path:
    repo = workdir / name
    (repo / "workflows").mkdir(parents=True)
    (repo / ".swamp.yaml").write_text(settings)
    (repo / "workflows/workflow-review.yaml").write_text(
        WORKFLOW.format(id="a77ac000-0000-4000-8000-000000002600", name="review")
    )
    return repo


def _init(swamp: str, repo: pathlib.Path) -> None:
    code, _, err = _swamp(swamp, repo, "repo", "init", ".")
    if code != 0:
        raise RuntimeError(f"repo init failed: {err.strip()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as stat:  # a zombie is dead
        return stat.read().split(") ")[-1][0] != "Z"
    return True


def _hooks_audited(repo: pathlib.Path, count: int, limit: float = 25) -> int:
    end = time.monotonic() + limit
    while True:
        found = 0
        for trail in repo.glob(".swamp/workflow-runs/**/*.audit.jsonl"):
            found += sum(
                '"action": "hook"' in line or '"action":"hook"' in line
                for line in trail.read_text().splitlines()
            )
        if found >= count or time.monotonic() > end:
            return found
        time.sleep(0.05)


def _pids(repo: pathlib.Path) -> list[int]:
    return [int(path.read_text()) for path in repo.glob("pid-*") if path.read_text().strip()]


def _hook_attack(swamp: str, workdir: pathlib.Path, name: str, command: str, waits: int) -> dict[str, Any]:
    settings = f"version: 1\nhooks:\n  waitOpened: {{command: {json.dumps(command)}, timeout: 5}}\n"
    repo = _repo(workdir, name, settings)
    _init(swamp, repo)
    for _ in range(waits):
        _swamp(swamp, repo, "workflow", "run", "review", "--json")
    audited = _hooks_audited(repo, waits)
    pids = _pids(repo)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:  # the attack leaves nothing running either way
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    held = audited == waits and len(pids) == waits and not left
    return {
        "attack": name,
        "held": held,
        "detail": f"{waits} hooks, {audited} audited, {len(pids)} started, {len(left)} left running",
    }


def _cgroup_offered() -> bool:
    try:
        from swamp.hooks.contain import Cage
    except ImportError:
        return True  # not importable here: try the attack
    cage = Cage.make()
    if cage is None:
        return False
    cage.remove()
    return True


def _event_repo(swamp: str, workdir: pathlib.Path, name: str) -> tuple[pathlib.Path, str, str]:
    repo = _repo(workdir, name)
    _init(swamp, repo)
    _swamp(swamp, repo, "workflow", "run", "review", "--json")
    _, doc, _ = _swamp(swamp, repo, "events", "--timeout", "0", "--json")
    start = str((doc or {}).get("cursor"))
    return repo, start, start[:8]


def _event_attack(swamp: str, workdir: pathlib.Path, name: str, plant: Any) -> dict[str, Any]:
    repo, start, epoch = _event_repo(swamp, workdir, name)
    plant(repo / ".swamp/events", epoch)
    for _ in range(2):
        _swamp(swamp, repo, "workflow", "run", "review", "--json")
    code, doc, err = _swamp(swamp, repo, "events", "--after", start, "--timeout", "0", "--json")
    cursors = [e.get("cursor") for e in (doc or {}).get("events", [])]
    expected = [f"{epoch}-{n:012d}" for n in range(3, 7)]
    _, status, _ = _swamp(swamp, repo, "store", "status", "--json")
    skipped = (status or {}).get("eventsSkipped")
    held = code == 0 and cursors == expected and "does not follow" in err and bool(skipped)
    return {
        "attack": name,
        "held": held,
        "detail": f"streamed {cursors} (want {expected}); said: {'does not follow' in err}; "
        f"store status eventsSkipped: {skipped}",
    }


def _plant_line(folder: pathlib.Path, epoch: str) -> None:
    segment = sorted(folder.glob("*.jsonl"))[-1]
    with open(segment, "a") as raw:
        raw.write(PLANTED.format(cursor=f"{epoch}-999999999998", now=NOW))


def _plant_segment(folder: pathlib.Path, epoch: str) -> None:
    cursor = f"{epoch}-500000000000"
    (folder / f"{cursor}.jsonl").write_text(PLANTED.format(cursor=cursor, now=NOW))


def _plant_epoch(folder: pathlib.Path, epoch: str) -> None:
    other = "ffffffff" if epoch != "ffffffff" else "00000000"
    cursor = f"{other}-900000000000"
    (folder / f"{cursor}.jsonl").write_text(PLANTED.format(cursor=cursor, now=NOW))


def run(swamp: str, workdir: pathlib.Path) -> list[dict[str, Any]]:
    results = [
        _hook_attack(
            swamp,
            workdir,
            "hook-background-sleep-outlives-its-shell",
            "sleep 300 & echo $! > pid-$SWAMP_WAIT_ID",
            6,
        ),
    ]
    setsid = (
        "setsid sh -c 'echo $$ > pid-$SWAMP_WAIT_ID; exec sleep 300' & "
        "while ! [ -s pid-$SWAMP_WAIT_ID ]; do sleep 0.01; done"
    )
    if _cgroup_offered():
        results.append(_hook_attack(swamp, workdir, "hook-setsid-escapes-its-process-group", setsid, 3))
    else:
        results.append(
            {
                "attack": "hook-setsid-escapes-its-process-group",
                "held": True,
                "detail": "not tried: this machine offers no writable cgroup v2 (HOOK-015's fallback)",
            }
        )
    results.append(_event_attack(swamp, workdir, "event-log-planted-far-off-cursor", _plant_line))
    results.append(_event_attack(swamp, workdir, "event-log-planted-higher-segment", _plant_segment))
    results.append(_event_attack(swamp, workdir, "event-log-planted-other-epoch", _plant_epoch))
    return results
