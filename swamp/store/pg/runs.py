"""Run records in PostgreSQL: one `runs` row per run, the wait index and the audit trail beside it.

Why: the same rules as the file store (store/runs.py), with the database doing what the file store
does with indexes it keeps by hand. The record is the JSON the file store writes, in `runs.record`;
the columns beside it (workflow, status, inputs digest, the exact next deadline) are what the
indexes need, so `waits`, `history`, supersede and the deadline sweep are indexed queries, flat in
the number of finished runs. A save is ONE transaction: the row, the run's open and reserved wait
IDs, a NOTIFY on the schema's `saved` channel (and, with save_with_audit, the audit entry): a
crash leaves the old state or the new, never half. The rules themselves (what a record is, which
waits are open, the index entry) are the domain's (domain/activeruns.py for the index entry), reused here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ...domain.activeruns import ACTIVE, active_entry
from ...domain.changes import run_state
from ...domain.errors import RunNotFound, RunUnreadable, StorageError, SwampError
from ...domain.run import WorkflowRun
from ...domain.runref import check_run_ref
from ..openindex import drop_cache
from ..reread import ReadTexts
from .connection import Database

if TYPE_CHECKING:
    from ...app.ports import OnChange
    from ...domain.prefixes import Candidate

_ACTIVE = "status IN (" + ", ".join(f"'{status}'" for status in sorted(ACTIVE)) + ")"
_UPSERT = (
    "INSERT INTO runs (run_id, workflow_id, workflow_name, status, inputs_sha256, next_deadline, "
    "next_deadline_iso, created_at, record) VALUES (%s, %s, %s, %s, %s, %s::timestamptz, %s, %s, %s) "
    "ON CONFLICT (run_id) DO UPDATE SET workflow_id = EXCLUDED.workflow_id, "
    "workflow_name = EXCLUDED.workflow_name, status = EXCLUDED.status, "
    "inputs_sha256 = EXCLUDED.inputs_sha256, next_deadline = EXCLUDED.next_deadline, "
    "next_deadline_iso = EXCLUDED.next_deadline_iso, created_at = EXCLUDED.created_at, "
    "record = EXCLUDED.record"
)
_ENTRY_COLUMNS = "run_id, workflow_id, workflow_name, status, inputs_sha256, next_deadline_iso"


def like_prefix(prefix: str) -> str:
    """A LIKE pattern matching strings that start with `prefix` (its wildcards escaped)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def text_array(values: list[str]) -> str:
    """A text[] literal (both drivers pass it as text, cast in the statement)."""
    quoted = ('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "{" + ",".join(quoted) + "}"




class PgRunRepository:
    def __init__(self, db: Database, on_change: OnChange | None = None, datastore: str | None = None):
        self.db = db
        self.on_change = on_change
        self.datastore = datastore  # the repository's .swamp, where completion's cache lives
        self._texts = ReadTexts()

    # -- where ------------------------------------------------------------------------------------

    def _where(self, run_id: str) -> str:
        return f"postgresql:{self.db.schema}/runs/{run_id}"

    def location(self, run: WorkflowRun) -> str:
        return self._where(run.id)

    def audit_location(self, run: WorkflowRun) -> str:
        return f"{self._where(run.id)}/audit"

    # -- writing ----------------------------------------------------------------------------------

    def save(self, run: WorkflowRun, *, settled_only: bool = False) -> None:
        self._save(run, None, settled_only)

    def save_with_audit(
        self, run: WorkflowRun, entry: dict[str, object], *, settled_only: bool = False
    ) -> None:
        """The record and the audit entry that says why, in one transaction."""
        self._save(run, entry, settled_only)

    def _save(self, run: WorkflowRun, audit: dict[str, object] | None, settled_only: bool) -> None:
        try:
            self._write(run, audit, settled_only)
        except StorageError:
            # The events are appended in the save's transaction (one commit); when the database
            # refused the append itself (a trigger, a right revoked), the save is written again
            # without it, so publishing never fails the save (EVENT-014): those events are lost,
            # and publish says so on stderr.
            failed = self.db.failed_statement() or ""
            if not failed.startswith(("INSERT INTO events", "WITH gone AS")) or self.db.in_transaction():
                raise
            self.db.events_refused = True
            try:
                self._write(run, audit, settled_only)
            finally:
                self.db.events_refused = False

    def _write(self, run: WorkflowRun, audit: dict[str, object] | None, settled_only: bool) -> None:
        data = json.dumps(run.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        entry = active_entry(run)
        deadline = entry["nextDeadline"]
        row = (
            run.id,
            run.workflowId,
            run.workflowName,
            run.status,
            entry["inputsSha256"],
            deadline,
            deadline,
            run.createdAt,
            data + "\n",
        )
        waits = [] if settled_only else run.signalable_wait_ids()
        self._refuse_nul(run, row, waits)
        published = run.published
        try:
            self._transaction(run, row, waits, audit)
        except BaseException:
            run.published = published  # not saved: the next save publishes these changes
            raise

    def _transaction(
        self, run: WorkflowRun, row: tuple[Any, ...], waits: list[str], audit: dict[str, object] | None
    ) -> None:
        db = self.db
        with db.transaction():  # sent in one round trip with its COMMIT (lean.py's pipeline)
            if self.datastore is not None:  # completion's copy of what is open: out of date
                self.after_commit(partial(drop_cache, self.datastore))
            db.send(_UPSERT, row)
            if waits:
                db.send(
                    "INSERT INTO waits (wait_id, run_id, workflow_id) VALUES "
                    + ", ".join(["(%s, %s, %s)"] * len(waits))
                    + " ON CONFLICT (wait_id) DO NOTHING",
                    [value for w in waits for value in (w, run.id, run.workflowId)],
                )
            if audit is not None:
                db.send(
                    "INSERT INTO audit (run_id, entry) VALUES (%s, %s)",
                    (run.id, json.dumps(audit, ensure_ascii=False)),
                )
            db.notify("saved", run.id)
            # Told inside the transaction: the events it appends commit with the save (one commit,
            # and no event lost between the two); what must wait for the commit (hooks) defers
            # itself with after_commit.
            before, run.published = run.published, run_state(run)
            try:
                if self.on_change is not None:
                    self.on_change(before, run)
            except BaseException:
                run.published = before
                raise

    def _refuse_nul(self, run: WorkflowRun, row: tuple[Any, ...], waits: list[str]) -> None:
        """PostgreSQL text cannot hold NUL, and libpq would cut a value at one: a column that
        would hold one is refused, never stored cut (STORE-039). The record itself is JSON, where
        a NUL is written \u0000."""
        names = ("run ID", "workflow ID", "workflow name", "status", "inputs digest")
        bad = [name for name, value in zip(names, row, strict=False) if "\0" in str(value)]
        bad += [f"wait ID {w!r}" for w in waits if "\0" in w]
        if bad:
            raise StorageError(
                f"Run {run.id!r} cannot be saved in the PostgreSQL store at {self.db.shown}: its "
                f"{', '.join(bad)} holds a NUL character (\\u0000), which PostgreSQL text cannot "
                "hold; remove it from the run record (or keep the run in the file store), then retry",
                {"path": None, "errno": None, "store": self.db.shown, "runId": run.id},
            )

    def after_commit(self, action: Callable[[], None]) -> None:
        self.db.after_commit(action)

    def refresh_active_entry(self, run: WorkflowRun) -> None:
        """Nothing to do: every save writes the exact next deadline."""

    def append_audit(self, run: WorkflowRun, entry: dict[str, object]) -> None:
        text = json.dumps(entry, ensure_ascii=False)
        self.db.execute("INSERT INTO audit (run_id, entry) VALUES (%s, %s)", (run.id, text))

    def read_audit(self, run: WorkflowRun) -> list[dict[str, object]]:
        entries = []
        for (text,) in self.db.execute("SELECT entry FROM audit WHERE run_id = %s ORDER BY id", (run.id,)):
            try:
                entry = json.loads(text)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    # -- reading ----------------------------------------------------------------------------------

    def _parse(self, run_id: str, text: str) -> WorkflowRun:
        shown = self._where(run_id)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RunUnreadable(
                f"Run record {shown} is not valid JSON ({exc}); it is left as it is", {"path": shown}
            ) from None
        run = WorkflowRun.from_dict(data, shown)
        run.published = run_state(run)
        self._texts.remember(run, text)
        return run

    def load(self, workflow_id: str, run_id: str) -> WorkflowRun:
        return self._parse(run_id, self._record_text(workflow_id, run_id))

    def load_again(self, run: WorkflowRun) -> WorkflowRun:
        text = self._record_text(run.workflowId, run.id)
        return run if self._texts.unchanged(run, text) else self._parse(run.id, text)

    def _record_text(self, workflow_id: str, run_id: str) -> str:
        rows = self.db.execute(
            "SELECT record FROM runs WHERE run_id = %s AND workflow_id = %s", (run_id, workflow_id)
        )
        if not rows:
            shown = self._where(run_id)
            raise RunNotFound(f"Run record {shown} does not exist", {"path": shown})
        return str(rows[0][0])

    def find(self, run_id_or_prefix: str, workflow_id: str | None = None) -> WorkflowRun:
        """A run by its ID or a unique prefix of it (the runs_prefix index)."""
        if not run_id_or_prefix.strip():
            raise RunNotFound("Give a run ID (or a unique prefix); list runs with: swamp workflow history")
        check_run_ref(run_id_or_prefix)
        sql = "SELECT run_id, record FROM runs WHERE run_id LIKE %s"
        params: list[Any] = [like_prefix(run_id_or_prefix)]
        if workflow_id is not None:
            sql += " AND workflow_id = %s"
            params.append(workflow_id)
        rows = self.db.execute(sql + " ORDER BY run_id LIMIT 1000", params)
        exact = [r for r in rows if r[0] == run_id_or_prefix]
        if exact:
            rows = exact
        if not rows:
            raise RunNotFound(
                f"No run matches '{run_id_or_prefix}'. List runs with: swamp workflow history",
                {"run": run_id_or_prefix},
            )
        if len(rows) > 1:
            from ...domain.prefixes import SHOWN, ambiguous_run

            ids = sorted(r[0] for r in rows)
            raise ambiguous_run(run_id_or_prefix, [self._candidate(r[0], r[1]) for r in rows[:SHOWN]], ids)
        return self._parse(rows[0][0], rows[0][1])

    def _candidate(self, run_id: str, record: Any) -> Candidate:
        from ...domain.prefixes import Candidate, run_candidate

        try:
            return run_candidate(self._parse(run_id, record))
        except SwampError:
            return Candidate(run_id, None, "unreadable")

    def wait_home(self, wait_id: str) -> tuple[str, str] | None:
        rows = self.db.execute("SELECT workflow_id, run_id FROM waits WHERE wait_id = %s", (wait_id,))
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def find_wait(self, wait_id: str) -> WorkflowRun | None:
        rows = self.db.execute(
            "SELECT r.run_id, r.record FROM waits w JOIN runs r ON r.run_id = w.run_id WHERE w.wait_id = %s",
            (wait_id,),
        )
        if not rows:
            return None
        run = self._parse(rows[0][0], rows[0][1])
        return run if run.holds_wait(wait_id) else None

    def read_holding(self, wait_id: str) -> WorkflowRun | None:
        return self.find_wait(wait_id)  # one query: the wait index joined to the runs

    def wait_ids_starting(self, prefix: str) -> list[str]:
        rows = self.db.execute(
            "SELECT wait_id FROM waits WHERE wait_id LIKE %s ORDER BY wait_id", (like_prefix(prefix),)
        )
        return [str(r[0]) for r in rows]

    def active_entries(self, workflow_id: str | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT {_ENTRY_COLUMNS} FROM runs WHERE {_ACTIVE}"
        params: list[Any] = []
        if workflow_id is not None:
            sql += " AND workflow_id = %s"
            params.append(workflow_id)
        return self._entries(sql, params)

    def suspended_with_inputs(self, workflow_id: str, inputs_sha256: str) -> list[dict[str, Any]]:
        sql = (
            f"SELECT {_ENTRY_COLUMNS} FROM runs "
            "WHERE workflow_id = %s AND inputs_sha256 = %s AND status = 'suspended'"
        )
        return self._entries(sql, [workflow_id, inputs_sha256])

    def _entries(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        return [
            {
                "runId": r[0],
                "workflowId": r[1],
                "workflowName": r[2],
                "status": r[3],
                "inputsSha256": r[4],
                "nextDeadline": r[5],
            }
            for r in self.db.execute(sql + " ORDER BY run_id", params)
        ]

    def another_suspended(self, workflow_id: str, run_id: str) -> bool:
        rows = self.db.execute(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE workflow_id = %s AND status = 'suspended' "
            "AND run_id <> %s)",
            (workflow_id, run_id),
        )
        return bool(rows[0][0])

    def _runs(
        self, where: str, params: list[Any], limit: int | None = None
    ) -> tuple[list[WorkflowRun], list[RunUnreadable]]:
        runs: list[WorkflowRun] = []
        unreadable: list[RunUnreadable] = []
        sql = f"SELECT run_id, record FROM runs WHERE {where} ORDER BY created_at DESC, run_id DESC"
        if limit is not None:
            sql += " LIMIT %s"
            params = [*params, max(0, limit)]
        for run_id, text in self.db.execute(sql, params):
            try:
                runs.append(self._parse(run_id, text))
            except RunUnreadable as exc:
                unreadable.append(exc)
        runs.sort(key=lambda r: (r.createdAt, r.id), reverse=True)
        return runs, unreadable

    def active_runs(self, workflow_id: str | None = None) -> tuple[list[WorkflowRun], list[Any]]:
        if workflow_id is None:
            return self._runs(_ACTIVE, [])
        return self._runs(f"{_ACTIVE} AND workflow_id = %s", [workflow_id])

    def load_entries(self, entries: list[dict[str, Any]]) -> tuple[list[WorkflowRun], list[Any]]:
        """The runs behind index entries that are still active."""
        ids = [str(e["runId"]) for e in entries]
        if not ids:
            return [], []
        return self._runs(f"run_id = ANY(%s::text[]) AND {_ACTIVE}", [text_array(ids)])

    def list_runs(
        self, workflow_id: str | None = None, limit: int | None = None
    ) -> tuple[list[WorkflowRun], list[Any]]:
        """Newest first by the runs_history index; `limit` bounds the rows read."""
        if workflow_id is None:
            return self._runs("true", [], limit)
        return self._runs("workflow_id = %s", [workflow_id], limit)

    def workflow_ids(self) -> list[str]:
        return [str(r[0]) for r in self.db.execute("SELECT DISTINCT workflow_id FROM runs ORDER BY 1")]
