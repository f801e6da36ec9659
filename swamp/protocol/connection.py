"""The frames of one `swamp serve --socket` connection, sent by a thread of its own.

Serve answers requests on a pool of threads shared by every connection. If they wrote to a
client's socket themselves, a client that sends requests and never reads would fill its socket
and park every pool thread in a blocked send: measured, 300 pipelined requests from one such
client stopped all other clients (serve.status included) for as long as it stayed connected. So a
worker only queues its frames here; this connection's sender thread does the waiting. A client
that leaves more than MAX_UNREAD_BYTES queued (beyond what the kernel buffers) is not reading: its
connection is closed (both ways), its frames dropped, and serve goes on; its requests finish as if
it had gone away (SERVE-033). One frame alone is always queued, however large.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
from collections.abc import Callable

from .jsonl import FrameWriter

MAX_UNREAD_BYTES = 4 * 1024 * 1024


class ConnectionWriter(FrameWriter):
    """A FrameWriter that never blocks its caller: frames go to a queue, a thread sends them."""

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
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._ready = threading.Condition()
        self._ending = False
        self._sender = threading.Thread(target=self._send, name="swamp-serve-send", daemon=True)
        self._sender.start()

    def write_lines(self, text: str) -> None:
        data = text.encode("utf-8", "surrogateescape")
        with self._ready:
            if self.closed or self._ending:
                return
            if self._queued and self._queued + len(data) > self._limit:
                self.closed = True
                unsent = self._queued + len(data)
                self._queue.clear()
                self._queued = 0
                self._ready.notify()
            else:
                self._queue.append(data)
                self._queued += len(data)
                self._ready.notify()
                return
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # the reader sees EOF, the sender an error
        self._cut_off(unsent)

    def finish(self, timeout: float | None = None) -> None:
        """Send what is queued, then stop (the caller closes the socket)."""
        with self._ready:
            self._ending = True
            self._ready.notify()
        self._sender.join(timeout)

    def _send(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self.closed and not self._ending:
                    self._ready.wait()
                if self.closed or not self._queue:
                    return
                data = self._queue.popleft()
            try:
                self._sock.sendall(data)
            except OSError:
                with self._ready:
                    self.closed = True
                    self._queue.clear()
                return
            with self._ready:
                self._queued -= len(data)
