"""scripts/pg-scenario-env, the conformance runners' --env-hook for a PostgreSQL store: each call
gives a scenario a migrated schema of its own, and a cluster it cannot use fails the scenario.

Needs a cluster (SWAMP_TEST_PG, which scripts/test sets to its throwaway one); skipped without it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SWAMP, clean_env

HOOK = Path(__file__).resolve().parents[1] / "scripts" / "pg-scenario-env"
ADDRESS = os.environ.get("SWAMP_TEST_PG", "")
needs_cluster = pytest.mark.skipif(
    not ADDRESS.startswith(("postgresql://", "postgres://")),
    reason="SWAMP_TEST_PG (a PostgreSQL address, e.g. what `scripts/pg start DIR` prints) is not set",
)


def hook(scenario_id: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**clean_env(), "SWAMP_IMPL": str(SWAMP), **env}
    return subprocess.run(
        [sys.executable, str(HOOK), scenario_id], capture_output=True, text=True, env=full, timeout=60
    )


def status(url: str, cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [str(SWAMP), "store", "status", "--json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**clean_env(), "SWAMP_STORE_URL": url},
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@needs_cluster
def test_each_call_prints_a_migrated_schema_of_its_own(tmp_path):
    first, second = (
        hook("Waits-Signal/Held", SWAMP_TEST_PG=ADDRESS),
        hook("Waits-Signal/Held", SWAMP_TEST_PG=ADDRESS),
    )
    urls = []
    for done in (first, second):
        assert done.returncode == 0, done.stderr
        [line] = done.stdout.splitlines()
        name, _, url = line.partition("=")
        assert name == "SWAMP_STORE_URL"
        assert url.startswith(ADDRESS + "&options=-csearch_path%3D")
        assert re.fullmatch(r"c_waits_signal_held_[0-9a-f]{8}", url.rsplit("%3D", 1)[1])
        urls.append(url)
    assert urls[0] != urls[1]  # a scenario run twice (or by two runners) never shares a schema
    for url in urls:
        shown = status(url, tmp_path)
        assert shown["kind"] == "postgresql" and shown["current"] is True
        assert shown["schema"] == url.rsplit("%3D", 1)[1] and shown["runs"] == 0


@needs_cluster
def test_a_long_id_still_makes_a_valid_schema_name(tmp_path):
    done = hook("x" * 200, SWAMP_TEST_PG=ADDRESS)
    assert done.returncode == 0, done.stderr
    schema = done.stdout.strip().rsplit("%3D", 1)[1]
    assert len(schema) <= 63
    assert status(done.stdout.strip().partition("=")[2], tmp_path)["schema"] == schema


def test_a_cluster_it_cannot_use_fails_with_the_reason(tmp_path):
    missing = hook("cli-help", SWAMP_TEST_PG="")
    assert missing.returncode == 2 and missing.stdout == ""
    assert "SWAMP_TEST_PG is not set" in missing.stderr
    down = hook("cli-help", SWAMP_TEST_PG=f"postgresql:///swamp?host={tmp_path}&user=nobody")
    assert down.returncode == 1 and down.stdout == ""
    assert "storage_error" in down.stderr and "`swamp store migrate` exited 1" in down.stderr


@needs_cluster
def test_prepared_schemas_are_taken_once_each_then_a_fresh_one_is_migrated(tmp_path):
    pool = tmp_path / "pool"
    prepared = hook("--prepare", SWAMP_TEST_PG=ADDRESS)  # usage: --prepare needs a folder
    assert prepared.returncode == 2
    full = {**clean_env(), "SWAMP_IMPL": str(SWAMP), "SWAMP_TEST_PG": ADDRESS}
    done = subprocess.run(
        [sys.executable, str(HOOK), "--prepare", str(pool), "cli-help", "waits-held"],
        capture_output=True, text=True, env=full, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (pool / "ready").iterdir()) == ["cli-help", "waits-held"]
    taken = [hook("cli-help", SWAMP_TEST_PG=ADDRESS, SWAMP_TEST_PG_POOL=str(pool)) for _ in range(2)]
    urls = [t.stdout.strip().partition("=")[2] for t in taken]
    assert all(t.returncode == 0 for t in taken), [t.stderr for t in taken]
    assert urls[0] == (pool / "taken" / "cli-help").read_text().strip()
    assert urls[1] != urls[0]  # the prepared one is gone: the second call migrated a fresh schema
    other = hook("waits-held", SWAMP_TEST_PG=ADDRESS, SWAMP_TEST_PG_POOL=str(pool)).stdout.strip()
    shown = [status(url, tmp_path) for url in (*urls, other.partition("=")[2])]
    for url, doc in zip((*urls, other.partition("=")[2]), shown, strict=True):
        assert doc["current"] is True and doc["runs"] == 0 and doc["schema"] == url.rsplit("%3D", 1)[1]
    assert len({doc["schema"] for doc in shown}) == 3
