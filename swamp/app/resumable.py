"""Whether serve may resume a run after answering for it (an approve, a signal under
--auto-continue: SERVE-020, SERVE-023), and if not, why: the run's own rule
(WorkflowRun.may_continue, a wait or gate past its deadline not counted as open, since resuming
fails it), with the reason serve reports."""

from __future__ import annotations

from typing import Any

from .context import App


def why_not_resumable(app: App, run_id: str) -> dict[str, Any] | None:
    """None when the run may be resumed now; otherwise serve's `autoResume` saying why not: an open
    wait (wait_open), an open gate (approval_pending) or a run no longer suspended."""
    run = app.runs.find(run_id)
    now = app.clock.now()
    if run.may_continue(now):
        return None
    open_steps = run.open_steps(now)
    waits = [s.wait.waitId for _, s in open_steps if s.status == "waiting" and s.wait is not None]
    if waits:
        return {"resumed": False, "reason": "wait_open", "waitIds": waits}
    gates = [s.name for _, s in open_steps if s.status == "waiting_approval"]
    if gates:
        return {"resumed": False, "reason": "approval_pending", "steps": gates}
    return {"resumed": False, "reason": "run_not_suspended", "runStatus": run.status}
