"""workflow run: load, check, prepare inputs, create the record, execute."""

from __future__ import annotations

import os
import uuid
from typing import Any

from ..domain.checks import check_input_expressions, ensure_runnable
from ..domain.run import WorkflowRun
from ..engine.executor import WorkflowExecutor
from ..engine.ports import Emit, EngineServices
from .context import App
from .views import run_document


def run_workflow(
    app: App, workflow_ref: str, inputs: dict[str, Any] | None = None, *, emit: Emit | None = None
) -> dict[str, Any]:
    loaded = app.workflows.get(workflow_ref)
    workflow = loaded.workflow
    source = str(loaded.path.relative_to(app.layout.root))
    ensure_runnable(workflow, app.expressions, app.validation, source)
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
        now=app.clock.now(),
    )
    services = engine_services(app, emit)
    WorkflowExecutor(workflow, run, services).execute()
    return run_document(app, run)


def engine_services(app: App, emit: Emit | None) -> EngineServices:
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
    )
