"""workflow history / history get."""

from __future__ import annotations

from typing import Any

from .access import is_interrupted, workflow_id_for
from .context import App
from .views import run_document, run_summary


def history(app: App, workflow_ref: str | None = None, limit: int | None = None) -> dict[str, Any]:
    workflow_id = workflow_id_for(app, workflow_ref)[0] if workflow_ref else None
    runs, unreadable = app.runs.list_runs(workflow_id, limit)
    return {
        "runs": [{**run_summary(r), "interrupted": is_interrupted(app, r)} for r in runs],
        "unreadable": [e.to_dict() for e in unreadable],
    }


def history_get(app: App, run_ref: str) -> dict[str, Any]:
    run = app.runs.find(run_ref)
    doc = run_document(app, run)
    doc["interrupted"] = is_interrupted(app, run)
    doc["audit"] = app.runs.read_audit(run)
    return doc
