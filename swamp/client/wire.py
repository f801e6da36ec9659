"""One JSON-lines connection to `swamp serve`, shared by any number of threads.

The protocol lets frames of different requests interleave (PROTO-005), so one reader thread reads
every frame and hands it to the `Call` whose id it carries; ids are made here (`c1`, `c2`, ...), so
they are unique on the connection (PROTO-002, SERVE-010). A caller waits on its own `Call` only.
User code never runs on the reader thread (an `on_event` callback runs in the caller's thread), so a
callback may itself make calls on the same client without deadlock.

When the stream ends (serve exited, the socket closed, `close()`), every call still in flight is
finished with `ConnectionLost` at once, and every later call raises it before sending anything.

What the reader keeps is bounded whatever the other end sends (PROTO-033, PROTO-034): a line longer
than MAX_FRAME_BYTES ends the connection (it is never kept whole), and a call keeps at most
MAX_UNREAD_EVENT_BYTES of events its caller has not read, dropping the oldest for a marker.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, Any

from .errors import ConnectionLost, SwampError

Event = dict[str, Any]

MAX_FRAME_BYTES = 64 * 1024 * 1024  # one frame's line, its newline not counted (PROTO-033)
MAX_UNREAD_EVENT_BYTES = 8 * 1024 * 1024  # a call's events not read yet, by their lines' bytes
DROPPED = "events_dropped"  # the marker's kind: made here, never sent by swamp (PROTO-034)


class Call:
    """One request in flight: its events as they come, then its result (or its refusal).

    >>> call = client.start("workflow.run", {"workflow": "release"})
    >>> for event in call.events():      # while the run goes
    ...     print(event["event"])
    >>> run = call.result()              # the run document; raises SwampError on a refusal
    """

    def __init__(
        self,
        connection: Connection,
        ident: str,
        request_type: str,
        keep_events: bool = True,
        max_unread: int = MAX_UNREAD_EVENT_BYTES,
    ):
        self.id = ident
        self.type = request_type
        self._connection = connection
        self._cond = threading.Condition()
        self._events: deque[tuple[Event, int]] = deque()  # each with its line's bytes
        self._unread_bytes = 0
        self._keep_events = keep_events  # False: nobody will read them (`request` without on_event)
        self._max_unread = max_unread
        self._dropped = 0  # dropped since the caller last read: one marker says how many
        self.dropped = 0
        """How many events were dropped, in all, because they were not read in time (PROTO-034)."""
        self._data: dict[str, Any] | None = None
        self._error: SwampError | None = None
        self._finished = False

    # -- fed by the reader thread ----------------------------------------------------------------

    def _feed(self, frame: dict[str, Any], size: int = 0) -> None:
        kind = frame.get("type")
        with self._cond:
            if self._finished:
                return
            if kind == "event":
                if not self._keep_events:
                    return
                event = frame.get("event")
                self._events.append((event if isinstance(event, dict) else {}, size))
                self._unread_bytes += size
                while self._unread_bytes > self._max_unread and len(self._events) > 1:
                    _, dropped = self._events.popleft()  # the oldest unread: the marker stands for it
                    self._unread_bytes -= dropped
                    self._dropped += 1
                    self.dropped += 1
            elif kind == "done":
                if self._data is None and self._error is None:
                    self._error = SwampError("protocol_error", f"request {self.id} was done with no answer")
                self._finished = True
            elif kind == "error":
                self._error = SwampError.from_body(frame.get("error"))
            else:
                payload = frame.get("payload")
                data = payload.get("data") if isinstance(payload, dict) else None
                self._data = data if isinstance(data, dict) else {}
            self._cond.notify_all()

    def _lose(self, message: str, details: dict[str, Any]) -> None:
        with self._cond:
            if self._finished:
                return
            self._error = ConnectionLost(message, details)
            self._finished = True
            self._cond.notify_all()

    # -- read by the caller ------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once the call has its answer (or lost its connection)."""
        with self._cond:
            return self._finished

    def unread(self) -> int:
        """How many events have arrived that `events()` has not yielded yet (a marker counts)."""
        with self._cond:
            return len(self._events) + (1 if self._dropped else 0)

    def events(self) -> Iterator[Event]:
        """The request's events, each once, as they arrive; ends when its answer has come.

        Events left unread past MAX_UNREAD_EVENT_BYTES are dropped, oldest first, and one event
        `{"event": "events_dropped", "dropped": N}` comes in their place (PROTO-034)."""
        while True:
            with self._cond:
                while not self._events and not self._dropped and not self._finished:
                    self._cond.wait()
                if self._dropped:
                    event: Event = {"event": DROPPED, "dropped": self._dropped}
                    self._dropped = 0
                elif self._events:
                    event, size = self._events.popleft()
                    self._unread_bytes -= size
                else:
                    return
            yield event

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the answer and return the result `data`; raises `SwampError` on a refusal,
        `ConnectionLost` if the connection died first, `TimeoutError` if `timeout` seconds pass
        (the request goes on: `cancel()` stops it). Events not read yet stay readable."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._finished:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"request {self.id} ({self.type}) not answered within {timeout:g} s")
                self._cond.wait(left)
            if self._error is not None:
                raise self._error.with_traceback(None)
            assert self._data is not None
            return self._data

    def cancel(self) -> bool:
        """Ask serve to stop this request (serve's `cancel {id}`, SERVE-016); False if it had
        already finished."""
        if self.finished:
            return False
        try:
            self._connection.start("cancel", {"id": self.id}).result()
        except SwampError as err:
            if err.code == "not_in_flight":
                return False
            raise
        return True


