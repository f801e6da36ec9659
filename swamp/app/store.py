"""swamp store status | migrate: which run store a repository uses, and its schema.

Why: with PostgreSQL (issue 17) run state lives outside the repository, in a database whose
schema has a version; a user needs to see which store is in use, where, and whether its schema is
this swamp's, and to bring it up to date. Outside a repository, SWAMP_STORE_URL names the store
(so a CI job can migrate a database before any checkout uses it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..domain.errors import RepoNotFound
from ..domain.settings import DEFAULTS
from ..store.choose import STORE_ENV, open_address, store_address
from ..store.repo import RepoLayout, find_repo

if TYPE_CHECKING:
    from .ports import Store


def _store(repo_dir: str | None) -> Store:
    """The repository's store, or outside one the store SWAMP_STORE_URL names (RepoNotFound when
    it names none)."""
    from ..store.settings import load_settings

    try:
        layout = find_repo(repo_dir)
    except RepoNotFound:
        address = store_address(DEFAULTS)
        if address is None:
            raise
        return open_address(address, None)
    return open_address(store_address(load_settings(layout)), layout)


def status(repo_dir: str | None = None) -> dict[str, Any]:
    """kind, location, schema, schemaVersion, expected, current, runs."""
    return _store(repo_dir).status()


def migrate(repo_dir: str | None = None) -> dict[str, Any]:
    """Apply the migrations the store lacks: {kind, location, schema, from, to, applied}."""
    done = _store(repo_dir).migrate()
    assert done is not None
    return done


def migrate_new(layout: RepoLayout) -> dict[str, Any] | None:
    """`repo init`: a PostgreSQL store with no swamp tables yet gets them; None for the file
    store or a database that already has them (a database at another version is left alone:
    the first command that uses it says what to do)."""
    from ..domain.settings import SettingsInvalid
    from ..store.settings import load_settings

    try:
        settings = load_settings(layout)
    except SettingsInvalid:  # repo init works whatever .swamp.yaml says (REPO-015)
        settings = DEFAULTS
    return open_address(store_address(settings), layout).migrate(new_only=True)


__all__ = ["STORE_ENV", "migrate", "migrate_new", "status"]
