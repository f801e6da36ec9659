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