class Connection:
    """Frames out through `send_line`, frames in from `reader`, matched to calls by id."""

    def __init__(
        self,
        reader: IO[bytes],
        send_line: Callable[[bytes], None],
        describe_end: Callable[[], tuple[str, dict[str, Any]]],
        abort: Callable[[], None] = lambda: None,
        max_frame: int = MAX_FRAME_BYTES,
    ):
        self._reader = reader
        self._send_line = send_line
        self._describe_end = describe_end
        self._abort = abort  # ends the transport when the other end broke the protocol
        self._max_frame = max_frame
        self._broken: tuple[str, dict[str, Any]] | None = None  # why the reader gave up
        self._refusal: dict[str, Any] | None = None  # an error frame with no id (a refused connection)
        self._lock = threading.Lock()  # the calls in flight, the ids, `lost`
        self._write = threading.Lock()  # one frame at a time on the wire
        self._calls: dict[str, Call] = {}
        self._ids = itertools.count(1)
        self._lost: tuple[str, dict[str, Any]] | None = None
        self._thread = threading.Thread(target=self._read, name="swamp-client-reader", daemon=True)
        self._thread.start()

    def start(
        self, request_type: str, payload: dict[str, Any] | None = None, keep_events: bool = True
    ) -> Call:
        """Send a request; its `Call` collects the answer (and its events, unless `keep_events`
        is False: nobody will read them)."""
        with self._lock:
            if self._lost is not None:
                raise ConnectionLost(*self._lost)
            call = Call(self, f"c{next(self._ids)}", request_type, keep_events)
            self._calls[call.id] = call
        frame: dict[str, Any] = {"type": request_type, "id": call.id}
        if payload:
            frame["payload"] = payload
        line = (json.dumps(frame, separators=(",", ":")) + "\n").encode()
        try:
            with self._write:
                self._send_line(line)
        except (OSError, ValueError):
            # The reader sees the end too, and may have read why (a refusal): let it tell first.
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout=1)
            self._end()
        return call

    def in_flight(self) -> int:
        with self._lock:
            return len(self._calls)

    @property
    def lost(self) -> bool:
        with self._lock:
            return self._lost is not None

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _read(self) -> None:
        try:
            while line := self._reader.readline(self._max_frame + 1):
                if len(line) > self._max_frame and not line.endswith(b"\n"):
                    self._too_long()
                    return
                try:
                    frame = json.loads(line)
                except ValueError:
                    continue  # serve writes frames only (PROTO-001); nothing here to match
                if not isinstance(frame, dict):
                    continue
                if not isinstance(frame.get("id"), str):
                    if frame.get("type") == "error" and isinstance(frame.get("error"), dict):
                        self._refusal = frame["error"]  # e.g. too_many_requests: told if it ends
                    continue  # an answer to a line we did not send (we send only whole requests)
                with self._lock:
                    call = self._calls.get(frame["id"])
                    if call is not None and frame.get("type") == "done":
                        del self._calls[frame["id"]]
                if call is not None:
                    call._feed(frame, len(line))
        except (OSError, ValueError):
            pass
        finally:
            self._end()

    def _too_long(self) -> None:
        """A line longer than the protocol allows: not kept, and the connection ended (PROTO-033)."""
        limit = self._max_frame
        self._broken = (
            f"swamp serve sent a frame longer than {limit} bytes, more than this client reads; the "
            "connection was closed. If it is swamp serve, ask for less at once (a smaller `limit`) "
            "and connect again (a request in flight may have taken effect)",
            {"maxFrameBytes": limit},
        )
        with contextlib.suppress(OSError, ValueError):
            self._abort()

    def _end(self) -> None:
        described = None if self.lost else self._broken or self._describe_end()
        if described is not None and self._broken is None and self._refusal is not None:
            said = self._refusal
            described = (
                f"swamp serve refused the connection: {said.get('code')}: {said.get('message')}",
                {**described[1], "refusal": said},
            )
        with self._lock:
            if self._lost is None and described is not None:
                self._lost = described
            calls, self._calls = list(self._calls.values()), {}
            lost = self._lost
        assert lost is not None
        for call in calls:
            call._lose(*lost)
