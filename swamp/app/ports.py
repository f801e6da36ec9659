"""What the application needs from a run store: the port that both adapters implement.

Why: run state (records, the wait index, the active-run index, the claim, the audit trail, held
signals and published events) lives either in `.swamp/` on one machine (store/filestore.py, the
embedded default) or in a PostgreSQL database shared by several hosts (store/pg/, issue 17). The
application and the engine talk only to these interfaces, so every rule holds the same on both.
Workflow files and model definitions are not here: they stay in the repository, in git.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..domain.changes import RunState
from ..domain.held import HeldSignal
from ..domain.run import WorkflowRun

# Told, after each save, the state the run was loaded in (None: never saved) and the run as saved.
OnChange = Callable[[RunState | None, WorkflowRun], None]


class RunStore(Protocol):
    """Run records, with the wait index, the active-run index and the audit trail beside them."""

    def save(self, run: WorkflowRun, *, settled_only: bool = False) -> None:
        """Save the run durably (and what indexes it), then tell `on_change`. `settled_only`:
        since it was loaded under its claim the run only had waits settled (a signal)."""
        ...

    def save_with_audit(
        self, run: WorkflowRun, entry: dict[str, object], *, settled_only: bool = False
    ) -> None:
        """save(), and the audit entry that says why: one transaction where the store has them."""
        ...

    def after_commit(self, action: Callable[[], None]) -> None:
        """Run `action` once what is being saved is durable: at once on files; on PostgreSQL
        `on_change` is told inside the save's transaction (its events commit with the save), and
        what must not run before the commit (starting hooks) defers itself with this."""
        ...

    def load(self, workflow_id: str, run_id: str) -> WorkflowRun: ...

    def load_again(self, run: WorkflowRun) -> WorkflowRun:
        """`run` as stored now: `run` itself when its record has not changed since `run` was read
        (the caller has changed nothing in it), else a fresh read (RunNotFound when it is gone)."""
        ...

    def find(self, run_id_or_prefix: str, workflow_id: str | None = None) -> WorkflowRun:
        """A run by its ID or a unique prefix (RunNotFound, RunAmbiguous)."""
        ...

    def find_wait(self, wait_id: str) -> WorkflowRun | None: ...

    def wait_home(self, wait_id: str) -> tuple[str, str] | None:
        """(workflowId, runId) of the run holding `wait_id`, ideally without reading the record."""
        ...

    def read_holding(self, wait_id: str) -> WorkflowRun | None:
        """The run holding (or reserving) `wait_id`, read without its claim, in as few reads as
        the store can (PostgreSQL: one); None when no run does. An unreadable record raises."""
        ...

    def wait_ids_starting(self, prefix: str) -> list[str]: ...

    def active_entries(self, workflow_id: str | None = None) -> list[dict[str, Any]]:
        """Runs not yet finished as index entries: runId, workflowId, workflowName, status,
        inputsSha256, nextDeadline (a lower bound: no unsettled wait ends before it)."""
        ...

    def suspended_with_inputs(self, workflow_id: str, inputs_sha256: str) -> list[dict[str, Any]]:
        """The active entries of the workflow's suspended runs whose inputs have this digest (the
        runs a new run may supersede), found without reading every active run where the store
        can (PostgreSQL: its runs_supersede index)."""
        ...

    def another_suspended(self, workflow_id: str, run_id: str) -> bool: ...

    def active_runs(self, workflow_id: str | None = None) -> tuple[list[WorkflowRun], list[Any]]: ...

    def load_entries(self, entries: list[dict[str, Any]]) -> tuple[list[WorkflowRun], list[Any]]: ...

    def list_runs(
        self, workflow_id: str | None = None, limit: int | None = None
    ) -> tuple[list[WorkflowRun], list[Any]]:
        """Every readable run (the newest `limit` ones), newest first, and the records that could
        not be read. Where the store has an index, `limit` bounds what is read."""
        ...

    def workflow_ids(self) -> list[str]:
        """The workflow IDs that have runs (runs outlive their workflow files)."""
        ...

    def refresh_active_entry(self, run: WorkflowRun) -> None: ...

    def append_audit(self, run: WorkflowRun, entry: dict[str, object]) -> None: ...

    def read_audit(self, run: WorkflowRun) -> list[dict[str, object]]: ...

    def location(self, run: WorkflowRun) -> str:
        """Where the run's record is, as shown to a user (`path` of a run document)."""
        ...

    def audit_location(self, run: WorkflowRun) -> str:
        """Where the run's audit trail is, for a process that appends to it later (hooks)."""
        ...


