"""Provider webhook routes: `.swamp.yaml` `gateway.routes.<name>` (GATEWAY-070..089).

A route says how a provider's callback is verified (`verify` and `secret`), which wait it answers
(`wait`, or `run` and `step`), what it sends (`payload`) and how a delivery is named (`delivery`,
by default the provider's own delivery ID). The last four are `${{ }}` expressions evaluated by
swamp's own CEL evaluator (expressions.py) over two variables: `body` (the provider's parsed body)
and `headers` (its headers, names in lower case).

Checked in two steps. `check_routes` is the shape, cheap and without CEL, run with the rest of the
settings by every command; it refuses a secret written in the file. `load_routes` is run when the
gateway starts: it compiles every expression and reads every secret from the gateway's environment
or a file, so a gateway never starts with a route that cannot work.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .errors import ExpressionError, SwampError
from .expressions import EXPRESSION, ExpressionEngine, Scope, cel_view, expressions_in
from .settings_refusals import did_you_mean as _did_you_mean
from .settings_refusals import kind as _kind
from .settings_refusals import refuse as _refuse

VERIFIERS = ("github", "slack", "hmac-sha256")
ROUTE_KEYS = ("verify", "secret", "header", "prefix", "wait", "run", "step", "payload", "resume", "delivery")
SECRET_KEYS = ("env", "file")
ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
VARIABLES = ("body", "headers")
EXAMPLE = (
    "routes: {ci: {verify: github, secret: {env: CI_WEBHOOK_SECRET}, "
    "wait: '${{ body.client_payload.waitId }}', payload: {passed: '${{ body.client_payload.passed }}'}}}"
)


class RouteNotFound(SwampError):
    code = "route_not_found"


class SignatureInvalid(SwampError):
    code = "signature_invalid"


def check_routes(raw: Any) -> dict[str, dict[str, Any]]:
    """The routes' shape (see the module doc); the mapping as written, for the settings copy."""
    if not isinstance(raw, dict):
        raise _refuse(
            "gateway.routes", f"must be a mapping of route names, not {_kind(raw)}", f"write `{EXAMPLE}`"
        )
    for name, route in raw.items():
        _check_route(str(name), route)
    return {str(name): route for name, route in raw.items()}


def _check_route(name: str, route: Any) -> None:
    where = f"gateway.routes.{name}"
    if not ROUTE_NAME.match(name):
        raise _refuse(
            where, "is not a route name", "name it with letters, digits, - and _ (it is the URL /hooks/NAME)"
        )
    if not isinstance(route, dict):
        raise _refuse(where, f"must be a mapping, not {_kind(route)}", f"write `{EXAMPLE}`")
    for key in route:
        if key not in ROUTE_KEYS:
            raise _refuse(
                f"{where}.{key}",
                "is not a route setting",
                f"{_did_you_mean(key, ROUTE_KEYS)}a route has {', '.join(ROUTE_KEYS)}",
            )
    verify = route.get("verify")
    if verify not in VERIFIERS:
        raise _refuse(
            f"{where}.verify",
            "is missing" if verify is None else f"is {verify!r}",
            f"write one of {', '.join(VERIFIERS)}",
        )
    _check_secret(f"{where}.secret", route.get("secret"))
    header, prefix = route.get("header"), route.get("prefix")
    if verify == "hmac-sha256":
        if not isinstance(header, str) or not header.strip():
            raise _refuse(
                f"{where}.header",
                "is missing" if header is None else "must be a header name",
                "name the header that carries the signature, such as `header: X-Signature`",
            )
        if prefix is not None and not isinstance(prefix, str):
            raise _refuse(
                f"{where}.prefix", f"must be a string, not {_kind(prefix)}", "write it as `prefix: 'sha256='`"
            )
    elif header is not None or prefix is not None:
        key = "header" if header is not None else "prefix"
        raise _refuse(f"{where}.{key}", f"is only for `verify: hmac-sha256`, not {verify}", "remove it")
    has_wait, has_run, has_step = ("wait" in route), ("run" in route), ("step" in route)
    if has_wait == (has_run or has_step) or has_run != has_step:
        raise _refuse(
            where,
            "must name its wait with `wait`, or with `run` and `step`",
            "write `wait: '${{ body.waitId }}'` or `run: '${{ body.run }}'` with `step: review`",
        )
    for key in ("wait", "run", "step"):
        if key in route and (not isinstance(route[key], str) or not route[key].strip()):
            raise _refuse(
                f"{where}.{key}",
                f"must be a string, not {_kind(route[key])}",
                "write an expression such as '${{ body.waitId }}'",
            )
    delivery = route.get("delivery")
    named = isinstance(delivery, str) and bool(delivery.strip())
    if delivery is not None and delivery is not False and not named:
        raise _refuse(
            f"{where}.delivery",
            f"must be an expression or false, not {_kind(delivery)}",
            "write an expression such as '${{ headers[\'x-request-id\'] }}', or `delivery: false` for none",
        )
    resume = route.get("resume", True)
    if not isinstance(resume, bool):
        raise _refuse(
            f"{where}.resume",
            f"must be true or false, not {_kind(resume)}",
            "write `resume: false` or remove it",
        )


