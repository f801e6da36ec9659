"""Which run store a repository uses: SWAMP_STORE_URL, else `store:` in .swamp.yaml, else files.

The one place a store is opened: App (app/context.py), `store status`/`migrate` (app/store.py),
`store copy` (app/copy.py) and the hook supervisor (hooks/supervisor.py) all come here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..domain.errors import StoreUnavailable
from ..domain.settings import Settings, is_store_address, redacted
from .repo import RepoLayout

if TYPE_CHECKING:
    from ..app.ports import Store

STORE_ENV = "SWAMP_STORE_URL"


def store_address(settings: Settings) -> str | None:
    """The PostgreSQL address run state lives at, or None for the file store."""
    from_env = os.environ.get(STORE_ENV)
    if from_env:
        if from_env == "file":  # the file store, whatever .swamp.yaml says
            return None
        if not is_store_address(from_env):
            raise StoreUnavailable(
                f"{STORE_ENV} is {redacted(from_env)[:80]!r}, not a store address; set it to "
                "postgresql://host/dbname, service=NAME (a libpq service) or file, or unset it",
                {"store": redacted(from_env)[:200], "source": STORE_ENV},
            )
        return from_env
    if settings.store is not None:
        from .pg.conninfo import refuse_password_setting  # libpq's parser: every spelling

        refuse_password_setting(settings.store)
    return settings.store


def open_store(layout: RepoLayout, settings: Settings) -> Store:
    """The store this repository uses (SWAMP_STORE_URL, else `store:`, else files)."""
    return open_address(store_address(settings), layout)


def open_address(address: str | None, layout: RepoLayout | None) -> Store:
    """The store at `address` (None: the file store of `layout`; a PostgreSQL address needs no
    repository, so `store status`/`migrate` work outside one)."""
    if address is None:
        assert layout is not None, "the file store is a repository's"
        from .filestore import FileStore

        return FileStore(layout)
    from .pg import open_pg_store  # raises StoreUnavailable when psycopg is not installed

    store: Store = open_pg_store(address, layout)
    return store
