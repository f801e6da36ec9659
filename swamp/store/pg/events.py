"""The event log in PostgreSQL, and the waiters woken by LISTEN/NOTIFY.

Why: the same log as the file store's (store/events.py: every published change of every run, one
total order, opaque gap-free cursors `<epoch>-<seq, 12 digits>`), shared by every host. An append
is one transaction: it bumps `events_seq` in `swamp_meta` (the row lock orders appenders, so seq is
gap-free and in commit order), inserts the rows and NOTIFYs the schema's `events` channel with the
last cursor. Retention keeps the newest KEEP events; a cursor older than that is refused
(cursor_expired) as on files.

Waiters: a subscriber (`changes()`) and `workflow watch` (`RunChanges`) block on a dedicated
connection that LISTENs, costing no CPU while nothing happens; `RunChanges` also watches the run's
live journal, a local file (store/notify.py). A wake-up may be spurious (the caller reads again);
a connection that broke wakes the caller, and the next wait listens again on a new one.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from typing import Any

from ..events import check_cursor, cursor_of
from ..notify import POLL_SECONDS, Changes, readable
from .connection import Database
from .idents import quote_ident

KEEP = 100_000  # events kept; older cursors are refused with cursor_expired
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_STATE = (
    "SELECT (SELECT value FROM swamp_meta WHERE key = 'events_epoch'), "
    "(SELECT value FROM swamp_meta WHERE key = 'events_seq')::bigint, (SELECT min(seq) FROM events)"
)


class PgEventLog:
    def __init__(self, db: Database):
        self.db = db
        self.where = f"postgresql:{db.schema}/events"
        self.warned = False
        self.retention_blocked: tuple[str, str] | None = None  # a DELETE drops what it must
        self.retention_warned = False
        self.skipped: list[str] = []  # rows are numbered by the database: none is out of sequence

    def append(self, events: list[dict[str, Any]]) -> list[str]:
        """Append `events` (each gains its `cursor`, first, in place) in one transaction."""
        if not events:
            return []
        with self.db.transaction() as conn:
            row = conn.execute(
                "UPDATE swamp_meta SET value = (value::bigint + %s)::text WHERE key = 'events_seq' "
                "RETURNING value::bigint, (SELECT value FROM swamp_meta WHERE key = 'events_epoch')",
                (len(events),),
            ).fetchone()
            assert row is not None
            last, epoch = int(row[0]), str(row[1])
            first = last - len(events) + 1
            cursors, rows = [], []
            for seq, event in enumerate(events, start=first):
                cursor = cursor_of(epoch, seq)
                event.pop("cursor", None)
                stamped = {"cursor": cursor, **event}
                event.clear()
                event.update(stamped)
                cursors.append(cursor)
                run_id = event.get("runId")
                run = run_id if isinstance(run_id, str) else None
                rows.append((seq, run, str(event.get("event", "")), _encode(event)))
            conn.execute(
                "INSERT INTO events (seq, run_id, kind, body) VALUES "
                + ", ".join(["(%s, %s, %s, %s)"] * len(rows)),
                [value for row in rows for value in row],
            )
            if last // 1000 != (first - 1) // 1000:  # now and then: the oldest beyond KEEP go
                conn.execute("DELETE FROM events WHERE seq <= %s", (last - KEEP,))
            conn.execute("SELECT pg_notify(%s, %s)", (self.db.channel("events"), cursors[-1]))
        return cursors

    def _state(self) -> tuple[str, int, int | None]:
        epoch, last, oldest = self.db.execute(_STATE)[0]
        return str(epoch), int(last), (None if oldest is None else int(oldest))

    def start(self) -> str:
        epoch, last, _ = self._state()
        return cursor_of(epoch, last)

    def check(self, after: str) -> tuple[str, int]:
        epoch, last, first = self._state()
        return check_cursor(after, epoch, last if first is None else first - 1, lambda: last)

    def read(self, after: str | None, limit: int) -> list[dict[str, Any]]:
        if after is None:
            _, last, first = self._state()
            seq = last if first is None else first - 1
        else:
            _, seq = self.check(after)
        rows = self.db.execute(
            "SELECT seq, body FROM events WHERE seq > %s ORDER BY seq LIMIT %s", (seq, max(0, limit))
        )
        if rows and after is not None and int(rows[0][0]) != seq + 1:
            self.check(after)  # pruned since it was checked: refused
        found = []
        for _, body in rows:
            with contextlib.suppress(ValueError):
                event = json.loads(body)
                if isinstance(event, dict):
                    found.append(event)
        return found

    def changes(self) -> Listener:
        """Armed on entry: a wait() returns once an append committed since."""
        return Listener(self.db, "events")


class Listener:
    """A Waiter on a dedicated LISTEN connection (and, optionally, local files that change).
    `payload`: only notifications carrying it wake the caller (a run's ID on `saved`)."""

    def __init__(self, db: Database, channel: str, *, payload: str | None = None, files: Sequence[str] = ()):
        self.db = db
        self.channel = db.channel(channel)
        self.payload = payload
        self.files = list(files)
        self._conn: Any = None  # psycopg's (lean.py reads no notifications)
        self._changes: Changes | None = None

    def __enter__(self) -> Listener:
        self._listen()
        if self.files:
            self._changes = Changes(self.files)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        if self._changes is not None:
            self._changes.close()
            self._changes = None

    def _listen(self) -> None:
        conn = self.db.connect()
        with self.db.errors("listen to"):
            conn.execute(f"LISTEN {quote_ident(self.channel)}")
        self._conn = conn

    def _drain(self) -> bool:
        """Whether a notification that concerns the caller arrived (or the connection broke)."""
        conn = self._conn
        if conn is None:
            return False
        woken = False
        try:
            pg = conn.pgconn
            pg.consume_input()
            while (note := pg.notifies()) is not None:
                if self.payload is None or note.extra.decode("utf-8", "replace") == self.payload:
                    woken = True
        except Exception:  # psycopg.Error: the connection broke
            woken = True
        if conn.closed or conn.broken or pg.status != 0:  # CONNECTION_OK is 0
            with contextlib.suppress(Exception):
                conn.close()
            self._conn = None
            woken = True
        return woken

    def wait(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._conn is None:
                self._listen()  # the database went away and came back: listen again
                return True  # something may have changed while nobody listened
            if self._drain():
                return True
            if self._changes is not None and self._changes.wait(0):
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            fds = [self._conn.fileno()] if self._conn is not None else []
            inotify = getattr(self._changes, "_inotify", None)
            if inotify is not None:
                fds.append(inotify.fd)
            elif self._changes is not None:  # the journal is polled: wake to look at it
                left = POLL_SECONDS if left is None else min(left, POLL_SECONDS)
            with contextlib.suppress(OSError):  # a connection closed under us: the next _drain sees it
                readable(fds, left)


def RunChanges(db: Database, run_id: str, journal_path: str) -> Listener:  # noqa: N802 - a factory
    """Wakes `workflow watch` when the run is saved (by any host) or its local journal changes."""
    return Listener(db, "saved", payload=run_id, files=[journal_path])
