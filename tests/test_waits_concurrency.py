"""Signals from several real processes at once, the run claim, and a signal that arrives while the
run is still finishing sibling steps (WAIT-016, WAIT-020, WAIT-028)."""

from __future__ import annotations

import fcntl
import json
import time

import pytest
from helpers import job, sh
from test_waits_support import ACCOUNT, env, finish, popen, record, step_record, wait_step

pytestmark = pytest.mark.cli

N = 6


def _signal_all(repo, wait_id, payloads):
    """One process per payload, all started before any is awaited."""
    procs = [
        popen(
            repo,
            "workflow",
            "signal",
            wait_id,
            "--payload",
            json.dumps(p),
            "--json",
            environment=env(user=f"user{i}"),
        )
        for i, p in enumerate(payloads)
    ]
    return [finish(p) for p in procs]


def test_concurrent_signals_to_one_wait_take_exactly_one(repo):
    repo.write_workflow("race", [job("main", wait_step("a"), wait_step("b"))])
    code, _, _, doc = repo.swamp("workflow", "run", "race", "--json", env=env())
    assert code == 0
    wait_a, wait_b = (w["waitId"] for w in doc["waits"])

    # different payloads: one is taken, every other sender is told it was not theirs
    results = _signal_all(repo, wait_a, [{"n": i} for i in range(N)])
    accepted = [data for rc, data in results if rc == 0]
    refused = [data for rc, data in results if rc != 0]
    assert len(accepted) == 1, results
    assert {rc for rc, _ in results} == {0, 3}
    winner = accepted[0]
    assert all(r["error"]["code"] == "wait_settled" for r in refused), refused
    assert all(r["error"]["details"]["receipt"] == winner["signal"] for r in refused)
    assert all(r["error"]["details"]["samePayload"] is False for r in refused)

    # the same payload from everyone: the losers learn theirs was the one taken
    results = _signal_all(repo, wait_b, [{"same": True}] * N)
    assert sorted(rc for rc, _ in results) == [0] + [3] * (N - 1)
    winner_b = next(data for rc, data in results if rc == 0)
    for rc, data in results:
        if rc:
            assert data["error"]["details"]["receipt"] == winner_b["signal"]
            assert data["error"]["details"]["samePayload"] is True

    rec = record(repo, doc)
    assert step_record(rec, "a")["outputs"] == {"payload": winner["payload"], "signal": winner["signal"]}
    assert step_record(rec, "b")["wait"]["receipt"]["id"] == winner_b["signal"]["id"]
    assert rec["status"] == "suspended"

    audit = repo.handle("workflow.history.get", {"run": doc["id"]})["audit"]
    codes_a = sorted(e["code"] for e in audit if e["waitId"] == wait_a)
    assert codes_a == ["accepted"] + ["wait_settled"] * (N - 1)
    taken = [e for e in audit if e["code"] == "accepted" and e["waitId"] == wait_a]
    assert taken[0]["signalId"] == winner["signal"]["id"]
    assert taken[0]["by"] == winner["signal"]["submittedBy"] == ACCOUNT
    assert taken[0]["onBehalfOf"] == winner["signal"]["onBehalfOf"]


