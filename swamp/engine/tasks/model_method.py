"""model_method: render the step's inputs, then call the model's method."""

from __future__ import annotations

from typing import Any

from ...domain.definition import ModelMethodTask
from ...domain.errors import ExpressionError, SwampError
from ..ports import MethodFailed
from .base import Failed, Outcome, StepExecution, Succeeded


def execute(task: ModelMethodTask, ex: StepExecution) -> Outcome:
    expressions = ex.services.expressions
    try:
        inputs: Any = expressions.render(task.inputs, ex.scope)
    except ExpressionError as exc:
        return Failed(f"Expression failed in task.inputs of step '{ex.step_run.name}': {exc.message}")
    if not isinstance(inputs, dict):
        return Failed(
            f"task.inputs of step '{ex.step_run.name}' evaluated to "
            f"{type(inputs).__name__}, expected a mapping"
        )
    try:
        result = ex.services.methods.run_method(
            task.modelIdOrName, task.methodName, inputs, run=ex.run, step_name=ex.step_run.name, log=ex.log
        )
    except MethodFailed as exc:
        return Failed(str(exc), outputs=exc.result)
    except SwampError as exc:
        return Failed(exc.message)
    except (Exception, SystemExit) as exc:  # a model method is user code: its failure is the step's
        return Failed(f"{type(exc).__name__}: {exc}")
    return Succeeded(result)
