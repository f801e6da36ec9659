"""What a save of a run changed, as the events other processes care about.

Why: programs that drive swamp (and the wait-open hook) must learn that a wait opened, a wait
settled, a run suspended or a run finished, whichever process made the change (a CLI in another
terminal, serve, a helper). Every change to a run ends in one save of its record by the holder of
its claim, so the store compares the state the run was loaded in (`RunState`, kept on the run in
memory, never written) with the state it is saved in, and publishes the difference. One
derivation, in one place: the event log, the hooks and watch read the same facts.

The events, in the order one save yields them: `wait_settled` for each wait that was open and
settled, `wait_opened` for each wait that opened (followed by its `wait_settled` when it settled
too, e.g. at once by a held signal), then `run_suspended` or `run_finished` when the run's
status became that.

`workflow watch` reads the record, not the store's saves: it compares two reads of it, step by
step (`settled_since`), and says each wait that settled between them with the same event."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .run import StepRun, WorkflowRun
    from .waits import SignalWait

FINISHED = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True, slots=True)
class RunState:
    """What the events are derived from: the run's status, and its waits by ID (None: open)."""

    status: str
    waits: dict[str, str | None]


def run_state(run: WorkflowRun) -> RunState:
    waits: dict[str, str | None] = {}
    for _, step in run.steps():
        if step.wait is not None:
            waits[step.wait.waitId] = step.wait.outcome
    return RunState(run.status, waits)


def save_deferred(run: WorkflowRun) -> None:
    """A save of `run` was deferred into the next one (RUN-035). A status that publishes nothing
    (`running`) counts as published, so the next save still says what the run did since: a
    continuation that suspends again publishes `run_suspended`, a retried run that ends
    `run_finished` (RUN-036), though its `running` never reached the record. Its waits are not
    touched: what opened or settled meanwhile is published by that next save."""
    before = run.published
    if before is not None and before.status != run.status and run.status not in ("suspended", *FINISHED):
        run.published = RunState(run.status, before.waits)


def run_changes(before: RunState | None, run: WorkflowRun, now: dt.datetime) -> list[dict[str, Any]]:
    """The events between `before` (None: the run was never saved) and `run` as it is now."""
    from .instants import iso
    from .records import write_record

    at = iso(now)
    known = before.waits if before is not None else {}
    head = {"at": at, "runId": run.id, "workflow": run.workflowName, "workflowId": run.workflowId}
    settled: list[dict[str, Any]] = []  # waits open at `before` that settled since
    opened: list[dict[str, Any]] = []  # waits new since `before` (each settled one followed by that)
    for job, step in run.steps():
        wait = step.wait
        if wait is None:
            continue
        was_seen = wait.waitId in known
        if not was_seen or known[wait.waitId] is None:
            if not was_seen:
                opened.append(
                    {
                        "event": "wait_opened",
                        **head,
                        "job": job.name,
                        "step": step.name,
                        "waitId": wait.waitId,
                        "openedAt": wait.openedAt,
                        "deadline": wait.deadline,
                        **({"description": wait.description} if wait.description is not None else {}),
                    }
                )
            if wait.outcome is not None:
                event = _wait_settled(head, job.name, step.name, wait)
                if wait.receipt is not None:
                    event["receipt"] = write_record(wait.receipt)
                (settled if was_seen else opened).append(event)
    events = [*settled, *opened]
    if before is None or before.status != run.status:
        if run.status == "suspended":
            open_ids = [wait for wait, outcome in run_state(run).waits.items() if outcome is None]
            events.append({"event": "run_suspended", **head, "status": run.status, "waitIds": open_ids})
        elif run.status in FINISHED and (before is None or before.status not in FINISHED):
            finished: dict[str, Any] = {"event": "run_finished", **head, "status": run.status}
            if run.failureReason is not None:
                finished["failureReason"] = run.failureReason
            events.append(finished)
    return events


def as_suspended(run: WorkflowRun, waiting: list[dict[str, Any]]) -> WorkflowRun:
    """`run` (a later read of the record; changed in place) put back as it stood at a suspension
    whose `run_suspended` journal event listed `waiting` (`[{job, step, status}]`): those steps
    waiting again, their waits open and their gates undecided, the run suspended. What a watch
    from that suspension compares the record with (WATCH-008)."""
    asked = {(w.get("job"), w.get("step")): w.get("status") for w in waiting if isinstance(w, dict)}
    for job, step in run.steps():
        status = asked.get((job.name, step.name))
        if status not in ("waiting", "waiting_approval"):
            continue
        step.status = status
        if step.wait is not None:
            step.wait.outcome = None
            step.wait.receipt = None
        if step.approval is not None:
            step.approval.decision = None
    run.status = "suspended"
    return run


def settled_since(
    old: StepRun | None, job_name: str, step: StepRun, now: dt.datetime
) -> dict[str, Any] | None:
    """`wait_settled` for a step whose wait was open (or not there yet) in an earlier read of the
    record (`old`; None: no such step then) and is settled in this one; None otherwise. Dated by
    the signal's receipt, or `now` when the wait settled without one."""
    from .instants import iso

    wait = step.wait
    was_open = old is None or old.wait is None or old.wait.outcome is None
    if wait is None or wait.outcome is None or not was_open:
        return None
    at = wait.receipt.receivedAt if wait.receipt else iso(now)
    return _wait_settled({"at": at}, job_name, step.name, wait)


def _wait_settled(head: dict[str, Any], job_name: str, step_name: str, wait: SignalWait) -> dict[str, Any]:
    """A settled wait's event: `head` (when; for the store's events, which run too), then the wait."""
    event: dict[str, Any] = {
        "event": "wait_settled",
        **head,
        "job": job_name,
        "step": step_name,
        "waitId": wait.waitId,
        "outcome": wait.outcome,
    }
    if wait.receipt is not None:
        event["signalId"] = wait.receipt.id
        event["submittedBy"] = wait.receipt.submittedBy
    return event
