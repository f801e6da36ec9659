"""Shared fixtures: `repo` (fresh per test), `shared_repo` (one per module), `swamp` (the CLI),
`site` (a repository with one suspended run, for the hook supervisor's tests).

Builders and the subprocess helper live in helpers.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, Site, make_repo, run_swamp


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


@pytest.fixture(scope="module")
def suspended(tmp_path_factory: pytest.TempPathFactory) -> Site:
    root = tmp_path_factory.mktemp("hooks") / "repo"
    root.mkdir()
    repo = make_repo(root)
    repo.write_workflow(
        "w",
        [{"name": "main", "steps": [{"name": "w", "task": {"type": "wait_for_signal", "timeout": 3600}}]}],
    )
    done = run_swamp("workflow", "run", "w", "--json", cwd=repo.root, timeout=30)
    doc = done.json
    assert doc["status"] == "suspended", done
    return Site(repo.root, doc["workflowId"], doc["id"])


@pytest.fixture
def site(tmp_path: Path, suspended: Site) -> Site:
    """(hooks) A copy of the suspended run's repository, this test's own."""
    root = tmp_path / "repo"
    shutil.copytree(suspended.root, root, symlinks=True)
    return Site(root, suspended.workflow_id, suspended.run_id)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cli: runs the swamp CLI in a real subprocess (slower)")
    # rich-click's own deprecation notice, raised when the CLI is invoked in process
    config.addinivalue_line("filterwarnings", "ignore:`use_rich_markup=`:PendingDeprecationWarning")
