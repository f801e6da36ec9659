"""Publish what a save changed in a run: the one place the repository's observers are told.

Why: a wait opened, a wait settled, a run suspended or finished must reach subscribers (the
event log that `events.subscribe` reads) and the repository's hooks, whichever process saved the
run. The store calls `publish` after every save of a record (RunRepository.on_change), holding
the run's claim, so the changes of one run are published in the order they were made.

Nothing here may fail or hold the save that triggered it: the record is already durable, and
the run goes on whatever an observer does.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any

from ..domain.changes import RunState, run_changes

if TYPE_CHECKING:
    from ..domain.run import WorkflowRun
    from ..domain.settings import Hook
    from .context import App


def publish(app: App, before: RunState | None, run: WorkflowRun) -> None:
    changes = run_changes(before, run, app.clock.now())
    if not changes:
        return
    append_events(app, changes)
    if app.settings.hooks:
        app.runs.after_commit(lambda: _start_hooks(app, run, changes))


def append_events(app: App, changes: list[dict[str, Any]]) -> None:
    """Append to the event log (each event gains its `cursor`). An append that fails (disk full,
    EACCES, a symbolic link, the log's lock held too long) loses these events: subscribers never
    see them (EVENT-014). Said once per process on stderr; the save and the run go on."""
    events = app.events
    try:
        events.append(changes)
    except Exception as exc:  # an observer never fails the save: the record is already durable
        if not events.warned:
            events.warned = True
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            where = getattr(exc, "filename", None) or events.where
            _warn(
                f"swamp: warning: could not append to the event log ({where}: {reason}); the run goes "
                "on, but subscribers (swamp events, events.subscribe) miss these changes\n"
            )
        return
    blocked = events.retention_blocked
    if blocked and not events.retention_warned:  # EVENT-013: retention never passes over in silence
        events.retention_warned = True
        path, reason = blocked
        _warn(
            f"swamp: warning: the event log could not drop its oldest part ({path}: {reason}), so it "
            "grows past its bound; remove that file as its owner (ls -l shows who) or give this "
            "account write access to its folder\n"
        )


def _warn(message: str) -> None:
    try:
        sys.stderr.write(message)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _start_hooks(app: App, run: WorkflowRun, changes: list[dict[str, Any]]) -> None:
    """The repository's hooks (app/hooks.py), started detached. A hook that cannot even be queued
    is recorded in the run's audit trail; the save stands."""
    if not app.settings.hooks:
        return
    try:
        from .hooks import start_hooks

        start_hooks(app, run, changes)
    except Exception as exc:  # noqa: BLE001 - an observer never fails the save
        from ..domain.instants import iso

        for event in changes:
            for hook in app.settings.hooks_for(event):
                entry = _not_started(iso(app.clock.now()), app.user, hook, event["waitId"], exc)
                with contextlib.suppress(Exception):
                    app.runs.append_audit(run, entry)


def _not_started(at: str, by: str, hook: Hook, wait_id: str, exc: Exception) -> dict[str, object]:
    return {
        "at": at,
        "by": by,
        "action": "hook",
        "hook": hook.name,
        "waitId": wait_id,
        "code": "hook_not_started",
        "command": hook.command,
        "exitCode": None,
        "timedOut": False,
        "durationMs": 0,
        "error": f"{type(exc).__name__}: {exc}",
    }
