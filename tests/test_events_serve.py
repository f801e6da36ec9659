"""Subscriptions in a real `swamp serve`: a subscriber that never reads is cut off as SERVE-033
says and its subscription ends and frees its place, while other connections are answered."""

from __future__ import annotations

import itertools
import signal
import socket

from helpers import Repo
from test_serve_support import (  # noqa: F401 - serve_fixture, sockdir_fixture: fixtures
    Serve,
    data,
    serve_fixture,
    sockdir_fixture,
    wait_until,
)

from swamp.store.events import EventLog
from swamp.store.repo import RepoLayout


def test_a_subscriber_that_never_reads_is_cut_off_and_its_subscription_ends(repo: Repo, serve) -> None:  # type: ignore[no-untyped-def]
    log = EventLog(RepoLayout(repo.root))
    start = log.start()
    bulky = "x" * 4000
    for _ in range(12):  # ~12 MiB of events to replay: far past what serve queues for one client
        log.append([{"event": "run_finished", "runId": "r", "note": bulky} for _ in range(256)])
    log_file = repo.root / "serve.log"
    server: Serve = serve("--log-file", str(log_file))
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    silent.connect(str(server.socket))
    silent.sendall(b'{"type":"events.subscribe","id":"s","payload":{"after":"' + start.encode() + b'"}}\n')
    other = server.client()
    asked = itertools.count()

    def quiet() -> bool:  # the silent client's subscription is over: only this request is in flight
        return data(other.request("serve.status", f"st{next(asked)}"))["requestsInFlight"] == 0

    # The log says it was cut off; only then is "none in flight" evidence that its subscription
    # ended (on a loaded machine serve may not even have read the subscription yet).
    wait_until("the silent client to be cut off", lambda: "frames unread" in log_file.read_text(), timeout=30)
    wait_until("the silent subscription to end", quiet, timeout=30, every=0.2)
    silent.close()
    server.signal(signal.SIGTERM)
    code, _ = server.wait()
    assert code == 0
    assert "Traceback" not in log_file.read_text()


def test_a_connection_that_ends_is_closed_while_another_holds_a_subscription(repo: Repo, serve) -> None:  # type: ignore[no-untyped-def]
    server: Serve = serve()
    holder = server.client()
    holder.send("events.subscribe", "s")
    passer = server.client()
    asked = itertools.count()
    # Two connections: serve may read the passer's request before the holder's subscription.
    wait_until(
        "the subscription to be in flight",
        lambda: data(passer.request("serve.status", f"st{next(asked)}"))["requestsInFlight"] == 1,
        timeout=10,
    )
    passer.sock.shutdown(socket.SHUT_WR)  # done with its requests
    wait_until("serve to close the finished connection", lambda: passer.closed, timeout=10)
    holder.send("cancel", "c", {"id": "s"})
    assert data(holder.reply("s"))["outcome"] == "cancelled"
