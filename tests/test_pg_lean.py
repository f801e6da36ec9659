"""lean.py's prepared statements: a statement with parameters is prepared on its connection once
and run by name after; one that could not be prepared is not taken for prepared; a connection that
lost its prepared statements (DEALLOCATE, a pooler) finds its feet again; SWAMP_PG_PREPARED=off
prepares nothing. Needs SWAMP_TEST_PG, as test_pg_store.py."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from swamp.store.pg import lean

ADDRESS = os.environ.get("SWAMP_TEST_PG", "")
pytestmark = pytest.mark.skipif(
    not ADDRESS.startswith(("postgresql://", "postgres://")),
    reason="SWAMP_TEST_PG (a PostgreSQL address, e.g. what `scripts/pg start DIR` prints) is not set",
)


@pytest.fixture
def conn() -> Iterator[lean.Connection]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    connection = lean.connect(f"{ADDRESS}{'&' if '?' in ADDRESS else '?'}options=-csearch_path%3D{schema}")
    connection.execute(f"CREATE SCHEMA {schema}")
    yield connection
    connection.execute(f"DROP SCHEMA {schema} CASCADE")
    connection.close()


def prepared(conn: lean.Connection) -> list[str]:
    rows = conn.execute("SELECT statement FROM pg_prepared_statements ORDER BY prepare_time").fetchall()
    return [str(statement) for (statement,) in rows]


def test_a_statement_with_parameters_is_prepared_once_and_run_by_name(conn: lean.Connection) -> None:
    conn.execute("CREATE TABLE t (k int PRIMARY KEY, v text)")
    for k in range(3):
        conn.execute("INSERT INTO t (k, v) VALUES (%s, %s)", (k, f"v{k}"))
    with conn.transaction():
        conn.send("UPDATE t SET v = %s WHERE k = %s", ("w", 1))
        conn.send("INSERT INTO t (k, v) VALUES (%s, %s)", (9, "queued"))
    assert conn.execute("SELECT v FROM t WHERE k = %s", (1,)).fetchall() == [("w",)]
    assert prepared(conn) == [
        "INSERT INTO t (k, v) VALUES ($1, $2)",
        "UPDATE t SET v = $1 WHERE k = $2",
        "SELECT v FROM t WHERE k = $1",
    ]
    assert conn.execute("SELECT count(*) FROM t").fetchall() == [(4,)]


def test_a_statement_that_could_not_be_prepared_is_prepared_when_it_can_be(conn: lean.Connection) -> None:
    with pytest.raises(lean.Error) as failed, conn.transaction():
        conn.send("SELECT 1 WHERE %s::int > 0", (1,))
        conn.send("INSERT INTO later (k) VALUES (%s)", (1,))  # no such table yet: its prepare fails
        conn.send("SELECT %s::int", (2,))  # skipped: its pipeline was aborted
    assert failed.value.sqlstate == "42P01"
    assert failed.value.statement == "INSERT INTO later (k) VALUES ($1)"
    assert prepared(conn) == ["SELECT 1 WHERE $1::int > 0"]
    conn.execute("CREATE TABLE later (k int)")
    with conn.transaction():
        conn.send("INSERT INTO later (k) VALUES (%s)", (1,))
        conn.send("SELECT %s::int", (2,))
    assert conn.execute("SELECT k FROM later WHERE k = %s", (1,)).fetchall() == [(1,)]
    assert len(prepared(conn)) == 4


def test_a_connection_whose_prepared_statements_went_away_prepares_them_again(conn: lean.Connection) -> None:
    assert conn.execute("SELECT %s::int + 1", (1,)).fetchall() == [(2,)]
    conn.execute("DEALLOCATE ALL")  # what a pooler or another client of the session may do
    with pytest.raises(lean.Error) as lost:
        conn.execute("SELECT %s::int + 1", (1,))
    assert lost.value.sqlstate == "26000"
    assert conn.execute("SELECT %s::int + 1", (2,)).fetchall() == [(3,)]
    assert prepared(conn) == ["SELECT $1::int + 1"]


def test_a_connection_prepares_at_most_its_limit_and_sends_the_rest_unnamed(conn: lean.Connection) -> None:
    for i in range(lean._PREPARED_LIMIT + 5):
        assert conn.execute(f"SELECT %s::int + {i}", (1,)).fetchall() == [(1 + i,)]
    assert len(prepared(conn)) == lean._PREPARED_LIMIT


def test_prepared_statements_can_be_turned_off(
    monkeypatch: pytest.MonkeyPatch, conn: lean.Connection
) -> None:
    monkeypatch.setenv("SWAMP_PG_PREPARED", "off")
    other = lean.connect(ADDRESS)
    try:
        with other.transaction():
            other.send("SELECT %s::int", (1,))
        assert other.execute("SELECT %s::int", (2,)).fetchall() == [(2,)]
        assert prepared(other) == []
    finally:
        other.close()
