"""The signal wait: state on a StepRun, its identifiers, its deadline and its payload rules.

A wait is open while its step is `waiting` and now <= deadline (deadline = openedAt + timeout, kept
to the millisecond: deadlines.py).
Only an open wait accepts a signal; a settled one keeps its receipt forever. Wait and signal IDs
are 128 random bits in lower-case base32, never derived from names, and are checked against their
pattern before any lookup.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from os import urandom  # what secrets.token_bytes returns, without secrets' random and hmac
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from .access import read_captured
from .errors import SwampError
from .records import ANY, NUMBER, STR, Reader, list_of, nested, one_of, optional

if TYPE_CHECKING:
    from .permissions import Permission

WAIT_ID = re.compile(r"^wait_[a-z2-7]{26}$")
# A wait may also be named by a unique prefix of its ID: `wait_` and at least MIN_WAIT_PREFIX of its
# 26 characters (20 bits: among a repository's waits a clash is rare, and then refused as ambiguous).
MIN_WAIT_PREFIX = 4
WAIT_PREFIX = re.compile(rf"^wait_[a-z2-7]{{{MIN_WAIT_PREFIX},25}}$")
LONGEST_INTEGER = 309  # digits: a longer integer is beyond every finite 64-bit float (~1.8e308)
SIGNAL_ID = re.compile(r"^sig_[a-z2-7]{26}$")
MAX_PAYLOAD_BYTES = 16 * 1024
MAX_PAYLOAD_DEPTH = 64
# A delivery ID (WAIT-086): the sender's name for one delivery (a provider's X-GitHub-Delivery, a
# Slack event_id), kept on the receipt so a replay of it is known by the store. Shown, never secret.
DELIVERY_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")

WAIT_TIMEOUT = "wait_timeout"
Outcome = Literal["received", "timed_out", "cancelled", "rejected"]
OUTCOMES = ("received", "timed_out", "cancelled", "rejected")
WAIT_KINDS = ("signal",)


class WaitNotFound(SwampError):
    code = "wait_not_found"


class WaitAmbiguous(SwampError):
    code = "wait_ambiguous"


class WaitExpired(SwampError):
    code = "wait_expired"


class WaitSettled(SwampError):
    code = "wait_settled"


class WaitOpen(SwampError):
    code = "wait_open"


class PayloadMalformed(SwampError):
    code = "payload_malformed"


class PayloadTooLarge(SwampError):
    code = "payload_too_large"


class PayloadInvalid(SwampError):
    code = "payload_invalid"


def _random_id(prefix: str) -> str:
    import base64  # here, not at the top: only opening a wait or taking a signal names one

    return prefix + base64.b32encode(urandom(16)).decode("ascii").rstrip("=").lower()


def new_wait_id() -> str:
    return _random_id("wait_")


def new_signal_id() -> str:
    return _random_id("sig_")


def given_text(text: Any) -> tuple[str, str | None]:
    """How a malformed wait ID is shown back, and kept in the details: never a signal permission's
    token given in its place (ACCESS-063)."""
    if isinstance(text, str) and text.startswith("swp_"):
        return "What was given (a signal permission's token, not shown; pass it with --token-file)", None
    return repr(text)[:80], text if isinstance(text, str) else None


def check_wait_id(text: str) -> str:
    if not isinstance(text, str) or not WAIT_ID.fullmatch(text):
        shown, kept = given_text(text)
        raise WaitNotFound(
            f"{shown} is not a wait ID (they look like wait_ followed by 26 letters a-z and digits 2-7); "
            "list open waits with: swamp workflow waits",
            {"waitId": kept, "reason": "malformed"},
        )
    return text


def check_delivery_id(value: Any) -> str | None:
    """A signal's `deliveryId` (WAIT-086): None, or 1 to 128 of `A-Z a-z 0-9 . _ : @ / + = -`."""
    if value is None:
        return None
    if isinstance(value, str) and DELIVERY_ID.fullmatch(value):
        return value
    from .errors import InvalidRequest

    raise InvalidRequest(
        "deliveryId must be 1 to 128 characters of A-Z a-z 0-9 . _ : @ / + = - (the sender's ID of "
        "this delivery, such as X-GitHub-Delivery); send it as given, or leave it out",
        {"field": "deliveryId"},
    )


