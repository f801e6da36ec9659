"""`--reuse-init` (FORMAT.md §4): `repo init .` runs once per distinct environment and every later
scenario with that environment gets a copy of the tree it made, instead of its own `repo init`.

Why: `repo init` is one process per scenario, about a tenth of a pass's processes. Only for an
implementation whose `repo init` makes the same tree wherever it runs (nothing of its path, no
per-repository identity): swamp's does (tests/test_repo_init_relocatable.py keeps it so). The
environment is the key, the scenario's home standing for any home, so a scenario whose `env` or
env hook differs (a PostgreSQL schema per scenario) still runs its own `repo init`.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path


class InitTemplates:
    def __init__(self) -> None:
        self._root: Path | None = None
        self._made: dict[str, Path] = {}

    @staticmethod
    def key(argv: list[str], env: dict[str, str], home: Path) -> str:
        return json.dumps([argv, sorted((k, v.replace(str(home), "<home>")) for k, v in env.items())])

    def copy_into(self, key: str, repo: Path) -> bool:
        """Give `repo` a copy of the tree `repo init` made for `key`; False when there is none yet."""
        template = self._made.get(key)
        if template is None:
            return False
        shutil.copytree(template, repo, symlinks=True, dirs_exist_ok=True)
        return True

    def keep(self, key: str, repo: Path) -> None:
        """Keep a copy of `repo` as `repo init` just made it, for the next scenario with `key`."""
        if key in self._made:
            return
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="swamp-init-templates-"))
            atexit.register(shutil.rmtree, self._root, ignore_errors=True)
        template = self._root / str(len(self._made))
        shutil.copytree(repo, template, symlinks=True)
        self._made[key] = template


TEMPLATES = InitTemplates()  # one per runner process (each pytest-xdist worker has its own)
