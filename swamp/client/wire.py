"""One JSON-lines connection to `swamp serve`, shared by any number of threads.

The protocol lets frames of different requests interleave (PROTO-005), so one reader thread reads
every frame and hands it to the `Call` whose id it carries; ids are made here (`c1`, `c2`, ...), so
they are unique on the connection (PROTO-002, SERVE-010). A caller waits on its own `Call` only.
User code never runs on the reader thread (an `on_event` callback runs in the caller's thread), so a
callback may itself make calls on the same client without deadlock.

When the stream ends (serve exited, the socket closed, `close()`), every call still in flight is
finished with `ConnectionLost` at once, and every later call raises it before sending anything.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, Any

from .errors import ConnectionLost, SwampError

Event = dict[str, Any]


class Call:
    """One request in flight: its events as they come, then its result (or its refusal).

    >>> call = client.start("workflow.run", {"workflow": "release"})
    >>> for event in call.events():      # while the run goes
    ...     print(event["event"])
    >>> run = call.result()              # the run document; raises SwampError on a refusal
    """

    def __init__(self, connection: Connection, ident: str, request_type: str):
        self.id = ident
        self.type = request_type
        self._connection = connection
        self._cond = threading.Condition()
        self._events: deque[Event] = deque()
        self._data: dict[str, Any] | None = None
        self._error: SwampError | None = None
        self._finished = False

    # -- fed by the reader thread ----------------------------------------------------------------

    def _feed(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        with self._cond:
            if self._finished:
                return
            if kind == "event":
                event = frame.get("event")
                self._events.append(event if isinstance(event, dict) else {})
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
        """How many events have arrived that `events()` has not yielded yet."""
        with self._cond:
            return len(self._events)

    def events(self) -> Iterator[Event]:
        """The request's events, each once, as they arrive; ends when its answer has come."""
        while True:
            with self._cond:
                while not self._events and not self._finished:
                    self._cond.wait()
                if not self._events:
                    return
                event = self._events.popleft()
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
    ):
        self._reader = reader
        self._send_line = send_line
        self._describe_end = describe_end
        self._lock = threading.Lock()  # the calls in flight, the ids, `lost`
        self._write = threading.Lock()  # one frame at a time on the wire
        self._calls: dict[str, Call] = {}
        self._ids = itertools.count(1)
        self._lost: tuple[str, dict[str, Any]] | None = None
        self._thread = threading.Thread(target=self._read, name="swamp-client-reader", daemon=True)
        self._thread.start()

    def start(self, request_type: str, payload: dict[str, Any] | None = None) -> Call:
        """Send a request; its `Call` collects the answer."""
        with self._lock:
            if self._lost is not None:
                raise ConnectionLost(*self._lost)
            call = Call(self, f"c{next(self._ids)}", request_type)
            self._calls[call.id] = call
        frame: dict[str, Any] = {"type": request_type, "id": call.id}
        if payload:
            frame["payload"] = payload
        line = (json.dumps(frame, separators=(",", ":")) + "\n").encode()
        try:
            with self._write:
                self._send_line(line)
        except (OSError, ValueError):
            self._end()  # the reader sees the end too; whichever comes first tells the calls
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
            for line in self._reader:
                try:
                    frame = json.loads(line)
                except ValueError:
                    continue  # serve writes frames only (PROTO-001); nothing here to match
                if not isinstance(frame, dict) or not isinstance(frame.get("id"), str):
                    continue  # an answer to a line we did not send (we send only whole requests)
                with self._lock:
                    call = self._calls.get(frame["id"])
                    if call is not None and frame.get("type") == "done":
                        del self._calls[frame["id"]]
                if call is not None:
                    call._feed(frame)
        except (OSError, ValueError):
            pass
        finally:
            self._end()

    def _end(self) -> None:
        described = None if self.lost else self._describe_end()
        with self._lock:
            if self._lost is None and described is not None:
                self._lost = described
            calls, self._calls = list(self._calls.values()), {}
            lost = self._lost
        assert lost is not None
        for call in calls:
            call._lose(*lost)
