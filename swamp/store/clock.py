"""The clock and identity hooks: SWAMP_NOW fixes the time, the OS names the user."""

from __future__ import annotations

import datetime as dt
import functools
import os

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
    """getpass.getuser(), with the password-database lookup done once per process."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        user = os.environ.get(name)
        if user:
            return user
    return _account_name(getattr(os, "getuid", lambda: 0)())


@functools.cache
def _account_name(uid: int) -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        return "unknown"
