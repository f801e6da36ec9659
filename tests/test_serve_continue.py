"""swamp serve continuing runs by itself, in real processes: auto-resume after the last gate, the
wait_open refusal (the mission's acceptance criterion), --auto-continue and --enforce-deadlines."""

from __future__ import annotations

import time

import pytest
from helpers import dep, job, sh
from test_serve_support import (  # noqa: F401 - serve_fixture, sockdir_fixture: fixtures
    LATER,
    T0,
    cli_json,
    gate,
    record,
    serve_fixture,
    serve_stdin,
    sockdir_fixture,
    steps,
    wait,
    wait_until,
)

pytestmark = pytest.mark.cli


def results(frames, ident):
    """(event kinds, the result data) of request `ident` in a list of frames."""
    mine = [f for f in frames if f.get("id") == ident]
    assert mine[-1]["type"] == "done", mine
    closing = [f for f in mine if f["type"] not in ("event", "done")]
    assert len(closing) == 1 and closing[0]["type"] != "error", closing
    return [f["event"]["event"] for f in mine if f["type"] == "event"], closing[0]["payload"]["data"]


def test_approving_the_last_gate_resumes_the_run_and_streams_it_on_the_approve(repo):
    repo.write_workflow(
        "twogates",
        [
            job(
                "main",
                gate("legal"),
                gate("security"),
                sh("ship", "echo shipped", dependsOn=[dep("legal"), dep("security")]),
            )
        ],
    )
    code, run = cli_json(repo, "workflow", "run", "twogates")
    assert code == 0 and run["status"] == "suspended"
    code, frames, stderr = serve_stdin(
        repo,
        [
            {"type": "workflow.approve", "id": "a1", "payload": {"workflow": "twogates", "step": "legal"}},
        ],
    )
    assert code == 0, stderr
    events, first = results(frames, "a1")
    assert events == []
    assert first["autoResume"] == {"resumed": False, "reason": "approval_pending", "steps": ["security"]}
    assert record(repo, run["id"])["status"] == "suspended"

    code, frames, stderr = serve_stdin(
        repo,
        [
            {"type": "workflow.approve", "id": "a2", "payload": {"workflow": "twogates", "step": "security"}},
        ],
    )
    assert code == 0, stderr
    events, second = results(frames, "a2")
    assert events[0] == "run_resumed" and events[-1] == "run_completed"
    assert "step_output" in events
    assert second["autoResume"] == {"resumed": True, "runStatus": "succeeded"}
    assert "next" not in second
    kept = record(repo, run["id"])
    assert kept["status"] == "succeeded" and steps(kept)["ship"]["outputs"]["stdout"] == "shipped\n"


def test_serve_does_not_auto_resume_a_run_with_an_open_wait_after_its_last_gate(repo):
    """The mission's acceptance criterion: approve the last gate through serve while a wait is open."""
    repo.write_workflow(
        "both",
        [
            job(
                "main",
                gate("gate"),
                wait("value"),
                sh("after", "echo after", dependsOn=[dep("gate"), dep("value")]),
            )
        ],
    )
    code, run = cli_json(repo, "workflow", "run", "both")
    wait_id = run["waits"][0]["waitId"]
    before = record(repo, run["id"])
    code, frames, stderr = serve_stdin(
        repo,
        [
            {"type": "workflow.approve", "id": "a1", "payload": {"workflow": "both", "step": "gate"}},
            {
                "type": "workflow.signal",
                "id": "g1",
                "payload": {"waitId": wait_id, "payload": 1, "check": True},
            },
        ],
    )
    assert code == 0, stderr
    events, approved = results(frames, "a1")
    assert events == []
    assert approved["approved"] is True
    assert approved["autoResume"] == {"resumed": False, "reason": "wait_open", "waitIds": [wait_id]}
    kept = record(repo, run["id"])
    assert kept["status"] == "suspended"
    assert {n: s["status"] for n, s in steps(kept).items()} == {
        "gate": "succeeded",
        "value": "waiting",
        "after": "pending",
    }
    assert steps(kept)["value"]["wait"] == steps(before)["value"]["wait"]
    code, refused = cli_json(repo, "workflow", "resume", "both")
    assert code == 3 and refused["error"]["code"] == "wait_open"

    # without --auto-continue, settling the last wait through serve does not resume either
    code, frames, stderr = serve_stdin(
        repo,
        [
            {"type": "workflow.signal", "id": "g2", "payload": {"waitId": wait_id, "payload": 2}},
        ],
    )
    events, signalled = results(frames, "g2")
    assert events == [] and "autoResume" not in signalled
    assert record(repo, run["id"])["status"] == "suspended"
    code, resumed = cli_json(repo, "workflow", "resume", "both")
    assert code == 0 and resumed["status"] == "succeeded"


