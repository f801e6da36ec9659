"""Executing a run under its claim: machinery below the use cases (run, resume, the continuations).

What the engine needs to execute a run (`engine_services`), the definition it executes
(`workflow_of`), and continuing a suspended run whose claim the caller holds (`continue_claimed`:
refuse while a wait or gate is open, fail what passed its deadline, execute the rest). It never
imports a use case.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from ..domain import suggested
from ..domain.definition import Workflow
from ..domain.drift import definition_changes
from ..domain.errors import ApprovalPending, SwampError, WorkflowInvalid, WorkflowNotFound
from ..domain.instants import iso
from ..domain.run import WorkflowRun
from ..engine.executor import WorkflowExecutor
from ..engine.ports import HOSTED_RUNS, Emit, EngineServices
from .context import App
from .views import run_document


def workflow_of(run: WorkflowRun) -> Workflow:
    """The definition a run executes: the snapshot taken when it started. Parsed once per snapshot
    in this process (a Workflow is frozen): a continuation asked for it twice, and a serve asks
    for the same few workflows' snapshots run after run (a tenth of a continuation's time)."""
    return _snapshot(json.dumps(run.definition))


@functools.lru_cache(maxsize=64)
def _snapshot(text: str) -> Workflow:
    return Workflow.from_json(json.loads(text))


def engine_services(app: App, emit: Emit | None, run_id: str) -> EngineServices:
    """What the engine needs to execute run `run_id`, under its claim. Every event it emits goes
    to the run's journal (store/journal.py, for `workflow watch`) and then to `emit`."""
    from .held import EarlySignals

    hooks = HOSTED_RUNS.get()
    extra: dict[str, Any] = {}
    if hooks is not None:
        extra = {"stop_reason": hooks.stop_reason, "attach": hooks.attach, "detach": hooks.detach}
    return EngineServices(
        save=app.runs.save,
        clock=app.clock,
        methods=app.methods,
        expressions=app.expressions,
        validation=app.validation,
        env=dict(os.environ),
        user=app.user,
        emit=journaled(app, run_id, emit),
        max_concurrency=app.host_concurrency(),
        early=EarlySignals(app),
        **extra,
    )


def journaled(app: App, run_id: str, emit: Emit | None) -> Emit:
    """`emit`, each event first appended to the run's journal (one writer per execution)."""
    from ..store.journal import RunJournal

    append = RunJournal(app.layout).writer(run_id).append
    if emit is None:
        return append

    def both(event: dict[str, Any]) -> None:
        append(event)
        emit(event)

    return both


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        merged[key] = (
            deep_merge(merged[key], value)
            if isinstance(value, dict) and isinstance(merged.get(key), dict)
            else value
        )
    return merged


def with_changes(doc: dict[str, Any], changes: list[str]) -> dict[str, Any]:
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
    execute_resumed(app, run, workflow, deep_merge(run.inputs, {}), expired, [], emit)
    return with_changes(run_document(app, run), changes)


def execute_resumed(
    app: App,
    run: WorkflowRun,
    workflow: Any,
    inputs: dict[str, Any],
    expired: list[tuple[str, Any]],
    input_keys: list[str],
    emit: Emit | None,
) -> None:
    """Mark the run running, report the steps whose deadline failed them, and execute the rest.
    The run is not saved here: the executor's first save covers it (RUN-035), durably before the
    first step that acts outside the run (RUN-034)."""
    now = app.clock.now()
    run.resume(now, input_keys)
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
