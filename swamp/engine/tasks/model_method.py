"""model_method: render the step's inputs, then call the model's method."""

from __future__ import annotations

from typing import Any

from ...domain.definition import ModelMethodTask
from ...domain.errors import ExpressionError, SwampError, UnsafeShellText
from ...domain.shellwords import ShellArguments, ShellText, insert_values, whole_value
from ..ports import MethodFailed
from .base import Failed, Outcome, StepExecution, Succeeded


def execute(task: ModelMethodTask, ex: StepExecution) -> Outcome:
    try:
        shell = ex.services.methods.shell_arguments(task.modelIdOrName, task.methodName)
    except SwampError as exc:
        return Failed(exc.message)
    shell_values: dict[str, str] = {}
    try:
        inputs = render_inputs(task.inputs, ex, shell, shell_values)
    except ExpressionError as exc:
        return Failed(f"Expression failed in task.inputs of step '{ex.step_run.name}': {exc.message}")
    except UnsafeShellText as exc:
        return Failed(f"Shell argument of step '{ex.step_run.name}' refused: {exc.message}")
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
            shell_values=shell_values,
        )
    except MethodFailed as exc:
        return Failed(str(exc), outputs=exc.result)
    except SwampError as exc:
        return Failed(exc.message)
    except (Exception, SystemExit) as exc:  # a model method is user code: its failure is the step's
        return Failed(f"{type(exc).__name__}: {exc}")
    return Succeeded(result)


def render_inputs(raw: Any, ex: StepExecution, shell: ShellArguments, shell_values: dict[str, str]) -> Any:
    """Substitute expressions. In an argument a shell parses (command/shell's `run`) every value is
    inserted as data for its quoting context (MODEL-014..016): through `shell_values`, the command's
    environment, or quoted inline; expressions carry data, such as a signal's payload, never code."""
    expressions = ex.services.expressions
    if isinstance(raw, str):  # one whole expression that yields the mapping
        value = expressions.render_text(raw, ex.scope)
        if isinstance(value, dict):
            value = {
                k: _shell_text(
                    whole_value(v, by_environment=shell.by_environment, index=len(shell_values) + 1),
                    shell_values,
                )
                if k in shell.names
                else v
                for k, v in value.items()
            }
        return value
    return {
        key: _shell_text(
            insert_values(
                value,
                lambda source: expressions.evaluate(source, ex.scope),
                by_environment=shell.by_environment,
                first_index=len(shell_values) + 1,
            ),
            shell_values,
        )
        if key in shell.names and isinstance(value, str)
        else expressions.render(value, ex.scope)
        for key, value in raw.items()
    }


def _shell_text(text: ShellText, shell_values: dict[str, str]) -> str:
    shell_values.update(text.environment)
    return text.text
