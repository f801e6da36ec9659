"""The requests one swamp serve is answering: each one's flight (its frames, the runs it executes,
whether it was told to stop) and the registry of them that cancel, serve.status, hosting, draining
and shutdown read. One lock guards the registry and every flight's executors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..domain.actors import Actor
from .frames import FrameWriter


@dataclass
class InFlight:
    """One request being answered: what it is, and the runs it executes."""

    key: tuple[int, str]
    request_type: str
    started: float
    stop: str | None = None
    executors: set[Any] = field(default_factory=set)
    writer: FrameWriter | None = None
    actor: Actor | None = None  # who sent it: a socket peer's account; None: serve's own user
    executing: bool = False
    # An approve, or a signal under --auto-continue, that continues its run itself once answered:
    # the follower (autocontinue.py) leaves that run to it. continues_run: None until answered.
    continues: bool = False
    continues_run: str | None = None
    # The frames of a client's request go through its flight: once its done is written, or shutdown
    # has taken it over, later frames are dropped, so a client sees one answer and nothing after done.
    answered: bool = False  # its result or error is written
    closed: bool = False
    # A subscription sets it once it has fixed its start (or failed): its reader waits for that.
    positioned: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)
    _frames: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def write(self, frame: dict[str, Any]) -> None:
        with self._frames:
            if self.closed or self.writer is None:
                return
            self.writer.write(frame)
            kind = frame.get("type")
            self.answered = self.answered or kind != "event"
            self.closed = kind == "done"

    def write_lines(self, text: str) -> None:
        """A helper's whole answer, done included."""
        with self._frames:
            if self.closed or self.writer is None:
                return
            self.writer.write_lines(text)
            self.answered = self.closed = True

    def take_over(self) -> tuple[bool, bool]:
        """Close the request to its own worker: (whether it still needs an answer, and a done)."""
        with self._frames:
            if self.writer is None:
                return False, False
            needs = (not self.answered, not self.closed)
            self.answered = self.closed = True
            return needs


class Flights:
    """Every request in flight in one serve, by (connection, request id); background requests
    (auto-continue) have connection -1."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._flights: dict[tuple[int, str], InFlight] = {}
        self._background = 0  # background requests made so far (their keys)
        self._ended: set[int] = set()  # connections whose input reached its end

    def add(self, flight: InFlight) -> None:
        with self.lock:
            self._flights[flight.key] = flight

    def add_background(self, request_type: str) -> InFlight:
        with self.lock:
            self._background += 1
            flight = InFlight((-1, f"auto-continue-{self._background}"), request_type, time.monotonic())
            self._flights[flight.key] = flight
            return flight

    def remove(self, key: tuple[int, str]) -> None:
        with self.lock:
            self._flights.pop(key, None)

    def all(self) -> list[InFlight]:
        with self.lock:
            return list(self._flights.values())

    def count(self) -> int:
        with self.lock:
            return len(self._flights)

    def runs_and_count(self) -> tuple[list[str], int]:
        """The IDs of the runs executing now (sorted), and how many requests are in flight."""
        with self.lock:
            return sorted(e.run.id for f in self._flights.values() for e in f.executors), len(self._flights)

    def of_types(self, types: Iterable[str], besides: InFlight) -> int:
        """How many requests of these types are in flight, `besides` not counted."""
        with self.lock:
            return sum(1 for f in self._flights.values() if f is not besides and f.request_type in types)

    def start_executing(self, flight: InFlight, max_runs: int | None) -> bool:
        """Mark the flight executing unless `max_runs` others are (False then)."""
        with self.lock:
            others = sum(
                1 for f in self._flights.values() if f is not flight and (f.executing or f.executors)
            )
            if max_runs is not None and others >= max_runs:
                return False
            flight.executing = True
            return True

    def attach(self, flight: InFlight, executor: Any) -> None:
        with self.lock:
            flight.executors.add(executor)

    def detach(self, flight: InFlight, executor: Any) -> None:
        with self.lock:
            flight.executors.discard(executor)

    def continues(self, run_id: str) -> bool:
        """Whether a request is about to continue the run itself; one not yet answered may be
        about any run."""
        with self.lock:
            return any(f.continues and f.continues_run in (None, run_id) for f in self._flights.values())

    def stop(self, by: InFlight, payload: dict[str, Any], reason: str) -> list[dict[str, Any]]:
        """Tell the requests `payload` names (`id`: a request of `by`'s connection; `run`: the
        requests executing that run) to stop, with `reason`; what was told, for cancel's answer."""
        cancelled = []
        with self.lock:
            for other in self._flights.values():
                same_request = "id" in payload and other.key == (by.key[0], payload["id"])
                same_run = "run" in payload and any(e.run.id == payload["run"] for e in other.executors)
                if (same_request or same_run) and other is not by:
                    other.stop = reason
                    cancelled.append(
                        {
                            "id": other.key[1],
                            "type": other.request_type,
                            "runIds": sorted(e.run.id for e in other.executors),
                        }
                    )
        return cancelled

    def end_connection(self, conn: int) -> None:
        with self.lock:
            self._ended.add(conn)  # its subscriptions end with `closed` (SERVE-037)

    def connection_ended(self, conn: int) -> bool:
        return conn in self._ended

    def drain(self, timeout: float | None = None, conn: int | None = None) -> bool:
        """Wait until no request (of connection `conn`, when given) is in flight; False if
        `timeout` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self.lock:
                busy = bool(self._flights) if conn is None else any(k[0] == conn for k in self._flights)
            if not busy:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
