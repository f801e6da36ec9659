"""Slow clients (GATEWAY-095..098): a connection must send its request line and headers within
HEADER_SECONDS, or it is closed.

uvicorn's h11 protocol bounds how large the headers may grow, how long an idle kept-alive
connection is kept, and (through the routes' body reads, limits.py) how long a body may take, but
not how long the headers may take: a client that sends half a request line and then a byte every
few seconds (slowloris) holds a connection, and past MAX_CONNECTIONS every other client is
answered 503. This protocol arms a timer when a connection is accepted and again when an answer
has been sent on it (a kept-alive connection's next request), and disarms it once h11 has read a
whole request line and headers. When it fires the connection is closed: the request never reached
the app, so there is nothing to answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

HEADER_SECONDS = 10.0


def protocol_class(
    header_seconds: float = HEADER_SECONDS,
    closed: Callable[[str | None], None] | None = None,
    refused: Callable[[str | None], None] | None = None,
) -> type:
    """uvicorn's H11Protocol with the header timeout (a class: uvicorn builds one per connection);
    `closed(client address)` is told of each connection closed for it, and `refused(client
    address)` of each request answered 400 before it reached the app because it is not HTTP h11
    can read (GATEWAY-017): the access log."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutProtocol(H11Protocol):
        _headers_timer: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the request line and headers are in
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm()  # the kept-alive connection's next request has as long

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            if refused is not None:
                refused(self.client[0] if self.client else None)
            super().send_400_response(msg)

        def _arm(self) -> None:
            self._disarm()
            self._headers_timer = self.loop.call_later(header_seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._headers_timer is not None:
                self._headers_timer.cancel()
                self._headers_timer = None

        def _too_slow(self) -> None:
            self._headers_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            if closed is not None:
                closed(self.client[0] if self.client else None)
            self.transport.close()

    return HeaderTimeoutProtocol
