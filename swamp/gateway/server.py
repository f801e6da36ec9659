"""The gateway process: bind, say where it listens, log each request, serve until SIGTERM or Ctrl-C.

The access log is one JSON object a request on stderr (GATEWAY-004): never a token, so the path is
logged with any token in it replaced by `<token>`, and neither the query string nor a header is.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..domain.errors import UsageError
from .inward import DEFAULT_RATE, Gateway

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# A token, or whatever follows /a/ (a link's page: a mistyped token is still a secret's neighbour).
SECRET_IN_PATH = re.compile(r"swp_[A-Za-z0-9]*|(?<=/a/)[^/]+")
# Limits on what one connection may cost (GATEWAY-091): the request line and headers together,
# how long an idle keep-alive connection is kept, how many connections are served at once (past
# it, 503), and how many wait to be accepted.
MAX_HEADERS_BYTES = 16 * 1024
KEEP_ALIVE_SECONDS = 5
MAX_CONNECTIONS = 200
BACKLOG = 128


# A path is logged up to this many characters, then `...`: a request refused for its size
# (GATEWAY-091) must not cost the log what it was refused for.
MAX_LOGGED_PATH = 1024


def redact(path: str) -> str:
    """The path as the log shows it: tokens replaced (before it is cut, so no part of one shows)."""
    shown = SECRET_IN_PATH.sub("<token>", path)
    return shown if len(shown) <= MAX_LOGGED_PATH else shown[:MAX_LOGGED_PATH] + "..."


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets: [::1]:8080); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(
            f"--listen {text!r} is not HOST:PORT; give one such as 127.0.0.1:8080 or [::1]:8080",
            {"listen": text},
        )
    return host.strip("[]"), int(port)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"--listen {host}:{port}: cannot listen there ({exc.strerror}); choose another address or port",
            {"listen": f"{host}:{port}"},
        ) from None
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


class AccessLog:
    """ASGI middleware: one JSON line a request on stderr, once its answer is sent (GATEWAY-004)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            client = scope.get("client")
            entry: dict[str, Any] = {
                "at": _now(),
                "method": scope.get("method"),
                "path": redact(scope.get("path", "")),
                "status": status[0],
                "ms": round((time.monotonic() - started) * 1000, 1),
                "client": client[0] if client else None,
            }
            state = scope.get("state") or {}
            if state.get("code") is not None:
                entry["code"] = state["code"]
            if state.get("delivery") is not None:  # a webhook's delivery ID (GATEWAY-085): no secret
                entry["deliveryId"] = state["delivery"]
            write_log(entry)


class HeaderLimit:
    """ASGI middleware: a request whose line and headers pass MAX_HEADERS_BYTES is answered 431
    before any route sees it (GATEWAY-091). h11 bounds only headers still arriving; this bounds
    headers that arrived whole in one read too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
            size += sum(len(name) + len(value) + 4 for name, value in scope.get("headers") or ())
            if size > MAX_HEADERS_BYTES:
                from .statuses import error_response

                response = error_response(
                    "invalid_request",
                    f"The request line and headers are over {MAX_HEADERS_BYTES} bytes; send less",
                    {"limit": MAX_HEADERS_BYTES},
                    headers={"Connection": "close"},
                    status=431,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def headers_too_slow(client: str | None) -> None:
    """A connection closed because its request line and headers were too slow (GATEWAY-096)."""
    write_log({"at": _now(), "client": client, "closed": "headers_timeout"})


def not_http(client: str | None) -> None:
    """A request answered 400 because it is not HTTP the server can read (GATEWAY-017)."""
    write_log({"at": _now(), "client": client, "status": 400, "closed": "invalid_http"})


class JsonLogHandler(logging.Handler):
    """uvicorn's own messages as JSON lines in the access log's stream (GATEWAY-017), without
    the one `not_http` already says in its own words."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage().strip()
        if message == "Invalid HTTP request received.":
            return
        entry: dict[str, Any] = {"at": _now(), "level": record.levelname.lower(), "message": message}
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            entry["exception"] = f"{type(error).__name__}: {error}"
        write_log(entry)


