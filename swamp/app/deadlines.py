"""Enforcing wait deadlines without anyone looking (`serve --enforce-deadlines`, SERVE-024): every
suspended run with a wait past its deadline gets that wait failed with reason wait_timeout, as
resume would fail it. Any host may run the sweep, and several may run it on one store: a run's
claim is taken without waiting (a run someone else holds is left to them, or to the next sweep)
and the run re-read under it, so each deadline is enforced once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..domain.errors import SwampError
from ..domain.instants import parse_iso
from .context import App


@dataclass(frozen=True)
class Expiry:
    """What the sweep did to one run it checked under its claim."""

    workflow_id: str
    run_id: str
    expired: int  # waits failed with wait_timeout
    saved: bool  # the run was saved with them failed
    error: str | None = None  # why checking the run failed; what was done before it stands


def expire_due_waits(app: App) -> Iterator[Expiry]:
    """Fail the expired waits of every suspended run whose index entry says a deadline has passed,
    one run at a time, yielding each run checked. Listing the due runs may raise SwampError; a run
    that fails is yielded with its error and the sweep goes on."""
    from .execution import workflow_of

    now = app.clock.now()
    due_entries = [
        e
        for e in app.runs.active_entries()
        if e["status"] == "suspended" and e["nextDeadline"] and parse_iso(e["nextDeadline"]) < now
    ]
    runs, _ = app.runs.load_entries(due_entries)  # only runs with a wait past its deadline
    for run in runs:
        if run.status != "suspended":
            continue
        due = [s for _, s in run.unsettled_waits() if s.wait is not None and s.wait.is_expired(now)]
        claim = app.claim(run.id, purpose="serve deadlines")
        if not claim.try_acquire():
            continue
        expired = []
        saved = False
        error: str | None = None
        try:
            fresh = app.runs.load(run.workflowId, run.id)
            if due:
                allow = workflow_of(fresh).allowed_failures()
                expired = fresh.expire_waits(app.clock.now(), allow)
            if expired:
                app.runs.save(fresh)
                saved = True
            # The entry's next deadline is a lower bound that signals leave behind: make it
            # exact so this run is not loaded again on every sweep.
            app.runs.refresh_active_entry(fresh)
        except SwampError as exc:
            error = exc.message
        finally:
            claim.release()
        yield Expiry(run.workflowId, run.id, len(expired), saved, error)


# A hook's event only (HOOK-023): never appended to the event log, whose events are in
# spec/schemas/events.schema.json.
DUE_SOON = "wait_due_soon"


@dataclass(frozen=True)
class DueSoon:
    """A wait whose waitDueSoon hook the sweep started (HOOK-022), or a run it could not check."""

    run_id: str
    wait_id: str | None
    error: str | None = None


def start_due_soon_hooks(app: App) -> Iterator[DueSoon]:
    """Start the waitDueSoon hook for every open wait whose deadline is at most its `before` away
    and not yet passed, once per wait: the wait's `dueSoonAt` is set and saved under the run's
    claim (taken without waiting, the run re-read under it), so of several serves on one store,
    on one host or several, one starts it. Nothing when the repository has no waitDueSoon hook."""
    from ..domain.instants import iso

    hook = next((h for h in app.settings.hooks if h.name == "waitDueSoon"), None)
    if hook is None or hook.before is None:
        return
    before = hook.before
    now = app.clock.now()

    def due(wait: object) -> bool:
        return (
            wait is not None
            and getattr(wait, "dueSoonAt", None) is None
            and 0 <= wait.seconds_left(now) <= before  # type: ignore[attr-defined]
        )

    entries = [
        e
        for e in app.runs.active_entries()
        if e["status"] == "suspended"
        and e["nextDeadline"]
        and (parse_iso(e["nextDeadline"]) - now).total_seconds() <= before
    ]
    runs, _ = app.runs.load_entries(entries)
    for run in runs:
        if run.status != "suspended" or not any(due(s.wait) for _, s in run.unsettled_waits()):
            continue
        claim = app.claim(run.id, purpose="serve deadlines")
        if not claim.try_acquire():
            continue  # its holder, or the next sweep
        try:
            fresh = app.runs.load(run.workflowId, run.id)
            events = []
            for job, step in fresh.unsettled_waits():
                if fresh.status == "suspended" and due(step.wait):
                    assert step.wait is not None
                    step.wait.dueSoonAt = iso(now)
                    where = {"job": job.name, "step": step.name, "waitId": step.wait.waitId}
                    events.append({"event": DUE_SOON, **where})
            if events:
                app.runs.save(fresh)
                from .hooks import start_hooks

                start_hooks(app, fresh, events)
                for event in events:
                    yield DueSoon(run.id, event["waitId"])
        except SwampError as exc:
            yield DueSoon(run.id, None, exc.message)
        finally:
            claim.release()
