"""The frames of one `swamp serve --socket` connection, sent by a thread of its own.

Serve answers requests on a pool of threads shared by every connection. If they wrote to a
client's socket themselves, a client that sends requests and never reads would fill its socket
and park every pool thread in a blocked send: measured, 300 pipelined requests from one such
client stopped all other clients (serve.status included) for as long as it stayed connected. So a
worker only queues its frames here; this connection's sender thread does the waiting. A client
that leaves more than MAX_UNREAD_BYTES queued (beyond what the kernel buffers) is not reading: its
connection is closed (both ways), its frames dropped, and serve goes on; its requests finish as if
it had gone away (SERVE-033). One frame alone is always queued, however large.

A request's place among the MAX_PIPELINED a connection may have unanswered is given back once its
frames are *sent* (after_sent), not once they are queued: a client that pipelines faster than it
reads is slowed down to its own reading speed instead of being cut off, and what waits for it here
stays bounded either way.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
from collections.abc import Callable

from .frames import FrameWriter

MAX_UNREAD_BYTES = 4 * 1024 * 1024


class ConnectionWriter(FrameWriter):
    """A FrameWriter that never blocks its caller: frames go to a queue, a thread sends them, as
    many as are queued in one send (one send per frame starved the sender of the GIL under load)."""

    def __init__(
        self,
        sock: socket.socket,
        cut_off: Callable[[int], None],
        limit: int = MAX_UNREAD_BYTES,
    ):
        super().__init__(None)
        self._sock = sock
        self._cut_off = cut_off  # told the bytes left unsent when the connection is closed for them
        self._limit = limit
        self._queue: collections.deque[bytes | Callable[[], None]] = collections.deque()
        self._queued = 0  # bytes queued and not sent yet
        self._ready = threading.Condition()
        self._ending = False
        self._sender = threading.Thread(target=self._send, name="swamp-serve-send", daemon=True)
        self._sender.start()

    def write_lines(self, text: str) -> None:
        data = text.encode("utf-8", "surrogateescape")
        with self._ready:
            if self.closed or self._ending:
                return
            if not self._queued or self._queued + len(data) <= self._limit:
                self._queue.append(data)
                self._queued += len(data)
                self._ready.notify()
                return
            self.closed = True
            unsent = self._queued + len(data)
            dropped = self._drop()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # the reader sees EOF, the sender an error
        self._cut_off(unsent)
        _run(dropped)

    def after_sent(self, callback: Callable[[], None]) -> None:
        """Call `callback` once every frame queued so far is sent (or will never be)."""
        with self._ready:
            if not self.closed and not self._ending:
                self._queue.append(callback)
                self._ready.notify()
                return
        callback()

    def finish(self, timeout: float | None = None) -> None:
        """Send what is queued, then stop (the caller closes the socket)."""
        with self._ready:
            self._ending = True
            self._ready.notify()
        self._sender.join(timeout)

    def _drop(self) -> list[Callable[[], None]]:
        """Empty the queue (under the lock); the callbacks in it, to be run outside it."""
        callbacks = [item for item in self._queue if callable(item)]
        self._queue.clear()
        self._queued = 0
        return callbacks

    def _send(self) -> None:
        while True:
            items: list[bytes | Callable[[], None]] = []
            with self._ready:
                while not self._queue and not self.closed and not self._ending:
                    self._ready.wait()
                if self.closed or not self._queue:
                    owed = self._drop()
                else:
                    owed, items = [], list(self._queue)
                    self._queue.clear()
            if not items:
                _run(owed)
                return
            if not self._deliver(items):
                return

    def _deliver(self, items: list[bytes | Callable[[], None]]) -> bool:
        """Send the frames of `items` in order, each callback once the frames before it are sent;
        False (every callback still owed run) if the connection failed."""
        batch = bytearray()
        for index, item in enumerate(items):
            if isinstance(item, bytes):
                batch += item
                continue
            if batch and not self._flush(batch):
                self._fail(items[index:])
                return False
            batch = bytearray()
            item()
        if batch and not self._flush(batch):
            self._fail([])
            return False
        return True

    def _flush(self, batch: bytearray) -> bool:
        try:
            self._sock.sendall(batch)
        except OSError:
            return False
        with self._ready:
            self._queued = max(0, self._queued - len(batch))
        return True

    def _fail(self, rest: list[bytes | Callable[[], None]]) -> None:
        with self._ready:
            self.closed = True
            owed = self._drop()
        _run([item for item in rest if callable(item)] + owed)


def _run(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        callback()
