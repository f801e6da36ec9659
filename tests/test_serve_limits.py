"""No limit of swamp serve is left to the operating system (issue 26, item 5): a subscription works
when serve's descriptors are numbered past 1,024 (select() cannot wait on those; SERVE-044), and a
client past --max-connections is refused with a frame, not left to exhaust descriptors (SERVE-045).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env, job
from test_serve_support import (  # noqa: F401 - serve_fixture, sockdir_fixture: fixtures
    Client,
    Serve,
    data,
    serve_fixture,
    sockdir_fixture,
    wait,
    wait_until,
)

pytestmark = pytest.mark.cli

HIGH = 1100  # every descriptor below this is taken before swamp starts

# Sets the soft RLIMIT_NOFILE to {limit}, fills every free descriptor below {high} with an
# inheritable /dev/null, then becomes the command in argv[1:]: what it opens is numbered {high} or more.
SETUP = """
import os, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = {limit} if hard == resource.RLIM_INFINITY else min({limit}, hard)
resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
base = os.open(os.devnull, os.O_RDONLY)
for fd in range(3, {high}):
    try:
        os.fstat(fd)
    except OSError:
        os.dup2(base, fd, inheritable=True)
os.execv(sys.argv[1], sys.argv[1:])
"""
FILL = SETUP.format(limit=4096, high=HIGH)


def _can_fill() -> bool:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return hard == resource.RLIM_INFINITY or hard > HIGH + 64


needs_descriptors = pytest.mark.skipif(
    not _can_fill(), reason=f"RLIMIT_NOFILE's hard limit is below {HIGH + 64}"
)


def serve_with_high_descriptors(
    repo: Repo, *flags: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", FILL, str(SWAMP), "serve", *flags],
        cwd=repo.root,
        env=clean_env(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        close_fds=True,
    )


def answer(proc: subprocess.Popen[str], frame: dict[str, Any]) -> list[dict[str, Any]]:
    """Send one request on serve's stdin; its frames up to its done (stdin stays open)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(frame) + "\n")
    proc.stdin.flush()
    frames = []
    for line in proc.stdout:
        frames.append(json.loads(line))
        if frames[-1]["type"] == "done" and frames[-1]["id"] == frame["id"]:
            return frames
    raise AssertionError(f"serve ended before answering {frame['id']}: {frames}")


def end(proc: subprocess.Popen[str]) -> str:
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    try:
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.stderr.read()


@needs_descriptors
def test_a_subscription_waits_on_descriptors_past_1024(repo: Repo) -> None:
    """select() refuses a descriptor >= 1024 (`filedescriptor out of range`): the subscription
    failed at once with internal_error. poll() has no such limit: it waits out its timeout, and
    is woken by an event another process publishes."""
    repo.write_workflow("held", [job("main", wait("w"))])
    proc = serve_with_high_descriptors(repo)
    try:
        frames = answer(proc, {"type": "events.subscribe", "id": "s1", "payload": {"timeout": 0.3}})
        results = [f for f in frames if f["type"] != "done"]
        assert [f["type"] for f in results] == ["events.subscribe"], results
        assert data(results[0])["outcome"] == "timeout"
        cursor = data(results[0])["cursor"]
        assert proc.stdin is not None and proc.stdout is not None
        payload = {"after": cursor, "kinds": ["wait_opened"]}
        subscribe = {"type": "events.subscribe", "id": "s2", "payload": payload}
        proc.stdin.write(json.dumps(subscribe) + "\n")
        proc.stdin.flush()
        assert repo.swamp("workflow", "run", "held", "--json").json["status"] == "suspended"
        event = json.loads(proc.stdout.readline())
        assert event["type"] == "event" and event["event"]["event"] == "wait_opened", event
        frames = answer(proc, {"type": "cancel", "id": "c", "payload": {"id": "s2"}})
        assert [f["type"] for f in frames] == ["cancel", "done"], frames
    finally:
        err = end(proc)
    assert "Traceback" not in err and "out of range" not in err, err


@needs_descriptors
def test_watch_waits_on_descriptors_past_1024(repo: Repo) -> None:
    """`workflow.watch` waits on the same notifier: a suspended run watched for a moment."""
    repo.write_workflow("held", [job("main", wait("w"))])
    run = repo.swamp("workflow", "run", "held", "--json").json
    assert run["status"] == "suspended"
    proc = serve_with_high_descriptors(repo)
    try:
        watch = {"type": "workflow.watch", "id": "w", "payload": {"run": run["id"], "timeout": 0.3}}
        frames = answer(proc, watch)
    finally:
        err = end(proc)
    results = [f for f in frames if f["type"] not in ("done", "event")]
    assert len(results) == 1 and results[0]["type"] == "workflow.watch", results
    assert data(results[0])["watch"]["outcome"] == "timeout"
    assert "Traceback" not in err, err


PG = os.environ.get("SWAMP_TEST_PG", "")


