"""workflow resume: continue a suspended run, or retry a failed one from a step (--from)."""

from __future__ import annotations

from typing import Any

from ..domain.errors import ApprovalPending, RunNotSuspended
from ..domain.retry import steps_to_reset
from ..domain.run import WorkflowRun, iso
from ..engine.executor import WorkflowExecutor
from ..engine.ports import Emit
from ..store.claim import RunClaim
from .access import resolve_run
from .context import App
from .run import engine_services, workflow_of
from .views import run_document


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        merged[key] = (
            _deep_merge(merged[key], value)
            if isinstance(value, dict) and isinstance(merged.get(key), dict)
            else value
        )
    return merged


def resume(
    app: App,
    workflow_ref: str,
    *,
    run_ref: str | None = None,
    inputs: dict[str, Any] | None = None,
    from_step: str | None = None,
    claim_timeout: float | None = None,
    emit: Emit | None = None,
) -> dict[str, Any]:
    statuses = ["failed", "interrupted"] if from_step else ["suspended", "interrupted"]
    found = resolve_run(app, workflow_ref, run_ref, statuses, verb="resume")
    with RunClaim(app.layout, found.id, timeout=claim_timeout, purpose="resume"):
        run = app.runs.load(found.workflowId, found.id)
        workflow = workflow_of(run)
        now = app.clock.now()
        if run.status == "running":  # we hold the claim, so the process that ran it is gone
            run.interrupt(now)
            app.runs.save(run)
            if not from_step:
                raise RunNotSuspended(
                    f"Run {run.id} was interrupted (its process stopped) and is now marked failed; "
                    f"retry it with: swamp workflow resume {run.workflowName} --run {run.id} --from STEP",
                    {"runId": run.id, "status": run.status},
                )
        merged = _deep_merge(run.inputs, inputs or {})
        if inputs:  # checked before anything changes: a refusal leaves the run as it was
            merged = app.validation.prepare_inputs(merged, workflow.inputs)
        expired: list[tuple[str, Any]] = []
        if from_step:
            prepare_retry(run, from_step, workflow)
        else:
            expired = prepare_continue(app, run)
        run.resume(now, sorted((inputs or {}).keys()))
        app.runs.save(run)
        services = engine_services(app, emit, run.id)
        for job_name, step in expired:
            services.emit(
                {
                    "event": "step_failed",
                    "at": iso(now),
                    "job": job_name,
                    "step": step.name,
                    "error": step.error,
                    "reason": step.reason,
                    "allowedFailure": step.allowedFailure,
                }
            )
        WorkflowExecutor(workflow, run, services, inputs=merged).execute(resumed=True)
    return run_document(app, run)


def prepare_retry(run: WorkflowRun, from_step: str, workflow: Any) -> None:
    if run.status != "failed":
        raise RunNotSuspended(
            f"--from retries a failed run; run {run.id} is {run.status}",
            {"runId": run.id, "status": run.status},
        )
    run.reset_steps(steps_to_reset(workflow, from_step))


def prepare_continue(app: App, run: WorkflowRun) -> list[tuple[str, Any]]:
    """Refuse while a wait is open; fail what passed its deadline. Refusals change nothing."""
    run.ensure_suspended()
    now = app.clock.now()
    open_gates = run.open_gates(now)
    open_waits = [s.wait.waitId for _, s in run.open_waits(now) if s.wait is not None]
    if open_gates and not open_waits:
        names = [s.name for _, s in open_gates]
        first = names[0]
        raise ApprovalPending(
            f"Step '{first}' is still awaiting approval; decide it first: "
            f"swamp workflow approve {run.workflowName} {first} --run {run.id}",
            {"runId": run.id, "steps": names},
        )
    run.ensure_no_open_waits(now)
    workflow = workflow_of(run)
    allow = workflow.allowed_failures()
    expired = run.expire_gates(now, allow) + run.expire_waits(now, allow)
    return [(job.name, step) for job, step in run.steps() if any(step is e for e in expired)]
