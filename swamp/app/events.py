"""events.subscribe and `swamp events`: stream the repository's event log, resuming after a cursor.

What is streamed is what every process published (app/publish.py appends to store/events.py):
events from a CLI in another terminal reach a subscriber of serve. A subscription reads what the
log holds after its start, then waits on the log's folder (store/notify.py: no CPU while nothing
changes) and reads again; events come in log order, each once. It ends with one result, `cursor`
(where it got to: pass it back as `after` to go on with no duplicate and nothing missed) and
`outcome`: `timeout`, or what its host says through SUBSCRIPTION_STOP (`cancelled`, `closed`,
`shutdown`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ..engine.ports import Emit
from .context import App

# The event log's kinds; events.subscribe's `kinds` is checked by requests.schema.json, which
# names the same (tests/test_request_schemas.py).
KINDS = ("wait_opened", "wait_settled", "run_suspended", "run_finished")
BATCH = 256
# A host (`swamp --jsonl`, `swamp serve`) sets this: called while the subscription waits, it
# returns the outcome to end with (`cancelled`, `closed`, `shutdown`) or None to go on.
SUBSCRIPTION_STOP: ContextVar[Callable[[], str | None] | None] = ContextVar("SUBSCRIPTION_STOP", default=None)
# A host sets this too: called once the subscription has fixed where it starts (its `after`, or
# the end of the log). The host reads the stream's next request only then, so an event that a
# later request of the same stream causes is streamed (EVENT-008: every event appended after the
# request was read); the host also releases its reader if the subscription fails before.
SUBSCRIPTION_POSITIONED: ContextVar[Callable[[], None] | None] = ContextVar(
    "SUBSCRIPTION_POSITIONED", default=None
)
STOP_CHECK_SECONDS = 0.25


def _say_skipped(skipped: list[str], said: int) -> int:
    """Says on stderr, once each, what the log skipped as not following its predecessor
    (EVENT-022): never a silent gap. Returns how many are said. (The texts hold only swamp's
    paths and checked cursors, hex digits and digits: nothing a terminal would act on.)"""
    import sys

    for text in skipped[said:]:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(
                f"swamp: warning: the event log holds what swamp did not append there, skipped: {text}; "
                "someone who can write the log's folder put it there (the run records are the truth: "
                "swamp workflow history)\n"
            )
            sys.stderr.flush()
    return len(skipped)


def subscribe(
    app: App,
    *,
    after: str | None = None,
    kinds: list[str] | None = None,
    runs: list[str] | None = None,
    timeout: float | None = None,
    emit: Emit | None = None,
) -> dict[str, Any]:
    """Stream the events after `after` (None: from the end of the log) that pass the filters,
    until `timeout` seconds pass (0: what is there now) or the host stops it."""
    send: Emit = emit or (lambda event: None)
    stop = SUBSCRIPTION_STOP.get()
    wanted_kinds = frozenset(kinds) if kinds else None
    wanted_runs = frozenset(runs) if runs else None
    log = app.store.events()
    deadline = None if timeout is None else time.monotonic() + timeout
    # Armed before the first read, so an event appended between that read and the wait is seen.
    with log.changes() as changes:
        if after is None:
            cursor = log.start()
        else:
            log.check(after)
            cursor = after
        positioned = SUBSCRIPTION_POSITIONED.get()
        if positioned is not None:
            positioned()
        changed = True  # read the log first; afterwards only when its folder changed
        said = 0
        while True:
            more = False
            if changed:
                batch = log.read(cursor, BATCH)
                said = _say_skipped(log.skipped, said)
                for event in batch:
                    cursor = event["cursor"]
                    if wanted_kinds is not None and event.get("event") not in wanted_kinds:
                        continue
                    if wanted_runs is not None and event.get("runId") not in wanted_runs:
                        continue
                    send(event)
                more = len(batch) == BATCH
            if more and (stop is None or stop() is None):
                continue  # more to read now
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return {"cursor": cursor, "outcome": "timeout"}
            reason = stop() if stop is not None else None
            if reason is not None:
                return {"cursor": cursor, "outcome": reason}
            wait = left
            if stop is not None:
                wait = STOP_CHECK_SECONDS if wait is None else min(wait, STOP_CHECK_SECONDS)
            changed = more or changes.wait(wait)
