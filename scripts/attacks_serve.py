"""Adversarial attacks on `swamp --jsonl` and `swamp serve`: no input wedges them, and the acting
user is who the OS says it is.

    run(swamp, workdir) -> [{"attack", "held", "detail"}, ...]

Each attack works in a throw-away repository under `workdir` against the real `swamp` executable
at `swamp`, and is bounded in time (the whole module well under 60 s). Standard library only.

- jsonl_1gb_line: a 1 GB line (no newline) into `swamp --jsonl`, then a request: refused with
  invalid_request, the request answered, and swamp's peak RSS stays under 100 MiB.
- serve_socket_300mb_line: the same with 300 MB on one connection of `swamp serve --socket`.
- slow_reader: a client pipelines 300 requests and never reads; another client's serve.status is
  still answered (latency measured) and serve closes the stuck connection.
- pipelined_flood: a client pipelines 50,000 serve.status (reading its answers); another client's
  serve.status is answered within 2 s, not after the whole backlog.
- helpers_after_kill9: serve is killed with SIGKILL while its signal helpers wait for a run's
  claim; no helper outlives it (none goes on to settle the wait).
- logname_spoof: LOGNAME/USER name someone else; the run and the signal still record the OS
  account of the real user ID.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
RSS_BOUND_MIB = 100
SCRUBBED = ("SWAMP_REPO_DIR", "SWAMP_NOW", "SWAMP_ACTOR", "SWAMP_DEBUG", "SWAMP_MAX_CONCURRENT_STEPS")


def run(swamp: str, workdir: Path) -> list[dict[str, Any]]:
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    attacks: list[tuple[str, Callable[[str, Path], tuple[bool, str]]]] = [
        ("jsonl_1gb_line", _jsonl_1gb_line),
        ("serve_socket_300mb_line", _serve_socket_300mb_line),
        ("slow_reader", _slow_reader),
        ("pipelined_flood", _pipelined_flood),
        ("helpers_after_kill9", _helpers_after_kill9),
        ("logname_spoof", _logname_spoof),
    ]
    results = []
    for name, attack in attacks:
        try:
            held, detail = attack(swamp, workdir / name)
        except Exception as exc:  # an attack that cannot even run is reported, not raised
            held, detail = False, f"attack failed to run: {type(exc).__name__}: {exc}"
        results.append({"attack": name, "held": held, "detail": detail})
    return results


# -- helpers -------------------------------------------------------------------------------------


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(extra or {})
    return env


def _repo(swamp: str, root: Path) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    subprocess.run([swamp, "repo", "init", "."], cwd=root, env=_env(), check=True, capture_output=True)
    return root


def _wait_workflow(root: Path, name: str = "gate") -> None:
    (root / "workflows" / f"workflow-{name}.yaml").write_text(
        f"id: {uuid.uuid4()}\nname: {name}\njobs:\n  - name: main\n    steps:\n"
        "      - name: review\n        task: {type: wait_for_signal, timeout: 600}\n",
        encoding="utf-8",
    )


def _cli_json(swamp: str, root: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(
        [swamp, *args, "--json"], cwd=root, env=_env(env), capture_output=True, text=True, timeout=30
    )
    return json.loads(done.stdout)


def _vm_hwm_mib(pid: int) -> float:
    for row in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1]) / 1024
    return float("nan")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class _Serve:
    """`swamp serve --socket` over a repository, its socket in a private directory."""

    def __init__(self, swamp: str, root: Path, *flags: str, env: dict[str, str] | None = None):
        self.sockdir = Path(tempfile.mkdtemp(prefix="swatk-", dir="/tmp"))
        self.socket = self.sockdir / "serve.sock"
        self.log = root / "serve.log"
        self.proc = subprocess.Popen(
            [swamp, "serve", "--socket", str(self.socket), "--log-file", str(self.log), *flags],
            cwd=root,
            env=_env(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 15
        while not self._listening():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("serve did not start listening")
            time.sleep(0.05)

    def _listening(self) -> bool:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(self.socket))
        except OSError:
            return False
        finally:
            probe.close()
        return True

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(self.socket))
        if os.stat(self.socket).st_uid not in (os.getuid(), 0):  # not our serve's: send it nothing
            sock.close()
            raise PermissionError(f"{self.socket} belongs to another user")
        return sock

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        shutil.rmtree(self.sockdir, ignore_errors=True)


class _Reader:
    """Collects the frames of one connection in the background."""

    def __init__(self, sock: socket.socket):
        self.frames: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(sock,), daemon=True)
        self.thread.start()

    def _read(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError, ValueError), sock.makefile("r", encoding="utf-8") as lines:
            for line in lines:
                with self.lock:
                    self.frames.append(json.loads(line))

    def done(self, ident: str, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                mine = [f for f in self.frames if f.get("id") == ident]
            if any(f["type"] == "done" for f in mine):
                return next(f for f in mine if f["type"] != "done")
            time.sleep(0.002)
        return None


# -- the attacks ---------------------------------------------------------------------------------


def _jsonl_1gb_line(swamp: str, root: Path) -> tuple[bool, str]:
    root = _repo(swamp, root)
    proc = subprocess.Popen(
        [swamp, "--jsonl"], cwd=root, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    out: list[bytes] = []
    stdout = proc.stdout
    reader = threading.Thread(target=lambda: out.append(stdout.read()), daemon=True)
    reader.start()
    block = b"x" * MiB
    started = time.monotonic()
    try:
        for _ in range(1024):
            proc.stdin.write(block)
        proc.stdin.write(b'\n{"type": "workflow.list", "id": "after"}\n')
        proc.stdin.close()
    except BrokenPipeError:
        pass
    _, _status, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    seconds = time.monotonic() - started
    reader.join(timeout=10)
    frames = [json.loads(line) for line in (out[0] if out else b"").splitlines()]
    refused = any(f["type"] == "error" and f["error"]["code"] == "invalid_request" for f in frames)
    answered = any(f.get("id") == "after" and f["type"] == "workflow.list" for f in frames)
    peak = usage.ru_maxrss / 1024
    held = refused and answered and peak < RSS_BOUND_MIB
    return held, f"peak RSS {peak:.0f} MiB, {seconds:.1f} s; refused={refused} next answered={answered}"


def _serve_socket_300mb_line(swamp: str, root: Path) -> tuple[bool, str]:
    root = _repo(swamp, root)
    server = _Serve(swamp, root)
    try:
        conn = server.connect()
        frames = _Reader(conn)
        block = b"y" * MiB
        started = time.monotonic()
        try:
            for _ in range(300):
                conn.sendall(block)
            conn.sendall(b'\n{"type": "serve.status", "id": "after"}\n')
        except OSError as exc:
            return False, f"serve closed the connection mid-line: {exc}"
        answer = frames.done("after", 20)
        seconds = time.monotonic() - started
        peak = _vm_hwm_mib(server.proc.pid)
        with frames.lock:
            refused = any(
                f["type"] == "error" and f["error"]["code"] == "invalid_request" for f in frames.frames
            )
        held = refused and answer is not None and peak < RSS_BOUND_MIB
        answered = answer is not None
        return (
            held,
            f"serve peak RSS {peak:.0f} MiB, {seconds:.1f} s; refused={refused} next answered={answered}",
        )
    finally:
        server.stop()


def _slow_reader(swamp: str, root: Path) -> tuple[bool, str]:
    root = _repo(swamp, root)
    (root / "workflows" / "workflow-big.yaml").write_text(
        f"id: {uuid.uuid4()}\nname: big\ndescription: {'d' * 100_000}\njobs:\n  - name: main\n    steps:\n"
        "      - name: a\n        task: {type: wait_for_signal, timeout: 60}\n",
        encoding="utf-8",
    )
    server = _Serve(swamp, root)
    try:
        stuck = server.connect()
        big = [{"type": "workflow.get", "id": f"g{i}", "payload": {"workflow": "big"}} for i in range(40)]
        small = [{"type": "serve.status", "id": f"s{i}"} for i in range(260)]
        stuck.sendall("".join(json.dumps(f) + "\n" for f in big + small).encode())
        other = server.connect()
        frames = _Reader(other)
        latencies = []
        for i in range(10):
            sent = time.monotonic()
            other.sendall((json.dumps({"type": "serve.status", "id": f"mine{i}"}) + "\n").encode())
            if frames.done(f"mine{i}", 10) is None:
                return False, f"serve.status from another client unanswered after 10 s (sample {i})"
            latencies.append((time.monotonic() - sent) * 1000)
        deadline = time.monotonic() + 15  # reading before serve gives up on it would unstick it
        while "unread" not in server.log.read_text(encoding="utf-8") and time.monotonic() < deadline:
            time.sleep(0.05)
        stuck.settimeout(5)
        closed = False
        with contextlib.suppress(OSError):
            while stuck.recv(MiB):
                pass
            closed = True
        stuck.close()
        other.close()
        latencies.sort()
        median, worst = latencies[len(latencies) // 2], latencies[-1]
        figure = f"serve.status from another client: median {median:.1f} ms, max {worst:.1f} ms"
        return closed, f"{figure}; stuck client closed by serve={closed}"
    finally:
        server.stop()


def _pipelined_flood(swamp: str, root: Path) -> tuple[bool, str]:
    root = _repo(swamp, root)
    server = _Serve(swamp, root)
    try:
        flood = server.connect()

        def drain() -> None:
            with contextlib.suppress(OSError):
                while flood.recv(MiB):
                    pass

        threading.Thread(target=drain, daemon=True).start()
        lines = "".join(json.dumps({"type": "serve.status", "id": f"f{i}"}) + "\n" for i in range(50_000))

        def send() -> None:
            with contextlib.suppress(OSError):  # closed by this attack when it is done
                flood.sendall(lines.encode())

        threading.Thread(target=send, daemon=True).start()
        time.sleep(0.2)  # the flood is under way
        other = server.connect()
        frames = _Reader(other)
        sent = time.monotonic()
        other.sendall(b'{"type": "serve.status", "id": "mine"}\n')
        answer = frames.done("mine", 30)
        latency = time.monotonic() - sent
        in_flight = answer["payload"]["data"]["requestsInFlight"] if answer else None
        flood.close()
        other.close()
        held = answer is not None and latency < 2
        return (
            held,
            f"serve.status behind a 50,000-request flood: {latency * 1000:.0f} ms, {in_flight} in flight",
        )
    finally:
        server.stop()


def _helpers_after_kill9(swamp: str, root: Path) -> tuple[bool, str]:
    root = _repo(swamp, root)
    _wait_workflow(root)
    run_doc = _cli_json(swamp, root, "workflow", "run", "gate")
    run_id, wait_id = run_doc["id"], run_doc["waits"][0]["waitId"]
    lock_path = root / ".swamp" / "locks" / f"{run_id}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as lock:  # hold the run's claim, as a long command would
        fcntl.flock(lock, fcntl.LOCK_EX)
        server = _Serve(swamp, root, env={"SWAMP_SIGNAL_HELPERS": "2"})
        try:
            deadline = time.monotonic() + 15
            while len(_children(server.proc.pid)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            helpers = _children(server.proc.pid)
            time.sleep(1.0)  # let them finish importing (a probe would need a reply)
            conn = server.connect()
            body = {"waitId": wait_id, "payload": {"n": 1}, "claimTimeout": 60}
            lines = [
                json.dumps({"type": "workflow.signal", "id": f"c{i}", "payload": body}) for i in range(8)
            ]
            conn.sendall("".join(line + "\n" for line in lines).encode())
            waiting: list[int] = []
            deadline = time.monotonic() + 10
            while not waiting and time.monotonic() < deadline:
                for pid in helpers:
                    with contextlib.suppress(OSError):
                        fds = Path(f"/proc/{pid}/fd").iterdir()
                        if any(os.readlink(fd) == str(lock_path) for fd in fds):
                            waiting.append(pid)
                time.sleep(0.05)
            os.kill(server.proc.pid, signal.SIGKILL)
            server.proc.wait(timeout=10)
            killed_at = time.monotonic()
            while any(_alive(pid) for pid in helpers) and time.monotonic() - killed_at < 5:
                time.sleep(0.02)
            left = [pid for pid in helpers if _alive(pid)]
            gone_after = time.monotonic() - killed_at
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        finally:
            server.stop()
    detail = (
        f"{len(helpers)} helpers, {len(waiting)} waiting on the claim at the kill; "
        f"{len(left)} alive {gone_after:.2f} s after serve's SIGKILL"
    )
    return not left and bool(helpers), detail


def _logname_spoof(swamp: str, root: Path) -> tuple[bool, str]:
    root = _repo(swamp, root)
    _wait_workflow(root)
    spoof = {"LOGNAME": "ceo", "USER": "ceo", "USERNAME": "ceo"}
    run_doc = _cli_json(swamp, root, "workflow", "run", "gate", env=spoof)
    wait_id = run_doc["waits"][0]["waitId"]
    signalled = _cli_json(swamp, root, "workflow", "signal", wait_id, "--payload", "1", env=spoof)
    try:
        account = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        account = str(os.getuid())
    started, sent = run_doc.get("initiatedBy"), signalled.get("signal", {}).get("submittedBy")
    held = started == account and sent == account
    return held, f"LOGNAME=ceo: initiatedBy {started!r}, submittedBy {sent!r} (account {account!r})"


if __name__ == "__main__":
    import sys

    target = sys.argv[1] if len(sys.argv) > 1 else shutil.which("swamp") or "swamp"
    with tempfile.TemporaryDirectory(prefix="swamp-attacks-") as where:
        began = time.monotonic()
        for result in run(target, Path(where)):
            print(json.dumps(result))
        print(json.dumps({"seconds": round(time.monotonic() - began, 1)}))
