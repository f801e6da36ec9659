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
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import signal
import socket
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any, TextIO

from .. import __version__
from ..domain.actors import Actor
from ..domain.errors import InvalidRequest, ServeError, ShuttingDown, SwampError, TooManyRequests
from ..domain.visible import shown
from ..engine.ports import HOSTED_RUNS, RunHooks
from .autocontinue import Follower
from .connection import MAX_UNREAD_BYTES, ConnectionWriter
from .helpers import Helpers, Request, warm
from .jsonl import (
    MAX_PIPELINED,
    POSITIONING_SECONDS,
    BadFrame,
    FrameWriter,
    StreamWriter,
    TooLong,
    answer,
    bounded_lines,
    parse_frame,
    refuse,
    too_long,
)
from .requests import executes, handle

SERVE_TYPES = frozenset({"serve.status", "cancel"})
# Requests whose payload has no repoDir: --repo-dir is not added to them (SERVE-004).
NO_REPO_TYPES = SERVE_TYPES | {"repo.init"}
STREAMS = frozenset({"events.subscribe"})  # requests that last until stopped
MAX_SUBSCRIPTIONS = 128
MAX_CONNECTIONS = 256  # --max-connections' default: a few descriptors and two threads each
REFUSED_READ_BYTES = 64 * 1024  # what a refused client already sent, read so its close is clean
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


@dataclass
class ServeOptions:
    repo_dir: str | None = None
    socket_path: str | None = None
    max_runs: int | None = None
    max_connections: int = MAX_CONNECTIONS
    auto_continue: bool = False
    enforce_deadlines: bool = False
    grace: float = 10.0
    deadline_interval: float = 1.0
    log_file: str | None = None


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