def _check_secret(where: str, secret: Any) -> None:
    fix = "write `secret: {env: NAME}` (an environment variable of the gateway) or `secret: {file: PATH}`"
    if isinstance(secret, str):
        raise _refuse(
            where, "is written in the repository, where anyone who reads it can forge a delivery", fix
        )
    if not isinstance(secret, dict) or len(secret) != 1 or next(iter(secret)) not in SECRET_KEYS:
        raise _refuse(
            where, "is missing" if secret is None else f"is {_kind(secret)} swamp does not read", fix
        )
    source = next(iter(secret.values()))
    if not isinstance(source, str) or not source.strip():
        raise _refuse(where, "names no variable or file", fix)


class Route:
    """A checked route, its expressions compiled and its secret read (the secret is never shown)."""

    __slots__ = (
        "_engine",
        "delivery",
        "header",
        "name",
        "payload",
        "prefix",
        "resume",
        "secret",
        "target",
        "verify",
    )

    def __init__(self, name: str, raw: dict[str, Any], secret: bytes, engine: ExpressionEngine) -> None:
        self.name = name
        self.verify: str = raw["verify"]
        self.secret = secret
        self.header: str | None = raw.get("header")
        self.prefix: str = raw.get("prefix") or ""
        self.target = {key: raw[key] for key in ("wait", "run", "step") if key in raw}
        self.payload: Any = raw.get("payload", "${{ body }}")
        self.resume: bool = raw.get("resume", True)
        # An expression; None: the provider's own delivery ID (see delivery_id); False: none.
        self.delivery: str | bool | None = raw.get("delivery")
        self._engine = engine

    def __repr__(self) -> str:
        return f"Route({self.name!r}, verify={self.verify!r})"

    def address(self, body: Any, headers: dict[str, str]) -> dict[str, str]:
        """The wait, as the `workflow.signal` request names it (`waitId`, or `run` and `step`)."""
        scope = HookScope(body, headers)
        found: dict[str, str] = {}
        for key, template in self.target.items():
            value = self._engine.render_text(template, scope)
            if not isinstance(value, str) or not value:
                raise ExpressionError(
                    f"route {self.name}: `{key}` gives {_kind(value)} for this delivery, not a "
                    f"{'wait ID' if key == 'wait' else key + ' name'}",
                    {"route": self.name, "key": key},
                )
            found["waitId" if key == "wait" else key] = value
        return found

    def delivery_id(self, body: Any, headers: dict[str, str]) -> str | None:
        """This delivery's ID (GATEWAY-080), or None when it has none: the route's `delivery`
        expression, else GitHub's `X-GitHub-Delivery` header or the `event_id` of a Slack Events
        API body. Null or empty text is none; anything that is not a delivery ID is refused."""
        if self.delivery is False:
            return None
        if isinstance(self.delivery, str):
            value = self._engine.render_text(self.delivery, HookScope(body, headers))
        elif self.verify == "github":
            value = headers.get("x-github-delivery")
        elif self.verify == "slack" and isinstance(body, dict):
            value = body.get("event_id")
        else:
            return None
        if value is None or value == "":
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        from .waits import DELIVERY_ID

        if not isinstance(value, str) or not DELIVERY_ID.fullmatch(value):
            raise ExpressionError(
                f"route {self.name}: the delivery ID is {_kind(value)} that is not 1 to 128 characters of "
                "A-Z a-z 0-9 . _ : @ / + = -",
                {"route": self.name, "key": "delivery"},
            )
        return value

    def build_payload(self, body: Any, headers: dict[str, str]) -> Any:
        return self._engine.render(self.payload, HookScope(body, headers))


