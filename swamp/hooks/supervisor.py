"""The detached side of the hooks: take jobs from the queue, run each, audit its outcome.

Started by launch.py as `python -m swamp.hooks ROOT SPOOL SLOT_FD` in a session of its own, with
stdin, stdout and stderr on /dev/null, holding the slot lock SLOT_FD. Each job is taken by
unlinking its file (whoever unlinks it runs it: two supervisors never run one job), run as
`sh -c COMMAND` in ROOT with its document as one JSON line on stdin and its stdout discarded,
in a process group (and, where the machine offers one, a cgroup: contain.py) of its own that is
killed (TERM, then KILL after KILL_GRACE seconds) past the job's timeout, and killed (KILL) as
soon as its shell exits, so nothing it started outlives it (HOOK-010, HOOK-014, HOOK-015). Its
outcome, with the last STDERR_TAIL bytes of its stderr, is appended to the run's audit trail
(HOOK-011). An attempt that does not end `ok` is queued again, due after its backoff, while the
hook has retries left (HOOK-018): the job file's name starts with the time it is due, and a
supervisor that sees only jobs not yet due stays, holding its slot, until the first is. The first
attempt of a job a request is waiting for is reported back to it (report.py, HOOK-016). A job
taken and lost to a crash of this process is not run again: hooks notify, they do not carry state.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..domain.settings import retry_delay
from ..store.files import read_file
from . import MAX_RUNNING
from .contain import Cage

STDERR_TAIL = 2048  # bytes of a hook's stderr kept in its audit entry
KILL_GRACE = 2.0  # seconds between TERM and KILL of a hook past its timeout
READ_GRACE = 0.5  # seconds to finish reading stderr once the hook's shell has exited
RETRY_POLL = 0.5  # seconds between looks at the queue while only retries not yet due are in it


def main(argv: list[str]) -> int:
    root, spool, slot_fd = Path(argv[0]), Path(argv[1]), int(argv[2])
    queue = spool / "queue"
    from .report import remove_stale

    remove_stale(spool)
    while True:
        job = take_job(queue)
        if job is not None:
            run_job(root, job, spool)
            continue
        due_in = _next_due(queue)
        if due_in is not None:  # a retry waits for its time; a job queued meanwhile is seen here
            time.sleep(min(due_in, RETRY_POLL))
            continue
        # Give the slot up, then look again: a job queued while this slot was held (every slot
        # busy, so no supervisor was started for it) is seen here.
        os.close(slot_fd)
        if not _queued(queue):
            return 0
        from .launch import take_slot

        for slot in range(MAX_RUNNING):
            fd = take_slot(spool, slot)
            if fd is not None:
                slot_fd = fd
                break
        else:
            return 0  # the supervisors holding the slots look again when they finish


def _queued(queue: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(queue) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return []


def _due_ns(name: str) -> int:
    try:
        return int(name.split("-", 1)[0])
    except ValueError:
        return 0


def _next_due(queue: Path) -> float | None:
    """Seconds until the first queued job is due; None when the queue is empty."""
    names = _queued(queue)
    if not names:
        return None
    return max(0.0, (_due_ns(names[0]) - time.time_ns()) / 1e9)


def take_job(queue: Path) -> dict[str, Any] | None:
    """The oldest due job in the queue, now this process's to run; None when none is due."""
    now = time.time_ns()
    for name in _queued(queue):
        if _due_ns(name) > now:
            return None  # sorted by due time: nothing after it is due either
        path = queue / name
        try:
            data = read_file(path)
            os.unlink(path)
        except OSError:
            continue  # taken by another supervisor
        try:
            job = json.loads(data)
        except ValueError:
            continue
        if isinstance(job, dict):
            return job
    return None


def run_job(root: Path, job: dict[str, Any], spool: Path | None = None) -> dict[str, Any]:
    """Run one attempt of a hook, queue the next when it did not end ok and retries are left,
    append its outcome to the run's audit trail and report it; returns the entry."""
    started = time.monotonic()
    attempt = _int(job.get("attempt"), 1)
    attempts = 1 + _int(job.get("retries"), 0)
    entry: dict[str, Any] = {
        "action": "hook",
        "hook": str(job.get("hook")),
        "waitId": str(job.get("waitId")),
        "command": str(job.get("command")),
    }
    env = dict(os.environ)
    env.update(
        SWAMP_HOOK=entry["hook"],
        SWAMP_WAIT_ID=entry["waitId"],
        SWAMP_RUN_ID=str(job.get("runId")),
    )
    cage = Cage.make()
    try:
        child, cage = _start(entry["command"], root, env, cage)
    except OSError as exc:
        entry.update({"code": "hook_not_started", "exitCode": None, "timedOut": False, "error": str(exc)})
    else:
        entry.update(_supervise(child, str(job.get("stdin", "")) + "\n", float(job.get("timeout", 30)), cage))
    finally:
        if cage is not None:
            cage.remove()
    entry["durationMs"] = int((time.monotonic() - started) * 1000)
    entry["attempt"] = attempt
    entry["attempts"] = attempts
    at = _now()
    if entry["code"] != "ok" and attempt < attempts and spool is not None:
        delay = retry_delay(float(job.get("backoff", 0) or 0), attempt)
        entry["retryAt"] = _iso(at + dt.timedelta(seconds=delay))
        _requeue(spool, {k: v for k, v in job.items() if k != "report"} | {"attempt": attempt + 1}, delay)
    _audit(root, job, entry, at)
    if spool is not None and job.get("report") and attempt == 1:
        _report(spool, str(job["report"]), job, entry)
    return entry


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _requeue(spool: Path, job: dict[str, Any], delay: float) -> None:
    """The next attempt, due `delay` seconds from now (HOOK-018). Lost if this fails: nowhere to
    say so but the audit entry's retryAt, which then names an attempt that never comes."""
    from ..store.files import write_replace
    from .launch import job_name

    with contextlib.suppress(OSError):
        name = job_name(time.time_ns() + int(delay * 1e9))
        write_replace(spool / "queue" / name, json.dumps(job, ensure_ascii=False).encode("utf-8"))