def test_foreach_waits_signalled_in_parallel_all_settle_with_their_own_payloads(repo):
    items = [f"r{i}" for i in range(N)]
    fan = wait_step(
        "part",
        forEach={"item": "r", "in": "${{ " + json.dumps(items) + " }}"},
        schema={"type": "object", "required": ["region"]},
    )
    repo.write_workflow(
        "fan",
        [
            job(
                "main",
                fan,
                sh("after", "true", dependsOn=[{"step": "part", "condition": {"type": "succeeded"}}]),
            )
        ],
    )
    code, _, _, doc = repo.swamp("workflow", "run", "fan", "--json", env=env())
    assert code == 0 and len(doc["waits"]) == N
    by_step = {w["stepName"]: w["waitId"] for w in doc["waits"]}
    assert len(set(by_step.values())) == N

    procs = [
        popen(
            repo,
            "workflow",
            "signal",
            by_step[f"part-{r}"],
            "--payload",
            json.dumps({"region": r}),
            "--json",
            environment=env(user=r),
        )
        for r in items
    ]
    results = [finish(p) for p in procs]
    assert [rc for rc, _ in results] == [0] * N, results

    rec = record(repo, doc)
    for r in items:
        step = step_record(rec, f"part-{r}")
        assert step["status"] == "succeeded"
        assert step["outputs"]["payload"] == {"region": r}
        assert step["outputs"]["signal"]["submittedBy"] == ACCOUNT
        assert step["outputs"]["signal"]["onBehalfOf"] == r
        assert step["outputs"]["signal"]["waitId"] == by_step[f"part-{r}"]
    assert not any(s["status"] == "waiting" for j in rec["jobs"] for s in j["steps"])

    code, _, _, done = repo.swamp("workflow", "resume", "fan", "--json", env=env())
    assert code == 0 and done["status"] == "succeeded"


def _hold_claim(repo, run_id):
    path = repo.root / ".swamp" / "locks" / f"{run_id}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115 - held for the test
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    return handle


def test_a_signal_that_cannot_get_the_claim_exits_75_and_changes_nothing(repo):
    repo.write_workflow("busy", [job("main", wait_step("value"))])
    _, _, _, doc = repo.swamp("workflow", "run", "busy", "--json", env=env())
    wait_id = doc["waits"][0]["waitId"]
    path = repo.root / doc["path"]
    before = path.read_bytes()
    held = _hold_claim(repo, doc["id"])
    try:
        started = time.monotonic()
        code, _, _, err = repo.swamp(
            "workflow", "signal", wait_id, "--payload", "1", "--claim-timeout", "0.3", "--json", env=env()
        )
        assert code == 75
        assert err["error"]["code"] == "claim_timeout"
        assert time.monotonic() - started < 5
        assert path.read_bytes() == before
    finally:
        held.close()
    code, _, _, ok = repo.swamp("workflow", "signal", wait_id, "--payload", "1", "--json", env=env())
    assert code == 0 and ok["payload"] == 1


def _sibling_workflow(repo, name):
    """The wait opens while `slow` runs (until the file `go` exists, at most 30 s); job b saves the
    record (run `running`) meanwhile."""
    repo.write_workflow(
        name,
        [
            job(
                "a",
                wait_step("value"),
                sh("slow", "i=0; while [ ! -f go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"),
            ),
            job("b", sh("quick", "sleep 0.3")),
        ],
    )


def _wait_in_running_record(repo, proc, deadline=15.0):
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        for path in repo.run_files():
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            step = step_record(rec, "value")
            if rec["status"] == "running" and step["status"] == "waiting":
                return rec, step["wait"]["waitId"]
        assert proc.poll() is None, "the run ended before its wait was seen"
        time.sleep(0.05)
    raise AssertionError("the wait never appeared in a running record")


def test_a_signal_while_siblings_run_is_held_and_the_run_goes_on_without_stopping(repo):
    # WAIT-020: the process executing the run holds its claim; the signal neither waits for the
    # siblings (they run until `go` exists, written only after the signal answered) nor is refused.
    _sibling_workflow(repo, "sibs")
    run = popen(repo, "workflow", "run", "sibs", "--json", environment=env())
    try:
        _rec, wait_id = _wait_in_running_record(repo, run)
        code, _, _, doc = repo.swamp("workflow", "signal", wait_id, "--payload", "1", "--json", env=env())
        assert code == 0 and doc["held"] is True and doc["waitId"] == wait_id, doc
    finally:
        (repo.root / "go").write_text("", encoding="utf-8")
    rc, ran = finish(run)
    assert rc == 0 and ran["status"] == "succeeded", ran
    value = step_record(record(repo, ran), "value")
    assert value["status"] == "succeeded" and value["outputs"]["payload"] == 1
    assert value["wait"]["receipt"]["heldAt"]
