"""Supersede: a new run cancels the suspended runs of its workflow that have the same inputs.

A run that cannot be claimed right now is left alone and reported as skipped (reason `busy`), and
so is a run that waits for a signal (`wait_open`), holds one that no resume has acted on yet
(`signal_delivered`) or holds an early signal for a step it has not reached (`signal_held`): a
delivered message is never dropped.

Machinery below the `run` use case: it imports no use case.
"""

from __future__ import annotations

from typing import Any

from ..domain.activeruns import inputs_digest
from ..domain.definition import Workflow
from ..domain.run import WorkflowRun
from ..engine.executor import step_levels
from .context import App
from .execution import workflow_of


def supersede(app: App, workflow: Workflow, new_run: WorkflowRun) -> list[dict[str, Any]]:
    digest = inputs_digest(new_run.inputs)
    entries = app.runs.suspended_with_inputs(workflow.id, digest)
    runs, _ = app.runs.load_entries(entries)  # only the runs that could be superseded are read
    report: list[dict[str, Any]] = []
    for old in runs:
        if old.status != "suspended" or old.inputs != new_run.inputs:
            continue
        claim = app.claim(old.id, purpose="supersede")
        if not claim.try_acquire():
            report.append({"runId": old.id, "action": "skipped", "reason": "busy"})
            continue
        try:
            fresh = app.runs.load(old.workflowId, old.id)
            if fresh.status != "suspended" or fresh.inputs != new_run.inputs:
                continue
            keep = keep_reason(fresh, app)
            if keep is not None:
                report.append({"runId": fresh.id, "action": "skipped", **keep})
                continue
            reason = f"superseded by run {new_run.id}"
            fresh.cancel(app.clock.now(), reason)
            app.runs.save(fresh)
            report.append({"runId": fresh.id, "action": "cancelled", "reason": reason})
        finally:
            claim.release()
    return report


def keep_reason(run: WorkflowRun, app: App) -> dict[str, Any] | None:
    """Why a suspended run must not be superseded (None: it may be). A run waiting for a signal is
    never superseded: otherwise a workflow without inputs would cancel its own waiting run. Nor is
    one holding a signal it took that no resume has acted on: the sender was told it was taken."""
    waits = [s.wait.waitId for _, s in run.unsettled_waits() if s.wait is not None]
    if waits:
        return {"reason": "wait_open", "waitIds": waits}
    held = [
        s.reservedWaitId
        for _, s in run.reserved_waits()
        if s.reservedWaitId is not None and app.held.exists(s.reservedWaitId)
    ]
    if held:  # an early signal was answered as held: it is applied when its step opens (WAIT-077)
        return {"reason": "signal_held", "waitIds": held}
    if not any(s.wait is not None and s.wait.outcome == "received" for _, s in run.steps()):
        return None  # nothing delivered: no need to read the definition
    workflow = workflow_of(run)
    delivered = run.signals_not_resumed(lambda job: step_levels(workflow.job(job.name), job))
    if delivered:
        return {"reason": "signal_delivered", "waitIds": delivered}
    return None