def _report(spool: Path, name: str, job: dict[str, Any], entry: dict[str, Any]) -> None:
    """The first attempt's outcome, for the request that is waiting for it (report.py)."""
    from ..store.files import write_replace
    from .report import report_path

    document = {**entry, "event": job.get("event"), "runId": job.get("runId")}
    with contextlib.suppress(OSError):
        write_replace(report_path(spool, name), json.dumps(document, ensure_ascii=False).encode("utf-8"))


def _now() -> dt.datetime:
    from ..store.clock import SystemClock

    try:
        return SystemClock().now()
    except Exception:  # a bad SWAMP_NOW: the run's command already said so
        return dt.datetime.now(dt.UTC)


def _iso(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _start(
    command: str, root: Path, env: dict[str, str], cage: Cage | None
) -> tuple[subprocess.Popen[bytes], Cage | None]:
    """`sh -c COMMAND` in a session (so a process group) of its own, and in `cage` when there is
    one; a cage the child cannot enter (a cgroup whose parent refuses the move) is given up and
    the hook started again without it: it had not run anything yet."""
    options: dict[str, Any] = {
        "cwd": root,
        "env": env,
        "stdin": subprocess.PIPE,
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.PIPE,
        "start_new_session": True,
    }
    if cage is not None:
        try:
            return subprocess.Popen(["sh", "-c", command], preexec_fn=cage.enter, **options), cage
        except subprocess.SubprocessError:
            cage.remove()  # the move was refused (preexec_fn raised): no process ran
    return subprocess.Popen(["sh", "-c", command], **options), None


def _supervise(
    child: subprocess.Popen[bytes], document: str, timeout: float, cage: Cage | None = None
) -> dict[str, Any]:
    tail = bytearray()

    def feed() -> None:
        assert child.stdin is not None
        with contextlib.suppress(OSError):  # a hook need not read its stdin
            child.stdin.write(document.encode("utf-8"))
        with contextlib.suppress(OSError):
            child.stdin.close()

    def drain() -> None:
        assert child.stderr is not None
        for chunk in iter(lambda: child.stderr.read1(4096) if child.stderr else b"", b""):
            tail.extend(chunk)
            del tail[:-STDERR_TAIL]

    threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        code = child.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(child.pid, signal.SIGTERM)
        if cage is not None:
            cage.signal(signal.SIGTERM)
        try:
            code = child.wait(KILL_GRACE)
        except subprocess.TimeoutExpired:
            _kill_group(child.pid, signal.SIGKILL)
            code = child.wait()
    # The hook ends with its shell: whatever it left behind, in its process group or (where it
    # has one) its cgroup, is killed before the outcome is audited (HOOK-014, HOOK-015).
    _kill_group(child.pid, signal.SIGKILL)
    if cage is not None:
        cage.kill()
    threads[1].join(READ_GRACE)  # a background process holding stderr open does not hold the audit
    outcome: dict[str, Any] = {
        "code": "hook_timed_out" if timed_out else ("ok" if code == 0 else "hook_failed"),
        "exitCode": None if timed_out else (code if code >= 0 else 128 - code),
        "timedOut": timed_out,
    }
    text = bytes(tail).decode("utf-8", "replace")
    if text:
        outcome["stderr"] = text
    return outcome


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, sig)


def _audit(root: Path, job: dict[str, Any], entry: dict[str, Any], now: dt.datetime) -> None:
    """Append the hook's outcome to its run's audit trail, through the repository's store (the
    environment, SWAMP_STORE_URL included, is the one the run's command had). The run is read
    through the store first: a run or repository removed meanwhile (or a store that cannot be
    reached, or a link planted in the trail's place or above it) gets nothing, and nowhere is
    created. Nowhere to say it if this fails: stderr is /dev/null (the run's terminal is not ours)."""
    from ..domain.errors import SwampError
    from ..store.choose import open_store
    from ..store.clock import current_user
    from ..store.repo import find_repo
    from ..store.settings import load_settings

    if not job.get("audit"):
        return
    line = {"at": _iso(now), "by": current_user(), **entry}
    with contextlib.suppress(SwampError, OSError):
        layout = find_repo(str(root))
        runs = open_store(layout, load_settings(layout)).runs(None)
        run = runs.load(str(job.get("workflowId", "")), str(job.get("runId", "")))
        runs.append_audit(run, line)
