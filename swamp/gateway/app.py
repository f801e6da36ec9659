"""The gateway's ASGI app: its routes, gathered from the modules that own them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .inward import Gateway
from .through_serve import UNREACHABLE


def health(gateway: Gateway) -> Callable[[Request], Awaitable[Response]]:
    """GET /healthz: the gateway is up (GATEWAY-001); with --connect, only while its serve answers
    (GATEWAY-015), so a supervisor or a load balancer sees a gateway that can answer nothing."""

    async def healthz(request: Request) -> Response:
        if gateway.serve is not None and not await run_in_threadpool(gateway.serve.reachable):
            from .statuses import error_response

            request.state.code = "store_unavailable"
            return error_response("store_unavailable", UNREACHABLE)
        return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})

    return healthz


def build_app(gateway: Gateway) -> Starlette:
    from . import api, pages, webhooks

    routes: list[BaseRoute] = [Route("/healthz", health(gateway), methods=["GET"])]
    routes += api.routes(gateway) + pages.routes(gateway) + webhooks.routes(gateway)
    return Starlette(routes=routes)
