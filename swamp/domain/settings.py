"""Repository settings: what the marker file `.swamp.yaml` may say, checked in one place.

Why: the file that makes a directory a repository also carries its settings (the hooks today; the
store with issue 17). A setting that is misspelt or mistyped would silently do nothing, so every
key is known here and anything else is refused naming the key, where it is, and what to write
instead (`settings_invalid`). This module only judges a parsed document; reading the file (and
keeping that cheap) is swamp/store/settings.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import SettingsInvalid
from .settings_refusals import did_you_mean as _did_you_mean
from .settings_refusals import kind as _kind
from .settings_refusals import refuse as _refuse

__all__ = ["SettingsInvalid"]  # defined in errors.py, so webhook_routes.py can raise it too

if TYPE_CHECKING:
    from .access import Admins

# Each hook, and the event it runs on (HOOK-004): `waitExpired` is the settlement whose outcome is
# `timed_out`, so a timed-out wait runs both `waitSettled` and `waitExpired` when both are set.
# `waitDueSoon` runs once per wait, `before` its deadline, started by whatever enforces deadlines
# (serve --enforce-deadlines, HOOK-022).
HOOK_NAMES = ("waitOpened", "waitSettled", "waitExpired", "waitDueSoon")
HOOK_KEYS = ("command", "timeout", "retries", "backoff", "before")
DEFAULT_HOOK_TIMEOUT = 30
MAX_HOOK_TIMEOUT = 3600
# Retries (HOOK-018): attempt k+1 starts backoff * 2**(k-1) seconds after attempt k ended, each
# delay at most MAX_BACKOFF_DELAY.
MAX_HOOK_RETRIES = 10
DEFAULT_HOOK_BACKOFF = 2.0
MAX_HOOK_BACKOFF = 3600
MAX_BACKOFF_DELAY = 300.0
# Top-level keys. `store` names where run state lives: a PostgreSQL URL (`postgresql://...`) or a
# libpq service (`service=name`); absent, the file store under .swamp/ (SWAMP_STORE_URL overrides).
# `admins` names who may answer past an answerer/approver policy with --override (ACCESS-020).
# `gateway` configures `swamp gateway` (spec/gateway.md): `publicUrl`, the address people reach it
# at (a link is `<publicUrl>/a/<token>`), and `routes` (provider webhooks, read by the gateway).
TOP_KEYS = ("version", "hooks", "store", "admins", "gateway")
GATEWAY_KEYS = ("publicUrl", "routes")

EXAMPLE = 'hooks: {waitOpened: {command: "sh hooks/notify.sh", timeout: 30}}'


# Plain classes, not dataclasses or NamedTuples: every command on runs imports this module
# (`swamp workflow signal` among them), and defining those two cost ~1 ms of its start.
class Hook:
    __slots__ = ("backoff", "before", "command", "name", "retries", "timeout")

    def __init__(
        self,
        name: str,
        command: str,
        timeout: float,
        retries: int = 0,
        backoff: float = DEFAULT_HOOK_BACKOFF,
        before: float | None = None,
    ) -> None:
        self.name = name  # one of HOOK_NAMES
        self.command = command  # run by `sh -c`, with the wait as one JSON line on stdin
        self.timeout = timeout  # seconds before its process group is killed
        self.retries = retries  # attempts after the first, when one does not end ok
        self.backoff = backoff  # seconds before the first retry, doubling (retry_delay)
        self.before = before  # waitDueSoon only: seconds before the deadline

    def _key(self) -> tuple[Any, ...]:
        return (self.name, self.command, self.timeout, self.retries, self.backoff, self.before)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hook) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Hook({self.name!r}, {self.command!r}, {self.timeout!r}, {self.retries!r}, {self.backoff!r})"


def retry_delay(backoff: float, attempt: int) -> float:
    """Seconds between the end of attempt `attempt` (1-based) and the start of the next (HOOK-018)."""
    return float(min(backoff * 2 ** (attempt - 1), MAX_BACKOFF_DELAY))


class Settings:
    __slots__ = ("_admins", "gateway_routes", "hooks", "public_url", "store", "version")

    def __init__(
        self,
        version: int = 1,
        hooks: tuple[Hook, ...] = (),
        store: str | None = None,
        admins: Admins | None = None,
        public_url: str | None = None,
        gateway_routes: dict[str, Any] | None = None,
    ) -> None:
        self.version = version
        self.hooks = hooks
        self.store = store  # None: the file store
        self._admins = admins  # None: nobody may override a policy
        self.public_url = public_url  # gateway.publicUrl, without a trailing slash (GATEWAY-011)
        # gateway.routes as written, shape checked (webhook_routes.py; the gateway loads them)
        self.gateway_routes = gateway_routes

    @property
    def admins(self) -> Admins:
        if self._admins is None:
            from .access import NO_ADMINS

            return NO_ADMINS
        return self._admins

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and (
            self.version,
            self.hooks,
            self.store,
            self._admins,
            self.public_url,
            self.gateway_routes,
        ) == (other.version, other.hooks, other.store, other._admins, other.public_url, other.gateway_routes)

    def __hash__(self) -> int:
        return hash((self.version, self.hooks, self.store, self._admins, self.public_url))

    def __repr__(self) -> str:
        return (
            f"Settings(version={self.version!r}, hooks={self.hooks!r}, store={self.store!r}, "
            f"admins={self._admins!r}, public_url={self.public_url!r})"
        )

    def hooks_for(self, event: dict[str, Any]) -> list[Hook]:
        """The hooks an event of `run_changes` runs (HOOK-004), in HOOK_NAMES order."""
        kind = event.get("event")
        wanted: set[str] = set()
        if kind == "wait_opened":
            wanted.add("waitOpened")
        elif kind == "wait_settled":
            wanted.add("waitSettled")
            if event.get("outcome") == "timed_out":
                wanted.add("waitExpired")
        elif kind == "wait_due_soon":
            wanted.add("waitDueSoon")
        return [hook for hook in self.hooks if hook.name in wanted]


DEFAULTS = Settings()


def parse_settings(doc: Any) -> Settings:
    """The settings a parsed `.swamp.yaml` says (None, an empty file: the defaults)."""
    if doc is None:
        return DEFAULTS
    if not isinstance(doc, dict):
        raise SettingsInvalid(
            f".swamp.yaml must be a mapping of settings (such as `version: 1`), not {_kind(doc)}; "
            "fix the file or run: swamp repo init",
            {"path": ".swamp.yaml", "key": ""},
        )
    for key in doc:
        if key not in TOP_KEYS:
            raise _refuse(
                str(key),
                "is not a setting",
                f"{_did_you_mean(key, TOP_KEYS)}the settings are {', '.join(TOP_KEYS)}, such as `{EXAMPLE}`",
            )
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise _refuse("version", f"is {version!r}", "write `version: 1` (the only version there is)")
    public_url, routes = _gateway(doc.get("gateway")) if "gateway" in doc else (None, None)
    return Settings(
        version=1,
        hooks=_hooks(doc.get("hooks")),
        store=_store(doc.get("store")),
        admins=_admins(doc.get("admins")) if "admins" in doc else None,
        public_url=public_url,
        gateway_routes=routes,
    )


def _gateway(raw: Any) -> tuple[str | None, dict[str, Any] | None]:
    """`gateway: {publicUrl: URL, routes: {...}}` (GATEWAY-011): publicUrl an http(s) URL with a
    host and no query, fragment or credentials; routes a mapping (judged by the gateway)."""
    example = "gateway: {publicUrl: https://swamp.example.com}"
    if not isinstance(raw, dict):
        raise _refuse("gateway", f"must be a mapping, not {_kind(raw)}", f"write it as `{example}`")
    for key in raw:
        if key not in GATEWAY_KEYS:
            raise _refuse(
                f"gateway.{key}",
                "is not a gateway setting",
                f"{_did_you_mean(key, GATEWAY_KEYS)}gateway has {', '.join(GATEWAY_KEYS)}, "
                f"such as `{example}`",
            )
    url = raw.get("publicUrl")
    if url is not None:
        url = public_url(url, "gateway.publicUrl")
    routes = raw.get("routes")
    if routes is not None:
        from .webhook_routes import check_routes  # the routes' shape (GATEWAY-070), without CEL

        routes = check_routes(routes)
    return url, routes


def public_url(raw: Any, where: str) -> str:
    """An address people reach the gateway at, without its trailing slash; refused naming `where`."""
    from urllib.parse import urlsplit

    fix = "write the address people reach the gateway at, such as https://swamp.example.com"
    if not isinstance(raw, str):
        raise _refuse(where, f"must be a URL, not {_kind(raw)}", fix)
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 - an unreadable port raises here
    except ValueError:
        raise _refuse(where, f"is {raw!r:.80}, not a URL", fix) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _refuse(where, f"is {raw!r:.80}, not an http:// or https:// URL with a host", fix)
    if parts.query or parts.fragment or parts.username or parts.password or any(c.isspace() for c in raw):
        raise _refuse(
            where, f"is {raw!r:.80}: it may not hold credentials, a query, a fragment or spaces", fix
        )
    return raw.rstrip("/")


def _admins(raw: Any) -> Admins:
    """`admins: {accounts: [..], groups: [..]}`: at least one name, every name a non-empty string."""
    from .access import ADMIN_KEYS, Admins

    example = "admins: {accounts: [alice], groups: [release-admins]}"
    if not isinstance(raw, dict):
        raise _refuse("admins", f"must be a mapping, not {_kind(raw)}", f"write it as `{example}`")
    lists: dict[str, list[str]] = {}
    for key, names in raw.items():
        if key not in ADMIN_KEYS:
            raise _refuse(
                f"admins.{key}",
                "is not an admins setting",
                f"{_did_you_mean(key, ADMIN_KEYS)}admins has {', '.join(ADMIN_KEYS)}, such as `{example}`",
            )
        if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
            raise _refuse(
                f"admins.{key}",
                f"must be a list of {key[:-1]} names, not {_kind(names)}"
                if not isinstance(names, list)
                else "must hold only non-empty names",
                f"write it as `{example}`",
            )
        lists[str(key)] = names
    if not any(lists.values()):
        raise _refuse("admins", "names nobody", f"name accounts or groups, such as `{example}`, or remove it")
    return Admins(lists.get("accounts", ()), lists.get("groups", ()))


def _store(raw: Any) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not is_store_address(raw):
        shown = redacted(raw) if isinstance(raw, str) else raw
        raise _refuse(
            "store",
            f"is {shown!r:.80}, not a PostgreSQL address",
            "write `store: postgresql://host/dbname` or `store: service=NAME` (a libpq service); "
            "passwords belong in PGPASSWORD, ~/.pgpass or the service file, never here",
        )
    if _has_password(raw):
        raise _refuse(
            "store",
            "holds a password",
            "remove it, and put it in PGPASSWORD, ~/.pgpass or the libpq service file instead",
        )
    return raw


def redacted(address: str) -> str:
    """`address` with any password in it replaced by ***, fit to show (STORE-005)."""
    import re  # here: only a refusal shows an address

    secret = re.compile(r"(://[^/@:]*:)[^/@]*@|(password\s*=\s*)\S+", re.IGNORECASE)
    return secret.sub(lambda m: (m.group(1) + "***@") if m.group(1) else m.group(2) + "***", address)


def is_store_address(text: str) -> bool:
    """A PostgreSQL URL or a libpq service name (`service=NAME`)."""
    return text.startswith(("postgresql://", "postgres://")) or (
        text.startswith("service=") and len(text) > 8 and " " not in text
    )


def _has_password(address: str) -> bool:
    if address.startswith("service="):
        return False
    rest = address.split("://", 1)[1]
    credentials = rest.split("@", 1)[0] if "@" in rest.split("/", 1)[0] else ""
    return ":" in credentials or "password=" in address.lower()


def _hooks(raw: Any) -> tuple[Hook, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise _refuse("hooks", f"must be a mapping, not {_kind(raw)}", f"write it as `{EXAMPLE}`")
    hooks = []
    for name, body in raw.items():
        where = f"hooks.{name}"
        if name not in HOOK_NAMES:
            raise _refuse(
                where,
                "is not a hook",
                f"{_did_you_mean(name, HOOK_NAMES)}the hooks are {', '.join(HOOK_NAMES)}",
            )
        if isinstance(body, str):
            body = {"command": body}
        if not isinstance(body, dict):
            raise _refuse(
                where, f"must be a mapping, not {_kind(body)}", f'write `{name}: {{command: "..."}}`'
            )
        for key in body:
            if key not in HOOK_KEYS:
                raise _refuse(
                    f"{where}.{key}",
                    "is not a hook setting",
                    f"{_did_you_mean(key, HOOK_KEYS)}a hook has {', '.join(HOOK_KEYS)}",
                )
        command = body.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _refuse(
                f"{where}.command",
                "is missing" if command is None else f"must be a non-empty string, not {_kind(command)}",
                'write the shell command to run, such as `command: "sh hooks/notify.sh"`',
            )
        timeout = body.get("timeout", DEFAULT_HOOK_TIMEOUT)
        timeout = _seconds(timeout, f"{where}.timeout", 0, MAX_HOOK_TIMEOUT)
        if timeout <= 0:
            fix = f"write a duration above 0 (default {DEFAULT_HOOK_TIMEOUT})"
            raise _refuse(f"{where}.timeout", "is 0", fix)
        retries = body.get("retries", 0)
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_HOOK_RETRIES:
            raise _refuse(
                f"{where}.retries",
                f"is {retries!r}",
                f"write a whole number of attempts after the first, 0 to {MAX_HOOK_RETRIES} (default 0)",
            )
        backoff = _seconds(body.get("backoff", DEFAULT_HOOK_BACKOFF), f"{where}.backoff", 0, MAX_HOOK_BACKOFF)
        before: float | None = None
        if name == "waitDueSoon":
            if "before" not in body:
                raise _refuse(
                    f"{where}.before",
                    "is missing",
                    "say how long before the deadline it runs, such as `before: 10m`",
                )
            before = _seconds(body["before"], f"{where}.before", 0, None)
            if before == 0:
                raise _refuse(f"{where}.before", "is 0", "write a duration above 0, such as `before: 10m`")
        elif "before" in body:
            raise _refuse(
                f"{where}.before",
                "is only a waitDueSoon setting",
                f"remove it; `before` says when waitDueSoon runs, and {name} runs when the wait "
                + ("opens" if name == "waitOpened" else "settles"),
            )
        hooks.append(Hook(str(name), command, float(timeout), retries, backoff, before))
    hooks.sort(key=lambda hook: HOOK_NAMES.index(hook.name))
    return tuple(hooks)


def _seconds(raw: Any, where: str, low: float, high: float | None) -> float:
    """A duration setting: seconds as a number, or a duration text (domain/durations.py)."""
    from .durations import EXAMPLES, is_number_text, parse_duration

    fix = f"write seconds or a duration such as {EXAMPLES}" + (
        f" (at most {high:g} seconds)" if high is not None else ""
    )
    value: float | None = None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    elif isinstance(raw, str) and not is_number_text(raw.strip()):  # "60" in a file is not a number
        try:
            value = float(parse_duration(raw.strip()))
        except ValueError:
            value = None
    if value is None or value != value or value < low or (high is not None and value > high):
        raise _refuse(where, f"is {raw!r:.40}", fix)
    return value
