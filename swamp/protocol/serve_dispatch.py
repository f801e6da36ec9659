"""swamp serve's requests: each one read is answered on a pool worker (a subscription on a thread
of its own, a signal in a busy stream by a helper process), by the use case behind its type, with
serve's own types (`serve.status`, `cancel`) and what serve adds around the others: runs hosted
(serve_hosting.py), watches and subscriptions that end with serve or their `cancel`, and an approve
(or a signal under --auto-continue) that resumes its run once nothing else is open."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import __version__
from ..domain.actors import Actor
from ..domain.errors import InvalidRequest, ServeError, ShuttingDown, SwampError, TooManyRequests
from .connection import ConnectionWriter
from .frames import FrameWriter, answer
from .helpers import Helpers, Request
from .jsonl import POSITIONING_SECONDS
from .requests import executes, handle
from .serve_flights import Flights, InFlight
from .serve_hosting import Hosting
from .serve_options import ServeOptions
from .serve_peers import Peers

SERVE_TYPES = frozenset({"serve.status", "cancel"})
# Requests whose payload has no repoDir: --repo-dir is not added to them (SERVE-004).
NO_REPO_TYPES = SERVE_TYPES | {"repo.init"}
STREAMS = frozenset({"events.subscribe"})  # requests that last until stopped
MAX_SUBSCRIPTIONS = 128


class Dispatcher:
    def __init__(
        self,
        options: ServeOptions,
        flights: Flights,
        hosting: Hosting,
        helpers: Helpers,
        pool: ThreadPoolExecutor,
        shutting_down: threading.Event,
    ):
        self.options = options
        self.flights = flights
        self.hosting = hosting
        self.helpers = helpers
        self.pool = pool
        self.shutting_down = shutting_down
        self.started = time.monotonic()
        self.peers = Peers(options.repo_dir)

    def submit(
        self,
        writer: FrameWriter,
        conn: int,
        request_id: str,
        request_type: str,
        payload: Any,
        request: Request | None = None,
        actor: Actor | None = None,
        answered: Callable[[], None] = lambda: None,
    ) -> None:
        """Answer a request read on a connection; `answered` is called once it is (its slot)."""
        # A peer of another account: only what it may ask, checked before the request is handed
        # anywhere (a helper, a hosted run); a refusal is answered here (ACCESS-074).
        denied = self.peers.refusal(request_type, payload, actor)
        if denied is not None:
            request = None
            self.hosting.log(f"refused {request_type} from {denied.details['account']} (permission_denied)")
        repo_dir = self.options.repo_dir
        if repo_dir is not None and "repoDir" not in payload and request_type not in NO_REPO_TYPES:
            payload = {**payload, "repoDir": repo_dir}
        key = (conn, request_id)
        flight = InFlight(key, request_type, time.monotonic(), writer=writer, actor=actor)
        self.flights.add(flight)

        def finish() -> None:
            flight.positioned.set()  # a subscription refused before it started frees its reader too
            self.flights.remove(key)
            self.helpers.finished(request_type)
            if isinstance(writer, ConnectionWriter):
                writer.after_sent(answered)  # its slot is free once its frames are sent
            else:
                answered()

        def work() -> None:
            if request is not None and self._handed_off(request, flight, finish):
                return  # helpers became ready since it was read
            try:
                answer(
                    flight,
                    request_id,
                    request_type,
                    payload,
                    lambda t, p, emit: self.dispatch(flight, t, p, emit, denied),
                )
            finally:
                finish()

        if request_type in STREAMS:  # may last for hours: a thread of its own, not a pool worker
            threading.Thread(target=work, name="swamp-serve-stream", daemon=True).start()
            flight.positioned.wait(POSITIONING_SECONDS)  # the connection's next line waits for its start
        elif request is None or not self._handed_off(request, flight, finish):
            self.pool.submit(work)

    def _handed_off(self, request: Request, flight: InFlight, finish: Callable[[], None]) -> bool:
        """Sent to a helper process (a signal in a busy stream); False to answer it here."""
        if self.shutting_down.is_set():
            return False
        return self.helpers.hand_off(request, flight.write_lines, finish)

    def dispatch(
        self, flight: InFlight, request_type: str, payload: Any, emit: Any, denied: SwampError | None = None
    ) -> dict[str, Any]:
        if denied is not None:
            raise denied
        if request_type == "serve.status":
            return self.status()
        if request_type == "cancel":
            return self.cancel(flight, payload)
        if self.shutting_down.is_set():
            raise ShuttingDown("swamp serve is shutting down and takes no new requests; reconnect later")
        if executes(request_type, payload):
            return self.hosting.request(flight, request_type, payload, emit)
        if request_type in STREAMS:
            return self._subscription(flight, request_type, payload, emit)
        if request_type == "workflow.watch":
            from ..app.watch import WATCH_STOP

            def stop() -> str | None:
                if self.shutting_down.is_set():
                    return "shutdown"
                return "cancelled" if flight.stop is not None else None

            token = WATCH_STOP.set(stop)
            try:
                return handle(request_type, payload, emit, flight.actor)
            finally:
                WATCH_STOP.reset(token)
        auto_continues = (
            request_type == "workflow.signal" and self.options.auto_continue and not payload.get("check")
        )
        flight.continues = request_type == "workflow.approve" or auto_continues
        try:
            data = handle(request_type, payload, emit, flight.actor)
            flight.continues_run = data.get("runId")
            if request_type == "workflow.approve" and data.get("approved") or auto_continues:
                data["autoResume"] = self._continue(
                    flight, payload, data["runId"], data["workflowName"], emit
                )
                if data["autoResume"].get("resumed"):
                    data.pop("next", None)
            return data
        finally:
            flight.continues = False

    def continues_here(self, run_id: str) -> bool:
        """Whether a request of this serve is about to continue the run itself (an approve, a
        signal under --auto-continue): the follower leaves it to that request, whose client gets
        the run's events (SERVE-019, SERVE-023). A request not yet answered may be about any run."""
        return self.flights.continues(run_id)

    def _subscription(self, flight: InFlight, request_type: str, payload: Any, emit: Any) -> dict[str, Any]:
        """An events.subscribe: at most MAX_SUBSCRIPTIONS at once; it ends when serve shuts down,
        its `cancel` comes, or its connection's input ends (SERVE-036, SERVE-037)."""
        from ..app.events import SUBSCRIPTION_POSITIONED, SUBSCRIPTION_STOP

        if self.flights.of_types(STREAMS, besides=flight) >= MAX_SUBSCRIPTIONS:
            raise TooManyRequests(
                f"swamp serve already has {MAX_SUBSCRIPTIONS} subscriptions; end one (cancel) or "
                "subscribe through another serve",
                {"maxSubscriptions": MAX_SUBSCRIPTIONS},
            )

        def stop() -> str | None:
            if self.shutting_down.is_set():
                return "shutdown"
            if flight.stop is not None:
                return "cancelled"
            if self.flights.connection_ended(flight.key[0]):
                return "closed"
            return None

        token = SUBSCRIPTION_STOP.set(stop)
        placed = SUBSCRIPTION_POSITIONED.set(flight.positioned.set)
        try:
            return handle(request_type, payload, emit, flight.actor)
        finally:
            SUBSCRIPTION_POSITIONED.reset(placed)
            SUBSCRIPTION_STOP.reset(token)
            flight.positioned.set()

    def _continue(
        self, flight: InFlight, payload: Any, run_id: str, workflow: str, emit: Any
    ) -> dict[str, Any]:
        """Resume a run whose waits are all settled; otherwise say why not."""
        from ..app.context import App
        from ..app.resumable import why_not_resumable

        not_resumable = why_not_resumable(App.open(payload.get("repoDir")), run_id)
        if not_resumable is not None:
            return not_resumable
        resume_payload = {"workflow": workflow, "run": run_id}
        if payload.get("repoDir"):
            resume_payload["repoDir"] = payload["repoDir"]
        try:
            doc = self.hosting.request(flight, "workflow.resume", resume_payload, emit)
        except SwampError as exc:
            return {"resumed": False, "reason": exc.code, "message": exc.message}
        return {"resumed": True, "runStatus": doc["status"]}

    def status(self) -> dict[str, Any]:
        runs, count = self.flights.runs_and_count()
        in_flight = count - 1  # not counting this status request
        open_waits: int | None = None
        try:
            from ..app.context import App

            app = App.open(self.options.repo_dir)
            now = app.clock.now()
            runs_list, _ = app.runs.active_runs()
            open_waits = sum(len(r.open_waits(now)) for r in runs_list if r.status == "suspended")
        except SwampError:
            open_waits = None
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptimeSeconds": round(time.monotonic() - self.started, 3),
            "runsInFlight": runs,
            "requestsInFlight": max(in_flight, 0),
            "openWaits": open_waits,
            "socket": self.options.socket_path,
            "autoContinue": self.options.auto_continue,
            "enforceDeadlines": self.options.enforce_deadlines,
            "shuttingDown": self.shutting_down.is_set(),
        }

    def cancel(self, flight: InFlight, payload: Any) -> dict[str, Any]:
        if not isinstance(payload, dict) or set(payload) - {"id", "run"} or len(payload) != 1:
            raise InvalidRequest(
                "cancel takes exactly one of 'id' (an in-flight request id) or 'run' (a run ID)"
            )
        reason = f"cancel: cancelled through swamp serve (request {flight.key[1]})"
        cancelled = self.flights.stop(flight, payload, reason)
        if not cancelled:
            what = f"request '{payload['id']}'" if "id" in payload else f"run {payload['run']}"
            raise ServeError(
                f"No {what} is in flight here; nothing was cancelled", dict(payload), code="not_in_flight"
            )
        return {"cancelled": cancelled}
