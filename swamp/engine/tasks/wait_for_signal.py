"""wait_for_signal: open a wait under the ID reserved for the step (WAIT-066) and the schema
captured from the workflow."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from ...domain.definition import WaitForSignalTask
from ...domain.errors import ExpressionError
from ...domain.expressions import js_string
from ...domain.run import StepRun
from ...domain.waits import SignalWait
from .base import Failed, Outcome, StepExecution, Suspended


def execute(task: WaitForSignalTask, ex: StepExecution) -> Outcome:
    description = None
    if task.description is not None:
        try:
            description = js_string(ex.services.expressions.render_text(task.description, ex.scope))
        except ExpressionError as exc:
            return Failed(f"Expression failed in the description of step '{ex.step_run.name}': {exc.message}")
    schema = copy.deepcopy(task.schema_)
    answerers = task.answerers.to_dict() if task.answerers is not None else None  # ACCESS-001

    def open_wait(step_run: StepRun, now: dt.datetime) -> dict[str, Any]:
        wait = SignalWait.open(now, float(task.timeout), schema, description, step_run.reservedWaitId)
        wait.answerers = answerers
        step_run.start_waiting(wait)
        return {
            "kind": "signal",
            "waitId": wait.waitId,
            "deadline": wait.deadline,
            "description": description,
        }

    return Suspended(open_wait)
