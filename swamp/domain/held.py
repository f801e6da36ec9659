"""Early signals: a signal sent to a reserved wait before its step opens is held, then applied or
refused when the step opens (spec/waits.md, WAIT-066..).

Why: an outside system told a wait ID ahead of time (an earlier step hands it over through
`steps.<name>.waitId`) may answer before the run reaches the step. Its answer must be neither lost
nor applied twice. The rules here decide what a held signal is and what it does when its wait
opens; the store keeps it (one file per wait, created exclusively: store/held.py) and the holder of
the run's claim applies it (app/held.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import SwampError
from .records import ANY, STR, Reader, optional
from .waits import PayloadInvalid, SignalReceipt, WaitExpired, check_payload_value

if TYPE_CHECKING:
    from .run import JobRun, StepRun, WorkflowRun


class SignalHeld(SwampError):
    code = "signal_held"


class WaitClosed(SwampError):
    code = "wait_closed"


@dataclass(slots=True)
class HeldSignal:
    """A signal held for a reserved wait: its payload (already checked against the step's schema
    when it was held), who sent it and the signal ID it will be received under."""

    waitId: str
    runId: str
    workflowId: str
    signalId: str
    heldAt: str
    submittedBy: str
    payload: Any
    onBehalfOf: str | None = None
    # Held with a signal permission granted on the reserved wait (GATEWAY-054): its use is counted
    # when the signal is applied, and the receipt names it.
    permissionId: str | None = None
    deliveryId: str | None = None  # the sender's ID of this delivery (WAIT-086), kept on the receipt

    FIELDS: ClassVar[dict[str, Reader]] = {
        "waitId": STR,
        "runId": STR,
        "workflowId": STR,
        "signalId": STR,
        "heldAt": STR,
        "submittedBy": STR,
        "payload": ANY,
        "onBehalfOf": optional(STR),
        "permissionId": optional(STR),
        "deliveryId": optional(STR),
    }

    def summary(self) -> dict[str, Any]:
        shown = {"signalId": self.signalId, "heldAt": self.heldAt, "submittedBy": self.submittedBy}
        if self.onBehalfOf is not None:
            shown["onBehalfOf"] = self.onBehalfOf
        return shown


def reserved_schema(run: WorkflowRun, job_name: str, template: str) -> dict[str, Any] | bool:
    """The schema the step's wait will capture, from the definition the run saved when it started
    (the one it executes), so an early payload is checked against what its wait will accept."""
    for job in run.definition.get("jobs") or []:
        if isinstance(job, dict) and job.get("name") == job_name:
            for step in job.get("steps") or []:
                if isinstance(step, dict) and step.get("name") == template:
                    task = step.get("task") or {}
                    schema = task.get("schema", {}) if isinstance(task, dict) else {}
                    return schema if isinstance(schema, (dict, bool)) else {}
    return {}


def closed_error(run: WorkflowRun, job: JobRun, step: StepRun, wait_id: str) -> WaitClosed | None:
    """Why a reserved wait that never opened can no longer take a signal, or None while it still
    can: its run finished, or its step ended without waiting (skipped by a guard or a dependency)."""
    if step.is_terminal:
        why = f"step '{step.name}' ended {step.status} without waiting ({step.reason or step.status})"
    elif run.is_terminal:
        why = f"its run {run.id} {run.status} before step '{step.name}' opened it"
    else:
        return None
    return WaitClosed(
        f"Wait {wait_id} was reserved, but {why}; it takes no signal. "
        f"See the run with: swamp workflow history get {run.id}",
        {
            "waitId": wait_id,
            "runId": run.id,
            "jobName": job.name,
            "stepName": step.name,
            "stepStatus": step.status,
            "runStatus": run.status,
        },
    )


def apply_held(
    now: dt.datetime,
    step: StepRun,
    held: HeldSignal,
    schema_problems: Callable[[Any, Any], list[Any]],
) -> SignalReceipt:
    """Apply a held signal to its step's wait, now open, exactly as an ordinary signal would be
    taken at this moment (WAIT-016, less the run's status: the caller holds the claim of the run
    it executes): the wait is still waiting, not expired, and the payload passes the captured
    schema. A refusal raises the ordinary signal's error and changes nothing."""
    wait = step.wait
    assert wait is not None
    if step.status != "waiting" or wait.outcome is not None:
        raise step.settled_error(held.payload, held.deliveryId)
    if wait.is_expired(now):
        raise WaitExpired(
            f"Wait {wait.waitId} (step '{step.name}') expired at {wait.deadline} before its held signal "
            "could be applied",
            {"waitId": wait.waitId, "deadline": wait.deadline},
        )
    check_payload_value(held.payload)
    problems = schema_problems(held.payload, wait.schema)
    if problems:
        listed = "; ".join(str(p) for p in problems)
        raise PayloadInvalid(
            f"The held payload does not match the schema of wait {wait.waitId}: {listed}",
            {"waitId": wait.waitId, "errors": [p.to_dict() for p in problems]},
        )
    permission = None
    if held.permissionId is not None:  # its token is checked again: revoked or expired since?
        from .permissions import admit_held

        permission = admit_held(wait.permissions, held.permissionId, wait.waitId, now)
    receipt = step.accept_signal(
        now,
        held.payload,
        held.submittedBy,
        held.onBehalfOf,
        signal_id=held.signalId,
        held_at=held.heldAt,
        delivery_id=held.deliveryId,
    )
    if permission is not None:
        from .permissions import use

        use(permission, receipt.id)
        receipt.permissionId = permission.id
        receipt.grantedBy = permission.grantedBy
        if isinstance(step.outputs, dict):
            step.outputs["signal"] = receipt.as_signal()
    return receipt
