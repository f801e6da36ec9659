"""What the engine needs from the outside world, as interfaces the store and models implement."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..domain.expressions import ExpressionEngine
from ..domain.inputs import InputValidationService
from ..domain.run import JobRun, StepRun, WorkflowRun
from ..domain.shellwords import ShellArguments


class MethodFailed(Exception):
    """Raised by a model method to fail its step; `result` (if any) is kept as the step's outputs."""

    def __init__(self, message: str, result: Any = None):
        super().__init__(message)
        self.result = result


class Clock(Protocol):
    def now(self) -> dt.datetime: ...


class MethodRunner(Protocol):
    def shell_arguments(self, model: str, method: str) -> ShellArguments:
        """The arguments of `method` that a shell parses, and how values reach that shell."""
        ...

    def run_method(
        self,
        model: str,
        method: str,
        inputs: dict[str, Any],
        *,
        run: WorkflowRun,
        step_name: str,
        log: OutputLog,
        on_abandon: Callable[[Callable[[], None]], Callable[[], None]] | None = None,
        shell_values: dict[str, str] | None = None,
    ) -> Any: ...


Emit = Callable[[dict[str, Any]], None]


class OutputLog(Protocol):
    """Where a step's output lines go, each as a `step_output` event: a line of the command's
    stdout or stderr (`stream`); an extension method's `log(line)` is stdout."""

    def __call__(self, line: str, stream: str = "stdout") -> None: ...


class EarlySignals(Protocol):
    """Signals held for reserved waits (app/held.py): the executor, holding the run's claim, asks
    for the one held for a wait as it opens, tells when it saved, and sweeps before it lets the
    claim go."""

    def at_open(self, run: WorkflowRun, job: JobRun, step: StepRun, now: dt.datetime) -> bool:
        """Apply the signal held for the step's wait, which just opened; True if it was taken."""
        ...

    def after_save(self, run: WorkflowRun) -> None: ...

    def sweep(self, run: WorkflowRun, now: dt.datetime) -> bool:
        """Apply what is held for open waits (True if something was: save), refuse what can no
        longer be applied."""
        ...


@dataclass(frozen=True)
class RunHooks:
    """How the process hosting a run steers the executions it starts: asked to stop, and told
    which executors are in flight (to `abandon` or `interrupt` them). Set for the current request
    with HOSTED_RUNS: by swamp serve, and by a command that executes a run (cli/interrupt.py, for
    Ctrl-C and SIGTERM)."""

    stop_reason: Callable[[], str | None]
    attach: Callable[[Any], None]
    detach: Callable[[Any], None]


HOSTED_RUNS: ContextVar[RunHooks | None] = ContextVar("HOSTED_RUNS", default=None)


@dataclass
class EngineServices:
    save: Callable[[WorkflowRun], None]
    clock: Clock
    methods: MethodRunner
    expressions: ExpressionEngine
    validation: InputValidationService
    env: dict[str, str]
    user: str
    emit: Emit = field(default=lambda event: None)
    max_concurrency: int | None = None
    # Asked between levels and before each step: a reason ("cancel: ...", "shutdown") stops the run.
    stop_reason: Callable[[], str | None] = field(default=lambda: None)
    # A long-lived host (swamp serve) tracks the executions in flight to stop them on shutdown.
    attach: Callable[[Any], None] = field(default=lambda executor: None)
    detach: Callable[[Any], None] = field(default=lambda executor: None)
    # Signals held for reserved waits (WAIT-069..); None: none are looked for.
    early: EarlySignals | None = None
