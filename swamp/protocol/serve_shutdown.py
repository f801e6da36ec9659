"""How swamp serve stops (SIGTERM, SIGINT, or the end of its input): intake stops, running steps
get up to --grace seconds to finish, whatever is cut short is recorded as interrupted and its
client told so, queued answers are sent, helpers and the socket file go away."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..domain.errors import ShuttingDown
from .helpers import Helpers
from .serve_flights import Flights
from .serve_sockets import SocketListener


class Shutdown:
    def __init__(
        self,
        grace: float,
        flights: Flights,
        sockets: SocketListener,
        helpers: Helpers,
        shutting_down: threading.Event,
        log: Callable[[str], None],
    ):
        self.grace = grace
        self.flights = flights
        self.sockets = sockets
        self.helpers = helpers
        self.shutting_down = shutting_down
        self.log = log

    def __call__(self, why: str) -> None:
        self.log(f"{why}: taking no new requests; letting running steps finish (up to {self.grace:g}s)")
        self.shutting_down.set()
        self.sockets.stop_accepting()
        if not self.flights.drain(self.grace):
            self._cut_short()
        self.sockets.flush(deadline=time.monotonic() + 2)
        self.helpers.close(wait=False)  # each answers what it holds, then sees EOF and exits
        self.sockets.remove()
        self.log("stopped")

    def _cut_short(self) -> None:
        """Abandon the runs still executing (recorded as interrupted) and answer every request
        still in flight with shutting_down, then its done."""
        for flight in self.flights.all():
            needs_answer, needs_done = flight.take_over() if flight.key[0] >= 0 else (False, False)
            runs = []
            for executor in list(flight.executors):
                executor.abandon("swamp serve shut down")
                runs.append(executor.run.id)
                self.log(f"run {executor.run.id}: cut short, recorded as interrupted")
            if flight.writer is None:
                continue
            if needs_answer:
                cut = f"; run(s) {', '.join(runs)} recorded as interrupted" if runs else ""
                error = ShuttingDown(
                    f"swamp serve shut down before this request finished{cut}", {"runIds": runs}
                )
                flight.writer.write({"type": "error", "id": flight.key[1], "error": error.to_dict()})
            if needs_done:
                flight.writer.write({"type": "done", "id": flight.key[1]})
