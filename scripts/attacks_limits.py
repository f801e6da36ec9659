"""Attacks on issue 26's "no limit left to the operating system" and on what swamp.client trusts.

    run(swamp, workdir) -> [{"attack", "held", "detail"}, ...]

Against the real `swamp` executable (and swamp.client run by the Python beside it), each attack in
a throw-away repository under `workdir`, the whole module well under 60 s. Standard library only.

- subscribe_past_1024_descriptors: serve started with every descriptor below 1,100 taken; an
  events.subscribe with a timeout. Held: it ends with outcome timeout (select() failed it with
  internal_error: filedescriptor out of range).
- connection_flood: 1,200 connections to one serve whose descriptor limit is 1,024. Held: the
  first 256 (--max-connections' default) are served, every other one gets too_many_requests
  (id null) and is closed, a subscription on a served connection still works, serve.status is
  answered afterwards and serve's log has no traceback.
- client_endless_line: a fake serve sends 300 MB without a newline to swamp.client. Held: the call
  fails with connection_lost naming the frame limit and the client's peak RSS stays under 200 MiB.
- client_unread_events: a fake serve sends 40 MiB of events for a call nobody reads. Held: the
  result arrives, at most 8 MiB of events are kept, an events_dropped marker comes first, and the
  peak RSS stays under 200 MiB.
- client_peer_not_path (root only; otherwise reported held, skipped): a socket file of root's whose
  listener runs as uid 65534 (a symlink flipped between check and connect). Held: Client.connect
  refuses with socket_not_owned and the listener receives nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCRUBBED = ("SWAMP_REPO_DIR", "SWAMP_NOW", "SWAMP_ACTOR", "SWAMP_DEBUG", "SWAMP_MAX_CONCURRENT_STEPS")
RSS_BOUND_MIB = 200

# Sets the soft RLIMIT_NOFILE, fills every free descriptor below HIGH, then becomes argv[1:].
FILL = """
import os, resource, sys
limit, high = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
base = os.open(os.devnull, os.O_RDONLY)
for fd in range(3, high):
    try:
        os.fstat(fd)
    except OSError:
        os.dup2(base, fd, inheritable=True)
