"""model_method: render the step's inputs, then call the model's method."""

from __future__ import annotations

import shlex
from typing import Any

from ...domain.definition import ModelMethodTask
from ...domain.errors import ExpressionError, SwampError
from ...domain.expressions import js_string
from ..ports import MethodFailed
from .base import Failed, Outcome, StepExecution, Succeeded


def execute(task: ModelMethodTask, ex: StepExecution) -> Outcome:
    try:
        shell_keys = ex.services.methods.shell_arguments(task.modelIdOrName, task.methodName)
    except SwampError as exc:
        return Failed(exc.message)
    try:
        inputs = render_inputs(task.inputs, ex, shell_keys)
    except ExpressionError as exc:
        return Failed(f"Expression failed in task.inputs of step '{ex.step_run.name}': {exc.message}")
    if not isinstance(inputs, dict):
        return Failed(
            f"task.inputs of step '{ex.step_run.name}' evaluated to "
            f"{type(inputs).__name__}, expected a mapping"
        )
    try:
        result = ex.services.methods.run_method(
            task.modelIdOrName,
            task.methodName,
            inputs,
            run=ex.run,
            step_name=ex.step_run.name,
            log=ex.log,
            on_abandon=ex.on_abandon,
        )
    except MethodFailed as exc:
        return Failed(str(exc), outputs=exc.result)
    except SwampError as exc:
        return Failed(exc.message)
    except (Exception, SystemExit) as exc:  # a model method is user code: its failure is the step's
        return Failed(f"{type(exc).__name__}: {exc}")
    return Succeeded(result)


def render_inputs(raw: Any, ex: StepExecution, shell_keys: frozenset[str]) -> Any:
    """Substitute expressions. An argument a shell will parse (command/shell's `run`) gets every
    value shell-quoted: expressions carry data, such as a signal's payload, never code."""
    expressions = ex.services.expressions
    if isinstance(raw, str):  # one whole expression that yields the mapping
        value = expressions.render_text(raw, ex.scope)
        if isinstance(value, dict):
            value = {k: shlex.quote(js_string(v)) if k in shell_keys else v for k, v in value.items()}
        return value
    return {
        key: expressions.render_text(value, ex.scope, shlex.quote)
        if key in shell_keys and isinstance(value, str)
        else expressions.render(value, ex.scope)
        for key, value in raw.items()
    }
