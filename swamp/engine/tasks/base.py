"""What a task handler receives and what it returns."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...domain.definition import Step
from ...domain.expressions import Scope
from ...domain.instants import iso
from ...domain.run import JobRun, StepRun, WorkflowRun
from ..ports import EngineServices


@dataclass
class StepExecution:
    run: WorkflowRun
    job_run: JobRun
    step_run: StepRun
    step: Step
    scope: Scope
    services: EngineServices
    # Registers what to do if the run is abandoned mid-step (e.g. kill a command); returns an undo.
    on_abandon: Callable[[Callable[[], None]], Callable[[], None]] | None = None

    def now(self) -> dt.datetime:
        return self.services.clock.now()

    def log(self, line: str, stream: str = "stdout") -> None:
        """One line of the step's output, as it arrives: `at` is when swamp read it."""
        self.services.emit(
            {
                "event": "step_output",
                "at": iso(self.services.clock.now()),
                "job": self.job_run.name,
                "step": self.step_run.name,
                "stream": stream,
                "line": line,
            }
        )


@dataclass(frozen=True)
class Succeeded:
    outputs: Any = None


@dataclass(frozen=True)
class Failed:
    error: str
    reason: str | None = None
    allowable: bool = True
    outputs: Any = None


@dataclass(frozen=True)
class Suspended:
    """The step starts waiting: `open_wait` puts the wait on the StepRun (called under the run's
    lock) and returns the details for the `step_waiting` event. The run then suspends."""

    open_wait: Callable[[StepRun, dt.datetime], dict[str, Any]]


Outcome = Succeeded | Failed | Suspended
