"""The event log in PostgreSQL, and the waiters woken by LISTEN/NOTIFY.

Why: the same log as the file store's (store/events.py: every published change of every run, one
total order, opaque cursors `<epoch>-<seq, 12 digits>`), shared by every host, and appended by
many writers at once without making their commits take turns.

Numbering (schema version 2): an event's `seq` is derived from the id of the transaction that
appended it, `base + (xid - xid0) * PER_TRANSACTION + i` (`base`, `xid0` fixed in swamp_meta by
the migration; `i` the event's place in its append), so appenders share no row: no counter to
lock, and concurrent saves share the disk flushes of their commits. The log's order is `seq`'s.
Transaction ids are handed out in order but transactions commit in any order, so a reader only
takes events below the *watermark*, mapped to a seq from the oldest transaction id that may still
append. Every transaction below it has ended, so no event can ever appear below a seq a reader
has passed: a reader that moves its cursor forward never skips one (EVENT-008), and every reader
sees the same order (EVENT-006). That id is the snapshot's xmin (free to compute) unless events
already wait above it; then it is the oldest among this schema's writers only (from pg_locks), so
someone else's transaction, open for as long as it likes, holds no event back. A transaction of
this schema's writers held open for long does: events wait, none is lost. The events of one run
keep their order: its saves are made under its claim, one transaction after the other.

A save's events are inserted in the save's own transaction (runs.py): both commit or neither. The
NOTIFY that wakes readers is sent just after the commit, in the same round trip, by a transaction
that does not wait for the disk; a lost notification costs a reader at most HINT_SECONDS.
Retention keeps about the newest KEEP events; a cursor older than that is refused
(cursor_expired) as on files.

Waiters: a subscriber (`changes()`) and `workflow watch` (`RunChanges`) block on a dedicated
connection that LISTENs, costing no CPU while nothing happens; `RunChanges` also watches the run's
live journal, a local file (store/notify.py). A wake-up may be spurious (the caller reads again);
a connection that broke wakes the caller, and the next wait listens again on a new one.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from ...domain.errors import StorageError
from ..events import check_cursor, cursor_of, cursor_seq
from ..notify import POLL_SECONDS, Changes, readable
from .connection import Database, granted_advisory, writers_key
from .idents import quote_ident

KEEP = 100_000  # events kept (about); older cursors are refused with cursor_expired
PER_TRANSACTION = 1_000_000  # seq numbers of one transaction: at most this many events per append
PRUNE_ONE_IN = 500  # an append prunes what is beyond KEEP once in this many (on average)
HINT_SECONDS = 1.0  # the longest a waiter sleeps without reading again (a lost NOTIFY, the watermark)
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_NUMBERING = (
    "(SELECT value::bigint FROM swamp_meta WHERE key = 'events_base'), "
    "(SELECT value::bigint FROM swamp_meta WHERE key = 'events_xid0')"
)
# The watermark is computed in a statement of its own, before the statement that reads the rows
# (which then has a later snapshot): every write transaction of this schema holds a shared
# advisory lock on `<schema>:events` (connection.py takes it just before its first write, before
# the transaction has an id); the oldest id among the holders, or the next id to be given when
# a holder has none yet or there is none, is the first id whose events may still come. Only this
# schema's writers hold readers back, never another application's transactions.
# A pg_locks transactionid (32 bits) as the 64-bit id: the one nearest the next id. pg_locks is
# read after the statement's snapshot was taken, so a holder's id may be a little past `next` (a
# writer given its id meanwhile): only an id more than 2^31 away is of the other epoch.
_XID8 = (
    "((s.next >> 32) << 32) + t.transactionid::text::bigint + CASE "
    "WHEN ((s.next >> 32) << 32) + t.transactionid::text::bigint > s.next + 2147483648 THEN -4294967296 "
    "WHEN ((s.next >> 32) << 32) + t.transactionid::text::bigint < s.next - 2147483648 THEN 4294967296 "
    "ELSE 0 END"
)
# A holder listed without an id may be one being given its id right now: PostgreSQL advances the
# next id (and lists the id as running in snapshots) a moment before it lists the id's lock in
# pg_locks. So for such a holder the bound is the oldest id running in the snapshot whose lock
# pg_locks does not list (none: the next id; the holder's id, if it gets one later, is above it).
_UNLISTED = (
    "u AS (SELECT r.x::text::bigint AS x FROM pg_snapshot_xip(pg_current_snapshot()) AS r(x) "
    "WHERE NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'transactionid' "
    "AND l.transactionid::text::bigint = r.x::text::bigint % 4294967296))"
)
# The watermark, in a statement of its own (see above). First the free bound: the snapshot's xmin
# (every older transaction has ended, whoever ran it; this one's own id, if it has one, counted
# too). Only when events already wait at or above it is the bound of this schema's writers
# computed (the CTEs reading pg_locks are evaluated only then): it costs the server a walk of its
# whole lock table, and lets through what someone else's transaction would hold back.
_MARK = (
    "SELECT set_config('swamp.events_mark', (WITH k AS (SELECT hashtextextended(%s, 0) AS key), "
    "s AS (SELECT pg_snapshot_xmax(c.snap)::text::bigint AS next, least(pg_snapshot_xmin(c.snap)"
    "::text::bigint, pg_current_xact_id_if_assigned()::text::bigint) AS oldest "
    "FROM (SELECT pg_current_snapshot() AS snap) AS c), "
    f"{_UNLISTED}, "
    "h AS (SELECT CASE WHEN t.transactionid IS NOT NULL THEN "
    f"{_XID8} ELSE least(s.next, (SELECT min(x) FROM u)) END AS x "
    "FROM k, s, pg_locks a LEFT JOIN pg_locks t ON t.locktype = 'transactionid' "
    "AND t.virtualtransaction = a.virtualtransaction AND t.mode = 'ExclusiveLock' "
    f"WHERE {granted_advisory('a')}) "
    "SELECT CASE WHEN coalesce((SELECT max(seq) FROM events) >= f.free, false) "
    f"THEN n.b + (least((SELECT min(x) FROM h), s.next) - n.x) * {PER_TRANSACTION} ELSE f.free END "
    f"FROM (SELECT {_NUMBERING}) AS n(b, x), s, "
    f"LATERAL (SELECT n.b + (s.oldest - n.x) * {PER_TRANSACTION} AS free) AS f)::text, false)"
)
_Sent = tuple[str, Any, Callable[[list[tuple[Any, ...]]], None]]  # a statement, its values, its rows' taker
_WATERMARK = "current_setting('swamp.events_mark')::bigint"
_KEPT_AFTER = "(SELECT value::bigint FROM swamp_meta WHERE key = 'events_kept_after')"
_STATE = (
    "SELECT (SELECT value FROM swamp_meta WHERE key = 'events_epoch'), w.mark, "
    "(SELECT max(seq) FROM events), (SELECT max(seq) FROM events WHERE seq < w.mark), "
    f"{_KEPT_AFTER} FROM (SELECT {_WATERMARK} AS mark) AS w"
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
        """Append `events` in this thread's transaction (the save's; one of their own when none is
        open). Each gains its `cursor`, first, in place, once the transaction commits."""
        if not events:
            return []
        if getattr(self.db, "events_refused", False):  # runs.py: the database refused the append
            raise StorageError(
                f"Could not write to the PostgreSQL store at {self.db.shown}: the database refused "
                "the event log's append; fix what it says (a trigger, a right on the events table)",
                {"path": None, "errno": None, "store": self.db.shown},
            )
        if len(events) >= PER_TRANSACTION:
            raise ValueError(f"at most {PER_TRANSACTION - 1} events can be appended at once")
        rows = []
        for place, event in enumerate(events):
            event.pop("cursor", None)
            run_id = event.get("runId")
            run = run_id if isinstance(run_id, str) else None
            rows.append((place, run, str(event.get("event", "")), _encode(event)))
        cursors: list[str] = []

        def numbered(returned: list[tuple[Any, ...]]) -> None:
            first = min(int(r[0]) for r in returned)
            epoch = str(returned[0][1])
            for place, event in enumerate(events):
                cursor = cursor_of(epoch, first + place)
                stamped = {"cursor": cursor, **event}
                event.clear()
                event.update(stamped)
                cursors.append(cursor)

        with self.db.transaction():
            self.db.send(
                "INSERT INTO events (seq, run_id, kind, body) "
                "SELECT n.b + (pg_current_xact_id()::text::bigint - n.x) * "
                f"{PER_TRANSACTION} + v.place, v.run_id, v.kind, v.body "
                f"FROM (SELECT {_NUMBERING}) AS n(b, x), (VALUES "
                + ", ".join(["(%s::int, %s, %s, %s)"] * len(rows))
                + ") AS v(place, run_id, kind, body) "
                "RETURNING seq, (SELECT value FROM swamp_meta WHERE key = 'events_epoch')",
                [value for row in rows for value in row],
                numbered,
            )
            if random.randrange(PRUNE_ONE_IN) == 0:  # now and then: the oldest beyond KEEP go
                self.db.send(  # what is gone is said in events_kept_after (cursor_expired)
                    "WITH gone AS (DELETE FROM events WHERE seq < "
                    "(SELECT seq FROM events ORDER BY seq DESC OFFSET %s LIMIT 1) RETURNING seq) "
                    "UPDATE swamp_meta SET value = "
                    "GREATEST(value::bigint, (SELECT max(seq) FROM gone))::text "
                    "WHERE key = 'events_kept_after' AND EXISTS (SELECT 1 FROM gone)",
                    (KEEP,),
                )
            self.db.notify("events", "")
        return cursors

    def _marked(self, sql: str, params: Any = None, before: _Sent | None = None) -> list[tuple[Any, ...]]:
        """`sql` (and `before`, a statement whose rows go to its callback), reading the watermark
        of the statement sent just before them: one round trip."""
        self.db.send(_MARK, (writers_key(self.db),))
        if before is not None:
            self.db.send(*before)
        return self.db.execute(sql, params)

    def _state(self) -> tuple[str, int, int, int]:
        """(epoch, the end of the log for a reader starting now: the last event every reader may
        take, the last seq given out, the seq after which every event is still kept)."""
        return _state_of(self._marked(_STATE)[0])

    def start(self) -> str:
        epoch, end, _, _ = self._state()
        return cursor_of(epoch, end)

    def check(self, after: str) -> tuple[str, int]:
        epoch, _, given, kept_after = self._state()
        return check_cursor(after, epoch, kept_after, lambda: given)

    def read(self, after: str | None, limit: int) -> list[dict[str, Any]]:
        """The events after `after` (None: the oldest kept) that every reader may take now: those
        below the watermark."""
        if after is None:
            epoch, _, _, seq = self._state()
        elif (given_seq := cursor_seq(after)) is None:
            epoch, seq = self.check(after)  # refused
        else:
            seq = given_seq
        state: list[tuple[Any, ...]] = []
        rows = self._marked(  # checked with the state read in the same round trip as the rows
            f"SELECT seq, body, {_KEPT_AFTER} FROM events "
            f"WHERE seq > %s AND seq < {_WATERMARK} ORDER BY seq LIMIT %s",
            (seq, max(0, limit)),
            None if after is None else (_STATE, None, state.extend),
        )
        if after is not None:
            epoch, _, given, kept_after = _state_of(state[-1])
            epoch, seq = check_cursor(after, epoch, kept_after, lambda: given)
        if rows and after is not None and seq < int(rows[0][2]):
            self.check(after)  # pruned since it was checked: refused, never a silent gap
        found = []
        for number, body, _ in rows:
            with contextlib.suppress(ValueError):
                event = json.loads(body)
                if isinstance(event, dict):
                    event.pop("cursor", None)  # events appended before schema version 2 hold theirs
                    found.append({"cursor": cursor_of(epoch, int(number)), **event})
        return found

    def changes(self) -> Listener:
        """Armed on entry: a wait() returns once an append committed since."""
        return Listener(self.db, "events")


def _state_of(row: tuple[Any, ...]) -> tuple[str, int, int, int]:
    """PgEventLog._state from a row of _STATE."""
    epoch, watermark, newest, final, kept_after = row
    given = int(watermark) - 1 if newest is None else max(int(watermark) - 1, int(newest))
    end = int(kept_after) if final is None else max(int(final), int(kept_after))
    return str(epoch), end, given, int(kept_after)


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
        """True when the caller should read again: a notification, a change of its files, the
        connection lost, or HINT_SECONDS without any (a notification is a hint that can be lost,
        and events held back by the watermark are announced by nobody); False when `timeout`
        passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        hint = time.monotonic() + HINT_SECONDS
        while True:
            if self._conn is None:
                self._listen()  # the database went away and came back: listen again
                return True  # something may have changed while nobody listened
            if self._drain():
                return True
            if self._changes is not None and self._changes.wait(0):
                return True
            now = time.monotonic()
            left = None if deadline is None else deadline - now
            if left is not None and left <= 0:
                return False
            if now >= hint:
                return True
            left = hint - now if left is None else min(left, hint - now)
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
