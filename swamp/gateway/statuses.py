"""The one table from a core error code to an HTTP status (GATEWAY-052), used by every route of
the gateway: the JSON API, the pages and the webhooks answer the same code with the same status.

The body is always the core's error document (`{"error": {code, message, details}}`), never
rewritten: the status only tells an HTTP client what kind of refusal it is."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from ..domain.errors import SwampError

STATUSES: dict[str, int] = {
    # the request itself is wrong
    "invalid_request": 400,
    "usage_error": 400,
    "payload_malformed": 400,
    "payload_invalid": 422,
    "payload_too_large": 413,
    # who is asking
    "permission_invalid": 403,
    "answerer_not_allowed": 403,
    "permission_denied": 403,
    # what is asked about
    "wait_not_found": 404,
    "run_not_found": 404,
    "step_not_found": 404,
    "wait_ambiguous": 409,
    "wait_settled": 409,
    "wait_closed": 409,
    "signal_held": 409,
    "run_not_suspended": 409,
    "run_terminal": 409,
    "step_not_waiting": 409,
    "wait_expired": 410,
    "approval_expired": 410,
    # try again later
    "claim_timeout": 503,
    "store_busy": 503,
    "store_unavailable": 503,
    "storage_error": 503,
    "shutting_down": 503,
    "too_many_requests": 429,
    # the gateway's repository or store is not what it should be: its operator fixes it
    "settings_invalid": 500,
    "repo_not_found": 500,
    "store_schema_mismatch": 500,
}

# Statuses that ask the client to come back: Retry-After, in seconds (GATEWAY-052).
RETRY_AFTER: dict[int, int] = {503: 2, 429: 1}


def status_for(code: str) -> int:
    """The HTTP status of a core error code; anything not in the table is 500."""
    return STATUSES.get(code, 500)


def error_response(
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
    status: int | None = None,
) -> JSONResponse:
    """The core's error document, `{"error": {code, message, details}}`, with its status (`status`
    only for a refusal the gateway makes itself: 401 for a missing token)."""
    status = status or status_for(code)
    sent = {"Cache-Control": "no-store", **(headers or {})}
    if status in RETRY_AFTER and "Retry-After" not in sent:
        sent["Retry-After"] = str(RETRY_AFTER[status])
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return JSONResponse(body, status_code=status, headers=sent)


def refusal(exc: SwampError, *, headers: dict[str, str] | None = None) -> JSONResponse:
    """A core refusal as it is: its code, message and details, never rewritten."""
    doc = exc.to_dict()
    return error_response(doc["code"], doc["message"], doc.get("details"), headers=headers)
