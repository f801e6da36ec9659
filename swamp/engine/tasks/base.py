"""What a task handler receives and what it returns."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ...domain.definition import Step
from ...domain.expressions import Scope
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

    def now(self) -> dt.datetime:
        return self.services.clock.now()

    def log(self, line: str) -> None:
        self.services.emit(
            {"event": "step_output", "job": self.job_run.name, "step": self.step_run.name, "line": line}
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
    """The step now waits (its StepRun already carries the wait); the run will suspend."""

    details: dict[str, Any]


Outcome = Succeeded | Failed | Suspended
