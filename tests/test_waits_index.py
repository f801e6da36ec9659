"""A wait is found by its ID alone, whatever state the wait index is in: missing, corrupt or stale
pointers are mended from the records (WAIT-015, WAIT-017), and the active-run index behind
`waits` is rebuilt when it is damaged (WAIT-010)."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest
from test_waits_support import at, env, refusal, signal, wait_step, wait_workflow


@pytest.fixture
def waiting(shared_repo, monkeypatch):
    """Two suspended runs of two fresh workflows, each with one open wait."""
    at(monkeypatch)
    tag = uuid.uuid4().hex[:8]
    wait_workflow(shared_repo, f"idx-a-{tag}", wait_step("value"))
    wait_workflow(shared_repo, f"idx-b-{tag}", wait_step("value"))
    a = shared_repo.run(f"idx-a-{tag}")
    b = shared_repo.run(f"idx-b-{tag}")
    return shared_repo, a, b


def _pointer(repo, wait_id):
    return repo.root / ".swamp" / "waits" / f"{wait_id}.json"


def _points_at(repo, wait_id, doc):
    return json.loads(_pointer(repo, wait_id).read_text()) == {
        "workflowId": doc["workflowId"],
        "runId": doc["id"],
    }


def test_a_wait_is_indexed_when_it_opens(waiting):
    repo, a, b = waiting
    for doc in (a, b):
        assert _points_at(repo, doc["waits"][0]["waitId"], doc)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p, other: p.unlink(), id="deleted"),
        pytest.param(lambda p, other: p.write_text("garbage{"), id="not-json"),
        pytest.param(lambda p, other: p.write_text(""), id="empty"),
        pytest.param(lambda p, other: p.write_text('["a", "b"]'), id="wrong-shape"),
        pytest.param(lambda p, other: p.write_text('{"workflowId": "x", "runId": "y"}'), id="unknown-run"),
        pytest.param(
            lambda p, other: p.write_text(
                json.dumps({"workflowId": other["workflowId"], "runId": other["id"]})
            ),
            id="points-at-another-run",
        ),
    ],
)
def test_a_damaged_pointer_is_mended_and_the_signal_is_taken(waiting, damage):
    repo, a, b = waiting
    wait_id = a["waits"][0]["waitId"]
    damage(_pointer(repo, wait_id), b)
    shown = repo.handle("workflow.wait.show", {"waitId": wait_id})
    assert shown["runId"] == a["id"] and shown["status"] == "open"
    assert _points_at(repo, wait_id, a)
    damage(_pointer(repo, wait_id), b)
    done = signal(repo, wait_id, {"ok": 1})
    assert done["runId"] == a["id"] and done["payload"] == {"ok": 1}
    assert _points_at(repo, wait_id, a)
    # the other run was not touched
    assert repo.handle("workflow.wait.show", {"waitId": b["waits"][0]["waitId"]})["status"] == "open"


def test_the_whole_wait_index_can_go(repo, monkeypatch):
    at(monkeypatch)
    wait_workflow(repo, "idx-a", wait_step("value"))
    wait_workflow(repo, "idx-b", wait_step("value"))
    a, b = repo.run("idx-a"), repo.run("idx-b")
    shutil.rmtree(repo.root / ".swamp" / "waits")
    assert signal(repo, b["waits"][0]["waitId"], 2)["runId"] == b["id"]
    assert signal(repo, a["waits"][0]["waitId"], 1)["runId"] == a["id"]
    err = refusal(repo, "workflow.signal", {"waitId": a["waits"][0]["waitId"], "payload": 1})
    assert err.code == "wait_settled"


def test_a_stale_pointer_to_a_wait_nobody_holds_is_still_not_found(waiting):
    repo, a, _ = waiting
    ghost = "wait_" + "a" * 26
    _pointer(repo, ghost).write_text(json.dumps({"workflowId": a["workflowId"], "runId": a["id"]}))
    err = refusal(repo, "workflow.signal", {"waitId": ghost, "payload": 1})
    assert err.code == "wait_not_found"
    assert err.details["reason"] == "unknown"


def test_a_retired_wait_is_found_through_a_damaged_pointer_and_reported_reset(repo, monkeypatch):
    at(monkeypatch)
    wait_workflow(repo, "idx-retry", wait_step("value", timeout=60))
    doc = repo.run("idx-retry")
    old = doc["waits"][0]["waitId"]
    at(monkeypatch, "2026-01-01T00:05:00Z")
    assert repo.handle("workflow.resume", {"workflow": "idx-retry"})["status"] == "failed"
    again = repo.handle("workflow.resume", {"workflow": "idx-retry", "run": doc["id"], "from": "value"})
    new = again["waits"][0]["waitId"]
    assert new != old and again["retiredWaitIds"] == [old]
    _pointer(repo, old).unlink()
    err = refusal(repo, "workflow.signal", {"waitId": old, "payload": 1})
    assert (err.code, err.details["reason"]) == ("wait_not_found", "reset")
    # a second retry retires the second ID too
    at(monkeypatch, "2026-01-01T00:10:00Z")
    assert repo.handle("workflow.resume", {"workflow": "idx-retry", "run": doc["id"]})["status"] == "failed"
    third = repo.handle("workflow.resume", {"workflow": "idx-retry", "run": doc["id"], "from": "value"})
    assert third["retiredWaitIds"] == [old, new]
    for gone in (old, new):
        assert refusal(repo, "workflow.wait.show", {"waitId": gone}).details["reason"] == "reset"


@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_waits_listing_survives_a_damaged_active_run_index(repo, monkeypatch, damage):
    at(monkeypatch)
    wait_workflow(repo, "idx-a", wait_step("value"))
    wait_workflow(repo, "idx-b", wait_step("value"))
    a, b = repo.run("idx-a"), repo.run("idx-b")
    index = repo.root / ".swamp" / "index"
    if damage == "delete":
        shutil.rmtree(index, ignore_errors=True)
    else:
        for entry in (index / "active").glob("*.json"):
            entry.write_text("{broken")
    listed = {w["runId"] for w in repo.handle("workflow.waits", {})["waits"]}
    assert {a["id"], b["id"]} <= listed


@pytest.mark.cli
def test_cli_signal_mends_a_deleted_pointer(repo):
    wait_workflow(repo, "idx-cli", wait_step("value"))
    _, _, _, doc = repo.swamp("workflow", "run", "idx-cli", "--json", env=env())
    wait_id = doc["waits"][0]["waitId"]
    _pointer(repo, wait_id).unlink()
    code, _, _, done = repo.swamp("workflow", "signal", wait_id, "--payload", '"x"', "--json", env=env())
    assert code == 0 and done["runId"] == doc["id"]
    assert _points_at(repo, wait_id, doc)


def test_a_signal_leaves_the_next_deadline_as_a_lower_bound_until_a_check_makes_it_exact(repo, monkeypatch):
    """The active-run entry is not rewritten when a signal only moves the run's next deadline later
    (one index write less per signal); serve's deadline check writes it exactly."""
    from swamp.app.context import App

    at(monkeypatch)
    wait_workflow(repo, "idx-bound", wait_step("soon", 600), wait_step("later", 1200))
    doc = repo.run("idx-bound")
    waits = {w["stepName"]: w for w in doc["waits"]}
    entry = repo.root / ".swamp" / "index" / "active" / f"{doc['id']}.json"
    before = json.loads(entry.read_text())
    assert before["status"] == "suspended" and before["nextDeadline"] == waits["soon"]["deadline"]
    signal(repo, waits["soon"]["waitId"], "x")
    assert json.loads(entry.read_text()) == before
    app = App.open(str(repo.root))
    app.runs.refresh_active_entry(app.runs.load(doc["workflowId"], doc["id"]))
    assert json.loads(entry.read_text()) == {**before, "nextDeadline": waits["later"]["deadline"]}
    signal(repo, waits["later"]["waitId"], "y")
    assert json.loads(entry.read_text())["nextDeadline"] == waits["later"]["deadline"]
