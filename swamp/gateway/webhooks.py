"""Provider webhooks routed to a wait: `POST /hooks/<name>` (GATEWAY-070..089).

The route (`.swamp.yaml` `gateway.routes.<name>`, swamp/domain/webhook_routes.py) verifies the
delivery's signature over the raw body before anything else is read from it, finds the wait and
builds the payload with its expressions, and signals through the request table (`workflow.signal`)
as the gateway's own account, so the core's rules, refusal codes and audit entries apply unchanged.

A replayed delivery is recognised by the store, not by memory: a wait takes one signal, the
delivery's ID (the route's `delivery`, by default the provider's own) travels with it and is kept on
the receipt, and the core's `wait_settled` refusal says whether a later signal is that same
delivery (`sameDelivery`, WAIT-087). The same delivery again (a provider's retry, a replay) is
answered with the first receipt and nothing signalled, whatever its payload would give now; another
delivery is refused. A delivery without an ID falls back on the payload: the same payload to the
same wait is the first delivery again (`samePayload`). Either way it holds across restarts and
across several gateways on one store.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..domain.errors import ExpressionError, InvalidRequest, SwampError
from ..domain.webhook_routes import Route as HookRoute
from ..domain.webhook_routes import RouteNotFound, SignatureInvalid, load_routes
from .inward import Gateway
from .signatures import slack_problem, verify_github, verify_hmac_sha256

# A route's own refusals, made before the core is asked: their statuses (GATEWAY-072..077).
OWN_STATUSES = {"route_not_found": 404, "signature_invalid": 401, "expression_error": 422}


def error_response(error: SwampError) -> Response:
    """The error document with the status of GATEWAY-052's table (statuses.py), or the route's own."""
    from .statuses import error_response as document

    return document(error.code, error.message, error.details, status=OWN_STATUSES.get(error.code))


def routes(gateway: Gateway) -> list[BaseRoute]:
    table = load_routes(_route_settings(gateway), gateway.routes_dir or gateway.repo_dir)

    async def receive(request: Request) -> Response:
        from .api import client_of, note, too_many

        wait = gateway.limits.client_wait(client_of(request))
        if wait > 0:
            return too_many(request, wait)
        try:
            answer = await deliver(gateway, table, request)
        except SwampError as error:
            note(request, error.code)
            return error_response(error)
        note(request, "replayed" if answer.get("replayed") else "accepted")
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    return [Route("/hooks/{name}", receive, methods=["POST"])]


def _route_settings(gateway: Gateway) -> dict[str, Any] | None:
    """The repository's `gateway.routes` (none without a repository: a store URL alone has no
    settings file), or with --connect those of --config (GATEWAY-016)."""
    if gateway.serve is not None:
        return gateway.routes
    from ..domain.errors import RepoNotFound
    from ..store.repo import find_repo
    from ..store.settings import load_settings

    try:
        layout = find_repo(gateway.repo_dir)
    except RepoNotFound:
        return None
    return load_settings(layout).gateway_routes


async def deliver(gateway: Gateway, table: dict[str, HookRoute], request: Request) -> dict[str, Any]:
    name = request.path_params["name"]
    route = table.get(name)
    if route is None:
        raise RouteNotFound(
            f"No webhook route {name!r}; the routes are `gateway.routes` in .swamp.yaml"
            + (f" ({', '.join(sorted(table))})" if table else " (none are set)"),
            {"route": name},
        )
    body = await _read_capped(request)
    headers = {key.lower(): value for key, value in request.headers.items()}
    problem = signature_problem(route, body, headers)
    if problem is not None:
        raise SignatureInvalid(
            f"Webhook route {name}: {problem}; nothing was delivered. Check that the provider and the "
            "gateway share the route's secret",
            {"route": name, "verify": route.verify},
        )
    document = parse_body(body, headers.get("content-type", ""))
    if route.verify == "slack" and isinstance(document, dict) and document.get("type") == "url_verification":
        # Slack's Events API checks a new Request URL with this signed handshake: echo it, deliver nothing.
        return {"challenge": document.get("challenge")}
    try:
        delivery = route.delivery_id(document, headers)
    except ExpressionError as exc:
        raise ExpressionError(
            f"Webhook route {name}: {exc}; nothing was delivered. Check the route's `delivery`",
            {"route": name, "key": "delivery", **(exc.details or {})},
        ) from None
    if delivery is not None:
        request.state.delivery = delivery  # the access log names it (GATEWAY-085)
    try:
        address = route.address(document, headers)
        payload = route.build_payload(document, headers)
    except ExpressionError as exc:
        raise ExpressionError(
            f"Webhook route {name}: {exc}; this delivery does not name a wait the route can answer",
            {"route": name, **(exc.details or {})},
        ) from None
    signal = {**address, "payload": payload, "resume": route.resume and gateway.resume}
    if delivery is not None:
        signal["deliveryId"] = delivery
    try:
        result = await gateway.ask("workflow.signal", signal)
    except SwampError as error:
        replay = _replayed(error, delivery)
        if replay is None:
            raise
        return {"route": name, "replayed": True, **replay}
    answer: dict[str, Any] = {
        key: result[key] for key in ("waitId", "runId", "signal", "runStatus") if key in result
    }
    if result.get("held"):
        answer["held"] = True
    return {"route": name, "replayed": False, **answer}


def _replayed(error: SwampError, delivery: str | None) -> dict[str, Any] | None:
    """The first receipt, when the refusal says the wait already took this very delivery: the
    delivery with this ID (GATEWAY-083), or, for a delivery without one, this payload (GATEWAY-079)."""
    details = error.details or {}
    same = details.get("sameDelivery") if delivery is not None else details.get("samePayload")
    if not same:
        return None
    if error.code == "wait_settled" and isinstance(details.get("receipt"), dict):
        return {"waitId": details["waitId"], "signal": details["receipt"]}
    if error.code == "signal_held":
        return {
            "waitId": details["waitId"],
            "held": True,
            "signal": {"id": details["signalId"], "heldAt": details["heldAt"]},
        }
    return None


def signature_problem(route: HookRoute, body: bytes, headers: dict[str, str]) -> str | None:
    """None when the delivery is signed with the route's secret; else what is wrong."""
    if route.verify == "github":
        given = headers.get("x-hub-signature-256")
        if verify_github(route.secret, body, given):
            return None
        return (
            "X-Hub-Signature-256 is missing" if not given else "X-Hub-Signature-256 does not match the body"
        )
    if route.verify == "slack":
        from ..store.clock import SystemClock

        now = SystemClock().now().timestamp()
        return slack_problem(
            route.secret,
            body,
            headers.get("x-slack-signature"),
            headers.get("x-slack-request-timestamp"),
            now,
        )
    assert route.header is not None
    given = headers.get(route.header.lower())
    if verify_hmac_sha256(route.secret, body, given, route.prefix):
        return None
    return f"{route.header} is missing" if not given else f"{route.header} does not match the body"


