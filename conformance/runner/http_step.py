"""An `http` step: one HTTP/1.1 request to a URL (normally a gateway a session started), its
response matched like any other output (conformance/FORMAT.md §11).

Only `http://` URLs. The runner sends exactly: the request line with the URL's path and query as
written, `Host` (the URL's authority), the step's headers in their order, `Content-Type` for a
`json` or `form` body unless the step names one, `Content-Length` when there is a body or the
method is not GET, HEAD, DELETE, OPTIONS or TRACE (`0` then), and `Connection: close`; nothing else
(no User-Agent, no Accept-Encoding), so the Node runner (conformance/node/http.mjs) sends the same
bytes. Redirects are not followed.
"""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus

from .matching import json_text, match

DEFAULT_HTTP_TIMEOUT = 30.0
NO_BODY_METHODS = ("GET", "HEAD", "DELETE", "OPTIONS", "TRACE")  # others send Content-Length: 0
_URL = re.compile(r"^http://([^/?#\s]+)([^#]*)(?:#.*)?$")
_TARGET = re.compile(r"^[\x21-\x7e]*$")
_AUTHORITY = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::([0-9]{1,5}))?$")
JSON_TYPE = "application/json"
FORM_TYPE = "application/x-www-form-urlencoded"


class HttpError(Exception):
    """The request could not be made or answered (refused, timed out, a bad URL after substitution)."""


@dataclass
class Request:
    method: str
    url: str
    headers: list[tuple[str, str]]  # the step's headers and an implied Content-Type, in order
    body: str

    def record(self) -> list[Any]:
        """What the step sent, for its digest (FORMAT.md §10): the headers sorted by name."""
        pairs = sorted([name, value] for name, value in self.headers)
        return ["http", self.method, self.url, pairs, self.body]


@dataclass
class Response:
    status: int
    reason: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: str = ""

    def header_map(self) -> dict[str, str]:
        """Lower-case name -> value; a repeated header's values joined with ", "."""
        out: dict[str, str] = {}
        for name, value in self.headers:
            key = name.lower()
            out[key] = f"{out[key]}, {value}" if key in out else value
        return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value)


def form_text(fields: dict[str, Any]) -> str:
    """application/x-www-form-urlencoded, fields in their order, a list as the field repeated:
    UTF-8, `A-Za-z0-9` and `-._~` as themselves, space as `+`, everything else `%XX` (upper case)."""
    parts = []
    for name, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            parts.append(f"{quote_plus(name, safe='')}={quote_plus(_text(item), safe='')}")
    return "&".join(parts)


def build_request(spec: dict[str, Any], raw_text: Any) -> Request:
    """The request an `http` mapping (already substituted) describes."""
    headers = [(name, _text(value)) for name, value in (spec.get("headers") or {}).items()]
    named = {name.lower() for name, _ in headers}
    body, kind = "", None
    if "json" in spec:
        body, kind = json_text(spec["json"]), JSON_TYPE
    elif "form" in spec:
        body, kind = form_text(spec["form"]), FORM_TYPE
    elif "body" in spec:
        body = raw_text(spec["body"])
    if kind is not None and "content-type" not in named:
        headers.append(("Content-Type", kind))
    return Request(spec.get("method", "GET"), spec["url"], headers, body)


def send(request: Request, timeout: float) -> Response:
    """Make the request; every wait (connecting, each read) gives up after `timeout` seconds."""
    found = _URL.match(request.url)
    if not found:
        raise HttpError(f"the URL {request.url!r} is not http://HOST[:PORT]/PATH (only http is supported)")
    authority, target = found.group(1), found.group(2) or "/"
    if not target.startswith("/") and not target.startswith("?"):
        raise HttpError(f"the URL {request.url!r} has no path after its host")
    target = target if target.startswith("/") else "/" + target
    if not _TARGET.match(target):
        raise HttpError(
            f"the path {target!r} has spaces, controls or non-ASCII characters; percent-encode them"
        )
    place = _AUTHORITY.match(authority)
    if not place:
        raise HttpError(f"the URL {request.url!r} has no usable HOST[:PORT]")
    host, port = place.group(1).strip("[]"), int(place.group(2) or 80)
    data = request.body.encode("utf-8")
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
        names = {name.lower() for name, _ in request.headers}
        if "host" not in names:
            conn.putheader("Host", authority)
        for name, value in request.headers:
            conn.putheader(name, value)
        if "content-length" not in names and (data or request.method not in NO_BODY_METHODS):
            conn.putheader("Content-Length", str(len(data)))
        if "connection" not in names:
            conn.putheader("Connection", "close")
        conn.endheaders(data if data else None)
        answer = conn.getresponse()
        body = answer.read()
        return Response(
            answer.status,
            answer.reason,
            list(answer.getheaders()),
            body.decode("utf-8", errors="replace"),
        )
    except TimeoutError:
        raise HttpError(f"no answer within {timeout:g} s (the step may set `timeout:`)") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise HttpError(f"{type(exc).__name__}: {exc}") from None
    finally:
        conn.close()


def problems(expect: dict[str, Any], response: Response, captures: dict[str, Any]) -> list[str]:
    """How the response differs from `expect` (status, headers, json, body); captures on success
    are written into `captures` by the caller's commit (this writes into the dict it is given)."""
    found: list[str] = []
    if "status" in expect:
        found += [f"status: {m.message}" for m in match(expect["status"], response.status, captures)]
    elif not 200 <= response.status <= 299:
        found.append(
            f"status: expected a 2xx status (the step may set `expect.status`), got {response.status}"
        )
    if "headers" in expect:
        wanted = {str(name).lower(): value for name, value in expect["headers"].items()}
        found += [f"headers {m}" for m in match(wanted, response.header_map(), captures)]
    if "json" in expect:
        import json

        try:
            document = json.loads(response.body)
        except ValueError as exc:
            found.append(f"json: the body is not exactly one JSON document ({exc})")
        else:
            found += [f"json {m}" for m in match(expect["json"], document, captures)]
    if "body" in expect:
        found += [f"body: {m.message}" for m in match(expect["body"], response.body, captures)]
    return found


def report(request: Request, response: Response | None, limit: int = 8000) -> list[str]:
    """The request and the response, for a failure report."""
    out = [f"request: {request.method} {request.url}"]
    out += [f"  | {name}: {value}" for name, value in request.headers]
    if request.body:
        out += ["request body:", _block(request.body, limit)]
    if response is None:
        return out
    out.append(f"response: {response.status} {response.reason}")
    out += [f"  | {name}: {value}" for name, value in response.headers]
    out += ["response body:", _block(response.body, limit)]
    return out


def _block(text: str, limit: int) -> str:
    if not text:
        return "  | (empty)"
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters)"
    return "\n".join("  | " + line for line in text.rstrip("\n").split("\n"))
