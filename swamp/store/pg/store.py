"""The PostgreSQL store behind the store port (app/ports.py): run state shared by every host.

Why: several hosts (a CI runner, a laptop, the release host) work on the same runs; PostgreSQL gives
them shared, durable, transactional state. One `Database` per address is kept per process (so
every App of a serve shares its per-thread connections), and its schema version is checked once,
on first use. The live-output journal and the hooks queue stay local files (they are per host).
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..repo import RepoLayout
from .connection import Database

if TYPE_CHECKING:
    from ...app.ports import OnChange, Waiter
    from ...domain.run import WorkflowRun
    from .claim import PgClaim
    from .events import PgEventLog
    from .held import PgHeldStore
    from .runs import PgRunRepository

_DATABASES: dict[str, Database] = {}
_CHECKED: set[str] = set()
_LOCK = threading.Lock()


def shared_database(address: str) -> Database:
    """The process's Database for `address` (made on first use)."""
    with _LOCK:
        db = _DATABASES.get(address)
        if db is None:
            db = _DATABASES[address] = Database(address)
        return db


def checked_database(address: str) -> Database:
    """shared_database(), its schema version checked once per process (store_schema_mismatch)."""
    db = shared_database(address)
    if address not in _CHECKED:
        from .migrations import check_version

        check_version(db)
        with _LOCK:
            _CHECKED.add(address)
    return db


def forget_checked(address: str) -> None:
    """After a migration: the next use checks the version again."""
    with _LOCK:
        _CHECKED.discard(address)


class PgStore:
    kind = "postgresql"

    def __init__(self, address: str, layout: RepoLayout | None):
        self.address = address
        self.layout = layout
        self._db: Database | None = None

    @property
    def db(self) -> Database:
        """The shared, version-checked Database (connects on first use)."""
        if self._db is None:
            self._db = checked_database(self.address)
        return self._db

    def runs(self, on_change: OnChange | None) -> PgRunRepository:
        from .runs import PgRunRepository

        datastore = str(self.layout.datastore) if self.layout is not None else None
        return PgRunRepository(self.db, on_change=on_change, datastore=datastore)

    def claim(
        self, run_id: str, *, timeout: float | None = None, purpose: str = "", brief: bool = False
    ) -> PgClaim:
        from .claim import PgClaim

        return PgClaim(self.db, run_id, timeout=timeout, purpose=purpose, brief=brief)

    def claim_held(self, run_id: str) -> bool:
        from .claim import claim_held

        return claim_held(self.db, run_id)

    def announce(self, name: str) -> Any:
        from .claim import PgAnnouncement

        self.db.forget_announced()  # what this process read at its start no longer holds

        return PgAnnouncement(self.db, name).hold()

    def announced(self, name: str) -> bool:
        from .claim import claim_held

        lately = self.db.announced_lately(name)  # read with the command's first statement
        return lately if lately is not None else claim_held(self.db, name)

    def held(self) -> PgHeldStore:
        from .held import PgHeldStore

        return PgHeldStore(self.db)

    def events(self) -> PgEventLog:
        from .events import PgEventLog

        return PgEventLog(self.db)

    def run_changes(self, run: WorkflowRun, journal_path: str) -> AbstractContextManager[Waiter]:
        from .events import RunChanges

        return RunChanges(self.db, run.id, journal_path)

    def status(self) -> dict[str, Any]:
        """Kind, where, schema and versions; never refuses a database at another version (that is
        what it is for), but says storage_error when the database cannot be reached."""
        from .migrations import CURRENT, schema_version

        db = shared_database(self.address)
        version = schema_version(db)
        runs = int(db.execute("SELECT count(*) FROM runs")[0][0]) if version else 0
        return {
            "kind": self.kind,
            "location": db.shown,
            "schema": db.schema,
            "schemaVersion": version,
            "expected": CURRENT,
            "current": version == CURRENT,
            "runs": runs,
        }

    def migrate(self, *, new_only: bool = False) -> dict[str, Any] | None:
        """Apply the migrations the schema lacks (an advisory lock serialises hosts doing it)."""
        from .migrations import migrate as apply
        from .migrations import schema_version

        db = shared_database(self.address)
        if new_only and schema_version(db) != 0:
            return None
        done = apply(db)
        forget_checked(self.address)
        return {
            "kind": self.kind,
            "location": db.shown,
            "schema": done["schema"],
            "from": done["from"],
            "to": done["to"],
            "applied": done["applied"],
        }

    def close(self) -> None:
        pass  # the Database is shared by the process; its connections end with it
