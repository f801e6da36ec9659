"""Signal permissions: a token that lets its bearer deliver to one wait and nothing more (ACCESS-040..).

A permission lives on its wait in the run record (`SignalWait.permissions`). The token itself is
shown once, in the grant's result; swamp keeps only its SHA-256, so nothing it writes or prints
can be replayed. A permission's state comes from its fields alone: revoked, used up (no use left),
expired (past `expiresAt`), ended (its wait settled: `endedAt`), or live.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import SwampError
from .records import INT, STR, Reader, optional

TOKEN_PREFIX = "swp_"
TOKEN = re.compile(r"^swp_[a-z2-7]{32}$")  # 160 random bits in lower-case base32, no padding
PERMISSION_ID = re.compile(r"^perm_[a-z2-7]{26}$")
MAX_NOTE = 500
MAX_EXPIRES = 315360000  # seconds: ten years, as a wait's timeout (WAIT-001)


class PermissionInvalid(SwampError):
    """A token or permission ID that admits nothing here; `details.reason` says why. Neither the
    message nor the details ever hold the token."""

    code = "permission_invalid"


def new_token() -> str:
    import base64
    import secrets

    return TOKEN_PREFIX + base64.b32encode(secrets.token_bytes(20)).decode("ascii").rstrip("=").lower()


def new_permission_id() -> str:
    import base64
    import secrets

    return "perm_" + base64.b32encode(secrets.token_bytes(16)).decode("ascii").rstrip("=").lower()


def token_sha256(token: str) -> str:
    import hashlib

    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def well_formed(token: Any) -> bool:
    return isinstance(token, str) and TOKEN.fullmatch(token) is not None


@dataclass(slots=True)
class Permission:
    id: str
    sha256: str
    grantedBy: str
    grantedAt: str
    expiresAt: str | None = None
    uses: int | None = None  # None: as many as the wait takes (it takes one signal)
    usesLeft: int | None = None
    note: str | None = None
    onBehalfOf: str | None = None  # SWAMP_ACTOR of the granter: a claim, beside its account
    revokedAt: str | None = None
    revokedBy: str | None = None
    endedAt: str | None = None  # its wait settled (signal, reject, timeout, cancel)
    usedBy: str | None = None  # the signal it delivered (the last one, were uses > 1)

    FIELDS: ClassVar[dict[str, Reader]] = {
        "id": STR,
        "sha256": STR,
        "grantedBy": STR,
        "grantedAt": STR,
        "expiresAt": optional(STR),
        "uses": optional(INT),
        "usesLeft": optional(INT),
        "note": optional(STR),
        "onBehalfOf": optional(STR),
        "revokedAt": optional(STR),
        "revokedBy": optional(STR),
        "endedAt": optional(STR),
        "usedBy": optional(STR),
    }

    def state(self, now: dt.datetime) -> str:
        """What the permission admits now: only a `live` one admits anything."""
        from .instants import parse_iso

        if self.revokedAt is not None:
            return "revoked"
        if self.usesLeft is not None and self.usesLeft <= 0:
            return "used_up"
        if self.expiresAt is not None and now > parse_iso(self.expiresAt):
            return "expired"
        if self.endedAt is not None:
            return "ended"
        return "live"

    def shown(self, now: dt.datetime) -> dict[str, Any]:
        """The permission as commands show it: never its token, nor the token's hash."""
        from .records import write_record

        doc = write_record(self)
        doc.pop("sha256", None)
        doc["state"] = self.state(now)
        return doc


def grant(
    now: dt.datetime,
    user: str,
    on_behalf_of: str | None,
    *,
    expires_in: float | None,
    uses: int | None,
    note: str | None,
) -> tuple[Permission, str]:
    """A new permission and its token (the only time the token exists in swamp)."""
    from .deadlines import deadline_after
    from .instants import iso, parse_iso

    if expires_in is not None and not 0 < expires_in <= MAX_EXPIRES:
        from .errors import InvalidRequest

        raise InvalidRequest(
            "'expires' must be a positive duration of at most ten years, such as 30m, 2h or 1d",
            {"field": "expires"},
        )
    if note is not None and len(note) > MAX_NOTE:
        from .errors import InvalidRequest

        raise InvalidRequest(f"'note' is at most {MAX_NOTE} characters", {"field": "note"})
    token = new_token()
    granted = iso(now)
    permission = Permission(
        id=new_permission_id(),
        sha256=token_sha256(token),
        grantedBy=user,
        grantedAt=granted,
        expiresAt=iso(deadline_after(parse_iso(granted), expires_in)) if expires_in is not None else None,
        uses=uses,
        usesLeft=uses,
        note=note,
        onBehalfOf=on_behalf_of,
    )
    return permission, token


