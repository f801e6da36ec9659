"""Where the CLI's requests are answered: here, by opening the store (protocol.requests.handle), or
with `--connect PATH` (or SWAMP_CONNECT) by the `swamp serve --socket PATH` there, which may run as
another account that owns the store (spec/access.md, ACCESS-080..ACCESS-089).

Every command asks through `handler(ctx)`: `ask(request, payload, progress)` answers with the result
document, calls `progress` with each event, and raises the same SwampError (code, message, details,
exit code) whichever way the request went, so output, exit codes and prompts are the same.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..domain.errors import SwampError, UsageError

Progress = Callable[[dict[str, Any]], None] | None
Ask = Callable[..., dict[str, Any]]

# Requests about this machine's files, not a serve's: refused with --connect (ACCESS-083).
LOCAL_ONLY = {
    "repo.init": "swamp repo init",
    "store.copy": "swamp store copy",
    "store.migrate": "swamp store migrate",
}


def connect_path(ctx: Any) -> str | None:
    """--connect PATH, else SWAMP_CONNECT; None: answer here."""
    root = ctx.find_root() if ctx is not None else None
    given = ((root.obj or {}).get("connect") if root is not None else None) or os.environ.get("SWAMP_CONNECT")
    return given or None


def handler(ctx: Any) -> Ask:
    """The way this command's requests are answered."""
    path = connect_path(ctx)
    if path is None:
        from ..protocol.requests import handle

        return handle
    return _remote(path)


_REMOTES: dict[str, Remote] = {}


def _remote(path: str) -> Remote:
    if path not in _REMOTES:  # one connection a process: a prompt's wait show, then its signal
        _REMOTES[path] = Remote(path)
    return _REMOTES[path]


class Remote:
    """Requests sent to `swamp serve --socket PATH` as frames (swamp.client's wire code)."""

    def __init__(self, path: str):
        self.path = path
        self.connection: Any = None

    def __call__(
        self, request: str, payload: Any, progress: Progress = None, actor: Any = None
    ) -> dict[str, Any]:
        if request in LOCAL_ONLY:
            raise UsageError(
                f"{LOCAL_ONLY[request]} works on this machine's files, not through a serve: run it "
                "without --connect (and SWAMP_CONNECT), as the account that owns the store"
            )
        if isinstance(payload, dict) and "repoDir" in payload:
            raise UsageError(
                "--repo-dir names a repository on this machine; through --connect, requests go to the "
                "serve's own repository: leave out --repo-dir (or --connect)"
            )
        from ..client.errors import SwampError as WireError

        payload = {key: _text(value) for key, value in (payload or {}).items()}
        connection = self._connection()
        try:
            call = connection.start(request, payload, keep_events=progress is not None)
        except WireError as exc:
            raise self._lost(exc) from None
        try:
            if progress is not None:
                for event in call.events():
                    progress(event)
            return dict(call.result())
        except KeyboardInterrupt:
            self._stop(call)
            raise
        except WireError as exc:
            if exc.code == "connection_lost":
                raise self._lost(exc) from None
            raise _local_error(exc.code, exc.message, exc.details) from None

    def _connection(self) -> Any:
        if self.connection is None:
            self.connection = _open(self.path)
        return self.connection

    def _stop(self, call: Any) -> None:
        """Ctrl-C: ask serve to stop the request (a watch, a subscription, a run) without waiting
        for its answer; the process ends and its connection with it."""
        import contextlib
        import threading

        def send() -> None:
            with contextlib.suppress(Exception):
                self.connection.start("cancel", {"id": call.id}, keep_events=False)

        # Never hang on the way out: the interrupted thread may have left the connection's lock
        # to the reader, or serve may be too slow to take the frame; the cancel is a courtesy.
        sender = threading.Thread(target=send, name="swamp-cancel", daemon=True)
        sender.start()
        sender.join(timeout=2)

    def _lost(self, exc: Any) -> SwampError:
        refusal = exc.details.get("refusal")
        if isinstance(refusal, dict) and isinstance(refusal.get("code"), str):  # serve turned it away
            return _local_error(refusal["code"], str(refusal.get("message")), refusal.get("details") or {})
        return _unavailable(
            f"The connection to swamp serve at {self.path} ended before it answered "
            f"({exc.message}); see whether the request took effect (swamp --connect {self.path} "
            "workflow history) before you send it again",
            self.path,
        )


def _text(value: Any) -> Any:
    """A payload field as a frame carries it: the bytes of a message (signal's payloadText) as
    text, refused here as the local command refuses them when they are not UTF-8."""
    if not isinstance(value, bytes):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        from ..domain.waits import parse_payload

        parse_payload(value)  # raises payload_malformed, as answering here would
        raise


def _open(path: str) -> Any:
    """Connect to PATH and check who serves it (ACCESS-082) before anything is sent."""
    import socket

    from ..client.client import peer_uid, trusted_serve
    from ..client.wire import Connection

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        from ..protocol.serve_sockets import MAX_SOCKET_PATH, too_long  # only on this error path

        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            raise _unavailable(f"Could not connect to swamp serve: {too_long(path)}", path) from None
        if isinstance(exc, PermissionError):
            fix = "ask the serve's owner to add you to its --socket-access group, then log in again"
        elif isinstance(exc, (FileNotFoundError, ConnectionRefusedError)):
            fix = "start it (swamp serve --socket PATH) or check the path"
        else:
            fix = "check the path and that swamp serve --socket runs there"
        raise _unavailable(f"Could not connect to swamp serve at {path}: {reason}; {fix}", path) from None
    try:
        owner = peer_uid(sock)
        if owner is None:
            owner = os.stat(path).st_uid
        if not trusted_serve(path, owner):  # what you send (a payload, a token) may go to anyone
            raise _local_error(
                "socket_not_owned",
                f"{path} is served by uid {owner}, which is neither you, root, nor the owner of the "
                "folder it is in; connect to a serve in a folder its account owns (such as "
                "/run/swamp)",
                {"path": path, "owner": owner},
            )
    except BaseException:
        sock.close()
        raise
    reader = sock.makefile("rb")

    def ended() -> tuple[str, dict[str, Any]]:
        return f"the connection to swamp serve at {path} closed", {"path": path}

    def abort() -> None:
        sock.shutdown(socket.SHUT_RDWR)

    return Connection(reader, sock.sendall, ended, abort)


def _unavailable(message: str, path: str) -> SwampError:
    from ..domain.errors import StoreUnavailable

    return StoreUnavailable(message, {"store": path})


def _local_error(code: str, message: str, details: dict[str, Any]) -> SwampError:
    """serve's refusal as the command would have raised it here: the same code, message, details
    and exit code (spec/schemas/errors.json)."""
    error = SwampError(message, details, code=code)
    error.exit_code = _exit_codes().get(code, error.exit_code)
    return error


def _exit_codes() -> dict[str, int]:
    import json
    from pathlib import Path

    registry = Path(__file__).resolve().parent.parent / "schemas" / "errors.json"
    try:
        codes = json.loads(registry.read_text(encoding="utf-8"))["codes"]
    except (OSError, ValueError, KeyError):
        return {}
    return {code: entry["exit"] for code, entry in codes.items()}
