"""Held early signals in PostgreSQL: one `held` row per wait, at most one per wait ID.

Why a row: the rules are the file store's (store/held.py): a signal is kept durably without the
run's claim, at most one per wait, removed by exactly one caller. Here the primary key does it:
hold = INSERT ... ON CONFLICT DO NOTHING, discard = DELETE ... RETURNING.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ...domain.held import HeldSignal
from ...domain.records import RecordError, read_record, write_record
from .connection import Database


class PgHeldStore:
    def __init__(self, db: Database):
        self.db = db

    def hold(self, held: HeldSignal) -> bool:
        """Keep `held`; False (nothing written) when its wait already holds one."""
        record = {**write_record(held), "payload": held.payload}
        body = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        rows = self.db.execute(
            "INSERT INTO held (wait_id, run_id, body) VALUES (%s, %s, %s) "
            "ON CONFLICT (wait_id) DO NOTHING RETURNING wait_id",
            (held.waitId, held.runId, body),
        )
        return bool(rows)

    def read(self, wait_id: str) -> HeldSignal | None:
        rows = self.db.execute("SELECT body FROM held WHERE wait_id = %s", (wait_id,))
        if not rows:
            return None
        try:
            return read_record(HeldSignal, json.loads(rows[0][0]), "held signal")
        except (ValueError, RecordError):
            return None

    def exists(self, wait_id: str) -> bool:
        return bool(self.db.execute("SELECT 1 FROM held WHERE wait_id = %s", (wait_id,)))

    def exists_with_next_read(self, wait_id: str) -> Callable[[], bool]:
        found: list[bool] = []
        self.db.send(
            "SELECT 1 FROM held WHERE wait_id = %s", (wait_id,), lambda rows: found.append(bool(rows))
        )

        def answer() -> bool:
            if not found:  # no read was made since: send it now
                self.db.flush()
            return found[0]

        return answer

    def discard(self, wait_id: str) -> bool:
        """Remove it; True iff this call removed it (so exactly one caller did)."""
        return bool(self.db.execute("DELETE FROM held WHERE wait_id = %s RETURNING wait_id", (wait_id,)))
