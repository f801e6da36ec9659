"""A hypothesis state machine over run, signal, approve, reject (gate and wait), cancel, resume and
clock moves. Before each command a small model of the rules predicts its answer from the record;
after it, every record is checked: it reads, no step is left waiting in a finished run, every wait
is open without a receipt or settled with one, receipts never change once written, wait IDs are
never reused, and a finished run never changes again.
"""

from __future__ import annotations

import datetime as dt
import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any

import reliability_kit as kit
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

NAMES = itertools.count()
VERDICT = {"type": "object", "required": ["v"], "properties": {"v": {"enum": ["a", "b"]}}}
SHM = Path("/dev/shm") if Path("/dev/shm").is_dir() else None


def workflow(root: Path) -> str:
    name = f"machine-{next(NAMES)}"
    main = kit.job(
        "main",
        kit.gate_step("gate"),
        kit.wait_step("review", 100, VERDICT, allowFailure=True),
        kit.echo_step("after", {"p": "${{ steps.review.outputs.payload }}"}, dependsOn=[kit.dep("review")]),
        kit.echo_step("handler", {}, dependsOn=[kit.dep("review", "failed")]),
        kit.wait_step("second", 50.5, {}, dependsOn=[kit.dep("review", "always")]),
    )
    inputs = {"type": "object", "properties": {"tag": {"type": "string"}}}
    return kit.write_workflow(root, name, [main], inputs=inputs)


def delivered_not_resumed(doc: dict[str, Any]) -> bool:
    """A wait of the run took a signal that no resume has acted on (WAIT-047): `review` with its
    later level (after, handler, second) still pending, or `second`, the last level, while the job
    is unfinished."""
    steps = {s["name"]: s for s in kit.steps_of(doc)}

    def received(name: str) -> bool:
        wait = steps[name].get("wait") or {}
        return wait.get("outcome") == "received" and wait.get("receipt") is not None

    if doc["jobs"][0]["status"] in ("succeeded", "failed", "skipped"):
        return False
    later_pending = all(steps[n]["status"] == "pending" for n in ("after", "handler", "second"))
    return (received("review") and later_pending) or received("second")


def by_step(waits: dict[str, Any]) -> list[str]:
    """Wait IDs in step order: IDs are random, and draws must not depend on them."""
    return sorted(waits, key=lambda w: waits[w]["name"])


