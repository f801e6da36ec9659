"""swamp store copy (STORE-031..036): files -> PostgreSQL -> files gives back the same bytes.

The PostgreSQL tests need SWAMP_TEST_PG (a cluster address; each test gets a schema of its own) and
are skipped without it; the refusals that need no database run everywhere. Every command is a real
subprocess, as a user runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from helpers import Repo, job, make_repo

ADDRESS = os.environ.get("SWAMP_TEST_PG", "")
needs_pg = pytest.mark.skipif(
    not ADDRESS.startswith(("postgresql://", "postgres://")),
    reason="SWAMP_TEST_PG (a PostgreSQL address, e.g. what `scripts/pg start DIR` prints) is not set",
)
WAIT = {"type": "wait_for_signal", "timeout": 3600, "schema": {"type": "integer"}}
NO_STORE = {"SWAMP_STORE_URL": "file"}


def address_for(schema: str) -> str:
    return f"{ADDRESS}{'&' if '?' in ADDRESS else '?'}options=-csearch_path%3D{schema}"


def fresh_store(repo: Repo) -> str:
    url = address_for(f"copy_{uuid.uuid4().hex[:12]}")
    assert repo.swamp("store", "migrate", env={"SWAMP_STORE_URL": url}).code == 0
    return url


def state_files(repo: Repo) -> dict[str, bytes]:
    """Every run record, audit trail (an empty one counts as none) and held signal, by path."""
    base = repo.root / ".swamp"
    found = {}
    for folder in ("workflow-runs", "held"):
        for path in sorted((base / folder).rglob("*")) if (base / folder).is_dir() else []:
            if path.is_file() and not path.name.startswith("."):
                data = path.read_bytes()
                if data.strip():
                    found[str(path.relative_to(base))] = data
    return found


def populate(repo: Repo) -> dict[str, str]:
    """Runs of every kind: finished after a signal, suspended at a wait, suspended at a gate with
    a signal held for the wait behind it, and cancelled. Returns a few IDs."""
    repo.write_workflow(
        "pair", [job("main", {"name": "review", "task": WAIT}, {"name": "second", "task": WAIT})]
    )
    gate = {"name": "gate", "task": {"type": "manual_approval", "prompt": "go?"}}
    review = {
        "name": "review",
        "task": WAIT,
        "dependsOn": [{"step": "gate", "condition": {"type": "succeeded"}}],
    }
    repo.write_workflow("gated", [job("main", gate, review)])
    done = repo.swamp("workflow", "run", "pair", "--json", env=NO_STORE).json
    for wait in done["waits"]:
        assert repo.swamp("workflow", "signal", wait["waitId"], "--payload", "1", env=NO_STORE).code == 0
    assert repo.swamp("workflow", "resume", "pair", "--run", done["id"], env=NO_STORE).code == 0
    waiting = repo.swamp("workflow", "run", "pair", "--json", env=NO_STORE).json
    refused = repo.swamp(
        "workflow", "signal", waiting["waits"][0]["waitId"], "--payload", '"x"', env=NO_STORE
    )
    assert refused.code == 3  # payload_invalid: an audit entry too
    gated = repo.swamp("workflow", "run", "gated", "--json", env=NO_STORE).json
    reserved = next(s["reservedWaitId"] for s in gated["jobs"][0]["steps"] if s["name"] == "review")
    assert repo.swamp("workflow", "signal", reserved, "--payload", "7", env=NO_STORE).code == 0  # held
    cancelled = repo.swamp("workflow", "run", "pair", "--json", env=NO_STORE).json
    assert repo.swamp("workflow", "cancel", "pair", "--run", cancelled["id"], env=NO_STORE).code == 0
    return {"gated": gated["id"], "waiting": waiting["id"], "reserved": reserved}


@needs_pg
def test_files_to_postgresql_and_back_gives_the_same_bytes(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "source")
    ids = populate(source)
    before = state_files(source)
    assert any(name.endswith(".audit.jsonl") for name in before) and any(
        n.startswith("held/") for n in before
    )
    url = fresh_store(source)

    there = source.swamp("store", "copy", "--to", url, "--json", env=NO_STORE)
    assert there.code == 0, there
    counted = ("runs", "waits", "audit", "held", "digest")
    assert there.json["verified"]
    assert {k: there.json["from"][k] for k in counted} == {k: there.json["to"][k] for k in counted}
    assert there.json["to"]["runs"] == 4 and there.json["to"]["held"] == 1
    assert state_files(source) == before  # the source is left as it was

    target = make_repo(tmp_path / "target")
    back = target.swamp("store", "copy", "--to", "file", "--json", env={"SWAMP_STORE_URL": url})
    assert back.code == 0, back
    assert back.json["to"]["digest"] == there.json["to"]["digest"] == there.json["from"]["digest"]
    assert state_files(target) == before  # byte for byte: records, audit trails, held signals

    # The copy works: the held signal is applied when the gate opens its wait, in the new home.
    approved = target.swamp(
        "workflow", "approve", "gated", "gate", "--run", ids["gated"], "--resume", "--json"
    )
    assert approved.code == 0, approved
    assert approved.json["runStatus"] == "succeeded"


@needs_pg
def test_a_target_holding_a_run_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "source")
    populate(source)
    url = fresh_store(source)
    other = make_repo(tmp_path / "other")
    other.write_workflow("one", [job("main", {"name": "review", "task": WAIT})])
    assert other.swamp("workflow", "run", "one", env={"SWAMP_STORE_URL": url}).code == 0

    refused = source.swamp("store", "copy", "--to", url, "--json", env=NO_STORE)
    assert refused.code == 3
    assert refused.json["error"]["code"] == "store_not_empty"
    assert "never overwrites" in refused.json["error"]["message"]
    status = other.swamp("store", "status", "--json", env={"SWAMP_STORE_URL": url}).json
    assert status["runs"] == 1  # nothing of the source's was written


HOLDER = """
import sys
from swamp.app.context import App
claim = App.open(sys.argv[1]).claim(sys.argv[2], purpose="test")
claim.acquire()
print("held", flush=True)
sys.stdin.read()
"""


def test_a_run_being_changed_is_refused_and_the_same_store_too(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "source")
    ids = populate(source)
    same = source.swamp("store", "copy", "--to", "file", "--json", env=NO_STORE)
    assert same.code == 3 and same.json["error"]["code"] == "store_same"

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(source.root), ids["waiting"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **NO_STORE},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        target = "postgresql:///nowhere?host=/nonexistent"  # never reached: refused before
        busy = source.swamp("store", "copy", "--to", target, "--json", env=NO_STORE)
    finally:
        holder.communicate("", timeout=30)
    assert busy.code == 3, busy
    assert busy.json["error"]["code"] == "store_busy"
    assert busy.json["error"]["details"]["runIds"] == [ids["waiting"]]
