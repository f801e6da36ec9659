"""Who may answer a wait or a gate: the answerer/approver policy, and the repository's admins.

A policy is what a `wait_for_signal` step's `answerers:` or a `manual_approval` step's
`approvers:` says (spec/access.md, ACCESS-001..): accounts, OS groups, whether the account that
started the run may answer (`starter`), and for a gate how many distinct approvers it needs
(`required`). It is captured into the run record when its wait or gate opens, as the plain
`to_dict()` form, and judged from there: a later edit of the workflow file changes nothing.

Naming neither accounts nor groups admits every account (but the starter with `starter: false`):
`{starter: false}` alone is "anyone but whoever started the run", `{required: 2}` alone is "any
two". The workflow reader refuses a policy that says nothing (ACCESS-005).

Plain classes, not dataclasses: `.swamp.yaml`'s `admins` is read by every command on runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

POLICY_KEYS = ("accounts", "groups", "starter")
APPROVER_KEYS = (*POLICY_KEYS, "required")
ADMIN_KEYS = ("accounts", "groups")


class Policy:
    __slots__ = ("accounts", "groups", "required", "starter")

    def __init__(
        self,
        accounts: Iterable[str] = (),
        groups: Iterable[str] = (),
        starter: bool = True,
        required: int = 1,
    ) -> None:
        self.accounts = tuple(accounts)
        self.groups = tuple(groups)
        self.starter = starter
        self.required = required

    @classmethod
    def from_dict(cls, data: Any) -> Policy | None:
        """The policy a run record captured (None: there is none, anyone may answer)."""
        if not isinstance(data, dict):
            return None
        return cls(
            accounts=[a for a in data.get("accounts") or () if isinstance(a, str)],
            groups=[g for g in data.get("groups") or () if isinstance(g, str)],
            starter=data.get("starter", True) is not False,
            required=data["required"] if isinstance(data.get("required"), int) else 1,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "accounts": list(self.accounts),
            "groups": list(self.groups),
            "starter": self.starter,
            "required": self.required,
        }

    @property
    def names_anyone(self) -> bool:
        return not self.accounts and not self.groups

    @property
    def is_empty(self) -> bool:
        """Says nothing a missing policy would not (ACCESS-005)."""
        return self.names_anyone and self.starter and self.required == 1

    def refuses_starter(self, account: str, started_by: str | None) -> bool:
        return not self.starter and started_by is not None and account == started_by

    def names(self, account: str, groups: Iterable[str]) -> bool:
        """Whether the account is one the policy names (by account or a group), starter aside."""
        return self.names_anyone or account in self.accounts or not set(groups).isdisjoint(self.groups)

    def admits(self, account: str, groups: Iterable[str], started_by: str | None) -> bool:
        """Whether `account`, a member of `groups`, may answer in a run `started_by` started."""
        return not self.refuses_starter(account, started_by) and self.names(account, groups)

    def describe(self, started_by: str | None = None) -> str:
        """Who may answer, in words: 'accounts alice, bob or members of group qa, not the account
        that started the run (carol)'."""
        parts = []
        if self.accounts:
            parts.append(("account " if len(self.accounts) == 1 else "accounts ") + ", ".join(self.accounts))
        if self.groups:
            word = "group " if len(self.groups) == 1 else "groups "
            parts.append("members of " + word + ", ".join(self.groups))
        said = " or ".join(parts) if parts else "any account"
        if not self.starter:
            said += ", not the account that started the run" + (f" ({started_by})" if started_by else "")
        return said

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.accounts, self.groups, self.starter, self.required))

    def __repr__(self) -> str:
        return f"Policy({self.to_dict()!r})"


RECORD_KEYS = ("accounts", "groups", "starter", "required")


def read_captured(value: Any, path: str) -> dict[str, Any]:
    """A policy as a run record keeps it (ACCESS-001): exactly {accounts, groups, starter,
    required}; anything else is a record this swamp does not understand (RUN-010)."""
    from .records import RecordError

    def names(item: Any) -> bool:
        return isinstance(item, list) and all(isinstance(n, str) and n for n in item)

    if (
        not isinstance(value, dict)
        or sorted(value) != sorted(RECORD_KEYS)
        or not names(value["accounts"])
        or not names(value["groups"])
        or not isinstance(value["starter"], bool)
        or isinstance(value["required"], bool)
        or not isinstance(value["required"], int)
        or value["required"] < 1
    ):
        raise RecordError(f"{path}: expected a policy {{accounts, groups, starter, required}}")
    return value


class Admins:
    """`.swamp.yaml`'s `admins`: who may answer past a policy with an override (ACCESS-020)."""

    __slots__ = ("accounts", "groups")

    def __init__(self, accounts: Iterable[str] = (), groups: Iterable[str] = ()) -> None:
        self.accounts = tuple(accounts)
        self.groups = tuple(groups)

    def include(self, account: str, groups: Iterable[str]) -> bool:
        return account in self.accounts or not set(groups).isdisjoint(self.groups)

    def describe(self) -> str:
        parts = []
        if self.accounts:
            parts.append(("account " if len(self.accounts) == 1 else "accounts ") + ", ".join(self.accounts))
        if self.groups:
            word = "group " if len(self.groups) == 1 else "groups "
            parts.append("members of " + word + ", ".join(self.groups))
        return " or ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"accounts": list(self.accounts), "groups": list(self.groups)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Admins) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.accounts, self.groups))

    def __repr__(self) -> str:
        return f"Admins({self.to_dict()!r})"


NO_ADMINS = Admins()
