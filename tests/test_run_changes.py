"""Every save of a run publishes what changed (domain/changes.py, app/publish.py): one place that
the event log and the hooks build on, whichever path changed the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, dep, job, make_repo, sh

from swamp.app import publish as publish_module
from swamp.domain.changes import run_changes


def wait(name: str, **step: Any) -> dict[str, Any]:
    return {
        "name": name,
        "task": {"type": "wait_for_signal", "timeout": 600, "schema": {"type": "object"}},
        **step,
    }


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def record(app: Any, before: Any, run: Any) -> None:
        seen.extend(run_changes(before, run, app.clock.now()))

    monkeypatch.setattr(publish_module, "publish", record)
    return seen


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "repo")


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def test_a_run_through_a_wait_publishes_opened_suspended_settled_finished(
    repo: Repo, published: list[dict[str, Any]]
) -> None:
    after = sh("after", "true", dependsOn=[dep("review")])
    repo.write_workflow("w", [job("main", wait("review"), after)])
    run = repo.run("w")
    first_run = [e for e in published if e["runId"] == run["id"]]
    assert kinds(first_run) == ["wait_opened", "run_suspended"]
    opened = first_run[0]
    assert opened["step"] == "review" and opened["job"] == "main" and opened["workflow"] == "w"
    assert first_run[1]["waitIds"] == [opened["waitId"]]

    published.clear()
    repo.handle("workflow.signal", {"waitId": opened["waitId"], "payload": {"ok": True}})
    assert kinds(published) == ["wait_settled"]
    settled = published[0]
    assert settled["outcome"] == "received" and settled["receipt"]["waitId"] == opened["waitId"]

    published.clear()
    repo.handle("workflow.resume", {"workflow": "w", "run": run["id"]})
    assert kinds(published) == ["run_finished"]
    assert published[0]["status"] == "succeeded"


def test_a_run_without_waits_publishes_only_its_end(repo: Repo, published: list[dict[str, Any]]) -> None:
    repo.write_workflow("plain", [job("main", sh("a", "true"), sh("b", "false"))])
    repo.run("plain")
    assert kinds(published) == ["run_finished"]
    assert published[0]["status"] == "failed"