async def _read_capped(request: Request) -> bytes:
    from .limits import MAX_BODY, BodyTimeout, BodyTooLarge, read_body

    try:
        return await read_body(request, MAX_BODY)
    except BodyTooLarge as exc:
        from ..domain.waits import PayloadTooLarge

        raise PayloadTooLarge(
            f"The delivery is over {exc.limit} bytes, the most a webhook route reads; nothing was delivered",
            {"bytes": exc.seen, "limit": exc.limit},
        ) from None
    except BodyTimeout:
        raise InvalidRequest("The delivery took too long to arrive; nothing was delivered") from None


def parse_body(body: bytes, content_type: str) -> Any:
    """JSON, or a form (Slack's slash commands; a `payload` field holding JSON, as Slack's
    interactions and GitHub's form deliveries send, is parsed); an empty body is null."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest("The delivery's body is not UTF-8 text; nothing was delivered") from None
    if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
        fields: dict[str, Any] = dict(parse_qsl(text, keep_blank_values=True))
        if isinstance(fields.get("payload"), str):
            with contextlib.suppress(ValueError):
                fields["payload"] = json.loads(fields["payload"])
        return fields
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise InvalidRequest(
            "The delivery's body is neither JSON nor a form; nothing was delivered. Have the provider send "
            "application/json"
        ) from None
