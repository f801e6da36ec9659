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
from ..store.claim import RunClaim
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
        definition=workflow.model_dump(mode="json", by_alias=True, exclude_none=True),
    )
    superseded = supersede(app, workflow, run)
    with RunClaim(app.layout, run.id, purpose="run"):
        WorkflowExecutor(workflow, run, engine_services(app, emit)).execute()
    doc = run_document(app, run)
    doc["superseded"] = superseded
    return doc


def workflow_of(run: WorkflowRun) -> Workflow:
    """The definition a run executes: the snapshot taken when it started."""
    return Workflow.model_validate(run.definition)


def engine_services(app: App, emit: Emit | None) -> EngineServices:
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
        emit=emit or (lambda event: None),
        max_concurrency=app.host_concurrency(),
        **extra,
    )
