"""No input wedges `swamp --jsonl` or `swamp serve`: a line far past the frame limit is refused
without being kept (bounded memory) and the stream goes on; a client that never reads its answers
is cut off instead of holding up every other client."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env, job, sh
from test_serve_support import (  # noqa: F401 - serve_fixture, sockdir_fixture: fixtures
    Client,
    data,
    serve_fixture,
    sockdir_fixture,
    wait_until,
)

pytestmark = [pytest.mark.cli, pytest.mark.skipif(sys.platform != "linux", reason="/proc")]

MiB = 1024 * 1024


def peak_rss_mib(pid: int) -> float:
    """The process's own high-water RSS since it exec'd (VmHWM). Not wait4's ru_maxrss: when
    subprocess starts a child with vfork, the child's maxrss starts at the PARENT's high-water mark
    (the kernel keeps the larger of the two at exec), so a test worker grown large by earlier tests
    would be charged to the child."""
    for row in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1]) / 1024
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


def test_a_200_mb_line_is_refused_in_bounded_memory_and_the_next_line_is_answered(repo: Repo) -> None:
    proc = subprocess.Popen(
        [str(SWAMP), "--jsonl"],
        cwd=repo.root,
        env=clean_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdin = proc.stdin

    def write() -> None:
        block = b"x" * MiB
        for _ in range(200):
            stdin.write(block)
        stdin.write(b'\n{"type": "workflow.list", "id": "after"}\n')
        stdin.flush()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    frames: list[dict[str, Any]] = []
    for line in proc.stdout:  # until the request after the long line is answered: all is read
        frames.append(json.loads(line))
        if frames[-1] == {"type": "done", "id": "after"}:
            break
    peak_mib = peak_rss_mib(proc.pid)  # still running: it waits for more input
    writer.join(timeout=30)
    stdin.close()
    assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()

    refused = [f for f in frames if f["type"] == "error"]
    assert len(refused) == 1 and refused[0]["id"] is None, frames
    assert refused[0]["error"]["code"] == "invalid_request"
    assert refused[0]["error"]["details"] == {"line": 1}
    assert [f["type"] for f in frames if f.get("id") == "after"] == ["workflow.list", "done"]
    assert peak_mib < 100, f"swamp --jsonl peaked at {peak_mib:.0f} MiB for a 200 MB line"


def test_a_150_mb_line_on_serves_socket_is_refused_in_bounded_memory_and_the_connection_goes_on(
    repo: Repo, serve: Any
) -> None:
    server = serve()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(server.socket))
    frames: list[dict[str, Any]] = []

    def read() -> None:
        with conn.makefile("r", encoding="utf-8") as lines:
            for line in lines:
                frames.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    conn.sendall(b'{"type": "serve.status", "id": "before"}\n')
    block = b"y" * MiB
    for _ in range(150):
        conn.sendall(block)
    conn.sendall(b'\n{"type": "serve.status", "id": "after"}\n')
    wait_until("the answer after the long line", lambda: any(f.get("id") == "after" for f in frames))
    refused = [f for f in frames if f["type"] == "error"]
    assert len(refused) == 1 and refused[0]["error"]["code"] == "invalid_request", frames
    assert refused[0]["error"]["details"] == {"line": 2}
    assert data(next(f for f in frames if f.get("id") == "after" and f["type"] == "serve.status"))
    peak = peak_rss_mib(server.proc.pid)
    assert peak < 100, f"swamp serve peaked at {peak:.0f} MiB for a 150 MB line"
    conn.close()
    other = Client(server.socket)
    assert other.request("serve.status", "s1")["type"] == "serve.status"
    other.close()


def test_a_client_that_never_reads_is_cut_off_and_holds_up_no_other_client(
    repo: Repo, serve: Any, tmp_path: Path
) -> None:
    repo.write_workflow("big", [job("main", sh("a", "echo a"))], description="d" * 100_000)
    log = tmp_path / "serve.log"
    server = serve("--log-file", str(log))
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.connect(str(server.socket))
    big = [{"type": "workflow.get", "id": f"g{i}", "payload": {"workflow": "big"}} for i in range(40)]
    small = [{"type": "serve.status", "id": f"s{i}"} for i in range(260)]
    stuck.sendall("".join(json.dumps(f) + "\n" for f in big + small).encode())

    other = Client(server.socket)
    assert other.request("serve.status", "mine", timeout=30)["type"] == "serve.status"
    wait_until("serve to say it cut the stuck client off", lambda: "unread" in log.read_text(), timeout=30)
    stuck.settimeout(30)
    while stuck.recv(1 << 20):  # what was sent before the cut, then EOF: serve closed it
        pass
    stuck.close()
    assert other.request("serve.status", "still", timeout=30)["type"] == "serve.status"
    other.close()


def test_a_long_payload_line_of_a_commands_jsonl_is_refused_by_its_number(repo: Repo) -> None:
    import io

    from swamp.protocol.jsonl import serve

    output = io.StringIO()
    source = io.BytesIO(b"x" * (2 * MiB) + b"\n{}\n")
    assert serve(source, output, repo_dir=str(repo.root), implied_type="workflow.list") == 0
    frames = [json.loads(line) for line in output.getvalue().splitlines()]
    refused = [f for f in frames if f["type"] == "error"]
    assert [(f["id"], f["error"]["code"], f["error"]["details"]) for f in refused] == [
        ("1", "invalid_request", {"line": 1})
    ]
    assert [f["type"] for f in frames if f["id"] == "2"] == ["workflow.list", "done"]


def test_a_connection_that_pipelines_thousands_of_requests_has_at_most_256_in_flight(
    repo: Repo, serve: Any
) -> None:
    """Its backlog is read as it is answered, not queued whole ahead of every other client's."""
    server = serve()
    flood = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    flood.connect(str(server.socket))
    received = bytearray()

    def drain() -> None:
        with contextlib.suppress(OSError):
            while chunk := flood.recv(MiB):
                received.extend(chunk)

    threading.Thread(target=drain, daemon=True).start()
    lines = "".join(json.dumps({"type": "serve.status", "id": f"f{i}"}) + "\n" for i in range(5_000))
    sender = threading.Thread(target=flood.sendall, args=(lines.encode(),), daemon=True)
    sender.start()
    other = Client(server.socket)
    seen = []
    for i in range(20):
        seen.append(data(other.request("serve.status", f"s{i}", timeout=60))["requestsInFlight"])
    sender.join(timeout=120)
    done = b'"type":"done"'
    wait_until("every flooded request answered", lambda: bytes(received).count(done) == 5_000, timeout=120)
    assert max(seen) <= 256, seen
    other.close()
    flood.close()
