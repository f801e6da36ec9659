"""Run records: one JSON file per run, refused (never rewritten) when unreadable, history order, prefixes."""

from __future__ import annotations

import json
import uuid

import pytest
from helpers import job, sh

from swamp.domain.errors import RunAmbiguous, RunNotFound, RunUnreadable


@pytest.fixture(scope="module")
def history_repo(shared_repo):
    shared_repo.write_workflow("hist-a", [job("main", sh("s", "true"))])
    shared_repo.write_workflow("hist-b", [job("main", sh("s", "exit 1"))])
    return shared_repo


@pytest.mark.cli
def test_one_json_record_per_run_at_the_documented_path(repo):
    repo.write_workflow("rec", [job("main", sh("s", "echo hi"))])
    code, _out, _err, doc = repo.swamp("workflow", "run", "rec", "--json")
    assert code == 0
    expected = f".swamp/workflow-runs/{doc['workflowId']}/{doc['id']}.json"
    assert doc["path"] == expected
    assert repo.run_files() == [repo.root / expected]
    record = json.loads((repo.root / expected).read_text(encoding="utf-8"))
    assert record["formatVersion"] == 1
    assert record["id"] == doc["id"]
    assert record["status"] == "succeeded"
    assert record["jobs"][0]["steps"][0]["outputs"]["stdout"] == "hi\n"
    # the record holds the run --json printed
    for key in ("workflowId", "workflowName", "status", "createdAt", "completedAt", "jobs"):
        assert record[key] == doc[key], key


def _fabricate(repo, mutate) -> tuple[str, bytes]:
    """Run a tiny workflow, then write a mutated copy of its record under a new run ID."""
    repo.write_workflow("victim", [job("main", sh("s", "true"))])
    doc = repo.run("victim")
    record = json.loads((repo.root / doc["path"]).read_text(encoding="utf-8"))
    new_id = str(uuid.uuid4())
    record["id"] = new_id
    mutate(record)
    data = json.dumps(record, indent=1).encode("utf-8")
    path = repo.root / ".swamp" / "workflow-runs" / doc["workflowId"] / f"{new_id}.json"
    path.write_bytes(data)
    return new_id, data


def _path_of(repo, run_id):
    [path] = [p for p in repo.run_files() if p.stem == run_id]
    return path


@pytest.mark.cli
def test_unknown_format_version_is_refused_and_left_untouched(repo):
    run_id, data = _fabricate(repo, lambda r: r.update(formatVersion=99))
    code, _out, _err, body = repo.swamp("workflow", "history", "get", run_id, "--json")
    assert code == 3
    assert body["error"]["code"] == "run_unreadable"
    assert "99" in body["error"]["message"]
    assert _path_of(repo, run_id).read_bytes() == data


@pytest.mark.cli
def test_unknown_step_status_is_refused_and_left_untouched(repo):
    def pause(record):
        record["jobs"][0]["steps"][0]["status"] = "paused"

    run_id, data = _fabricate(repo, pause)
    code, out, err, _ = repo.swamp("workflow", "history", "get", run_id[:13])
    assert code == 3
    assert "run_unreadable" in err
    assert "Traceback" not in out + err
    assert _path_of(repo, run_id).read_bytes() == data


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda r: r.update(status="paused"), id="run-status"),
        pytest.param(lambda r: r["jobs"][0].update(status="paused"), id="job-status"),
        pytest.param(lambda r: r.pop("formatVersion"), id="no-format-version"),
    ],
)
def test_unreadable_records_are_refused_in_process(repo, mutate):
    run_id, data = _fabricate(repo, mutate)
    with pytest.raises(RunUnreadable):
        repo.handle("workflow.history.get", {"run": run_id})
    assert _path_of(repo, run_id).read_bytes() == data


def test_history_lists_unreadable_records_apart(repo):
    run_id, data = _fabricate(repo, lambda r: r.update(formatVersion=2))
    body = repo.handle("workflow.history")
    assert len(body["runs"]) == 1  # the readable original
    assert len(body["unreadable"]) == 1
    assert body["unreadable"][0]["code"] == "run_unreadable"
    assert _path_of(repo, run_id).read_bytes() == data


def test_history_is_newest_first(history_repo, monkeypatch):
    # created in this order, but with clocks that say the second is the oldest
    ids = []
    for now in ("2099-05-02T00:00:00Z", "2099-05-01T00:00:00Z", "2099-05-03T00:00:00Z"):
        monkeypatch.setenv("SWAMP_NOW", now)
        ids.append(history_repo.run("hist-a")["id"])
    monkeypatch.delenv("SWAMP_NOW")
    listed = [r["runId"] for r in history_repo.handle("workflow.history", {"workflow": "hist-a"})["runs"]]
    assert listed[:3] == [ids[2], ids[0], ids[1]]


def test_history_filters_by_workflow(history_repo):
    a = history_repo.run("hist-a")["id"]
    b = history_repo.run("hist-b")["id"]
    only_b = history_repo.handle("workflow.history", {"workflow": "hist-b"})["runs"]
    assert b in {r["runId"] for r in only_b}
    assert a not in {r["runId"] for r in only_b}
    assert {r["workflowName"] for r in only_b} == {"hist-b"}
    failed = next(r for r in only_b if r["runId"] == b)
    assert failed["status"] == "failed"
    assert failed["failedStep"] == "main.s"


def test_history_get_by_unique_prefix(history_repo):
    run_id = history_repo.run("hist-a")["id"]
    got = history_repo.handle("workflow.history.get", {"run": run_id[:8]})
    assert got["id"] == run_id
    assert got["workflowName"] == "hist-a"


def test_history_get_unknown_and_ambiguous(history_repo):
    history_repo.run("hist-a")
    history_repo.run("hist-a")
    with pytest.raises(RunNotFound) as missing:
        history_repo.handle("workflow.history.get", {"run": "zzzz"})
    assert "swamp workflow history" in missing.value.message
    first = next(history_repo.root.glob(".swamp/workflow-runs/*/*.json"))
    twin = first.with_name(first.stem[:8] + "-twin.json")  # a second run sharing an 8-char prefix
    twin.write_bytes(first.read_bytes())
    try:
        with pytest.raises(RunAmbiguous) as ambiguous:
            history_repo.handle("workflow.history.get", {"run": first.stem[:8]})
    finally:
        twin.unlink()
    assert ambiguous.value.code == "run_ambiguous"
    assert len(ambiguous.value.details["runIds"]) == 2
    with pytest.raises(RunNotFound):  # an empty reference names no run (it does not match them all)
        history_repo.handle("workflow.history.get", {"run": ""})


@pytest.mark.cli
def test_history_cli_log_and_json(history_repo):
    run_id = history_repo.run("hist-b")["id"]
    code, out, _err, _ = history_repo.swamp("workflow", "history", "get", run_id[:10])
    assert code == 0
    assert f"Workflow: hist-b (run {run_id})" in out
    assert "✗ s" in out
    assert "-> Command exited with code 1" in out
    assert "Result:" in out and "failed" in out

    code, _out, _err, body = history_repo.swamp("workflow", "history", "--json")
    assert code == 0
    created = [r["createdAt"] for r in body["runs"]]
    assert created == sorted(created, reverse=True)
    assert run_id in {r["runId"] for r in body["runs"]}
