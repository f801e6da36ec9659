"""`swamp --connect` in real processes, with the test's own account (spec/access.md, "--connect"):
Ctrl-C on a long command ends it as locally and cancels its request in serve; a serve that goes
away mid-request is store_unavailable; an empty SWAMP_CONNECT is unset."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading

import pytest
from helpers import SWAMP, clean_env, job
from test_serve_support import (  # noqa: F401 - serve_fixture, sockdir_fixture: fixtures
    Client,
    Serve,
    cli_json,
    data,
    serve_fixture,
    sockdir_fixture,
    wait,
    wait_until,
)

pytestmark = pytest.mark.cli


def _connected(server: Serve, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(SWAMP), "--connect", str(server.socket), *args],
        cwd=server.repo.root,
        env=clean_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As at a shell: a background job of a script (scripts/test runs the tests so) inherits
        # SIGINT ignored, and Python keeps an ignored SIGINT ignored, so Ctrl-C would do nothing.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )


def _in_flight(server: Serve) -> int:
    client = server.client()
    try:
        return int(data(client.request("serve.status", "s"))["requestsInFlight"])
    finally:
        client.close()


def _suspended(repo) -> str:  # type: ignore[no-untyped-def]
    repo.write_workflow("waiter", [job("main", wait("review"))])
    code, run = cli_json(repo, "workflow", "run", "waiter")
    assert code == 0 and run["status"] == "suspended"
    return str(run["id"])


def test_ctrl_c_on_a_watch_through_connect_ends_it_and_cancels_it_in_serve(repo, serve) -> None:
    run_id = _suspended(repo)
    server: Serve = serve()
    watching = _connected(server, "workflow", "watch", run_id)
    wait_until("the watch in serve", lambda: _in_flight(server) >= 1)
    watching.send_signal(signal.SIGINT)
    out, err = watching.communicate(timeout=20)
    assert watching.returncode == 130, (out, err)
    assert f"Watch it again with: swamp workflow watch {run_id}" in err and "Traceback" not in err
    wait_until("serve to end the watch", lambda: _in_flight(server) == 0)


def test_ctrl_c_on_events_through_connect_says_where_to_go_on(repo, serve) -> None:
    server: Serve = serve()
    following = _connected(server, "events", env={"PYTHONUNBUFFERED": "1"})
    wait_until("the subscription in serve", lambda: _in_flight(server) >= 1)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(following.stdout.readline, "")), daemon=True)
    reader.start()
    _suspended(repo)  # events arrive while it follows
    wait_until("a wait_opened event through the socket", lambda: any("wait opened" in x for x in lines))
    following.send_signal(signal.SIGINT)
    following.wait(timeout=20)
    err = following.stderr.read()
    assert following.returncode == 130 and "Traceback" not in err
    assert "Go on from here with: swamp events --after " in err
    wait_until("serve to end the subscription", lambda: _in_flight(server) == 0)


def test_a_serve_that_goes_away_mid_request_is_store_unavailable(repo, serve) -> None:
    run_id = _suspended(repo)
    server: Serve = serve()
    watching = _connected(server, "workflow", "watch", run_id, "--json")
    wait_until("the watch in serve", lambda: _in_flight(server) >= 1)
    server.signal(signal.SIGKILL)
    out, err = watching.communicate(timeout=20)
    assert watching.returncode == 1, (out, err)
    error = json.loads(out)["error"]
    assert error["code"] == "store_unavailable" and "took effect" in error["message"]


def test_an_empty_swamp_connect_is_unset(repo) -> None:
    _suspended(repo)
    result = repo.swamp("workflow", "waits", "--json", env={"SWAMP_CONNECT": ""})
    assert result.code == 0 and len(result.json["waits"]) == 1


def test_the_payload_prompt_works_through_connect(repo, serve) -> None:
    """ACCESS-081: at a terminal, signal without --payload asks through the serve (its wait show)
    and sends what was typed through it."""
    from terminal import Terminal

    schema = {"type": "integer", "minimum": 1}
    repo.write_workflow(
        "count",
        [job("main", {"name": "n", "task": {"type": "wait_for_signal", "timeout": 600, "schema": schema}})],
    )
    _code, run = cli_json(repo, "workflow", "run", "count")
    wait_id = run["waits"][0]["waitId"]
    server: Serve = serve()
    term = Terminal(["--connect", str(server.socket), "workflow", "signal", wait_id], repo.root)
    term.expect("payload (integer, ≥ 1): ")
    term.line("3")
    term.expect("[y/N] ")
    term.line("y")
    code, text = term.finish()  # no offer to continue through a serve (CLI-039)
    assert code == 0 and "Signal accepted" in text, text
    shown = repo.swamp("workflow", "wait", "show", wait_id, "--json").json
    assert shown["status"] != "open" and shown["receipt"]["submittedBy"]


def _the_one_connection(server: Serve) -> Client:
    """A connection serve has taken and counts: the fixture's readiness probe may still count
    against --max-connections for a moment after it closed, so connect until one is answered."""
    held: list[Client] = []

    def answered() -> bool:
        client = server.client()
        with contextlib.suppress(OSError):
            client.send("protocol.version", "v")

        def settled() -> bool:  # answered, or turned away (SERVE-045: an error frame without id)
            return any(f["type"] == "done" for f in client.of("v")) or bool(client.of(None))  # type: ignore[arg-type]

        wait_until("an answer or a refusal", settled, timeout=10)
        if client.of(None):  # type: ignore[arg-type]
            client.close()
            return False
        held.append(client)
        return True

    wait_until("a connection serve answers", answered, timeout=15)
    return held[0]


def test_a_connection_serve_turns_away_is_its_refusal(repo, serve) -> None:
    """Past --max-connections, the command says serve's too_many_requests (SERVE-045), not that
    the serve is missing."""
    _suspended(repo)
    server: Serve = serve("--max-connections", "1")
    held = _the_one_connection(server)
    turned = repo.swamp("--connect", str(server.socket), "workflow", "waits", "--json")
    held.close()
    assert turned.code == 3, turned
    assert turned.json["error"]["code"] == "too_many_requests"
