"""swamp serve on its Unix socket, in real processes: clients at once, signals while a run executes,
serve.status, cancel and --max-runs."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path

import pytest
from helpers import dep, job, run_swamp, sh
from test_serve_support import (  # noqa: F401 - serve_fixture, sockdir_fixture: fixtures
    Serve,
    cli_json,
    data,
    error_code,
    record,
    serve_fixture,
    sockdir_fixture,
    steps,
    wait,
    wait_until,
)

pytestmark = pytest.mark.cli


def slow_workflow(repo, name="slow", seconds=1.5):
    return repo.write_workflow(
        name,
        [
            job(
                "main",
                sh("nap", f"sleep {seconds}; echo rested"),
                sh("after", "echo after", dependsOn=[dep("nap")]),
            )
        ],
        inputs={"type": "object", "properties": {"k": {"type": "integer"}}},
    )


def test_two_clients_at_once_and_a_signal_delivered_while_a_run_executes(repo, serve):
    slow_workflow(repo)
    repo.write_workflow("waiter", [job("main", wait("review"))])
    code, waiting = cli_json(repo, "workflow", "run", "waiter")
    assert code == 0 and waiting["status"] == "suspended"
    wait_id = waiting["waits"][0]["waitId"]

    server: Serve = serve()
    mode = stat.S_IMODE(server.socket.stat().st_mode)
    assert mode == 0o600
    a, b = server.client(), server.client()
    a.send("workflow.run", "r1", {"workflow": "slow"})
    run_id = a.event("r1", "run_started")["runId"]
    a.event("r1", "step_started", step="nap")

    # b uses the same request id: another connection, another request
    started = time.monotonic()
    signalled = data(b.request("workflow.signal", "r1", {"waitId": wait_id, "payload": {"verdict": "ship"}}))
    listed = data(b.request("workflow.list", "l1"))
    status = data(b.request("serve.status", "s1"))
    answered_in = time.monotonic() - started

    assert signalled["waitId"] == wait_id and signalled["payload"] == {"verdict": "ship"}
    assert "autoResume" not in signalled  # without --auto-continue, resuming stays manual
    assert {w["name"] for w in listed["workflows"]} == {"slow", "waiter"}
    assert status["runsInFlight"] == [run_id]
    # all answered while the slow run was still executing
    assert not any(f["type"] == "done" for f in a.of("r1")), "the run finished before the signal was answered"
    assert record(repo, run_id)["status"] == "running"
    assert answered_in < 1.4
    settled = steps(record(repo, waiting["id"]))["review"]
    assert settled["status"] == "succeeded" and settled["outputs"]["payload"] == {"verdict": "ship"}

    doc = data(a.reply("r1", timeout=20))
    assert doc["id"] == run_id and doc["status"] == "succeeded"
    # each connection got only its own frames
    assert {f["id"] for f in a.frames} == {"r1"}
    assert all(f["type"] != "event" for f in b.frames)
    assert {f["id"] for f in b.frames} == {"r1", "l1", "s1"}


def test_serve_status_reports_what_serve_is_doing(repo, serve):
    slow_workflow(repo)
    server = serve("--auto-continue")
    a = server.client()
    idle = data(a.request("serve.status", "s0"))
    assert idle["runsInFlight"] == [] and idle["requestsInFlight"] == 0
    assert isinstance(idle["version"], str) and idle["pid"] == server.proc.pid
    assert isinstance(idle["uptimeSeconds"], (int, float)) and idle["uptimeSeconds"] >= 0
    assert idle["socket"] == str(server.socket)
    assert idle["autoContinue"] is True and idle["enforceDeadlines"] is False
    assert idle["shuttingDown"] is False and idle["openWaits"] == 0

    a.send("workflow.run", "r1", {"workflow": "slow", "inputs": {"k": 1}})
    run_id = a.event("r1", "run_started")["runId"]
    busy = data(a.request("serve.status", "s1"))
    assert busy["runsInFlight"] == [run_id] and busy["requestsInFlight"] == 1
    a.reply("r1", timeout=20)


def test_cancel_by_request_id_and_by_run_id(repo, serve):
    slow_workflow(repo)
    server = serve()
    a, b = server.client(), server.client()
    a.send("workflow.run", "r1", {"workflow": "slow", "inputs": {"k": 1}})
    b.send("workflow.run", "r2", {"workflow": "slow", "inputs": {"k": 2}})
    run1 = a.event("r1", "run_started")["runId"]
    run2 = b.event("r2", "run_started")["runId"]
    a.event("r1", "step_started", step="nap")
    b.event("r2", "step_started", step="nap")

    assert error_code(a.request("cancel", "c1", {})) == "invalid_request"
    assert error_code(a.request("cancel", "c2", {"id": "r1", "run": run1})) == "invalid_request"
    assert error_code(a.request("cancel", "c3", {"id": "r2"})) == "not_in_flight"  # b's, not a's
    assert (
        error_code(a.request("cancel", "c4", {"run": "00000000-0000-4000-8000-000000000000"}))
        == "not_in_flight"
    )

    by_id = data(a.request("cancel", "c5", {"id": "r1"}))
    assert by_id == {"cancelled": [{"id": "r1", "type": "workflow.run", "runIds": [run1]}]}
    by_run = data(a.request("cancel", "c6", {"run": run2}))
    assert by_run == {"cancelled": [{"id": "r2", "type": "workflow.run", "runIds": [run2]}]}

    for client, ident, run_id in ((a, "r1", run1), (b, "r2", run2)):
        doc = data(client.reply(ident, timeout=20))
        assert doc["id"] == run_id and doc["status"] == "cancelled" and doc["cancelReason"]
        kept = record(repo, run_id)
        assert kept["status"] == "cancelled"
        # the running step finished, the next one never started
        assert {n: s["status"] for n, s in steps(kept).items()} == {"nap": "succeeded", "after": "pending"}
    assert error_code(a.request("cancel", "c7", {"id": "r1"})) == "not_in_flight"


def test_max_runs_bounds_concurrent_runs(repo, serve):
    slow_workflow(repo)
    server = serve("--max-runs", "1")
    a, b = server.client(), server.client()
    a.send("workflow.run", "r1", {"workflow": "slow", "inputs": {"k": 1}})
    a.event("r1", "step_started", step="nap")
    refused = b.request("workflow.run", "r2", {"workflow": "slow", "inputs": {"k": 2}})
    assert error_code(refused) == "too_many_requests"
    assert refused["error"]["details"] == {"maxRuns": 1}
    assert data(b.request("workflow.history", "h1"))["runs"][0]["status"] == "running"  # others still served
    assert len(list((repo.root / ".swamp" / "workflow-runs").rglob("*.json"))) == 1  # r2 started nothing
    assert data(a.reply("r1", timeout=20))["status"] == "succeeded"
    wait_until(
        "r1's request to end",
        lambda: data(b.request("serve.status", f"s{time.monotonic()}"))["requestsInFlight"] == 0,
    )
    assert (
        data(b.request("workflow.run", "r3", {"workflow": "slow", "inputs": {"k": 3}}, timeout=20))["status"]
        == "succeeded"
    )


def test_a_second_serve_on_a_live_socket_is_refused(repo, serve):
    server = serve()
    second = repo.swamp("serve", "--socket", str(server.socket))
    assert second.code == 3
    assert "socket_in_use" in second.err and second.out == ""
    assert data(server.client().request("serve.status", "s1"))["pid"] == server.proc.pid


def test_a_client_that_goes_away_does_not_fail_its_run(repo, serve):
    repo.write_workflow("chatty", [job("main", sh("talk", "sleep 1; echo one; echo two"))])
    server = serve()
    a = server.client()
    a.send("workflow.run", "r1", {"workflow": "chatty"})
    run_id = a.event("r1", "run_started")["runId"]
    a.event("r1", "step_started", step="talk")
    a.close()
    final = wait_until(
        "the run to end", lambda: record(repo, run_id)["status"] != "running" and record(repo, run_id)
    )
    assert final["status"] == "succeeded", steps(final)["talk"]


def test_max_runs_also_bounds_runs_resumed_after_an_approve(repo, serve):
    slow_workflow(repo)
    repo.write_workflow(
        "gated",
        [
            job(
                "main",
                {"name": "gate", "task": {"type": "manual_approval", "prompt": "go?"}},
                sh("after", "echo after", dependsOn=[dep("gate")]),
            )
        ],
    )
    code, gated = cli_json(repo, "workflow", "run", "gated")
    assert code == 0
    server = serve("--max-runs", "1")
    a = server.client()
    a.send("workflow.run", "r1", {"workflow": "slow"})
    a.event("r1", "step_started", step="nap")
    approved = data(a.request("workflow.approve", "a1", {"workflow": "gated", "step": "gate"}, timeout=20))
    assert approved["autoResume"]["resumed"] is False
    assert approved["autoResume"]["reason"] == "too_many_requests"
    assert record(repo, gated["id"])["status"] == "suspended"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="chown needs root")
def test_a_stale_socket_of_another_user_is_refused_and_left_where_it_is(repo, sockdir):
    path = sockdir / "theirs.sock"
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))
    left.close()  # nobody listens: stale, but not ours
    os.chown(path, 65534, 65534)
    result = run_swamp("serve", "--socket", str(path), cwd=repo.root, timeout=20)
    assert result.code == 3 and "socket_not_owned" in result.err, result.err
    assert stat.S_ISSOCK(path.lstat().st_mode) and path.lstat().st_uid == 65534


def test_a_symlink_at_the_socket_path_is_refused_and_not_followed(repo, sockdir):
    target = sockdir / "target.txt"
    target.write_text("kept\n")
    path = sockdir / "link.sock"
    path.symlink_to(target)
    result = run_swamp("serve", "--socket", str(path), cwd=repo.root, timeout=20)
    assert result.code == 3 and "socket_path_taken" in result.err, result.err
    assert path.is_symlink() and target.read_text() == "kept\n"


def test_a_socket_path_too_long_for_a_unix_socket_is_refused_by_serve_and_by_connect(repo, sockdir):
    """SERVE-050: the kernel's limit on a socket's path (108 bytes on Linux, its NUL included) is
    said, with what to do, instead of a stack trace."""
    path = sockdir / ("s" * (120 - len(str(sockdir))) + ".sock")
    served = run_swamp("serve", "--socket", str(path), cwd=repo.root, timeout=20)
    assert served.code == 3 and "serve_error" in served.err and "Traceback" not in served.err, served.err
    assert "a Unix socket's path holds at most 107" in served.err and not path.exists()
    connected = run_swamp("--connect", str(path), "workflow", "waits", cwd=repo.root, timeout=20)
    assert connected.code == 1 and "store_unavailable" in connected.err, connected.err
    assert "holds at most 107: choose a shorter one" in connected.err


def as_other_user(uid: int, path: Path, lines: list[str], answers: int) -> list[dict]:
    """Send `lines` to serve's socket from a forked child that runs as `uid`; the frames other than
    done, once `answers` requests are done."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: socket calls only, then _exit
        code = 1
        try:
            os.close(read_end)
            os.setgid(uid)
            os.setuid(uid)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(path))
            sock.sendall("".join(line + "\n" for line in lines).encode())
            out, done = [], 0
            with sock.makefile("r") as frames:
                for line in frames:
                    if json.loads(line)["type"] == "done":
                        done += 1
                    else:
                        out.append(line)
                    if done == answers:
                        break
            os.write(write_end, "".join(out).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as result:
        text = result.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the client running as another user failed"
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="acting as another user needs root")
def test_a_signal_over_the_socket_is_submitted_by_the_connecting_users_account(repo, serve):
    """SO_PEERCRED: the client's own account, not serve's (nor serve's LOGNAME or SWAMP_ACTOR), also
    for the signals serve hands to its helper processes."""
    import pwd

    repo.write_workflow("peer", [job("main", wait("review"))])
    waits = [cli_json(repo, "workflow", "run", "peer")[1]["waits"][0]["waitId"] for _ in range(12)]
    server: Serve = serve(env={"LOGNAME": "serveuser", "USER": "serveuser", "SWAMP_ACTOR": "serveactor"})
    os.chmod(server.socket.parent, 0o755)
    os.chmod(server.socket, 0o666)  # this test shares the socket on purpose
    lines = [
        json.dumps({"type": "workflow.signal", "id": f"s{i}", "payload": {"waitId": w, "payload": i}})
        for i, w in enumerate(waits)
    ]
    answers = as_other_user(65534, server.socket, lines, len(waits))
    assert len(answers) == 12 and all(a["type"] == "workflow.signal" for a in answers), answers
    nobody = pwd.getpwuid(65534).pw_name
    for answer in answers:
        signal = answer["payload"]["data"]["signal"]
        assert signal["submittedBy"] == nobody and "onBehalfOf" not in signal, signal
    audit = repo.handle("workflow.history.get", {"run": answers[0]["payload"]["data"]["runId"]})["audit"]
    assert [(e["by"], "onBehalfOf" in e) for e in audit] == [(nobody, False)]
