"""The OS account database: which groups an account belongs to.

A policy's `groups` (spec/access.md) are judged against the acting account's OS groups: its
primary group and every group that lists it, as the account database says (passwd and group
files, or NSS). An account the database does not know has no groups. Answers are kept for a
short while: a long-lived `serve` sees a membership change within GROUPS_TTL seconds, and one
command asks the database once per account.
"""

from __future__ import annotations

import time

GROUPS_TTL = 30.0

_cache: dict[str, tuple[float, frozenset[str]]] = {}


def groups_of(account: str) -> frozenset[str]:
    """The names of the groups `account` belongs to; empty for an unknown account."""
    now = time.monotonic()
    hit = _cache.get(account)
    if hit is not None and now - hit[0] < GROUPS_TTL:
        return hit[1]
    found = _lookup(account)
    _cache[account] = (now, found)
    return found


def _lookup(account: str) -> frozenset[str]:
    import grp
    import os
    import pwd

    try:
        entry = pwd.getpwnam(account)
    except (KeyError, ValueError):  # unknown, or a name with a NUL in it
        return frozenset()
    try:
        gids = set(os.getgrouplist(account, entry.pw_gid))
    except OSError:
        gids = {entry.pw_gid}
    names = set()
    for gid in gids:
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:  # a gid with no name: it cannot be named in a policy
            continue
    return frozenset(names)
