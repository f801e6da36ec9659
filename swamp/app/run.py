"""workflow run: load, check, prepare inputs, supersede, create the record, execute under the claim.

A use case: executing (execution.py) and superseding (supersede.py) are machinery below it."""

from __future__ import annotations

import uuid
from typing import Any

from ..domain.checks import check_input_expressions, ensure_runnable
from ..domain.run import WorkflowRun
from ..engine.executor import WorkflowExecutor
from ..engine.ports import Emit
from .context import App
from .execution import engine_services
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
