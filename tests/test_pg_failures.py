"""PostgreSQL failures the conformance runner cannot stage: a role without rights, a trigger that
refuses the audit insert, a database stopped mid-run, a schema whose name is long in bytes, a
target whose indexed columns differ from its records. Each is storage_error naming what to do
(STORE-009, STORE-037), or a check that notices (STORE-040), on both drivers.

Like test_pg_store.py, these need SWAMP_TEST_PG (a cluster's address) and are skipped without it;
each test works in a schema (and, for roles, a role) of its own, dropped afterwards. The stopped
database is a cluster of the test's own (`scripts/pg start`), so the shared one keeps running.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, job, make_repo, sh

ADDRESS = os.environ.get("SWAMP_TEST_PG", "")
pytestmark = pytest.mark.skipif(
    not ADDRESS.startswith(("postgresql://", "postgres://")),
    reason="SWAMP_TEST_PG (a PostgreSQL address, e.g. what `scripts/pg start DIR` prints) is not set",
)
ROOT = Path(__file__).resolve().parent.parent
WAIT = {"type": "wait_for_signal", "timeout": 3600, "schema": {"type": "integer"}}
DRIVERS = [pytest.param({}, id="lean"), pytest.param({"SWAMP_PG_DRIVER": "psycopg"}, id="psycopg")]


def address_for(schema: str, base: str = ADDRESS, **params: str) -> str:
    from urllib.parse import quote

    extra = "".join(f"&{k}={quote(v, safe='')}" for k, v in params.items())
    return f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{quote(schema, safe='')}{extra}"


@pytest.fixture
def owner() -> Iterator[Any]:
    """A psycopg connection as the cluster's owner (autocommit) that drops, on leaving, the
    schemas and roles the test made."""
    import psycopg

    conn = psycopg.connect(ADDRESS, autocommit=True)
    made: dict[str, list[str]] = {"schemas": [], "roles": []}
    conn.made = made  # type: ignore[attr-defined]
    yield conn
    for schema in made["schemas"]:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    for role in made["roles"]:
        conn.execute(f'DROP OWNED BY "{role}"')
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')
    conn.close()


def schema_of(owner: Any, name: str | None = None) -> str:
    schema = name or f"f_{uuid.uuid4().hex[:12]}"
    owner.made["schemas"].append(schema)
    return schema


def role_of(owner: Any) -> str:
    role = f"r_{uuid.uuid4().hex[:12]}"
    owner.execute(f'CREATE ROLE "{role}" LOGIN')
    owner.made["roles"].append(role)
    return role


def pg_repo(tmp_path: Path, url: str, env: dict[str, str]) -> Repo:
    os.environ["SWAMP_STORE_URL"] = url  # make_repo's subprocess inherits it
    try:
        repo = make_repo(tmp_path / "repo")
    finally:
        del os.environ["SWAMP_STORE_URL"]
    return repo


def swamp(repo: Repo, url: str, env: dict[str, str], *args: str) -> Any:
    return repo.swamp(*args, env={"SWAMP_STORE_URL": url, **env})


def error_of(result: Any) -> dict[str, Any]:
    assert result.json is not None, result
    assert "Traceback" not in result.err, result
    return dict(result.json["error"])


# -- a role without rights (STORE-037) --------------------------------------------------------------


@pytest.mark.parametrize("env", DRIVERS)
def test_a_role_without_rights_is_told_which_right_is_missing(
    tmp_path: Path, owner: Any, env: dict[str, str]
) -> None:
    schema = schema_of(owner)
    repo = pg_repo(tmp_path, address_for(schema), env)  # repo init migrates it, as the owner
    repo.write_workflow("review", [job("main", {"name": "w", "task": WAIT})])
    role = role_of(owner)
    as_role = address_for(schema, user=role)

    # no USAGE on the schema: not "no swamp tables yet", but what to grant
    status = swamp(repo, as_role, env, "store", "status", "--json")
    error = error_of(status)
    assert status.code == 1 and error["code"] == "storage_error", status
    assert f"USAGE on schema {schema}" in error["message"], error
    assert f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"' in error["message"], error
    assert error["details"]["sqlstate"] == "42501"
    migrate = swamp(repo, as_role, env, "store", "migrate", "--json")
    assert migrate.code == 1 and error_of(migrate)["code"] == "storage_error", migrate

    # USAGE only: the tables' SELECT is what is missing
    owner.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
    error = error_of(swamp(repo, as_role, env, "store", "status", "--json"))
    assert error["code"] == "storage_error", error
    assert "SELECT, INSERT, UPDATE, DELETE on table swamp_meta" in error["message"], error

    # reading is allowed, writing is not: a run is refused naming INSERT
    owner.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    status = swamp(repo, as_role, env, "store", "status", "--json")
    assert status.code == 0 and status.json["current"] is True, status
    run = swamp(repo, as_role, env, "workflow", "run", "review", "--json")
    error = error_of(run)
    assert run.code == 1 and error["code"] == "storage_error", run
    assert "INSERT, UPDATE, DELETE on table runs" in error["message"], error

    # a schema that does not exist, and no CREATE on the database to make it
    fresh = address_for(schema_of(owner), user=role)
    migrate = swamp(repo, fresh, env, "store", "migrate", "--json")
    error = error_of(migrate)
    assert migrate.code == 1 and error["code"] == "storage_error", migrate
    assert "CREATE on database" in error["message"] and "GRANT CREATE ON DATABASE" in error["message"], error


# -- a write the database refuses inside the transaction (STORE-009) ---------------------------------


@pytest.mark.parametrize("env", DRIVERS)
def test_an_audit_insert_refused_by_a_trigger_is_storage_error_and_writes_nothing(
    tmp_path: Path, owner: Any, env: dict[str, str]
) -> None:
    schema = schema_of(owner)
    url = address_for(schema)
    repo = pg_repo(tmp_path, url, env)
    repo.write_workflow("review", [job("main", {"name": "w", "task": WAIT})])
    run = swamp(repo, url, env, "workflow", "run", "review", "--json")
    assert run.code == 0, run
    wait_id = run.json["waits"][0]["waitId"] if "waits" in run.json else None
    if wait_id is None:
        waits = swamp(repo, url, env, "workflow", "waits", "--json")
        wait_id = waits.json["waits"][0]["waitId"]
    before = owner.execute(f'SELECT record FROM "{schema}".runs').fetchall()
    owner.execute(
        f'CREATE FUNCTION "{schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS '
        "$$ BEGIN RAISE EXCEPTION 'the audit disk is full (a test trigger)'; END $$"
    )
    owner.execute(
        f'CREATE TRIGGER refuse BEFORE INSERT ON "{schema}".audit FOR EACH ROW '
        f'EXECUTE FUNCTION "{schema}".refuse()'
    )
    signal = swamp(repo, url, env, "workflow", "signal", wait_id, "--payload", "1", "--json")
    error = error_of(signal)
    assert signal.code == 1 and error["code"] == "storage_error", signal
    assert "the audit disk is full" in error["message"] and "retry" in error["message"], error
    assert error["details"]["sqlstate"] == "P0001"
    assert owner.execute(f'SELECT record FROM "{schema}".runs').fetchall() == before  # rolled back


# -- a schema name of 28 x ü: 56 bytes, a channel name over 63 (STORE-038) --------------------------


@pytest.mark.parametrize("env", DRIVERS)
def test_a_schema_named_with_multibyte_characters_saves_and_wakes(
    tmp_path: Path, owner: Any, env: dict[str, str]
) -> None:
    schema = schema_of(owner, "ü" * 28)
    url = address_for(schema)
    repo = pg_repo(tmp_path, url, env)
    repo.write_workflow("review", [job("main", {"name": "w", "task": WAIT})])
    run = swamp(repo, url, env, "workflow", "run", "review", "--json")
    assert run.code == 0, run
    waits = swamp(repo, url, env, "workflow", "waits", "--json")
    assert waits.code == 0, waits
    wait_id = waits.json["waits"][0]["waitId"]
    signal = swamp(repo, url, env, "workflow", "signal", wait_id, "--payload", "1", "--json")
    assert signal.code == 0, signal
    # a listener on the channel is woken by the save (serve's subscribers, workflow watch)
    code = (
        "import sys; from swamp.store.pg.store import shared_database as s; from swamp.store.pg.events "
        "import PgEventLog as E; db = s(sys.argv[1]); l = E(db).changes(); l.__enter__(); "
        "print(db.channel('events')); db.execute('SELECT pg_notify(%s, %s)', (db.channel('events'), 'x')); "
        "print(l.wait(30))"
    )
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", code, url], capture_output=True, text=True, timeout=60
    )
    channel, woken = done.stdout.split()
    assert len(channel.encode()) <= 63 and woken == "True", done


# -- the database stopped mid-run (STORE-009) ----------------------------------------------------


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[tuple[str, Path]]:
    """A cluster of this module's own, which a test may stop (`scripts/pg`)."""
    folder = Path(tempfile.mkdtemp(prefix="swamp-pg-stop-", dir="/tmp"))
    folder.chmod(0o755)
    done = subprocess.run(
        [str(ROOT / "scripts" / "pg"), "start", str(folder)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    yield done.stdout.strip(), folder
    subprocess.run([str(ROOT / "scripts" / "pg"), "stop", str(folder)], capture_output=True, timeout=300)
    shutil.rmtree(folder, ignore_errors=True)


def stop_command(folder: Path) -> str:
    bindir = subprocess.run(
        [str(ROOT / "scripts" / "pg"), "bin"], capture_output=True, text=True, check=True
    ).stdout.strip()
    stop = f"{bindir}/pg_ctl -D {folder}/data -m immediate -w stop"
    return f"runuser -u postgres -- {stop}" if os.getuid() == 0 else stop


@pytest.mark.parametrize("env", DRIVERS)
def test_the_database_stopped_mid_run_is_storage_error(
    tmp_path: Path, own_cluster: tuple[str, Path], env: dict[str, str]
) -> None:
    base, folder = own_cluster
    subprocess.run([str(ROOT / "scripts" / "pg"), "start", str(folder)], capture_output=True, timeout=300)
    url = address_for(f"s_{uuid.uuid4().hex[:8]}", base)
    repo = pg_repo(tmp_path, url, env)
    repo.write_workflow("stop", [job("main", sh("halt", stop_command(folder)), sh("after", "true"))])
    run = swamp(repo, url, env, "workflow", "run", "stop", "--json")
    error = error_of(run)
    assert run.code == 1 and error["code"] == "storage_error", run
    assert "check that the database is running" in error["message"], error
    log = swamp(repo, url, env, "workflow", "history")
    assert log.code == 1 and "storage_error" in log.err and "Traceback" not in log.err, log


# -- store copy notices indexed columns that differ from the records (STORE-040) ----------------------


def test_store_copy_notices_an_index_column_that_differs_from_its_record(tmp_path: Path, owner: Any) -> None:
    repo = make_repo(tmp_path / "repo")  # the file store
    repo.write_workflow("review", [job("main", {"name": "w", "task": WAIT})])
    assert repo.swamp("workflow", "run", "review", "--json").code == 0
    schema = schema_of(owner)
    url = address_for(schema)
    migrated = repo.swamp("store", "migrate", "--json", env={"SWAMP_STORE_URL": url})
    assert migrated.code == 0, migrated
    owner.execute(
        f'CREATE FUNCTION "{schema}".rename() RETURNS trigger LANGUAGE plpgsql AS '
        "$$ BEGIN NEW.workflow_name := NEW.workflow_name || '-cut'; RETURN NEW; END $$"
    )
    owner.execute(
        f'CREATE TRIGGER rename BEFORE INSERT ON "{schema}".runs FOR EACH ROW '
        f'EXECUTE FUNCTION "{schema}".rename()'
    )
    copied = repo.swamp("store", "copy", "--from", "file", "--to", url, "--json")
    assert copied.code == 1, copied
    assert json.loads(copied.out)["error"]["code"] == "store_copy_mismatch", copied


# -- a NUL in a workflow name: refused, never cut by libpq (STORE-039) -----------------------------


@pytest.mark.parametrize("env", DRIVERS)
def test_a_nul_in_a_workflow_name_is_refused_not_cut(tmp_path: Path, owner: Any, env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")  # the file store, whose records are JSON (a NUL is \u0000)
    repo.write_workflow("review", [job("main", {"name": "w", "task": WAIT})])
    assert repo.swamp("workflow", "run", "review", "--json").code == 0
    (record,) = repo.run_files()
    doc = json.loads(record.read_text(encoding="utf-8"))
    doc["workflowName"] = "review\u0000-planted"
    record.write_text(json.dumps(doc), encoding="utf-8")
    url = address_for(schema_of(owner))
    assert repo.swamp("store", "migrate", env={"SWAMP_STORE_URL": url, **env}).code == 0
    copied = repo.swamp("store", "copy", "--from", "file", "--to", url, "--json", env=env)
    error = error_of(copied)
    assert copied.code == 1 and error["code"] == "storage_error", copied
    assert "workflow name holds a NUL character" in error["message"], error
