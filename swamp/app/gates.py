"""workflow approve / reject / approvals: the manual_approval gate's commands."""

from __future__ import annotations

from typing import Any

from ..domain import suggested
from ..domain.errors import StepNotFound, SwampError
from ..domain.instants import iso
from ..domain.run import StepRun, WorkflowRun
from ..engine.ports import Emit
from .access import change_run, resolve_run, suspended_runs
from .answerers import OPEN, Admission, admit, check_override
from .context import App
from .views import gate_progress, wait_command


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
    override: str | None = None,
) -> dict[str, Any]:
    """With `resume` (approve only), the run is then continued under the same claim when nothing
    else is open (continuation.py). A gate with an approvers policy admits the acting account
    first (answerers.py, ACCESS-008) and counts approvals towards its `required` (ACCESS-014)."""
    check_override(override)
    run = resolve_run(app, workflow_ref, run_ref, ["suspended"], verb="approve" if approved else "reject")
    user, on_behalf_of = app.user, app.on_behalf_of
    admitted: list[Admission] = []
    audited: list[tuple[str, StepRun]] = []  # the gate whose answer the audit trail records (ACCESS-023)

    def apply(fresh: WorkflowRun) -> dict[str, Any]:
        now = app.clock.now()
        found = _gate_step(fresh, step_name, job)
        admission = None
        if found is not None:
            gate_step = found[1]
            if gate_step.approval is not None and (gate_step.approval.approvers or override is not None):
                audited.append(found)
            admission = _admit_gate(app, fresh, gate_step, override)
            admitted.append(admission)
        job_run, step_run = fresh.decide_gate(
            now,
            step_name,
            approved=approved,
            user=user,
            reason=reason,
            job=job,
            on_behalf_of=on_behalf_of,
            override=admission.override if admission is not None else None,
        )
        gate = step_run.approval
        assert gate is not None
        if gate.decision is None:  # an approval towards `required`: the gate stays open
            latest = gate.approvals[-1] if gate.approvals else None
            assert latest is not None
            return {
                "jobName": job_run.name,
                "stepName": step_run.name,
                "approved": True,
                "decidedBy": latest.by,
                "decidedAt": latest.at,
                "reason": reason,
                **({"onBehalfOf": latest.onBehalfOf} if latest.onBehalfOf is not None else {}),
                **({"override": latest.override} if latest.override is not None else {}),
                **gate_progress(gate),
            }
        return {
            "jobName": job_run.name,
            "stepName": step_run.name,
            **gate.decision.as_outputs(),
            **gate_progress(gate),
        }

    outcomes: list[dict[str, Any]] = []
    verb = "approve" if approved else "reject"
    recorded: list[bool] = []

    def save(saved: WorkflowRun) -> None:
        if audited:  # the record and its audit entry: one transaction where the store has them
            app.runs.save_with_audit(saved, _entry(app, verb, "accepted", admitted[-1], step=audited[-1]))
        else:
            app.runs.save(saved)
        recorded.append(True)

    def continue_run(saved: WorkflowRun) -> None:
        from .continuation import continue_if_nothing_open

        outcomes.append(continue_if_nothing_open(app, saved, emit))

    try:
        saved, decision = change_run(
            app,
            run,
            apply,
            purpose=verb,
            claim_timeout=claim_timeout,
            save=save,
            then=continue_run if resume else None,
        )
    except SwampError as exc:
        if audited and not recorded:
            app.runs.append_audit(run, _entry(app, verb, exc.code, None, step=audited[-1]))
        raise
    outcome = outcomes[0] if outcomes else None
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
    app: App,
    wait_id: str,
    *,
    reason: str | None = None,
    claim_timeout: float | None = None,
    override: str | None = None,
) -> dict[str, Any]:
    from ..domain.waits import check_wait_id

    check_wait_id(wait_id)
    run = app.runs.find_wait(wait_id)
    if run is None:
        from ..domain.waits import WaitNotFound

        raise WaitNotFound(
            f"No wait {wait_id}; list open waits with: swamp workflow waits", {"waitId": wait_id}
        )
    check_override(override)
    user, on_behalf_of = app.user, app.on_behalf_of
    admitted: list[Admission] = []

    def apply(fresh: WorkflowRun) -> dict[str, Any]:
        policy = _wait_policy(fresh, wait_id)
        if policy is not None or override is not None:
            admitted.append(
                admit(
                    app, fresh, policy, override=override, what=f"wait {wait_id}", details={"waitId": wait_id}
                )
            )
        job_run, step_run = fresh.reject_wait(app.clock.now(), wait_id, user, reason, on_behalf_of, override)
        return {"jobName": job_run.name, "stepName": step_run.name}

    audit = _wait_policy(run, wait_id) is not None or override is not None
    try:
        saved, where = change_run(app, run, apply, purpose="reject", claim_timeout=claim_timeout)
    except SwampError as exc:
        if audit:
            app.runs.append_audit(run, _entry(app, "reject", exc.code, None, wait_id=wait_id))
        raise
    if audit:
        app.runs.append_audit(
            saved, _entry(app, "reject", "accepted", admitted[-1] if admitted else None, wait_id=wait_id)
        )
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
    if admitted and admitted[-1].override is not None:
        doc["override"] = admitted[-1].override
    return doc


def _gate_step(run: WorkflowRun, step_name: str, job: str | None) -> tuple[str, StepRun] | None:
    """(job, step) a decision names, when it has (or had) a gate; the decision itself says why not."""
    try:
        job_run, step = run.find_step(step_name, job)
    except StepNotFound:
        return None
    return (job_run.name, step) if step.approval is not None else None


def _admit_gate(app: App, run: WorkflowRun, step: StepRun, override: str | None) -> Admission:
    """The policy the gate captured when it opened decides (ACCESS-001, ACCESS-008)."""
    from ..domain.access import Policy

    assert step.approval is not None
    policy = Policy.from_dict(step.approval.approvers)
    if policy is None and override is None:
        return Admission(app.user, OPEN)
    return admit(app, run, policy, override=override, what=f"step '{step.name}'", details={"step": step.name})


def _wait_policy(run: WorkflowRun, wait_id: str) -> Any:
    from ..domain.access import Policy

    for _, step in run.steps():
        if step.wait is not None and step.wait.waitId == wait_id:
            return Policy.from_dict(step.wait.answerers)
    return None


def _entry(
    app: App,
    action: str,
    code: str,
    admission: Admission | None,
    *,
    step: tuple[str, StepRun] | None = None,
    wait_id: str | None = None,
) -> dict[str, Any]:
    """The audit entry of an answer to a gate or wait with a policy, or given with --override
    (ACCESS-012): accepted (with how it was admitted, ACCESS-023) or the refusal's code."""
    entry: dict[str, Any] = {"at": iso(app.clock.now()), "by": app.user}
    if app.on_behalf_of is not None:
        entry["onBehalfOf"] = app.on_behalf_of
    entry["action"] = action
    if step is not None:
        entry["job"], entry["step"] = step[0], step[1].name
    if wait_id is not None:
        entry["waitId"] = wait_id
    entry["code"] = code
    if admission is not None:
        entry.update(admission.audit_fields())
    return entry


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
                    **gate_progress(gate),
                }
            )
    gates.sort(key=lambda g: (g["suspendedAt"], g["runId"], g["stepName"]))
    return {"approvals": gates}


def _refuse_held(app: App, run: WorkflowRun) -> None:
    """A run that finished here refuses the early signals held for waits it never opened."""
    if run.is_terminal and run.reserved_waits():
        from .held import settle_after

        settle_after(app, run)
