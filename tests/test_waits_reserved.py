"""Reserved waits and held early signals, inside (WAIT-066..076): the wait index names a reserved
wait from the run's first save, at most one signal is held per wait however many race for it, and
a held signal left behind by a crash after the record took it is removed, not applied again."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from helpers import job
from test_waits_support import at, signal, wait_step

from swamp.app.context import App
from swamp.app.held import settle_claimed
from swamp.domain.held import HeldSignal
from swamp.store.claim import RunClaim
from swamp.store.held import HeldStore


def _gated(repo, name: str) -> dict:
    """A run suspended at a gate, its wait `review` reserved behind it."""
    gate = {"name": "gate", "task": {"type": "manual_approval", "prompt": "go?"}}
    review = wait_step("review", dependsOn=[{"step": "gate", "condition": {"type": "succeeded"}}])
    repo.write_workflow(name, [job("main", gate, review)])
    return repo.run(name)


def _reserved(doc: dict) -> str:
    return next(s["reservedWaitId"] for j in doc["jobs"] for s in j["steps"] if s["name"] == "review")


def test_a_reserved_wait_is_indexed_from_the_first_save(shared_repo, monkeypatch):
    at(monkeypatch)
    doc = _gated(shared_repo, f"indexed-{uuid.uuid4().hex[:8]}")
    wait_id = _reserved(doc)
    pointer = shared_repo.root / ".swamp" / "waits" / f"{wait_id}.json"
    assert json.loads(pointer.read_text()) == {"workflowId": doc["workflowId"], "runId": doc["id"]}


def test_of_signals_racing_for_one_reserved_wait_exactly_one_is_held(shared_repo):
    store = HeldStore(App.open(str(shared_repo.root)).layout)
    wait_id = "wait_" + "a" * 26
    barrier = threading.Barrier(8)
    won: list[int] = []

    def hold(n: int) -> None:
        held = HeldSignal(wait_id, "r", "w", f"sig_{'b' * 25}{'abcdefgh'[n]}", "t", "me", {"n": n})
        barrier.wait()
        if store.hold(held):
            won.append(n)

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    kept = store.read(wait_id)
    assert kept is not None and kept.payload == {"n": won[0]}
    assert not [p for p in store.layout.datastore.joinpath("held").iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("payload", [None, 0, "", {"deep": [1, 2.5, "x"]}])
def test_a_held_payload_reads_back_as_sent(shared_repo, payload):
    store = HeldStore(App.open(str(shared_repo.root)).layout)
    wait_id = "wait_" + uuid.uuid4().hex[:26].translate(str.maketrans("0189", "abcd"))
    assert store.hold(HeldSignal(wait_id, "r", "w", "sig_" + "c" * 26, "t", "me", payload))
    held = store.read(wait_id)
    assert held is not None and held.payload == payload
    assert store.discard(wait_id) and not store.discard(wait_id)


def test_a_held_signal_the_record_already_took_is_removed_not_applied_again(shared_repo, monkeypatch):
    """A crash between saving the record that took a held signal and removing its file leaves the
    file: the next holder of the claim removes it and notes one acceptance, nothing more."""
    at(monkeypatch)
    name = f"leftover-{uuid.uuid4().hex[:8]}"
    doc = _gated(shared_repo, name)
    wait_id = _reserved(doc)
    held = signal(shared_repo, wait_id, {"v": 1})
    assert held["held"] is True
    app = App.open(str(shared_repo.root))
    store = HeldStore(app.layout)
    kept = store.read(wait_id)
    assert kept is not None
    (app.layout.datastore / "held" / "copy.json").write_bytes(
        (app.layout.datastore / "held" / f"{wait_id}.json").read_bytes()
    )
    shared_repo.handle(
        "workflow.approve", {"workflow": name, "step": "gate", "run": doc["id"], "resume": True}
    )
    assert store.read(wait_id) is None
    # As if the process had stopped right after saving the record: the file and its note remain.
    (app.layout.datastore / "held" / "copy.json").rename(app.layout.datastore / "held" / f"{wait_id}.json")
    trail = app.runs.audit_path(app.runs.load(doc["workflowId"], doc["id"]))
    lines = trail.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["code"] == "accepted"
    trail.write_text("".join(lines[:-1]))
    with RunClaim(app.layout, doc["id"], purpose="test"):
        run = app.runs.load(doc["workflowId"], doc["id"])
        before = app.runs.path_for(doc["workflowId"], doc["id"]).read_bytes()
        settle_claimed(app, run)
        assert app.runs.path_for(doc["workflowId"], doc["id"]).read_bytes() == before
    assert store.read(wait_id) is None
    audit = shared_repo.handle("workflow.history.get", {"run": doc["id"]})["audit"]
    assert [(e["code"], e.get("held")) for e in audit] == [("held", None), ("accepted", True)]


def test_a_signal_held_after_its_wait_opened_is_applied_before_the_run_lets_go(shared_repo, monkeypatch):
    """The executor looked for a held signal when the wait opened and found none; the signal is held
    while a sibling step still runs (the record does not show the wait open yet). Before the run
    lets its claim go it looks again, applies it, and goes on as a resume would (WAIT-075)."""
    from helpers import sh

    from swamp.store.journal import RunJournal

    at(monkeypatch)
    name = f"late-{uuid.uuid4().hex[:8]}"
    release = shared_repo.root / f"release-{name}"
    pre = sh("pre", "true")
    review = wait_step("review", dependsOn=[{"step": "pre", "condition": {"type": "succeeded"}}])
    sibling = sh(
        "sibling",
        f"while [ ! -f {release} ]; do sleep 0.01; done",
        dependsOn=[{"step": "pre", "condition": {"type": "succeeded"}}],
    )
    after = sh("after", "true", dependsOn=[{"step": "review", "condition": {"type": "succeeded"}}])
    shared_repo.write_workflow(name, [job("main", pre, review, sibling, after)])
    finished: list[dict] = []
    runner = threading.Thread(target=lambda: finished.append(shared_repo.run(name)))
    runner.start()
    try:
        app = App.open(str(shared_repo.root))
        journal = RunJournal(app.layout)
        run_id = wait_id = None
        for _ in range(3000):  # until the wait has opened (its step_waiting event is in the journal)
            for path in app.runs.record_paths():
                doc = json.loads(path.read_text())
                if doc["workflowName"] == name:
                    run_id = doc["id"]
                    wait_id = _reserved(doc)
            if run_id and any(e["event"] == "step_waiting" for _, e in journal.read(run_id)):
                break
            threading.Event().wait(0.01)
        assert run_id and wait_id
        answer = signal(shared_repo, wait_id, {"v": 7})
        assert answer["held"] is True  # the record as saved does not show the wait open yet
    finally:
        release.write_text("go")
        runner.join(60)
    doc = finished[0]
    assert doc["status"] == "succeeded"
    steps = {s["name"]: s for s in doc["jobs"][0]["steps"]}
    assert steps["review"]["outputs"]["payload"] == {"v": 7}
    assert steps["review"]["outputs"]["signal"]["id"] == answer["signal"]["id"]
    assert steps["after"]["status"] == "succeeded"
    events = [e["event"] for _, e in journal.read(run_id)]
    assert events.count("run_suspended") == 1 and events.count("run_resumed") == 1
    audit = shared_repo.handle("workflow.history.get", {"run": run_id})["audit"]
    assert [(e["code"], e.get("held")) for e in audit] == [("held", None), ("accepted", True)]
    assert HeldStore(app.layout).read(wait_id) is None


def test_a_held_signal_applied_as_its_wait_opens_is_published_opened_then_settled(shared_repo, monkeypatch):
    """One save of the run publishes the wait's `wait_opened` and then its `wait_settled` with the
    held signal's receipt (domain/changes.py), so observers never see an open wait that was not."""
    from swamp.app import publish as publish_module
    from swamp.domain.changes import run_changes

    seen: list[dict] = []
    monkeypatch.setattr(
        publish_module,
        "publish",
        lambda app, before, run: seen.extend(run_changes(before, run, app.clock.now())),
    )
    at(monkeypatch)
    name = f"published-{uuid.uuid4().hex[:8]}"
    doc = _gated(shared_repo, name)
    wait_id = _reserved(doc)
    held = signal(shared_repo, wait_id, {"v": 2})
    seen.clear()
    shared_repo.handle(
        "workflow.approve", {"workflow": name, "step": "gate", "run": doc["id"], "resume": True}
    )
    mine = [e for e in seen if e.get("waitId") == wait_id]
    assert [e["event"] for e in mine] == ["wait_opened", "wait_settled"]
    assert mine[1]["outcome"] == "received" and mine[1]["signalId"] == held["signal"]["id"]
    assert mine[1]["receipt"]["heldAt"] == held["signal"]["receivedAt"]
