"""workflow approve / reject / approvals: the manual_approval gate's commands."""

from __future__ import annotations

from typing import Any

from ..domain import suggested
from ..domain.run import WorkflowRun
from ..engine.ports import Emit
from .access import change_run, resolve_run, suspended_runs
from .context import App
from .views import wait_command


def decide(
    app: App,
    workflow_ref: str,
    step_name: str,
    *,
    approved: bool,
    run_ref: str | None = None,
    job: str | None = None,
    reason: str | None = None,
    claim_timeout: float | None = None,
    resume: bool = False,
    emit: Emit | None = None,
) -> dict[str, Any]:
    """With `resume` (approve only), the run is then continued under the same claim when nothing
    else is open (continuation.py)."""
    run = resolve_run(app, workflow_ref, run_ref, ["suspended"], verb="approve" if approved else "reject")
    user, on_behalf_of = app.user, app.on_behalf_of

    def apply(fresh: WorkflowRun) -> dict[str, Any]:
        now = app.clock.now()
        job_run, step_run = fresh.decide_gate(
            now, step_name, approved=approved, user=user, reason=reason, job=job, on_behalf_of=on_behalf_of
        )
        assert step_run.approval is not None and step_run.approval.decision is not None
        return {"jobName": job_run.name, "stepName": step_run.name, **step_run.approval.decision.as_outputs()}

    outcome: dict[str, Any] | None = None
    if resume:
        from .continuation import continue_if_nothing_open

        with app.claim(run.id, timeout=claim_timeout, purpose="approve"):
            saved = app.runs.load(run.workflowId, run.id)
            decision = apply(saved)
            app.runs.save(saved)
            outcome = continue_if_nothing_open(app, saved, emit)
    else:
        saved, decision = change_run(
            app, run, apply, purpose="approve" if approved else "reject", claim_timeout=claim_timeout
        )
    _refuse_held(app, saved)
    remaining = [s.name for _, s in saved.open_gates(app.clock.now())]
    doc: dict[str, Any] = {
        "runId": saved.id,
        "workflowName": saved.workflowName,
        **decision,
        "runStatus": saved.status,
        "openGates": remaining,
    }
    if approved:
        waits = [s.wait.waitId for _, s in saved.open_waits(app.clock.now()) if s.wait is not None]
        doc["openWaits"] = waits
        doc["next"] = [suggested.approve(saved.workflowName, name, saved.id) for name in remaining]
        doc["next"] += [wait_command(app, saved, w) for w in waits]
        if not remaining and not waits:
            doc["next"] = [suggested.resume(saved.workflowName, saved.id)]
    if outcome is not None:
        from .continuation import add_outcome

        add_outcome(app, doc, saved, outcome)
    return doc


def reject_wait(
    app: App, wait_id: str, *, reason: str | None = None, claim_timeout: float | None = None
) -> dict[str, Any]:
    from ..domain.waits import check_wait_id

    check_wait_id(wait_id)
    run = app.runs.find_wait(wait_id)
    if run is None:
        from ..domain.waits import WaitNotFound

        raise WaitNotFound(
            f"No wait {wait_id}; list open waits with: swamp workflow waits", {"waitId": wait_id}
        )
    user, on_behalf_of = app.user, app.on_behalf_of

    def apply(fresh: WorkflowRun) -> dict[str, Any]:
        job_run, step_run = fresh.reject_wait(app.clock.now(), wait_id, user, reason)
        return {"jobName": job_run.name, "stepName": step_run.name}

    saved, where = change_run(app, run, apply, purpose="reject", claim_timeout=claim_timeout)
    _refuse_held(app, saved)
    doc = {
        "runId": saved.id,
        "workflowName": saved.workflowName,
        "waitId": wait_id,
        **where,
        "approved": False,
        "decidedBy": user,
        "reason": reason,
        "runStatus": saved.status,
    }
    if on_behalf_of is not None:
        doc["onBehalfOf"] = on_behalf_of
    return doc


def list_approvals(app: App, workflow_ref: str | None = None) -> dict[str, Any]:
    from .access import workflow_id_for

    workflow_id = workflow_id_for(app, workflow_ref)[0] if workflow_ref else None
    now = app.clock.now()
    gates = []
    for run in suspended_runs(app, workflow_id):
        for job_run, step_run in run.open_gates(now):
            gate = step_run.approval
            assert gate is not None
            gates.append(
                {
                    "workflowName": run.workflowName,
                    "workflowId": run.workflowId,
                    "runId": run.id,
                    "jobName": job_run.name,
                    "stepName": step_run.name,
                    "prompt": gate.prompt,
                    "suspendedAt": gate.openedAt,
                    "deadline": gate.deadline,
                }
            )
    gates.sort(key=lambda g: (g["suspendedAt"], g["runId"], g["stepName"]))
    return {"approvals": gates}


def _refuse_held(app: App, run: WorkflowRun) -> None:
    """A run that finished here refuses the early signals held for waits it never opened."""
    if run.is_terminal and run.reserved_waits():
        from .held import settle_after

        settle_after(app, run)
