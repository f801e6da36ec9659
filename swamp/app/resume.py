"""workflow resume: continue a suspended run, or retry a failed one from a step (--from).

A use case: continuing a run under its claim is machinery it shares with the continuations
(execution.py); it imports no other use case."""

from __future__ import annotations

from typing import Any

from ..domain.errors import RunNotSuspended, StepNotFound
from ..domain.retry import steps_to_reset
from ..domain.run import WorkflowRun
from ..engine.ports import Emit
from .access import resolve_run
from .context import App
from .execution import deep_merge, execute_resumed, file_changes, prepare_continue, with_changes, workflow_of
from .views import run_document


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
        run = app.runs.load_again(found)  # resolve_run only read it
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
        merged = deep_merge(run.inputs, inputs or {})
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
        execute_resumed(app, run, workflow, merged, expired, sorted((inputs or {}).keys()), emit)
    return with_changes(run_document(app, run), changes)


def prepare_retry(run: WorkflowRun, from_step: str, workflow: Any) -> None:
    if run.status != "failed":
        raise RunNotSuspended(
            f"--from retries a failed run; run {run.id} is {run.status}",
            {"runId": run.id, "status": run.status},
        )
    run.reset_steps(steps_to_reset(workflow, from_step))
