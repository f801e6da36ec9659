"""workflow list / get / create / validate."""

from __future__ import annotations

import uuid
from typing import Any

from ..domain.checks import run_checks
from ..domain.definition import WORKFLOW_NAME, parse_workflow
from ..domain.errors import UsageError, WorkflowInvalid
from ..domain.payloadpaths import payload_warnings
from ..store.workflows import LoadedWorkflow
from ..store.yamlio import load_yaml
from .context import App


def _summary(app: App, item: LoadedWorkflow) -> dict[str, Any]:
    wf = item.workflow
    return {
        "id": wf.id,
        "name": wf.name,
        "description": wf.description,
        "version": wf.version,
        "path": str(item.path.relative_to(app.layout.root)),
        "jobs": len(wf.jobs),
        "steps": sum(len(j.steps) for j in wf.jobs),
    }


def list_workflows(app: App) -> dict[str, Any]:
    loaded, broken = app.workflows.scan()
    return {
        "workflows": [_summary(app, item) for item in sorted(loaded, key=lambda i: i.workflow.name)],
        "broken": [
            {"path": str(b.path.relative_to(app.layout.root)), "error": b.error.to_dict()} for b in broken
        ],
    }


def get_workflow(app: App, name: str) -> dict[str, Any]:
    item = app.workflows.get(name)
    doc = _summary(app, item)
    doc["definition"] = item.workflow.to_json()
    return doc


TEMPLATE = """\
id: {id}
name: {name}
description: {description}
version: 1
jobs:
  - name: main
    steps:
      - name: hello
        task:
          type: model_method
          modelIdOrName: hello
          methodName: execute
"""


def create_workflow(app: App, name: str, description: str | None = None) -> dict[str, Any]:
    if not WORKFLOW_NAME.match(name):
        raise UsageError(
            f"Workflow name '{name}' is not valid: use lower-case letters, digits and '-', "
            "starting with a letter or digit (at most 64 characters)"
        )
    import json

    text = TEMPLATE.format(
        id=uuid.uuid4(),
        name=name,
        description=json.dumps(description or f"The {name} workflow", ensure_ascii=False),
    )
    parse_workflow(load_yaml(text), name)
    path = app.workflows.create(name, text)
    return {"name": name, "path": str(path.relative_to(app.layout.root))}


def _validate_one(app: App, item: LoadedWorkflow) -> dict[str, Any]:
    checks = run_checks(item.workflow, app.expressions, app.validation, app.shell_arguments)
    return {
        "workflowId": item.workflow.id,
        "workflowName": item.workflow.name,
        "path": str(item.path.relative_to(app.layout.root)),
        "validations": [c.to_dict() for c in checks],
        "warnings": [w.to_dict() for w in payload_warnings(item.workflow, app.expressions)],
        "passed": all(c.passed for c in checks),
    }


def _broken_result(app: App, path: str, error: WorkflowInvalid) -> dict[str, Any]:
    problems = error.details.get("problems") or [error.message]
    return {
        "workflowId": None,
        "workflowName": None,
        "path": path,
        "validations": [{"name": "Schema validation", "passed": False, "error": "; ".join(problems)}],
        "problems": problems,
        "warnings": [],
        "passed": False,
    }


def validate_workflows(app: App, name: str | None = None) -> dict[str, Any]:
    if name is not None:
        try:
            return _validate_one(app, app.workflows.get(name))
        except WorkflowInvalid as exc:
            return _broken_result(app, str(exc.details.get("path", name)), exc)
    loaded, broken = app.workflows.scan()
    results = [_validate_one(app, item) for item in sorted(loaded, key=lambda i: i.workflow.name)]
    results += [_broken_result(app, str(b.path.relative_to(app.layout.root)), b.error) for b in broken]
    passed = sum(1 for r in results if r["passed"])
    return {
        "workflows": results,
        "totalPassed": passed,
        "totalFailed": len(results) - passed,
        "passed": passed == len(results),
    }
