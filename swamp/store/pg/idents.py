"""SQL identifiers quoted for PostgreSQL (a schema, role or channel name from the address).

A module of its own so that the connection and the rights check can both use it without
importing each other.
"""

from __future__ import annotations


def quote_ident(name: str) -> str:
    """A SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'
