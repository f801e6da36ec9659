"""swamp store copy: move a repository's run state between the file store and PostgreSQL.

Why: a team that outgrows one machine moves its runs into a database (issue 17), and may move them
back. Every run record, the wait index entries a signal needs (each open or reserved wait), every
audit entry and every held signal is copied through the store port (app/ports.py), so it works
between any two adapters; the target's own save writes its indexes, as for any run. The event
log is not copied: its cursors belong to the log that gave them (subscribers start again on the
new store, EVENT-009) and the runs themselves say everything it told.

Refusals come before anything is written: a target that already holds a run (`store_not_empty`,
so nothing is ever overwritten), a source run whose claim someone holds (`store_busy`: runs must
not change while they are copied), a source record that cannot be read, the same store on both
sides. After the copy both sides are read back and compared by counts and by a SHA-256 digest
over every run (sorted by run ID: its record as saved, its audit entries, its held signals);
a difference is `store_copy_mismatch` (exit 1), naming both sides.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..domain.errors import (
    RunUnreadable,
    StoreBusy,
    StoreCopyMismatch,
    StoreNotEmpty,
    StoreSame,
    StoreUnavailable,
)
from ..domain.settings import is_store_address, redacted

if TYPE_CHECKING:
    from ..domain.held import HeldSignal
    from ..domain.run import WorkflowRun
    from ..store.repo import RepoLayout
    from .ports import RunStore, Store

FILE = "file"
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=False).encode


@dataclass
class Side:
    """One end of a copy: the store, and how a user names it."""

    address: str  # "file" or the PostgreSQL address
    store: Store

    @property
    def shown(self) -> str:
        return self.store.status()["location"] if self.address != FILE else ".swamp"


def open_side(layout: RepoLayout, address: str) -> Side:
    """The store at `address` (`file`: this repository's .swamp/), whatever SWAMP_STORE_URL says."""
    from ..store.choose import open_address

    if address != FILE:
        check_address(address)
    return Side(address, open_address(None if address == FILE else address, layout))


def check_address(address: str) -> None:
    if address != FILE and not is_store_address(address):
        shown = redacted(address)  # no password in any output (STORE-036)
        raise StoreUnavailable(
            f"{shown[:80]!r} is not a store address; name `file` (this repository's .swamp) or a "
            "PostgreSQL store: postgresql://host/dbname or service=NAME",
            {"store": shown[:200]},
        )


def copy_store(layout: RepoLayout, source: Side, to: str) -> dict[str, Any]:
    """Copy every run of `source` into the empty store at `to`, then verify both sides. The
    source is checked first: a refusal of it needs nothing of the target."""
    if source.address == to:
        raise StoreSame(
            f"The runs are already in {source.shown}; name the other store with --to (file, or a "
            "postgresql:// address)",
            {"store": source.shown},
        )
    runs_in = source.store.runs(None)
    runs, unreadable = runs_in.list_runs()
    if unreadable:
        paths = [str(getattr(u, "details", {}).get("path", u)) for u in unreadable][:20]
        raise RunUnreadable(
            f"{len(unreadable)} run record(s) in {source.shown} cannot be read ({', '.join(paths)}); "
            "fix or move them aside, then copy again",
            {"path": paths[0]},
        )
    busy = [run.id for run in runs if not run.is_terminal and source.store.claim_held(run.id)]
    if busy:
        raise StoreBusy(
            f"{len(busy)} run(s) are being changed now ({', '.join(busy[:5])}); stop the serves and "
            "commands working on them (a run must not change while it is copied), then copy again",
            {"runIds": busy},
        )
    target = open_side(layout, to)
    try:
        return _copy(source, runs, target)
    finally:
        target.store.close()


def _copy(source: Side, runs: list[WorkflowRun], target: Side) -> dict[str, Any]:
    runs_in = source.store.runs(None)
    runs_out = target.store.runs(None)  # no on_change: a copy publishes no event, starts no hook
    if runs_out.workflow_ids():
        raise StoreNotEmpty(
            f"{target.shown} already holds runs, and a copy never overwrites one; copy into an "
            "empty store (a new database schema, or a repository whose .swamp holds no runs)",
            {"store": target.shown},
        )
    held_in, held_out = source.store.held(), target.store.held()
    for run in sorted(runs, key=lambda r: r.id):
        runs_out.save(run)
        for entry in runs_in.read_audit(run):
            runs_out.append_audit(run, entry)
        for held in _held_of(run, held_in):
            held_out.hold(held)
    source_view = summary(source.store)
    target_view = summary(target.store)
    result = {
        "from": {"store": source.store.kind, "location": source.shown, **source_view},
        "to": {"store": target.store.kind, "location": target.shown, **target_view},
        "verified": source_view == target_view,
    }
    if not result["verified"]:
        raise StoreCopyMismatch(
            f"The copy in {target.shown} differs from {source.shown} (counts or digest); the source "
            "is as it was. Empty the target and copy again with no command changing runs",
            result,
        )
    return result


def _wait_ids(run: WorkflowRun) -> list[str]:
    """Every wait ID the run holds: opened (settled or not) and reserved."""
    found = []
    for _, step in run.steps():
        if step.wait is not None:
            found.append(step.wait.waitId)
        if step.reservedWaitId is not None and (step.wait is None or step.wait.waitId != step.reservedWaitId):
            found.append(step.reservedWaitId)
    return found




def _held_of(run: WorkflowRun, held: Any) -> list[HeldSignal]:
    found = []
    for wait_id in _wait_ids(run):
        signal = held.read(wait_id)
        if signal is not None:
            found.append(signal)
    return found


def summary(store: Store) -> dict[str, Any]:
    """Counts (runs, waits found through the index, audit entries, held signals) and a SHA-256
    over every run in run-ID order: its record as saved, what the store's indexes say of it (the
    workflow it is listed under; for an unfinished run its index entry: workflow, name, status,
    inputs digest), its audit entries, its held signals (STORE-040)."""
    from ..domain.records import write_record

    runs_store: RunStore = store.runs(None)
    runs, _ = runs_store.list_runs()
    held_store = store.held()
    listed = {r.id: wid for wid in runs_store.workflow_ids() for r in runs_store.list_runs(wid)[0]}
    entries = {str(e["runId"]): e for e in runs_store.active_entries()}
    digest = hashlib.sha256()
    counts = {"runs": 0, "waits": 0, "audit": 0, "held": 0}
    for run in sorted(runs, key=lambda r: r.id):
        counts["runs"] += 1
        digest.update(f"run {run.id}\n".encode())
        digest.update(_encode(run.to_dict()).encode("utf-8", "surrogatepass") + b"\n")
        # nextDeadline is left out: the file store may keep an earlier one than the record's (a
        # bound, refreshed lazily); every other field is exact in both stores.
        entry = {k: v for k, v in entries.get(run.id, {}).items() if k != "nextDeadline"}
        indexed = {"workflow": listed.get(run.id), "entry": entry}
        digest.update(b"index " + _encode(indexed).encode("utf-8", "surrogatepass") + b"\n")
        for wait_id in run.signalable_wait_ids():
            if runs_store.wait_home(wait_id) == (run.workflowId, run.id):
                counts["waits"] += 1
                digest.update(f"wait {wait_id}\n".encode())
        for entry in runs_store.read_audit(run):
            counts["audit"] += 1
            digest.update(b"audit " + _encode(entry).encode("utf-8", "surrogatepass") + b"\n")
        for held in _held_of(run, held_store):
            counts["held"] += 1
            digest.update(b"held " + _encode(write_record(held)).encode("utf-8", "surrogatepass") + b"\n")
    return {**counts, "digest": "sha256:" + digest.hexdigest()}


def copy(repo_dir: str | None, to: str, from_: str | None = None) -> dict[str, Any]:
    """`swamp store copy --to ADDRESS [--from ADDRESS]`: from the repository's store by default."""
    from ..store.choose import store_address
    from ..store.repo import find_repo
    from ..store.settings import load_settings

    layout = find_repo(repo_dir)
    check_address(to)
    if from_ is None:
        from_ = store_address(load_settings(layout)) or FILE
    source = open_side(layout, from_)
    try:
        return copy_store(layout, source, to)
    finally:
        source.store.close()
