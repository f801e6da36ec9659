"""repo init."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..store.repo import init_repo, write_gitignore


def init(directory: str | None) -> dict[str, Any]:
    layout, created = init_repo(Path(directory or "."))
    done = {"path": str(layout.root), "created": created, "gitignore": write_gitignore(layout)}
    from .store import migrate_new

    migrated = migrate_new(layout)  # a PostgreSQL store with no swamp tables yet gets them
    if migrated is not None:
        done["storeMigrated"] = {"from": migrated["from"], "to": migrated["to"], "schema": migrated["schema"]}
    return done
