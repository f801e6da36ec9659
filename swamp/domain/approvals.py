"""The manual_approval gate's state on a StepRun, and its deadline rule.

A gate is open while it has no decision and its deadline (openedAt + timeout, to the millisecond:
deadlines.py) has not passed;
expired iff now > deadline. An expired gate refuses approve and reject, and the next resume fails
its step with reason `approval_timeout`.

A gate with an approvers policy (captured when it opened, ACCESS-001) records each approval in
`approvals`, and is decided (approved) only when `required` distinct accounts have approved
(ACCESS-014); one reject decides it at once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, ClassVar

from .access import read_captured
from .errors import AlreadyApproved
from .records import BOOL, NUMBER, STR, Reader, list_of, nested, optional, write_record

APPROVAL_TIMEOUT = "approval_timeout"
REJECTED = "rejected"


@dataclass(slots=True)
class ApprovalDecision:
    approved: bool
    decidedBy: str
    decidedAt: str
    reason: str | None = None
    onBehalfOf: str | None = None  # SWAMP_ACTOR of the decider: a claim, beside its account
    override: str | None = None  # an admin decided past the gate's policy, for this reason (ACCESS-021)

    FIELDS: ClassVar[dict[str, Reader]] = {
        "approved": BOOL,
        "decidedBy": STR,
        "decidedAt": STR,
        "reason": optional(STR),
        "onBehalfOf": optional(STR),
        "override": optional(STR),
    }

    def as_outputs(self) -> dict[str, Any]:
        outputs = {
            "approved": self.approved,
            "decidedBy": self.decidedBy,
            "decidedAt": self.decidedAt,
            "reason": self.reason,
        }
        if self.onBehalfOf is not None:
            outputs["onBehalfOf"] = self.onBehalfOf
        if self.override is not None:
            outputs["override"] = self.override
        return outputs


@dataclass(slots=True)
class Approval:
    """One approval of a gate with an approvers policy, towards its `required` (ACCESS-014)."""

    by: str
    at: str
    onBehalfOf: str | None = None
    override: str | None = None
    reason: str | None = None  # the approver's --reason

    FIELDS: ClassVar[dict[str, Reader]] = {
        "by": STR,
        "at": STR,
        "onBehalfOf": optional(STR),
        "override": optional(STR),
        "reason": optional(STR),
    }


@dataclass(slots=True)
class ApprovalGate:
    prompt: str
    openedAt: str
    timeout: float | None = None
    deadline: str | None = None
    decision: ApprovalDecision | None = None
    # Who may decide, captured from the step's `approvers:` when the gate opened (ACCESS-001), as
    # domain/access.py Policy.to_dict(); None: anyone may, and one approval decides.
    approvers: dict[str, Any] | None = None
    approvals: list[Approval] | None = None  # with approvers: every approval so far, oldest first

    FIELDS: ClassVar[dict[str, Reader]] = {
        "prompt": STR,
        "openedAt": STR,
        "timeout": optional(NUMBER),
        "deadline": optional(STR),
        "decision": optional(nested(ApprovalDecision)),
        "approvers": optional(read_captured),
        "approvals": optional(list_of(nested(Approval))),
    }

    @property
    def required(self) -> int:
        required = (self.approvers or {}).get("required", 1)
        return required if isinstance(required, int) and required >= 1 else 1

    def approval_by(self, account: str) -> Approval | None:
        return next((a for a in self.approvals or () if a.by == account), None)

    @property
    def remaining(self) -> int:
        """How many more distinct approvals the gate needs to open (0 once decided)."""
        if self.decision is not None:
            return 0
        return max(self.required - len(self.approvals or ()), 0)

    def progress(self) -> dict[str, Any]:
        """The gate's approvals so far, for approvals / history get / approve's result."""
        return {
            "required": self.required,
            "approvals": [write_record(a) for a in self.approvals or ()],
            "remaining": self.remaining,
        }

    def add_approval(self, approval: Approval) -> bool:
        """Record an approval of a gate with a policy; True when the gate now has enough."""
        earlier = self.approval_by(approval.by)
        if earlier is not None:
            raise AlreadyApproved(
                f"{approval.by} already approved at {earlier.at}; an account counts once. "
                f"The gate needs {self.remaining} more approval(s) from other approvers",
                {"account": approval.by, "approvedAt": earlier.at, **self.progress()},
            )
        self.approvals = [*(self.approvals or ()), approval]
        return len(self.approvals) >= self.required

    def is_expired(self, now: dt.datetime) -> bool:
        from .instants import parse_iso

        return self.deadline is not None and now > parse_iso(self.deadline)
