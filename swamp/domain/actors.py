"""Who acts on a run: the account that made a change, and who it says it acts for.

`account` is what the OS vouches for (the real user ID of the process, or the connecting peer of
`swamp serve --socket`); it is what `submittedBy`, `decidedBy`, `initiatedBy` and an audit entry's
`by` record, and no environment variable changes it. `on_behalf_of` is only a claim (SWAMP_ACTOR:
a bot or a shared service account naming the person it relays for); it is recorded beside the
account as `onBehalfOf`, never instead of it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Actor:
    account: str
    on_behalf_of: str | None = None
