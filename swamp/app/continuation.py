"""Continue on answer: `signal --resume` and `approve --resume` continue the run in the same command.

The answer (a signal or an approval) and the continuation happen under one claim of the run, taken
once: no other process can continue the run between the two, and a run is never continued twice.
The run is continued exactly when `resume` would continue it: when nothing else is open (another
wait, another gate, a forEach sibling's wait). Otherwise the answer stands, the run stays suspended,
and the result says what is still open and the command that answers each.

Auto-continue (`serve --auto-continue`, SERVE-039..045) continues a run that someone else answered,
in any process or on any host sharing the store: `continue_answered` takes the run's claim
without waiting (a serve never queues behind another), re-reads the run under it and continues it
only if it still waits for nothing. The claim and the re-read are what make it once: of several
serves that saw the same settled wait, the first takes the claim and continues the run; every
other one either finds the claim taken or, once it is free, a run no longer suspended and answered
(its `running` is saved only before its first effect, RUN-035: until then the record still reads
suspended and answered, which is why the claim, not the status, decides).

Machinery below the use cases (signal, approve, and serve's auto-continue call it): it builds on
execution.py and held.py and imports no use case.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..domain import suggested
from ..domain.run import WorkflowRun
from ..engine.ports import Emit
from .context import App
from .execution import continue_claimed
from .views import wait_command

CLAIM_HELD = "claim_held"


def still_open(run: WorkflowRun, now: dt.datetime) -> list[dict[str, Any]]:
    """What keeps the run suspended, in the record's order: open waits and open gates (an expired
    one is not open: the continuation fails it, as resume does)."""
    items: list[dict[str, Any]] = []
    for job, step in run.open_steps(now):
        if step.status == "waiting" and step.wait is not None:
            items.append({"kind": "wait", "job": job.name, "step": step.name, "waitId": step.wait.waitId})
        else:
            items.append({"kind": "gate", "job": job.name, "step": step.name})
    return items


def answer_commands(app: App, run: WorkflowRun, items: list[dict[str, Any]]) -> list[str]:
    """The command that answers each open item and continues the run once it is the last."""
    commands = []
    for item in items:
        if item["kind"] == "wait":
            commands.append(wait_command(app, run, item["waitId"], resume=True))
        else:
            jobs = {j.name for j, s in run.steps() if s.name == item["step"]}
            job = item["job"] if len(jobs) > 1 else None
            commands.append(suggested.approve(run.workflowName, item["step"], run.id, job=job, resume=True))
    return commands


def continue_if_nothing_open(app: App, run: WorkflowRun, emit: Emit | None) -> dict[str, Any]:
    """With the run's claim held and the answer saved: continue the run if nothing else is open.
    Returns `{continued: true, run}` (the run document, as workflow.resume returns it) or
    `{continued: false, stillOpen}`."""
    now = app.clock.now()
    if not run.may_continue(now):
        return {"continued": False, "stillOpen": still_open(run, now)}
    return {"continued": True, "run": continue_claimed(app, run, emit)}


def add_outcome(app: App, doc: dict[str, Any], run: WorkflowRun, outcome: dict[str, Any]) -> None:
    """An answer's result with --resume: continued, the run document says what comes next;
    not continued, `next` answers what is still open (each with --resume)."""
    doc.update(outcome)
    if outcome["continued"]:
        doc["runStatus"] = outcome["run"]["status"]
        del doc["next"]
    else:
        doc["next"] = answer_commands(app, run, outcome["stillOpen"])


def continue_answered(app: App, workflow_id: str, run_id: str, emit: Emit | None) -> dict[str, Any]:
    """Continue the run if it is suspended and waits for nothing (WorkflowRun.answered_in_full),
    under its claim taken without waiting. Returns `{continued: true, run}` or `{continued: false,
    reason}`: `claim_held` (someone holds the claim while the run, read without it, still waits for
    nothing: try again shortly), `run_not_suspended` or `still_open`."""
    from .held import settle_claimed

    claim = app.claim(run_id, purpose="serve auto-continue")
    if not claim.try_acquire():
        seen = app.runs.load(workflow_id, run_id)  # records are replaced whole: safe without it
        return {"continued": False, "reason": CLAIM_HELD if seen.answered_in_full() else _why(seen)}
    try:
        run = app.runs.load(workflow_id, run_id)
        if run.status == "suspended":
            settle_claimed(app, run)  # a signal held for one of its waits is applied first
        if not run.answered_in_full():
            return {"continued": False, "reason": _why(run)}
        return {"continued": True, "run": continue_claimed(app, run, emit)}
    finally:
        claim.release()


def _why(run: WorkflowRun) -> str:
    return "still_open" if run.status == "suspended" else "run_not_suspended"
