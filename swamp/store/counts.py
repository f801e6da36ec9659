"""What one process asked of durable storage, counted for scripts/bench: round trips to
PostgreSQL, commits there, fsyncs on files.

Off unless SWAMP_STORE_COUNTS names a file; then the counts are appended to it at exit as one JSON
line `{"pid", "roundTrips", "commits", "fsyncs"}`, so a benchmark can say what a signal or a
continuation costs (issue 31) without timing anything. Counting is one integer addition.
"""

from __future__ import annotations

import atexit
import json
import os

COUNTS = {"roundTrips": 0, "commits": 0, "fsyncs": 0}


def fsync(fd: int) -> None:
    """os.fsync, counted."""
    COUNTS["fsyncs"] += 1
    os.fsync(fd)


def _write() -> None:
    path = os.environ.get("SWAMP_STORE_COUNTS")
    if not path:
        return
    line = json.dumps({"pid": os.getpid(), **COUNTS}) + "\n"
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line)
    except OSError:
        pass


if os.environ.get("SWAMP_STORE_COUNTS"):
    atexit.register(_write)
