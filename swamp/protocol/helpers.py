"""Helper processes that answer signals when a program sends them in bulk.

CPython runs one thread at a time, so one process answers a few hundred signals a second however
many threads it gives them; a signal is mostly Python work between two fsyncs. When a program
pipelines signals into one `swamp --jsonl` or `swamp serve` (BACKLOG of them in flight), the
process starts a few helpers (`python -m swamp.protocol.helpers`, one per core) and hands each
next signal to the least busy one. A helper answers with the same `answer` as this process, so
the frames are the same bytes; it sends them back and they are written here. The run claim keeps
runs consistent across processes, as it does between two commands. A single signal, or a stream
that is not busy, never starts a helper.

Parent to helper, one JSON line per request: {"seq", "frame" (the request line as read),
"number" (its line number), "repoDir"}; the helper parses the frame again, so it sees exactly what
the parent saw (duplicate keys, big numbers and all).
Helper to parent: "ready", then for each request a line "<seq> <count>" and its `count` frames.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..domain.errors import InternalError

HANDED_OFF = frozenset({"workflow.signal"})  # quick, self-contained, nothing streamed
BACKLOG = 8  # signals in flight at once before helpers are worth their start (~0.2 s each)
HAND_OFF_AT = 2  # one signal alone is answered here: the trip to a helper and back costs ~1 ms
PER_HELPER = 8  # requests queued at one helper at most, so neither pipe ever fills
_READY = b"ready\n"


class Helpers:
    """The helper processes of one serving process; every method may be called from any thread."""

    def __init__(self, count: int | None = None):
        self._count = _helper_count() if count is None else count
        self._lock = threading.Lock()
        self._in_flight = 0  # signals read and not answered yet, wherever they run
        self._helpers: list[_Helper] = []
        self._room = threading.Condition()  # notified whenever a helper has a free slot again
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
        self,
        request: Request,
        write_lines: Callable[[str], None],
        done: Callable[[], None],
        *,
        wait: bool = False,
    ) -> bool:
        """Send `request` to the least busy helper: its frames go to `write_lines`, then `done` is
        called (also when the helper dies first). Returns once it is sent, after waiting for room
        at a helper when `wait`. False when no helper is ready, or there was no room and not
        `wait`, or nothing else is in flight: the caller answers it itself."""
        if request.type not in HANDED_OFF or self._state != "ready" or self._in_flight < HAND_OFF_AT:
            return False
        while True:
            with self._room:  # a slot given back meanwhile is seen here or wakes the wait below
                with self._lock:
                    live = sorted((h for h in self._helpers if h.alive), key=lambda h: len(h.pending))
                if not live:
                    return False
                helper = next((h for h in live if h.slots.acquire(blocking=False)), None)
                if helper is None:
                    if not wait:
                        return False
                    self._room.wait(timeout=1.0)
                    continue
            if helper.send(request, write_lines, done):
                return True

    def _made_room(self) -> None:
        with self._room:
            self._room.notify()

    def close(self, *, wait: bool = True) -> None:
        """No more requests: each helper answers what it holds and exits; `wait` for that."""
        with self._lock:
            helpers, self._state = self._helpers, "off"
        for helper in helpers:
            helper.close()
        if wait:
            for helper in helpers:
                helper.answers.join()

    def _start(self) -> None:
        spawned = [_Helper.spawn() for _ in range(self._count)]  # all start importing at once
        started = [_Helper.when_ready(p, self._made_room) for p in spawned if p is not None]
        helpers = [h for h in started if h is not None]
        with self._lock:
            if self._state != "starting":  # closed meanwhile
                for helper in helpers:
                    helper.close()
                return
            self._helpers = helpers
            self._state = "ready" if helpers else "off"


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


_Pending = tuple[Request, Callable[[str], None], Callable[[], None]]


class _Helper:
    def __init__(self, process: subprocess.Popen[bytes], made_room: Callable[[], None]):
        self.process = process
        self._made_room = made_room
        self.pending: dict[int, _Pending] = {}
        self.slots = threading.BoundedSemaphore(PER_HELPER)  # taken by the caller of send
        self.alive = True
        self._lock = threading.Lock()  # pending and alive
        self._send_lock = threading.Lock()  # one request line at a time into the pipe
        self._next = 0
        self.answers = threading.Thread(target=self._read_answers, name="swamp-helper-answers", daemon=True)
        self.answers.start()

    @staticmethod
    def spawn() -> subprocess.Popen[bytes] | None:
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "swamp.protocol.helpers"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C or a group signal is the parent's to handle
            )
        except OSError:
            return None

    @classmethod
    def when_ready(cls, process: subprocess.Popen[bytes], made_room: Callable[[], None]) -> _Helper | None:
        """The helper once it says it is ready; None (and the process gone) if it never does."""
        assert process.stdout is not None
        if process.stdout.readline() != _READY:
            with contextlib.suppress(OSError):
                process.kill()
            process.wait()
            return None
        return cls(process, made_room)

    def send(self, request: Request, write_lines: Callable[[str], None], done: Callable[[], None]) -> bool:
        """Queue `request` here, holding one of `slots` (given back once it is answered)."""
        body = {"frame": request.frame, "number": request.number, "repoDir": request.repo_dir}
        with self._lock:
            if not self.alive:
                self.slots.release()
                return False
            seq = self._next
            self._next += 1
            self.pending[seq] = (request, write_lines, done)
        line = (json.dumps({"seq": seq, **body}) + "\n").encode("utf-8")
        with self._send_lock:  # not under _lock: the answer reader must never wait for a pipe
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(line)
                self.process.stdin.flush()
                return True
            except (OSError, ValueError):
                pass
        with self._lock:
            taken = self.pending.pop(seq, None)
            self.alive = False
        if taken is None:  # the reader already answered it as orphaned
            return True
        self.slots.release()
        return False

    def close(self) -> None:
        with self._lock:
            self.alive = False
        with self._send_lock, contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()

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
                try:
                    write_lines(b"".join(lines).decode("utf-8", "surrogateescape"))
                finally:
                    self.slots.release()
                    self._made_room()
                    done()
        except (OSError, ValueError, KeyError):
            pass
        code = self.process.wait()
        with self._lock:
            self.alive = False
            orphans, self.pending = self.pending, {}
        for request, write_lines, done in orphans.values():
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
                self.slots.release()
                self._made_room()
                done()


def main() -> None:
    """A helper: answer each request line from the parent, one at a time, until EOF. A parent
    that went away ends it quietly."""
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        _serve_parent()
    with contextlib.suppress(OSError):
        os.close(1)  # nothing left to say; a closed pipe must not print at exit


def warm() -> None:
    """Import what answering a signal needs, ahead of the first signal: a helper does it before it
    says ready, serve at launch. Otherwise the first signals wait for these imports (about 0.1 s),
    and in serve every request read behind them waits too."""
    import base64  # noqa: F401 - imported for its side effect: loaded now, not on the first signal
    import getpass  # noqa: F401 - who signed, for the receipt
    import hashlib  # noqa: F401

    from ..app import signals  # noqa: F401
    from ..domain import fastschema, inputs  # noqa: F401
    from ..store.files import _exchange_supported

    _exchange_supported()  # loads ctypes and looks up renameat2 once


def _serve_parent() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when helpers stop: at EOF
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from .jsonl import BadFrame, FrameWriter, answer, parse_frame, refuse
    from .requests import handle

    warm()
    out = sys.stdout.buffer
    out.write(_READY)
    out.flush()
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        buffer = io.StringIO()
        writer = FrameWriter(buffer)
        number = request["number"]
        try:
            request_id, request_type, payload = parse_frame(request["frame"], number, set())
        except BadFrame as bad:  # the parent parsed it already: only a mismatch of versions
            refuse(writer, bad.request_id, bad.error, number)
        else:
            repo_dir = request.get("repoDir")
            if repo_dir is not None and "repoDir" not in payload:
                payload = {**payload, "repoDir": repo_dir}
            if request_type in HANDED_OFF:
                answer(writer, request_id, request_type, payload, handle, number)
            else:
                error = InternalError(f"a helper process does not answer {request_type}")
                refuse(writer, request_id, error, number)
        frames = buffer.getvalue()
        out.write(f"{request['seq']} {frames.count(chr(10))}\n{frames}".encode("utf-8", "surrogateescape"))
        out.flush()


if __name__ == "__main__":
    main()
