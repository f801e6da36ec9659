"""swamp serve: one long-lived process that answers the JSON-lines protocol on stdin/stdout and,
with --socket, on a local Unix socket for any number of clients.

Requests run concurrently; a run's claim is held only while serve executes that run, so commands in
other processes keep working on every other run. Serve adds two request types: `serve.status` and
`cancel` (an in-flight request by its id, or a run by its ID). After the last open gate of a run is
approved through serve, serve resumes the run itself, unless the run still waits for a signal.
Resuming after signals stays manual unless --auto-continue, which follows the store's event log
and resumes any run whose last wait is settled, by whichever process or host (autocontinue.py);
--enforce-deadlines fails expired waits without anyone looking. Several serves may do both on one
store: each run is resumed once and each deadline enforced once (the claim, taken without waiting,
and the run re-read under it). SIGTERM/SIGINT stop intake, let running steps finish up to --grace
seconds, record whatever was cut short as interrupted, and exit 0.

The parts, each with one job: serve_dispatch.py answers requests, serve_hosting.py executes runs,
serve_intake.py reads a connection's frames, serve_sockets.py is --socket, serve_shutdown.py stops
serve; serve_flights.py is what they share, the requests in flight. This module wires them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TextIO

from .. import __version__
from ..domain.errors import SwampError
from ..domain.visible import shown
from .autocontinue import Follower
from .helpers import Helpers, warm
from .jsonl import StreamWriter
from .serve_dispatch import SERVE_TYPES, Dispatcher
from .serve_flights import Flights
from .serve_hosting import Hosting
from .serve_intake import Intake
from .serve_options import ServeOptions
from .serve_shutdown import Shutdown
from .serve_sockets import SocketListener

__all__ = ["SERVE_TYPES", "ServeOptions", "Server", "enforce_deadlines", "run_server"]


class ServeLog:
    """serve's log: one stamped line a message, to stderr or --log-file; never fails serve."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def __call__(self, message: str) -> None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with contextlib.suppress(OSError, ValueError):
            self.stream.write(f"{stamp} swamp serve: {shown(message)}\n")  # names, messages: CLI-030
            self.stream.flush()


class Server:
    """One swamp serve, wired from its parts."""

    def __init__(self, options: ServeOptions, log: TextIO):
        self.options = options
        self.log = ServeLog(log)
        self.shutting_down = threading.Event()
        self.finished = threading.Event()
        self.pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="swamp-serve")
        # Auto-continue follows a signal in this process, so signals stay here when it is on.
        self.helpers = Helpers(0 if options.auto_continue else None)
        self.flights = Flights()
        self.hosting = Hosting(self.flights, options.max_runs, self.shutting_down, self.log)
        self.dispatcher = Dispatcher(
            options, self.flights, self.hosting, self.helpers, self.pool, self.shutting_down
        )
        self.intake = Intake(self.dispatcher, self.flights, options.repo_dir)
        self.sockets = SocketListener(
            options.max_connections, self.intake, self.flights, self.shutting_down, self.log
        )
        self.shutdown = Shutdown(
            options.grace, self.flights, self.sockets, self.helpers, self.shutting_down, self.log
        )
        self.follower: Follower | None = None
        if options.auto_continue:
            self.follower = Follower(
                options.repo_dir,
                self.shutting_down,
                self.pool.submit,
                self.hosting.background,
                self.dispatcher.continues_here,
                self.log,
            )


def enforce_deadlines(server: Server) -> None:
    """--enforce-deadlines' thread: every --deadline-interval, the sweep of app/deadlines.py fails
    expired waits (reason wait_timeout); their runs go to the follower under --auto-continue."""
    from ..app.context import App
    from ..app.deadlines import expire_due_waits

    log, follower = server.log, server.follower
    while not server.shutting_down.wait(server.options.deadline_interval):
        try:
            for expiry in expire_due_waits(App.open(server.options.repo_dir)):
                if expiry.saved:
                    log(f"run {expiry.run_id}: {expiry.expired} wait(s) failed with wait_timeout")
                if expiry.error is not None:
                    log(f"deadline check of run {expiry.run_id}: {expiry.error}")
                if expiry.expired and follower is not None:
                    follower.consider(expiry.workflow_id, expiry.run_id)  # SERVE-026
        except SwampError as exc:
            log(f"deadline check: {exc.message}")
        due_soon_hooks(server)


def due_soon_hooks(server: Server) -> None:
    """The waitDueSoon hook of each wait near its deadline, once per wait (HOOK-022)."""
    from ..app.context import App
    from ..app.deadlines import start_due_soon_hooks

    try:
        for due in start_due_soon_hooks(App.open(server.options.repo_dir)):
            if due.error is not None:
                server.log(f"due-soon check of run {due.run_id}: {due.error}")
            else:
                server.log(f"run {due.run_id}: waitDueSoon hook started for {due.wait_id}")
    except SwampError as exc:
        server.log(f"due-soon check: {exc.message}")


def run_server(options: ServeOptions) -> int:
    log_stream: TextIO = open(options.log_file, "a", encoding="utf-8") if options.log_file else sys.stderr  # noqa: SIM115
    server = Server(options, log_stream)
    stop_signal: list[str] = []

    def on_signal(signum: int, frame: Any) -> None:
        # Only a flag: Event.set takes the lock the main thread's finished.wait may hold right
        # now, and the handler runs on that thread (a deadlock). The loop below sees the flag
        # within one wait.
        stop_signal.append(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # Before serve can be reached: from its first answer on, every command sees what it does.
    from ..app.announcements import AUTO_CONTINUE, ENFORCER
    from .serve_announce import hold_announcements

    doing = [AUTO_CONTINUE] * options.auto_continue + [ENFORCER] * options.enforce_deadlines
    hold_announcements(options.repo_dir, doing, server.shutting_down, server.log)
    if options.socket_path:
        server.sockets.listen(options.socket_path, options.socket_group, options.socket_any)
    if server.follower is not None:
        threading.Thread(target=server.follower.follow, name="swamp-serve-follow", daemon=True).start()
    if options.enforce_deadlines:
        threading.Thread(
            target=enforce_deadlines, args=(server,), name="swamp-serve-deadlines", daemon=True
        ).start()
    stdin = sys.stdin.buffer
    from .channel import protect_stdout

    frames_out = protect_stdout()
    stdout_writer = StreamWriter(frames_out)

    def read_stdin() -> None:
        with contextlib.suppress(OSError, ValueError):
            server.intake.read_connection(stdin, stdout_writer)
        if not options.socket_path:
            server.flights.drain()
            server.finished.set()

    threading.Thread(target=read_stdin, name="swamp-serve-stdin", daemon=True).start()
    server.log(f"ready (version {__version__}, pid {os.getpid()})")
    server.helpers.start_soon()  # warm before the first burst of signals
    # The signals answered here (one alone, or any while helpers are off) should not pay for the
    # imports either: the first one would hold up every request read behind it.
    threading.Thread(target=warm, name="swamp-serve-warm", daemon=True).start()
    while not stop_signal and not server.finished.wait(0.2):
        pass
    if stop_signal:
        server.shutdown(f"received {stop_signal[0]}")
    else:
        server.shutdown("end of input")
    finished = threading.Thread(target=stdout_writer.finish, daemon=True)  # what is queued, sent
    finished.start()
    finished.join(2)  # a reader that stopped reading gets no longer than a socket client does
    log_stream.flush()
    os._exit(0)  # worker threads may still hold abandoned work; the records are already consistent
