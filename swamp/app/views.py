"""Plain-data documents the commands return (the same for --json and the JSON-lines protocol)."""

from __future__ import annotations

from typing import Any

from ..domain.run import WorkflowRun
from .context import App


def run_document(app: App, run: WorkflowRun) -> dict[str, Any]:
    doc = run.to_dict()
    doc["path"] = app.runs.relative_path(run)
    return doc


def run_summary(run: WorkflowRun) -> dict[str, Any]:
    doc = run.to_dict()
    return {
        "runId": run.id,
        "workflowId": run.workflowId,
        "workflowName": run.workflowName,
        "status": run.status,
        "createdAt": run.createdAt,
        "startedAt": run.startedAt,
        "completedAt": run.completedAt,
        "durationMs": run.durationMs,
        "inputs": run.inputs,
        "failedStep": doc.get("failedStep"),
        "failureReason": doc.get("failureReason"),
        "stepProgress": doc.get("stepProgress"),
    }
