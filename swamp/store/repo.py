"""The repository on disk: where it is and what lives where."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..domain.errors import RepoNotFound, SwampError
from .files import read_file, write_replace

MARKER = ".swamp.yaml"


@dataclass(frozen=True)
class RepoLayout:
    root: Path

    @property
    def marker(self) -> Path:
        return self.root / MARKER

    @property
    def workflows_dir(self) -> Path:
        return self.root / "workflows"

    @property
    def models_dir(self) -> Path:
        return self.root / "models"

    @property
    def extensions_dir(self) -> Path:
        return self.root / "extensions" / "models"

    @cached_property
    def datastore(self) -> Path:
        return self.root / ".swamp"

    @cached_property
    def runs_dir(self) -> Path:
        return self.datastore / "workflow-runs"

    @cached_property
    def locks_dir(self) -> Path:
        return self.datastore / "locks"

    def workflow_file(self, name: str) -> Path:
        return self.workflows_dir / f"workflow-{name}.yaml"


def find_repo(explicit: str | os.PathLike[str] | None = None, start: Path | None = None) -> RepoLayout:
    """--repo-dir, then SWAMP_REPO_DIR, then the nearest parent holding .swamp.yaml."""
    chosen = explicit or os.environ.get("SWAMP_REPO_DIR")
    if chosen:
        root = Path(chosen).resolve()
        if not (root / MARKER).is_file():
            raise RepoNotFound(
                f"{root} is not a swamp repository (no {MARKER}). Create one with: swamp repo init {root}",
                {"path": str(root)},
            )
        return RepoLayout(root)
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / MARKER).is_file():
            return RepoLayout(candidate)
    raise RepoNotFound(
        f"Not inside a swamp repository ({here} and its parents have no {MARKER}). "
        "Create one with: swamp repo init, or pass --repo-dir",
        {"path": str(here)},
    )


def init_repo(directory: Path) -> tuple[RepoLayout, bool]:
    """Create the layout; returns (layout, created). Existing files are left alone."""
    root = directory.resolve()
    if root.exists() and not root.is_dir():
        raise SwampError(f"{root} exists and is not a directory", {"path": str(root)}, code="repo_invalid")
    layout = RepoLayout(root)
    created = not layout.marker.exists()
    for folder in (layout.workflows_dir, layout.models_dir, layout.extensions_dir, layout.datastore):
        folder.mkdir(parents=True, exist_ok=True)
    if created:
        layout.marker.write_text("# swamp repository\nversion: 1\n", encoding="utf-8")
        if not layout.runs_dir.exists():  # no run yet: the open index is complete when empty
            from .openindex import start_empty

            start_empty(str(layout.datastore))
    return layout, created


# `.swamp/` holds run state only (records, swap files, wait and active-run indexes, audit trails,
# locks, journals): none of it is source. The file itself is kept so a clone has it (REPO-010).
GITIGNORE = (
    "# Written by swamp repo init: everything under .swamp/ is run state (run records, waits,\n"
    "# indexes, audit trails, locks, journals), not source. swamp never rewrites this file once\n"
    "# it differs from what swamp wrote.\n"
    "*\n"
    "!.gitignore\n"
)
# What earlier versions wrote; `repo init` replaces exactly these, never a file someone edited.
OLD_GITIGNORES = (b"locks/\n",)


def write_gitignore(layout: RepoLayout) -> str:
    """Write `.swamp/.gitignore`: "created" when missing, "upgraded" when it holds exactly what an
    earlier swamp wrote, "kept" otherwise (edited by someone, or not a regular file)."""
    path = layout.datastore / ".gitignore"
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        write_replace(path, GITIGNORE.encode("utf-8"))
        return "created"
    if not stat.S_ISREG(mode) or read_file(path) not in OLD_GITIGNORES:
        return "kept"
    write_replace(path, GITIGNORE.encode("utf-8"))
    return "upgraded"
