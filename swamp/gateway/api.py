"""JSON for programs (GATEWAY-050..069): answer a wait, or read it, with its token.

    POST /v1/waits/{waitId}/signal   Authorization: Bearer <token>, the payload as the body
    GET  /v1/waits/{waitId}          Authorization: Bearer <token>

Both are the core's requests (`workflow.signal` with `token`, `workflow.link.show`), so every
check, refusal and audit entry is the core's; the status is statuses.py's. The token is only ever
in the Authorization header: never in a log, an answer or a path.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..domain.errors import SwampError
from .inward import Gateway
from .limits import API_BODY_LIMIT, REFUSED_TOKEN_DELAY, BodyTimeout, BodyTooLarge, read_body, retry_after
from .statuses import error_response, refusal

# What GET /v1/waits/{waitId} shows of a wait: what a caller needs to answer it, nothing of the
# repository's inside (its hooks' commands, other permissions, the commands to type).
SHOWN = (
    "waitId",
    "workflowName",
    "runId",
    "jobName",
    "stepName",
    "description",
    "status",
    "openedAt",
    "deadline",
    "secondsLeft",
    "expired",
    "schema",
    "examplePayload",
    "receipt",
)
PERMISSION_SHOWN = ("id", "state", "expiresAt", "uses", "usesLeft", "grantedBy", "grantedAt")


def routes(gateway: Gateway) -> list[BaseRoute]:
    async def signal(request: Request) -> Response:
        return await answer(gateway, request)

    async def show(request: Request) -> Response:
        return await show_wait(gateway, request)

    return [
        Route("/v1/waits/{wait_id}/signal", signal, methods=["POST"]),
        Route("/v1/waits/{wait_id}", show, methods=["GET"]),
    ]


def client_of(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"


def note(request: Request, code: str) -> None:
    """What the access log says of this request's outcome (server.py): a code, never a token."""
    request.state.code = code


def bearer(request: Request) -> str | None:
    """The token of `Authorization: Bearer <token>`, or None when there is none."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def missing_token(request: Request) -> Response:
    note(request, "permission_invalid")
    return error_response(
        "permission_invalid",
        "This request needs the wait's token: send it as `Authorization: Bearer swp_...` (from "
        "`swamp workflow wait grant` or `wait link`)",
        {"reason": "missing"},
        headers={"WWW-Authenticate": 'Bearer realm="swamp"'},
        status=401,
    )


async def admitted(gateway: Gateway, request: Request) -> tuple[str | None, Response | None]:
    """The bearer token when the client may present one now; else the response that refuses it
    (GATEWAY-051, GATEWAY-092..094): 401 without a token, 429 past a rate."""
    client = client_of(request)
    limits = gateway.limits
    for wait in (limits.client_wait(client), limits.refused_wait(client)):
        if wait > 0:
            return None, too_many(request, wait)
    token = bearer(request)
    if token is None:
        return None, missing_token(request)
    wait = limits.token_wait(token)
    if wait > 0:
        return None, too_many(request, wait)
    return token, None


def too_many(request: Request, seconds: float) -> Response:
    note(request, "too_many_requests")
    after = retry_after(seconds)
    return error_response(
        "too_many_requests",
        f"Too many requests from here; try again in {after} s",
        {"retryAfter": int(after)},
        headers={"Retry-After": after},
    )


async def refused(gateway: Gateway, request: Request, exc: SwampError) -> Response:
    """The core's refusal; a token it refused costs the client one of its refusals and is answered
    a moment later, so guessing tokens is slow (GATEWAY-094)."""
    note(request, exc.code)
    if exc.code == "permission_invalid":
        gateway.limits.refused(client_of(request))
        await asyncio.sleep(REFUSED_TOKEN_DELAY)
    return refusal(exc)


async def answer(gateway: Gateway, request: Request) -> Response:
    """POST /v1/waits/{waitId}/signal (GATEWAY-050)."""
    token, refusal_response = await admitted(gateway, request)
    if refusal_response is not None:
        return refusal_response
    assert token is not None
    try:
        body = await read_body(request, API_BODY_LIMIT)
    except BodyTooLarge as exc:
        note(request, "payload_too_large")
        return error_response(
            "payload_too_large",
            f"The body is over {exc.limit} bytes; a payload is at most 16384 bytes of UTF-8 JSON",
            {"limit": exc.limit},
            headers={"Connection": "close"},
        )
    except BodyTimeout:
        note(request, "invalid_request")
        return error_response(
            "invalid_request",
            "The body took too long to arrive; send it again",
            {},
            headers={"Connection": "close"},
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        note(request, "payload_malformed")
        return error_response(
            "payload_malformed", "The body is not UTF-8 text; send the payload as UTF-8 JSON", {}
        )
    payload: dict[str, Any] = {
        "waitId": request.path_params["wait_id"],
        "payloadText": text,
        "token": token,
    }
    if gateway.resume:
        payload["resume"] = True
    try:
        result = await gateway.ask("workflow.signal", payload)
    except SwampError as exc:
        return await refused(gateway, request, exc)
    note(request, "accepted")
    return JSONResponse(receipt(result), headers={"Cache-Control": "no-store"})


def receipt(result: dict[str, Any]) -> dict[str, Any]:
    """The `workflow.signal` result, its continued run shown by its ID and status only: the bearer
    of a token answers one wait, and sees nothing else of the run (GATEWAY-050)."""
    run = result.get("run")
    if isinstance(run, dict):
        result = {**result, "run": {key: run[key] for key in ("id", "status") if key in run}}
    return result


async def show_wait(gateway: Gateway, request: Request) -> Response:
    """GET /v1/waits/{waitId} (GATEWAY-053): the wait the token is a permission of."""
    token, refusal_response = await admitted(gateway, request)
    if refusal_response is not None:
        return refusal_response
    assert token is not None
    wait_id = request.path_params["wait_id"]
    try:
        found = await gateway.ask("workflow.link.show", {"token": token})
        if found["permission"]["waitId"] != wait_id:
            from ..domain.permissions import refusal as token_refusal

            raise token_refusal("other_wait", wait_id)
    except SwampError as exc:
        return await refused(gateway, request, exc)
    note(request, "shown")
    wait = found["wait"]
    doc = {
        "wait": {key: wait[key] for key in SHOWN if key in wait},
        "permission": {
            key: found["permission"][key] for key in PERMISSION_SHOWN if key in found["permission"]
        },
    }
    return JSONResponse(doc, headers={"Cache-Control": "no-store"})
