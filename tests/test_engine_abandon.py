"""A run abandoned mid-step (serve's shutdown past --grace, an engine error) is recorded as interrupted,
even when the step's work, stopped by the abandon, reports its own failure first."""

from __future__ import annotations

import copy
import threading
from typing import Any

from swamp.domain.definition import Workflow
from swamp.domain.expressions import ExpressionEngine
from swamp.domain.inputs import InputValidationService
from swamp.domain.run import WorkflowRun
from swamp.domain.shellwords import ShellArguments
from swamp.engine.executor import WorkflowExecutor
from swamp.engine.ports import EngineServices, MethodFailed
from swamp.store.clock import SystemClock

WORKFLOW = Workflow.from_json(
    {
        "id": "5e000099-0000-4000-8000-000000000001",
        "name": "deploy",
        "jobs": [
            {
                "name": "main",
                "steps": [
                    {
                        "name": "deploy",
                        "task": {"type": "model_method", "modelIdOrName": "sh", "methodName": "execute"},
                    }
                ],
            }
        ],
    }
)


class CommandKilledByTheStop:
    """A method whose work runs until the abandon hook stops it, then fails as a killed command does."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.reported: threading.Event | None = None

    def shell_arguments(self, model: str, method: str) -> ShellArguments:
        return ShellArguments()

    def run_method(self, model: str, method: str, inputs: dict[str, Any], **kw: Any) -> Any:
        def stop() -> None:
            self.stopped.set()
            # Give the step's thread every chance to record its own failure before the abandon
            # goes on: that is the race this guards against.
            assert self.reported is not None
            self.reported.wait(timeout=2)

        kw["on_abandon"](stop)
        self.started.set()
        self.stopped.wait(timeout=10)
        raise MethodFailed("Command exited with code -9", {"exitCode": -9})


class ReportingExecutor(WorkflowExecutor):
    """Tells the test when the step's outcome has been handed to the executor."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reported = threading.Event()

    def _apply(self, *args: Any) -> None:
        try:
            super()._apply(*args)
        finally:
            self.reported.set()


def test_a_step_killed_by_the_abandon_is_recorded_interrupted_not_by_its_exit_code():
    saved: list[dict[str, Any]] = []
    method = CommandKilledByTheStop()
    services = EngineServices(
        save=lambda run: saved.append(copy.deepcopy(run.to_dict())),
        clock=SystemClock(),
        methods=method,
        expressions=ExpressionEngine(),
        validation=InputValidationService(),
        env={},
        user="tester",
    )
    run = WorkflowRun.create(
        run_id="r-1",
        workflow_id=WORKFLOW.id,
        workflow_name=WORKFLOW.name,
        jobs=[("main", ["deploy"])],
        inputs={},
        tags={},
        initiated_by="tester",
        now=SystemClock().now(),
    )
    executor = ReportingExecutor(WORKFLOW, run, services)
    method.reported = executor.reported
    runner = threading.Thread(target=executor.execute, daemon=True)
    runner.start()
    assert method.started.wait(timeout=10)

    executor.abandon("swamp serve shut down")
    runner.join(timeout=10)
    assert not runner.is_alive()

    last = saved[-1]
    step = last["jobs"][0]["steps"][0]
    assert last["status"] == "failed"
    assert (step["status"], step.get("reason")) == ("failed", "interrupted"), step
    assert step["error"].startswith("interrupted: swamp serve shut down")
    # Nothing the executor did after the abandon reached the record: it was saved finished once.
    assert sum(1 for s in saved if s["status"] == "failed") == 1
