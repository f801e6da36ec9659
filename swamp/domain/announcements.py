"""The names of what a live serve announces in its store (app/announcements.py says how they are
used): the store may read them all at once with its first statement."""

AUTO_CONTINUE = "serve-auto-continue"  # never a run ID (those are UUIDs)
ENFORCER = "deadlines"
NAMES = (AUTO_CONTINUE, ENFORCER)
