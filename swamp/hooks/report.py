"""What a command tells of the hooks it started (HOOK-016): the first attempt's outcome of each,
when it ends within a short window after the command's work is done.

Why a window and report files: a hook runs detached (HOOK-009), so the command that started it
cannot see it end unless it looks. The request that started hooks (protocol/requests.py `handle`,
which sets the collector) waits, after its work is done and before it answers, until each hook's
first attempt has ended or REPORT_WAIT seconds have passed, whichever is first: a hook that fails
at once (no webhook, a missing script) is named in the answer; one still running is not waited
for (`swamp workflow waits` marks a waitOpened hook that failed later, HOOK-017). The supervisor
writes the entry of a reported job's first attempt to `<spool>/reports/<job>.json`; this side
reads and removes it. A report nobody read (the window passed) is removed by a later supervisor.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

DEFAULT_REPORT_WAIT = 2.0  # seconds; SWAMP_HOOK_REPORT_WAIT overrides (0: do not wait)
POLL = 0.02
STALE_REPORT = 3600.0  # seconds after which a report nobody read is removed

# The hooks started while answering the current request: (spool, job name) pairs; None when no
# request is collecting (serve's deadline sweep, a direct use of the app layer).
COLLECTOR: ContextVar[list[tuple[Path, str]] | None] = ContextVar("swamp_hook_reports", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[tuple[Path, str]]]:
    started: list[tuple[Path, str]] = []
    token = COLLECTOR.set(started)
    try:
        yield started
    finally:
        COLLECTOR.reset(token)


def report_path(spool: Path, name: str) -> Path:
    return spool / "reports" / name


def report_wait() -> float:
    raw = os.environ.get("SWAMP_HOOK_REPORT_WAIT", "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_REPORT_WAIT
    except ValueError:
        return DEFAULT_REPORT_WAIT
    return value if 0 <= value <= 600 else DEFAULT_REPORT_WAIT


def await_reports(started: list[tuple[Path, str]], window: float | None = None) -> list[dict[str, Any]]:
    """The first-attempt entries of `started` that ended within the window and not `ok`, in the
    order the hooks were started."""
    window = report_wait() if window is None else window
    deadline = time.monotonic() + window
    pending = list(started)
    ended: dict[str, dict[str, Any]] = {}
    while pending:
        for spool, name in list(pending):
            path = report_path(spool, name)
            try:
                entry = json.loads(path.read_bytes())
            except FileNotFoundError:
                continue
            except (OSError, ValueError):
                entry = None
            with contextlib.suppress(OSError):
                path.unlink()
            pending.remove((spool, name))
            if isinstance(entry, dict):
                ended[name] = entry
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(POLL)
    return [ended[name] for _, name in started if name in ended and ended[name].get("code") != "ok"]


def remove_stale(spool: Path) -> None:
    """Reports older than STALE_REPORT: their command stopped looking long ago."""
    folder = spool / "reports"
    try:
        names = os.listdir(folder)
    except OSError:
        return
    limit = time.time() - STALE_REPORT
    for name in names:
        with contextlib.suppress(OSError):
            path = folder / name
            if path.stat().st_mtime < limit:
                path.unlink()
