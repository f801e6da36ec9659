"""The run aggregate: WorkflowRun (the root), JobRun and StepRun, with every transition.

A run record is read back exactly as written. Statuses are closed sets: a record carrying a
status this version does not know is refused (RunUnreadable) and never rewritten, so an older
reader can never mistake a newer kind of wait for something it understands.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from . import suggested
from .approvals import APPROVAL_TIMEOUT, REJECTED, Approval, ApprovalDecision, ApprovalGate
from .changes import RunState
from .deadlines import deadline_after
from .errors import (
    ApprovalExpired,
    RunNotSuspended,
    RunTerminal,
    RunUnreadable,
    StepNotFound,
    StepNotWaiting,
    SwampError,
)
from .instants import iso, parse_iso
from .records import (
    ANY,
    BOOL,
    INT,
    OBJECT,
    STR,
    Reader,
    RecordError,
    list_of,
    map_of,
    nested,
    one_of,
    optional,
    read_record,
    write_record,
)
from .waits import (
    WAIT_TIMEOUT,
    SignalReceipt,
    SignalWait,
    WaitExpired,
    WaitNotFound,
    WaitOpen,
    WaitRejection,
    WaitSettled,
    empty_explained,
    new_signal_id,
    new_wait_id,
    payload_digest,
    payload_invalid,
)

if TYPE_CHECKING:
    from .permissions import Permission

FORMAT_VERSION = 1


_UNREADABLE = object()  # a payload that could not be read never equals a stored one


RUN_STATUSES = ("pending", "running", "suspended", "succeeded", "failed", "cancelled")
JOB_STATUSES = ("pending", "running", "succeeded", "failed", "skipped")
STEP_STATUSES = ("pending", "running", "waiting_approval", "waiting", "succeeded", "failed", "skipped")

TERMINAL_STEP = frozenset({"succeeded", "failed", "skipped"})
TERMINAL_JOB = frozenset({"succeeded", "failed", "skipped"})
TERMINAL_RUN = frozenset({"succeeded", "failed", "cancelled"})
WAITING_STEP = frozenset({"waiting", "waiting_approval"})


def _duration_ms(started: str | None, completed: str | None) -> int | None:
    if not started or not completed:
        return None
    return max(0, round((parse_iso(completed) - parse_iso(started)).total_seconds() * 1000))


@dataclass(slots=True)
class StepRun:
    name: str
    status: str = "pending"
    forEachTemplate: str | None = None
    forEachItem: dict[str, Any] | None = None
    startedAt: str | None = None
    completedAt: str | None = None
    durationMs: int | None = None
    error: str | None = None
    reason: str | None = None
    allowedFailure: bool = False
    outputs: Any = None
    approval: ApprovalGate | None = None
    wait: SignalWait | None = None
    # A wait_for_signal step's wait ID, reserved before the step runs (WAIT-066): the wait opens
    # under it, and a signal sent to it earlier is held until then (held.py).
    reservedWaitId: str | None = None
    # Signal permissions granted on the reserved wait before it opened (GATEWAY-054): they move to
    # the wait when it opens, so a callback handed the wait ID and a token early is held, not lost.
    permissions: list[Permission] | None = None

    FIELDS: ClassVar[dict[str, Reader]] = {
        "name": STR,
        "status": one_of(STEP_STATUSES, "step status"),
        "forEachTemplate": optional(STR),
        "forEachItem": optional(OBJECT),
        "startedAt": optional(STR),
        "completedAt": optional(STR),
        "durationMs": optional(INT),
        "error": optional(STR),
        "reason": optional(STR),
        "allowedFailure": BOOL,
        "outputs": ANY,
        "approval": optional(nested(ApprovalGate)),
        "wait": optional(nested(SignalWait)),
        "reservedWaitId": optional(STR),
        "permissions": optional(lambda value, path: _step_permissions(value, path)),
    }

    @property
    def template(self) -> str:
        return self.forEachTemplate or self.name

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STEP

    def start(self, now: dt.datetime) -> None:
        self.status = "running"
        self.startedAt = iso(now)
        self.completedAt = None
        self.durationMs = None

    def succeed(self, now: dt.datetime, outputs: Any = None) -> None:
        self.status = "succeeded"
        self.outputs = outputs
        self._finish(now)

    def fail(self, now: dt.datetime, error: str, *, reason: str | None = None, allowed: bool = False) -> None:
        self.status = "failed"
        self.error = error
        self.reason = reason
        self.allowedFailure = allowed
        self._finish(now)

    def skip(self, now: dt.datetime, reason: str) -> None:
        self.status = "skipped"
        self.reason = reason
        self._finish(now)

    # -- the approval gate ----------------------------------------------------------------------

    def open_gate(
        self, now: dt.datetime, prompt: str, timeout: float | None, approvers: dict[str, Any] | None = None
    ) -> None:
        opened = iso(now)
        deadline = iso(deadline_after(parse_iso(opened), timeout)) if timeout is not None else None
        self.status = "waiting_approval"
        self.approval = ApprovalGate(
            prompt=prompt, openedAt=opened, timeout=timeout, deadline=deadline, approvers=approvers
        )

    def decide_gate(
        self,
        now: dt.datetime,
        *,
        approved: bool,
        user: str,
        reason: str | None,
        on_behalf_of: str | None = None,
        override: str | None = None,
    ) -> bool:
        """Approve or reject an open gate; refuses a step that is not waiting or a gate past its
        deadline. A gate with an approvers policy takes approvals until `required` distinct
        accounts have approved (ACCESS-014). True when the gate is now decided."""
        gate = self.approval
        if self.status != "waiting_approval" or gate is None:
            raise StepNotWaiting(
                f"Step '{self.name}' is not awaiting approval (it is {self.status})",
                {"step": self.name, "status": self.status},
            )
        if gate.is_expired(now):
            raise ApprovalExpired(
                f"The approval of step '{self.name}' expired at {gate.deadline}; "
                "resume the run to fail the step with approval_timeout",
                {"step": self.name, "deadline": gate.deadline},
            )
        if approved and gate.approvers is not None:
            approval = Approval(
                by=user, at=iso(now), onBehalfOf=on_behalf_of, override=override, reason=reason
            )
            if not gate.add_approval(approval):
                return False
        gate.decision = ApprovalDecision(
            approved=approved,
            decidedBy=user,
            decidedAt=iso(now),
            reason=reason,
            onBehalfOf=on_behalf_of,
            override=override,
        )
        if approved:
            self.succeed(now, gate.decision.as_outputs())
        else:
            self.fail(now, reason or "Approval rejected", reason=REJECTED)
            self.outputs = gate.decision.as_outputs()
        return True

    # -- the signal wait ---------------------------------------------------------------------

    def start_waiting(self, wait: SignalWait) -> None:
        self.status = "waiting"
        self.wait = wait
        if self.permissions:  # granted while the wait was reserved: now the wait's (GATEWAY-054)
            wait.permissions = [*self.permissions, *(wait.permissions or [])]
            self.permissions = None

    @property
    def reserved_only(self) -> bool:
        """Whether the step holds a reserved wait ID whose wait has not opened (yet)."""
        return self.reservedWaitId is not None and self.wait is None

    def accept_signal(
        self,
        now: dt.datetime,
        payload: Any,
        user: str,
        on_behalf_of: str | None = None,
        *,
        signal_id: str | None = None,
        held_at: str | None = None,
        override: str | None = None,
        delivery_id: str | None = None,
    ) -> SignalReceipt:
        """The one place that decides whether a signal is taken: only an open, unexpired wait."""
        wait = self.wait
        assert wait is not None
        if self.status != "waiting" or wait.outcome is not None:
            raise self.settled_error(payload, delivery_id)
        if wait.is_expired(now):
            raise WaitExpired(
                f"Wait {wait.waitId} (step '{self.name}') expired at {wait.deadline} and takes no signal; "
                "the next resume fails the step with wait_timeout",
                {"waitId": wait.waitId, "deadline": wait.deadline},
            )
        receipt = SignalReceipt(
            id=signal_id or new_signal_id(),
            waitId=wait.waitId,
            receivedAt=iso(now),
            submittedBy=user,
            payloadSha256=payload_digest(payload),
            onBehalfOf=on_behalf_of,
            heldAt=held_at,
            override=override,
            deliveryId=delivery_id,
        )
        wait.receipt = receipt
        wait.settle("received", now)
        self.succeed(now, {"payload": payload, "signal": receipt.as_signal()})
        return receipt

    def settled_error(self, payload: Any, delivery_id: str | None = None) -> WaitSettled:
        """`samePayload` compares the payload with the one taken; with a delivery ID (WAIT-087),
        `sameDelivery` compares that ID with the receipt's (a receipt without one is another)."""
        wait = self.wait
        assert wait is not None
        details: dict[str, Any] = {"waitId": wait.waitId, "outcome": wait.outcome, "status": self.status}
        if wait.receipt is not None:
            details["receipt"] = wait.receipt.as_signal()
            details["samePayload"] = payload_digest(payload) == wait.receipt.payloadSha256
            said = f"already received signal {wait.receipt.id} at {wait.receipt.receivedAt}"
            if delivery_id is not None:
                details["sameDelivery"] = delivery_id == wait.receipt.deliveryId
                if details["sameDelivery"]:
                    said += f", from this same delivery ({delivery_id}): it was taken once"
        else:
            said = f"already settled ({wait.outcome or self.status})"
        return WaitSettled(
            f"Wait {wait.waitId} (step '{self.name}') {said}; it takes no other signal", details
        )

    def time_out_wait(self, now: dt.datetime, allowed: bool) -> None:
        assert self.wait is not None
        self.wait.settle("timed_out", now)
        self.fail(
            now,
            f"Wait timed out: no signal by {self.wait.deadline}",
            reason=WAIT_TIMEOUT,
            allowed=allowed,
        )

    def settle_waiting(self, now: dt.datetime, reason: str, error: str) -> None:
        """Cancel and reject close every open wait: the step fails and is never left waiting."""
        if self.status in WAITING_STEP:
            if self.wait is not None and self.wait.outcome is None:
                self.wait.settle("rejected" if reason == REJECTED else "cancelled", now)
            self.fail(now, error, reason=reason)
        elif self.status == "running":
            self.fail(now, "interrupted: " + error, reason="interrupted")

    def reset(self) -> None:
        """Back to pending for a retry: every trace of the earlier attempt goes; a step that had a
        reserved wait ID gets a fresh one (the old one is retired by reset_steps)."""
        fresh = StepRun(name=self.name, forEachTemplate=self.forEachTemplate, forEachItem=self.forEachItem)
        if self.reservedWaitId is not None:
            fresh.reservedWaitId = new_wait_id()
        for name in self.FIELDS:
            setattr(self, name, getattr(fresh, name))

    def _finish(self, now: dt.datetime) -> None:
        self.completedAt = iso(now)
        self.durationMs = _duration_ms(self.startedAt, self.completedAt)


