"""What a live serve announces in its store, for the commands that want to know whether something
will act on a run without them.

A serve holds, for as long as it lives, the announcement of each thing it does by itself:
`serve --auto-continue` continues answered runs (CLI-037), `serve --enforce-deadlines` fails waits
at their deadlines (SERVE-047). An announcement is the store's (`Store.announce`): a shared flock on
`.swamp/locks/<name>.lock` on the file store, a shared session advisory lock on PostgreSQL. Any
number of serves hold one at once, and the OS or the database lets go of it when its serve ends,
however it ends, so an announcement never outlives its serve and needs no heartbeat. Asking
(`announced`) reads only: it writes nothing, and an account that may only read the repository can
ask.
"""

from __future__ import annotations

from ..domain.announcements import AUTO_CONTINUE, ENFORCER
from ..domain.errors import SwampError
from .context import App

__all__ = ["AUTO_CONTINUE", "ENFORCER", "announced"]


def announced(app: App, name: str) -> bool:
    """Whether a live serve holds the announcement `name` now. A store that cannot be asked
    answers False: nothing is known to act."""
    try:
        return app.store.announced(name)
    except SwampError:
        return False


def auto_continue_announced(app: App) -> bool:
    """Whether a live `swamp serve --auto-continue` follows this store now (CLI-037)."""
    return announced(app, AUTO_CONTINUE)


def deadlines_enforced(app: App) -> bool:
    """Whether a live `swamp serve --enforce-deadlines` follows this store now (WAIT-090)."""
    return announced(app, ENFORCER)
