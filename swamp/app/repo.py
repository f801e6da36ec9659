"""repo init."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..store.repo import init_repo, write_gitignore


def init(directory: str | None) -> dict[str, Any]:
    layout, created = init_repo(Path(directory or "."))
    return {"path": str(layout.root), "created": created, "gitignore": write_gitignore(layout)}
