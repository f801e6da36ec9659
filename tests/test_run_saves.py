"""How many times an execution writes its record, and what each write holds (RUN-034..036): saves
that nothing outside the process needs are merged into the next durable one. Counted in process,
through the request layer, with the file store's save wrapped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, dep, jdep, job, make_repo, sh

from swamp.app import publish as publish_module
from swamp.domain.changes import run_changes
from swamp.store.counts import COUNTS
from swamp.store.runs import RunRepository


def wait(name: str, **step: Any) -> dict[str, Any]:
    return {"name": name, "task": {"type": "wait_for_signal", "timeout": 600}, **step}


def gate(name: str, **step: Any) -> dict[str, Any]:
    return {"name": name, "task": {"type": "manual_approval", "prompt": "Sign?", "timeout": 600}, **step}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return make_repo(tmp_path_factory.mktemp("saves") / "repo")


@pytest.fixture
def saves(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Each record write: the run's status and, per step, (status, outputs)."""
    seen: list[dict[str, Any]] = []
    real = RunRepository.save

    def counted(self: RunRepository, run: Any, **kw: Any) -> None:
        steps = {f"{j.name}.{s.name}": (s.status, s.outputs) for j, s in run.steps()}
        seen.append({"status": run.status, "steps": steps})
        real(self, run, **kw)

    monkeypatch.setattr(RunRepository, "save", counted)
    return seen


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    real = publish_module.publish

    def record(app: Any, before: Any, run: Any) -> None:
        seen.extend(run_changes(before, run, app.clock.now()))
        real(app, before, run)

    monkeypatch.setattr(publish_module, "publish", record)
    return seen


def statuses(save: dict[str, Any]) -> dict[str, str]:
    return {name: status for name, (status, _) in save["steps"].items()}


def wait_id(repo: Repo, run: dict[str, Any], step: str) -> str:
    doc = repo.handle("workflow.history.get", {"run": run["id"]})
    return next(s["wait"]["waitId"] for j in doc["jobs"] for s in j["steps"] if s["name"] == step)


def test_the_bench_continuation_is_two_writes_and_its_run_two(repo: Repo, saves: list[dict[str, Any]]):
    repo.write_workflow(
        "bench", [job("main", wait("review"), sh("after", "echo done", dependsOn=[dep("review")]))]
    )
    run = repo.run("bench")
    assert [s["status"] for s in saves] == ["running", "suspended"]
    assert statuses(saves[0]) == {"main.review": "pending", "main.after": "pending"}

    repo.handle("workflow.signal", {"waitId": wait_id(repo, run, "review"), "payload": {"ok": 1}})
    saves.clear()
    fsyncs = COUNTS["fsyncs"]
    done = repo.handle("workflow.resume", {"workflow": "bench", "run": run["id"]})
    assert done["status"] == "succeeded"
    assert COUNTS["fsyncs"] - fsyncs == 4  # issue 31: two durable writes (file and folder each)
    # One write before the model method (running, the settled wait in it), one at the end.
    assert [s["status"] for s in saves] == ["running", "succeeded"]
    review_status, review_outputs = saves[0]["steps"]["main.review"]
    assert (review_status, review_outputs["payload"]) == ("succeeded", {"ok": 1})
    assert statuses(saves[0])["main.after"] == "pending"


def test_each_model_method_level_is_preceded_by_a_write_holding_the_levels_before(
    repo: Repo, saves: list[dict[str, Any]]
):
    repo.write_workflow(
        "chain",
        [
            job("first", sh("a", "echo a"), sh("b", "echo b", dependsOn=[dep("a")])),
            job("second", sh("c", "echo c"), dependsOn=[jdep("first")]),
        ],
    )
    assert repo.run("chain")["status"] == "succeeded"
    # start, before b, before c, the end (was: start, after each of 3 step levels and 2 job levels, end)
    assert [s["status"] for s in saves] == ["running", "running", "running", "succeeded"]
    before_b, before_c = saves[1], saves[2]
    assert statuses(before_b) == {"first.a": "succeeded", "first.b": "pending", "second.c": "pending"}
    assert before_b["steps"]["first.a"][1]["stdout"] == "a\n"
    assert statuses(before_c) == {"first.a": "succeeded", "first.b": "succeeded", "second.c": "pending"}


def test_a_continuation_that_only_opens_waits_writes_once_and_publishes_its_suspension(
    repo: Repo, saves: list[dict[str, Any]], published: list[dict[str, Any]]
):
    repo.write_workflow(
        "relay",
        [
            job(
                "main",
                wait("review"),
                wait("ask", dependsOn=[dep("review")]),
                gate("sign", dependsOn=[dep("ask")]),
            )
        ],
    )
    run = repo.run("relay")
    repo.handle("workflow.signal", {"waitId": wait_id(repo, run, "review"), "payload": {}})
    saves.clear()
    published.clear()
    assert repo.handle("workflow.resume", {"workflow": "relay", "run": run["id"]})["status"] == "suspended"
    assert [s["status"] for s in saves] == ["suspended"]
    asked = wait_id(repo, run, "ask")
    assert [e["event"] for e in published] == ["wait_opened", "run_suspended"]
    assert published[1]["waitIds"] == [asked]

    # Then a gate only: suspended again, once, and published again.
    repo.handle("workflow.signal", {"waitId": asked, "payload": {}})
    saves.clear()
    published.clear()
    assert repo.handle("workflow.resume", {"workflow": "relay", "run": run["id"]})["status"] == "suspended"
    assert [s["status"] for s in saves] == ["suspended"]
    assert [e["event"] for e in published] == ["run_suspended"]


def test_a_retried_run_that_ends_publishes_run_finished(
    repo: Repo, tmp_path: Path, saves: list[dict[str, Any]], published: list[dict[str, Any]]
):
    flag = tmp_path / "ok"
    repo.write_workflow("flaky", [job("main", sh("try", f"test -e {flag}"))])
    run = repo.run("flaky")
    assert run["status"] == "failed"
    flag.write_text("")
    saves.clear()
    published.clear()
    retried = repo.handle("workflow.resume", {"workflow": "flaky", "run": run["id"], "from": "try"})
    assert retried["status"] == "succeeded"
    assert [s["status"] for s in saves] == ["running", "succeeded"]
    assert [e["event"] for e in published] == ["run_finished"]


BESIDE = "b0000000-0000-4000-8000-000000000036"


def test_a_wait_opened_beside_a_running_job_is_in_the_record_while_that_job_runs(repo: Repo):
    # `look`'s command polls the record for `review` waiting (10 s at most): RUN-034 (c) saves the
    # level that opened it at once, since the job `work` is still executing. (`pre` makes `review`
    # open well after `look`'s own save before its command.)
    poll = (
        'for i in $(seq 200); do grep -q \'"name":"review","status":"waiting"\' '
        f".swamp/workflow-runs/{BESIDE}/*.json && exit 0; sleep 0.05; done; exit 1"
    )
    ask = job("ask", sh("pre", "sleep 0.3"), wait("review", dependsOn=[dep("pre")]))
    repo.write_workflow("beside", [job("work", sh("look", poll)), ask], id=BESIDE)
    doc = repo.run("beside")
    assert doc["status"] == "suspended"
    assert doc["jobs"][0]["steps"][0]["status"] == "succeeded", doc["jobs"][0]["steps"][0]