def payload_digest(payload: Any) -> str:
    if not isinstance(payload, (dict, list, str, int, float, bool, type(None))):
        return ""
    import hashlib  # OpenSSL's _hashlib costs ~3 ms of import; only a signal needs a digest

    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class SignalReceipt:
    id: str
    waitId: str
    receivedAt: str
    submittedBy: str
    payloadSha256: str
    onBehalfOf: str | None = None  # SWAMP_ACTOR of the sender: a claim, beside its account
    heldAt: str | None = None  # an early signal: when it was held, before its step opened (held.py)
    override: str | None = None  # an admin answered past the wait's policy, for this reason (ACCESS-021)
    permissionId: str | None = None  # delivered with a signal permission (ACCESS-046) ...
    grantedBy: str | None = None  # ... granted by this account
    deliveryId: str | None = None  # the sender's ID of this delivery: its replay is known (WAIT-086)

    FIELDS: ClassVar[dict[str, Reader]] = {
        "id": STR,
        "waitId": STR,
        "receivedAt": STR,
        "submittedBy": STR,
        "payloadSha256": STR,
        "onBehalfOf": optional(STR),
        "heldAt": optional(STR),
        "override": optional(STR),
        "permissionId": optional(STR),
        "grantedBy": optional(STR),
        "deliveryId": optional(STR),
    }

    def as_signal(self) -> dict[str, Any]:
        signal = {
            "id": self.id,
            "waitId": self.waitId,
            "receivedAt": self.receivedAt,
            "submittedBy": self.submittedBy,
        }
        if self.onBehalfOf is not None:
            signal["onBehalfOf"] = self.onBehalfOf
        if self.override is not None:
            signal["override"] = self.override
        if self.permissionId is not None:
            signal["permissionId"] = self.permissionId
            signal["grantedBy"] = self.grantedBy or ""
        if self.deliveryId is not None:
            signal["deliveryId"] = self.deliveryId
        return signal


@dataclass(slots=True)
class WaitRejection:
    """Who rejected a wait, when and why (RUN-032): the record keeps it as a receipt keeps a signal's."""

    by: str
    at: str
    onBehalfOf: str | None = None
    reason: str | None = None
    override: str | None = None

    FIELDS: ClassVar[dict[str, Reader]] = {
        "by": STR,
        "at": STR,
        "onBehalfOf": optional(STR),
        "reason": optional(STR),
        "override": optional(STR),
    }


@dataclass(slots=True)
class SignalWait:
    waitId: str
    openedAt: str
    deadline: str
    timeout: float
    schema: dict[str, Any] | bool
    kind: str = "signal"
    description: str | None = None
    receipt: SignalReceipt | None = None
    outcome: str | None = None
    rejection: WaitRejection | None = None  # with outcome "rejected" (RUN-032)
    # Who may answer, captured from the step's `answerers:` when the wait opened (ACCESS-001), as
    # domain/access.py Policy.to_dict(); None: anyone may.
    answerers: dict[str, Any] | None = None
    permissions: list[Permission] | None = None  # signal permissions granted on it (ACCESS-040..)
    # When the waitDueSoon hook was started for it (HOOK-022): set once, under the run's claim, so
    # the hook runs once per wait whichever host enforces deadlines.
    dueSoonAt: str | None = None

    FIELDS: ClassVar[dict[str, Reader]] = {
        "kind": one_of(WAIT_KINDS, "wait kind"),
        "waitId": STR,
        "openedAt": STR,
        "deadline": STR,
        "timeout": NUMBER,
        "schema": ANY,
        "description": optional(STR),
        "receipt": optional(nested(SignalReceipt)),
        "outcome": optional(one_of(OUTCOMES, "wait outcome")),
        "rejection": optional(nested(WaitRejection)),
        "answerers": optional(read_captured),
        "permissions": optional(lambda value, path: _permissions(value, path)),
        "dueSoonAt": optional(STR),
    }

    @classmethod
    def open(
        cls,
        now: dt.datetime,
        timeout: float,
        schema: dict[str, Any] | bool,
        description: str | None,
        wait_id: str | None = None,
    ) -> SignalWait:
        """A wait opening now, under the ID reserved for its step when there is one (WAIT-066)."""
        from .deadlines import deadline_after
        from .instants import iso, parse_iso

        opened = iso(now)
        return cls(
            waitId=wait_id or new_wait_id(),
            openedAt=opened,
            deadline=iso(deadline_after(parse_iso(opened), timeout)),
            timeout=timeout,
            schema=schema,
            description=description,
        )

    def settle(self, outcome: str, now: dt.datetime) -> None:
        """The wait settles: it takes no other signal, and every permission on it ends (ACCESS-048)."""
        self.outcome = outcome
        if self.permissions:
            from .permissions import end_all

            end_all(self.permissions, now)

    def is_expired(self, now: dt.datetime) -> bool:
        from .instants import parse_iso

        return now > parse_iso(self.deadline)

    def seconds_left(self, now: dt.datetime) -> float:
        from .instants import parse_iso

        return (parse_iso(self.deadline) - now).total_seconds()


