"""The PostgreSQL store (issue 17): run state shared by every host that points at one database."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...domain.errors import StoreUnavailable
from ..repo import RepoLayout

if TYPE_CHECKING:
    from .store import PgStore


def open_pg_store(address: str, layout: RepoLayout | None) -> PgStore:
    import importlib.util

    if importlib.util.find_spec("psycopg") is None:  # found, not imported (see connection.py)
        raise StoreUnavailable(
            "This repository keeps its runs in PostgreSQL, and psycopg 3 (the PostgreSQL driver) is "
            "not installed; install it with: pip install 'swamp[postgres]' (or unset SWAMP_STORE_URL "
            "/ remove `store:` from .swamp.yaml to use the file store)",
            {"store": "postgresql", "missing": "psycopg"},
        ) from None
    from .store import PgStore

    return PgStore(address, layout)
