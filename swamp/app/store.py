"""swamp store status | migrate: which run store a repository uses, and its schema.

Why: with PostgreSQL (issue 17) run state lives outside the repository, in a database whose
schema has a version; a user needs to see which store is in use, where, and whether its schema is
this swamp's, and to bring it up to date. Outside a repository, SWAMP_STORE_URL names the store
(so a CI job can migrate a database before any checkout uses it).
"""

from __future__ import annotations

from typing import Any

from ..domain.errors import RepoNotFound
from ..domain.settings import DEFAULTS
from ..store.choose import STORE_ENV, store_address
from ..store.repo import RepoLayout, find_repo


def _address(repo_dir: str | None) -> tuple[RepoLayout | None, str | None]:
    """The repository (None: outside one, SWAMP_STORE_URL naming a database) and the store's
    address (None: the file store)."""
    from ..store.settings import load_settings

    try:
        layout = find_repo(repo_dir)
    except RepoNotFound:
        address = store_address(DEFAULTS)
        if address is None:
            raise
        return None, address
    return layout, store_address(load_settings(layout))


def status(repo_dir: str | None = None) -> dict[str, Any]:
    """kind, location, schema, schemaVersion, expected, current, runs."""
    layout, address = _address(repo_dir)
    if address is None:
        assert layout is not None
        from ..store.runs import RunRepository

        runs = RunRepository(layout)
        count = sum(1 for _ in runs.record_paths())
        return {
            "kind": "file",
            "location": ".swamp",
            "schema": None,
            "schemaVersion": None,
            "expected": None,
            "current": True,
            "runs": count,
        }
    from ..store.pg import open_pg_store

    return open_pg_store(address, layout).status()


def migrate(repo_dir: str | None = None) -> dict[str, Any]:
    """Apply the migrations the store lacks: {kind, location, schema, from, to, applied}."""
    layout, address = _address(repo_dir)
    if address is None:
        return {"kind": "file", "location": ".swamp", "schema": None, "from": None, "to": None, "applied": []}
    from ..store.pg import open_pg_store
    from ..store.pg.migrations import migrate as apply
    from ..store.pg.store import forget_checked, shared_database

    open_pg_store(address, layout)  # store_unavailable when psycopg is missing
    db = shared_database(address)
    done = apply(db)
    forget_checked(address)
    return {
        "kind": "postgresql",
        "location": db.shown,
        "schema": done["schema"],
        "from": done["from"],
        "to": done["to"],
        "applied": done["applied"],
    }


def migrate_new(layout: RepoLayout) -> dict[str, Any] | None:
    """`repo init`: a PostgreSQL store with no swamp tables yet gets them; None for the file
    store or a database that already has them (a database at another version is left alone:
    the first command that uses it says what to do)."""
    from ..store.settings import load_settings

    address = store_address(load_settings(layout))
    if address is None:
        return None
    from ..store.pg import open_pg_store
    from ..store.pg.migrations import schema_version
    from ..store.pg.store import shared_database

    open_pg_store(address, layout)
    if schema_version(shared_database(address)) != 0:
        return None
    return migrate(str(layout.root))


__all__ = ["STORE_ENV", "migrate", "migrate_new", "status"]
