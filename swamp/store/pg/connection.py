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
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...domain.announcements import NAMES
from ...domain.errors import StorageError, StoreUnavailable
from . import lean
from .conninfo import Conninfo

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT = 10  # seconds: a host that does not answer is refused, never waited for forever
CHANNEL_BYTES = 63  # PostgreSQL's limit on an identifier (a channel name), in bytes
INSUFFICIENT_PRIVILEGE = "42501"
LOCK_NOT_AVAILABLE = "55P03"
_WRITES = ("INSERT", "UPDATE", "DELETE", "WITH")  # statements that give a transaction its id
ANNOUNCED_FRESH = 2.0  # seconds a command trusts the announcements its first statement read


def granted_advisory(lock: str) -> str:
    """SQL: the pg_locks row `lock` is an advisory lock granted in this database on the key
    `k.key` (a `hashtextextended('<schema>:<name>', 0)`, as claims, announcements and the event
    log's writers are keyed)."""
    return (
        f"{lock}.locktype = 'advisory' AND {lock}.granted AND {lock}.objsubid = 1 "
        f"AND {lock}.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        f"AND {lock}.classid::bigint = ((k.key >> 32) & 4294967295) "
        f"AND {lock}.objid::bigint = (k.key & 4294967295)"
    )


_ANNOUNCED = (  # a shared session advisory lock on `<schema>:<name>` is held (an announcement)
    "SELECT 1 FROM pg_locks l, (SELECT hashtextextended(current_schema() || ':' || %s, 0) AS key) k "
    f"WHERE l.mode = 'ShareLock' AND {granted_advisory('l')}"
)


class LockRefused(Exception):
    """A brief claim's lock was not had within its timeout (claim.py turns it into claim_timeout)."""


