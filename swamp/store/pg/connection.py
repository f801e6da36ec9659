"""Connections to the PostgreSQL store: one per thread, in autocommit, each failure said plainly.

Why one per thread: a claim is a session advisory lock (claim.py), and a session lock is
re-entrant within its session; with one connection per thread, two threads of one `swamp serve`
contend for a run exactly as two processes do. A thread's connection is made on first use and made
again after the database went away (a restart), so a long-lived serve recovers by itself.

The address is libpq's (a `postgresql://` URL or `service=NAME`); passwords come from libpq's own
places (PGPASSWORD, ~/.pgpass, the service file). The schema swamp's tables live in is the first of
the connection's search_path (`?options=-csearch_path%3Dname` picks one; the default is `public`):
the conformance runner gives each scenario its own schema in one database this way.

Two drivers: a thread's connection is lean.py's (libpq through ctypes: importing psycopg would
triple the start of a short command such as `workflow signal`); a dedicated connection made with
`connect()` (LISTEN, whose notifications lean.py does not read) is psycopg's. SWAMP_PG_DRIVER=psycopg
makes every connection psycopg's (and psycopg is used when libpq cannot be loaded through ctypes).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...domain.errors import StorageError
from . import lean

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT = 10  # seconds: a host that does not answer is refused, never waited for forever
_PASSWORD = re.compile(r"(://[^/@:]*:)[^/@]*@|(password=)\S+", re.IGNORECASE)


def redact(address: str) -> str:
    """The address without a password, fit to show and to log."""
    return _PASSWORD.sub(lambda m: (m.group(1) + "***@") if m.group(1) else m.group(2) + "***", address)


class Database:
    def __init__(self, address: str):
        self.address = address
        self.shown = redact(address)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[Any] = []
        self._schema: str | None = None

    # -- connections --------------------------------------------------------------------------------

    def connection(self) -> Any:
        """This thread's connection (autocommit), made on first use or after it broke."""
        conn: Any = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._lean() if _use_lean() else self.connect()
            self._local.conn = conn
        return conn

    def _lean(self) -> lean.Connection:
        with self.errors("connect to"):
            conn = lean.connect(self.address, connect_timeout=CONNECT_TIMEOUT, application_name="swamp")
        with self._lock:
            self._opened = [c for c in self._opened if not c.closed]
            self._opened.append(conn)
        return conn

    def connect(self) -> psycopg.Connection[Any]:
        """A new psycopg connection of its own (LISTEN): the caller closes it."""
        import psycopg

        with self.errors("connect to"):
            conn = psycopg.connect(
                self.address, autocommit=True, connect_timeout=CONNECT_TIMEOUT, application_name="swamp"
            )
        with self._lock:
            self._opened = [c for c in self._opened if not c.closed]
            self._opened.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            with contextlib.suppress(Exception):
                conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """One transaction on this thread's connection: committed on leaving, rolled back on error.
        Nested, it is a savepoint of the outer one; what after_commit() deferred runs once the
        outermost commits (and never when it rolls back)."""
        conn = self.connection()
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.after = []
        self._local.depth = depth + 1
        try:
            with self.errors("write to"), conn.transaction():
                yield conn
        except BaseException:
            if depth == 0:
                self._local.after = []
            raise
        finally:
            self._local.depth = depth
        if depth == 0:
            deferred, self._local.after = self._local.after, []
            for action in deferred:
                action()

    def after_commit(self, action: Callable[[], None]) -> None:
        """Run `action` once this thread's transaction commits (now, when none is open)."""
        if getattr(self._local, "depth", 0):
            self._local.after.append(action)
        else:
            action()

    def execute(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement on this thread's connection (autocommit); its rows, if any."""
        conn = self.connection()
        with self.errors("read from"):
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []

    @contextlib.contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """A database that cannot be reached (or went away mid-statement) as storage_error, with the
        next step; the thread's broken connection is dropped so the next call connects again."""
        try:
            yield
        except _broken() as exc:
            conn = getattr(self._local, "conn", None)
            if conn is not None and (conn.closed or conn.broken):
                self._local.conn = None
            reason = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise StorageError(
                f"Could not {doing} the PostgreSQL store at {self.shown}: {reason}; check that the "
                "database is running and reachable from this host (swamp store status), then retry",
                {"path": None, "errno": None, "store": self.shown},
            ) from None

    # -- the schema ---------------------------------------------------------------------------------

    @property
    def schema(self) -> str:
        """The schema swamp's tables live in: current_schema(), or the first of the search_path
        when that schema does not exist yet (store migrate creates it)."""
        if self._schema is None:
            rows = self.execute("SELECT current_schema(), current_setting('search_path')")
            current, path = rows[0]
            if current is None:
                first = path.split(",")[0].strip()
                current = first[1:-1].replace('""', '"') if first.startswith('"') else first
                if current == "$user":
                    current = "public"
            self._schema = str(current)
        return self._schema

    def channel(self, name: str) -> str:
        """A LISTEN/NOTIFY channel of this store's schema (schemas of one database never cross)."""
        return f"swamp.{self.schema}.{name}"[:63]


def _use_lean() -> bool:
    return os.environ.get("SWAMP_PG_DRIVER") != "psycopg" and lean.available()


def _broken() -> tuple[type[BaseException], ...]:
    """The errors that mean the database could not be reached or went away: lean.py's, and
    psycopg's when it is loaded (never imported just to name them)."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is None:
        return (lean.OperationalError,)
    return (lean.OperationalError, psycopg.OperationalError, psycopg.InterfaceError)


def quote_ident(name: str) -> str:
    """A SQL identifier, quoted (a schema name from the address)."""
    return '"' + name.replace('"', '""') + '"'
