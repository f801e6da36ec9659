"""The PostgreSQL store against a real cluster: transactions, the claim, held signals, events.

Each test gets a schema of its own in the cluster SWAMP_TEST_PG names (scripts/test sets it to its
throwaway cluster; a developer sets it to the dev cluster's address); without it they are skipped.
Processes are real subprocesses: a claim, a kill -9 and a race are about processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, job, make_repo, run_swamp

ADDRESS = os.environ.get("SWAMP_TEST_PG", "")
pytestmark = pytest.mark.skipif(
    not ADDRESS.startswith(("postgresql://", "postgres://")),
    reason="SWAMP_TEST_PG (a PostgreSQL address, e.g. what `scripts/pg start DIR` prints) is not set",
)
WAIT = {"type": "wait_for_signal", "timeout": 3600, "schema": {"type": "integer"}}
BOUND = 60.0  # seconds: every poll below gives up (and fails) past this


def address_for(schema: str) -> str:
    return f"{ADDRESS}{'&' if '?' in ADDRESS else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture
def store_url(monkeypatch: pytest.MonkeyPatch) -> str:
    url = address_for(f"t_{uuid.uuid4().hex[:12]}")
    monkeypatch.setenv("SWAMP_STORE_URL", url)  # the subprocesses inherit it (clean_env)
    return url


@pytest.fixture
def pg_repo(store_url: str, tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def db(store_url: str, pg_repo: Repo) -> Iterator[Any]:
    """A psycopg connection of the test's own to the repository's schema (autocommit)."""
    import psycopg

    conn = psycopg.connect(store_url, autocommit=True)
    yield conn
    conn.close()


def waits_workflow(repo: Repo, name: str, count: int) -> str:
    steps = [{"name": f"w{i:02d}", "task": WAIT} for i in range(count)]
    return repo.write_workflow(name, [job("main", *steps)])


def until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + BOUND
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


# -- repo init, status, versions --------------------------------------------------------------------


def test_repo_init_migrates_an_empty_schema_and_status_says_postgresql(pg_repo: Repo, store_url: str) -> None:
    status = pg_repo.swamp("store", "status", "--json")
    assert status.code == 0, status
    assert status.json["kind"] == "postgresql" and status.json["current"] is True
    assert status.json["schemaVersion"] == status.json["expected"] >= 1
    again = run_swamp("repo", "init", "second", "--json", cwd=pg_repo.root.parent)
    assert again.code == 0 and "storeMigrated" not in again.json, again


def test_schema_newer_than_swamp_is_refused_and_not_touched(pg_repo: Repo, db: Any) -> None:
    db.execute("UPDATE swamp_meta SET value = '99' WHERE key = 'schema_version'")
    for args in (("workflow", "waits", "--json"), ("store", "migrate", "--json")):
        refused = pg_repo.swamp(*args)
        assert refused.code == 1, refused
        assert refused.json["error"]["code"] == "store_schema_mismatch"
        assert "upgrade swamp" in refused.json["error"]["message"]
    status = pg_repo.swamp("store", "status", "--json")
    assert status.code == 0 and status.json["schemaVersion"] == 99 and status.json["current"] is False
    assert db.execute("SELECT value FROM swamp_meta WHERE key = 'schema_version'").fetchone() == ("99",)


def test_without_psycopg_the_store_is_unavailable_naming_what_to_install(pg_repo: Repo) -> None:
    hide = "import sys; sys.modules['psycopg'] = None; from swamp.cli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", hide, "workflow", "waits", "--json"],
        cwd=pg_repo.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "store_unavailable"
    assert "pip install 'swamp[postgres]'" in error["message"]
    assert "Traceback" not in done.stderr


# -- one transaction per save -------------------------------------------------------------------------


@pytest.mark.parametrize("locked", ["audit", "runs"])
def test_a_signal_killed_mid_transaction_leaves_the_old_record_and_no_audit(
    pg_repo: Repo, db: Any, locked: str
) -> None:
    """STORE-011: the receipt and its audit row are written in ONE transaction. The signal's
    process is stopped at one of its two writes (the table is locked, so its insert waits), then
    killed. Its transaction went to the server whole (one pipeline, COMMIT included), so the server
    may still finish it once the lock is gone: either the record before the signal and no audit
    row, or the signal's record and its one audit row, never one without the other. Stopped at the
    audit insert, this fails when the record was committed before it; stopped at the record's
    upsert, when the audit row was committed before it (either write outside the transaction)."""
    waits_workflow(pg_repo, "one", 1)
    run = pg_repo.swamp("workflow", "run", "one", "--json").json
    wait_id, run_id = run["waits"][0]["waitId"], run["id"]
    before = db.execute("SELECT record FROM runs WHERE run_id = %s", (run_id,)).fetchone()[0]
    with db.transaction():
        db.execute(f"LOCK TABLE {locked} IN EXCLUSIVE MODE")
        child = subprocess.Popen(
            [sys.executable, "-m", "swamp", "workflow", "signal", wait_id, "--payload", "5", "--json"],
            cwd=pg_repo.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            import psycopg

            with psycopg.connect(os.environ["SWAMP_STORE_URL"], autocommit=True) as watcher:
                (backend,) = until(
                    lambda: watcher.execute(
                        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        f"AND query LIKE 'INSERT INTO {locked}%%'"
                    ).fetchone(),
                    f"the signal to wait on the {locked} table",
                )
            os.kill(child.pid, signal.SIGKILL)
            child.wait(BOUND)
        finally:
            if child.poll() is None:
                child.kill()
    until(
        lambda: not db.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend,)).fetchone(),
        "the killed signal's backend to end (with its transaction, committed or not)",
    )
    after, audited = db.execute(  # one statement: one snapshot of both
        "SELECT record, (SELECT count(*) FROM audit WHERE run_id = %s) FROM runs WHERE run_id = %s",
        (run_id, run_id),
    ).fetchone()
    assert (after == before and audited == 0) or (after != before and audited == 1), audited
    done = pg_repo.swamp("workflow", "signal", wait_id, "--payload", "5", "--json")
    if after == before:
        assert done.code == 0, done  # nothing left locked: the next signal goes through
    else:  # the first one stands, and this one is refused (and audited as such)
        assert done.json["error"]["details"]["samePayload"] is True, done
    assert db.execute("SELECT count(*) FROM audit WHERE run_id = %s", (run_id,)).fetchone() == (audited + 1,)


# -- the claim -----------------------------------------------------------------------------------------

HOLD = """
import os, sys, time
from swamp.app.context import App
app = App.open(sys.argv[1])
claim = app.claim(sys.argv[2], purpose="test-holder")
claim.acquire()
assert app.claim_held(sys.argv[2])  # right in the holder's own process
print("held", flush=True)
time.sleep(600)
"""


def test_claim_timeout_names_the_holder_and_a_killed_holder_frees_the_run(pg_repo: Repo) -> None:
    waits_workflow(pg_repo, "held", 1)
    run = pg_repo.swamp("workflow", "run", "held", "--json").json
    wait_id, run_id = run["waits"][0]["waitId"], run["id"]
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(pg_repo.root), run_id], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        busy = pg_repo.swamp(
            "workflow", "signal", wait_id, "--payload", "1", "--claim-timeout", "0.2", "--json"
        )
        assert busy.code == 75, busy
        assert busy.json["error"]["code"] == "claim_timeout"
        assert f"swamp test-holder pid {holder.pid}@" in busy.json["error"]["message"]
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(BOUND)
        done = pg_repo.swamp(
            "workflow", "signal", wait_id, "--payload", "1", "--claim-timeout", "30", "--json"
        )
        assert done.code == 0, done
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(BOUND)


# -- held signals: exactly one caller wins ------------------------------------------------------------


def test_held_signal_is_kept_once_and_discarded_once(pg_repo: Repo) -> None:
    from swamp.app.context import App
    from swamp.domain.held import HeldSignal

    held = App.open(str(pg_repo.root)).held
    wait_id = "wait_" + "a" * 26
    barrier = threading.Barrier(8)
    kept: list[bool] = []
    gone: list[bool] = []

    def race(index: int) -> None:
        signal = HeldSignal(wait_id, "r", "w", f"sig_{index}", "2026-01-01T00:00:00.000Z", "me", index)
        barrier.wait()
        kept.append(held.hold(signal))
        barrier.wait()
        gone.append(held.discard(wait_id))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND)
    assert sorted(kept) == [False] * 7 + [True]
    assert sorted(gone) == [False] * 7 + [True]
    assert held.read(wait_id) is None and not held.exists(wait_id)


# -- events: gap-free cursors across processes ---------------------------------------------------------

APPEND = """
import sys
from swamp.app.context import App
log = App.open(sys.argv[1]).events
for i in range(40):
    log.append([{"event": "test", "writer": sys.argv[2], "n": i * 2 + k} for k in range(1 + i % 2)])