@needs_descriptors
@pytest.mark.skipif(not PG.startswith(("postgresql://", "postgres://")), reason="SWAMP_TEST_PG is not set")
def test_a_subscription_on_postgresql_sleeps_on_descriptors_past_1024(tmp_path: Path) -> None:
    """On PostgreSQL select()'s ValueError was swallowed and the wait looped at once: a 4 s
    subscription spun a core for its whole length. Waiting with poll() costs nearly nothing."""
    import uuid

    from helpers import make_repo

    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = f"{PG}{'&' if '?' in PG else '?'}options=-csearch_path%3D{schema}"
    repo = make_repo(tmp_path / "repo")
    env = {"SWAMP_STORE_URL": url}
    assert repo.swamp("store", "migrate", env=env).code == 0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(
        [sys.executable, "-c", FILL, str(SWAMP), "events", "--timeout", "4", "--json"],
        cwd=repo.root,
        env=clean_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # only this child was reaped in between
    assert proc.returncode == 0, err
    assert json.loads(out)["outcome"] == "timeout", out
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # starting swamp costs well under a second of CPU; spinning through the 4 s costs them all
    assert cpu < 1.2, f"{cpu:.2f} s of CPU for a subscription that waited 4 s"


def refusal(sock: socket.socket) -> list[dict[str, Any]]:
    """Every frame a connection receives until serve closes it."""
    sock.settimeout(20)
    with sock.makefile("r", encoding="utf-8") as reader:
        return [json.loads(line) for line in reader]


def admitted(path: Path) -> bool:
    """Whether a new connection is served (and not refused); it is closed again before this returns."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.connect(str(path))
    with contextlib.suppress(BrokenPipeError):  # refused and closed before it could send
        probe.sendall(b'{"type":"serve.status","id":"p"}\n')
        probe.shutdown(socket.SHUT_WR)
    return [f["type"] for f in refusal(probe)] == ["serve.status", "done"]


def served(path: Path) -> Client | None:
    """A new connection that serve answers (kept open), or None when it was refused."""
    client = Client(path)
    client.send("serve.status", "p")
    wait_until("an answer or the end", lambda: client.of("p") or client.closed, timeout=20)
    if client.of("p"):
        return client
    client.close()
    return None


def test_a_connection_past_max_connections_is_refused_with_a_frame_and_closed(serve) -> None:  # type: ignore[no-untyped-def]
    server: Serve = serve("--max-connections", "2")
    held: list[Client] = []

    def two_served() -> bool:  # the fixture's own probe may hold a place for a moment
        client = served(server.socket)
        if client is not None:
            held.append(client)
        return len(held) == 2

    wait_until("two served connections", two_served)
    a, b = held
    extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    extra.connect(str(server.socket))
    frames = refusal(extra)
    assert [f["type"] for f in frames] == ["error", "done"], frames
    error = frames[0]
    assert error["id"] is None and error["error"]["code"] == "too_many_requests"
    assert error["error"]["details"] == {"maxConnections": 2}
    assert "--max-connections" in error["error"]["message"]
    # the connections it has are served as before
    assert data(a.request("serve.status", "again"))["shuttingDown"] is False
    # once one is closed (serve has closed it too), a new one is accepted
    b.sock.shutdown(socket.SHUT_WR)
    wait_until("serve to close b", lambda: b.closed)
    assert admitted(server.socket)
    for client in held:
        client.close()
    server.signal(signal.SIGTERM)
    code, err = server.wait()
    assert code == 0 and "Traceback" not in err, err
    assert "refusing new ones until one closes" in err


def test_max_connections_is_256_by_default(serve) -> None:  # type: ignore[no-untyped-def]
    server: Serve = serve()
    held = []
    try:
        for _ in range(256):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(server.socket))
            held.append(sock)
        held[-1].sendall(b'{"type":"serve.status","id":"last"}\n')
        with held[-1].makefile("r", encoding="utf-8") as reader:
            assert json.loads(reader.readline())["type"] == "serve.status"
        extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        extra.connect(str(server.socket))
        frames = refusal(extra)
        assert frames[0]["error"]["details"] == {"maxConnections": 256}, frames
    finally:
        for sock in held:
            sock.close()


@needs_descriptors
def test_serve_out_of_descriptors_keeps_accepting_once_they_free_up(repo: Repo, sockdir: Path) -> None:
    """With fewer descriptors than --max-connections, accept() fails with EMFILE: the accepting
    thread used to end there, and serve never answered another connection."""
    path, log = sockdir / "serve.sock", repo.root / "serve.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", SETUP.format(limit=96, high=3), str(SWAMP), "serve", "--socket", str(path)]
        + ["--max-connections", "500", "--log-file", str(log)],
        cwd=repo.root,
        env=clean_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until("the socket", path.exists, timeout=15)
        held: list[socket.socket] = []

        def starved() -> bool:  # connect until serve has no descriptor left to accept with
            if "ulimit -n" in log.read_text():
                return True
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.connect(str(path))
            except BlockingIOError:  # the listen queue is full: serve is behind, or starved
                sock.close()
                return False
            held.append(sock)
            return False

        wait_until("serve to run out of descriptors", starved, timeout=30, every=0.01)
        for sock in held:
            sock.close()
        wait_until("serve to answer a new connection", lambda: admitted(path), timeout=30, every=0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert "Traceback" not in log.read_text()
