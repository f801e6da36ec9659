"""Asking the core: every request the gateway makes goes through the request table (`handle`), in a
worker thread, so a slow store never blocks the event loop, or with `--connect` to the `swamp serve`
on a socket (through_serve.py); a refusal comes back as the core's own SwampError (code, message,
details), never rewritten."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool

from .limits import Limits
from .through_serve import ThroughServe

DEFAULT_RATE = 20.0  # requests a second from one client address, on average (GATEWAY-092)


@dataclass(frozen=True)
class Gateway:
    """What every route shares: where the store is (a repository, or a serve's socket), and the
    address people reach the gateway at."""

    repo_dir: str | None
    public_url: str | None = None
    # An answer continues the run when nothing else is open, as `signal --resume` does.
    resume: bool = True
    limits: Limits = field(default_factory=lambda: Limits.make(DEFAULT_RATE))
    # --connect: every request goes to this serve instead (GATEWAY-008); no repository is read.
    serve: ThroughServe | None = None
    # gateway.routes from --config (with --connect), and the folder their {file: PATH} are read from.
    routes: dict[str, Any] | None = None
    routes_dir: str | None = None

    async def ask(self, request_type: str, payload: dict[str, Any]) -> dict[str, Any]:
        if self.serve is not None:
            answer: dict[str, Any] = await run_in_threadpool(self.serve.ask, request_type, payload)
            return answer
        from ..protocol.requests import handle

        body = {**payload, **({"repoDir": self.repo_dir} if self.repo_dir else {})}
        result: dict[str, Any] = await run_in_threadpool(handle, request_type, body, None)
        return result
