"""Helper processes that answer signals when a program sends them in bulk.

CPython runs one thread at a time, so one process answers a few hundred signals a second however
many threads it gives them; a signal is mostly Python work between two fsyncs. When a program
pipelines signals into one `swamp --jsonl` or `swamp serve` (BACKLOG of them in flight), the
process starts a few helpers (`python -m swamp.protocol.helpers`, one per core) and hands each
next signal to the one with the most room; when all are full it waits in a queue, and the helper
that answers next takes it (no thread per waiting signal). A helper that dies mid-request leaves
an `internal_error` for what it may have seen; what it never saw is answered here. A helper
answers with the same `answer` as this process, so the frames are the same bytes; it sends them
back and they are written here. The run claim keeps runs consistent across processes, as it does
between two commands. A single signal, or a stream that is not busy, never starts a helper.

Parent to helper, one JSON line per request: {"seq", "frame" (the request line as read),
"number" (its line number), "repoDir"}; the helper parses the frame again, so it sees exactly what
the parent saw (duplicate keys, big numbers and all).
Helper to parent: "ready", then for each request a line "<seq> <count>" and its `count` frames.

A helper ends with its parent, however the parent ends: on Linux the kernel kills it when its parent
dies (PR_SET_PDEATHSIG; a helper waiting for a run's claim never sees its stdin close, and went on
holding claims and settling waits for its dead parent); elsewhere it stops at the next request once
it finds its parent gone, and at EOF on stdin. PDEATHSIG fires when the *thread* that started the
helper ends, so the helpers are started by a thread that lives as long as they do.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..domain.actors import Actor
from ..domain.errors import InternalError

HANDED_OFF = frozenset({"workflow.signal"})  # quick, self-contained, nothing streamed
# Signals in flight at once before helpers are worth their start (~0.2 s each). At 4 in flight
# one process is GIL-bound on one core: scripts/bench/pg's deliveries on files went from 705 to
# 1,244 a second with helpers (PostgreSQL 713 to 793: its backends then share the two cores).
BACKLOG = 4
HAND_OFF_AT = 2  # one signal alone is answered here: the trip to a helper and back costs ~1 ms
PER_HELPER = 8  # requests queued at one helper at most, so neither pipe ever fills
_READY = b"ready\n"


class Helpers:
    """The helper processes of one serving process; every method may be called from any thread.

    Each helper holds at most PER_HELPER requests. A signal that finds every helper full waits in
    a queue here (no thread of its own), and the helper that answers next takes it."""

    def __init__(self, count: int | None = None):
        self._count = _helper_count() if count is None else count
        self._lock = threading.Lock()  # the counts, the queue and which helper has room
        self._in_flight = 0  # signals read and not answered yet, wherever they run
        self._helpers: list[_Helper] = []
        self._waiting: collections.deque[_Pending] = collections.deque()
        self._state = "idle" if self._count > 0 else "off"  # idle, starting, ready, off

    def start_soon(self) -> None:
        """Start the helpers now, in the background (a long-lived server keeps them warm)."""
        with self._lock:
            if self._state != "idle":
                return
            self._state = "starting"
        threading.Thread(target=self._start, name="swamp-helpers-start", daemon=True).start()

    def arrived(self, request_type: str) -> None:
        """Count a request as it is read; a backlog of signals starts the helpers."""
        if request_type not in HANDED_OFF:
            return
        with self._lock:
            self._in_flight += 1
            backlog = self._in_flight >= BACKLOG
        if backlog:
            self.start_soon()

    def finished(self, request_type: str) -> None:
        """Count a request answered (here or by a helper)."""
        if request_type in HANDED_OFF:
            with self._lock:
                self._in_flight -= 1

    def hand_off(
        self, request: Request, write_lines: Callable[[str], None], done: Callable[[], None]
    ) -> bool:
        """Give `request` to the helper with the most room, or queue it for the next helper that
        answers: its frames go to `write_lines`, then `done` is called (also when a helper dies
        first). False when no helper is ready or nothing else is in flight: the caller answers it
        itself."""
        if (
            request.type not in HANDED_OFF
            or request.executes
            or self._state != "ready"
            or self._in_flight < HAND_OFF_AT
        ):
            return False
        pending = (request, write_lines, done)
        while True:
            with self._lock:
                live = [h for h in self._helpers if h.alive]
                if not live:
                    return False
                helper = max(live, key=lambda h: h.room)
                if helper.room == 0:
                    self._waiting.append(pending)
                    return True
                helper.room -= 1
            if helper.send(*pending):
                return True  # else it died meanwhile: try the others

    def _answered(self, helper: _Helper) -> None:
        """A helper answered a request: it takes the next waiting one, or has room for one more."""
        with self._lock:
            if not self._waiting or not helper.alive:
                helper.room += 1
                return
            pending = self._waiting.popleft()
        if not helper.send(*pending) and not self.hand_off(*pending):  # it died just now
            answer_here(*pending)

    def _lost(self, helper: _Helper) -> None:
        """A helper died: what waits for a helper goes to the others, or is answered here."""
        with self._lock:
            if any(h.alive for h in self._helpers):
                return  # the live ones take the waiting requests as they answer
            waiting, self._waiting = list(self._waiting), collections.deque()
        for pending in waiting:
            answer_here(*pending)

    def close(self, *, wait: bool = True) -> None:
        """No more requests: each helper answers what it holds (and, with `wait`, what waits for
        a helper) and exits; `wait` for that."""
        if wait:
            while True:
                with self._lock:
                    if not self._waiting or not any(h.alive for h in self._helpers):
                        break
                time.sleep(0.005)
        with self._lock:
            helpers, self._state = self._helpers, "off"
        for helper in helpers:
            helper.close()
        if wait:
            for helper in helpers:
                helper.answers.join()

    def _start(self) -> None:
        spawned = [_Helper.spawn() for _ in range(self._count)]  # all start importing at once
        started = [_Helper.when_ready(p, self._answered, self._lost) for p in spawned if p is not None]
        helpers = [h for h in started if h is not None]
        with self._lock:
            if self._state != "starting":  # closed meanwhile
                for helper in helpers:
                    helper.close()
            else:
                self._helpers = helpers
                self._state = "ready" if helpers else "off"
        for helper in helpers:  # this thread started them: it must outlive them (PDEATHSIG)
            helper.answers.join()


def _helper_count() -> int:
    configured = os.environ.get("SWAMP_SIGNAL_HELPERS")
    if configured is not None:
        with contextlib.suppress(ValueError):
            return max(0, int(configured))
        return 0
    return max(2, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class Request:
    """A request as read: its frame line (parsed again by the helper) and what the reader knows."""

    id: Any
    type: str
    frame: str
    number: int
    repo_dir: str | None = None
    actor: Actor | None = None  # who sent it (a socket peer); None: the parent's own user
    executes: bool = False  # it may go on to execute a run (`resume: true`): never handed off


_Pending = tuple[Request, Callable[[str], None], Callable[[], None]]


class _Helper:
    """One helper process. Request lines go to it through a queue and a thread of its own, so
    neither the reader of a connection nor the reader of this helper's answers ever waits on its
    pipe (a helper blocked on writing answers would otherwise wait for the thread blocked on
    writing it a request)."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        answered: Callable[[_Helper], None],
        lost: Callable[[_Helper], None],
    ):
        self.process = process
        self._answered = answered
        self._lost = lost
        self.pending: dict[int, _Pending] = {}
        self._written: set[int] = set()  # requests that may have reached the helper
        self.room = PER_HELPER  # requests it may still be sent; counted under Helpers._lock
        self.alive = True
        self._lock = threading.Lock()  # pending, _written and alive
        self._next = 0
        self._outbox: queue.SimpleQueue[tuple[int, bytes] | None] = queue.SimpleQueue()
        self.sender = threading.Thread(target=self._send_requests, name="swamp-helper-send", daemon=True)
        self.answers = threading.Thread(target=self._read_answers, name="swamp-helper-answers", daemon=True)
        self.sender.start()
        self.answers.start()

    @staticmethod
    def spawn() -> subprocess.Popen[bytes] | None:
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "swamp.protocol.helpers", str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C or a group signal is the parent's to handle
            )
        except OSError:
            return None

    @classmethod
    def when_ready(
        cls,
        process: subprocess.Popen[bytes],
        answered: Callable[[_Helper], None],
        lost: Callable[[_Helper], None],
    ) -> _Helper | None:
        """The helper once it says it is ready; None (and the process gone) if it never does."""
        assert process.stdout is not None
        if process.stdout.readline() != _READY:
            with contextlib.suppress(OSError):
                process.kill()
            process.wait()
            return None
        return cls(process, answered, lost)

    def send(self, request: Request, write_lines: Callable[[str], None], done: Callable[[], None]) -> bool:
        """Queue `request` for this helper (its room was taken by the caller); False if it is dead.
        Never waits on the pipe."""
        body: dict[str, Any] = {"frame": request.frame, "number": request.number, "repoDir": request.repo_dir}
        if request.actor is not None:
            body["actor"] = [request.actor.account, request.actor.on_behalf_of]
        with self._lock:
            if not self.alive:
                return False
            seq = self._next
            self._next += 1
            self.pending[seq] = (request, write_lines, done)
        self._outbox.put((seq, (json.dumps({"seq": seq, **body}) + "\n").encode("utf-8")))
        return True

    def close(self) -> None:
        """No more requests: the helper gets EOF once what was queued for it is written."""
        with self._lock:
            self.alive = False
        self._outbox.put(None)

    def _send_requests(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        while True:
            item = self._outbox.get()
            if item is None:
                break
            seq, line = item
            with self._lock:
                self._written.add(seq)  # before the write: a failed write may still have delivered it
            try:
                stdin.write(line)
                if self._outbox.empty():
                    stdin.flush()
            except (OSError, ValueError):
                with self._lock:
                    self.alive = False
                break
        with contextlib.suppress(OSError, ValueError):
            stdin.close()

    def _read_answers(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                header = stdout.readline()
                if not header:
                    break
                seq_text, count_text = header.split()
                lines = [stdout.readline() for _ in range(int(count_text))]
                with self._lock:
                    _, write_lines, done = self.pending.pop(int(seq_text))
                    self._written.discard(int(seq_text))
                try:
                    write_lines(b"".join(lines).decode("utf-8", "surrogateescape"))
                finally:
                    done()
                    self._answered(self)
        except (OSError, ValueError, KeyError):
            pass
        code = self.process.wait()
        with self._lock:
            self.alive = False
            orphans, self.pending = self.pending, {}
            written = self._written
        self._outbox.put(None)  # the sender, if it still waits for work, stops
        for seq, (request, write_lines, done) in sorted(orphans.items()):
            if seq not in written:  # the helper never saw it: answered here instead, as if sent here
                answer_here(request, write_lines, done)
                continue
            error = InternalError(
                f"the helper process answering this {request.type} stopped (exit code {code}) before "
                "it answered; whether it took effect shows in: swamp workflow wait show <waitId>"
            )
            frames = [
                {"type": "error", "id": request.id, "error": error.to_dict()},
                {"type": "done", "id": request.id},
            ]
            try:
                write_lines("".join(json.dumps(f, separators=(",", ":")) + "\n" for f in frames))
            finally:
                done()
        self._lost(self)


def main() -> None:
    """A helper: answer each request line from the parent, one at a time, until EOF. A parent
    that went away ends it quietly."""
    parent = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else None
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        _serve_parent(parent)
    with contextlib.suppress(OSError):
        os.close(1)  # nothing left to say; a closed pipe must not print at exit


def warm() -> None:
    """Import what answering a signal needs, ahead of the first signal: a helper does it before it
    says ready, serve at launch. Otherwise the first signals wait for these imports (about 0.1 s),
    and in serve every request read behind them waits too."""
    import base64  # noqa: F401 - imported for its side effect: loaded now, not on the first signal
    import hashlib  # noqa: F401

    from ..app import signals  # noqa: F401
    from ..domain import fastschema, inputs  # noqa: F401
    from ..store.files import _exchange_supported
    from . import frames, requests  # noqa: F401

    _exchange_supported()  # loads ctypes and looks up renameat2 once
    from .payloads import request_schemas

    request_schemas().check("workflow.signal")  # reads requests.schema.json and compiles the check
    from ..store.clock import current_user

    current_user()  # who signs the receipt: one password-database lookup, cached


def _serve_parent(parent: int | None) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when helpers stop: at EOF
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent(parent)
    warm()
    out = sys.stdout.buffer
    out.write(_READY)
    out.flush()
    for raw in sys.stdin.buffer:
        if _orphaned(parent):
            break  # what the parent sent before it died is nobody's to answer
        request = json.loads(raw)
        actor = Actor(*request["actor"]) if request.get("actor") else None
        frames = _frames_for(request["frame"], request["number"], request.get("repoDir"), actor)
        out.write(f"{request['seq']} {frames.count(chr(10))}\n{frames}".encode("utf-8", "surrogateescape"))
        out.flush()


def _die_with_parent(parent: int | None) -> None:
    """Ask the kernel to kill this helper when its parent dies (Linux), and end now if it already
    has (it died before the request was made)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    if _orphaned(parent):
        os._exit(0)


def _orphaned(parent: int | None) -> bool:
    return parent is not None and os.getppid() != parent


def answer_here(request: Request, write_lines: Callable[[str], None], done: Callable[[], None]) -> None:
    """Answer `request` in this process, as a helper would have (when none is left to take it)."""
    try:
        write_lines(_frames_for(request.frame, request.number, request.repo_dir, request.actor))
    finally:
        done()


def _frames_for(frame: str, number: int, repo_dir: str | None, actor: Actor | None = None) -> str:
    """The frames that answer one request line, its frame parsed again from the line as read."""
    from .frames import BadFrame, FrameWriter, answer, parse_frame, refuse
    from .requests import handle

    buffer = io.StringIO()
    writer = FrameWriter(buffer)
    try:
        request_id, request_type, payload = parse_frame(frame, number, set())
    except BadFrame as bad:  # the parent parsed it already: only a mismatch of versions
        refuse(writer, bad.request_id, bad.error, number)
    else:
        if repo_dir is not None and "repoDir" not in payload:
            payload = {**payload, "repoDir": repo_dir}
        if request_type in HANDED_OFF:
            answer(writer, request_id, request_type, payload, functools.partial(handle, actor=actor), number)
        else:
            error = InternalError(f"a helper process does not answer {request_type}")
            refuse(writer, request_id, error, number)
    return buffer.getvalue()


if __name__ == "__main__":
    main()
