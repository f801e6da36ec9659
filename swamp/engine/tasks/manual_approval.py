"""manual_approval: open a gate with the resolved prompt; the run suspends until a decision."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ...domain.definition import ManualApprovalTask
from ...domain.errors import ExpressionError
from ...domain.expressions import js_string
from ...domain.run import StepRun
from .base import Failed, Outcome, StepExecution, Suspended


def execute(task: ManualApprovalTask, ex: StepExecution) -> Outcome:
    try:
        prompt = js_string(ex.services.expressions.render_text(task.prompt, ex.scope))
    except ExpressionError as exc:
        return Failed(f"Expression failed in the prompt of step '{ex.step_run.name}': {exc.message}")

    approvers = task.approvers.to_dict() if task.approvers is not None else None  # ACCESS-001

    def open_gate(step_run: StepRun, now: dt.datetime) -> dict[str, Any]:
        step_run.open_gate(now, prompt, task.timeout, approvers)
        assert step_run.approval is not None
        return {"kind": "approval", "prompt": prompt, "deadline": step_run.approval.deadline}

    return Suspended(open_gate)
