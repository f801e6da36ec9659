"""A lean libpq connection for short commands: the subset of psycopg's API the store uses.

Why: importing psycopg costs a short command ~250 ms on this machine (its module graph pulls in
asyncio, logging, ssl and every type adapter; the binary wheel then loads a dozen bundled shared
libraries), against ~130 ms for the whole of `swamp workflow signal` on the file store. Loading
libpq itself through ctypes costs ~15 ms. So a one-shot command (signal, waits, resume) talks to
the database through this module, and long-lived processes (serve, --jsonl, LISTEN, migrations)
use psycopg. The libpq loaded is psycopg's own bundled one when the binary wheel is installed
(the same library psycopg would use), else the system's libpq.so.5.

Only what the store needs: text-format parameters (`%s` placeholders, `%%` for a literal percent),
results converted by column type (bool, integers, floats, text, timestamptz), autocommit with
explicit transactions, and errors carrying their SQLSTATE. Nothing else of psycopg is imitated.

One addition of its own: `send` queues a statement whose result is not needed at once (BEGIN, an
INSERT, COMMIT); the next `execute` or `flush` sends everything queued in one libpq pipeline, so a
transaction of several statements costs one round trip (issue 31: a signal's write went from
eleven round trips to one). A queued statement that fails raises from that `execute` or `flush`;
the statements after it in the pipeline are skipped by the server (their transaction is aborted).
Placeholders are converted once per statement text (`_placeholders` is cached), and a statement
with parameters is prepared on its connection the first time it is sent (a named statement, in the
same pipeline) and executed by name after: the server parses and plans it once per connection, not
once per call (a signal's server time fell by a third). SWAMP_PG_PREPARED=off sends every
statement unnamed, for a pooler that does not keep a session's prepared statements.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import functools
import glob
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from ..counts import COUNTS

_WRITES = (b"INSERT", b"UPDATE", b"DELETE", b"WITH")
_COMMAND_OK = 1  # PGRES_COMMAND_OK
_OK_STATUSES = (_COMMAND_OK, 2)  # and PGRES_TUPLES_OK
_PIPELINE_SYNC, _PIPELINE_ABORTED = 10, 11
_CONNECTION_OK = 0
_DIAG_SQLSTATE, _DIAG_PRIMARY = ord("C"), ord("M")
_PREPARED_LIMIT = 256  # statement texts one connection prepares; any more are sent unnamed
_PREPARED_LOST = ("26000", "0A000")  # no such prepared statement; its plan's result type changed
_BOOL, _INTS, _FLOATS, _TIMESTAMPTZ = 16, (20, 21, 23, 26), (700, 701), 1184


class Error(Exception):
    sqlstate: str | None = None
    statement: str | None = None  # in a pipeline: the statement that failed


class OperationalError(Error):
    """The connection failed or broke (the database is down, restarting, unreachable)."""


class DatabaseError(Error):
    """The server refused a statement; `sqlstate` says why (55P03: lock_timeout)."""


class DataError(DatabaseError):
    """A value libpq cannot send as it is (a NUL character would cut a text parameter short)."""


def _library_paths() -> list[str]:
    paths = []
    try:
        import importlib.util

        spec = importlib.util.find_spec("psycopg_binary")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        base = os.path.dirname(list(spec.submodule_search_locations)[0])
        paths += sorted(glob.glob(os.path.join(base, "psycopg_binary.libs", "libpq-*.so*")))
    return [*paths, "libpq.so.5"]


_lib: Any = None


def _libpq() -> Any:
    global _lib
    if _lib is not None:
        return _lib
    last: OSError | None = None
    for path in _library_paths():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as exc:
            last = exc
    else:
        raise ImportError(f"libpq cannot be loaded: {last}")
    p, i, s = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "PQconnectdb": (p, [s]),
        "PQstatus": (i, [p]),
        "PQerrorMessage": (s, [p]),
        "PQfinish": (None, [p]),
        "PQexecParams": (p, [p, s, i, p, ctypes.POINTER(s), p, p, i]),
        "PQresultStatus": (i, [p]),
        "PQresultErrorMessage": (s, [p]),
        "PQresultErrorField": (s, [p, i]),
        "PQntuples": (i, [p]),
        "PQnfields": (i, [p]),
        "PQftype": (ctypes.c_uint, [p, i]),
        "PQgetvalue": (s, [p, i, i]),
        "PQgetisnull": (i, [p, i, i]),
        "PQcmdTuples": (s, [p]),
        "PQclear": (None, [p]),
        "PQenterPipelineMode": (i, [p]),
        "PQexitPipelineMode": (i, [p]),
        "PQpipelineSync": (i, [p]),
        "PQsendQueryParams": (i, [p, s, i, p, ctypes.POINTER(s), p, p, i]),
        "PQgetResult": (p, [p]),
        "PQsendPrepare": (i, [p, s, s, i, p]),
        "PQsendQueryPrepared": (i, [p, s, i, ctypes.POINTER(s), p, p, i]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    _lib = lib
    return lib


def available() -> bool:
    try:
        _libpq()
    except ImportError:
        return False
    return True


def _conninfo(address: str, **options: Any) -> bytes:
    extra = " ".join(f"{key}={_quote(str(value))}" for key, value in options.items() if value is not None)
    if address.startswith(("postgresql://", "postgres://")):
        # A URI and keyword options cannot be mixed in one string: options go as URI parameters.
        from urllib.parse import quote

        joined = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in options.items() if v is not None)
        separator = "&" if "?" in address else "?"
        return (address + (separator + joined if joined else "")).encode()
    return f"{address} {extra}".strip().encode()


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@functools.lru_cache(maxsize=512)
def _placeholders(sql: str) -> str:
    """psycopg's `%s` placeholders as libpq's `$n` (`%%` is a literal percent)."""
    out, n, i = [], 0, 0
    while i < len(sql):
        if sql[i] == "%" and i + 1 < len(sql):
            following = sql[i + 1]
            if following == "s":
                n += 1
                out.append(f"${n}")
                i += 2
                continue
            if following == "%":
                out.append("%")
                i += 2
                continue
        out.append(sql[i])
        i += 1
    return "".join(out)


def _text(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, dt.datetime):
        return value.isoformat().encode()
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def _value(raw: bytes, oid: int) -> Any:
    if oid == _BOOL:
        return raw == b"t"
    if oid in _INTS:
        return int(raw)
    if oid in _FLOATS:
        return float(raw)
    text = raw.decode("utf-8")
    if oid == _TIMESTAMPTZ:
        return dt.datetime.fromisoformat(text)  # "2026-12-01 20:58:02.5+00": ISO 8601 to Python 3.11
    return text


_Statement = tuple[bytes, list[bytes | None], Any]  # query, text parameters, on_rows


class Cursor:
    def __init__(self, rows: list[tuple[Any, ...]] | None, rowcount: int):
        self._rows = rows or []
        self.description: list[str] | None = None if rows is None else []
        self.rowcount = rowcount

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None


class Connection:
    def __init__(self, handle: int, lib: Any):
        self._handle: int | None = handle
        self._lib = lib
        self.broken = False
        self._depth = 0
        self._queue: list[_Statement] = []
        self._open = False  # in a transaction
        self._prepared: dict[bytes, bytes] = {}  # statement text -> its prepared statement's name
        self._names = 0
        self._prepares = os.environ.get("SWAMP_PG_PREPARED", "on") != "off"

    @property
    def closed(self) -> bool:
        return self._handle is None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        statement = self._statement(sql, params, None)
        if self._queue or (statement[1] and self._prepares):
            queued, self._queue = self._queue, []
            return self._pipeline([*queued, statement])
        if self._handle is None:
            raise OperationalError("the connection is closed")
        query, values, _ = statement
        self._count([statement])
        array = (ctypes.c_char_p * max(len(values), 1))(*values)
        result = self._lib.PQexecParams(self._handle, query, len(values), None, array, None, None, 0)
        try:
            return self._cursor(result)
        finally:
            if result:
                self._lib.PQclear(result)

    def send(
        self,
        sql: str,
        params: Sequence[Any] | None = None,
        on_rows: Callable[[list[tuple[Any, ...]]], None] | None = None,
    ) -> None:
        """Queue a statement for the next round trip; `on_rows` gets its rows then."""
        self._queue.append(self._statement(sql, params, on_rows))

    def flush(self) -> None:
        """Send what is queued, in one round trip."""
        if self._queue:
            queued, self._queue = self._queue, []
            self._pipeline(queued)

    def discard(self) -> None:
        """Forget what is queued (its transaction is being rolled back)."""
        self._queue = []

    def _statement(self, sql: str, params: Sequence[Any] | None, on_rows: Any) -> _Statement:
        values = [_text(v) for v in (params or ())]
        if any(v is not None and b"\0" in v for v in values):  # libpq would send the text cut at the NUL
            raise DataError("PostgreSQL text cannot contain NUL (0x00) characters")
        query = (_placeholders(sql) if params is not None else sql).encode("utf-8")  # as psycopg
        return query, values, on_rows

    def _count(self, statements: list[_Statement]) -> None:
        """Round trips, and commits that wait for the disk: a COMMIT, or a write outside a
        transaction (the NOTIFYs sent after a commit write nothing and do not wait for it)."""
        COUNTS["roundTrips"] += 1
        for query, _, _ in statements:
            if query == b"BEGIN":
                self._open = True
            elif query in (b"COMMIT", b"ROLLBACK"):
                if query == b"COMMIT":
                    COUNTS["commits"] += 1
                self._open = False
            elif not self._open and query.startswith(_WRITES):
                COUNTS["commits"] += 1

    def _pipeline(self, statements: list[_Statement]) -> Cursor:
        """Send `statements` in one pipeline and read every result: the last one's cursor, each
        `on_rows` called; the first error raised once every result is read."""
        if self._handle is None:
            raise OperationalError("the connection is closed")
        lib, handle = self._lib, self._handle
        self._count(statements)
        if not lib.PQenterPipelineMode(handle):
            self._raise(None)
        failure: Error | None = None
        last = Cursor(None, -1)
        preparing: list[bool] = []
        try:
            for query, values, _ in statements:
                array = (ctypes.c_char_p * max(len(values), 1))(*values)
                name, fresh = self._prepared_name(query, values)
                preparing.append(fresh)
                if fresh and not lib.PQsendPrepare(handle, name, query, 0, None):
                    self._raise(None)
                if name is not None:
                    sent = lib.PQsendQueryPrepared(handle, name, len(values), array, None, None, 0)
                else:
                    sent = lib.PQsendQueryParams(handle, query, len(values), None, array, None, None, 0)
                if not sent:
                    self._raise(None)
            if not lib.PQpipelineSync(handle):
                self._raise(None)
            for (query, _, on_rows), fresh in zip(statements, preparing, strict=True):
                if fresh:
                    unprepared = self._read_prepare(query)
                    failure = failure or unprepared
                result = lib.PQgetResult(handle)
                if not result:
                    self._raise(None)
                try:
                    status = lib.PQresultStatus(result)
                    if status == _PIPELINE_ABORTED:
                        continue
                    try:
                        last = self._cursor(result)
                    except Error as exc:
                        if exc.sqlstate in _PREPARED_LOST:  # DEALLOCATE ALL, a pooler, a migration
                            self._prepared.clear()
                        if failure is None:
                            exc.statement = query.decode("utf-8", "replace")  # which one failed
                            failure = exc
                        continue
                finally:
                    lib.PQclear(result)
                    while (extra := lib.PQgetResult(handle)):  # the NULL that ends a statement's results
                        lib.PQclear(extra)
                if on_rows is not None and failure is None:
                    on_rows(last.fetchall())
            result = lib.PQgetResult(handle)
            synced = bool(result) and lib.PQresultStatus(result) == _PIPELINE_SYNC
            if result:
                lib.PQclear(result)
            if not synced:
                self._raise(None)
        except BaseException:
            self.broken = self.broken or lib.PQstatus(handle) != _CONNECTION_OK
            raise
        finally:
            if not self.broken:
                lib.PQexitPipelineMode(handle)
        if failure is not None:
            raise failure
        return last

    def _prepared_name(self, query: bytes, values: list[bytes | None]) -> tuple[bytes | None, bool]:
        """The name `query` runs under (None: unnamed) and whether it must be prepared first."""
        if not values or not self._prepares:
            return None, False
        name = self._prepared.get(query)
        if name is not None:
            return name, False
        if len(self._prepared) >= _PREPARED_LIMIT:
            return None, False
        self._names += 1
        name = self._prepared[query] = b"swamp_%d" % self._names
        return name, True

    def _read_prepare(self, query: bytes) -> Error | None:
        """Read the result of preparing `query`: what failed (None when it was prepared, or was
        skipped after an earlier failure of the pipeline); a statement not prepared is forgotten."""
        lib, handle = self._lib, self._handle
        result = lib.PQgetResult(handle)
        if not result:
            self._raise(None)
        failure = None
        try:
            status = lib.PQresultStatus(result)
            if status != _COMMAND_OK:
                self._prepared.pop(query, None)
            if status not in (_COMMAND_OK, _PIPELINE_ABORTED):
                try:
                    self._cursor(result)
                except Error as exc:
                    exc.statement = query.decode("utf-8", "replace")
                    failure = exc
        finally:
            lib.PQclear(result)
            while extra := lib.PQgetResult(handle):
                lib.PQclear(extra)
        return failure

    def _cursor(self, result: Any) -> Cursor:
        lib = self._lib
        status = lib.PQresultStatus(result) if result else -1
        if status not in _OK_STATUSES:
            self._raise(result)
        fields = lib.PQnfields(result)
        if fields == 0:
            count = lib.PQcmdTuples(result)
            return Cursor(None, int(count) if count else -1)
        types = [lib.PQftype(result, c) for c in range(fields)]
        get, null = lib.PQgetvalue, lib.PQgetisnull
        rows = [
            tuple(None if null(result, r, c) else _value(get(result, r, c), types[c]) for c in range(fields))
            for r in range(lib.PQntuples(result))
        ]
        return Cursor(rows, len(rows))

    def _raise(self, result: int | None) -> None:
        lib = self._lib
        if self._handle is not None and lib.PQstatus(self._handle) != _CONNECTION_OK:
            self.broken = True
            message = (lib.PQerrorMessage(self._handle) or b"").decode("utf-8", "replace").strip()
            raise OperationalError(message or "the connection to the server was lost")
        state = lib.PQresultErrorField(result, _DIAG_SQLSTATE) if result else None
        primary = lib.PQresultErrorField(result, _DIAG_PRIMARY) if result else None
        message = primary or (lib.PQresultErrorMessage(result) if result else b"") or b""
        if not state:  # no SQLSTATE: libpq's own error (the server went away mid-statement)
            self.broken = True
        error_class = OperationalError if not state or state.startswith((b"08", b"57P")) else DatabaseError
        error = error_class(message.decode("utf-8", "replace").strip() or "the statement failed")
        error.sqlstate = state.decode() if state else None
        raise error

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """BEGIN ... COMMIT (a savepoint when nested); rolled back when the block raises. BEGIN is
        queued, so it travels with the transaction's first statement, and COMMIT sends what is
        still queued with it."""
        name = f"s{self._depth}"
        if self._depth == 0:
            self.send("BEGIN")
        else:
            self.execute(f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield self
        except BaseException:
            self._depth -= 1
            if self._depth == 0:
                self.rollback()
            elif not self.broken and self._handle is not None:
                with suppress(Error):
                    self.execute(f"ROLLBACK TO SAVEPOINT {name}")
            raise
        self._depth -= 1
        try:
            self.execute("COMMIT" if self._depth == 0 else f"RELEASE SAVEPOINT {name}")
        except Error:  # a queued statement failed: its transaction is aborted, end it
            if self._depth == 0:
                self.rollback()
            raise

    def rollback(self) -> None:
        """End the open transaction without keeping it: what is queued is forgotten, and ROLLBACK
        is sent only when BEGIN was (else the server would warn on stderr that none is open)."""
        unsent = bool(self._queue) and self._queue[0][0] == b"BEGIN"
        self.discard()
        if not unsent and not self.broken and self._handle is not None:
            with suppress(Error):
                self.execute("ROLLBACK")

    def close(self) -> None:
        if self._handle is not None:
            self._lib.PQfinish(self._handle)
            self._handle = None

    def __del__(self) -> None:
        with suppress(Exception):
            self.close()


def connect(address: str, **options: Any) -> Connection:
    """An autocommit connection (libpq's PQconnectdb); OperationalError when it cannot be had."""
    lib = _libpq()
    handle = lib.PQconnectdb(_conninfo(address, **options))
    if not handle:
        raise OperationalError("out of memory making a connection")
    if lib.PQstatus(handle) != _CONNECTION_OK:
        message = (lib.PQerrorMessage(handle) or b"").decode("utf-8", "replace").strip()
        lib.PQfinish(handle)
        raise OperationalError(message or "could not connect")
    return Connection(handle, lib)