def _log_through_json() -> None:
    # uvicorn.error and its other loggers propagate here: with log_config=None uvicorn gives
    # them no handler of their own.
    logger = logging.getLogger("uvicorn")
    logger.handlers = [JsonLogHandler()]
    logger.propagate = False
    logger.setLevel(logging.WARNING)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_log(entry: dict[str, Any]) -> None:
    try:
        sys.stderr.write(json.dumps(entry, ensure_ascii=False) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


@dataclass(frozen=True)
class Options:
    listen: str
    repo_dir: str | None = None
    public_url: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    resume: bool = True
    rate: float = DEFAULT_RATE
    trusted_proxies: str | None = None  # addresses whose X-Forwarded-For is believed
    connect: str | None = None  # a serve's socket: ask it, read no repository (GATEWAY-008)
    config: str | None = None  # with connect: a file holding `gateway:` settings (GATEWAY-016)


def setting_public_url(repo_dir: str | None) -> str | None:
    """`gateway.publicUrl` of the repository's .swamp.yaml, when there is one to read."""
    try:
        from ..app.context import App

        return App.shared(repo_dir).settings.public_url
    except Exception:  # noqa: BLE001 - no repository here (a store URL alone): no setting
        return None


def _repository(repo_dir: str | None) -> None:
    """The repository the gateway answers for, found before it listens (GATEWAY-007): without one
    every request would be refused, so the gateway does not start. A store address alone is not
    enough: answering a wait reads the repository too (its settings, hooks and workflows), so a
    gateway without it asks a serve that has it (--connect)."""
    from ..app.context import App
    from ..domain.errors import RepoNotFound

    try:
        App.shared(repo_dir)
    except RepoNotFound as exc:
        where = f"in {repo_dir}" if repo_dir else "in this folder or its parents"
        raise RepoNotFound(
            f"No swamp repository {where}, and the gateway answers from one: start it beside the "
            "repository (or with --repo-dir), or, as an account without it, in front of the swamp "
            "serve of an account that has it (swamp gateway --connect SOCKET, or SWAMP_CONNECT)",
            exc.details,
        ) from None


def _through_serve(options: Options) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """With --connect: the public URL and webhook routes of --config, if given (GATEWAY-016);
    the gateway reads no repository (GATEWAY-008)."""
    if options.repo_dir:
        raise UsageError(
            "--repo-dir names a repository on this machine; with --connect the gateway asks the serve, "
            "which answers from its own: leave out one of them",
            {},
        )
    if options.config is None:
        return None, None, None
    from .config_file import read_config

    return read_config(options.config)


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, which after a graceful stop on SIGTERM or SIGINT exits 0 instead of
        raising the signal again (GATEWAY-003: a supervisor sees a clean stop)."""

        announce: str = ""

        async def startup(self, sockets: Any = None) -> None:
            # The listening line once SIGTERM is handled (uvicorn catches it around startup): a
            # supervisor that reads it and stops the gateway at once sees a clean stop, exit 0.
            await super().startup(sockets=sockets)
            if self.announce and not self.should_exit:
                sys.stdout.write(self.announce)
                sys.stdout.flush()

        async def shutdown(self, sockets: Any = None) -> None:
            # Said when stopping begins, with what it still answers (GATEWAY-003): a stop that
            # takes its grace period shows why in the log.
            write_log({"at": _now(), "stopping": True, "inFlight": len(self.server_state.tasks)})
            await super().shutdown(sockets=sockets)

        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list):
                captured.clear()

    return Server


def serve(options: Options) -> int:
    import uvicorn

    from ..domain.settings import SettingsInvalid, public_url
    from .app import build_app
    from .connections import protocol_class
    from .limits import Limits

    if (options.certfile is None) != (options.keyfile is None):
        raise UsageError("--certfile and --keyfile go together: give both for TLS, or neither", {})
    url = options.public_url
    if url is not None:
        try:
            url = public_url(url, "--public-url")
        except SettingsInvalid as exc:
            raise UsageError(
                exc.message.replace(".swamp.yaml: ", ""), {"publicUrl": options.public_url}
            ) from None
    host, port = parse_listen(options.listen)
    if options.connect is not None:
        from .through_serve import ThroughServe

        config_url, routes, routes_dir = _through_serve(options)
        # No `resume` through a serve: it refuses one from another account (ACCESS-075); its
        # --auto-continue continues the run (GATEWAY-008).
        gateway = Gateway(
            repo_dir=None,
            public_url=url or config_url,
            resume=False,
            limits=Limits.make(options.rate),
            serve=ThroughServe(options.connect, write_log),
            routes=routes,
            routes_dir=routes_dir,
        )
    else:
        if options.config is not None:
            raise UsageError(
                "--config goes with --connect: beside a repository the gateway reads its settings from "
                ".swamp.yaml (gateway.publicUrl, gateway.routes)",
                {},
            )
        url = url or setting_public_url(options.repo_dir)
        _repository(options.repo_dir)
        gateway = Gateway(
            repo_dir=options.repo_dir, public_url=url, resume=options.resume, limits=Limits.make(options.rate)
        )
    sock = bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(
        AccessLog(HeaderLimit(build_app(gateway))),
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=options.trusted_proxies is not None,
        forwarded_allow_ips=options.trusted_proxies or "",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADERS_BYTES,
        limit_concurrency=MAX_CONNECTIONS,
        backlog=BACKLOG,
        ssl_certfile=options.certfile,
        ssl_keyfile=options.keyfile,
        # h11, the headers' time bounded (GATEWAY-095), and what it cannot read logged (GATEWAY-017)
        http=protocol_class(closed=headers_too_slow, refused=not_http),
        log_config=None,  # uvicorn's messages are JSON lines like the rest (GATEWAY-017)
        timeout_graceful_shutdown=10,
    )
    _log_through_json()
    try:
        server = _server_class()(config)
        config.load()  # reads the certificate now: a bad one is a usage error, before the line below
    except (OSError, ValueError) as exc:
        sock.close()
        raise UsageError(
            f"--certfile/--keyfile cannot be used: {exc}; give a PEM certificate and its key", {}
        ) from None
    scheme = "https" if options.certfile else "http"
    # One line a supervisor or a test reads to learn the address (port 0 picks one), written once
    # the server has started (Server.startup above).
    server.announce = json.dumps({"listening": f"{scheme}://{shown_host}:{bound_port}"}) + "\n"
    server.run(sockets=[sock])  # uvicorn stops gracefully on SIGTERM and SIGINT
    write_log({"at": _now(), "stopped": True})
    return 0
