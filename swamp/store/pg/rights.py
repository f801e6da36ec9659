"""Which rights the connected role lacks in the store's schema, said after "permission denied".

Why: PostgreSQL says `permission denied for table runs`, not which right (SELECT? INSERT?) nor
what else is missing; an operator fixing grants one failure at a time is slow. So after a refusal
(SQLSTATE 42501) swamp asks the catalog (pg_namespace and pg_class are readable by every role)
what the role has, and names every right swamp needs that it lacks (STORE-037): USAGE on the
schema (CREATE too when migrating, or CREATE on the database when the schema does not exist
yet), SELECT, INSERT, UPDATE, DELETE on swamp's tables and USAGE on the audit sequence, with the
GRANT statements that give them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .idents import quote_ident

if TYPE_CHECKING:
    from .connection import Database

TABLE_RIGHTS = ("SELECT", "INSERT", "UPDATE", "DELETE")
_RIGHTS = """
SELECT n.oid IS NOT NULL,
       has_database_privilege(current_database(), 'CREATE'),
       n.oid IS NOT NULL AND has_schema_privilege(n.oid, 'USAGE'),
       n.oid IS NOT NULL AND has_schema_privilege(n.oid, 'CREATE'),
       current_user, current_database()
FROM (SELECT %s::text AS name) s LEFT JOIN pg_namespace n ON n.nspname = s.name
"""
_OBJECTS = """
SELECT c.relname, c.relkind,
       has_table_privilege(c.oid, 'SELECT'), has_table_privilege(c.oid, 'INSERT'),
       has_table_privilege(c.oid, 'UPDATE'), has_table_privilege(c.oid, 'DELETE'),
       c.relkind = 'S' AND has_sequence_privilege(c.oid, 'USAGE')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s
  AND c.relname IN ('swamp_meta', 'runs', 'waits', 'audit', 'held', 'events', 'audit_id_seq')
ORDER BY c.relname
"""


@dataclass
class Rights:
    role: str = ""
    missing: list[str] = field(default_factory=list)  # "USAGE on schema s", "SELECT on table runs"
    grants: list[str] = field(default_factory=list)  # the statements that give them


def missing_rights(db: Database, *, migrating: bool = False) -> Rights:
    """What the connected role lacks (nothing found: unknown, for instance when the catalog
    cannot be read now; the refusal is said either way)."""
    found = Rights()
    with contextlib.suppress(Exception), db.fresh() as conn:  # the thread's may be mid-transaction
        schema = db.schema
        exists, create_db, usage, create, role, database = conn.execute(_RIGHTS, (schema,)).fetchone()
        found.role = role
        to, name = f" TO {quote_ident(role)}", quote_ident(schema)
        if not exists:
            if migrating and not create_db:
                found.missing.append(f"CREATE on database {database} (to create schema {schema})")
                found.grants.append(f"GRANT CREATE ON DATABASE {quote_ident(database)}{to}")
            return found
        if not usage:
            found.missing.append(f"USAGE on schema {schema}")
            found.grants.append(f"GRANT USAGE ON SCHEMA {name}{to}")
        if migrating and not create:
            found.missing.append(f"CREATE on schema {schema}")
            found.grants.append(f"GRANT CREATE ON SCHEMA {name}{to}")
        tables = sequences = False
        for relname, kind, *rights, sequence_usage in conn.execute(_OBJECTS, (schema,)).fetchall():
            if kind == "S":
                if not sequence_usage:
                    found.missing.append(f"USAGE on sequence {relname}")
                    sequences = True
                continue
            lacking = [right for right, has in zip(TABLE_RIGHTS, rights, strict=True) if not has]
            if lacking:
                found.missing.append(f"{', '.join(lacking)} on table {relname}")
                tables = True
        if tables:
            found.grants.append(f"GRANT {', '.join(TABLE_RIGHTS)} ON ALL TABLES IN SCHEMA {name}{to}")
        if sequences:
            found.grants.append(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {name}{to}")
    return found


def check_usage(db: Database) -> None:
    """Refuse (storage_error, STORE-037) a schema that exists but whose USAGE the role lacks: it
    would look empty ("no swamp tables yet"), and migrating it would fail."""
    from . import lean

    rows = db.execute(
        "SELECT NOT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = %s", (db.schema,)
    )
    if rows and rows[0][0]:
        with db.errors("read from"):
            denied = lean.DatabaseError(f"permission denied for schema {db.schema}")
            denied.sqlstate = "42501"
            raise denied
