"""Instants as run records write them: UTC, to the millisecond, with a trailing `Z`.

Kept apart from the run aggregate so that waits, gates and change events can read and write
times without importing `run.py` (which imports them).
"""

from __future__ import annotations

import datetime as dt


def iso(moment: dt.datetime) -> str:
    """UTC timestamp with milliseconds, as every record field is written."""
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)
