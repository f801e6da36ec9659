"""Shared fixtures: `repo` (fresh per test), `shared_repo` (one per module), `swamp` (the CLI).

Builders and the subprocess helper live in helpers.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "repo")


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """One repository for a whole module: tests must use their own workflow and file names."""
    return make_repo(tmp_path_factory.mktemp("shared") / "repo")


@pytest.fixture
def swamp(repo: Repo) -> Any:
    """`swamp(*args, env=..., input=...)`: the CLI in a subprocess, cwd = the test's repo."""
    return repo.swamp


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cli: runs the swamp CLI in a real subprocess (slower)")
    # rich-click's own deprecation notice, raised when the CLI is invoked in process
    config.addinivalue_line("filterwarnings", "ignore:`use_rich_markup=`:PendingDeprecationWarning")
