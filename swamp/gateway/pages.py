"""One-time links for people (GATEWAY-020..049): `GET /a/<token>` shows the wait and a form made
from its schema (forms.py), `POST /a/<token>` sends the answer as `workflow.signal` with the token.

The page holds no rule of its own: which link answers what is `workflow.link.show`, whether an
answer fits is the core's schema check, whether the link may still answer is the core's permission
check. The page only shows, reads the form, and puts the core's refusals beside their fields.

Every page is rendered by Jinja2 with autoescape on (a wait's description and a schema's titles are
written by whoever wrote the workflow, and its payload by whoever answered), sent with headers that
keep the token in the URL out of caches and referrers, and has no script at all (the CSP says so).
A POST carries a form token bound to the link (an HMAC of its permission ID under a secret drawn
when the gateway starts), so a page elsewhere cannot post an answer through a person's browser.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import hmac
import json
import secrets
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl

from jinja2 import Environment, PackageLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from ..domain.errors import SwampError
from . import forms
from .api import client_of, note
from .inward import Gateway
from .limits import MAX_BODY, REFUSED_TOKEN_DELAY, BodyTimeout, BodyTooLarge, read_body, retry_after
from .statuses import status_for

CSRF_FIELD = "_csrf"

HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    # No script at all; the one stylesheet is ours; a form posts only back here; no framing.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}
# A form with more fields than this is refused (413) before it is read into a payload.
MAX_FORM_FIELDS = 5000

# What a closed link (or wait) shows instead of the form, and the status each answers with.
CLOSED_STATUS = {"answered": 409, "settled": 409, "expired": 410, "revoked": 403}


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("swamp.gateway", "templates"),
        autoescape=True,  # everything printed is escaped: descriptions, titles and payloads are not ours
        trim_blocks=True,
        lstrip_blocks=True,
    )


def csrf_token(secret: bytes, permission_id: str) -> str:
    return hmac.new(secret, permission_id.encode("utf-8"), hashlib.sha256).hexdigest()


def csrf_ok(secret: bytes, permission_id: str, sent: str | None) -> bool:
    return sent is not None and hmac.compare_digest(csrf_token(secret, permission_id), sent)


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


def relative(seconds: float) -> str:
    """'in 2 hours 5 minutes' or '3 minutes ago': the two largest units, rounded down."""
    left = abs(int(seconds))
    parts: list[str] = []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if left >= size or (unit == "second" and not parts):
            parts.append(_plural(left // size, unit))
            left %= size
        if len(parts) == 2:
            break
    parts = [p for p in parts if not p.startswith("0 ")] or parts[:1]
    text = " ".join(parts)
    return f"in {text}" if seconds >= 0 else f"{text} ago"


def absolute(instant: str) -> str:
    try:
        when = dt.datetime.fromisoformat(instant.replace("Z", "+00:00")).astimezone(dt.UTC)
    except ValueError:
        return instant
    return when.strftime("%Y-%m-%d %H:%M UTC")


def closed_state(link: dict[str, Any]) -> tuple[str, str, str] | None:
    """(kind, headline, why) when the link can no longer answer its wait; None when it can."""
    permission, wait = link["permission"], link["wait"]
    receipt = wait.get("receipt")
    state, status = permission.get("state"), wait.get("status")
    if receipt is not None:
        if permission.get("id") and receipt.get("permissionId") == permission.get("id"):
            why = f"This link was used at {absolute(receipt['receivedAt'])}; its answer is below."
        else:
            why = f"Someone answered this wait at {absolute(receipt['receivedAt'])}; the answer is below."
        return "answered", "Already answered", why
    if state == "revoked":
        by = permission.get("revokedBy") or "its granter"
        at = absolute(permission["revokedAt"]) if permission.get("revokedAt") else "an earlier time"
        return "revoked", "This link was revoked", f"{by} revoked it at {at}."
    if state == "expired":
        return "expired", "This link has expired", f"It expired at {absolute(permission['expiresAt'])}."
    if status == "expired":
        return "expired", "The deadline has passed", f"The wait's deadline was {absolute(wait['deadline'])}."
    if state not in ("live", None) or status != "open":
        what = (status or "closed").replace("_", " ")
        return "settled", "This wait is closed", f"The wait is {what}: it takes no answer now."
    return None


def continuation_text(result: dict[str, Any]) -> str:
    """How the run went on after the answer (GATEWAY-025); through a serve, as serve's
    --auto-continue did or did not continue it (`autoResume`, GATEWAY-008)."""
    auto = result.get("autoResume")
    if isinstance(auto, dict):
        if auto.get("resumed"):
            return f"The run continued; it is now {auto.get('runStatus')}."
        if auto.get("waitIds"):
            return f"The run waits for {_plural(len(auto['waitIds']), 'other answer')} before it goes on."
        return "The run stays suspended; it goes on once it is resumed."
    if "continued" not in result:
        return "The run stays suspended until someone resumes it (swamp workflow resume)."
    if result["continued"]:
        status = (result.get("run") or {}).get("status") or result.get("runStatus")
        return f"The run continued; it is now {status}."
    still = result.get("stillOpen") or []
    return (
        f"The run waits for {_plural(len(still), 'other answer')} before it goes on."
        if still
        else "The run stays suspended; it goes on once it is resumed."
    )


class Pages:
    def __init__(self, gateway: Gateway, secret: bytes | None = None) -> None:
        self.gateway = gateway
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        self.env = _environment()
        self.resume = gateway.resume  # continue the run on an answer when nothing else is open

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def _wait_context(self, link: dict[str, Any]) -> dict[str, Any]:
        wait = link["wait"]
        deadline = {
            "absolute": absolute(wait.get("deadline") or ""),
            "relative": relative(float(wait.get("secondsLeft") or 0)),
        }
        return {"wait": wait, "permission": link["permission"], "deadline": deadline}

    def problem(self, exc: SwampError) -> HTMLResponse:
        unknown = exc.code == "permission_invalid" and exc.details.get("reason") == "unknown"
        headline = "This link is not valid" if unknown else "The answer could not be handled"
        status = 404 if unknown else status_for(exc.code)
        return self.render(
            "problem.html", status, headline=headline, message=exc.message, error_code=exc.code
        )

    def closed(self, link: dict[str, Any], kind: str, headline: str, why: str) -> HTMLResponse:
        wait = link["wait"]
        return self.render(
            "closed.html",
            CLOSED_STATUS[kind],
            headline=headline,
            why=why,
            receipt=wait.get("receipt"),
            sent=_shown_json(wait["payload"]) if "payload" in wait else None,
            **self._wait_context(link),
        )

    def form(
        self,
        link: dict[str, Any],
        status: int = 200,
        submitted: forms.Form | None = None,
        errors: dict[str, list[str]] | None = None,
        problems: list[str] | None = None,
    ) -> HTMLResponse:
        fields = forms.build_form(link["wait"].get("schema"), submitted)
        forms.attach_errors(fields, errors or {})
        return self.render(
            "answer.html",
            status,
            fields=fields,
            problems=problems or [],
            csrf=csrf_token(self.secret, link["permission"]["id"]),
            answering=True,  # the deadline is shown while it still matters
            **self._wait_context(link),
        )

    async def link(self, request: Request, token: str) -> dict[str, Any]:
        """The link's permission and wait; a token swamp does not know costs the client one of its
        refusals and is answered a moment later, as on the JSON API (GATEWAY-094)."""
        try:
            return await self.gateway.ask("workflow.link.show", {"token": token})
        except SwampError as exc:
            note(request, exc.code)
            if exc.code == "permission_invalid":
                self.gateway.limits.refused(client_of(request))
                await asyncio.sleep(REFUSED_TOKEN_DELAY)
            raise

    def too_many(self, request: Request, token: str) -> Response | None:
        """A page past the gateway's rates (per client, refused tokens, per token: GATEWAY-092..094)."""
        limits, client = self.gateway.limits, client_of(request)
        for wait in (limits.client_wait(client), limits.refused_wait(client), limits.token_wait(token)):
            if wait > 0:
                note(request, "too_many_requests")
                after = retry_after(wait)
                page = self.render(
                    "problem.html",
                    429,
                    headline="Too many requests",
                    message=f"Too many requests from here; try again in {after} seconds.",
                    error_code="too_many_requests",
                )
                page.headers["Retry-After"] = after
                return page
        return None

    async def open_link(self, request: Request, token: str) -> dict[str, Any] | Response:
        """The link that can still answer, or the page said instead: too many requests, a token
        swamp does not know, or what happened to a link that can no longer answer (a second POST,
        a reload, of a used link included: no form)."""
        refused = self.too_many(request, token)
        if refused is not None:
            return refused
        try:
            link = await self.link(request, token)
        except SwampError as exc:
            return self.problem(exc)
        closed = closed_state(link)
        if closed is not None:
            return self.closed(link, *closed)
        return link

    async def get(self, request: Request) -> Response:
        link = await self.open_link(request, request.path_params["token"])
        return link if isinstance(link, Response) else self.form(link)

    async def post(self, request: Request) -> Response:
        token = request.path_params["token"]
        link = await self.open_link(request, token)
        if isinstance(link, Response):
            return link
        try:
            submitted = await read_form_fields(request)
        except (BodyTooLarge, TooManyFields) as exc:
            note(request, "payload_too_large")
            why = (
                f"The form has more than {MAX_FORM_FIELDS} fields, too many"
                if isinstance(exc, TooManyFields)
                else "The form is too large"
            )
            return self.problem(SwampError(f"{why} to be an answer", code="payload_too_large"))
        except BodyTimeout:
            headline, why = "The form took too long to arrive", "Open the link again and send the answer."
            return self.render("problem.html", 408, headline=headline, message=why, error_code=None)
        sent_csrf = (submitted.get(CSRF_FIELD) or [""])[0]
        if not csrf_ok(self.secret, link["permission"]["id"], sent_csrf):
            return self.form(
                link,
                403,
                submitted,
                problems=[
                    "This form is out of date or was not sent from its page: check the answer "
                    "below and send it again."
                ],
            )
        schema = link["wait"].get("schema")
        reading = forms.read_form(schema, submitted)
        request_body: dict[str, Any] = {
            "waitId": link["permission"]["waitId"],
            "token": token,
            "payload": reading.payload,
        }
        if reading.errors:  # a JSON field that does not parse: check the rest, send nothing
            request_body["check"] = True
        elif self.resume:
            request_body["resume"] = True
        try:
            result = await self.gateway.ask("workflow.signal", request_body)
        except SwampError as exc:
            note(request, exc.code)
            return await self.refused(request, token, link, submitted, reading.errors, exc)
        if reading.errors:
            return self.form(link, 422, submitted, reading.errors)
        return self.render(
            "receipt.html",
            receipt=result["signal"],
            sent=_shown_json(result.get("payload")),
            continuation=continuation_text(result),
            **self._wait_context(link),
        )

    async def refused(
        self,
        request: Request,
        token: str,
        link: dict[str, Any],
        submitted: forms.Form,
        parse_errors: dict[str, list[str]],
        exc: SwampError,
    ) -> Response:
        if exc.code == "payload_invalid":
            fields = forms.build_form(link["wait"].get("schema"), submitted)
            by_field, general = forms.errors_by_field(fields, exc.details.get("errors") or [])
            by_field.update(parse_errors)  # text that is no JSON says so, not "is required"
            return self.form(link, 422, submitted, by_field, general)
        if exc.code in ("payload_malformed", "payload_too_large"):
            return self.form(link, status_for(exc.code), submitted, parse_errors, [exc.message])
        if exc.code in ("wait_settled", "wait_expired", "permission_invalid"):
            try:  # answered, revoked or expired meanwhile: show what happened, as a GET would
                link = await self.link(request, token)
            except SwampError as again:
                return self.problem(again)
            closed = closed_state(link)
            if closed is not None:
                return self.closed(link, *closed)
        return self.problem(exc)


class TooManyFields(Exception):
    pass


async def read_form_fields(request: Request) -> dict[str, list[str]]:
    """A form-encoded body (what a browser sends), each name with its values in order; the body is
    capped (limits.py) before it is parsed, and so is the number of its fields (TooManyFields)."""
    body = await read_body(request, MAX_BODY)
    fields: dict[str, list[str]] = {}
    text = body.decode("utf-8", errors="replace")
    try:
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS, errors="replace")
    except ValueError:  # parse_qsl's "Max number of fields exceeded"
        raise TooManyFields() from None
    for name, value in pairs:
        fields.setdefault(name, []).append(value)
    return fields


def _shown_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


async def stylesheet(request: Request) -> Response:
    css = resources.files("swamp.gateway").joinpath("static/answer.css").read_text("utf-8")
    return Response(
        css,
        media_type="text/css",
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


def routes(gateway: Gateway) -> list[BaseRoute]:
    pages = Pages(gateway)
    return [
        Route("/static/answer.css", stylesheet, methods=["GET"]),
        Route("/a/{token}", pages.get, methods=["GET"]),
        Route("/a/{token}", pages.post, methods=["POST"]),
    ]
