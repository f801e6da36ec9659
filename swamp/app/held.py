"""Early signals to reserved waits: held before the step opens, applied or refused exactly once.

A signal to a reserved wait whose step has not opened is checked as far as it can be (the wait is
reserved and can still open, none is held yet, the payload's size, JSON and the schema from the
definition the run saved), then HELD (store/held.py) without the run's claim: the process
executing the run holds that claim, and the sender must not wait for it.

Exactly once, whoever is first. Only a holder of the run's claim applies a held signal, and the
record decides: a held signal whose wait already holds its signal ID is done (its file is only
removed), one whose wait is open is applied, saved, and only then its file removed. The executor
looks for a held signal when a wait opens (`at_open`) and again after it saved the run suspended,
before it lets the claim go (`sweep`). The sender writes its file first and reads the record
after: so either the executor's later look finds the file, or the sender's read finds the wait
open and the sender applies it itself under the claim (`hold`, in hold.py). A held signal is never dropped
while its step can still open; once it cannot (the step was skipped, the run finished, a retry
reset the wait) it is refused, the refusal appended to the run's audit trail.

Machinery below the use cases: settling held signals under a claim (`settle_claimed`, for resume,
signal and the continuations; `settle_after`, for cancel and reject; `EarlySignals`, for the
engine), and what `wait show` and `waits --reserved` say about them. It imports no use case; the
signal use case's own part, holding a signal, is hold.py.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..domain.errors import SwampError
from ..domain.held import HeldSignal, apply_held, closed_error, reserved_schema
from ..domain.run import JobRun, StepRun, WorkflowRun
from ..domain.waits import (
    SignalReceipt,
    WaitNotFound,
)
from .context import App
from .signal_results import signal_audit


class EarlySignals:
    """The engine's port for held signals (engine/ports.py), and the sweep every claim holder runs."""

    def __init__(self, app: App):
        self.app = app
        self.store = app.held
        self._applied: list[tuple[str, HeldSignal]] = []  # applied in memory, file removed after the save
        self.outcomes: dict[str, SignalReceipt | SwampError] = {}

    # -- the executor, holding the run's claim --------------------------------------------------

    def at_open(self, run: WorkflowRun, job: JobRun, step: StepRun, now: dt.datetime) -> bool:
        """The step's wait just opened: apply the signal held for it, if any. True: accepted, the
        step succeeded (the run does not suspend for it)."""
        assert step.wait is not None
        wait_id = step.wait.waitId
        if not self.store.exists(wait_id):
            return False
        held = self.store.read(wait_id)
        if held is None:
            return False
        return self._apply(run, step, held, now)

    def after_save(self, run: WorkflowRun) -> None:
        """The run was saved: the held signals applied in it are done; remove their files (the one
        that removes a file notes the acceptance in the audit trail)."""
        applied, self._applied = self._applied, []
        for wait_id, held in applied:
            if self.store.discard(wait_id):
                self._audit(run, held, "accepted", signal_id=held.signalId)

    def sweep(self, run: WorkflowRun, now: dt.datetime) -> bool:
        """With the run's claim held and the run as last saved: apply the held signals of its open
        waits (True when one was: save the run, then call after_save), remove the files of those the
        record already holds, and refuse those whose wait can no longer open."""
        changed = False
        for job, step in run.steps():
            if step.wait is not None:
                wait_id = step.wait.waitId
                if not self.store.exists(wait_id):
                    continue
                held = self.store.read(wait_id)
                if held is None:
                    continue
                receipt = step.wait.receipt
                if receipt is not None and receipt.id == held.signalId:
                    self._applied.append((wait_id, held))  # applied; its file outlived a crash
                    self.outcomes[wait_id] = receipt
                elif run.status == "running" and step.wait.outcome is None:
                    continue  # its executor is gone (we hold the claim): a resume settles the run first
                elif self._apply(run, step, held, now):
                    changed = True
            elif step.reservedWaitId is not None:
                closed = closed_error(run, job, step, step.reservedWaitId)
                if closed is not None and self.store.exists(step.reservedWaitId):
                    self.refuse(run, step.reservedWaitId, closed)
        for wait_id in run.retiredWaitIds:
            if self.store.exists(wait_id):
                self.refuse(
                    run,
                    wait_id,
                    WaitNotFound(
                        f"Wait {wait_id} was reset by a retry before its held signal was applied",
                        {"waitId": wait_id, "reason": "reset", "runId": run.id},
                    ),
                )
        return changed

    def _apply(self, run: WorkflowRun, step: StepRun, held: HeldSignal, now: dt.datetime) -> bool:
        assert step.wait is not None
        try:
            receipt = apply_held(now, step, held, self.app.validation.problems)
        except SwampError as exc:
            self.refuse(run, step.wait.waitId, exc, held)
            return False
        self._applied.append((step.wait.waitId, held))
        self.outcomes[step.wait.waitId] = receipt
        return True

    def refuse(
        self, run: WorkflowRun, wait_id: str, error: SwampError, held: HeldSignal | None = None
    ) -> None:
        held = held or self.store.read(wait_id)
        self.outcomes[wait_id] = error
        if self.store.discard(wait_id) and held is not None:
            self._audit(run, held, error.code, signal_id=held.signalId)

    def _audit(self, run: WorkflowRun, held: HeldSignal, code: str, *, signal_id: str) -> None:
        """The held signal's outcome in the run's audit trail: by its sender, marked `held`."""
        now = self.app.clock.now()
        entry = signal_audit(now, held.submittedBy, held.onBehalfOf, held.waitId, code, signal_id, held=True)
        if held.permissionId is not None:  # held with a permission of the reserved wait (GATEWAY-054)
            entry.update({"via": "permission", "permissionId": held.permissionId})
        self.app.runs.append_audit(run, entry)


