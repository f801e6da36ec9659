"""The clock and identity hooks: SWAMP_NOW fixes the time, the OS names the user (its real user
ID in the password database), SWAMP_ACTOR names who the user says it acts for."""

from __future__ import annotations

import datetime as dt
import functools
import os

from ..domain.actors import Actor
from ..domain.errors import UsageError


class SystemClock:
    """Reads SWAMP_NOW (ISO-8601) when set, so tests cross deadlines without sleeping."""

    def now(self) -> dt.datetime:
        fixed = os.environ.get("SWAMP_NOW")
        if fixed:
            return parse_now(fixed)
        return dt.datetime.now(dt.UTC)


def parse_now(text: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"SWAMP_NOW={text!r} is not an ISO-8601 time such as 2026-01-01T00:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC)


def current_user() -> str:
    """The account of this process's real user ID in the password database (its number when the
    database has no name for it). LOGNAME and USER are not asked: anyone can set them."""
    return account_of(os.getuid())


@functools.cache
def account_of(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # no entry for this user ID (a container's arbitrary uid)
        return str(uid)


MAX_ACTOR_CHARS = 200


def claimed_actor() -> str | None:
    """SWAMP_ACTOR: who this process says it acts for, recorded beside its account as onBehalfOf."""
    value = os.environ.get("SWAMP_ACTOR", "").strip()
    if not value:
        return None
    if len(value) > MAX_ACTOR_CHARS or not value.isprintable():
        raise UsageError(
            f"SWAMP_ACTOR must be printable text of at most {MAX_ACTOR_CHARS} characters; "
            "unset it or give the name of who you act for"
        )
    return value


def process_actor() -> Actor:
    """Who a command of this process acts as: its own account, and SWAMP_ACTOR if set."""
    return Actor(current_user(), claimed_actor())
