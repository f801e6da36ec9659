"""A store address's password found by libpq's own parser and scrubbed from any text (STORE-036).
No database needed: libpq only parses. The CLI side is conformance/scenarios/store/
store-password-never-shown.yaml and scripts/attacks_pg.py."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg")
from swamp.store.pg.conninfo import Conninfo  # noqa: E402

SECRET = "S3CRETpw"


@pytest.mark.parametrize(
    "address",
    [
        f"postgresql://alice:{SECRET}@db.example/swamp",
        "postgresql://alice:S3%43RETpw@db.example/swamp",
        f"postgresql://alice@db.example/swamp?password={SECRET}",
        f"postgresql://alice@db.example/swamp?passwor%64={SECRET}",
        "postgresql://alice@db.example/swamp?%70assword=S3%43RETpw&port=5432",
        f"service=swamp\tpassword={SECRET}",
    ],
)
def test_libpq_reads_a_password_and_no_spelling_of_it_survives_a_scrub(address: str) -> None:
    info = Conninfo(address)
    assert info.readable and info.has_password
    quoted = f'libpq said: "{address}" and "{SECRET}"'  # the address as written, the value decoded
    assert SECRET not in info.scrub(quoted) and "S3%43RETpw" not in info.scrub(quoted)
    assert SECRET not in info.shown and "S3%43RETpw" not in info.shown


@pytest.mark.parametrize(
    "address",
    [
        f"postgresql://alice:{SECRET}%ZZ@localhost/db",
        f"postgresql://alice:{SECRET}@[::1/db",
        f"postgresql://alice@localhost/db?passwor%64={SECRET}%ZZ",
    ],
)
def test_an_address_libpq_cannot_read_hides_its_user_information_and_query_values(address: str) -> None:
    info = Conninfo(address)
    assert not info.readable
    assert SECRET not in info.shown and SECRET not in info.problem
    assert SECRET not in info.scrub(f"invalid token in {address}")
    assert info.shown.startswith("postgresql://***@") or "?passwor%64=***" in info.shown


def test_an_address_without_a_password_is_shown_as_it_is() -> None:
    address = "postgresql:///swamp?host=/run/postgresql&options=-csearch_path%3Dteam"
    info = Conninfo(address)
    assert info.readable and not info.has_password and info.shown == address
