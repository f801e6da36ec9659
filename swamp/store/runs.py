"""The run repository: one JSON record per run at .swamp/workflow-runs/<workflowId>/<runId>.json."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..domain.activeruns import ACTIVE, active_entry
from ..domain.changes import run_state
from ..domain.errors import RunNotFound, RunUnreadable, StorageError, SwampError
from ..domain.instants import parse_iso
from ..domain.run import WorkflowRun
from ..domain.runref import check_run_ref, is_run_id
from .files import append_line, read_file, refuse_links, write_atomic, write_record, write_replace
from .openindex import note_saved
from .repo import RepoLayout
from .reread import ReadTexts

if TYPE_CHECKING:
    from ..app.ports import OnChange
    from ..domain.prefixes import Candidate

T = TypeVar("T")
ENTRY_KEYS = frozenset({"runId", "workflowId", "workflowName", "status", "inputsSha256", "nextDeadline"})


def _covers(written: dict[str, Any], entry: dict[str, Any], exact: bool) -> bool:
    if exact or set(written) != ENTRY_KEYS:
        return written == entry
    if any(written[key] != entry[key] for key in ENTRY_KEYS if key != "nextDeadline"):
        return False
    before, now = written["nextDeadline"], entry["nextDeadline"]
    if now is None or before == now:
        return True
    try:
        return before is not None and parse_iso(before) <= parse_iso(now)
    except (TypeError, ValueError):
        return False


class _IndexDamaged(Exception):
    """An active-run index entry (or the folder) cannot be read: the index is rebuilt."""


class RunRepository:
    def __init__(self, layout: RepoLayout, on_change: OnChange | None = None):
        self.layout = layout
        self.on_change = on_change
        self._active_written: dict[str, dict[str, object]] = {}
        self._texts = ReadTexts()
        self._active_dir = layout.datastore / "index" / "active"
        self._built_stamp = layout.datastore / "index" / "active.built"
        self._waits_dir = layout.datastore / "waits"
        self._root_prefix = str(layout.root) + "/"
        self._datastore = str(layout.datastore)
        self._index_dir = f"{self._datastore}/index"
        # Hot paths join plain strings: a pathlib join and its str() cost more than the rest of a read.
        self._runs_prefix = str(layout.runs_dir) + "/"
        self._waits_prefix = str(self._waits_dir) + "/"
        self._unlinked: set[str] = set()  # folders seen to be no symbolic link (nor under one)

    def _no_links(self, folder: str) -> None:
        """OSError(ELOOP) when `folder`, or a folder between the repository and it, is a symbolic
        link: no file under .swamp is opened through one. Checked once per folder and process."""
        if folder not in self._unlinked:
            refuse_links(str(self.layout.root), folder)
            if os.path.isdir(folder):
                self._unlinked.add(folder)

    def path_for(self, workflow_id: str, run_id: str) -> Path:
        return Path(self._record_file(workflow_id, run_id))

    def _record_file(self, workflow_id: str, run_id: str) -> str:
        return f"{self._runs_prefix}{workflow_id}/{run_id}.json"

    def _shown(self, path: str) -> str:
        """`path` relative to the repository when inside it (string work: this is a hot path)."""
        return path[len(self._root_prefix) :] if path.startswith(self._root_prefix) else path

    def relative_path(self, run: WorkflowRun) -> str:
        return self._shown(self._record_file(run.workflowId, run.id))

    def after_commit(self, action: Callable[[], None]) -> None:
        """Each save is durable when it returns: nothing to wait for."""
        action()

    def location(self, run: WorkflowRun) -> str:
        return self.relative_path(run)

    def audit_location(self, run: WorkflowRun) -> str:
        return self._audit_file(run)

    def save_with_audit(
        self, run: WorkflowRun, entry: dict[str, object], *, settled_only: bool = False
    ) -> None:
        """The record, then the entry (a crash between them loses the entry, never the record)."""
        self.save(run, settled_only=settled_only)
        self.append_audit(run, entry)

    def workflow_ids(self) -> list[str]:
        base = self.layout.runs_dir
        try:
            self._no_links(str(base))
            return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
        except OSError as exc:
            raise StorageError.from_os_error(exc, "list the run records under") from None

    def save(self, run: WorkflowRun, *, settled_only: bool = False) -> None:
        """Write the run's record durably, its wait pointers and its active-run entry first.
        `settled_only`: since the run was loaded under its claim it only had waits settled (a
        signal), so no wait opened and its status is the same; the index entry that covered it
        then covers it still (settling a wait only moves the next deadline later, see
        _mark_active), and neither index is read or written."""
        # Compact: json's C encoder only runs without indent (history get shows a record readably).
        data = json.dumps(run.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        path = self._record_file(run.workflowId, run.id)
        active = run.status in ACTIVE
        try:
            self._no_links(os.path.dirname(path))
            self._no_links(self._index_dir)  # the open index is appended to after the record
            if os.path.islink(self._audit_file(run)):  # the trail is appended after the save
                raise OSError(errno.ELOOP, "is a symbolic link", self._audit_file(run))
            if not (settled_only and active):
                self._index_waits(run)
                if active:
                    self._mark_active(run)
            write_record(path, data + b"\n", final=not active)
            if not active:
                self._unmark_active(run.id)
            note_saved(self._datastore, run, path)  # what completion offers (store/openindex.py)
        except OSError as exc:
            shown = self._shown(exc.filename if isinstance(exc.filename, str) else path)
            error = StorageError.from_os_error(exc, "write")
            raise StorageError(
                f"{error.message} (the record on disk is the last one saved)",
                {**error.details, "path": shown},
            ) from None
        before, run.published = run.published, run_state(run)
        if self.on_change is not None:
            self.on_change(before, run)

    # -- the active-run index: index/active/<runId>.json for every run not yet finished ----------
    # Hot paths (waits, approvals, resume, supersede) read this instead of every record, so their
    # cost does not grow with history. Each entry is written under its run's claim: before the
    # record when a run becomes active, removed after the record when it finishes, so a crash can
    # leave a stale entry (dropped when read) but never lose one. A missing or corrupt index is
    # rebuilt from the records.

    def _mark_active(self, run: WorkflowRun, *, exact: bool = False) -> None:
        """Write the run's entry unless the one there still holds. `nextDeadline` is a lower bound
        (no unsettled wait of the run ends before it), so settling a wait, which only moves it
        later, costs no index write on the signal path; `exact` writes it as it is now."""
        entry = active_entry(run)
        written = self._active_written.get(run.id)
        if written is not None and _covers(written, entry, exact):
            return
        path = self._active_dir / f"{run.id}.json"
        self._no_links(str(self._active_dir))
        try:
            current = json.loads(read_file(path))
            if isinstance(current, dict) and _covers(current, entry, exact):
                self._active_written[run.id] = current
                return
        except (OSError, ValueError):
            pass
        # Not fsynced: the index is rebuilt from the records whenever an entry is unreadable.
        write_replace(path, json.dumps(entry).encode("utf-8"))
        self._active_written[run.id] = entry

    def refresh_active_entry(self, run: WorkflowRun) -> None:
        """Bring an active run's entry up to date (its exact next deadline); under the run's claim."""
        if run.status in ACTIVE:
            with contextlib.suppress(OSError):  # a stale lower bound costs a check, never a miss
                self._mark_active(run, exact=True)

    def _unmark_active(self, run_id: str) -> None:
        self._active_written.pop(run_id, None)
        (self._active_dir / f"{run_id}.json").unlink(missing_ok=True)

    def rebuild_active_index(self) -> int:
        """Rebuild the index from every record; returns the number of active runs found."""
        count = 0
        self._active_dir.mkdir(parents=True, exist_ok=True)
        for stale in self._active_dir.glob("*.json"):
            stale.unlink(missing_ok=True)
        self._active_written.clear()
        for path in self.record_paths():
            try:
                run = self.load_path(path)
            except (RunUnreadable, RunNotFound):
                continue
            if run.status in ACTIVE:
                self._mark_active(run)
                count += 1
        write_atomic(self._built_stamp, b"1\n")
        return count

    def active_entries(self, workflow_id: str | None = None) -> list[dict[str, Any]]:
        """The index entries of runs not yet finished: runId, workflowId, workflowName, status,
        inputsSha256, nextDeadline (no unsettled wait ends before it; None when none is open). No
        record is read."""
        return self._read_index(lambda: list(self._entries(workflow_id)))

    def suspended_with_inputs(self, workflow_id: str, inputs_sha256: str) -> list[dict[str, Any]]:
        """The workflow's suspended entries with this inputs digest (every entry is read: the
        index has no other order)."""
        return [
            e
            for e in self.active_entries(workflow_id)
            if e["status"] == "suspended" and e["inputsSha256"] == inputs_sha256
        ]

    def another_suspended(self, workflow_id: str, run_id: str) -> bool:
        """Whether a run of the workflow other than `run_id` is suspended, by the index; reads
        entries only until it finds one."""

        def found() -> bool:
            entries = self._entries(workflow_id)
            return any(e["status"] == "suspended" and e["runId"] != run_id for e in entries)

        return self._read_index(found)

    def _read_index(self, read: Callable[[], T]) -> T:
        """`read` the index, rebuilding it from the records once if it is damaged."""
        try:
            return read()
        except _IndexDamaged:
            self.rebuild_active_index()
        try:
            return read()
        except _IndexDamaged:
            raise StorageError(
                "The active-run index under .swamp/index/active cannot be read even after rebuilding "
                "it from the records; check that .swamp is readable and writable, then retry",
                {"path": ".swamp/index/active"},
            ) from None

    def _entries(self, workflow_id: str | None) -> Iterator[dict[str, Any]]:
        """The index entries (of one workflow), in the order of their names; _IndexDamaged when
        one cannot be read. Plain system calls: `workflow run` reads every entry of its workflow."""
        if not self._built_stamp.exists():
            self.rebuild_active_index()
        folder = str(self._active_dir)
        self._no_links(folder)
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            raise _IndexDamaged from None
        for name in names:
            if not name.endswith(".json") or name.startswith("."):
                continue
            try:
                entry = json.loads(read_file(f"{folder}/{name}"))
                if not isinstance(entry, dict) or set(entry) != ENTRY_KEYS:
                    raise ValueError("not an index entry")
            except FileNotFoundError:
                continue
            except PermissionError:
                raise  # rebuilding would meet it again: the command says storage_error
            except (OSError, ValueError):
                raise _IndexDamaged from None
            if workflow_id is None or entry["workflowId"] == workflow_id:
                yield entry

    def active_runs(self, workflow_id: str | None = None) -> tuple[list[WorkflowRun], list[RunUnreadable]]:
        """Every run not yet finished (pending, running, suspended), newest first."""
        return self.load_entries(self.active_entries(workflow_id))

    def load_entries(self, entries: list[dict[str, Any]]) -> tuple[list[WorkflowRun], list[RunUnreadable]]:
        """The runs behind index entries; entries whose run has finished or gone are dropped."""
        runs: list[WorkflowRun] = []
        unreadable: list[RunUnreadable] = []
        for entry in entries:
            path = self._active_dir / f"{entry['runId']}.json"
            try:
                run = self.load(str(entry["workflowId"]), str(entry["runId"]))
            except RunNotFound:
                path.unlink(missing_ok=True)
                continue
            except RunUnreadable as exc:
                unreadable.append(exc)
                continue
            except StorageError as exc:
                unreadable.append(RunUnreadable(exc.message, exc.details))
                continue
            if run.status not in ACTIVE:
                path.unlink(missing_ok=True)
                continue
            runs.append(run)
        runs.sort(key=lambda r: (r.createdAt, r.id), reverse=True)
        return runs, unreadable

    # -- the wait index: waits/<waitId> -> the run that holds it --------------------------------
    # Written before the record that names the wait, under the run's claim, so a wait in a saved
    # record can always be found. A missing or stale entry is mended from the records.

    def _wait_pointer(self, wait_id: str) -> str:
        return f"{self._waits_prefix}{wait_id}.json"

    def _index_waits(self, run: WorkflowRun) -> None:
        self._no_links(str(self._waits_dir))
        opened = False
        for wait_id in run.signalable_wait_ids():
            pointer = self._wait_pointer(wait_id)
            if not os.path.exists(pointer):
                body = {"workflowId": run.workflowId, "runId": run.id}
                write_atomic(Path(pointer), json.dumps(body).encode("utf-8"))
                opened = True
        if opened:
            # The audit trail is created with the first wait, so that a signal only appends to it:
            # creating a file is the one costly step a signal could otherwise add beside its save.
            with contextlib.suppress(OSError):  # best effort, as the trail itself
                append_line(self._audit_file(run), None)

    def wait_home(self, wait_id: str) -> tuple[str, str] | None:
        """(workflowId, runId) of the run the wait index names for `wait_id`, without reading the
        record; falls back to find_wait when the entry is missing or unreadable."""
        pointed = self._pointed_at(wait_id)
        if pointed is not None:
            return pointed
        found = self.find_wait(wait_id)
        return (found.workflowId, found.id) if found is not None else None

    def read_holding(self, wait_id: str) -> WorkflowRun | None:
        home = self.wait_home(wait_id)
        if home is not None:
            with contextlib.suppress(RunNotFound):
                run = self.load(*home)
                if run.holds_wait(wait_id):
                    return run
        return self.find_wait(wait_id)  # a stale wait index entry is mended here

    def _pointed_at(self, wait_id: str) -> tuple[str, str] | None:
        """(workflowId, runId) from the wait index entry, or None when it is missing or unreadable."""
        try:
            target = json.loads(read_file(self._wait_pointer(wait_id)))
            return str(target["workflowId"]), str(target["runId"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def find_wait(self, wait_id: str) -> WorkflowRun | None:
        """The run holding wait `wait_id` (a well-formed ID), or None."""
        pointer = self._wait_pointer(wait_id)
        self._no_links(str(self._waits_dir))
        pointed = self._pointed_at(wait_id)
        if pointed is not None:
            try:
                run = self.load(*pointed)
                if run.holds_wait(wait_id):
                    return run
            except (OSError, RunNotFound, RunUnreadable):
                pass
        for path in self.record_paths():
            if wait_id.encode() not in read_file(path):
                continue
            run = self.load_path(path)
            if run.holds_wait(wait_id):
                body = {"workflowId": run.workflowId, "runId": run.id}
                write_atomic(Path(pointer), json.dumps(body).encode("utf-8"))
                return run
        return None

    def wait_ids_starting(self, prefix: str) -> list[str]:
        """Every wait ID that starts with `prefix` (a checked wait-ID prefix), sorted: the wait
        index's names and the waits of the active runs (so an open wait whose index entry is
        missing still makes a prefix ambiguous); when neither names one, the waits every record
        holds (retired ones included)."""
        self._no_links(str(self._waits_dir))
        try:
            names = os.listdir(self._waits_dir)
        except FileNotFoundError:
            names = []
        except OSError as exc:
            raise StorageError.from_os_error(exc, "list the wait index") from None
        found = {n[: -len(".json")] for n in names if n.startswith(prefix) and n.endswith(".json")}
        active, _ = self.active_runs()
        found.update(
            s.wait.waitId
            for run in active
            for _, s in run.steps()
            if s.wait is not None and s.wait.waitId.startswith(prefix)
        )
        found.update(
            s.reservedWaitId
            for run in active
            for _, s in run.steps()
            if s.reservedWaitId is not None and s.reservedWaitId.startswith(prefix)
        )
        if not found:
            needle = prefix.encode()
            for path in self.record_paths():
                if needle not in read_file(path):
                    continue
                try:
                    run = self.load_path(path)
                except (RunUnreadable, StorageError):
                    continue
                held = [s.wait.waitId for _, s in run.steps() if s.wait is not None] + run.retiredWaitIds
                held += [s.reservedWaitId for _, s in run.steps() if s.reservedWaitId is not None]
                found.update(w for w in held if w.startswith(prefix))
        return sorted(found)

    def audit_path(self, run: WorkflowRun) -> Path:
        return Path(self._audit_file(run))

    def _audit_file(self, run: WorkflowRun) -> str:
        return f"{self._runs_prefix}{run.workflowId}/{run.id}.audit.jsonl"

    def append_audit(self, run: WorkflowRun, entry: dict[str, object]) -> None:
        """Signal attempts, outside the record so a refusal leaves the record byte-identical."""
        # Best effort: a failure to note an attempt must not hide its answer; but a link planted
        # in the trail's place is refused, never followed nor passed over in silence.
        try:
            append_line(self._audit_file(run), json.dumps(entry, ensure_ascii=False))
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StorageError.from_os_error(exc, "append to the audit trail") from None

    def read_audit(self, run: WorkflowRun) -> list[dict[str, object]]:
        try:
            text = read_file(self._audit_file(run)).decode("utf-8", "replace")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError.from_os_error(exc, "read the audit trail") from None
        entries = []
        for line in text.splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
        return entries

    def load_path(self, path: Path | str) -> WorkflowRun:
        return self._parse(str(path), self._record_bytes(path))

    def load_again(self, run: WorkflowRun) -> WorkflowRun:
        path = self._record_file(run.workflowId, run.id)
        raw = self._record_bytes(path)
        if self._texts.unchanged(run, raw):
            self._active_written.pop(run.id, None)  # as a fresh read does
            return run
        return self._parse(str(path), raw)

    def _record_bytes(self, path: Path | str) -> bytes:
        shown = self._shown(str(path))
        try:
            self._no_links(os.path.dirname(path))
            return read_file(path)
        except FileNotFoundError:
            raise RunNotFound(f"Run record {shown} does not exist", {"path": shown}) from None
        except OSError as exc:
            raise StorageError.from_os_error(exc, "read the run record") from None

    def _parse(self, path: str, raw: bytes) -> WorkflowRun:
        shown = self._shown(path)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise RunUnreadable(
                f"Run record {shown} is not valid JSON ({exc}); it is left as it is",
                {"path": shown},
            ) from None
        run = WorkflowRun.from_dict(data, shown)
        if not (is_run_id(run.id) and is_run_id(run.workflowId)):  # they name files when it is saved
            raise RunUnreadable(
                f"Run record {shown} has an id or workflowId that is not an ID (letters, digits, '-' "
                "and '_'); it is left as it is",
                {"path": shown},
            )
        # Another process may have changed the run's index entry since this one last wrote it.
        self._active_written.pop(run.id, None)
        run.published = run_state(run)
        self._texts.remember(run, raw)
        return run

    def load(self, workflow_id: str, run_id: str) -> WorkflowRun:
        if not (is_run_id(run_id) and is_run_id(workflow_id)):  # names from an index entry: no paths
            raise RunNotFound(
                f"No run {run_id!r:.80} of workflow {workflow_id!r:.80}: not an ID; list runs with: "
                "swamp workflow history",
                {"run": run_id, "reason": "malformed"},
            )
        return self.load_path(self._record_file(workflow_id, run_id))

    def record_paths(self, workflow_id: str | None = None) -> Iterator[Path]:
        base = self.layout.runs_dir
        try:
            self._no_links(str(base))
        except OSError as exc:
            raise StorageError.from_os_error(exc, "list the run records under") from None
        if not base.is_dir():
            return
        folders = [base / workflow_id] if workflow_id else sorted(p for p in base.iterdir() if p.is_dir())
        for folder in folders:
            if folder.is_dir():
                yield from (
                    p
                    for p in folder.iterdir()
                    if p.suffix == ".json"
                    and not p.name.startswith(".")
                    and not p.name.endswith(".audit.json")
                )

    def list_runs(
        self, workflow_id: str | None = None, limit: int | None = None
    ) -> tuple[list[WorkflowRun], list[RunUnreadable]]:
        """Every readable run (the newest `limit`), newest first, and the records that could not
        be read (every record is read: there is no index by time on files)."""
        runs: list[WorkflowRun] = []
        unreadable: list[RunUnreadable] = []
        for path in self.record_paths(workflow_id):
            try:
                runs.append(self.load_path(path))
            except RunUnreadable as exc:
                unreadable.append(exc)
            except StorageError as exc:  # one record a link or unreadable: the others still listed
                unreadable.append(RunUnreadable(exc.message, exc.details))
        runs.sort(key=lambda r: (r.createdAt, r.id), reverse=True)
        return (runs if limit is None else runs[:limit]), unreadable

    def find(self, run_id_or_prefix: str, workflow_id: str | None = None) -> WorkflowRun:
        """A run by its ID or a unique prefix of it."""
        if not run_id_or_prefix.strip():
            raise RunNotFound("Give a run ID (or a unique prefix); list runs with: swamp workflow history")
        check_run_ref(run_id_or_prefix)  # before any path is built from it
        if workflow_id is not None and len(run_id_or_prefix) == 36:
            direct = self.path_for(workflow_id, run_id_or_prefix)
            if direct.exists():
                return self.load_path(direct)
        matches = [p for p in self.record_paths(workflow_id) if p.stem.startswith(run_id_or_prefix)]
        exact = [p for p in matches if p.stem == run_id_or_prefix]
        if exact:
            matches = exact
        if not matches:
            raise RunNotFound(
                f"No run matches '{run_id_or_prefix}'. List runs with: swamp workflow history",
                {"run": run_id_or_prefix},
            )
        if len(matches) > 1:
            from ..domain.prefixes import SHOWN, ambiguous_run

            matches.sort(key=lambda p: p.stem)
            raise ambiguous_run(
                run_id_or_prefix, [self._candidate(p) for p in matches[:SHOWN]], [p.stem for p in matches]
            )
        return self.load_path(matches[0])

    def _candidate(self, path: Path) -> Candidate:
        from ..domain.prefixes import Candidate, run_candidate

        try:
            return run_candidate(self.load_path(path))
        except SwampError:
            return Candidate(path.stem, None, "unreadable")
