"""swamp.client against servers that are not swamp serve (issue 26, items 7 and 8): a socket whose
file says root but whose listener is another account (SERVE-046), a line that never ends
(PROTO-033), and events that nobody reads (PROTO-034). Each fake serve is a socket server in a
thread of the test (or, for another account, a forked child), so what it sends is exact.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swamp.client import Client, ConnectionLost, SwampError
from swamp.client.wire import MAX_FRAME_BYTES, MAX_UNREAD_EVENT_BYTES, Connection


@pytest.fixture(name="sockdir")
def sockdir_fixture() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="swcl-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class FakeServe:
    """Listens at `path`; for each request line it reads, calls `answer(request, send)`."""

    def __init__(self, path: Path, answer: Callable[[dict[str, Any], Callable[[bytes], None]], None]):
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(4)
        self.answer = answer
        self.stop = threading.Event()
        self.failed: list[BaseException] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        try:
            with conn, conn.makefile("rb") as lines:
                for line in lines:
                    self.answer(json.loads(line), conn.sendall)
                self.stop.wait(30)
        except OSError:
            pass  # the client closed the connection
        except BaseException as exc:  # pragma: no cover - shown by the test
            self.failed.append(exc)

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        self.thread.join(10)


def frame(**fields: Any) -> bytes:
    return (json.dumps(fields, separators=(",", ":")) + "\n").encode()


# -- the line limit (PROTO-033) ----------------------------------------------------------------------


def test_a_line_that_never_ends_ends_the_connection_instead_of_filling_memory(sockdir: Path) -> None:
    """The attack of issue 26: a fake serve sending 1.5 GB without a newline took the client to
    1.24 GiB. Now it reads at most MAX_FRAME_BYTES of a line, then gives up on the connection."""
    sent = []

    def endless(request: dict[str, Any], send: Callable[[bytes], None]) -> None:
        chunk = b"x" * (1 << 20)
        for _ in range(MAX_FRAME_BYTES // len(chunk) + 16):  # 16 MiB past the limit, no newline
            send(chunk)
            sent.append(len(chunk))

    serve = FakeServe(sockdir / "fake.sock", endless)
    try:
        with Client.connect(sockdir / "fake.sock") as client:
            call = client.start("serve.status")
            with pytest.raises(ConnectionLost) as lost:
                call.result(timeout=20)
            assert f"longer than {MAX_FRAME_BYTES} bytes" in lost.value.message
            assert lost.value.details == {"maxFrameBytes": MAX_FRAME_BYTES}
            assert not client.connected
            with pytest.raises(ConnectionLost):
                client.serve_status()
    finally:
        serve.close()
    assert not serve.failed


def test_a_line_of_exactly_the_limit_is_a_frame_and_one_byte_more_is_not() -> None:
    limit = 200
    result = frame(type="serve.status", id="c1", payload={"data": {}})
    padded = result[:-2] + b" " * (limit - len(result) + 1) + b"}\n"  # `limit` bytes and a newline
    assert len(padded) == limit + 1

    def answer(stream: bytes) -> Any:
        """The result of one request whose answer on the wire is `stream`."""
        read_end, write_end = os.pipe()
        with os.fdopen(read_end, "rb") as reader:
            connection = Connection(reader, lambda line: None, lambda: ("ended", {}), max_frame=limit)
            call = connection.start("serve.status")  # ids start at c1
            os.write(write_end, stream)
            os.close(write_end)
            connection.join(5)
            return call.result(timeout=5)

    assert answer(padded + frame(type="done", id="c1")) == {}
    with pytest.raises(ConnectionLost, match=f"longer than {limit} bytes"):
        answer(padded[:-2] + b" }\n" + frame(type="done", id="c1"))


# -- events nobody reads (PROTO-034) ---------------------------------------------------------------------


def bulky_events(count: int, size: int) -> Callable[[dict[str, Any], Callable[[bytes], None]], None]:
    def answer(request: dict[str, Any], send: Callable[[bytes], None]) -> None:
        ident = request["id"]
        note = "n" * size
        for number in range(1, count + 1):
            event = {"event": "run_finished", "runId": "r", "note": note, "cursor": f"0-{number:012d}"}
            send(frame(type="event", id=ident, event=event))
        end = {"cursor": f"0-{count:012d}", "outcome": "timeout"}
        send(frame(type=request["type"], id=ident, payload={"data": end}))
        send(frame(type="done", id=ident))

    return answer


def test_events_nobody_reads_are_bounded_and_the_oldest_dropped_for_a_marker(sockdir: Path) -> None:
    count, size = 3000, 8 * 1024  # ~24 MiB of events: three times what a call keeps unread
    serve = FakeServe(sockdir / "fake.sock", bulky_events(count, size))
    try:
        with Client.connect(sockdir / "fake.sock") as client:
            call = client.start("events.subscribe")
            assert call.result(timeout=60)["outcome"] == "timeout"  # the answer is not held up
            events = list(call.events())
    finally:
        serve.close()
    marker, kept = events[0], events[1:]
    assert marker == {"event": "events_dropped", "dropped": call.dropped}
    assert call.dropped + len(kept) == count
    assert len(kept) * size <= MAX_UNREAD_EVENT_BYTES
    numbers = [int(e["cursor"].split("-")[1]) for e in kept]
    assert numbers == list(range(call.dropped + 1, count + 1))  # the newest are kept, in order


def test_a_subscription_says_where_to_get_dropped_events_back(sockdir: Path) -> None:
    count, size = 3000, 8 * 1024
    serve = FakeServe(sockdir / "fake.sock", bulky_events(count, size))
    try:
        with Client.connect(sockdir / "fake.sock") as client:
            subscription = client.subscribe(after="0-000000000000")
            subscription.call.result(timeout=60)  # everything has arrived, nothing was read
            events = list(subscription)
    finally:
        serve.close()
    marker = events[0]
    assert marker["event"] == "events_dropped" and marker["after"] == "0-000000000000"
    assert subscription.cursor == f"0-{count:012d}" and subscription.outcome == "timeout"


def test_a_request_without_on_event_keeps_no_events(sockdir: Path) -> None:
    serve = FakeServe(sockdir / "fake.sock", bulky_events(50, 100))
    try:
        with Client.connect(sockdir / "fake.sock") as client:
            assert client.request("events.subscribe")["outcome"] == "timeout"
            seen: list[dict[str, Any]] = []
            assert client.request("events.subscribe", on_event=seen.append)["outcome"] == "timeout"
    finally:
        serve.close()
    assert len(seen) == 50


# -- the peer, not the path (SERVE-046) --------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="acting as another user needs root")
def test_connect_refuses_a_listener_of_another_user_behind_a_socket_file_of_root(sockdir: Path) -> None:
    """The socket file is root's (the path check passed it); the process that listens on it is
    uid 65534's, as after a symlink flipped between the check and the connect. The client asks
    the kernel who is at the other end, and sends nothing."""
    path = sockdir / "flipped.sock"
    ready_r, ready_w = os.pipe()
    got_r, got_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: bound as root, listening as 65534; reports what it received
        code = 1
        try:
            os.close(ready_r)
            os.close(got_r)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))  # the file is root's
            os.setgid(65534)
            os.setuid(65534)
            listener.listen(1)  # the kernel records the listener's account here
            os.write(ready_w, b"r")
            conn, _ = listener.accept()
            conn.settimeout(20)
            received = b""
            with contextlib.suppress(OSError):
                while chunk := conn.recv(65536):
                    received += chunk
            os.write(got_w, str(len(received)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(ready_w)
    os.close(got_w)
    try:
        assert os.read(ready_r, 1) == b"r"
        assert path.stat().st_uid == 0
        with pytest.raises(SwampError) as refused:
            Client.connect(path)
        assert refused.value.code == "socket_not_owned"
        assert refused.value.details["owner"] == 65534
        with os.fdopen(got_r, "rb") as report:
            assert report.read() == b"0"  # not one byte reached the impostor
    finally:
        os.close(ready_r)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# -- a connection serve turns away (SERVE-045) ------------------------------------------------------------


def test_a_connection_past_max_connections_raises_serves_refusal(tmp_path: Path, sockdir: Path) -> None:
    from helpers import make_repo

    repo = make_repo(tmp_path / "repo")
    path = sockdir / "serve.sock"
    with Client.spawn(repo.root, args=["--socket", str(path), "--max-connections", "1"]) as serve:
        with Client.connect(path) as first:
            assert first.serve_status()["socket"] == str(path)
            with Client.connect(path) as second, pytest.raises(ConnectionLost) as lost:
                second.serve_status()
            assert "refused the connection: too_many_requests" in lost.value.message
            assert lost.value.details["refusal"]["details"] == {"maxConnections": 1}
            assert first.serve_status()["shuttingDown"] is False
        assert serve.serve_status()["shuttingDown"] is False