def refusal(
    reason: str, wait_id: str, permission: Permission | None = None, **extra: Any
) -> PermissionInvalid:
    """The refusal of a token presented to `wait_id` (ACCESS-050..): one message per reason."""
    from . import suggested

    pid = f" {permission.id}" if permission is not None else ""
    messages = {
        "unknown": (
            f"The token is not a permission swamp knows (for wait {wait_id} or any open wait); "
            "ask someone who may answer the wait for a new one: swamp workflow wait grant WAIT_ID"
        ),
        "other_wait": (
            f"The token is a permission for another wait, not {wait_id}; a permission delivers to "
            "its own wait only: check which wait the token was granted for"
        ),
        "expired": (
            f"Permission{pid} for wait {wait_id} expired at "
            f"{permission.expiresAt if permission else '?'}; ask for a new one: "
            f"swamp workflow wait grant {wait_id}"
        ),
        "revoked": (
            f"Permission{pid} for wait {wait_id} was revoked at "
            f"{permission.revokedAt if permission else '?'}"
            f"{' by ' + permission.revokedBy if permission and permission.revokedBy else ''}; "
            f"ask for a new one: swamp workflow wait grant {wait_id}"
        ),
        "used_up": (
            f"Permission{pid} for wait {wait_id} has no use left"
            f"{' (it delivered ' + permission.usedBy + ')' if permission and permission.usedBy else ''}; "
            f"see the wait: {suggested.wait_show(wait_id)}"
        ),
        "ended": (
            f"Permission{pid} ended when wait {wait_id} settled; there is nothing to revoke: "
            f"{suggested.wait_show(wait_id)}"
        ),
    }
    details: dict[str, Any] = {"reason": reason, "waitId": wait_id}
    if permission is not None:
        details["permissionId"] = permission.id
    details.update(extra)
    return PermissionInvalid(messages[reason], details)


def admit(permissions: list[Permission] | None, token: Any, wait_id: str, now: dt.datetime) -> Permission:
    """The permission of this wait that `token` is, when it admits its bearer now; otherwise the
    refusal (a token of no permission here is `unknown`: the caller may find it is another wait's)."""
    if not well_formed(token):
        raise refusal("unknown", wait_id)
    digest = token_sha256(token)
    for permission in permissions or ():
        if _same(permission.sha256, digest):
            state = permission.state(now)
            if state in ("live", "ended"):  # ended: its wait settled, which refuses it in its turn
                return permission
            raise refusal(state, wait_id, permission)
    raise refusal("unknown", wait_id)


def admit_held(
    permissions: list[Permission] | None, permission_id: str, wait_id: str, now: dt.datetime
) -> Permission:
    """The permission a signal was held with (GATEWAY-054), when it still admits it as the wait
    opens; otherwise the refusal a token would get now (revoked, used up, expired, or gone)."""
    for permission in permissions or ():
        if permission.id == permission_id:
            state = permission.state(now)
            if state == "live":
                return permission
            raise refusal(state if state != "ended" else "unknown", wait_id, permission)
    raise refusal("unknown", wait_id)


def holds(permissions: list[Permission] | None, token: Any, now: dt.datetime) -> Permission | None:
    """The live permission among `permissions` that `token` is, if any."""
    if not well_formed(token):
        return None
    digest = token_sha256(token)
    for permission in permissions or ():
        if _same(permission.sha256, digest) and permission.state(now) == "live":
            return permission
    return None


def _same(a: str, b: str) -> bool:
    import hmac

    return hmac.compare_digest(a, b)


def use(permission: Permission, signal_id: str) -> None:
    """Count one delivery; saved with the receipt, under the run's claim."""
    if permission.usesLeft is not None:
        permission.usesLeft -= 1
    permission.usedBy = signal_id


def end_all(permissions: list[Permission] | None, now: dt.datetime) -> None:
    """The wait settled: every permission on it ends (ACCESS-048)."""
    from .instants import iso

    for permission in permissions or ():
        if permission.endedAt is None:
            permission.endedAt = iso(now)


def revoke(permission: Permission, wait_id: str, user: str, now: dt.datetime) -> None:
    from .instants import iso

    if permission.revokedAt is not None:
        raise refusal("revoked", wait_id, permission)
    if permission.endedAt is not None:
        raise refusal("ended", wait_id, permission)
    permission.revokedAt = iso(now)
    permission.revokedBy = user
