"""The file store: run state under the repository's `.swamp/` folder (the embedded default).

Each service is today's on-disk code (runs.py, claim.py, held.py, events.py, notify.py); this
module only bundles them behind the store port (app/ports.py).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .repo import RepoLayout

if TYPE_CHECKING:
    from ..app.ports import OnChange, Waiter
    from ..domain.run import WorkflowRun
    from .claim import RunClaim
    from .events import EventLog
    from .held import HeldStore
    from .runs import RunRepository


class FileStore:
    kind = "file"

    def __init__(self, layout: RepoLayout):
        self.layout = layout

    def runs(self, on_change: OnChange | None) -> RunRepository:
        from .runs import RunRepository

        return RunRepository(self.layout, on_change=on_change)

    def claim(
        self, run_id: str, *, timeout: float | None = None, purpose: str = "", brief: bool = False
    ) -> RunClaim:
        from .claim import RunClaim  # a brief claim is the same lock file here

        return RunClaim(self.layout, run_id, timeout=timeout, purpose=purpose)

    def claim_held(self, run_id: str) -> bool:
        from .claim import is_held

        return is_held(self.layout, run_id)

    def announce(self, name: str) -> Any:
        from .claim import Announcement

        return Announcement(self.layout, name).hold()

    def announced(self, name: str) -> bool:
        from .claim import announced

        return announced(self.layout, name)

    def held(self) -> HeldStore:
        from .held import HeldStore

        return HeldStore(self.layout)

    def events(self) -> EventLog:
        from .events import EventLog

        return EventLog(self.layout)

    def run_changes(self, run: WorkflowRun, journal_path: str) -> AbstractContextManager[Waiter]:
        from .notify import Changes
        from .runs import RunRepository

        record = RunRepository(self.layout).path_for(run.workflowId, run.id)
        return Changes([str(record), journal_path])

    def status(self) -> dict[str, Any]:
        """What `swamp store status` shows (STORE-004); `runs` counts the records."""
        from .events import EventLog
        from .runs import RunRepository

        runs = sum(1 for _ in RunRepository(self.layout).record_paths())
        skipped = EventLog(self.layout).count_skipped()  # EVENT-022: shown only when it holds any
        return {
            "kind": self.kind,
            "location": ".swamp",
            "schema": None,
            "schemaVersion": None,
            "expected": None,
            "current": True,
            "runs": runs,
            **({"eventsSkipped": skipped} if skipped else {}),
        }

    def migrate(self, *, new_only: bool = False) -> dict[str, Any] | None:
        """Files have no schema: nothing to migrate (`store migrate` says so; `repo init` nothing)."""
        if new_only:
            return None
        return {
            "kind": self.kind,
            "location": ".swamp",
            "schema": None,
            "from": None,
            "to": None,
            "applied": [],
        }

    def close(self) -> None:
        pass