class Database:
    def __init__(self, address: str):
        self.address = address
        self.conninfo = Conninfo(address)
        self.shown = self.conninfo.shown  # without the password, fit to show and to log
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[Any] = []
        self._schema: str | None = None
        self.events_refused = False  # runs.py: save again without the event log's append
        self._announced: tuple[float, dict[str, Any]] = (0.0, {})

    # -- connections --------------------------------------------------------------------------------

    def connection(self) -> Any:
        """This thread's connection (autocommit), made on first use or after it broke."""
        conn: Any = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            self.check_address()
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

        self.check_address()
        with self.errors("connect to"):
            conn = psycopg.connect(
                self.address, autocommit=True, connect_timeout=CONNECT_TIMEOUT, application_name="swamp"
            )
        with self._lock:
            self._opened = [c for c in self._opened if not c.closed]
            self._opened.append(conn)
        return conn

    @contextlib.contextmanager
    def fresh(self) -> Iterator[Any]:
        """A short-lived connection of its own (outside any transaction of this thread's), closed
        on leaving; a failure to make it is the driver's error, not storage_error."""
        if _use_lean():
            conn: Any = lean.connect(self.address, connect_timeout=CONNECT_TIMEOUT, application_name="swamp")
        else:
            import psycopg

            conn = psycopg.connect(self.address, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        try:
            yield conn
        finally:
            conn.close()

    def check_address(self) -> None:
        """An address libpq cannot read is refused before connecting (store_unavailable), with
        libpq's reason, its secrets removed."""
        if self.conninfo.readable:
            return
        raise StoreUnavailable(
            f"libpq cannot read the PostgreSQL store address {self.shown} ({self.conninfo.problem}); "
            "fix it (postgresql://[user@]host[:port]/dbname[?param=value], a literal % written %25) "
            "in SWAMP_STORE_URL or `store:` in .swamp.yaml",
            {"store": self.shown},
        )

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            with contextlib.suppress(Exception):
                conn.close()

    @contextlib.contextmanager
    def transaction(self, doing: str = "write to", *, keep_on_error: bool = False) -> Iterator[Any]:
        """One transaction on this thread's connection: committed on leaving, rolled back on error
        (committed all the same with `keep_on_error`: a claim's transaction keeps what was written
        under it, as the file store does). Nested, it joins the outer one (one transaction, no
        savepoint: what a save writes and the events it appends commit together or not at all).
        What after_commit() deferred runs once the outermost commits (never when it rolls back);
        what notify() asked for is sent right after the commit, in the same round trip, as a
        transaction of its own that does not wait for the disk (a notification is only a hint:
        every waiter also reads again after a bounded time)."""
        conn = self.connection()
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield conn
            finally:
                self._local.depth = depth
            return
        self._local.after, self._local.notes = [], {}
        self._local.depth = 1
        try:
            with self.errors(doing):
                _begin(conn)
                self._local.appending = False
                try:
                    yield conn
                except BaseException:
                    if not keep_on_error:
                        _rollback(conn)
                        raise
                    self._commit(conn)
                    raise
                self._commit(conn)
        except BaseException:
            self._local.after, self._local.notes = [], {}
            raise
        finally:
            self._local.depth = 0
        deferred, self._local.after = self._local.after, []
        for action in deferred:
            action()

    def _commit(self, conn: Any) -> None:
        notes, self._local.notes = self._local.notes, {}
        if isinstance(conn, lean.Connection):
            try:
                conn.send("COMMIT")
                if notes:  # one statement: the pipeline's sync commits it, without waiting for the disk
                    calls = ", ".join("pg_notify(%s, %s)" for _ in notes)
                    values = [value for note in notes for value in note]
                    conn.send(f"SELECT set_config('synchronous_commit', 'off', true), {calls}", values)
                conn.flush()
            except BaseException:
                conn.rollback()
                raise
            return
        conn.execute("COMMIT")
        for channel, payload in notes:
            conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    def flush(self) -> None:
        """Send what send() queued on this thread's connection, now."""
        conn = self.connection()
        if isinstance(conn, lean.Connection):
            with self.errors("read from"):
                conn.flush()

    def _appending(self, sql: str) -> None:
        """Before `sql` when it is the transaction's first write (which gives the transaction its
        id; so never while it waits for a claim): the shared lock that makes readers of the event
        log hold back for it until it ends (events.py's watermark)."""
        if getattr(self._local, "appending", True) or not self.in_transaction():
            return
        if sql.startswith(_WRITES):
            self._local.appending = True
            self.send("SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))", (writers_key(self),))

    def notify(self, channel: str, payload: str) -> None:
        """NOTIFY `channel` (this schema's, channel()) once this thread's transaction commits
        (now, when none is open); the same notification asked twice in one transaction is sent
        once."""
        name = self.channel(channel)
        if self.in_transaction():
            self._local.notes[(name, payload)] = True
        else:
            self.execute("SELECT pg_notify(%s, %s)", (name, payload))

    def send(
        self, sql: str, params: Any = None, on_rows: Callable[[list[tuple[Any, ...]]], None] | None = None
    ) -> None:
        """A statement whose result is not needed now: with the lean driver it travels with the
        next round trip (at the latest the commit); `on_rows` gets its rows then."""
        self._appending(sql)
        conn = self.connection()
        if isinstance(conn, lean.Connection):
            conn.send(sql, params, on_rows)
            return
        with self.errors("write to"):
            cur = conn.execute(sql, params)
            rows = cur.fetchall() if cur.description is not None else []
        if on_rows is not None:
            on_rows(rows)

    def failed_statement(self) -> str | None:
        """The statement of this thread's last failed pipeline that the database refused."""
        return getattr(self._local, "failed_statement", None)

    def in_transaction(self) -> bool:
        return bool(getattr(self._local, "depth", 0))

    def refuse_lock_timeout(self, claimed: bool) -> None:
        """While a brief claim's lock is on its way (claim.py), its lock_timeout refusal, which
        arrives with whatever statement is sent next, is raised as LockRefused."""
        self._local.brief_claim = claimed

    def after_commit(self, action: Callable[[], None]) -> None:
        """Run `action` once this thread's transaction commits (now, when none is open)."""
        if getattr(self._local, "depth", 0):
            self._local.after.append(action)
        else:
            action()

    def execute(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement on this thread's connection (autocommit); its rows, if any."""
        self._appending(sql)
        conn = self.connection()
        with self.errors("read from"):
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []

    @contextlib.contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Any error of either driver as storage_error naming the store and what to do (STORE-009,
        STORE-037), its text scrubbed of the password (STORE-036). A connection that broke is
        dropped, so the next call connects again."""
        try:
            yield
        except _errors() as exc:
            self._local.failed_statement = getattr(exc, "statement", None)
            state = getattr(exc, "sqlstate", None)  # psycopg calls a full disk (53100) operational too
            if state == LOCK_NOT_AVAILABLE and getattr(self._local, "brief_claim", False):
                raise LockRefused() from None  # a brief claim's lock, sent with this statement
            broken = state.startswith(("08", "57P")) if state else isinstance(exc, _broken())
            conn = getattr(self._local, "conn", None)
            if conn is not None and (conn.closed or conn.broken):
                self._local.conn = None
                broken = True
            raise self.storage_error(exc, doing, broken) from None

    def storage_error(self, exc: BaseException, doing: str, broken: bool) -> StorageError:
        reason = self.conninfo.scrub(" ".join(str(exc).split())[:300]) or type(exc).__name__
        state = getattr(exc, "sqlstate", None)
        details: dict[str, Any] = {"path": None, "errno": None, "store": self.shown}
        if state:
            details["sqlstate"] = state
        where = f"the PostgreSQL store at {self.shown}"
        if broken:
            return StorageError(
                f"Could not {doing} {where}: {reason}; check that the database is running and "
                "reachable from this host (swamp store status), then retry",
                details,
            )
        if state == INSUFFICIENT_PRIVILEGE:
            from .rights import missing_rights

            rights = missing_rights(self, migrating=doing == "migrate")
            details["missing"] = rights.missing
            lacking = "; ".join(rights.missing) if rights.missing else "a right the statement needs"
            grants = f" ({'; '.join(rights.grants)})" if rights.grants else ""
            return StorageError(
                f"Could not {doing} {where}: {reason}. The role {rights.role or 'connected'} lacks "
                f"{lacking}; have the owner grant it{grants}, or connect as a role that has it, then retry",
                details,
            )
        return StorageError(
            f"Could not {doing} {where}: the database refused it ({reason}"
            + (f", SQLSTATE {state}" if state else "")
            + "); nothing of it was written (the transaction was rolled back). Fix what the "
            "database says (a trigger, a full disk, a constraint, a limit), then retry",
            details,
        )

    # -- the schema ---------------------------------------------------------------------------------

    def known_version(self) -> int | None:
        """The schema version, read with the schema's name in one statement, when the first
        schema of the search_path exists and holds swamp's tables; None otherwise (the caller
        looks more closely), and always inside a transaction (a failed statement would end it)."""
        if self.in_transaction():
            return None
        conn = self.connection()
        try:
            rows = conn.execute(
                "SELECT current_schema(), current_setting('search_path'), "
                "(SELECT value FROM swamp_meta WHERE key = 'schema_version')"
                + "".join(f", EXISTS ({_ANNOUNCED})" for _ in NAMES),
                list(NAMES),
            ).fetchall()
        except _errors():  # no such table here (or no right to it): the closer look says which
            if getattr(conn, "broken", False) or conn.closed:
                self._local.conn = None
            return None
        current, path, version, *announced = rows[0]
        if current is None or version is None or _first_schema(path) != current:
            return None
        self._schema = str(current)
        self._announced = (time.monotonic(), dict(zip(NAMES, announced, strict=True)))
        return int(version)

    def forget_announced(self) -> None:
        self._announced = (0.0, {})

    def announced_lately(self, name: str) -> bool | None:
        """Whether `name` was announced when this process first asked the database (its first
        statement reads every announcement), if that was less than ANNOUNCED_FRESH seconds ago."""
        at, known = self._announced
        if name not in known or time.monotonic() - at > ANNOUNCED_FRESH:
            return None
        return bool(known[name])

    @property
    def schema(self) -> str:
        """The schema swamp's tables live in: current_schema(), or the first of the search_path
        when that schema does not exist yet (store migrate creates it)."""
        if self._schema is None:
            rows = self.execute("SELECT current_schema(), current_setting('search_path')")
            current, path = rows[0]
            if current is None:
                current = _first_schema(path)
            self._schema = str(current)
        return self._schema

    def channel(self, name: str) -> str:
        """A LISTEN/NOTIFY channel of this store's schema: `swamp.<schema>.<name>`, or, when that
        is longer than PostgreSQL's 63 bytes, `swamp.<digest of the schema>.<name>` (STORE-038).
        Channels are database-wide: any role of the database may LISTEN or NOTIFY on them."""
        channel = f"swamp.{self.schema}.{name}"
        if len(channel.encode("utf-8")) <= CHANNEL_BYTES:
            return channel
        digest = hashlib.sha256(self.schema.encode("utf-8")).hexdigest()[:32]
        return f"swamp.{digest}.{name}"


def writers_key(db: Database) -> str:
    """The name of the shared lock every write transaction of the schema holds (events.py)."""
    return f"{db.schema}:events"


def _first_schema(search_path: str) -> str:
    first = search_path.split(",")[0].strip()
    name = first[1:-1].replace('""', '"') if first.startswith('"') else first
    return "public" if name == "$user" else name


def _begin(conn: Any) -> None:
    if isinstance(conn, lean.Connection):
        conn.send("BEGIN")  # travels with the transaction's first statement
    else:
        conn.execute("BEGIN")


def _rollback(conn: Any) -> None:
    if isinstance(conn, lean.Connection):
        conn.rollback()
        return
    if not getattr(conn, "broken", False) and not conn.closed:
        with contextlib.suppress(Exception):
            conn.execute("ROLLBACK")


def _use_lean() -> bool:
    return os.environ.get("SWAMP_PG_DRIVER") != "psycopg" and lean.available()


def _errors() -> tuple[type[BaseException], ...]:
    """Every error either driver raises: lean.py's, and psycopg's when it is loaded."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is None:
        return (lean.Error,)
    return (lean.Error, psycopg.Error)


def _broken() -> tuple[type[BaseException], ...]:
    """The errors that mean the database could not be reached or went away: lean.py's, and
    psycopg's when it is loaded (never imported just to name them)."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is None:
        return (lean.OperationalError,)
    return (lean.OperationalError, psycopg.OperationalError, psycopg.InterfaceError)
