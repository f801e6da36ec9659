"""Plain-data documents the commands return (the same for --json and the JSON-lines protocol)."""

from __future__ import annotations

import json
from typing import Any

from ..domain import suggested
from ..domain.approvals import ApprovalGate
from ..domain.run import WorkflowRun
from .context import App


def run_document(app: App, run: WorkflowRun) -> dict[str, Any]:
    doc = run.to_dict()
    doc.pop("definition", None)
    if any(s.wait is not None and s.wait.permissions for _, s in run.steps()):
        from .permissions import strip_hashes  # a token's hash stays in the record (ACCESS-062)

        strip_hashes(doc)
    doc["path"] = app.runs.location(run)
    if run.status == "suspended":
        doc.update(suspension(app, run))
    return doc


def payload_example(app: App, schema: Any) -> tuple[bool, Any]:
    """(True, WAIT-014's example payload for `schema`: domain/waits.py example_value), or (False,
    None) when the value it builds does not pass the schema."""
    from ..domain.waits import example_value

    value = example_value(schema)
    return (False, None) if app.validation.problems(value, schema) else (True, value)


def signal_command(app: App, wait_id: str, schema: Any, *, resume: bool = False) -> str:
    """`swamp workflow signal <waitId> --payload '<example>'` for a wait with this schema."""
    return signal_text(wait_id, payload_example(app, schema), resume=resume)


def signal_text(wait_id: str, example: tuple[bool, Any], *, resume: bool = False) -> str:
    """The signal command with `example` (payload_example's answer) as compact JSON, or the
    placeholder `<json>` when there is none (WAIT-014); every `next` that signals says it so,
    shell-quoted (CLI-027)."""
    fits, value = example
    shown = json.dumps(value, separators=(",", ":"), ensure_ascii=False) if fits else "<json>"
    return suggested.signal(wait_id, shown, resume=resume)


def wait_command(app: App, run: WorkflowRun, wait_id: str, *, resume: bool = False) -> str:
    """signal_command for a wait the run holds open."""
    _, step = run.find_wait(wait_id)
    assert step.wait is not None
    return signal_command(app, wait_id, step.wait.schema, resume=resume)


def suspension(app: App, run: WorkflowRun) -> dict[str, Any]:
    """What a suspended run waits for, and the exact commands that move it on."""
    now = app.clock.now()

    others = app.runs.another_suspended(run.workflowId, run.id)
    waits = [
        {
            "waitId": step.wait.waitId,
            "jobName": job.name,
            "stepName": step.name,
            "deadline": step.wait.deadline,
            "description": step.wait.description,
            "schema": step.wait.schema,
        }
        for job, step in run.open_waits(now)
        if step.wait is not None
    ]
    pick = run.id if others or waits else None
    wf = run.workflowName
    gates = [
        {
            "jobName": job.name,
            "stepName": step.name,
            "prompt": step.approval.prompt,
            "deadline": step.approval.deadline,
            **gate_progress(step.approval),
        }
        for job, step in run.open_gates(now)
        if step.approval is not None
    ]
    commands: list[str] = []
    for _, step in run.open_waits(now):
        assert step.wait is not None
        commands.append(signal_command(app, step.wait.waitId, step.wait.schema))
    for gate in gates:
        commands.append(suggested.approve(wf, str(gate["stepName"]), pick))
        commands.append(suggested.reject(wf, str(gate["stepName"]), pick))
    commands.append(suggested.resume(wf, pick))
    doc: dict[str, Any] = {"gates": gates, "waits": waits, "next": commands}
    if run.unsettled_waits():
        from .announcements import deadlines_enforced

        doc["deadlineEnforced"] = deadlines_enforced(app)  # WAIT-090
    return doc


def gate_progress(gate: ApprovalGate) -> dict[str, Any]:
    """A gate's approvers and its approvals so far (ACCESS-016); nothing for a gate without."""
    if gate.approvers is None:
        return {}
    return {"approvers": gate.approvers, **gate.progress()}


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
