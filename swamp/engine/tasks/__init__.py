"""One module per task type; `dispatch` picks the handler for a step's task."""

from __future__ import annotations

from ...domain.definition import ManualApprovalTask, ModelMethodTask, Task, WaitForSignalTask
from . import manual_approval, model_method, wait_for_signal
from .base import Outcome, StepExecution


def has_effect(task: Task) -> bool:
    """Whether the task acts outside the run (runs a command or an extension method): the record
    is saved durably before a level holding such a step starts (RUN-034). Waits and gates only
    change the run, and reach the record with the save that follows them."""
    return isinstance(task, ModelMethodTask)


def dispatch(task: Task, execution: StepExecution) -> Outcome:
    if isinstance(task, ModelMethodTask):
        return model_method.execute(task, execution)
    if isinstance(task, ManualApprovalTask):
        return manual_approval.execute(task, execution)
    if isinstance(task, WaitForSignalTask):
        return wait_for_signal.execute(task, execution)
    raise TypeError(f"no handler for task type {task.type!r}")