def _permissions(value: Any, path: str) -> list[Permission]:
    from .permissions import Permission  # here: only a wait with permissions reads them

    result: list[Permission] = list_of(nested(Permission))(value, path)
    return result


def parse_payload(raw: bytes | str) -> Any:
    """A payload as received: at most 16 KiB of UTF-8, one strict JSON value."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if len(data) > MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge(
            f"The payload is {len(data)} bytes; the limit is {MAX_PAYLOAD_BYTES} bytes of UTF-8 JSON. "
            "Send a smaller message (store large data elsewhere and send a reference)",
            {"bytes": len(data), "limit": MAX_PAYLOAD_BYTES},
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PayloadMalformed(f"The payload is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if text.startswith("\ufeff"):
        raise PayloadMalformed("The payload starts with a byte-order mark; send plain UTF-8 JSON")
    if not text.strip():
        raise PayloadMalformed("The payload is empty; send a JSON value", {"reason": "empty"})
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constants,
            parse_int=_finite_int,
            parse_float=_finite_float,
        )
    except _Refused as exc:
        raise PayloadMalformed(str(exc)) from None
    except RecursionError:
        raise PayloadMalformed(f"The payload is nested too deeply (limit {MAX_PAYLOAD_DEPTH})") from None
    except ValueError as exc:
        hint = ""
        if text.startswith("@"):  # curl's habit: `--payload @verdict.json` means a file here too
            named = text[1:].strip()
            shown = named if named and len(named) <= 200 and named.isprintable() else "FILE"
            hint = f"; to send the contents of a file, use --payload-file {shown}"
        raise PayloadMalformed(f"The payload is not valid JSON: {exc}{hint}") from None
    check_payload_value(value)
    return value


def check_payload_value(value: Any) -> None:
    """Rules for a payload that arrives already parsed (the JSON-lines protocol)."""
    _check_value(value, 0)


def _check_value(value: Any, depth: int) -> None:
    if depth > MAX_PAYLOAD_DEPTH:
        raise PayloadMalformed(f"The payload is nested deeper than {MAX_PAYLOAD_DEPTH} levels")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise PayloadMalformed(
                "The payload holds a lone surrogate (\\ud800-\\udfff); send valid Unicode"
            ) from None
    elif isinstance(value, LongInteger):
        raise PayloadMalformed(_beyond_double(f"a {value.digits}-digit integer"))
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise PayloadMalformed("The payload holds NaN or Infinity, which JSON does not allow")
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            raise PayloadMalformed(_beyond_double(f"a {len(str(abs(value)))}-digit integer")) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_value(key, depth + 1)
            _check_value(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_value(item, depth + 1)


class _Refused(ValueError):
    pass


class LongInteger(float):
    """An integer of a JSON-lines frame too long for Python to read (over 4300 digits): the frame
    reader keeps it as this marker (infinite as a float) so that a signal refuses it as a payload
    number beyond a 64-bit float, like any other (WAIT-022)."""

    digits: int

    def __new__(cls, text: str) -> LongInteger:
        marker = super().__new__(cls, math.inf if not text.startswith("-") else -math.inf)
        marker.digits = len(text.lstrip("-"))
        return marker


def _beyond_double(what: str) -> str:
    return (
        f"The payload holds {what}, beyond what a 64-bit float holds (about 1.8e308); "
        "send a smaller number, or the digits as a string"
    )


def _finite_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > LONGEST_INTEGER:  # checked before int(): Python reads at most 4300 digits
        raise _Refused(_beyond_double(f"a {digits}-digit integer"))
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise _Refused(_beyond_double(f"a {digits}-digit integer")) from None
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused(_beyond_double(f"the number {text[:40]}"))
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"The payload repeats the key {key!r}; every key may appear once")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise _Refused(f"The payload holds {name}, which JSON does not allow")


def example_value(schema: Any, depth: int = 0) -> Any:
    """A value that satisfies simple schemas, to show in `wait show` and in hints."""
    if not isinstance(schema, dict) or depth > 8:
        return {}
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    if "examples" in schema and isinstance(schema["examples"], list) and schema["examples"]:
        return schema["examples"][0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(combinator), list) and schema[combinator]:
            return example_value(schema[combinator][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        required = schema.get("required") or list(props)
        return {k: example_value(props.get(k, {}), depth + 1) for k in required}
    if kind == "array":
        count = max(int(schema.get("minItems", 1)), 1)
        return [example_value(schema.get("items", {}), depth + 1) for _ in range(min(count, 3))]
    if kind == "string":
        low = schema.get("minLength", 0)
        high = schema.get("maxLength")
        length = low if isinstance(low, int) and low > 0 else 4
        if isinstance(high, int):
            length = min(length, high)
        return "text"[:length] if length <= 4 else "x" * length
    if kind in ("number", "integer"):
        return _example_number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return {}


def _example_number(schema: dict[str, Any], integer: bool) -> float | int:
    """0, moved just inside the bounds when it falls outside them."""

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    step = 1 if integer else 0.5
    lows = [schema["minimum"]] if number(schema.get("minimum")) else []
    lows += [schema["exclusiveMinimum"] + step] if number(schema.get("exclusiveMinimum")) else []
    highs = [schema["maximum"]] if number(schema.get("maximum")) else []
    highs += [schema["exclusiveMaximum"] - step] if number(schema.get("exclusiveMaximum")) else []
    candidate: float = 0
    if lows:
        candidate = max(candidate, max(lows))
    if highs:
        candidate = min(candidate, min(highs))
    if integer:
        return math.ceil(candidate)
    return int(candidate) if float(candidate).is_integer() else candidate


def empty_explained(
    read_payload: Callable[[], Any], wait: SignalWait, schema_problems: Callable[[Any, Any], list[Any]]
) -> Callable[[], Any]:
    """`read_payload`, whose refusal of an empty payload gives an example that fits this wait."""

    def read() -> Any:
        try:
            return read_payload()
        except PayloadMalformed as exc:
            if exc.details.get("reason") == "empty":
                raise empty_payload(wait, schema_problems) from None
            raise

    return read


def empty_payload(wait: SignalWait, schema_problems: Callable[[Any, Any], list[Any]]) -> PayloadMalformed:
    """An empty payload, answered with an example that fits this wait (when one can be made)."""
    from . import suggested

    example = example_value(wait.schema)
    if schema_problems(example, wait.schema):
        such_as = "a JSON value that matches its schema"
    else:
        such_as = "a JSON value such as " + json.dumps(example, separators=(",", ":"), ensure_ascii=False)
    return PayloadMalformed(
        f"The payload is empty; wait {wait.waitId} takes {such_as} (see: {suggested.wait_show(wait.waitId)})",
        {"waitId": wait.waitId, "reason": "empty"},
    )


def payload_invalid(wait_id: str, problems: list[Any]) -> PayloadInvalid:
    """The refusal of a payload the wait's schema does not accept, listing each problem."""
    from . import suggested

    listed = "; ".join(str(p) for p in problems)
    return PayloadInvalid(
        f"The payload does not match the schema of wait {wait_id}: {listed}. "
        f"See what it accepts with: {suggested.wait_show(wait_id)}",
        {"waitId": wait_id, "errors": [p.to_dict() for p in problems]},
    )
