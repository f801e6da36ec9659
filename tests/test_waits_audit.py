"""The audit trail (WAIT-024..026): every signal that reaches a run is appended beside the record,
refusals leave the record byte-identical, `--check` records nothing, and `history get` shows it."""

from __future__ import annotations

import pytest
from test_waits_support import (
    ACCOUNT,
    VERDICT,
    at,
    env,
    record_path,
    refusal,
    signal,
    snapshot,
    wait_step,
    wait_workflow,
)


@pytest.fixture
def review(repo, monkeypatch):
    at(monkeypatch)
    wait_workflow(repo, "audit", wait_step("review", schema=VERDICT))
    doc = repo.run("audit")
    return repo, doc, doc["waits"][0]["waitId"]


def test_refusals_change_nothing_and_every_attempt_is_in_history_get(review, monkeypatch):
    repo, doc, wait_id = review
    path = record_path(repo, doc)
    before = snapshot(path)
    at(monkeypatch, "2026-01-01T00:01:00Z", user="mallory")
    attempts = [
        ({"payload": {"verdict": "maybe"}}, "payload_invalid"),
        ({"payloadText": '{"verdict": "ship", "verdict": "fix"}'}, "payload_malformed"),
        ({"payloadText": " " * 16385}, "payload_too_large"),
    ]
    for payload, code in attempts:
        assert refusal(repo, "workflow.signal", {"waitId": wait_id, **payload}).code == code
        assert snapshot(path) == before
    # --check: the same checks, nothing recorded anywhere
    assert signal(repo, wait_id, {"verdict": "ship"}, check=True)["valid"] is True
    assert (
        refusal(repo, "workflow.signal", {"waitId": wait_id, "payload": 1, "check": True}).code
        == "payload_invalid"
    )
    assert snapshot(path) == before
    at(monkeypatch, "2026-01-01T00:02:00Z", user="trent")
    taken = signal(repo, wait_id, {"verdict": "ship"})
    at(monkeypatch, "2026-01-01T00:03:00Z", user="mallory")
    assert (
        refusal(repo, "workflow.signal", {"waitId": wait_id, "payload": {"verdict": "fix"}}).code
        == "wait_settled"
    )
    # unknown and malformed IDs reach no run
    assert (
        refusal(repo, "workflow.signal", {"waitId": "wait_" + "b" * 26, "payload": 1}).code
        == "wait_not_found"
    )
    assert refusal(repo, "workflow.signal", {"waitId": "nope", "payload": 1}).code == "wait_not_found"

    audit = repo.handle("workflow.history.get", {"run": doc["id"]})["audit"]
    assert audit == [
        {
            "at": "2026-01-01T00:01:00.000Z",
            "by": ACCOUNT,
            "onBehalfOf": "mallory",
            "action": "signal",
            "waitId": wait_id,
            "code": "payload_invalid",
        },
        {
            "at": "2026-01-01T00:01:00.000Z",
            "by": ACCOUNT,
            "onBehalfOf": "mallory",
            "action": "signal",
            "waitId": wait_id,
            "code": "payload_malformed",
        },
        {
            "at": "2026-01-01T00:01:00.000Z",
            "by": ACCOUNT,
            "onBehalfOf": "mallory",
            "action": "signal",
            "waitId": wait_id,
            "code": "payload_too_large",
        },
        {
            "at": "2026-01-01T00:02:00.000Z",
            "by": ACCOUNT,
            "onBehalfOf": "trent",
            "action": "signal",
            "waitId": wait_id,
            "code": "accepted",
            "signalId": taken["signal"]["id"],
        },
        {
            "at": "2026-01-01T00:03:00.000Z",
            "by": ACCOUNT,
            "onBehalfOf": "mallory",
            "action": "signal",
            "waitId": wait_id,
            "code": "wait_settled",
        },
    ]


def test_expired_and_not_suspended_refusals_are_audited_too(review, monkeypatch):
    repo, doc, wait_id = review
    at(monkeypatch, "2026-01-01T00:10:00.001Z")
    assert (
        refusal(repo, "workflow.signal", {"waitId": wait_id, "payload": {"verdict": "ship"}}).code
        == "wait_expired"
    )
    assert [e["code"] for e in repo.handle("workflow.history.get", {"run": doc["id"]})["audit"]] == [
        "wait_expired"
    ]


def test_a_refused_rejection_or_retry_changes_nothing(review, monkeypatch):
    repo, doc, wait_id = review
    signal(repo, wait_id, {"verdict": "fix"})
    path = record_path(repo, doc)
    before = snapshot(path)
    assert refusal(repo, "workflow.reject", {"waitId": wait_id}).code == "wait_settled"
    retry = refusal(repo, "workflow.resume", {"workflow": "audit", "run": doc["id"], "from": "review"})
    assert retry.code == "run_not_suspended"  # --from retries failed runs only
    assert snapshot(path) == before


def test_resume_refused_for_an_open_wait_leaves_the_record_alone(review):
    repo, doc, wait_id = review
    path = record_path(repo, doc)
    before = snapshot(path)
    err = refusal(repo, "workflow.resume", {"workflow": "audit", "run": doc["id"]})
    assert (err.code, err.details) == ("wait_open", {"runId": doc["id"], "waitIds": [wait_id]})
    assert snapshot(path) == before


@pytest.mark.cli
def test_cli_history_get_lists_the_attempts_in_log_mode(repo):
    wait_workflow(repo, "audit-cli", wait_step("review", schema=VERDICT))
    _, _, _, doc = repo.swamp("workflow", "run", "audit-cli", "--json", env=env())
    wait_id = doc["waits"][0]["waitId"]
    code, _, err, _ = repo.swamp("workflow", "signal", wait_id, "--payload", "{}", env=env(user="mallory"))
    assert code == 3 and "payload_invalid" in err
    code, out, _, _ = repo.swamp("workflow", "history", "get", doc["id"], env=env())
    assert code == 0
    assert "mallory" in out and "payload_invalid" in out and wait_id in out