os.execv(sys.argv[3], sys.argv[3:])
"""


def run(swamp: str, workdir: Path) -> list[dict[str, Any]]:
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    attacks: list[tuple[str, Callable[[str, Path], tuple[bool, str]]]] = [
        ("subscribe_past_1024_descriptors", _subscribe_past_1024),
        ("connection_flood", _connection_flood),
        ("client_endless_line", _client_endless_line),
        ("client_unread_events", _client_unread_events),
        ("client_peer_not_path", _client_peer_not_path),
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


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in SCRUBBED}


def _repo(swamp: str, root: Path) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    subprocess.run([swamp, "repo", "init", "."], cwd=root, env=_env(), check=True, capture_output=True)
    return root


def _python_of(swamp: str) -> str:
    """The Python of the environment `swamp` is installed in (it has swamp.client)."""
    beside = Path(swamp).with_name("python")
    return str(beside) if beside.exists() else sys.executable


def _hard_nofile() -> float:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return float("inf") if hard == resource.RLIM_INFINITY else hard


def _one_frame(reader: Any) -> dict[str, Any]:
    line = reader.readline()
    return json.loads(line) if line else {}


# -- serve ------------------------------------------------------------------------------------------


def _subscribe_past_1024(swamp: str, root: Path) -> tuple[bool, str]:
    if _hard_nofile() < 1200:
        return True, "skipped: the hard descriptor limit is below 1,200"
    _repo(swamp, root)
    proc = subprocess.Popen(
        [sys.executable, "-c", FILL, "4096", "1100", swamp, "serve"],
        cwd=root,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    frames: list[dict[str, Any]] = []
    try:  # stdin stays open while it waits: its end would end the subscription (closed)
        proc.stdin.write('{"type":"events.subscribe","id":"s","payload":{"timeout":0.5}}\n')
        proc.stdin.flush()
        for line in proc.stdout:
            frames.append(json.loads(line))
            if frames[-1]["type"] == "done":
                break
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    answer = next((f for f in frames if f.get("id") == "s" and f["type"] != "done"), {})
    outcome = (answer.get("payload") or {}).get("data", {}).get("outcome")
    held = answer.get("type") == "events.subscribe" and outcome == "timeout"
    return held, f"answer {json.dumps(answer)[:160]}; traceback in stderr {'Traceback' in err}"


def _connection_flood(swamp: str, root: Path) -> tuple[bool, str]:
    if _hard_nofile() < 1300:
        return True, "skipped: the hard descriptor limit is below 1,300"
    _repo(swamp, root)
    sockdir = Path(tempfile.mkdtemp(prefix="swlim-", dir="/tmp"))
    path, log = sockdir / "serve.sock", root / "serve.log"
    wanted = 1200
    mine = resource.getrlimit(resource.RLIMIT_NOFILE)
    if mine[0] != resource.RLIM_INFINITY and mine[0] < wanted + 100:  # this process holds them all
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted + 100, int(_hard_nofile())), mine[1]))
    try:
        return _flood(swamp, root, path, log, wanted)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, mine)
        shutil.rmtree(sockdir, ignore_errors=True)


def _flood(swamp: str, root: Path, path: Path, log: Path, wanted: int) -> tuple[bool, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", FILL, "1024", "3", swamp, "serve", "--socket", str(path)]
        + ["--log-file", str(log)],
        cwd=root,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    held_open: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 15
        while not path.exists():
            if time.monotonic() > deadline:
                return False, "serve did not start listening"
            time.sleep(0.05)
        first = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        first.connect(str(path))
        held_open.append(first)
        first_reader = first.makefile("r", encoding="utf-8")
        first.sendall(b'{"type":"serve.status","id":"warm"}\n')
        _one_frame(first_reader)
        _one_frame(first_reader)
        refused = 0
        while len(held_open) < wanted:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.connect(str(path))
            except BlockingIOError:  # the listen queue is full: serve is behind
                sock.close()
                if time.monotonic() > deadline + 30:
                    return False, f"serve stopped accepting after {len(held_open)} connections"
                time.sleep(0.01)
                continue
            held_open.append(sock)
        waiting = set(held_open[1:])
        until = time.monotonic() + 20
        while len(waiting) > 255 and time.monotonic() < until:  # 255 besides `first` are served
            for sock in list(waiting):
                with contextlib.suppress(BlockingIOError):
                    data = sock.recv(4096)
                    waiting.discard(sock)
                    if b'"too_many_requests"' in data and b'"maxConnections":256' in data:
                        refused += 1
            time.sleep(0.02)
        first.sendall(b'{"type":"events.subscribe","id":"sub","payload":{"timeout":0.3}}\n')
        subscribed = _one_frame(first_reader)
        first.sendall(b'{"type":"serve.status","id":"after"}\n')
        frames = [_one_frame(first_reader) for _ in range(3)]
        kinds = {f.get("id"): f.get("type") for f in [subscribed, *frames] if f.get("type") != "done"}
        alive = proc.poll() is None
    finally:
        for sock in held_open:
            sock.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    expected_refused = wanted - 256
    held = (
        alive
        and refused == expected_refused
        and kinds.get("sub") == "events.subscribe"
        and kinds.get("after") == "serve.status"
        and "Traceback" not in text
    )
    return held, (
        f"{wanted} connections: {refused} refused with too_many_requests (expected {expected_refused}); "
        f"afterwards {kinds}; serve alive {alive}; traceback in log {'Traceback' in text}"
    )


# -- swamp.client -----------------------------------------------------------------------------------------

# Runs in a child with swamp.client: a fake serve in a thread, the client against it; prints a
# JSON line {error, code, ...} and the child's peak RSS.
CLIENT = r"""
import json, os, socket, sys, tempfile, threading
from pathlib import Path
from swamp.client import Client, SwampError

mode = sys.argv[1]
folder = Path(tempfile.mkdtemp(prefix="swlim-", dir="/tmp"))
path = folder / "fake.sock"
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(str(path))
listener.listen(1)

def send(conn, frame):
    conn.sendall((json.dumps(frame) + "\n").encode())

