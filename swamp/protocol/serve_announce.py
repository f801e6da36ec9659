"""serve says in its store what it does by itself (app/announcements.py): `--auto-continue`
(CLI-037) and `--enforce-deadlines` (SERVE-047), held from before serve can be reached until it
stops."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..domain.errors import SwampError

RENEW_SECONDS = 1.0  # PostgreSQL: how soon an announcement lost with its connection is taken again


def hold_announcements(
    repo_dir: str | None, names: Sequence[str], stopping: threading.Event, log: Callable[[str], None]
) -> None:
    """Announce each of `names` now (so a command run as soon as serve is ready sees them), then
    keep them in a thread: renewed while serve runs, let go of when it stops (a serve finishing
    its last runs no longer takes new ones on)."""
    from ..app.context import App

    held: list[tuple[str, Any]] = []
    pending: list[str] = []

    def take(name: str) -> bool:
        try:
            held.append((name, App.open(repo_dir).store.announce(name)))
            return True
        except SwampError as exc:
            log(f"announcing {name} in the store: {exc.message}; trying again in {RENEW_SECONDS:g}s")
            return False

    for name in names:
        if not take(name):
            pending.append(name)  # the store may be restarting: said as soon as it is back
    if not held and not pending:
        return

    def keep() -> None:
        while not stopping.wait(RENEW_SECONDS):
            for name, announcement in held:
                try:
                    announcement.renew()
                except SwampError as exc:
                    log(f"announcing {name} in the store: {exc.message}")
            pending[:] = [name for name in pending if not take(name)]
        for _, announcement in held:
            with contextlib.suppress(Exception):
                announcement.release()

    threading.Thread(target=keep, name="swamp-serve-announce", daemon=True).start()
