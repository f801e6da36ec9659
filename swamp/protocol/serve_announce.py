"""serve says in its store that it runs with --auto-continue (app/announcements.py, CLI-037): a
thread that holds the announcement's claim while serve runs, taking over from another serve that
held it when that one stops."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from ..domain.errors import SwampError

RETRY_SECONDS = 1.0
FIRST_TRY_SECONDS = 5.0  # how long serve waits, before it says ready, for the first attempt


def announce_auto_continue(
    repo_dir: str | None, stopping: threading.Event, log: Callable[[str], None]
) -> None:
    """Start the thread; return once it has tried the claim once (so a command run as soon as
    serve is ready sees the announcement)."""
    tried = threading.Event()

    def hold() -> None:
        from ..app.announcements import AUTO_CONTINUE
        from ..app.context import App

        claim = None
        held = False
        try:
            # The claim lives on this thread (PostgreSQL: its connection): taken and let go here.
            claim = App.shared(repo_dir).claim(AUTO_CONTINUE, purpose="serve --auto-continue")
            while not stopping.is_set():
                if not held:
                    try:
                        held = claim.try_acquire()
                    except SwampError as exc:
                        log(f"announcing --auto-continue in the store: {exc.message}")
                tried.set()
                stopping.wait(RETRY_SECONDS)
        except SwampError as exc:
            log(f"announcing --auto-continue in the store: {exc.message}")
        finally:
            tried.set()
            if held and claim is not None:
                with contextlib.suppress(Exception):
                    claim.release()

    threading.Thread(target=hold, name="swamp-serve-announce", daemon=True).start()
    tried.wait(FIRST_TRY_SECONDS)