class Server:
    def __init__(self, options: ServeOptions, log: TextIO):
        self.options = options
        self._log_stream = log
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.requests: dict[tuple[int, str], InFlight] = {}
        self.pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="swamp-serve")
        # Auto-continue follows a signal in this process, so signals stay here when it is on.
        self.helpers = Helpers(0 if options.auto_continue else None)
        self.shutting_down = threading.Event()
        self.finished = threading.Event()
        self.connections = 0
        self.open_connections = 0  # --socket connections being served now (SERVE-045)
        self.refusing = False  # connections are being turned away: logged once until one closes
        self.writers: set[ConnectionWriter] = set()  # each socket connection's, to flush at the end
        self.listener: socket.socket | None = None
        self.ended: set[int] = set()  # connections whose input reached its end
        self.background = 0  # background requests made so far (their keys)
        self.follower: Follower | None = None
        if options.auto_continue:
            self.follower = Follower(
                options.repo_dir,
                self.shutting_down,
                self.pool.submit,
                self.continue_hosted,
                self.continues_here,
                self.log,
            )

    # -- logging ---------------------------------------------------------------------------------

    def log(self, message: str) -> None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with contextlib.suppress(OSError, ValueError):
            self._log_stream.write(f"{stamp} swamp serve: {shown(message)}\n")  # names, messages: CLI-030
            self._log_stream.flush()

    # -- requests ----------------------------------------------------------------------------------

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
        repo_dir = self.options.repo_dir
        if repo_dir is not None and "repoDir" not in payload and request_type not in NO_REPO_TYPES:
            payload = {**payload, "repoDir": repo_dir}
        key = (conn, request_id)
        flight = InFlight(key, request_type, time.monotonic(), writer=writer, actor=actor)
        with self.lock:
            self.requests[key] = flight

        def finish() -> None:
            flight.positioned.set()  # a subscription refused before it started frees its reader too
            with self.lock:
                self.requests.pop(key, None)
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
                    lambda t, p, emit: self.dispatch(flight, t, p, emit),
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

    def dispatch(self, flight: InFlight, request_type: str, payload: Any, emit: Any) -> dict[str, Any]:
        if request_type == "serve.status":
            return self.status()
        if request_type == "cancel":
            return self.cancel(flight, payload)
        if self.shutting_down.is_set():
            raise ShuttingDown("swamp serve is shutting down and takes no new requests; reconnect later")
        if executes(request_type, payload):
            return self._hosted(flight, request_type, payload, emit)
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
        with self.lock:
            return any(f.continues and f.continues_run in (None, run_id) for f in self.requests.values())

    def _subscription(self, flight: InFlight, request_type: str, payload: Any, emit: Any) -> dict[str, Any]:
        """An events.subscribe: at most MAX_SUBSCRIPTIONS at once; it ends when serve shuts down,
        its `cancel` comes, or its connection's input ends (SERVE-036, SERVE-037)."""
        from ..app.events import SUBSCRIPTION_POSITIONED, SUBSCRIPTION_STOP

        with self.lock:
            others = sum(1 for f in self.requests.values() if f is not flight and f.request_type in STREAMS)
            if others >= MAX_SUBSCRIPTIONS:
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
            if flight.key[0] in self.ended:
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

    def _hosted(self, flight: InFlight, request_type: str, payload: Any, emit: Any) -> dict[str, Any]:
        return self._hosting(flight, lambda: handle(request_type, payload, emit, flight.actor))

    def _hosting(self, flight: InFlight, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Do `work`, which may execute a run, as a run of this serve: counted by --max-runs,
        stopped by `cancel` and shutdown, shown by serve.status."""
        with self.lock:
            others = sum(
                1 for f in self.requests.values() if f is not flight and (f.executing or f.executors)
            )
            if self.options.max_runs is not None and others >= self.options.max_runs:
                raise TooManyRequests(
                    f"swamp serve is already executing {self.options.max_runs} run(s) (--max-runs); "
                    "try again when one finishes",
                    {"maxRuns": self.options.max_runs},
                )
            flight.executing = True
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

    def _attach(self, flight: InFlight, executor: Any) -> None:
        with self.lock:
            flight.executors.add(executor)
        self.log(f"executing run {executor.run.id} ({executor.run.workflowName})")

    def _detach(self, flight: InFlight, executor: Any) -> None:
        with self.lock:
            flight.executors.discard(executor)
        self.log(f"run {executor.run.id} is {executor.run.status}")

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
            doc = self._hosted(flight, "workflow.resume", resume_payload, emit)
        except SwampError as exc:
            return {"resumed": False, "reason": exc.code, "message": exc.message}
        return {"resumed": True, "runStatus": doc["status"]}

    def status(self) -> dict[str, Any]:
        with self.lock:
            runs = sorted(e.run.id for f in self.requests.values() for e in f.executors)
            in_flight = len(self.requests) - 1  # not counting this status request
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
        cancelled = []
        with self.lock:
            for other in self.requests.values():
                same_request = "id" in payload and other.key == (flight.key[0], payload["id"])
                same_run = "run" in payload and any(e.run.id == payload["run"] for e in other.executors)
                if (same_request or same_run) and other is not flight:
                    other.stop = f"cancel: cancelled through swamp serve (request {flight.key[1]})"
                    cancelled.append(
                        {
                            "id": other.key[1],
                            "type": other.request_type,
                            "runIds": sorted(e.run.id for e in other.executors),
                        }
                    )
        if not cancelled:
            what = f"request '{payload['id']}'" if "id" in payload else f"run {payload['run']}"
            raise ServeError(
                f"No {what} is in flight here; nothing was cancelled", dict(payload), code="not_in_flight"
            )
        return {"cancelled": cancelled}

    # -- deadlines -----------------------------------------------------------------------------------

    def enforce_deadlines(self) -> None:
        """Fail expired waits at their deadline (reason wait_timeout); continue under --auto-continue."""
        from ..app.context import App
        from ..app.deadlines import expire_due_waits

        while not self.shutting_down.wait(self.options.deadline_interval):
            try:
                for expiry in expire_due_waits(App.open(self.options.repo_dir)):
                    if expiry.saved:
                        self.log(f"run {expiry.run_id}: {expiry.expired} wait(s) failed with wait_timeout")
                    if expiry.error is not None:
                        self.log(f"deadline check of run {expiry.run_id}: {expiry.error}")
                    if expiry.expired and self.follower is not None:
                        self.follower.consider(expiry.workflow_id, expiry.run_id)  # SERVE-026
            except SwampError as exc:
                self.log(f"deadline check: {exc.message}")

    # -- auto-continue ---------------------------------------------------------------------------------

    def continue_hosted(self, run_id: str, attempt: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run the follower's `attempt` at continuing a run as a background request of serve."""
        with self.lock:
            self.background += 1
            flight = InFlight((-1, f"auto-continue-{self.background}"), "workflow.resume", time.monotonic())
            self.requests[flight.key] = flight
        try:
            return self._hosting(flight, attempt)
        finally:
            with self.lock:
                self.requests.pop(flight.key, None)

    # -- connections -----------------------------------------------------------------------------

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
                if self.shutting_down.is_set() and request_type not in SERVE_TYPES:
                    refuse(
                        writer,
                        request_id,
                        ShuttingDown("swamp serve is shutting down; reconnect later"),
                        number,
                    )
                    continue
                slots.acquire()  # waits while MAX_PIPELINED requests of this connection are unanswered
                self.helpers.arrived(request_type)
                request = Request(
                    request_id,
                    request_type,
                    line,
                    number,
                    self.options.repo_dir,
                    actor,
                    executes=executes(request_type, payload),
                )
                self.submit(writer, conn, request_id, request_type, payload, request, actor, slots.release)
        finally:
            with self.lock:
                self.ended.add(conn)  # its subscriptions end with `closed` (SERVE-037)

    def listen(self, path: str) -> None:
        try:
            found = os.lstat(path)
        except FileNotFoundError:
            found = None
        if found is not None:
            if not stat.S_ISSOCK(found.st_mode):  # a file, a directory, a symlink: not ours to remove
                raise ServeError(
                    f"{path} exists and is not a socket; remove it yourself or choose another --socket",
                    {"socket": path},
                    code="socket_path_taken",
                )
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
            except OSError:
                if found.st_uid != os.getuid():
                    raise ServeError(
                        f"{path} is a socket left by another user (uid {found.st_uid}); "
                        "it is theirs to remove: choose another --socket",
                        {"socket": path, "owner": found.st_uid},
                        code="socket_not_owned",
                    ) from None
                os.unlink(path)  # a stale socket left by a serve of ours that died
            else:
                probe.close()
                raise ServeError(
                    f"{path} is in use by a running swamp serve; stop it or choose another --socket",
                    {"socket": path},
                    code="socket_in_use",
                )
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old_mask)
        os.chmod(path, 0o600)
        listener.listen(64)
        self.listener = listener
        threading.Thread(target=self._accept, name="swamp-serve-accept", daemon=True).start()
        self.log(f"listening on {path}")

    def _accept(self) -> None:
        assert self.listener is not None
        starved = False
        while not self.shutting_down.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError as exc:
                if exc.errno not in OUT_OF_DESCRIPTORS or self.shutting_down.is_set():
                    return  # the listener was closed: shutdown
                if not starved:
                    self.log(
                        f"cannot accept a connection ({os.strerror(exc.errno or 0)}); trying again as "
                        "descriptors free up: lower --max-connections or raise the limit (ulimit -n)"
                    )
                starved = True
                time.sleep(0.1)  # the pending connection waits in the listen queue meanwhile
                continue
            starved = False
            with self.lock:
                admitted = self.open_connections < self.options.max_connections
                if admitted:
                    self.open_connections += 1
            if not admitted:
                self._turn_away(client)
                continue
            try:
                threading.Thread(target=self._serve_client, args=(client,), daemon=True).start()
            except RuntimeError:  # no thread to be had: as if the limit were reached
                self._closed_connection()
                self._turn_away(client)

    def _turn_away(self, client: socket.socket) -> None:
        """Refuse a connection past --max-connections with a frame (SERVE-045), without a thread
        or a wait: the frames fit an empty socket buffer, and what the client already sent is read
        so that closing does not reset the connection before it reads them."""
        limit = self.options.max_connections
        with self.lock:
            first, self.refusing = not self.refusing, True
        if first:
            self.log(f"{limit} connections are open (--max-connections): refusing new ones until one closes")
        error = TooManyRequests(
            f"swamp serve already has {limit} connections open (--max-connections); close one of "
            "yours or try again later",
            {"maxConnections": limit},
        )
        frames = [{"type": "error", "id": None, "error": error.to_dict()}, {"type": "done", "id": None}]
        data = "".join(json.dumps(f, separators=(",", ":")) + "\n" for f in frames).encode()
        try:
            client.setblocking(False)
            with contextlib.suppress(OSError):
                client.send(data)
                client.shutdown(socket.SHUT_WR)
            with contextlib.suppress(OSError):
                client.recv(REFUSED_READ_BYTES)
        finally:
            client.close()

    def _closed_connection(self) -> None:
        with self.lock:
            self.open_connections -= 1
            self.refusing = False

    def _serve_client(self, client: socket.socket) -> None:
        reader = client.makefile("rb")
        number = self.next_connection()
        writer: ConnectionWriter | None = None

        def cut_off(unsent: int) -> None:
            self.log(
                f"connection {number}: closed, its client left {unsent} bytes of frames unread "
                f"(more than {MAX_UNREAD_BYTES}); its requests go on without it"
            )

        try:
            writer = ConnectionWriter(client, cut_off)
            with self.lock:
                self.writers.add(writer)
            actor = peer_actor(client)
            self.read_connection(reader, writer, number, actor)
            # Only this connection's requests: another client's subscription may last for days,
            # and this socket (and thread) would wait for it.
            self._drain(conn=number)
            writer.finish()
        except (OSError, ValueError):
            pass  # the client went away; its requests finish without it
        except RuntimeError:  # no thread could be started for it (its frames, a subscription)
            self.log(f"connection {number}: closed, no thread could be started for it")
        finally:
            if writer is not None:
                with self.lock:
                    self.writers.discard(writer)
            # Its place is free before it is closed: a client that sees it end may connect again.
            self._closed_connection()
            for handle in (reader, client):
                with contextlib.suppress(OSError, ValueError):
                    handle.close()

    def _flush_connections(self, deadline: float) -> None:
        """Send what each connection still has queued (its last answers) before serve exits; a
        client that does not read gets until `deadline`."""
        with self.lock:
            writers = list(self.writers)
        for writer in writers:
            writer.finish(timeout=max(0.0, deadline - time.monotonic()))

    def _drain(self, timeout: float | None = None, conn: int | None = None) -> bool:
        """Wait until no request (of connection `conn`, when given) is in flight; False if
        `timeout` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self.lock:
                busy = bool(self.requests) if conn is None else any(k[0] == conn for k in self.requests)
            if not busy:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    # -- shutdown --------------------------------------------------------------------------------------

    def shutdown(self, why: str) -> None:
        self.log(
            f"{why}: taking no new requests; letting running steps finish (up to {self.options.grace:g}s)"
        )
        self.shutting_down.set()
        if self.listener is not None:
            with contextlib.suppress(OSError):
                self.listener.close()
        if not self._drain(self.options.grace):
            with self.lock:
                flights = list(self.requests.values())
            for flight in flights:
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
        self._flush_connections(deadline=time.monotonic() + 2)
        self.helpers.close(wait=False)  # each answers what it holds, then sees EOF and exits
        if self.options.socket_path:
            with contextlib.suppress(OSError):
                os.unlink(self.options.socket_path)
        self.log("stopped")


def peer_actor(client: socket.socket) -> Actor:
    """The account of the process at the other end of a Unix socket, from the kernel (SO_PEERCRED),
    never from anything the client says. Where the OS has no SO_PEERCRED, the socket's mode (0600)
    admits only serve's own user, so that is who it is."""
    from ..store.clock import account_of

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return Actor(account_of(os.getuid()))
    _pid, uid, _gid = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return Actor(account_of(uid))


