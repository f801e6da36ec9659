"""The gateway's ASGI app: its routes, gathered from the modules that own them."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .inward import Gateway


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})


def build_app(gateway: Gateway) -> Starlette:
    from . import api, pages, webhooks

    routes: list[BaseRoute] = [Route("/healthz", healthz, methods=["GET"])]
    routes += api.routes(gateway) + pages.routes(gateway) + webhooks.routes(gateway)
    return Starlette(routes=routes)
