"""The gateway process: bind, say where it listens, serve until SIGTERM or Ctrl-C."""

from __future__ import annotations

import json
import socket
import sys

from ..domain.errors import UsageError
from .inward import Gateway


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
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(listen: str, *, repo_dir: str | None, public_url: str | None) -> int:
    import uvicorn

    from .app import build_app

    host, port = parse_listen(listen)
    sock = bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    gateway = Gateway(repo_dir=repo_dir, public_url=public_url)
    config = uvicorn.Config(build_app(gateway), log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    # One line a supervisor or a test reads to learn the address (port 0 picks one).
    sys.stdout.write(json.dumps({"listening": f"http://{shown_host}:{bound_port}"}) + "\n")
    sys.stdout.flush()
    server.run(sockets=[sock])  # uvicorn stops gracefully on SIGTERM and SIGINT
    return 0
