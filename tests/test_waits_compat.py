"""Compatibility (WAIT-041, RUN-010/011): a reader refuses a run whose record holds a wait kind,
step status, wait outcome or run status it does not know, for every command that reads that run,
and never rewrites or removes the file. The other runs keep working."""

from __future__ import annotations

import json

import pytest
from test_waits_support import at, env, record_path, refusal, signal, snapshot, wait_step, wait_workflow


def _edit_step(rec, **fields):
    rec["jobs"][0]["steps"][0].update(fields)


def _edit_wait(rec, **fields):
    rec["jobs"][0]["steps"][0]["wait"].update(fields)


MUTATIONS = {
    "wait kind": lambda rec: _edit_wait(rec, kind="poll"),
    "step status": lambda rec: _edit_step(rec, status="waiting_poll"),
    "wait outcome": lambda rec: _edit_wait(rec, outcome="escalated"),
    "run status": lambda rec: rec.update(status="paused"),
    "unknown wait field": lambda rec: _edit_wait(rec, pollInterval=30),
    "format version": lambda rec: rec.update(formatVersion=2),
}


def _newer_record(repo, monkeypatch, mutate):
    """A suspended run whose record is rewritten as a newer swamp might have written it."""
    at(monkeypatch)
    wait_workflow(repo, "compat", wait_step("value"), inputs={"type": "object"})
    doc = repo.run("compat", {"n": 1})
    path = record_path(repo, doc)
    rec = json.loads(path.read_text(encoding="utf-8"))
    mutate(rec)
    path.write_text(json.dumps(rec, indent=1), encoding="utf-8")
    return doc, path


@pytest.mark.parametrize("what", list(MUTATIONS))
def test_every_command_refuses_the_run_and_leaves_the_file_alone(repo, monkeypatch, what):
    doc, path = _newer_record(repo, monkeypatch, MUTATIONS[what])
    wait_id = doc["waits"][0]["waitId"]
    before = snapshot(path)
    requests = [
        ("workflow.signal", {"waitId": wait_id, "payload": 1}),
        ("workflow.signal", {"waitId": wait_id, "payload": 1, "check": True}),
        ("workflow.wait.show", {"waitId": wait_id}),
        ("workflow.reject", {"waitId": wait_id}),
        ("workflow.resume", {"workflow": "compat", "run": doc["id"]}),
        ("workflow.cancel", {"workflow": "compat", "run": doc["id"]}),
        ("workflow.history.get", {"run": doc["id"]}),
    ]
    for request, payload in requests:
        err = refusal(repo, request, payload)
        assert err.code == "run_unreadable", (request, err.code, err.message)
        assert err.details["path"] == doc["path"]
    # a new run with the same inputs neither supersedes nor touches it
    again = repo.run("compat", {"n": 1})
    assert again["status"] == "suspended"
    assert all(item["runId"] != doc["id"] for item in again.get("superseded", []))
    # listing skips it, history names it as unreadable
    assert doc["id"] not in {w["runId"] for w in repo.handle("workflow.waits", {"all": True})["waits"]}
    history = repo.handle("workflow.history", {})
    assert [(u["code"], u["details"]["path"]) for u in history["unreadable"]] == [
        ("run_unreadable", doc["path"])
    ]
    assert {r["runId"] for r in history["runs"]} == {again["id"]}
    assert snapshot(path) == before
    # the other run still works
    assert signal(repo, again["waits"][0]["waitId"], 1)["runId"] == again["id"]
    assert snapshot(path) == before


def test_the_known_values_read_back_so_the_refusals_come_from_the_unknown_ones(repo, monkeypatch):
    doc, path = _newer_record(repo, monkeypatch, lambda rec: None)
    assert repo.handle("workflow.wait.show", {"waitId": doc["waits"][0]["waitId"]})["status"] == "open"


@pytest.mark.cli
def test_cli_refuses_with_exit_3_and_the_bytes_stay(repo, monkeypatch):
    doc, path = _newer_record(repo, monkeypatch, MUTATIONS["wait kind"])
    before = snapshot(path)
    wait_id = doc["waits"][0]["waitId"]
    code, out, err, data = repo.swamp("workflow", "signal", wait_id, "--payload", "1", "--json", env=env())
    assert code == 3 and data["error"]["code"] == "run_unreadable"
    assert "poll" in data["error"]["message"]
    code, out, err, _ = repo.swamp("workflow", "wait", "show", wait_id, env=env())
    assert code == 3 and out == "" and "run_unreadable" in err and "Traceback" not in err
    assert snapshot(path) == before
