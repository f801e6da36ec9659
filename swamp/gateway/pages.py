"""Routes of the gateway: pages (see swamp/gateway/__init__.py)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from .inward import Gateway


def routes(gateway: Gateway) -> list[BaseRoute]:
    return []