class Claim(Protocol):
    """One process at a time may change a run (store/claim.py says why and how, per store)."""

    run_id: str

    def acquire(self) -> Claim:
        """Wait up to the timeout, then ClaimTimeout (exit 75)."""
        ...

    def try_acquire(self) -> bool: ...

    def release(self) -> None: ...

    def __enter__(self) -> Claim: ...

    def __exit__(self, *exc: object) -> None: ...


class HeldSignals(Protocol):
    """Signals sent before their wait opened, or while its run was busy (app/held.py)."""

    def hold(self, held: HeldSignal) -> bool:
        """Keep it durably; False (nothing kept) when its wait already holds one."""
        ...

    def read(self, wait_id: str) -> HeldSignal | None: ...

    def exists(self, wait_id: str) -> bool: ...

    def exists_with_next_read(self, wait_id: str) -> Callable[[], bool]:
        """`exists`, asked with the store's next read (PostgreSQL: in the same round trip); call
        the result after that read for the answer."""
        ...

    def discard(self, wait_id: str) -> bool:
        """Remove it; True iff this call removed it (so exactly one caller did)."""
        ...


class Waiter(Protocol):
    """Wakes a reader when what it watches may have changed (inotify, LISTEN/NOTIFY, a poll)."""

    def wait(self, timeout: float | None) -> bool:
        """Block until a change or `timeout`; True when something may have changed."""
        ...


class EventLog(Protocol):
    """Every published change of every run, in one total order, read after opaque cursors."""

    warned: bool  # a failed append was reported (app/publish.py says it once per process)
    where: str  # the log's place, as a warning names it
    # A part of the log retention could not drop, and why (EVENT-013), and whether it was said.
    retention_blocked: tuple[str, str] | None
    retention_warned: bool
    # What a read or an append skipped as not following its predecessor (EVENT-022), in order.
    skipped: list[str]

    def append(self, events: list[dict[str, Any]]) -> list[str]: ...

    def start(self) -> str:
        """The cursor of the log's end (creating the log when there is none)."""
        ...

    def check(self, after: str) -> Any:
        """Refuse a cursor this log cannot resume after (CursorInvalid, CursorExpired)."""
        ...

    def read(self, after: str | None, limit: int) -> list[dict[str, Any]]: ...

    def changes(self) -> AbstractContextManager[Waiter]:
        """Armed on entry: a wait() after a read returns once something was appended since."""
        ...


class Store(Protocol):
    """One repository's run state: which store, and the services built on it."""

    kind: str  # "file" or "postgresql"

    def runs(self, on_change: OnChange | None) -> RunStore: ...

    def claim(
        self, run_id: str, *, timeout: float | None = None, purpose: str = "", brief: bool = False
    ) -> Any:
        """The run's claim (a Claim), not yet taken. `brief`: held only to read the run and save
        it once or twice (a signal, an approval), never while steps run: a store may then make the
        claim part of the write's own transaction (PostgreSQL: one lock fewer to take and give back)."""
        ...

    def claim_held(self, run_id: str) -> bool:
        """Whether some live process holds the run's claim (how an interrupted run is told)."""
        ...

    def announce(self, name: str) -> Any:
        """Say, for as long as this process lives (or until `release()`), that it does `name`
        (a serve enforcing deadlines: SERVE-047); several processes and hosts may at once. The
        returned handle has `renew()` (call it now and then: a broken connection is replaced)
        and `release()`. StorageError when it cannot be said."""
        ...

    def announced(self, name: str) -> bool:
        """Whether a live process of this store announced `name`."""
        ...

    def held(self) -> HeldSignals: ...

    def events(self) -> EventLog: ...

    def run_changes(self, run: WorkflowRun, journal_path: str) -> AbstractContextManager[Waiter]:
        """Wakes `workflow watch` when the run's record or its live journal may have changed."""
        ...

    def status(self) -> dict[str, Any]:
        """What `swamp store status` shows: kind, where, schema version (and whether current)."""
        ...

    def migrate(self, *, new_only: bool = False) -> dict[str, Any] | None:
        """Bring the store's schema to this swamp's (`swamp store migrate`): kind, location,
        schema, from, to, applied. `new_only` (`repo init`): only a store with no swamp tables
        yet, else None (one at another version is left for the next command to refuse)."""
        ...

    def close(self) -> None: ...
