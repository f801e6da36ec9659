"""Asking a `swamp serve --socket PATH` instead of the store (`swamp gateway --connect PATH`,
GATEWAY-008..009): the gateway then opens no repository and no store; serve checks the gateway's
account as a socket peer (ACCESS-072..077), runs the hooks, and continues runs with --auto-continue.

One connection (swamp.client's, safe to share between threads) carries every request; it is opened
on the first request and opened again on the next one after it ends, so a serve that restarts is
found again. A serve that cannot be reached, or a connection that ends before its answer, is the
core's `store_unavailable` (503, as `swamp --connect` says it, ACCESS-084), told to the HTTP client
without the socket's path; why is logged on stderr for the gateway's operator, once each time it
changes. Serve's refusals pass through as serve made them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..domain.errors import StoreUnavailable, SwampError

UNREACHABLE = "swamp serve does not answer the gateway; try again in a moment"


class ThroughServe:
    def __init__(self, path: str, log: Callable[[dict[str, Any]], None] = lambda entry: None):
        self.path = path
        self._log = log  # one JSON line on stderr (server.write_log)
        self._client: Any = None
        self._lock = threading.Lock()
        self._down: str | None = None  # why serve could not be reached, as last logged

    def ask(self, request_type: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The result of REQUEST_TYPE as serve answers it (called in a worker thread)."""
        from ..client.errors import ConnectionLost
        from ..client.errors import SwampError as WireError

        sent = {key: _text(value) for key, value in payload.items()}
        client = self._connected()
        try:
            return dict(client.request(request_type, sent))
        except ConnectionLost as exc:
            refusal = exc.details.get("refusal")
            if isinstance(refusal, dict) and isinstance(refusal.get("code"), str):  # serve turned it away
                raise SwampError(
                    str(refusal.get("message")), refusal.get("details") or {}, code=refusal["code"]
                ) from None
            raise StoreUnavailable(
                "The connection to swamp serve ended before it answered; the request may have taken "
                "effect: look (GET /v1/waits/WAIT_ID) before sending it again",
                {},
            ) from None
        except WireError as exc:
            raise SwampError(exc.message, exc.details, code=exc.code) from None

    def reachable(self) -> bool:
        """Whether serve answers now (`protocol.version`, which serve answers any peer)."""
        try:
            self.ask("protocol.version", {})
        except SwampError:
            return False
        return True

    def _connected(self) -> Any:
        from ..client.client import Client
        from ..client.errors import SwampError as WireError

        with self._lock:
            if self._client is not None and not self._client.connected:
                self._client.close(0)
                self._client = None
            if self._client is None:
                try:
                    self._client = Client.connect(self.path)
                except OSError as exc:
                    self._log_down(f"cannot connect to {self.path}: {exc.strerror or exc}")
                    raise StoreUnavailable(UNREACHABLE, {}) from None
                except WireError as exc:  # socket_not_owned: whoever listens there is not serve's account
                    self._log_down(f"{exc.code}: {exc.message}")
                    raise StoreUnavailable(UNREACHABLE, {}) from None
                if self._down is not None:
                    self._down = None
                    self._note({"serve": self.path, "connected": True})
            return self._client

    def _log_down(self, reason: str) -> None:
        if reason != self._down:
            self._down = reason
            self._note({"serve": self.path, "unavailable": reason})

    def _note(self, entry: dict[str, Any]) -> None:
        import time

        self._log({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **entry})


def _text(value: Any) -> Any:
    """A frame carries text: a body's bytes (already checked to be UTF-8 by the routes) as text."""
    return value.decode("utf-8") if isinstance(value, bytes) else value
