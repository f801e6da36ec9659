"""swamp.client's `subscribe` (events.subscribe) against a real serve: events a CLI in another
process made, the end of a subscription (`cursor`, `outcome`), carrying on after a cursor with no
duplicate, a refused cursor, and a connection lost mid-subscription.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from helpers import make_repo
from test_client import valid, waiter

from swamp.client import Client, ConnectionLost, SwampError

pytestmark = pytest.mark.cli


def test_subscribe_streams_what_another_process_did_and_carries_on_after_its_cursor(tmp_path):
    repo = make_repo(tmp_path / "repo")
    name = waiter(repo, "ev-flow")
    with Client.spawn(repo.root) as client:
        start = client.subscribe(timeout=0)
        assert list(start) == [] and start.outcome == "timeout" and isinstance(start.cursor, str)
        valid("events.subscribe", dict(start.end or {}))

        started = repo.swamp("workflow", "run", name, "--json")  # the CLI, another process
        assert started.code == 0, started.err
        wait_id = started.json["waits"][0]["waitId"]
        with client.subscribe(after=start.cursor, kinds=["wait_opened"]) as opened:
            first = next(iter(opened))
        assert (first["event"], first["waitId"], first["step"]) == ("wait_opened", wait_id, "review")
        assert opened.outcome == "cancelled" and isinstance(opened.cursor, str)  # close() stopped it

        client.signal(wait_id, {"verdict": "ship"}, resume=True)
        rest = client.subscribe(after=first["cursor"], runs=[started.json["id"]], timeout=0)
        kinds = [e["event"] for e in rest]
        assert kinds == ["run_suspended", "wait_settled", "run_finished"], kinds
        assert rest.outcome == "timeout"
        again = client.subscribe(after=start.cursor, timeout=0)
        assert [e["event"] for e in again] == ["wait_opened", *kinds]  # each once, in log order

        with pytest.raises(SwampError) as refused:
            list(client.subscribe(after="not-a-cursor", timeout=0))
        assert refused.value.code == "cursor_invalid"


def test_a_subscription_whose_serve_dies_raises_connection_lost_and_keeps_its_last_cursor(tmp_path):
    repo = make_repo(tmp_path / "repo")
    name = waiter(repo, "ev-die")
    sock = Path(f"/tmp/swcl-ev-{os.getpid()}.sock")
    doomed = Client.spawn(repo.root, args=["--socket", str(sock)])
    try:
        with Client.connect(sock) as client:
            start = client.subscribe(timeout=0)
            list(start)
            repo.swamp("workflow", "run", name)
            events = client.subscribe(after=start.cursor)
            seen = []
            with pytest.raises(ConnectionLost):
                for event in events:
                    seen.append(event)
                    if event["event"] == "run_suspended":
                        assert doomed.process is not None
                        os.kill(doomed.process.pid, signal.SIGKILL)
            assert [e["event"] for e in seen] == ["wait_opened", "run_suspended"]
            assert events.cursor == seen[-1]["cursor"] and events.outcome is None
    finally:
        doomed.close()
        sock.unlink(missing_ok=True)