"""


def test_readers_following_the_log_while_four_processes_append_miss_nothing_and_agree_on_order(
    pg_repo: Repo,
) -> None:
    """EVENT-006/EVENT-008 under concurrent appends (issue 31: events are numbered from their
    transaction's id, so commits need not take turns). Two readers follow the log from the start,
    each moving its cursor forward by what it read, while four processes append 240 events in
    120 transactions at once. Each follower ends with exactly the events a final read returns, in
    the same order (no gap: an event committed late behind one already read would be missed; no
    reordering), cursors strictly increasing, every writer's events in the order it appended them."""
    from swamp.app.context import App

    log = App.open(str(pg_repo.root)).events
    start = log.start()
    done = threading.Event()
    followed: list[list[dict[str, Any]]] = [[], []]

    def follow(into: list[dict[str, Any]]) -> None:
        reader = App.open(str(pg_repo.root)).events
        cursor = start
        while True:
            finished = done.is_set()
            batch = reader.read(cursor, 10_000)
            into.extend(batch)
            if batch:
                cursor = batch[-1]["cursor"]
            elif finished:
                return

    followers = [threading.Thread(target=follow, args=(into,)) for into in followed]
    for follower in followers:
        follower.start()
    writers = [subprocess.Popen([sys.executable, "-c", APPEND, str(pg_repo.root), f"p{w}"]) for w in range(4)]
    try:
        for writer in writers:
            assert writer.wait(BOUND) == 0
    finally:
        done.set()
        for follower in followers:
            follower.join(BOUND)
    events = log.read(start, 10_000)
    assert len(events) == 4 * 60
    seqs = [int(e["cursor"][9:]) for e in events]
    assert seqs == sorted(set(seqs))  # strictly increasing: one order, no event twice
    for into in followed:
        assert [e["cursor"] for e in into] == [e["cursor"] for e in events]
    for w in range(4):
        mine = [e["n"] for e in events if e["writer"] == f"p{w}"]
        assert mine == sorted(mine) and len(mine) == 60


@pytest.mark.parametrize(
    ("next_id", "listed", "meant"),
    [
        (224313, 224314, 224314),  # given its id after the snapshot was taken: just past `next`
        (224313, 224300, 224300),
        ((1 << 32) + 5, (1 << 32) - 6, (1 << 32) - 6),  # of the epoch before `next`'s
        ((1 << 32) - 2, 3, (1 << 32) + 3),  # given its id after the snapshot, in the next epoch
    ],
)
def test_a_writers_listed_id_is_read_as_the_64_bit_id_nearest_the_next_one(
    db: Any, next_id: int, listed: int, meant: int
) -> None:
    """The watermark reads writers' ids from pg_locks (32 bits) after its snapshot was taken: an id
    a little past the snapshot's next id is that id, not one 2^32 back (which made every reader's
    cursor "past the end of the log" for a moment)."""
    from swamp.store.pg.events import _XID8

    row = db.execute(
        f"SELECT {_XID8} FROM (VALUES (%s::bigint)) AS s(next), (VALUES (%s::text::xid)) AS t(transactionid)",
        (next_id, str(listed)),
    ).fetchone()
    assert row == (meant,)


def test_another_applications_open_transaction_holds_back_no_event(pg_repo: Repo, db: Any) -> None:
    """Readers take events only below the watermark of the schema's own writers (events.py): a
    transaction of anyone else, open and holding an id for as long as it likes (the oldest one
    running in the cluster), delays nothing. A swamp writer of the schema held open does hold the
    events after it back, until it ends, and then they all come, in order."""
    import psycopg

    waits_workflow(pg_repo, "one", 1)
    start = pg_repo.swamp("events", "--timeout", "0", "--json").json["cursor"]
    with psycopg.connect(os.environ["SWAMP_STORE_URL"]) as other:  # not autocommit: it stays open
        other.execute("CREATE TEMP TABLE elsewhere (x int)")
        other.execute("INSERT INTO elsewhere VALUES (1)")  # now it has a transaction id
        run = pg_repo.swamp("workflow", "run", "one", "--json").json
        seen = pg_repo.swamp("events", "--after", start, "--timeout", "0", "--json").json["events"]
        assert [e["event"] for e in seen] == ["wait_opened", "run_suspended"], seen
        other.rollback()
    from swamp.app.context import App

    app = App.open(str(pg_repo.root))
    store_db = app.store.db
    with store_db.transaction():  # a writer of this schema, stopped before its commit
        store_db.execute("INSERT INTO audit (run_id, entry) VALUES (%s, %s)", (run["id"], "{}"))
        signal = pg_repo.swamp("workflow", "signal", run["waits"][0]["waitId"], "--payload", "1", "--json")
        assert signal.code == 0, signal
        held_back = pg_repo.swamp("events", "--after", seen[-1]["cursor"], "--timeout", "0", "--json")
        assert held_back.json["events"] == [], held_back
    after = pg_repo.swamp("events", "--after", seen[-1]["cursor"], "--timeout", "0", "--json").json
    assert [e["event"] for e in after["events"]] == ["wait_settled"], after


def test_a_version_1_store_migrates_in_place_and_the_cursors_clients_hold_still_read(
    store_url: str, tmp_path: Path
) -> None:
    """Schema version 2 numbers events from transaction ids (events.py). A store at version 1 (its
    events numbered 1, 2, 3 by the counter row) is refused until `swamp store migrate`, which
    upgrades it in place: a cursor a client held before reads on from where it was, and the
    events appended after the upgrade come after every old one."""
    import psycopg

    from swamp.store.pg.migrations import MIGRATIONS

    schema = store_url.rsplit("%3D", 1)[1]
    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # type: ignore[arg-type]
        for statement in MIGRATIONS[0][1].split(";"):
            if statement.strip():
                conn.execute(statement)  # type: ignore[arg-type]
        conn.execute(
            "INSERT INTO swamp_meta VALUES ('schema_version', '1'), ('events_epoch', 'abcd1234'), "
            "('events_seq', '3')"
        )
        for seq in (1, 2, 3):
            body = json.dumps({"cursor": f"abcd1234-{seq:012d}", "event": "run_finished", "runId": f"r{seq}"})
            conn.execute(
                "INSERT INTO events (seq, run_id, kind, body) VALUES (%s, %s, 'run_finished', %s)",
                (seq, f"r{seq}", body),
            )
    repo = make_repo(tmp_path / "repo")
    refused = repo.swamp("workflow", "waits", "--json")
    assert refused.code == 1 and refused.json["error"]["code"] == "store_schema_mismatch", refused
    migrated = repo.swamp("store", "migrate", "--json")
    assert migrated.code == 0 and migrated.json["applied"] == [2], migrated
    old = repo.swamp("events", "--after", "abcd1234-000000000001", "--timeout", "0", "--json").json
    assert [e["cursor"] for e in old["events"]] == ["abcd1234-000000000002", "abcd1234-000000000003"]
    waits_workflow(repo, "one", 1)
    assert repo.swamp("workflow", "run", "one", "--json").code == 0
    new = repo.swamp("events", "--after", "abcd1234-000000000003", "--timeout", "0", "--json").json
    assert [e["event"] for e in new["events"]] == ["wait_opened", "run_suspended"], new
    assert all(int(e["cursor"][9:]) > 3 for e in new["events"])
    last = repo.swamp("events", "--after", new["cursor"], "--timeout", "0", "--json").json
    assert last["events"] == [] and last["cursor"] == new["cursor"]
    whole = repo.swamp("events", "--after", "abcd1234-000000000000", "--timeout", "0", "--json")
    assert [e["cursor"] for e in whole.json["events"]][:1] == ["abcd1234-000000000001"], whole


# -- indexes: flat in the number of finished runs ------------------------------------------------------


def test_waits_history_and_supersede_read_no_finished_record(pg_repo: Repo, db: Any) -> None:
    """1000 finished runs in the table: waits, supersede's candidates, history --limit and
    history get by prefix parse only the records they show."""
    from swamp.app.context import App
    from swamp.store.pg import runs as pg_runs

    waits_workflow(pg_repo, "many", 1)
    open_run = pg_repo.swamp("workflow", "run", "many", "--json").json
    record = json.loads(
        db.execute("SELECT record FROM runs WHERE run_id = %s", (open_run["id"],)).fetchone()[0]
    )
    record["status"] = "succeeded"
    rows = []
    for i in range(1000):
        copy = {**record, "id": f"00000000-0000-4000-8000-{i:012d}", "createdAt": "2025-01-01T00:00:00.000Z"}
        rows.append((copy["id"], copy["workflowId"], copy["workflowName"], json.dumps(copy)))
    with db.cursor() as cur:
        cur.executemany(
            "INSERT INTO runs (run_id, workflow_id, workflow_name, status, inputs_sha256, created_at, "
            "record) VALUES (%s, %s, %s, 'succeeded', '', '2025-01-01T00:00:00.000Z', %s)",
            rows,
        )
    parsed: list[str] = []
    real = pg_runs.PgRunRepository._parse

    def counting(self: Any, run_id: str, text: str) -> Any:
        parsed.append(run_id)
        return real(self, run_id, text)

    pg_runs.PgRunRepository._parse = counting  # type: ignore[method-assign]
    try:
        app = App.open(str(pg_repo.root))
        from swamp.app.history import history, history_get
        from swamp.app.signals import list_waits

        assert [w["runId"] for w in list_waits(app)["waits"]] == [open_run["id"]]
        assert len(app.runs.active_entries()) == 1
        assert parsed == [open_run["id"]]
        parsed.clear()
        assert len(history(app, "many", 5)["runs"]) == 5
        assert len(parsed) == 5
        parsed.clear()
        assert history_get(app, "00000000-0000-4000-8000-000000000999")["status"] == "succeeded"
        assert parsed == ["00000000-0000-4000-8000-000000000999"]
    finally:
        pg_runs.PgRunRepository._parse = real  # type: ignore[method-assign]


# -- a race: 16 signals to 16 waits of one run, from 16 processes ---------------------------------------


def test_sixteen_signals_from_sixteen_processes_are_all_accepted(pg_repo: Repo, db: Any) -> None:
    waits_workflow(pg_repo, "fan", 16)
    run = pg_repo.swamp("workflow", "run", "fan", "--json").json
    waits = [w["waitId"] for w in run["waits"]]
    assert len(waits) == 16
    env = {**os.environ, "SWAMP_CLAIM_TIMEOUT": "120"}
    signallers = [
        subprocess.Popen(
            [sys.executable, "-m", "swamp", "workflow", "signal", w, "--payload", str(i), "--json"],
            cwd=pg_repo.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, w in enumerate(waits)
    ]
    answers = [p.communicate(timeout=180) for p in signallers]
    assert [p.returncode for p in signallers] == [0] * 16, answers
    doc = pg_repo.swamp("workflow", "history", "get", run["id"], "--json").json
    receipts = {s["wait"]["waitId"]: s["wait"]["receipt"]["id"] for s in doc["jobs"][0]["steps"]}
    assert set(receipts) == set(waits)
    accepted = {e["waitId"]: e["signalId"] for e in doc["audit"] if e["code"] == "accepted"}
    assert accepted == receipts


# -- hooks: the outcome goes to the run's audit trail in the database ----------------------------------


def test_a_hook_outcome_reaches_the_audit_trail_in_the_database(pg_repo: Repo, db: Any) -> None:
    settings = 'version: 1\nhooks:\n  waitOpened: {command: "echo oops >&2; exit 7", timeout: 20}\n'
    (pg_repo.root / ".swamp.yaml").write_text(settings, encoding="utf-8")
    waits_workflow(pg_repo, "hooked", 1)
    wait_id = pg_repo.swamp("workflow", "run", "hooked", "--json").json["waits"][0]["waitId"]

    def hooks() -> list[dict[str, Any]]:
        shown = pg_repo.swamp("workflow", "wait", "show", wait_id, "--json")
        assert shown.code == 0, shown
        return list(shown.json.get("hooks") or [])

    found = until(hooks, "the hook's outcome in wait show")
    assert found[0]["code"] == "hook_failed" and found[0]["exitCode"] == 7 and found[0]["stderr"] == "oops\n"
    assert not list((pg_repo.root / ".swamp").rglob("*.audit.jsonl"))


@pytest.mark.parametrize("driver", ["psycopg", "lean"])
def test_the_loop_works_through_either_driver(
    pg_repo: Repo, monkeypatch: pytest.MonkeyPatch, driver: str
) -> None:
    """Short commands use lean.py by default; SWAMP_PG_DRIVER=psycopg sends every statement through
    psycopg: both must run the whole loop (run to a wait, waits, signal --resume, history)."""
    monkeypatch.setenv("SWAMP_PG_DRIVER", driver)
    from swamp.store.pg.connection import Database

    probe = Database(os.environ["SWAMP_STORE_URL"])
    expected = "psycopg" if driver == "psycopg" else "swamp.store.pg.lean"
    assert type(probe.connection()).__module__.startswith(expected)  # the variable chooses the driver
    probe.close()
    name = waits_workflow(pg_repo, f"loop-{driver}", 1)
    started = pg_repo.swamp("workflow", "run", name, "--json")
    assert started.code == 0 and started.json["status"] == "suspended", started
    wait_id = started.json["waits"][0]["waitId"]
    listed = pg_repo.swamp("workflow", "waits", "--json")
    assert [w["waitId"] for w in listed.json["waits"]] == [wait_id], listed
    refused = pg_repo.swamp("workflow", "signal", wait_id, "--payload", '"seven"', "--json")
    assert refused.code == 3 and refused.json["error"]["code"] == "payload_invalid", refused
    signalled = pg_repo.swamp("workflow", "signal", wait_id, "--payload", "7", "--resume", "--json")
    assert signalled.code == 0, signalled
    run = pg_repo.swamp("workflow", "history", "get", started.json["id"], "--json")
    assert run.json["status"] == "succeeded", run
    codes = [entry.get("code") for entry in run.json["audit"]]
    assert codes.count("accepted") == 1 and "payload_invalid" in codes, codes