def run_server(options: ServeOptions) -> int:
    log_stream: TextIO = open(options.log_file, "a", encoding="utf-8") if options.log_file else sys.stderr  # noqa: SIM115
    server = Server(options, log_stream)
    stop_signal: list[str] = []

    def on_signal(signum: int, frame: Any) -> None:
        stop_signal.append(signal.Signals(signum).name)
        server.finished.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if options.socket_path:
        server.listen(options.socket_path)
    if server.follower is not None:
        threading.Thread(target=server.follower.follow, name="swamp-serve-follow", daemon=True).start()
    if options.enforce_deadlines:
        threading.Thread(target=server.enforce_deadlines, name="swamp-serve-deadlines", daemon=True).start()
    stdin = sys.stdin.buffer
    from .channel import protect_stdout

    frames_out = protect_stdout()
    stdout_writer = StreamWriter(frames_out)

    def read_stdin() -> None:
        with contextlib.suppress(OSError, ValueError):
            server.read_connection(stdin, stdout_writer)
        if not options.socket_path:
            server._drain()
            server.finished.set()

    threading.Thread(target=read_stdin, name="swamp-serve-stdin", daemon=True).start()
    server.log(f"ready (version {__version__}, pid {os.getpid()})")
    server.helpers.start_soon()  # warm before the first burst of signals
    # The signals answered here (one alone, or any while helpers are off) should not pay for the
    # imports either: the first one would hold up every request read behind it.
    threading.Thread(target=warm, name="swamp-serve-warm", daemon=True).start()
    while not server.finished.wait(0.2):
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