class HookScope(Scope):
    """The expression context of one delivery: `body` and `headers` (and nothing of a run)."""

    def __init__(self, body: Any, headers: dict[str, str]) -> None:
        super().__init__({})
        self.hook = {"body": body, "headers": headers}

    def activation(self, env: Any, names: frozenset[str] = frozenset()) -> Any:
        return env.Activation({name: cel_view(value) for name, value in self.hook.items()})


def load_routes(
    raw: dict[str, Any] | None, base_dir: str | None, environ: dict[str, str] | None = None
) -> dict[str, Route]:
    """Every route ready to take deliveries; settings_invalid naming the route when one cannot work."""
    if not raw:
        return {}
    environ = dict(os.environ) if environ is None else environ
    routes = check_routes(raw)
    engine = ExpressionEngine(VARIABLES)
    loaded = {}
    for name, route in routes.items():
        for key, template in _templates(route):
            for source in expressions_in(template):
                try:
                    engine.compile(source)
                except ExpressionError as exc:
                    raise _refuse(
                        f"gateway.routes.{name}.{key}",
                        f"has an expression that does not compile ({exc})",
                        "expressions see only `body` and `headers`, such as '${{ body.pull_request.url }}'",
                    ) from None
        loaded[name] = Route(name, route, _read_secret(name, route["secret"], base_dir, environ), engine)
    return loaded


def _templates(route: dict[str, Any]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = [(key, route[key]) for key in ("wait", "run", "step") if key in route]

    def walk(key: str, value: Any) -> None:
        if isinstance(value, str) and EXPRESSION.search(value):
            found.append((key, value))
        elif isinstance(value, dict):
            for item_key, item in value.items():
                walk(f"{key}.{item_key}", item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(f"{key}[{index}]", item)

    walk("payload", route.get("payload"))
    if isinstance(route.get("delivery"), str):
        found.append(("delivery", route["delivery"]))
    return found


def _read_secret(name: str, secret: dict[str, str], base_dir: str | None, environ: dict[str, str]) -> bytes:
    where = f"gateway.routes.{name}.secret"
    if "env" in secret:
        value = environ.get(secret["env"], "")
        if not value:
            raise _refuse(
                where,
                f"names {secret['env']}, which is not set in the gateway's environment",
                f"set {secret['env']} before starting the gateway",
            )
        return value.encode("utf-8")
    path = os.path.join(base_dir or ".", os.path.expanduser(secret["file"]))
    try:
        with open(path, "rb") as handle:
            value_bytes = handle.read().strip()
    except OSError as exc:
        raise _refuse(
            where,
            f"names {secret['file']}, which cannot be read ({exc.strerror})",
            "give a file the gateway's account can read",
        ) from None
    if not value_bytes:
        raise _refuse(where, f"names {secret['file']}, which is empty", "write the secret in it")
    return value_bytes
