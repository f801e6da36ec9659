"""Slow clients (GATEWAY-095..098, GATEWAY-090): the header bound closes a connection whose
request line and headers do not arrive in time, on a new connection and on a kept-alive one, and
leaves a request whose headers arrived to the body's own bound.

The gateway's app and protocol run in-process on a loopback port with bounds of a fraction of a
second (the real ones are 10 seconds), spoken to with a raw socket: half a request line is what
no HTTP client library sends. Nothing here measures time; each test waits for an event (the
connection closed, an answer) with a generous safety timeout.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

SAFETY = 10.0  # seconds a socket read may wait before the test fails (never reached when it works)


@contextmanager
def serving(tmp_path: Path, header_seconds: float) -> Iterator[int]:
    import uvicorn

    from swamp.gateway.app import build_app
    from swamp.gateway.connections import protocol_class
    from swamp.gateway.inward import Gateway
    from swamp.gateway.server import AccessLog, bind, headers_too_slow

    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(
        AccessLog(build_app(Gateway(repo_dir=str(tmp_path)))),
        http=protocol_class(header_seconds, closed=headers_too_slow),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + SAFETY
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "the in-process gateway did not start"
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(SAFETY)


def connect(port: int) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port), timeout=SAFETY)
    client.settimeout(SAFETY)
    return client


def closed_without_answer(client: socket.socket) -> bool:
    try:
        return client.recv(4096) == b""
    except ConnectionResetError:
        return True


def read_answer(client: socket.socket) -> bytes:
    """One whole answer (headers and a Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        assert chunk, f"closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    fields = [line.split(b":", 1) for line in head.split(b"\r\n")[1:]]
    length = next(int(value) for name, value in fields if name.lower() == b"content-length")
    while len(body) < length:
        body += client.recv(4096)
    return head + b"\r\n\r\n" + body


def test_half_a_request_line_is_closed_once_the_header_bound_passes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
):
    with serving(tmp_path, header_seconds=0.3) as port, connect(port) as client:
        client.sendall(b"GET /heal")
        assert closed_without_answer(client)
    logged = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")]
    assert {"client": "127.0.0.1", "closed": "headers_timeout"}.items() <= logged[-1].items()


def test_a_kept_alive_connection_has_the_same_bound_for_its_next_request(tmp_path: Path):
    with serving(tmp_path, header_seconds=0.3) as port, connect(port) as client:
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(client).startswith(b"HTTP/1.1 200 ")
        client.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        assert closed_without_answer(client)


def test_headers_in_time_leave_a_slow_body_to_the_body_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from swamp.gateway import limits

    monkeypatch.setattr(limits, "BODY_SECONDS", 1.0)
    with serving(tmp_path, header_seconds=0.2) as port, connect(port) as client:
        client.sendall(
            b"POST /v1/waits/wait_aaaaaaaaaaaaaaaaaaaaaaaaaa/signal HTTP/1.1\r\nHost: x\r\n"
            b'Authorization: Bearer swp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nContent-Length: 100\r\n\r\n{"ver'
        )
        answer = read_answer(client)
    assert answer.startswith(b"HTTP/1.1 400 "), answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "invalid_request"


def test_the_gateway_serves_with_the_header_bound(monkeypatch: pytest.MonkeyPatch):
    """`swamp gateway` builds its server with this protocol and the 10-second bound."""
    from swamp.gateway import connections

    assert connections.HEADER_SECONDS == 10.0
    made: list[float] = []
    real = connections.protocol_class

    def recording(
        seconds: float = connections.HEADER_SECONDS, closed: Any = None, refused: Any = None
    ) -> type:
        made.append(seconds)
        return real(seconds, closed, refused)

    monkeypatch.setattr(connections, "protocol_class", recording)
    import uvicorn

    seen: dict[str, object] = {}

    class Stop(Exception):
        pass

    def fake_run(self: uvicorn.Server, sockets: object = None) -> None:
        seen["http"] = self.config.http
        raise Stop

    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    from swamp.gateway.server import Options, serve

    monkeypatch.setattr("swamp.gateway.server._repository", lambda repo_dir: None)
    with pytest.raises(Stop):
        serve(Options(listen="127.0.0.1:0"))
    assert made == [10.0]
    assert getattr(seen["http"], "__name__", "") == "HeaderTimeoutProtocol"


def test_a_bucket_admits_its_burst_then_one_per_refill() -> None:
    from swamp.gateway.limits import Limiter

    bucket = Limiter(rate=1.0, burst=2.0)
    assert [bucket.take("a", now=0.0) for _ in range(2)] == [0.0, 0.0]
    assert bucket.take("a", now=0.0) == 1.0  # the Retry-After: a whole token away
    assert bucket.take("b", now=0.0) == 0.0  # another key has its own bucket
    assert bucket.take("a", now=0.5) == 0.5
    assert bucket.take("a", now=1.0) == 0.0
    assert bucket.take("a", now=100.0) == 0.0 and bucket.take("a", now=100.0) == 0.0  # never past the burst
    assert bucket.take("a", now=100.0) == 1.0
