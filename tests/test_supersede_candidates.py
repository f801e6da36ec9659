"""`runs.suspended_with_inputs`: the runs a new run may supersede (app/supersede.py) are the
workflow's suspended runs whose inputs have the new run's digest, and no others: not another
workflow's, not other inputs', not a finished run's. PostgreSQL finds them by its runs_supersede
index instead of reading every active run (a run started beside 2,000 waiting ones read all 2,000).
On the file store, and on PostgreSQL when SWAMP_TEST_PG is set."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import BOTH_STORES, Repo, job, store_repo

from swamp.app.context import App
from swamp.domain.activeruns import inputs_digest

WAIT = {"name": "review", "task": {"type": "wait_for_signal", "timeout": 600, "schema": {"type": "integer"}}}
INPUTS = {"type": "object", "properties": {"k": {"type": "integer"}}}


@pytest.fixture(params=BOTH_STORES)
def repo(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    repo = store_repo(request.param, tmp_path / "repo", monkeypatch)
    repo.write_workflow("first", [job("main", WAIT)], inputs=INPUTS)
    repo.write_workflow("second", [job("main", WAIT)], inputs=INPUTS)
    return repo


def test_only_the_workflows_suspended_runs_with_the_same_inputs(repo: Repo) -> None:
    same = [repo.run("first", {"k": 1}) for _ in range(2)]  # both wait: neither supersedes the other
    repo.run("first", {"k": 2})
    repo.run("second", {"k": 1})
    finished = repo.run("first", {"k": 1})
    repo.handle("workflow.signal", {"waitId": finished["waits"][0]["waitId"], "payload": 1, "resume": True})
    app = App.open(str(repo.root))
    workflow_id = same[0]["workflowId"]

    found = app.runs.suspended_with_inputs(workflow_id, inputs_digest({"k": 1}))

    assert [e["runId"] for e in found] == sorted(run["id"] for run in same)
    by_filter = [
        e
        for e in app.runs.active_entries(workflow_id)
        if e["status"] == "suspended" and e["inputsSha256"] == inputs_digest({"k": 1})
    ]
    assert found == by_filter  # the same entries, fields and order, as the index holds them
    assert app.runs.suspended_with_inputs(workflow_id, inputs_digest({"k": 3})) == []
