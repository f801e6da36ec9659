"""What a long-lived serve announces in its store, for the commands that want to know whether
something will act on a run without them (CLI-037).

`serve --auto-continue` holds, for as long as it follows the store, the claim named
AUTO_CONTINUE (a lock file on the file store, a session advisory lock on PostgreSQL, as any run's
claim): the OS or the database lets it go when serve ends, however it ends, so the announcement
never outlives its serve and needs no heartbeat. Several such serves: one holds it, the others
try again every second and take over when it stops. A command asks `auto_continue_announced`:
whether some process holds that claim now.

Each announcement has its own claim and its own function, so that another (`--enforce-deadlines`)
can be added beside this one.
"""

from __future__ import annotations

from .context import App

AUTO_CONTINUE = "serve-auto-continue"  # never a run ID (those are UUIDs)


def auto_continue_announced(app: App) -> bool:
    """Whether a live `swamp serve --auto-continue` follows this store now."""
    return app.claim_held(AUTO_CONTINUE)
