"""workflow resume: continue a suspended run, or retry a failed one from a step (--from)."""

from __future__ import annotations

from typing import Any

from ..domain import suggested
from ..domain.definition import Workflow
from ..domain.drift import definition_changes
from ..domain.errors import (
    ApprovalPending,
    RunNotSuspended,
    StepNotFound,
    SwampError,
    WorkflowInvalid,
    WorkflowNotFound,
)
from ..domain.instants import iso
from ..domain.retry import steps_to_reset
from ..domain.run import WorkflowRun
from ..engine.executor import WorkflowExecutor
from ..engine.ports import Emit
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
    with app.claim(found.id, timeout=claim_timeout, purpose="resume"):
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
        changes, current = file_changes(app, run, workflow)
        expired: list[tuple[str, Any]] = []
        if from_step:
            try:
                prepare_retry(run, from_step, workflow)
            except StepNotFound as exc:
                if current is not None and any(s.name == from_step for j in current.jobs for s in j.steps):
                    raise StepNotFound(
                        f"Run {run.id} executes the definition saved when it started, which has no step "
                        f"'{from_step}' (the workflow file changed since: {', '.join(changes)}); to run the "
                        f"edited file start a fresh run: swamp workflow run {run.workflowName}",
                        {**exc.details, "definitionChanged": True},
                    ) from None
                raise
        else:
            from .held import settle_claimed  # a signal held as its wait opened is applied first

            settle_claimed(app, run)
            expired = prepare_continue(app, run)
        _execute(app, run, workflow, merged, expired, sorted((inputs or {}).keys()), emit)
    return _with_changes(run_document(app, run), changes)


def _with_changes(doc: dict[str, Any], changes: list[str]) -> dict[str, Any]:
    doc["definitionChanged"] = bool(changes)
    if changes:
        doc["definitionChanges"] = changes
    return doc


def file_changes(app: App, run: WorkflowRun, saved: Workflow) -> tuple[list[str], Workflow | None]:
    """What the workflow file changed since the run saved its definition (RESUME-022), and the
    file's workflow: ([], None) when the file is gone (the run is all there is)."""
    try:
        current = app.workflows.get(run.workflowName).workflow
    except WorkflowNotFound:
        return [], None
    except WorkflowInvalid:
        return [f"it does not load now (swamp workflow validate {run.workflowName})"], None
    except (SwampError, OSError):  # cannot tell (an unreadable file): say nothing, change nothing
        return [], None
    return definition_changes(_normal(saved), _normal(current)), current


def _normal(workflow: Workflow) -> dict[str, Any]:
    return workflow.to_json()


def continue_claimed(app: App, run: WorkflowRun, emit: Emit | None = None) -> dict[str, Any]:
    """Continue a suspended run whose claim the caller holds, as `resume` without --from or inputs
    does (refusing while a wait or gate is open); returns the run document."""
    workflow = workflow_of(run)
    expired = prepare_continue(app, run)
    changes, _ = file_changes(app, run, workflow)
    _execute(app, run, workflow, _deep_merge(run.inputs, {}), expired, [], emit)
    return _with_changes(run_document(app, run), changes)


def _execute(
    app: App,
    run: WorkflowRun,
    workflow: Any,
    inputs: dict[str, Any],
    expired: list[tuple[str, Any]],
    input_keys: list[str],
    emit: Emit | None,
) -> None:
    """Mark the run running, report the steps whose deadline failed them, and execute the rest."""
    now = app.clock.now()
    run.resume(now, input_keys)
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
    WorkflowExecutor(workflow, run, services, inputs=inputs).execute(resumed=True)


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
            f"{suggested.approve(run.workflowName, first, run.id)}",
            {"runId": run.id, "steps": names},
        )
    run.ensure_no_open_waits(now)
    workflow = workflow_of(run)
    allow = workflow.allowed_failures()
    expired = run.expire_gates(now, allow) + run.expire_waits(now, allow)
    return [(job.name, step) for job, step in run.steps() if any(step is e for e in expired)]
