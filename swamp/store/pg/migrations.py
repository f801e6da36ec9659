"""The PostgreSQL store's schema, as numbered migrations (`swamp store migrate`).

Each migration is applied once, in order, in one transaction that also records the new version in
`swamp_meta`, under a transaction-scoped advisory lock so two hosts never migrate at once (the
second waits, then finds nothing left to do). A command refuses a database whose version is not
this swamp's (older: migrate it; newer: upgrade swamp), with `store_schema_mismatch`.
"""

from __future__ import annotations

import os
from typing import Any

from ...domain.errors import StoreSchemaMismatch
from .connection import Database
from .idents import quote_ident

MIGRATE_LOCK = 0x5357414D50  # "SWAMP": the advisory lock key migrations hold

# Tables (unqualified: they live in the connection's first search_path schema):
#   swamp_meta  key/value: schema_version, events_epoch (8 hex digits), events_base and
#               events_xid0 (how events are numbered, events.py), events_kept_after (events
#               after this seq are all kept; until version 2: events_seq, the last seq)
#   runs        one row per run: the record's JSON text, and the columns the indexes need
#               (next_deadline_iso: the earliest open deadline as the record writes it)
#   waits       the wait index: wait ID -> the run that holds (or held, or reserved) it
#   audit       the audit trail, one row per entry, in insertion order per run
#   held        signals held for waits that have not opened or whose run was busy
#   events      published changes, numbered from their transaction's id (events.py)
MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE swamp_meta (key text PRIMARY KEY, value text NOT NULL);
        CREATE TABLE runs (
            run_id text PRIMARY KEY,
            workflow_id text NOT NULL,
            workflow_name text NOT NULL,
            status text NOT NULL,
            inputs_sha256 text NOT NULL,
            next_deadline timestamptz,
            next_deadline_iso text,
            created_at text NOT NULL,
            record text NOT NULL
        );
        CREATE INDEX runs_supersede ON runs (workflow_id, inputs_sha256, status);
        CREATE INDEX runs_active ON runs (workflow_id, status)
            WHERE status IN ('pending', 'running', 'suspended');
        CREATE INDEX runs_history ON runs (workflow_id, created_at DESC, run_id DESC);
        CREATE INDEX runs_recent ON runs (created_at DESC, run_id DESC);
        CREATE INDEX runs_prefix ON runs (run_id text_pattern_ops);
        CREATE INDEX runs_name ON runs (workflow_name);
        CREATE TABLE waits (
            wait_id text PRIMARY KEY,
            run_id text NOT NULL,
            workflow_id text NOT NULL
        );
        CREATE INDEX waits_prefix ON waits (wait_id text_pattern_ops);
        CREATE INDEX waits_run ON waits (run_id);
        CREATE TABLE audit (
            id bigserial PRIMARY KEY,
            run_id text NOT NULL,
            entry text NOT NULL
        );
        CREATE INDEX audit_run ON audit (run_id, id);
        CREATE TABLE held (
            wait_id text PRIMARY KEY,
            run_id text NOT NULL,
            body text NOT NULL
        );
        CREATE TABLE events (
            seq bigint PRIMARY KEY,
            run_id text,
            kind text NOT NULL,
            body text NOT NULL,
            at timestamptz NOT NULL DEFAULT now()
        );
        """,
    ),
    (
        2,
        # Event numbers from transaction ids (events.py): no counter row that every append locks.
        # Numbering goes on above every seq given before, so a cursor a client holds stays valid.
        """
        INSERT INTO swamp_meta (key, value) VALUES
            ('events_base', (GREATEST(
                COALESCE((SELECT max(seq) FROM events), 0),
                COALESCE((SELECT value::bigint FROM swamp_meta WHERE key = 'events_seq'), 0)) + 1)::text),
            ('events_xid0', pg_current_xact_id()::text),
            ('events_kept_after', (COALESCE((SELECT min(seq) FROM events) - 1,
                (SELECT value::bigint FROM swamp_meta WHERE key = 'events_seq'), 0))::text)
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
        DELETE FROM swamp_meta WHERE key = 'events_seq'
        """,
    ),
]
CURRENT = MIGRATIONS[-1][0]


def schema_version(db: Database) -> int:
    """The database's schema version; 0 when swamp's tables are not there. One round trip when
    they are (the common case: a command's first statement also tells the schema's name)."""
    known = db.known_version()
    if known is not None:
        return known
    rows = db.execute(
        "SELECT CASE WHEN current_schema() IS NULL THEN false "
        "ELSE to_regclass(format('%I.swamp_meta', current_schema())) IS NOT NULL END"
    )
    if not rows[0][0]:
        from .rights import check_usage

        check_usage(db)  # an unreadable schema is not an empty one
        return 0
    found = db.execute("SELECT value FROM swamp_meta WHERE key = 'schema_version'")
    return int(found[0][0]) if found else 0


def check_version(db: Database) -> None:
    """Refuse a database whose schema is not this swamp's (store_schema_mismatch)."""
    version = schema_version(db)
    if version == CURRENT:
        return
    where = f"{db.shown} (schema {db.schema})"
    if version == 0:
        raise StoreSchemaMismatch(
            f"The PostgreSQL store at {where} has no swamp tables yet; create them with: swamp store migrate",
            {"store": db.shown, "schemaVersion": 0, "expected": CURRENT},
        )
    if version < CURRENT:
        raise StoreSchemaMismatch(
            f"The PostgreSQL store at {where} is at schema version {version}, older than this swamp's "
            f"{CURRENT}; upgrade it with: swamp store migrate",
            {"store": db.shown, "schemaVersion": version, "expected": CURRENT},
        )
    raise StoreSchemaMismatch(
        f"The PostgreSQL store at {where} is at schema version {version}, newer than this swamp's "
        f"{CURRENT}; upgrade swamp on this host (another host migrated the database)",
        {"store": db.shown, "schemaVersion": version, "expected": CURRENT},
    )


def migrate(db: Database) -> dict[str, Any]:
    """Apply what is missing, under the migration lock; {"from": v, "to": CURRENT, "applied": [...]}.
    A database newer than this swamp is refused, never touched."""
    schema = db.schema
    with db.transaction(doing="migrate") as conn:
        conn.execute("SET LOCAL client_min_messages TO warning")  # no NOTICE on stderr
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchall():
            conn.execute(f"CREATE SCHEMA {quote_ident(schema)}")  # needs CREATE on the database
        conn.execute(f"SET LOCAL search_path TO {quote_ident(schema)}")
        before = schema_version(db)
        if before > CURRENT:
            check_version(db)  # raises: newer than this swamp
        applied = []
        for version, statements in MIGRATIONS:
            if version <= before:
                continue
            for statement in statements.split(";"):  # one statement per call (libpq's PQexecParams)
                if statement.strip():
                    conn.execute(statement)
            applied.append(version)
        if applied:
            epoch = os.urandom(4).hex()
            conn.execute(
                "INSERT INTO swamp_meta (key, value) VALUES ('schema_version', %s), ('events_epoch', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value "
                "WHERE swamp_meta.key = 'schema_version'",
                (str(CURRENT), epoch),
            )
    return {"from": before, "to": CURRENT, "applied": applied, "schema": schema}
