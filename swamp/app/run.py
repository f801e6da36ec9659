"""workflow run: load, check, prepare inputs, supersede, create the record, execute under the claim."""

from __future__ import annotations

import os
import uuid
from typing import Any

from ..domain.checks import check_input_expressions, ensure_runnable
from ..domain.definition import Workflow
from ..domain.run import WorkflowRun
from ..engine.executor import WorkflowExecutor
from ..engine.ports import HOSTED_RUNS, Emit, EngineServices
from .context import App
from .supersede import supersede
from .views import run_document


def run_workflow(
    app: App,
    workflow_ref: str,
    inputs: dict[str, Any] | None = None,
    *,
    emit: Emit | None = None,
) -> dict[str, Any]:
    loaded = app.workflows.get(workflow_ref)
    workflow = loaded.workflow
    source = str(loaded.path.relative_to(app.layout.root))
    ensure_runnable(workflow, app.expressions, app.validation, source, app.shell_arguments)
    prepared = app.validation.prepare_inputs(dict(inputs or {}), workflow.inputs)
    check_input_expressions(workflow, app.expressions, prepared)
    run = WorkflowRun.create(
        run_id=str(uuid.uuid4()),
        workflow_id=workflow.id,
        workflow_name=workflow.name,
        jobs=[(job.name, [step.name for step in job.steps]) for job in workflow.jobs],
        inputs=prepared,
        tags=dict(workflow.tags),
        initiated_by=app.user,
        on_behalf_of=app.on_behalf_of,
        now=app.clock.now(),
        definition=workflow.to_json(),
    )
    run.reserve_waits(
        {
            (job.name, step.name)
            for job in workflow.jobs
            for step in job.steps
            if step.task.type == "wait_for_signal" and step.forEach is None
        }
    )
    superseded = supersede(app, workflow, run)
    with app.claim(run.id, purpose="run"):
        WorkflowExecutor(workflow, run, engine_services(app, emit, run.id)).execute()
    doc = run_document(app, run)
    doc["superseded"] = superseded
    return doc


def workflow_of(run: WorkflowRun) -> Workflow:
    """The definition a run executes: the snapshot taken when it started."""
    return Workflow.from_json(run.definition)


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
