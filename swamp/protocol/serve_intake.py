"""swamp serve reading one connection (stdin, or a socket client): its request lines, each checked
as a frame, refused when bad or when serve is shutting down, and otherwise given to the dispatcher,
at most MAX_PIPELINED of the connection's unanswered at once."""

from __future__ import annotations

import threading
from typing import IO

from ..domain.actors import Actor
from ..domain.errors import ShuttingDown
from .frames import BadFrame, FrameWriter, parse_frame, refuse
from .helpers import Request
from .jsonl import MAX_PIPELINED, TooLong, bounded_lines, too_long
from .requests import executes
from .serve_dispatch import SERVE_TYPES, Dispatcher
from .serve_flights import Flights


class Intake:
    def __init__(self, dispatcher: Dispatcher, flights: Flights, repo_dir: str | None):
        self.dispatcher = dispatcher
        self.flights = flights
        self.repo_dir = repo_dir
        self.lock = threading.Lock()
        self.connections = 0  # connections numbered so far

    def next_connection(self) -> int:
        with self.lock:
            self.connections += 1
            return self.connections

    def read_connection(
        self, reader: IO[bytes], writer: FrameWriter, conn: int | None = None, actor: Actor | None = None
    ) -> None:
        """Read one connection's requests until EOF; `actor` is who is on the other end (None: the
        user serve runs as, for stdin)."""
        if conn is None:
            conn = self.next_connection()
        dispatcher = self.dispatcher
        seen: set[str] = set()
        slots = threading.BoundedSemaphore(MAX_PIPELINED)  # this connection's, not the others'
        try:
            for number, raw in enumerate(bounded_lines(reader), start=1):
                if isinstance(raw, TooLong):
                    refuse(writer, None, too_long(number).error, number)
                    continue
                line = raw.strip()
                if not line:
                    continue
                try:
                    request_id, request_type, payload = parse_frame(line, number, seen, SERVE_TYPES)
                except BadFrame as bad:
                    refuse(writer, bad.request_id, bad.error, number)
                    continue
                if dispatcher.shutting_down.is_set() and request_type not in SERVE_TYPES:
                    refuse(
                        writer,
                        request_id,
                        ShuttingDown("swamp serve is shutting down; reconnect later"),
                        number,
                    )
                    continue
                slots.acquire()  # waits while MAX_PIPELINED requests of this connection are unanswered
                dispatcher.helpers.arrived(request_type)
                request = Request(
                    request_id,
                    request_type,
                    line,
                    number,
                    self.repo_dir,
                    actor,
                    executes=executes(request_type, payload),
                )
                dispatcher.submit(
                    writer, conn, request_id, request_type, payload, request, actor, slots.release
                )
        finally:
            self.flights.end_connection(conn)
