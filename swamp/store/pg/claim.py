"""The run claim on PostgreSQL: a session advisory lock, so a host that dies releases it.

Why a session lock: `run` and `resume` hold the claim while they execute, possibly for long; a
session lock ends with its connection, so a crashed process (or a host that went away) never
blocks the next command, and its run then shows as interrupted, exactly as with the file store.
The key is `hashtextextended('<schema>:' || run_id, 0)`, so schemas of one database never contend.
Waiting is server-side, bounded by `lock_timeout` (the claim timeout); past it: claim_timeout
(exit 75) naming the holder, which set its application_name to `swamp <purpose> pid <pid>@<host>`.
The lock lives on the thread's connection (connection.py): two threads contend as two processes.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
from types import TracebackType
from typing import Any

from ...domain.errors import ClaimTimeout
from ..claim import DEFAULT_TIMEOUT, default_timeout
from .connection import LOCK_NOT_AVAILABLE, Database, LockRefused, granted_advisory

_KEY = "hashtextextended(%s, 0)"
_HOLDER = (
    "SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    f"WHERE {granted_advisory('l')}"
)


def _lock_name(db: Database, run_id: str) -> str:
    return f"{db.schema}:{run_id}"


def claim_held(db: Database, run_id: str) -> bool:
    """Whether any session holds the run's claim (right in the holder's own process too)."""
    rows = db.execute(f"SELECT EXISTS ({_HOLDER}) FROM (SELECT {_KEY} AS key) k", (_lock_name(db, run_id),))
    return bool(rows[0][0])


class PgClaim:
    """A run's claim. `brief` (a signal, an approval: read, save, let go): a transaction-level
    advisory lock, taken by the transaction that holds everything saved under the claim, which
    commits when the claim is let go: no separate lock and unlock, and the lock statement travels
    with the first read (lean.py's pipeline). It conflicts with the session lock of a process that
    executes the run exactly as another session lock would."""

    def __init__(
        self,
        db: Database,
        run_id: str,
        *,
        timeout: float | None = None,
        purpose: str = "",
        brief: bool = False,
    ):
        self.db = db
        self.run_id = run_id
        chosen = default_timeout() if timeout is None else timeout
        self.timeout = chosen if math.isfinite(chosen) and chosen >= 0 else DEFAULT_TIMEOUT
        self.purpose = purpose
        self.brief = brief
        self._conn: Any = None
        self._transaction: Any = None

    def _application_name(self) -> str:
        return f"swamp {self.purpose or 'claim'} pid {os.getpid()}@{socket.gethostname()}"[:63]

    def acquire(self) -> PgClaim:
        if self.brief and self.timeout > 0 and not self.db.in_transaction():
            return self._begin_brief()
        name = _lock_name(self.db, self.run_id)
        conn = self.db.connection()
        if self.timeout <= 0:  # lock_timeout 0 would wait forever: no wait at all
            if not self.try_acquire():
                self._refuse()
            return self
        millis = max(1, int(self.timeout * 1000))
        refused = False
        with self.db.errors("take a run's claim in"):
            try:
                conn.execute(
                    "SELECT set_config('application_name', %s, false), "
                    "set_config('lock_timeout', %s, true), pg_advisory_lock(" + _KEY + ")",
                    (self._application_name(), f"{millis}ms", name),
                )
            except Exception as exc:  # lock_not_available (55P03): psycopg calls it operational
                if getattr(exc, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                    raise
                refused = True
        if refused:
            self._refuse()
        self._conn = conn
        return self

    def _refuse(self) -> None:
        holder = ""
        with contextlib.suppress(Exception):
            rows = self.db.execute(
                f"SELECT h.application_name, h.pid FROM (SELECT {_KEY} AS key) k, LATERAL ({_HOLDER}) h",
                (_lock_name(self.db, self.run_id),),
            )
            if rows:
                holder = f" (held by {rows[0][0] or 'a session'}, backend pid {rows[0][1]})"
        raise ClaimTimeout(
            f"Run {self.run_id} is busy{holder} and its claim could not be had within "
            f"{self.timeout:g}s; try again (or raise --claim-timeout)",
            {"runId": self.run_id, "timeout": self.timeout},
        )

    def try_acquire(self) -> bool:
        """Take the claim only if it is free right now."""
        conn = self.db.connection()
        with self.db.errors("take a run's claim in"):
            row = conn.execute(
                "SELECT set_config('application_name', %s, false), pg_try_advisory_lock(" + _KEY + ")",
                (self._application_name(), _lock_name(self.db, self.run_id)),
            ).fetchone()
        if row is None or not row[1]:
            return False
        self._conn = conn
        return True

    def _begin_brief(self) -> PgClaim:
        millis = max(1, int(self.timeout * 1000))
        transaction = self.db.transaction("write to", keep_on_error=True)
        transaction.__enter__()
        self._transaction = transaction
        self.db.send(
            "SELECT set_config('lock_timeout', %s, true), pg_advisory_xact_lock(" + _KEY + ")",
            (f"{millis}ms", _lock_name(self.db, self.run_id)),
        )
        self.db.refuse_lock_timeout(True)  # the lock's refusal arrives with the next read
        return self

    def release(self, failure: BaseException | None = None) -> None:
        transaction, self._transaction = self._transaction, None
        if transaction is not None:
            self.db.refuse_lock_timeout(False)
            # Commits what was written under the claim, even when the block failed (as the file
            # store keeps it); a refusal of the lock itself was rolled back by the database.
            if failure is None:
                transaction.__exit__(None, None, None)
            else:
                transaction.__exit__(type(failure), failure, failure.__traceback__)
            return
        conn, self._conn = self._conn, None
        if conn is None or conn.closed or conn.broken:
            return  # the session ended, and its lock with it
        with contextlib.suppress(Exception):  # a session that broke released its locks
            conn.execute(
                "SELECT pg_advisory_unlock(" + _KEY + "), set_config('application_name', 'swamp', false)",
                (_lock_name(self.db, self.run_id),),
            )

    def __enter__(self) -> PgClaim:
        if self._conn is None and self._transaction is None:
            self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._transaction is not None:
            self.release(value)
            if isinstance(value, LockRefused):
                self._refuse()  # now that the transaction is over, the holder can be asked
            return
        self.release()


class PgAnnouncement:
    """A shared session advisory lock on `<schema>:<name>`, held on a connection of its own for the
    life of a process (a serve enforcing deadlines, SERVE-047): any number of hosts hold it at
    once, and PostgreSQL lets go of it when the holder's session ends, so a host that died is
    never announced. `renew` takes it again on a new connection after the old one broke."""

    def __init__(self, db: Database, name: str):
        self.db = db
        self.name = name
        self._conn: Any = None

    def hold(self) -> PgAnnouncement:
        conn = self.db.connect()
        with self.db.errors("announce a serve in"):
            conn.execute(
                "SELECT set_config('application_name', %s, false), pg_advisory_lock_shared(" + _KEY + ")",
                (
                    f"swamp serve {self.name} pid {os.getpid()}@{socket.gethostname()}"[:63],
                    _lock_name(self.db, self.name),
                ),
            )
        self._conn = conn
        return self

    def renew(self) -> None:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            self.release()
            self.hold()

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # unlocked first: a closed session ends a moment later
                conn.execute(
                    "SELECT pg_advisory_unlock_shared(" + _KEY + ")", (_lock_name(self.db, self.name),)
                )
            with contextlib.suppress(Exception):
                conn.close()
