"""Shared helpers for tests/test_serve_*.py (no tests here): a real `swamp serve` process on a Unix
socket, socket clients that collect frames in the background, and reading run records back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env

from swamp.client.client import peer_uid

T0 = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T01:00:00Z"


def wait_until(what: str, check: Callable[[], Any], timeout: float = 10.0, every: float = 0.05) -> Any:
    """Poll `check` until it returns something truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


class Client:
    """One connection to serve's socket; a thread collects every frame it receives."""

    def __init__(self, path: str | Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        owner = peer_uid(self.sock)  # who listens, from the kernel; not the path's owner (SERVE-046)
        if owner not in (os.getuid(), 0):  # a client sends nothing to a socket someone else put there
            self.sock.close()
            raise PermissionError(f"{path} is served by uid {owner}, not by this user")
        self.frames: list[dict[str, Any]] = []
        self.lines: list[str] = []
        self.closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with self.sock.makefile("r", encoding="utf-8") as reader:
            try:
                for line in reader:
                    with self._lock:
                        self.lines.append(line)
                        self.frames.append(json.loads(line))
            except (OSError, ValueError):
                pass
        self.closed = True

    def send(self, type_: str, ident: str, payload: dict[str, Any] | None = None) -> None:
        frame: dict[str, Any] = {"type": type_, "id": ident}
        if payload is not None:
            frame["payload"] = payload
        self.sock.sendall((json.dumps(frame) + "\n").encode())

    def of(self, ident: str) -> list[dict[str, Any]]:
        with self._lock:
            return [f for f in self.frames if f.get("id") == ident]

    def event(self, ident: str, kind: str, timeout: float = 10.0, **fields: Any) -> dict[str, Any]:
        """Wait for an event frame of request `ident` whose event is `kind` (and has `fields`)."""

        def find() -> dict[str, Any] | None:
            for f in self.of(ident):
                event = f.get("event") or {}
                wanted = f["type"] == "event" and event.get("event") == kind
                if wanted and all(event.get(k) == v for k, v in fields.items()):
                    return event
            return None

        return wait_until(f"event {kind} of {ident}", find, timeout)

    def reply(self, ident: str, timeout: float = 10.0) -> dict[str, Any]:
        """Wait for request `ident`'s done; return its result or error frame."""
        wait_until(f"done of {ident}", lambda: any(f["type"] == "done" for f in self.of(ident)), timeout)
        closing = [f for f in self.of(ident) if f["type"] not in ("event", "done")]
        assert len(closing) == 1, self.of(ident)
        return closing[0]

    def request(
        self, type_: str, ident: str, payload: dict[str, Any] | None = None, timeout: float = 10.0
    ) -> Any:
        self.send(type_, ident, payload)
        return self.reply(ident, timeout)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def data(frame: dict[str, Any]) -> dict[str, Any]:
    assert frame["type"] not in ("error", "done", "event"), frame
    return frame["payload"]["data"]


def error_code(frame: dict[str, Any]) -> str:
    assert frame["type"] == "error", frame
    return frame["error"]["code"]


class Serve:
    """`swamp serve --socket` in a real process, with its stdout (frames) and stderr (logs) captured."""

    def __init__(self, repo: Repo, sock: Path, *flags: str, env: dict[str, str] | None = None):
        self.repo = repo
        self.socket = sock
        self.argv = [str(SWAMP), "serve", "--socket", str(sock), *flags]
        self.proc = subprocess.Popen(
            self.argv,
            cwd=repo.root,
            env=clean_env(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.clients: list[Client] = []
        wait_until("the socket", self._listening, timeout=15)

    def _listening(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"serve exited {self.proc.returncode}: {self.proc.stderr.read().decode()}")
        if not self.socket.exists():
            return False
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(self.socket))
        except OSError:
            return False
        finally:
            probe.close()
        return True

    def client(self) -> Client:
        client = Client(self.socket)
        self.clients.append(client)
        return client

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = 20) -> tuple[int, str]:
        _, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, err.decode("utf-8", "replace")

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(name="sockdir")
def sockdir_fixture() -> Iterator[Path]:
    """A short directory for Unix sockets (their paths are limited to about 100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="swsv-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(name="serve")
def serve_fixture(repo: Repo, sockdir: Path) -> Iterator[Callable[..., Serve]]:
    """`serve(*flags, env=None)` starts `swamp serve --socket` on the test's repo; stopped at the end."""
    started: list[Serve] = []

    def start(*flags: str, env: dict[str, str] | None = None, name: str = "serve.sock") -> Serve:
        server = Serve(repo, sockdir / name, *flags, env=env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def serve_stdin(
    repo: Repo,
    frames: list[dict[str, Any]],
    *flags: str,
    env: dict[str, str] | None = None,
    timeout: float = 30,
) -> tuple[int, list[dict[str, Any]], str]:
    """`swamp serve` on stdin/stdout: send the frames, then EOF; returns (exit code, frames, stderr)."""
    done = subprocess.run(
        [str(SWAMP), "serve", *flags],
        cwd=repo.root,
        env=clean_env(env),
        input="".join(json.dumps(f) + "\n" for f in frames),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def record(repo: Repo, run_id: str) -> dict[str, Any]:
    """The run's record as stored on disk."""
    found = list((repo.root / ".swamp" / "workflow-runs").glob(f"*/{run_id}.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text(encoding="utf-8"))


def steps(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for j in doc["jobs"] for s in j["steps"]}


def gate(name: str, **step: Any) -> dict[str, Any]:
    return {"name": name, "task": {"type": "manual_approval", "prompt": f"{name}?"}, **step}


def wait(name: str, timeout: float = 600, **step: Any) -> dict[str, Any]:
    return {"name": name, "task": {"type": "wait_for_signal", "timeout": timeout}, **step}


def cli_json(repo: Repo, *args: str, env: dict[str, str] | None = None) -> tuple[int, Any]:
    result = repo.swamp(*args, "--json", env=env)
    return result.code, result.json