@dataclass(slots=True)
class JobRun:
    name: str
    status: str = "pending"
    startedAt: str | None = None
    completedAt: str | None = None
    durationMs: int | None = None
    expandedTemplates: list[str] = field(default_factory=list)
    steps: list[StepRun] = field(default_factory=list)

    FIELDS: ClassVar[dict[str, Reader]] = {
        "name": STR,
        "status": one_of(JOB_STATUSES, "job status"),
        "startedAt": optional(STR),
        "completedAt": optional(STR),
        "durationMs": optional(INT),
        "expandedTemplates": list_of(STR),
        "steps": list_of(nested(StepRun)),
    }

    def step(self, name: str) -> StepRun | None:
        for step in self.steps:
            if step.name == name:
                return step
        return None

    def start(self, now: dt.datetime) -> None:
        if self.status != "running":
            self.status = "running"
            self.startedAt = self.startedAt or iso(now)

    def succeed(self, now: dt.datetime) -> None:
        self.status = "succeeded"
        self._finish(now)

    def fail(self, now: dt.datetime) -> None:
        self.status = "failed"
        self._finish(now)

    def skip(self, now: dt.datetime, reason: str = "dependency") -> None:
        self.status = "skipped"
        self._finish(now)
        for step in self.steps:
            if step.status == "pending":
                step.skip(now, reason)

    def reset(self) -> None:
        self.status = "pending"
        self.startedAt = self.completedAt = None
        self.durationMs = None

    def replace_template(self, template: str, expansions: list[StepRun]) -> None:
        """Swap a forEach template's step for its expansions, in place (none: it disappears)."""
        index = next(
            (i for i, s in enumerate(self.steps) if s.name == template and s.forEachTemplate is None), None
        )
        existing = {s.name for s in self.steps}
        fresh = [e for e in expansions if e.name not in existing]
        if index is None:
            self.steps.extend(fresh)
        else:
            self.steps[index : index + 1] = fresh
        if template not in self.expandedTemplates:
            self.expandedTemplates.append(template)

    def template_status(self, template: str) -> str | None:
        """The status a dependency on a forEach template sees: the expansions' combined status."""
        expansions = [s for s in self.steps if s.forEachTemplate == template]
        if not expansions:
            return "skipped" if template in self.expandedTemplates else None
        statuses = {s.status for s in expansions}
        if "failed" in statuses:
            return "failed"
        if statuses <= {"skipped"}:
            return "skipped"
        if statuses <= {"succeeded", "skipped"}:
            return "succeeded"
        return "running"

    def dependency_status(self, name: str) -> str | None:
        step = self.step(name)
        if step is not None and step.forEachTemplate is None and name not in self.expandedTemplates:
            return step.status
        return self.template_status(name)

    def _finish(self, now: dt.datetime) -> None:
        self.completedAt = iso(now)
        self.durationMs = _duration_ms(self.startedAt, self.completedAt)


