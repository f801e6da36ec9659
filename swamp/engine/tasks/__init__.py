"""One module per task type; `dispatch` picks the handler for a step's task."""

from __future__ import annotations

import threading

from ...domain.definition import ModelMethodTask, Task
from . import model_method
from .base import Outcome, StepExecution


def dispatch(task: Task, execution: StepExecution, lock: threading.RLock) -> Outcome:
    if isinstance(task, ModelMethodTask):
        return model_method.execute(task, execution)
    raise TypeError(f"no handler for task type {task.type!r}")
