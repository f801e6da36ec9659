"""The manual_approval gate's state on a StepRun, and its deadline rule.

A gate is open while it has no decision and its deadline (openedAt + timeout, to the millisecond:
deadlines.py) has not passed;
expired iff now > deadline. An expired gate refuses approve and reject, and the next resume fails
its step with reason `approval_timeout`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, ClassVar

from .records import BOOL, NUMBER, STR, Reader, nested, optional

APPROVAL_TIMEOUT = "approval_timeout"
REJECTED = "rejected"


@dataclass(slots=True)
class ApprovalDecision:
    approved: bool
    decidedBy: str
    decidedAt: str
    reason: str | None = None
    onBehalfOf: str | None = None  # SWAMP_ACTOR of the decider: a claim, beside its account

    FIELDS: ClassVar[dict[str, Reader]] = {
        "approved": BOOL,
        "decidedBy": STR,
        "decidedAt": STR,
        "reason": optional(STR),
        "onBehalfOf": optional(STR),
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
        return outputs


@dataclass(slots=True)
class ApprovalGate:
    prompt: str
    openedAt: str
    timeout: float | None = None
    deadline: str | None = None
    decision: ApprovalDecision | None = None

    FIELDS: ClassVar[dict[str, Reader]] = {
        "prompt": STR,
        "openedAt": STR,
        "timeout": optional(NUMBER),
        "deadline": optional(STR),
        "decision": optional(nested(ApprovalDecision)),
    }

    def is_expired(self, now: dt.datetime) -> bool:
        from .instants import parse_iso

        return self.deadline is not None and now > parse_iso(self.deadline)
