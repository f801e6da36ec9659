"""Reading a run again under its claim (`runs.load_again`, app/signals.py) hands back the run read
before only when its record has not changed since; any save in between (another process's
included) gives a fresh read. On the file store, and on PostgreSQL when SWAMP_TEST_PG is set."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import BOTH_STORES, job, store_repo

from swamp.app.context import App
from swamp.domain.errors import RunNotFound

WAIT = {"name": "review", "task": {"type": "wait_for_signal", "timeout": 600, "schema": {"type": "integer"}}}


@pytest.fixture(params=BOTH_STORES)
def root(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    repo = store_repo(request.param, tmp_path / "repo", monkeypatch)
    repo.write_workflow("reread", [job("main", WAIT)])
    assert repo.swamp("workflow", "run", "reread", "--json").code == 0
    return str(repo.root)


@pytest.fixture
def app(root: str) -> App:
    return App.open(root)


def test_an_unchanged_record_gives_back_the_run_read_before(app: App) -> None:
    (entry,) = app.runs.active_entries()
    run = app.runs.load(entry["workflowId"], entry["runId"])
    assert app.runs.load_again(run) is run


def test_a_record_saved_since_gives_a_fresh_read(root: str, app: App) -> None:
    (entry,) = app.runs.active_entries()
    run = app.runs.load(entry["workflowId"], entry["runId"])
    other = App.open(root)  # another process's repository, as far as `app` can tell
    changed = other.runs.load(run.workflowId, run.id)
    changed.inputs = {"changed": True}
    other.runs.save(changed)
    again = app.runs.load_again(run)
    assert again is not run and again.inputs == {"changed": True}
    assert app.runs.load_again(again) is again


def test_a_run_gone_since_is_not_found(app: App) -> None:
    (entry,) = app.runs.active_entries()
    run = app.runs.load(entry["workflowId"], entry["runId"])
    run.id = "0" * 8 + run.id[8:]  # another run's ID: never stored
    with pytest.raises(RunNotFound):
        app.runs.load_again(run)