def test_auto_continue_resumes_once_the_last_wait_is_settled(repo):
    repo.write_workflow(
        "pair",
        [
            job(
                "main",
                wait("first"),
                wait("second"),
                sh("after", "echo both", dependsOn=[dep("first"), dep("second")]),
            )
        ],
    )
    code, run = cli_json(repo, "workflow", "run", "pair")
    first, second = (w["waitId"] for w in run["waits"])
    code, frames, stderr = serve_stdin(
        repo,
        [
            {"type": "workflow.signal", "id": "g1", "payload": {"waitId": first, "payload": 1}},
        ],
        "--auto-continue",
    )
    events, one = results(frames, "g1")
    assert events == [] and one["autoResume"] == {
        "resumed": False,
        "reason": "wait_open",
        "waitIds": [second],
    }
    code, frames, stderr = serve_stdin(
        repo,
        [
            {
                "type": "workflow.signal",
                "id": "g2",
                "payload": {"waitId": second, "payload": 2, "check": True},
            },
        ],
        "--auto-continue",
    )
    events, checked = results(frames, "g2")
    assert events == [] and "autoResume" not in checked
    code, frames, stderr = serve_stdin(
        repo,
        [
            {"type": "workflow.signal", "id": "g3", "payload": {"waitId": second, "payload": 2}},
        ],
        "--auto-continue",
    )
    events, two = results(frames, "g3")
    assert events[0] == "run_resumed" and events[-1] == "run_completed"
    assert two["autoResume"] == {"resumed": True, "runStatus": "succeeded"}
    assert record(repo, run["id"])["status"] == "succeeded"


def deadline_workflow(repo):
    return repo.write_workflow(
        "deadline",
        [
            job(
                "main",
                wait("review", timeout=60, allowFailure=True),
                sh("escalate", "echo escalated", dependsOn=[dep("review", "failed")]),
            )
        ],
        inputs={"type": "object", "properties": {"k": {"type": "integer"}}},
    )


def test_enforce_deadlines_fails_expired_waits_without_a_request(repo, serve):
    deadline_workflow(repo)
    runs = [
        cli_json(repo, "workflow", "run", "deadline", "--input", f"k={k}", env={"SWAMP_NOW": T0})[1]
        for k in (1, 2)
    ]
    assert [r["status"] for r in runs] == ["suspended", "suspended"]

    serve("--enforce-deadlines", env={"SWAMP_NOW": LATER})

    def timed_out():
        docs = [record(repo, r["id"]) for r in runs]
        return all(steps(d)["review"]["status"] == "failed" for d in docs) and docs

    for doc in wait_until("both waits to time out", timed_out, timeout=10):
        review = steps(doc)["review"]
        assert review["reason"] == "wait_timeout" and review["wait"]["outcome"] == "timed_out"
        assert doc["status"] == "suspended" and steps(doc)["escalate"]["status"] == "pending"
    code, resumed = cli_json(
        repo, "workflow", "resume", "deadline", "--run", runs[0]["id"], env={"SWAMP_NOW": LATER}
    )
    assert code == 0 and resumed["status"] == "succeeded"
    assert steps(resumed)["escalate"]["status"] == "succeeded"


def test_enforce_deadlines_with_auto_continue_runs_the_failed_handler(repo, serve):
    deadline_workflow(repo)
    code, run = cli_json(repo, "workflow", "run", "deadline", "--input", "k=3", env={"SWAMP_NOW": T0})
    serve("--enforce-deadlines", "--auto-continue", env={"SWAMP_NOW": LATER})
    done = wait_until("the run to end", lambda: record(repo, run["id"])["status"] == "succeeded", timeout=10)
    assert done
    kept = steps(record(repo, run["id"]))
    assert kept["review"]["reason"] == "wait_timeout"
    assert kept["escalate"]["outputs"]["stdout"] == "escalated\n"


def test_without_enforce_deadlines_expired_waits_are_left_alone(repo, serve):
    deadline_workflow(repo)
    code, run = cli_json(repo, "workflow", "run", "deadline", "--input", "k=4", env={"SWAMP_NOW": T0})
    before = record(repo, run["id"])
    server = serve("--auto-continue", env={"SWAMP_NOW": LATER})
    client = server.client()
    status = client.request("serve.status", "s1")["payload"]["data"]
    assert status["enforceDeadlines"] is False
    time.sleep(1.8)  # longer than the deadline check interval of --enforce-deadlines (1 s)
    assert record(repo, run["id"]) == before