class WaitRules(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp(prefix="swamp-machine-", dir=SHM))
        self.root = kit.init_repo(self.base / "repo")
        self.wf = workflow(self.root)
        self.clock = kit.T0
        self.runs: list[str] = []
        self.receipts: dict[str, dict[str, Any]] = {}
        self.owners: dict[str, tuple[str, str]] = {}
        self.finished: dict[str, bytes] = {}

    def teardown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    # -- helpers -----------------------------------------------------------------------------------

    @property
    def now(self) -> str:
        return kit.iso(self.clock)

    def doc(self, run_id: str) -> dict[str, Any]:
        return kit.the_run(self.root, run_id)

    def ask(self, request: str, payload: dict[str, Any]) -> str:
        """Send one request; the answer's code, or 'ok'."""
        answer = kit.attempt(self.root, request, payload, now=self.now)
        code = str(answer["error"]["code"]) if isinstance(answer, dict) and "error" in answer else "ok"
        event(f"{request} -> {code}")
        return code

    def expired(self, wait: dict[str, Any]) -> bool:
        return self.clock > kit.parse(wait["deadline"])

    def pick_run(self, data: Any) -> str:
        """Mostly a run still in play, sometimes any (finished ones must refuse everything)."""
        live = [r for r in self.runs if self.doc(r)["status"] not in kit.TERMINAL]
        pool = live if live and data.draw(st.integers(0, 4), label="live") else self.runs
        return data.draw(st.sampled_from(pool), label="run")

    # -- rules -----------------------------------------------------------------------------------

    @initialize(tag=st.sampled_from(["x", "y"]))
    def first_run(self, tag: str) -> None:
        self.run(tag)

    @precondition(lambda self: len(self.runs) < 5)
    @rule(tag=st.sampled_from(["x", "y"]))
    def run(self, tag: str) -> None:
        before = {r: self.doc(r) for r in self.runs}
        doc = kit.call(self.root, "workflow.run", {"workflow": self.wf, "inputs": {"tag": tag}}, now=self.now)
        assert doc["status"] == "suspended"
        assert {w["stepName"] for w in doc["waits"]} == {"review"}
        self.runs.append(doc["id"])
        for run_id, old in before.items():
            # supersede: same inputs, suspended, no signal wait pending, no signal delivered unresumed
            new = self.doc(run_id)
            pending = any(s["status"] == "waiting" for s in kit.steps_of(old))
            kept = pending or delivered_not_resumed(old)
            if old["status"] == "suspended" and old["inputs"] == {"tag": tag} and not kept:
                assert new["status"] == "cancelled", "a suspended run without a pending wait is superseded"
            else:
                assert new["status"] == old["status"], "supersede touched a run it must leave alone"

    @rule(data=st.data(), valid=st.booleans())
    def signal(self, data: Any, valid: bool) -> None:
        doc = self.doc(self.pick_run(data))
        waits = kit.waits_of(doc)
        if waits:
            self._signal(doc, data.draw(st.sampled_from(by_step(waits)), label="wait"), valid)

    @rule(data=st.data(), approve=st.booleans())
    def decide_gate(self, data: Any, approve: bool) -> None:
        self._decide(self.pick_run(data), approve)

    @rule(data=st.data())
    def reject_wait(self, data: Any) -> None:
        doc = self.doc(self.pick_run(data))
        waits = kit.waits_of(doc)
        if not waits:
            return
        wait_id = data.draw(st.sampled_from(by_step(waits)), label="wait")
        code = self.ask("workflow.reject", {"waitId": wait_id, "reason": "no"})
        if waits[wait_id]["status"] != "waiting":
            assert code == "wait_settled"
        else:
            assert code == "ok"
            assert self.doc(doc["id"])["status"] == "failed"

    @rule(data=st.data())
    def cancel(self, data: Any) -> None:
        run_id = self.pick_run(data)
        doc = self.doc(run_id)
        code = self.ask("workflow.cancel", {"workflow": self.wf, "run": run_id})
        assert code == ("run_terminal" if doc["status"] in kit.TERMINAL else "ok")
        assert self.doc(run_id)["status"] == ("cancelled" if code == "ok" else doc["status"])

    @rule(data=st.data())
    def resume(self, data: Any) -> None:
        self._resume(self.pick_run(data))

    @rule(seconds=st.sampled_from([0.001, 1, 30, 49.5, 50.5, 100, 250]))
    def tick(self, seconds: float) -> None:
        self.clock += dt.timedelta(seconds=seconds)

    @rule(data=st.data())
    def advance(self, data: Any) -> None:
        """The common path: approve the gate, answer every open wait validly, resume."""
        run_id = self.pick_run(data)
        doc = self.doc(run_id)
        if kit.step_named(doc, "gate")["status"] == "waiting_approval":
            self._decide(run_id, True)
        for wait_id, step in kit.waits_of(doc).items():
            if step["status"] == "waiting":
                self._signal(self.doc(run_id), wait_id, True)
        self._resume(run_id)

    # -- each command with the answer the rules predict --------------------------------------------

    def _signal(self, doc: dict[str, Any], wait_id: str, valid: bool) -> None:
        step = kit.waits_of(doc)[wait_id]
        payload: dict[str, Any] = {"v": "a"} if valid else {"v": "c"}
        if step["status"] != "waiting":
            expected = "wait_settled"
        elif self.expired(step["wait"]):
            expected = "wait_expired"
        elif doc["status"] != "suspended":
            expected = "run_not_suspended"
        elif step["name"] == "review" and not valid:
            expected = "payload_invalid"
        else:
            expected = "ok"
        assert self.ask("workflow.signal", {"waitId": wait_id, "payload": payload}) == expected

    def _decide(self, run_id: str, approve: bool) -> None:
        doc = self.doc(run_id)
        gate = kit.step_named(doc, "gate")
        code = self.ask(
            "workflow.approve" if approve else "workflow.reject",
            {"workflow": self.wf, "step": "gate", "run": run_id},
        )
        if doc["status"] in kit.TERMINAL:
            assert code == "run_terminal"
        elif gate["status"] != "waiting_approval":
            assert code == "step_not_waiting"
        else:
            assert code == "ok"
            if not approve:
                assert self.doc(run_id)["status"] == "failed"

    def _resume(self, run_id: str) -> None:
        doc = self.doc(run_id)
        steps = kit.steps_of(doc)
        open_waits = [s for s in steps if s["status"] == "waiting" and not self.expired(s["wait"])]
        gates = [s for s in steps if s["status"] == "waiting_approval"]
        code = self.ask("workflow.resume", {"workflow": self.wf, "run": run_id})
        if doc["status"] in kit.TERMINAL:
            assert code == "run_terminal"
        elif open_waits:
            assert code == "wait_open"
        elif gates:
            assert code == "approval_pending"
        else:
            assert code == "ok"
            after = self.doc(run_id)
            timed_out = [s["name"] for s in steps if s["status"] == "waiting"]  # expired ones
            for name in timed_out:
                assert kit.step_named(after, name)["reason"] == "wait_timeout"
            # review may fail (allowFailure); `second` failing fails the run
            expected = {"failed"} if "second" in timed_out else {"suspended", "succeeded"}
            assert after["status"] in expected, (after["status"], timed_out)
            review = kit.step_named(after, "review")
            if review["status"] == "succeeded" and after["status"] == "succeeded":
                assert kit.step_named(after, "after")["outputs"]["args"]["p"] == review["outputs"]["payload"]

    # -- what must always hold -------------------------------------------------------------------

    @invariant()
    def records_keep_the_rules(self) -> None:
        docs, torn = kit.records(self.root)
        assert not torn, torn
        for doc in docs:
            assert not kit.violations(doc), kit.violations(doc)
            for wait_id, step in kit.waits_of(doc).items():
                owner = (doc["id"], step["name"])
                assert self.owners.setdefault(wait_id, owner) == owner, f"wait ID {wait_id} reused"
                receipt = step["wait"].get("receipt")
                if wait_id in self.receipts:
                    assert receipt == self.receipts[wait_id], "a receipt changed once written"
                elif receipt is not None:
                    self.receipts[wait_id] = receipt
            path = self.root / ".swamp" / "workflow-runs" / doc["workflowId"] / f"{doc['id']}.json"
            if doc["id"] in self.finished:
                assert path.read_bytes() == self.finished[doc["id"]], "a finished run changed"
            elif doc["status"] in kit.TERMINAL:
                self.finished[doc["id"]] = path.read_bytes()


TestWaitRules = WaitRules.TestCase
TestWaitRules.settings = settings(
    settings.default,
    max_examples=max(1, settings.default.max_examples * 3 // 5),
    stateful_step_count=settings.default.stateful_step_count * 2,
)
