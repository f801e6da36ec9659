"""The saving side of the hooks: queue the jobs, start a supervisor when a slot is free.

Nothing here waits for a hook: the supervisor runs in a session of its own, and the only thing
kept of it is its Popen, reaped at the next launch so a long-lived process (serve) gathers no
zombies.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..store.files import refuse_links, write_replace
from ..store.repo import RepoLayout
from . import MAX_RUNNING

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

# The supervisors this process started, reaped (poll) at the next launch. Process-wide, like the
# children the subprocess module itself keeps: a Popen is a process resource, not an App's.
_started: list[subprocess.Popen[bytes]] = []
_started_lock = threading.Lock()
_sequence = itertools.count()


def spool_dir(layout: RepoLayout) -> Path:
    return layout.datastore / "hooks"


def launch(layout: RepoLayout, jobs: list[dict[str, Any]]) -> None:
    """Queue `jobs` and start up to one supervisor per job while slots are free. When a request
    is collecting (report.py), each job's first attempt is reported back to it."""
    from .report import COLLECTOR

    spool = spool_dir(layout)
    queue = spool / "queue"
    refuse_links(str(layout.root), str(queue))
    collector = COLLECTOR.get()
    for job in jobs:
        name = job_name(time.time_ns())
        if collector is not None:
            job = {**job, "report": name}
            collector.append((spool, name))
        write_replace(queue / name, json.dumps(job, ensure_ascii=False).encode("utf-8"))
    _reap()
    started = 0
    for slot in range(MAX_RUNNING):
        if started == len(jobs):
            break
        fd = take_slot(spool, slot)
        if fd is None:
            continue
        try:
            _start_supervisor(layout, spool, fd)
            started += 1
        finally:
            os.close(fd)  # the supervisor holds the slot through its own copy


def job_name(due_ns: int) -> str:
    """A job file's name: the time it may start (ns since the epoch) first, so the queue sorts by
    it and a supervisor takes what is due, oldest first (a retry waits its turn, HOOK-018)."""
    return f"{due_ns:020d}-{os.getpid()}-{next(_sequence):06d}.json"


def take_slot(spool: Path, slot: int) -> int | None:
    """An open file descriptor holding slot `slot`'s lock, or None when a supervisor holds it."""
    path = spool / f"slot-{slot}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _CLOEXEC | _NOFOLLOW, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _start_supervisor(layout: RepoLayout, spool: Path, slot_fd: int) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "swamp.hooks", str(layout.root), str(spool), str(slot_fd)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(slot_fd,),
        start_new_session=True,  # not in the run's process group: Ctrl-C on the run leaves it be
        cwd=str(layout.root),
    )
    with _started_lock:
        _started.append(child)


def _reap() -> None:
    with _started_lock:
        _started[:] = [child for child in _started if child.poll() is None]
