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
    doc["answers"] = answers(doc)
    return doc


def answers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """What each wait and gate of the run was told, by whom and when (RUN-031), in job and step
    order: one entry per wait_for_signal or manual_approval step that has opened."""
    found: list[dict[str, Any]] = []
    for job in doc.get("jobs", []):
        for step in job.get("steps", []):
            place = {"job": job["name"], "step": step["name"]}
            if step.get("wait"):
                found.append({**place, **_wait_answer(step)})
            elif step.get("approval"):
                found.append({**place, **_gate_answer(step)})
    return found


def _wait_answer(step: dict[str, Any]) -> dict[str, Any]:
    wait = step["wait"]
    entry: dict[str, Any] = {"kind": "signal", "waitId": wait["waitId"]}
    outcome = wait.get("outcome") or ("open" if step["status"] == "waiting" else step["status"])
    entry["outcome"] = outcome
    receipt, rejection = wait.get("receipt"), wait.get("rejection")
    if outcome == "received" and receipt:
        entry["payload"] = (step.get("outputs") or {}).get("payload")
        entry["by"], entry["at"] = receipt["submittedBy"], receipt["receivedAt"]
        for key in ("onBehalfOf", "grantedBy", "permissionId", "override"):
            if receipt.get(key) is not None:
                entry[key] = receipt[key]
    elif rejection:
        entry.update({k: v for k, v in rejection.items() if v is not None})
    elif outcome != "open" and step.get("completedAt"):
        entry["at"] = step["completedAt"]
        if step.get("error"):
            entry["reason"] = step["error"]
    return entry


def _gate_answer(step: dict[str, Any]) -> dict[str, Any]:
    decision = step["approval"].get("decision")
    if decision:
        outcome = "approved" if decision["approved"] else "rejected"
        entry: dict[str, Any] = {"kind": "gate", "outcome": outcome}
        entry["by"], entry["at"] = decision["decidedBy"], decision["decidedAt"]
        for key in ("onBehalfOf", "reason", "override"):
            if decision.get(key) is not None:
                entry[key] = decision[key]
        return entry
    entry = {"kind": "gate", "outcome": "open" if step["status"] == "waiting_approval" else step["status"]}
    if entry["outcome"] != "open" and step.get("completedAt"):
        entry["at"] = step["completedAt"]
        if step.get("error"):
            entry["reason"] = step["error"]
    return entry
