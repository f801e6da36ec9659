"""Ending swamp serve, in real processes: SIGTERM mid-run (within and past --grace), SIGKILL and the
command that comes next."""

from __future__ import annotations

import signal
import time

import pytest
from helpers import dep, job, sh
from test_serve_support import (  # noqa: F401 - serve_fixture, sockdir_fixture: fixtures
    cli_json,
    data,
    error_code,
    gate,
    record,
    serve_fixture,
    sockdir_fixture,
    steps,
    wait,
    wait_until,
)

pytestmark = pytest.mark.cli


def no_step_left_open(doc):
    """Nothing of a finished run may still be running or waiting."""
    assert doc["status"] in ("failed", "succeeded", "cancelled"), doc["status"]
    assert doc.get("completedAt")
    for j in doc["jobs"]:
        assert j["status"] != "running", j
        for s in j["steps"]:
            assert s["status"] not in ("running", "waiting", "waiting_approval"), s


def test_sigterm_mid_run_lets_the_step_finish_within_grace(repo, serve):
    repo.write_workflow(
        "slow",
        [job("main", sh("nap", "sleep 1.5; echo rested"), sh("after", "echo after", dependsOn=[dep("nap")]))],
    )
    server = serve("--grace", "10")
    a, b = server.client(), server.client()
    a.send("workflow.run", "r1", {"workflow": "slow"})
    run_id = a.event("r1", "run_started")["runId"]
    a.event("r1", "step_started", step="nap")
    server.signal(signal.SIGTERM)
    wait_until(
        "shutting down", lambda: data(b.request("serve.status", f"s{time.monotonic()}"))["shuttingDown"]
    )
    assert error_code(b.request("workflow.list", "l1")) == "shutting_down"

    doc = data(a.reply("r1", timeout=20))  # the request still gets its result and done
    assert doc["id"] == run_id and doc["status"] == "failed"
    code, stderr = server.wait()
    assert code == 0, stderr
    assert not server.socket.exists()
    kept = record(repo, run_id)
    assert {n: s["status"] for n, s in steps(kept).items()} == {"nap": "succeeded", "after": "pending"}
    assert kept["status"] == "failed" and kept["completedAt"]
    assert all(j["status"] != "running" for j in kept["jobs"])
    code, shown = cli_json(repo, "workflow", "history", "get", run_id)
    assert code == 0 and shown["interrupted"] is False


def test_sigterm_past_grace_records_the_run_interrupted_answers_and_stops_the_command(repo, serve):
    marker = repo.root / "deployed.txt"
    long = sh("long", f"sleep 1.5; echo deployed > {marker}")
    repo.write_workflow("mixed", [job("main", gate("gate"), wait("value"), long)])
    server = serve("--grace", "0.5")
    a = server.client()
    a.send("workflow.run", "r1", {"workflow": "mixed"})
    run_id = a.event("r1", "run_started")["runId"]
    a.event("r1", "step_started", step="long")
    a.event("r1", "step_waiting", step="value")
    started = time.monotonic()
    server.signal(signal.SIGTERM)
    code, stderr = server.wait(timeout=10)
    assert code == 0, stderr
    assert time.monotonic() - started < 4
    assert "Traceback" not in stderr
    # the request it cut short is still answered and closed
    wait_until("the connection to close", lambda: a.closed, timeout=5)
    mine = a.of("r1")
    assert mine[-1]["type"] == "done"
    assert len([f for f in mine if f["type"] not in ("event", "done")]) == 1
    kept = record(repo, run_id)
    no_step_left_open(kept)
    assert kept["status"] == "failed"
    cut = steps(kept)["long"]
    assert cut["status"] == "failed" and cut["reason"] == "interrupted"
    assert cut["error"].startswith("interrupted:")
    # every command reads it, and nothing is left to settle
    code, waits = cli_json(repo, "workflow", "waits")
    assert code == 0 and waits["waits"] == []
    code, shown = cli_json(repo, "workflow", "history", "get", run_id)
    assert code == 0 and shown["interrupted"] is False
    # the command recorded as interrupted was stopped, not left to do its work
    time.sleep(max(0.0, started + 2.5 - time.monotonic()))
    assert not marker.exists()


def test_sigkill_then_the_next_command_reads_the_records_and_takes_the_claim(repo, serve):
    repo.write_workflow("slow", [job("main", sh("nap", "sleep 3"))])
    repo.write_workflow("gated", [job("main", gate("gate"))])
    code, gated = cli_json(repo, "workflow", "run", "gated")
    server = serve()
    a = server.client()
    a.send("workflow.run", "r1", {"workflow": "slow"})
    run_id = a.event("r1", "run_started")["runId"]
    a.event("r1", "step_started", step="nap")
    code, busy = cli_json(repo, "workflow", "cancel", "slow", "--run", run_id, "--claim-timeout", "0")
    assert code == 75 and busy["error"]["code"] == "claim_timeout"  # held while serve executes it

    server.signal(signal.SIGKILL)
    code, _ = server.wait()
    assert code == -signal.SIGKILL
    assert server.socket.exists()  # left behind

    code, shown = cli_json(repo, "workflow", "history", "get", run_id)
    assert code == 0 and shown["status"] == "running" and shown["interrupted"] is True
    code, listed = cli_json(repo, "workflow", "history")
    assert code == 0 and len(listed["runs"]) == 2
    started = time.monotonic()
    code, cancelled = cli_json(repo, "workflow", "cancel", "slow", "--run", run_id, "--claim-timeout", "0")
    assert code == 0 and cancelled["status"] == "cancelled"
    no_step_left_open(cancelled)
    code, approved = cli_json(repo, "workflow", "approve", "gated", "gate", "--claim-timeout", "0")
    assert code == 0 and approved["runId"] == gated["id"]
    assert time.monotonic() - started < 10

    # a new serve replaces the stale socket
    again = serve()
    assert data(again.client().request("serve.status", "s1"))["pid"] == again.proc.pid


def test_sigterm_ends_a_watch_at_once_with_the_command_to_watch_again(repo, serve):
    repo.write_workflow("asks", [job("main", wait("ask"))])
    code, doc = cli_json(repo, "workflow", "run", "asks")
    assert code == 0 and doc["status"] == "suspended"
    server = serve("--grace", "30")
    client = server.client()
    client.send("workflow.watch", "w1", {"run": doc["id"]})
    client.event("w1", "run_status", status="suspended")
    server.signal(signal.SIGTERM)
    reply = client.reply("w1", timeout=20)
    # Its own answer (not serve's "shut down before this request finished" after the grace).
    assert reply["error"]["code"] == "shutting_down"
    assert f"swamp workflow watch {doc['id']}" in reply["error"]["message"]
    code, stderr = server.wait()
    assert code == 0, stderr
    assert record(repo, doc["id"])["status"] == "suspended"