def settle_claimed(app: App, run: WorkflowRun) -> EarlySignals:
    """Under the run's claim: apply, remove or refuse what is held for the run's waits, saving the
    run when a held signal was applied."""
    early = EarlySignals(app)
    if early.sweep(run, app.clock.now()):
        app.runs.save(run, settled_only=run.status == "suspended")
    early.after_save(run)
    return early


def settle_after(app: App, run: WorkflowRun) -> None:
    """After a run finished (cancel, reject): refuse what is held for its waits that never opened.
    A finished run is final, so this needs no claim (the one that removes a file notes it)."""
    if run.is_terminal:
        EarlySignals(app).sweep(run, app.clock.now())


def held_fields(app: App, run: WorkflowRun, wait_id: str) -> dict[str, Any]:
    """What `wait show` adds about early signals: the one held (`held`), or the last one refused
    (`heldRefused`, from the audit trail)."""
    fields: dict[str, Any] = {}
    held = app.held.read(wait_id)
    if held is not None:
        fields["held"] = held.summary()
    refused = [
        e
        for e in app.runs.read_audit(run)
        if e.get("waitId") == wait_id and e.get("held") is True and e.get("code") != "accepted"
    ]
    if refused:
        last = refused[-1]
        fields["heldRefused"] = {
            "signalId": last.get("signalId"),
            "code": last.get("code"),
            "at": last.get("at"),
        }
    return fields


def show_reserved(app: App, run: WorkflowRun, job: JobRun, step: StepRun, wait_id: str) -> dict[str, Any]:
    """`wait show` of a reserved wait whose step has not opened it (WAIT-073)."""
    schema = reserved_schema(run, job.name, step.template)
    closed = closed_error(run, job, step, wait_id)
    doc: dict[str, Any] = {
        "waitId": wait_id,
        "workflowName": run.workflowName,
        "workflowId": run.workflowId,
        "runId": run.id,
        "jobName": job.name,
        "stepName": step.name,
        "status": "closed" if closed is not None else "reserved",
        "stepStatus": step.status,
        "runStatus": run.status,
        "schema": schema,
    }
    if step.permissions:  # granted before it opened (GATEWAY-054); never a token nor its hash
        now = app.clock.now()
        doc["permissions"] = [permission.shown(now) for permission in step.permissions]
    doc.update(held_fields(app, run, wait_id))
    if closed is None and "held" not in doc:
        from .views import signal_command

        doc["next"] = [signal_command(app, wait_id, schema)]
    return doc


def reserved_entries(app: App, workflow_id: str | None) -> list[dict[str, Any]]:
    """`waits --reserved`: the reserved waits of unfinished runs whose steps have not opened them."""
    store = app.held
    runs, _ = app.runs.active_runs(workflow_id)
    entries = []
    for run in runs:
        for job, step in run.reserved_waits():
            assert step.reservedWaitId is not None
            if step.is_terminal:
                continue
            entries.append(
                {
                    "waitId": step.reservedWaitId,
                    "workflowName": run.workflowName,
                    "workflowId": run.workflowId,
                    "runId": run.id,
                    "jobName": job.name,
                    "stepName": step.name,
                    "stepStatus": step.status,
                    "held": store.exists(step.reservedWaitId),
                }
            )
    entries.sort(key=lambda e: (e["runId"], e["waitId"]))
    return entries
