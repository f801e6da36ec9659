"""workflow watch: block until a run leaves `suspended`/`running`, streaming what changes.

A watch only reads: the run's record (its status, waits settled, gates decided; the record is
replaced atomically, so every read is a whole record) and its journal (the events the engine
emits, appended by the process that executes the run: store/journal.py). It never takes the claim
and never writes. It wakes on file changes (store/notify.py), so a watch on an idle run costs no
CPU; while the run is `running` it also checks every CLAIM_PROBE_SECONDS that the process
executing it is alive, since a dead process changes no file (CLAIM-006: then the run is
interrupted and the watch ends).

`timeout` is wall-clock seconds (SWAMP_NOW moves the clock the rules read, never this one); 0
checks once. Events streamed, in order: a `run_status` first (the status when the watch
started), then each journal event as it is appended, and `wait_settled`, `gate_decided` and
`run_status` as the record shows them.

A use case. Which waits settled between two reads of the record is domain/changes.py's rule, as
for every other change to a run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ..domain import suggested
from ..domain.changes import as_suspended, settled_since
from ..domain.errors import ShuttingDown
from ..domain.instants import iso
from ..domain.run import WorkflowRun
from ..engine.ports import Emit
from ..store.journal import RunJournal
from .context import App
from .views import run_document

CLAIM_PROBE_SECONDS = 1.0
ENDED = frozenset({"succeeded", "failed", "cancelled"})
# After the record says the run ended, how long to wait for its executor to let go of the claim
# (it emits `run_completed` after the last save) so the journal's last events are streamed too.
SETTLE_SECONDS = 2.0
# A long-lived host (swamp serve) sets this for its watches: it returns why the watch must end now,
# or None. "shutdown": the watch ends at once with shutting_down instead of holding the host's
# shutdown for its whole grace; "cancelled" (serve's `cancel`): it answers with outcome cancelled
# (PROTO-032).
WATCH_STOP: ContextVar[Callable[[], str | None] | None] = ContextVar("WATCH_STOP", default=None)
STOP_CHECK_SECONDS = 0.25


def watch_run(
    app: App,
    run_ref: str,
    *,
    timeout: float | None = None,
    emit: Emit | None = None,
    from_suspension: bool = False,
) -> dict[str, Any]:
    """`from_suspension` (WATCH-008, for `run --watch` and `resume --watch`): begin at the run's
    last suspension, not now, so what another process did between the run request's answer and
    this watch (a serve that continued the run at once) is reported too."""
    send: Emit = _each_settled_once(emit or (lambda event: None))
    stop = WATCH_STOP.get()
    found = app.runs.find(run_ref)
    journal = RunJournal(app.layout)
    deadline = None if timeout is None else time.monotonic() + timeout
    # Armed before the first read, so a change between that read and the first wait is seen.
    with app.store.run_changes(found, journal.path(found.id)) as changes:
        follower = journal.follow(found.id)
        run = app.runs.load(found.workflowId, found.id)
        suspension = journal.last_suspension(found.id) if from_suspension else None
        if suspension is not None and run.status != "suspended":
            follower.seq = min(follower.seq, suspension[0])
            run = as_suspended(app.runs.load(found.workflowId, found.id), suspension[1].get("waiting") or [])
        send(status_event(app, run))
        passed: set[str] = set()  # waits whose passed deadline this watch reported (WATCH-010)
        while True:
            for _, event in follower.new_events():
                send(event)
            current = app.runs.load(run.workflowId, run.id)
            for event in record_changes(app, run, current):
                send(event)
            run = current
            for event in deadlines_passed(app, run, passed):
                send(event)
            if run.status in ENDED:
                _settle(app, run.id)
                for _, event in follower.new_events():
                    send(event)
                return result(app, run, "finished")
            if run.status == "running" and _interrupted(app, run):
                return result(app, app.runs.load(run.workflowId, run.id), "interrupted")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return result(app, run, "timeout")
            wait = left
            if run.status in ("running", "pending"):
                wait = CLAIM_PROBE_SECONDS if left is None else min(left, CLAIM_PROBE_SECONDS)
            due = next_deadline_in(app, run)
            if due is not None:
                wait = due if wait is None else min(wait, due)
            if stop is not None:
                wait = STOP_CHECK_SECONDS if wait is None else min(wait, STOP_CHECK_SECONDS)
                reason = stop()
                if reason == "cancelled":
                    return result(app, run, "cancelled")
                if reason is not None:
                    raise ShuttingDown(
                        "swamp serve is shutting down; the run goes on: watch it again with "
                        f"{suggested.watch(run.id)}",
                        {"runIds": [run.id]},
                    )
            changes.wait(wait)


def _each_settled_once(emit: Emit) -> Emit:
    """A wait settled is reported once (WATCH-005): the record shows it, and the run's own events
    do too when the process executing it applied a held signal (WATCH-016)."""
    settled: set[str] = set()

    def send(event: dict[str, Any]) -> None:
        if event.get("event") == "wait_settled":
            if event.get("waitId") in settled:
                return
            settled.add(str(event.get("waitId")))
        emit(event)

    return send


def deadlines_passed(app: App, run: WorkflowRun, reported: set[str]) -> list[dict[str, Any]]:
    """A `deadline_passed` event for each wait still unsettled past its deadline that the watch
    has not reported yet (WATCH-010), saying whether a serve enforces it (WAIT-090)."""
    now = app.clock.now()
    due = [
        (job, step)
        for job, step in run.unsettled_waits()
        if step.wait is not None and step.wait.waitId not in reported and step.wait.is_expired(now)
    ]
    if not due:
        return []
    from .announcements import deadlines_enforced

    enforced = deadlines_enforced(app)
    events = []
    for job, step in due:
        assert step.wait is not None
        reported.add(step.wait.waitId)
        events.append(
            {
                "event": "deadline_passed",
                "at": iso(now),
                "runId": run.id,
                "job": job.name,
                "step": step.name,
                "waitId": step.wait.waitId,
                "deadline": step.wait.deadline,
                "deadlineEnforced": enforced,
            }
        )
    return events


def next_deadline_in(app: App, run: WorkflowRun) -> float | None:
    """Seconds until the nearest deadline of an unsettled wait still ahead, so the watch wakes when
    it passes (nothing in the store changes then: WATCH-010); None when there is none."""
    now = app.clock.now()
    ahead = [
        step.wait.seconds_left(now)
        for _, step in run.unsettled_waits()
        if step.wait is not None and not step.wait.is_expired(now)
    ]
    # A hair past the deadline (it is still open at the deadline itself), at least 50 ms apart.
    return max(0.05, min(ahead) + 0.002) if ahead else None


def result(app: App, run: WorkflowRun, outcome: str) -> dict[str, Any]:
    doc = run_document(app, run)
    doc["watch"] = {"outcome": outcome}
    return doc


def _interrupted(app: App, run: WorkflowRun) -> bool:
    """Recorded running, and nobody holds its claim: its process is gone (read again after the
    probe, since a run that just ended lets go of its claim after its last save)."""
    if app.claim_held(run.id):
        return False
    return app.runs.load(run.workflowId, run.id).status == "running"


def _settle(app: App, run_id: str, wait: Callable[[float], None] = time.sleep) -> None:
    until = time.monotonic() + SETTLE_SECONDS
    while app.claim_held(run_id) and time.monotonic() < until:
        wait(0.02)


def status_event(app: App, run: WorkflowRun) -> dict[str, Any]:
    event: dict[str, Any] = {
        "event": "run_status",
        "at": iso(app.clock.now()),
        "runId": run.id,
        "workflow": run.workflowName,
        "status": run.status,
    }
    if run.status == "suspended":
        from .views import suspension

        about = suspension(app, run)
        event["next"] = about["next"]
        if "deadlineEnforced" in about:
            event["deadlineEnforced"] = about["deadlineEnforced"]  # WATCH-011
    return event


def record_changes(app: App, before: WorkflowRun, after: WorkflowRun) -> list[dict[str, Any]]:
    """What the record shows happened between two reads: waits settled, gates decided, and the
    run's status (settling and deciding happen in other processes, outside any execution)."""
    events: list[dict[str, Any]] = []
    earlier = {(job.name, step.name): step for job, step in before.steps()}
    now = app.clock.now()  # when a wait settled without a signal (it expired): as late as this read
    for job, step in after.steps():
        old = earlier.get((job.name, step.name))
        settled = settled_since(old, job.name, step, now)
        if settled is not None:
            events.append(settled)
        decision = step.approval.decision if step.approval is not None else None
        if decision is not None:
            old_decision = old.approval.decision if old is not None and old.approval is not None else None
            if old_decision is None:
                events.append(
                    {
                        "event": "gate_decided",
                        "at": decision.decidedAt,
                        "job": job.name,
                        "step": step.name,
                        "approved": decision.approved,
                        "decidedBy": decision.decidedBy,
                        "reason": decision.reason,
                    }
                )
    if after.status != before.status:
        events.append(status_event(app, after))
    return events
