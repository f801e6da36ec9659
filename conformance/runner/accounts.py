"""The feature `os-accounts`: the OS accounts and groups a scenario declares, made by the runner.

A scenario names roles (`accounts: [qa, rm1]`, `groups: {release: [rm1]}`); each account role is
the OS account `swpr-<role>` (its primary group of the same name), each group role the OS group
`swprg-<name>` whose members are exactly the accounts listed. They are made once per runner
process, with useradd/groupadd/gpasswd (idempotent: what exists already is left as it is, a group's
members are set only when they differ), and a step says `as: ROLE` to run its process through
`setpriv --reuid --regid --init-groups` (the account's supplementary groups come with it).
conformance/node/accounts.mjs does the same; README.md "Several OS accounts" is the contract.
"""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
import threading
import time

ACCOUNT_PREFIX = "swpr-"
GROUP_PREFIX = "swprg-"
SETPRIV = "setpriv"
_LOCK_WAIT = 10.0  # seconds to retry a tool that found /etc/passwd or /etc/group locked (another writer)

ROOT_ONLY = (
    "needs root: the runner makes the OS accounts and groups of os-accounts scenarios with useradd "
    "and groupadd (run the runner as root, or leave os-accounts out of --features)"
)


UNREACHABLE = (
    "if it is the scenario's account that may not run the implementation (Permission denied), put "
    "the implementation and its interpreter where other accounts may run them, with no folder only "
    'its owner may enter on the way (README.md, "Several OS accounts")'
)


class AccountSetupFailure(Exception):
    """An account or group could not be made; the message says which and why."""


def account_name(role: str) -> str:
    return ACCOUNT_PREFIX + role


def group_name(role: str) -> str:
    return GROUP_PREFIX + role


def can_make_accounts() -> bool:
    return os.geteuid() == 0


def wrap(role: str, argv: list[str]) -> list[str]:
    """`argv` run as the account of `role`, with its primary and supplementary groups."""
    name = account_name(role)
    return [SETPRIV, f"--reuid={name}", f"--regid={name}", "--init-groups", "--", *argv]


class Accounts:
    """What this runner process has made already: each account and group is checked once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: set[str] = set()

    def ensure(self, accounts: tuple[str, ...], groups: dict[str, tuple[str, ...]]) -> None:
        with self._lock:
            for role in accounts:
                if f"a:{role}" not in self._done:
                    _ensure_account(account_name(role))
                    self._done.add(f"a:{role}")
            for role, members in groups.items():
                key = f"g:{role}:{','.join(sorted(members))}"
                if key not in self._done:
                    _ensure_group(group_name(role), sorted(account_name(m) for m in members))
                    self._done.add(key)


def _ensure_account(name: str) -> None:
    try:
        pwd.getpwnam(name)
        return
    except KeyError:
        pass
    _tool(["groupadd", name], exists=9)
    shell = "/usr/sbin/nologin"
    _tool(["useradd", "--no-create-home", "--no-user-group", "--gid", name, "--shell", shell, name], exists=9)


def _ensure_group(name: str, members: list[str]) -> None:
    try:
        current = sorted(grp.getgrnam(name).gr_mem)
    except KeyError:
        _tool(["groupadd", name], exists=9)
        current = []
    if current != members:
        _tool(["gpasswd", "--members", ",".join(members), name])


def _tool(argv: list[str], *, exists: int | None = None) -> None:
    """Run a shadow tool; `exists` is its exit code for "already there" (another runner was first).
    A locked /etc/passwd or /etc/group (another writer at work) is tried again for a while."""
    deadline = time.monotonic() + _LOCK_WAIT
    while True:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AccountSetupFailure(
                f"`{' '.join(argv)}` could not run ({exc}); os-accounts needs useradd, groupadd and "
                "gpasswd (shadow utilities)"
            ) from None
        if done.returncode == 0 or done.returncode == exists:
            return
        if "lock" in done.stderr.lower() and time.monotonic() < deadline:
            time.sleep(0.1)
            continue
        raise AccountSetupFailure(
            f"`{' '.join(argv)}` failed (exit {done.returncode}): {done.stderr.strip()}"
        )


ACCOUNTS = Accounts()  # one per runner process (each pytest-xdist worker has its own)
