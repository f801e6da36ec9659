"""Whether deadlines act by themselves in this store: a live `swamp serve --enforce-deadlines`
announces itself for as long as it runs (SERVE-047), and every command that shows a wait's deadline
says whether anything enforces it, and what to run when nothing does (WAIT-090, WAIT-091)."""

from __future__ import annotations

from ..domain.errors import SwampError
from .context import App

# What a serve with --enforce-deadlines announces in the store for as long as it lives (SERVE-047):
# on files a shared flock on .swamp/locks/deadlines.lock, on PostgreSQL a shared advisory lock.
ENFORCER = "deadlines"
# What to run so that deadlines act by themselves (WAIT-091), the service first.
ENFORCE_WITH = ("swamp service install", "swamp serve --auto-continue --enforce-deadlines")


def deadlines_enforced(app: App) -> bool:
    """Whether a live serve with --enforce-deadlines follows this store (WAIT-090). A store that
    cannot be asked answers False: nothing is known to enforce them."""
    try:
        return app.store.announced(ENFORCER)
    except SwampError:
        return False
