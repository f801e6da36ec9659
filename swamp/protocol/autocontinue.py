"""serve --auto-continue from any host: continue a run once its last wait is settled, whoever
settled it (a CLI in another terminal, another serve, a host elsewhere sharing the database).

Why: before issue 17 a serve continued only runs whose signal came through itself, so a verdict
sent with `swamp workflow signal` from a CI job on another machine left the run suspended until
someone resumed it. Every save of a run publishes what it changed to the store's event log
(app/publish.py); this follower reads that log (app.events: a table and LISTEN/NOTIFY on
PostgreSQL, `.swamp/events/` and inotify on files), and for each `wait_settled` hands the run to a
pool worker that calls app/continuation.py's `continue_answered`: the claim taken without waiting,
the run re-read under it and continued only if it still waits for nothing. That is what makes a
run continued once when several serves follow the same store (SERVE-041).

A claim that another process holds while the run, read without it, still waits for nothing is
transient (the signaller saves and publishes under its claim, then lets it go; another serve saves
the run `running` right after taking it): the worker tries again after a short, growing pause
until the run is continued or no longer waits for nothing. So it does after a storage error (the
database restarting: each thread's connection is made again on its next use), when --max-runs is
reached, and while a request of this serve (a signal or an approve) is about to continue the run
itself and stream its events (SERVE-019, SERVE-023): the request goes first.

At start, and whenever the log could not be followed (a storage error, a cursor past the log's
retention), the follower sweeps the active runs for suspended runs that already wait for nothing
(signals sent while no serve ran, SERVE-040).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..domain.errors import CursorExpired, StorageError, StoreUnavailable, SwampError, TooManyRequests

if TYPE_CHECKING:
    from ..app.context import App

BATCH = 256
SHUTDOWN_CHECK_SECONDS = 1.0  # the waiter wakes on every append; this only notices shutdown
FIRST_PAUSE = 0.02
LONGEST_PAUSE = 1.0
ERROR_PAUSE = 2.0


class Follower:
    """One serve's auto-continue: a thread following the event log and workers continuing runs.

    `continue_hosted(key, attempt)` runs `attempt()` as a background request of serve (counted by
    --max-runs, stopped by shutdown) and returns its result; `busy(run_id)` says whether a request
    of this serve is about to continue the run itself."""

    def __init__(
        self,
        repo_dir: str | None,
        stopping: threading.Event,
        submit: Callable[[Callable[[], None]], Any],
        continue_hosted: Callable[[str, Callable[[], dict[str, Any]]], dict[str, Any]],
        busy: Callable[[str], bool],
        log: Callable[[str], None],
    ):
        self.repo_dir = repo_dir
        self.stopping = stopping
        self.submit = submit
        self.continue_hosted = continue_hosted
        self.busy = busy
        self.log = log
        self.lock = threading.Lock()
        # Runs a worker of this serve is handling; True: a later settled wait came meanwhile.
        self.active: dict[str, bool] = {}

    def _app(self) -> App:
        from ..app.context import App

        return App.shared(self.repo_dir)

    # -- following ---------------------------------------------------------------------------------

    def follow(self) -> None:
        """The thread's body: sweep, then follow the log until serve shuts down."""
        while True:
            try:
                app = self._app()
                log = app.events
                break
            except (StorageError, StoreUnavailable) as exc:  # the store is restarting: not for good
                self.log(f"auto-continue: {exc.message}; trying again in {ERROR_PAUSE:g}s")
                if self.stopping.wait(ERROR_PAUSE):
                    return
            except SwampError as exc:
                self.log(
                    f"auto-continue follows no repository ({exc.message}); only signals sent through "
                    "this serve continue runs"
                )
                return
        while not self.stopping.is_set():
            try:
                self._follow(app, log)
                return
            except SwampError as exc:
                self.log(f"auto-continue: {exc.message}; following again in {ERROR_PAUSE:g}s")
            except Exception as exc:  # a background thread must never take serve down
                self.log(f"auto-continue: {type(exc).__name__}: {exc}; following again in {ERROR_PAUSE:g}s")
            if self.stopping.wait(ERROR_PAUSE):
                return

    def _follow(self, app: App, log: Any) -> None:
        with log.changes() as changes:  # armed before the first read: nothing appended is missed
            cursor = log.start()
            self.sweep(app)
            changed = True
            while not self.stopping.is_set():
                if changed:
                    try:
                        batch = log.read(cursor, BATCH)
                    except CursorExpired:  # fell behind the log's retention: the runs say it all
                        cursor = log.start()
                        self.sweep(app)
                        continue
                    settled: dict[str, str] = {}
                    for event in batch:
                        cursor = event["cursor"]
                        if event.get("event") == "wait_settled":
                            settled.setdefault(event["runId"], event["workflowId"])
                    for run_id, workflow_id in settled.items():
                        self.consider(workflow_id, run_id)
                    if len(batch) == BATCH:
                        continue
                changed = changes.wait(SHUTDOWN_CHECK_SECONDS)

    def sweep(self, app: App) -> None:
        """Continue every suspended run that already waits for nothing."""
        entries = [e for e in app.runs.active_entries() if e["status"] == "suspended"]
        runs, _ = app.runs.load_entries(entries)
        for run in runs:
            if run.answered_in_full():
                self.consider(run.workflowId, run.id)

    # -- continuing ----------------------------------------------------------------------------------

    def consider(self, workflow_id: str, run_id: str) -> None:
        """Hand the run to a worker, unless one of ours already handles it (then it looks again)."""
        if self.stopping.is_set():
            return
        with self.lock:
            if run_id in self.active:
                self.active[run_id] = True
                return
            self.active[run_id] = False
        self.submit(lambda: self._work(workflow_id, run_id))

    def _work(self, workflow_id: str, run_id: str) -> None:
        try:
            again = True
            while again:
                self._attempt(workflow_id, run_id)
                with self.lock:
                    again = self.active[run_id]
                    self.active[run_id] = False
        except Exception as exc:  # a background task must never take serve down
            self.log(f"run {run_id}: auto-continue failed: {type(exc).__name__}: {exc}")
        finally:
            with self.lock:
                self.active.pop(run_id, None)

    def _attempt(self, workflow_id: str, run_id: str) -> None:
        from ..app.continuation import CLAIM_HELD, continue_answered

        app = self._app()
        pause = FIRST_PAUSE
        while not self.stopping.is_set():
            if self.busy(run_id):
                outcome: dict[str, Any] = {"continued": False, "reason": "answered_here"}
            else:
                try:
                    outcome = self.continue_hosted(
                        run_id, lambda: continue_answered(app, workflow_id, run_id, None)
                    )
                except TooManyRequests:
                    outcome = {"continued": False, "reason": "too_many_requests"}
                except StorageError as exc:  # the database restarting: this thread reconnects next
                    self.log(f"run {run_id}: auto-continue: {exc.message}; trying again")
                    outcome = {"continued": False, "reason": "storage_error"}
                    pause = max(pause, FIRST_PAUSE * 16)
                except SwampError as exc:
                    self.log(f"run {run_id}: auto-continue: {exc.message}")
                    return
            reason = outcome.get("reason")
            if outcome["continued"]:
                self.log(f"run {run_id}: auto-continued, {outcome['run']['status']}")
                return
            if reason not in (CLAIM_HELD, "answered_here", "too_many_requests", "storage_error"):
                return  # no longer suspended, or something is open again: nothing to do
            if self.stopping.wait(pause):
                return
            pause = min(pause * 2, LONGEST_PAUSE)
