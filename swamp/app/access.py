"""Finding the run a command means, and changing it under its claim.

Every command that changes a run goes through `change_run`: take the claim, re-read the record,
apply the change, save. A change that raises leaves the record exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from ..domain.errors import RunAmbiguous, RunNotFound, WorkflowNotFound
from ..domain.run import WorkflowRun
from .context import App

T = TypeVar("T")


def workflow_id_for(app: App, workflow_ref: str) -> tuple[str, str]:
    """(workflowId, workflowName) from a workflow name or id; runs outlive their workflow files."""
    try:
        wf = app.workflows.get(workflow_ref).workflow
        return wf.id, wf.name
    except WorkflowNotFound:
        if workflow_ref in app.runs.workflow_ids():
            return workflow_ref, workflow_ref
        runs, _ = app.runs.list_runs()
        for run in runs:
            if run.workflowName == workflow_ref:
                return run.workflowId, run.workflowName
        raise


def is_interrupted(app: App, run: WorkflowRun) -> bool:
    """A run recorded as running whose process is gone (nobody holds its claim)."""
    return run.status == "running" and not app.claim_held(run.id)


def resolve_run(
    app: App,
    workflow_ref: str,
    run_ref: str | None,
    statuses: Iterable[str],
    *,
    verb: str,
) -> WorkflowRun:
    """The run a command means: `--run` (ID or prefix) or the workflow's single run in `statuses`."""
    workflow_id, name = workflow_id_for(app, workflow_ref)
    if run_ref:
        return app.runs.find(run_ref, workflow_id)
    wanted = set(statuses)
    if wanted <= {"suspended", "running", "pending", "interrupted"}:
        runs, _ = app.runs.active_runs(workflow_id)
    else:
        runs, _ = app.runs.list_runs(workflow_id)
    # A run still executing (its claim held) counts as suspended-to-be: the command then waits for
    # its claim and re-checks, rather than saying the run does not exist.
    candidates = [
        r
        for r in runs
        if r.status in wanted
        or (r.status == "running" and "interrupted" in wanted and is_interrupted(app, r))
        or (r.status == "running" and "suspended" in wanted and not is_interrupted(app, r))
    ]
    shown = " or ".join(sorted(wanted))
    if not candidates:
        raise RunNotFound(
            f"Workflow '{name}' has no {shown} run to {verb}. "
            f"See its runs with: swamp workflow history {name}",
            {"workflow": name, "statuses": sorted(wanted)},
        )
    if len(candidates) > 1:
        from ..domain.prefixes import SHOWN, listed, run_candidate

        ids = [r.id for r in candidates]
        described = [run_candidate(r) for r in candidates]
        raise RunAmbiguous(
            f"Workflow '{name}' has {len(ids)} {shown} runs; say which with --run RUN_ID: "
            f"{listed(described, len(ids))}",
            {"workflow": name, "runIds": ids, "runs": [c.to_dict("runId") for c in described[:SHOWN]]},
        )
    return candidates[0]


def suspended_runs(app: App, workflow_id: str | None = None) -> list[WorkflowRun]:
    runs, _ = app.runs.active_runs(workflow_id)
    return [r for r in runs if r.status == "suspended"]


def change_run(
    app: App,
    run: WorkflowRun,
    change: Callable[[WorkflowRun], T],
    *,
    purpose: str,
    claim_timeout: float | None = None,
    save: Callable[[WorkflowRun], None] | None = None,
    then: Callable[[WorkflowRun], None] | None = None,
) -> tuple[WorkflowRun, T]:
    """Claim, re-read, change, save. Returns the saved run and what `change` returned. `save`
    replaces the plain save (a decision saved with its audit entry); `then` runs after the save,
    still under the claim (a decision's `--resume` continues the run there)."""
    with app.claim(run.id, timeout=claim_timeout, purpose=purpose):
        fresh = app.runs.load(run.workflowId, run.id)
        result = change(fresh)
        (save or app.runs.save)(fresh)
        if then is not None:
            then(fresh)
    return fresh, result
