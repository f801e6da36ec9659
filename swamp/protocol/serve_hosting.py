"""Runs that swamp serve executes: each is counted by --max-runs, stopped by `cancel` (its
request's stop) and by shutdown, shown by serve.status (its executor on the request's flight), and
logged as it starts and ends. A run's claim is held only while serve executes it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..domain.errors import TooManyRequests
from ..engine.ports import HOSTED_RUNS, RunHooks
from .requests import handle
from .serve_flights import Flights, InFlight


class Hosting:
    def __init__(
        self,
        flights: Flights,
        max_runs: int | None,
        shutting_down: threading.Event,
        log: Callable[[str], None],
    ):
        self.flights = flights
        self.max_runs = max_runs
        self.shutting_down = shutting_down
        self.log = log

    def request(self, flight: InFlight, request_type: str, payload: Any, emit: Any) -> dict[str, Any]:
        """Answer a request that may execute a run, as a run of this serve."""
        return self.host(flight, lambda: handle(request_type, payload, emit, flight.actor))

    def host(self, flight: InFlight, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Do `work`, which may execute a run, as a run of this serve: counted by --max-runs,
        stopped by `cancel` and shutdown, shown by serve.status."""
        if not self.flights.start_executing(flight, self.max_runs):
            raise TooManyRequests(
                f"swamp serve is already executing {self.max_runs} run(s) (--max-runs); "
                "try again when one finishes",
                {"maxRuns": self.max_runs},
            )
        hooks = RunHooks(
            stop_reason=lambda: "shutdown" if self.shutting_down.is_set() else flight.stop,
            attach=lambda executor: self._attach(flight, executor),
            detach=lambda executor: self._detach(flight, executor),
        )
        token = HOSTED_RUNS.set(hooks)
        try:
            return work()
        finally:
            HOSTED_RUNS.reset(token)
            flight.executing = False

    def background(self, run_id: str, attempt: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run the follower's `attempt` at continuing a run as a background request of serve."""
        flight = self.flights.add_background("workflow.resume")
        try:
            return self.host(flight, attempt)
        finally:
            self.flights.remove(flight.key)

    def _attach(self, flight: InFlight, executor: Any) -> None:
        self.flights.attach(flight, executor)
        self.log(f"executing run {executor.run.id} ({executor.run.workflowName})")

    def _detach(self, flight: InFlight, executor: Any) -> None:
        self.flights.detach(flight, executor)
        self.log(f"run {executor.run.id} is {executor.run.status}")