def fake():
    conn, _ = listener.accept()
    reader = conn.makefile("rb")
    request = json.loads(reader.readline())
    ident = request["id"]
    try:
        if mode == "endless":
            chunk = b"x" * (1 << 20)
            for _ in range(300):
                conn.sendall(chunk)
        else:
            note = "n" * 4000
            for number in range(10000):
                cursor = f"0-{number:012d}"
                event = {"event": "run_finished", "runId": "r", "note": note, "cursor": cursor}
                send(conn, {"type": "event", "id": ident, "event": event})
            end = {"outcome": "timeout", "cursor": "0-1"}
            send(conn, {"type": request["type"], "id": ident, "payload": {"data": end}})
            send(conn, {"type": "done", "id": ident})
        threading.Event().wait(30)
    except OSError:
        pass

threading.Thread(target=fake, daemon=True).start()
report = {}
client = Client.connect(path)
call = client.start("events.subscribe")
try:
    report["result"] = call.result(timeout=60)
    events = list(call.events())
    report["kept"] = len(events) - 1
    report["first"] = events[0] if events else None
except SwampError as err:
    report["code"], report["message"] = err.code, err.message
except TimeoutError as err:
    report["code"] = "timeout"
client.close(timeout=1)
for row in open("/proc/self/status"):
    if row.startswith("VmHWM:"):
        report["hwm_mib"] = int(row.split()[1]) / 1024
print(json.dumps(report))
os._exit(0)
"""


def _client_child(swamp: str, mode: str, root: Path) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)  # its cwd: `python -c` imports from there first
    done = subprocess.run(
        [_python_of(swamp), "-c", CLIENT, mode],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"the client child failed: {done.stderr.strip()[-300:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _client_endless_line(swamp: str, root: Path) -> tuple[bool, str]:
    report = _client_child(swamp, "endless", root)
    held = (
        report.get("code") == "connection_lost"
        and "longer than" in str(report.get("message"))
        and report.get("hwm_mib", 1e9) < RSS_BOUND_MIB
    )
    said = f"{report.get('code')}: {str(report.get('message'))[:120]}"
    return held, f"{said}; peak RSS {report.get('hwm_mib')} MiB"


def _client_unread_events(swamp: str, root: Path) -> tuple[bool, str]:
    report = _client_child(swamp, "events", root)
    first = report.get("first") or {}
    held = (
        (report.get("result") or {}).get("outcome") == "timeout"
        and first.get("event") == "events_dropped"
        and report.get("kept", 1e9) * 4000 <= 8 * 1024 * 1024
        and report.get("hwm_mib", 1e9) < RSS_BOUND_MIB
    )
    kept = f"kept {report.get('kept')} of 10000 events, first {first}"
    return held, f"{kept}; peak RSS {report.get('hwm_mib')} MiB"


PEER = r"""
import os, socket, sys
from swamp.client import Client, SwampError

path = sys.argv[1]
ready_r, ready_w = os.pipe()
got_r, got_w = os.pipe()
pid = os.fork()
if pid == 0:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.setgid(65534)
    os.setuid(65534)
    listener.listen(1)
    os.write(ready_w, b"r")
    conn, _ = listener.accept()
    conn.settimeout(10)
    received = b""
    try:
        while chunk := conn.recv(65536):
            received += chunk
    except OSError:
        pass
    os.write(got_w, str(len(received)).encode())
    os._exit(0)
os.close(ready_w)
os.close(got_w)
os.read(ready_r, 1)
try:
    client = Client.connect(path)
    client.start("workflow.list")
    client.close(timeout=1)
    code = "connected"
except SwampError as err:
    code = err.code
received = os.read(got_r, 64).decode()
os.waitpid(pid, 0)
print(code, os.stat(path).st_uid, received)
"""


def _client_peer_not_path(swamp: str, root: Path) -> tuple[bool, str]:
    if os.getuid() != 0:
        return True, "skipped: acting as another account needs root"
    folder = Path(tempfile.mkdtemp(prefix="swlim-", dir="/tmp"))
    try:
        done = subprocess.run(
            [_python_of(swamp), "-c", PEER, str(folder / "flipped.sock")],
            cwd=folder,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    words = done.stdout.split()
    held = words == ["socket_not_owned", "0", "0"]
    return held, (
        f"client said {words[:1]}, socket file owner uid {words[1:2]}, "
        f"bytes the listener got {words[2:3]}"
    )