PROCESS_STOPPED = "the process running this run stopped"


@dataclass(slots=True)
class Interruption:
    """Why a run that was executing was stopped before it could end by itself: a signal to the
    process that executed it (`signal`: SIGINT, SIGTERM), serve's shutdown, or that process found
    gone (CLAIM-009). The run is `failed`; the steps stopped carry `reason: interrupted`."""

    at: str
    reason: str
    signal: str | None = None

    FIELDS: ClassVar[dict[str, Reader]] = {"at": STR, "reason": STR, "signal": optional(STR)}


@dataclass(slots=True)
class WorkflowRun:
    id: str
    workflowId: str
    workflowName: str
    createdAt: str
    formatVersion: int = FORMAT_VERSION
    status: str = "pending"
    startedAt: str | None = None
    completedAt: str | None = None
    durationMs: int | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    resumeInputs: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    initiatedBy: str | None = None
    # The starter a policy's `starter: false` refuses (ACCESS-010); set once, when the run is made.
    startedBy: str | None = None
    onBehalfOf: str | None = None  # SWAMP_ACTOR of whoever started the run, beside initiatedBy
    failedStep: str | None = None
    failureReason: str | None = None
    stepProgress: dict[str, int] = field(default_factory=dict)
    cancelReason: str | None = None
    interruption: Interruption | None = None
    retiredWaitIds: list[str] = field(default_factory=list)
    definition: dict[str, Any] = field(default_factory=dict)
    jobs: list[JobRun] = field(default_factory=list)
    # The state the run was loaded or last saved in (never written): what the store compares a
    # save against to publish what changed (domain/changes.py).
    published: RunState | None = field(default=None, compare=False, repr=False, metadata={"transient": True})

    FIELDS: ClassVar[dict[str, Reader]] = {
        "formatVersion": INT,
        "id": STR,
        "workflowId": STR,
        "workflowName": STR,
        "status": one_of(RUN_STATUSES, "run status"),
        "createdAt": STR,
        "startedAt": optional(STR),
        "completedAt": optional(STR),
        "durationMs": optional(INT),
        "inputs": OBJECT,
        "resumeInputs": list_of(STR),
        "tags": map_of(STR),
        "initiatedBy": optional(STR),
        "startedBy": optional(STR),
        "onBehalfOf": optional(STR),
        "failedStep": optional(STR),
        "failureReason": optional(STR),
        "stepProgress": map_of(INT),
        "cancelReason": optional(STR),
        "interruption": optional(nested(Interruption)),
        "retiredWaitIds": list_of(STR),
        "definition": OBJECT,
        "jobs": list_of(nested(JobRun)),
    }

    @property
    def started_by(self) -> str | None:
        """The account that started the run (`startedBy`, RUN-008; resume never changes it): the
        starter a policy's `starter: false` refuses (ACCESS-010). A record written before
        `startedBy` existed says it as `initiatedBy`."""
        return self.startedBy if self.startedBy is not None else self.initiatedBy

    # -- construction and reading -----------------------------------------------------------

    @classmethod
    def create(
        cls,
        *,
        run_id: str,
        workflow_id: str,
        workflow_name: str,
        jobs: list[tuple[str, list[str]]],
        inputs: dict[str, Any],
        tags: dict[str, str],
        initiated_by: str | None,
        now: dt.datetime,
        definition: dict[str, Any] | None = None,
        on_behalf_of: str | None = None,
    ) -> WorkflowRun:
        return cls(
            definition=definition or {},
            id=run_id,
            workflowId=workflow_id,
            workflowName=workflow_name,
            createdAt=iso(now),
            inputs=inputs,
            tags=tags,
            initiatedBy=initiated_by,
            startedBy=initiated_by,
            onBehalfOf=on_behalf_of,
            jobs=[JobRun(name=j, steps=[StepRun(name=s) for s in steps]) for j, steps in jobs],
        )

    @classmethod
    def from_dict(cls, data: Any, source: str = "run record") -> WorkflowRun:
        if not isinstance(data, dict):
            raise RunUnreadable(f"{source} is not a run record (expected a JSON object)", {"path": source})
        version = data.get("formatVersion")
        if version != FORMAT_VERSION:
            raise RunUnreadable(
                f"{source} has formatVersion {version!r}, which this swamp ({FORMAT_VERSION}) cannot read; "
                "upgrade swamp to work with this run",
                {"path": source, "formatVersion": version},
            )
        try:
            return read_record(cls, data, "run")
        except RecordError as exc:
            raise RunUnreadable(
                f"{source} cannot be read by this swamp ({exc}); it may come from a newer version: "
                "upgrade swamp. The record is left as it is",
                {"path": source, "problems": [str(exc)]},
            ) from None

    def to_dict(self) -> dict[str, Any]:
        self._derive()
        return write_record(self)

    # -- lookups ----------------------------------------------------------------------------

    def job(self, name: str) -> JobRun:
        for job in self.jobs:
            if job.name == name:
                return job
        raise KeyError(name)

    def steps(self) -> list[tuple[JobRun, StepRun]]:
        return [(job, step) for job in self.jobs for step in job.steps]

    def waiting_steps(self) -> list[tuple[JobRun, StepRun]]:
        return [(j, s) for j, s in self.steps() if s.status in WAITING_STEP]

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_RUN

    # -- transitions --------------------------------------------------------------------------

    def start(self, now: dt.datetime) -> None:
        self.status = "running"
        self.startedAt = self.startedAt or iso(now)
        self.completedAt = None
        self.durationMs = None
        self.interruption = None  # executing again (resume --from): no longer stopped

    def suspend(self) -> None:
        self.status = "suspended"

    def complete(self, now: dt.datetime) -> None:
        """succeeded iff every job succeeded or was skipped; otherwise failed."""
        if self.status == "cancelled":
            return
        ok = all(job.status in ("succeeded", "skipped") for job in self.jobs)
        self.status = "succeeded" if ok else "failed"
        self._finish(now)

    def fail(self, now: dt.datetime) -> None:
        self.status = "failed"
        self._finish(now)

    def ensure_not_terminal(self) -> None:
        if self.is_terminal:
            raise RunTerminal(
                f"Run {self.id} of {self.workflowName} already finished ({self.status}); nothing to change",
                {"runId": self.id, "status": self.status},
            )

    def ensure_suspended(self) -> None:
        self.ensure_not_terminal()
        if self.status != "suspended":
            raise RunNotSuspended(
                f"Run {self.id} of {self.workflowName} is {self.status}, not suspended; "
                "if it is still finishing its steps, try again in a moment",
                {"runId": self.id, "status": self.status},
            )

    def answered_in_full(self) -> bool:
        """Whether a suspended run waits for nothing any more: it has a signal wait, every wait
        of it is settled (received, rejected or timed out) and no gate awaits a decision. Such a run
        is what `serve --auto-continue` continues, whichever process settled its last wait
        (SERVE-039). A wait past its deadline but not yet failed is still unsettled: failing it is
        --enforce-deadlines' job (SERVE-024)."""
        has_wait = any(step.wait is not None for _, step in self.steps())
        return has_wait and self.may_continue(None)

    def may_continue(self, now: dt.datetime | None) -> bool:
        """Whether the run may be continued: it is suspended and nothing is open (open_steps)."""
        return self.status == "suspended" and not self.open_steps(now)

    def open_steps(self, now: dt.datetime | None) -> list[tuple[JobRun, StepRun]]:
        """The waits and gates that keep the run suspended, in the record's order. Given `now`, one
        past its deadline is not open: continuing the run fails it, as resume does (signal and
        approve --resume, serve after an approve: WAIT-061, SERVE-020). Without `now`, one past its
        deadline stays open until something fails it (auto-continue leaves that to
        --enforce-deadlines, SERVE-024)."""
        found = []
        for job, step in self.steps():
            if step.status == "waiting":
                holder: SignalWait | ApprovalGate | None = step.wait
            elif step.status == "waiting_approval":
                holder = step.approval
            else:
                continue
            if now is None or (holder is not None and not holder.is_expired(now)):
                found.append((job, step))
        return found

    def find_step(self, name: str, job: str | None = None) -> tuple[JobRun, StepRun]:
        matches = [(j, s) for j, s in self.steps() if s.name == name and (job is None or j.name == job)]
        waiting = [(j, s) for j, s in matches if s.status in WAITING_STEP]
        if len(waiting) == 1 or (len(matches) == 1):
            return (waiting or matches)[0]
        if len(waiting) > 1:
            jobs = sorted(j.name for j, _ in waiting)
            raise StepNotFound(
                f"Step '{name}' is waiting in several jobs ({', '.join(jobs)}); add --job JOB",
                {"step": name, "jobs": jobs},
            )
        if matches:
            return matches[0]
        open_gates = sorted(s.name for _, s in self.steps() if s.status == "waiting_approval")
        hint = f" Open gates: {', '.join(open_gates)}" if open_gates else ""
        raise StepNotFound(
            f"Run {self.id} has no step '{name}'{' in job ' + repr(job) if job else ''}.{hint}",
            {"step": name, "openGates": open_gates},
        )

    def decide_gate(
        self,
        now: dt.datetime,
        step_name: str,
        *,
        approved: bool,
        user: str,
        reason: str | None,
        job: str | None = None,
        on_behalf_of: str | None = None,
        override: str | None = None,
    ) -> tuple[JobRun, StepRun]:
        """Decide (or, towards a gate's `required`, approve) a gate; the gate's decision is None
        while it waits for more approvals."""
        self.ensure_suspended()
        job_run, step_run = self.find_step(step_name, job)
        step_run.decide_gate(
            now, approved=approved, user=user, reason=reason, on_behalf_of=on_behalf_of, override=override
        )
        if not approved:
            self.settle(now, REJECTED, f"run rejected at step '{step_name}'")
            job_run.fail(now)
            self.complete(now)
        return job_run, step_run

    def settle(self, now: dt.datetime, reason: str, error: str) -> None:
        """Close every open wait and unfinished step; fail every job still running."""
        for job in self.jobs:
            for step in job.steps:
                step.settle_waiting(now, reason, error)
            if job.status == "running":
                job.fail(now)

    def cancel(self, now: dt.datetime, reason: str) -> None:
        self.ensure_not_terminal()
        self.settle(now, "cancelled", f"run cancelled: {reason}")
        self.status = "cancelled"
        self.cancelReason = reason
        self._finish(now)

    def interrupt(
        self, now: dt.datetime, reason: str = PROCESS_STOPPED, *, signal: str | None = None
    ) -> None:
        """A run whose process stopped (or was stopped) mid-way ends failed, with `interruption`
        saying why. What was running or waiting fails with reason interrupted and an error
        `interrupted: <reason>`; steps not started stay pending; a job that was running ends by
        what its steps did: succeeded if every step finished without a counted failure, failed
        otherwise."""
        if self.interruption is None:
            self.interruption = Interruption(at=iso(now), reason=reason, signal=signal)
        for job in self.jobs:
            for step in job.steps:
                if step.status == "running" or step.status in WAITING_STEP:
                    if step.wait is not None and step.wait.outcome is None:
                        step.wait.settle("cancelled", now)
                    step.fail(now, f"interrupted: {reason}", reason="interrupted")
            if job.status == "running":
                finished = all(s.is_terminal for s in job.steps)
                clean = not any(s.status == "failed" and not s.allowedFailure for s in job.steps)
                if finished and clean:
                    job.succeed(now)
                else:
                    job.fail(now)
        self.fail(now)

    def expire_gates(self, now: dt.datetime, allow_failure: dict[tuple[str, str], bool]) -> list[StepRun]:
        """Fail every gate past its deadline with reason approval_timeout; `allow_failure` is keyed
        by (job, step template)."""
        expired = []
        for job, step in self.steps():
            gate = step.approval
            if step.status == "waiting_approval" and gate is not None and gate.is_expired(now):
                step.fail(
                    now,
                    f"Approval timed out: no decision by {gate.deadline}",
                    reason=APPROVAL_TIMEOUT,
                    allowed=allow_failure.get((job.name, step.template), False),
                )
                expired.append(step)
        return expired

    def open_gates(self, now: dt.datetime) -> list[tuple[JobRun, StepRun]]:
        return [
            (j, s)
            for j, s in self.steps()
            if s.status == "waiting_approval" and s.approval is not None and not s.approval.is_expired(now)
        ]

    def reset_steps(self, reset: dict[str, set[str]]) -> None:
        """Put the named template steps (and their forEach expansions) and their jobs back to pending.
        Their waits are retired: a retry opens a new wait, and a signal to an old ID finds nothing."""
        for job in self.jobs:
            templates = reset.get(job.name)
            if not templates:
                continue
            for step in job.steps:
                if step.template in templates and step.wait is not None:
                    self.retiredWaitIds.append(step.wait.waitId)
                elif step.template in templates and step.reservedWaitId is not None:
                    self.retiredWaitIds.append(step.reservedWaitId)
            rebuilt: list[StepRun] = []
            restored: set[str] = set()
            for step in job.steps:
                if step.forEachTemplate in templates:
                    if step.forEachTemplate not in restored:
                        rebuilt.append(StepRun(name=step.forEachTemplate))
                        restored.add(step.forEachTemplate)
                    continue
                if step.name in templates:
                    step.reset()
                rebuilt.append(step)
            for template in templates & set(job.expandedTemplates):
                if template not in restored:
                    rebuilt.append(StepRun(name=template))
            job.steps = rebuilt
            job.expandedTemplates = [t for t in job.expandedTemplates if t not in templates]
            job.reset()

    # -- signal waits ------------------------------------------------------------------------

    def find_wait(self, wait_id: str) -> tuple[JobRun, StepRun]:
        for job, step in self.steps():
            if step.wait is not None and step.wait.waitId == wait_id:
                return job, step
        if wait_id in self.retiredWaitIds:
            raise WaitNotFound(
                f"Wait {wait_id} was reset by a retry (resume --from) and is closed; "
                "the step waits under a new ID: swamp workflow waits",
                {"waitId": wait_id, "reason": "reset", "runId": self.id},
            )
        raise WaitNotFound(
            f"No wait {wait_id}; list open waits with: swamp workflow waits",
            {"waitId": wait_id, "reason": "unknown"},
        )

    def open_waits(self, now: dt.datetime) -> list[tuple[JobRun, StepRun]]:
        return [
            (j, s)
            for j, s in self.steps()
            if s.status == "waiting" and s.wait is not None and not s.wait.is_expired(now)
        ]

    def holds_wait(self, wait_id: str) -> bool:
        """Whether the wait is (or was, before a retry retired it) one of this run's, opened or
        reserved."""
        return wait_id in self.retiredWaitIds or any(
            (s.wait is not None and s.wait.waitId == wait_id) or s.reservedWaitId == wait_id
            for _, s in self.steps()
        )

    def signalable_wait_ids(self) -> list[str]:
        """The waits a signal can reach now, as the wait index holds them: open ones, and reserved
        ones their steps have not opened (a signal may come early, WAIT-069)."""
        found = []
        for _, step in self.steps():
            if step.wait is not None and step.status == "waiting":
                found.append(step.wait.waitId)
            elif step.wait is None and not step.is_terminal and step.reservedWaitId is not None:
                found.append(step.reservedWaitId)
        return found

    def reserve_waits(self, steps: set[tuple[str, str]]) -> None:
        """Reserve a wait ID for each (job, step) named: its wait_for_signal steps (WAIT-066)."""
        for job, step in self.steps():
            if (job.name, step.name) in steps and step.reservedWaitId is None:
                step.reservedWaitId = new_wait_id()

    def find_reserved(self, wait_id: str) -> tuple[JobRun, StepRun] | None:
        """The step holding `wait_id` reserved whose wait has not opened; None otherwise."""
        for job, step in self.steps():
            if step.reservedWaitId == wait_id and step.wait is None:
                return job, step
        return None

    def reserved_waits(self) -> list[tuple[JobRun, StepRun]]:
        """Steps holding a reserved wait ID whose wait has not opened."""
        return [(j, s) for j, s in self.steps() if s.reserved_only]

    def unsettled_waits(self) -> list[tuple[JobRun, StepRun]]:
        return [(j, s) for j, s in self.steps() if s.status == "waiting" and s.wait is not None]

    def signals_not_resumed(self, levels_of: Callable[[JobRun], list[list[StepRun]]]) -> list[str]:
        """IDs of the waits that took a signal no resume has acted on yet. A job stops at the level
        holding a waiting step; a resume takes it past that level (or finishes it). So a signal is
        not yet resumed while its job is unfinished and every step of its later levels is pending.
        `levels_of(job)` gives the job's steps in execution levels."""
        found = []
        for job in self.jobs:
            if job.status in TERMINAL_JOB:
                continue
            levels = levels_of(job)
            for i, level in enumerate(levels):
                later = [s for lvl in levels[i + 1 :] for s in lvl]
                if any(s.status != "pending" for s in later):
                    continue
                found += [
                    s.wait.waitId
                    for s in level
                    if s.wait is not None and s.wait.outcome == "received" and s.wait.receipt is not None
                ]
        return found

    def signal(
        self,
        now: dt.datetime,
        wait_id: str,
        read_payload: Callable[[], Any],
        user: str,
        schema_problems: Callable[[Any, Any], list[Any]],
        *,
        record: bool = True,
        on_behalf_of: str | None = None,
        override: str | None = None,
        delivery_id: str | None = None,
    ) -> tuple[JobRun, StepRun, Any, SignalReceipt | None]:
        """Deliver a signal, checking in this order: the wait exists, is still waiting, has not
        expired, the run is suspended, the payload reads (size, strict JSON), and it passes the
        captured schema. Any refusal changes nothing. With record=False everything is checked and
        nothing is changed (signal --check). Returns (job, step, payload, receipt)."""
        job, step = self.find_wait(wait_id)
        wait = step.wait
        assert wait is not None
        read_payload = empty_explained(read_payload, wait, schema_problems)
        if step.status != "waiting" or wait.outcome is not None:
            try:
                offered: Any = read_payload()
            except SwampError:
                offered = _UNREADABLE
            raise step.settled_error(offered, delivery_id)
        if wait.is_expired(now):
            raise WaitExpired(
                f"Wait {wait_id} (step '{step.name}') expired at {wait.deadline} and takes no signal; "
                "the next resume fails the step with wait_timeout",
                {"waitId": wait_id, "deadline": wait.deadline},
            )
        if self.status != "suspended":
            self.ensure_suspended()
        payload = read_payload()
        problems = schema_problems(payload, wait.schema)
        if problems:
            raise payload_invalid(wait_id, problems)
        if not record:
            return job, step, payload, None
        return job, step, payload, step.accept_signal(
            now, payload, user, on_behalf_of, override=override, delivery_id=delivery_id
        )

    def reject_wait(
        self,
        now: dt.datetime,
        wait_id: str,
        user: str,
        reason: str | None,
        on_behalf_of: str | None = None,
        override: str | None = None,
    ) -> tuple[JobRun, StepRun]:
        """Reject a signal wait like a gate: the step fails (reason rejected), then its job and the run."""
        reserved = self.find_reserved(wait_id)
        if reserved is not None:
            raise WaitNotFound(
                f"Wait {wait_id} is reserved, but step '{reserved[1].name}' has not opened it "
                f"({reserved[1].status}); reject it once it is open, or cancel the run: "
                f"{suggested.cancel(self.workflowName, self.id)}",
                {
                    "waitId": wait_id,
                    "runId": self.id,
                    "job": reserved[0].name,
                    "step": reserved[1].name,
                    "reason": "no_wait",
                    "stepStatus": reserved[1].status,
                },
            )
        job, step = self.find_wait(wait_id)
        assert step.wait is not None
        if step.status != "waiting" or step.wait.outcome is not None:
            raise step.settled_error(None)
        self.ensure_suspended()
        step.wait.settle("rejected", now)
        step.wait.rejection = WaitRejection(user, iso(now), on_behalf_of, reason or None, override)
        step.fail(now, reason or f"Wait rejected by {user}", reason=REJECTED)
        self.settle(now, REJECTED, f"run rejected at wait {wait_id}")
        job.fail(now)
        self.complete(now)
        return job, step

    def expire_waits(self, now: dt.datetime, allow_failure: dict[tuple[str, str], bool]) -> list[StepRun]:
        """Fail every wait past its deadline with reason wait_timeout; `allow_failure` is keyed by
        (job, step template)."""
        expired = []
        for job, step in self.unsettled_waits():
            assert step.wait is not None
            if step.wait.is_expired(now):
                step.time_out_wait(now, allow_failure.get((job.name, step.template), False))
                expired.append(step)
        return expired

    def ensure_no_open_waits(self, now: dt.datetime) -> None:
        waits = self.open_waits(now)
        if waits:
            ids = [s.wait.waitId for _, s in waits if s.wait is not None]
            raise WaitOpen(
                f"Run {self.id} still waits for {len(ids)} signal(s) ({', '.join(ids)}); "
                f"send each with: swamp workflow signal {ids[0]} --payload '<json>'",
                {"runId": self.id, "waitIds": ids},
            )

    def resume(self, now: dt.datetime, input_keys: list[str]) -> None:
        for key in input_keys:
            if key not in self.resumeInputs:
                self.resumeInputs.append(key)
        self.status = "running"
        self.completedAt = None
        self.durationMs = None

    def _finish(self, now: dt.datetime) -> None:
        self.completedAt = iso(now)
        self.durationMs = _duration_ms(self.startedAt, self.completedAt)

    def _derive(self) -> None:
        failed = next(
            ((j, s) for j, s in self.steps() if s.status == "failed" and not s.allowedFailure), None
        )
        self.failedStep = f"{failed[0].name}.{failed[1].name}" if failed else None
        self.failureReason = failed[1].error if failed else None
        all_steps = [s for _, s in self.steps()]
        self.stepProgress = {
            "completed": sum(1 for s in all_steps if s.is_terminal),
            "total": len(all_steps),
        }


def _step_permissions(value: Any, path: str) -> list[Permission]:
    from .waits import _permissions

    return _permissions(value, path)
