"""Publish what a save changed in a run: the one place the repository's observers are told.

Why: a wait opened, a wait settled, a run suspended or finished must reach subscribers (the
event log that `events.subscribe` reads) and the repository's hooks, whichever process saved the
run. The store calls `publish` after every save of a record (RunRepository.on_change), holding
the run's claim, so the changes of one run are published in the order they were made.

Nothing here may fail or hold the save that triggered it: the record is already durable, and
the run goes on whatever an observer does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..domain.changes import RunState, run_changes

if TYPE_CHECKING:
    from ..domain.run import WorkflowRun
    from .context import App


def publish(app: App, before: RunState | None, run: WorkflowRun) -> None:
    changes = run_changes(before, run, app.clock.now())
    if not changes:
        return
