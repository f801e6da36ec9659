"""Schema patterns cannot wedge a run (INPUT-015, WAIT-045, WAIT-046): patterns run on RE2, in time
linear in the value; a pattern RE2 cannot run is refused when the schema is checked, and refuses
payloads when it was captured before that rule; and the payload is checked before the run's claim
is taken, so nothing else waits on it."""

from __future__ import annotations

import contextlib
import json
import signal as os_signal
from collections.abc import Iterator

import pytest
from test_waits_support import T0, at, record_path, refusal, signal, step_record, wait_step, wait_workflow

EVIL = "^(a+)+$"  # backtracking takes 2^n steps on n a's and a '!'
EVIL_TEXT = "a" * 40 + "!"  # hours for a backtracking engine


@contextlib.contextmanager
def bounded(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging for hours) if the block runs away; not a timing assertion: a
    linear-time answer takes milliseconds."""

    def give_up(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {seconds} s: the match backtracks")

    previous = os_signal.signal(os_signal.SIGALRM, give_up)
    os_signal.alarm(seconds)
    try:
        yield
    finally:
        os_signal.alarm(0)
        os_signal.signal(os_signal.SIGALRM, previous)


@pytest.fixture(autouse=True)
def _clock(monkeypatch):
    at(monkeypatch, T0)


@pytest.mark.parametrize(
    "schema, payload",
    [
        ({"type": "string", "pattern": EVIL}, EVIL_TEXT),  # the fast path
        (
            {"type": "object", "patternProperties": {EVIL: {"type": "string"}}, "minProperties": 2},
            {EVIL_TEXT: 1},
        ),
        ({"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False}, {EVIL_TEXT: 1}),
        ({"anyOf": [{"pattern": EVIL}, {"type": "integer"}]}, EVIL_TEXT),  # jsonschema's path
        ({"propertyNames": {"pattern": EVIL}}, {EVIL_TEXT: 1}),
    ],
    ids=["pattern", "patternProperties", "additionalProperties", "anyOf", "propertyNames"],
)
def test_a_backtracking_pattern_answers_in_linear_time(shared_repo, schema, payload):
    name = wait_workflow(
        shared_repo, f"evil-{abs(hash(json.dumps(schema))) % 10**8}", wait_step("w", schema=schema)
    )
    wait_id = shared_repo.run(name)["waits"][0]["waitId"]
    with bounded(30):
        err = refusal(shared_repo, "workflow.signal", {"waitId": wait_id, "payload": payload})
    assert err.code == "payload_invalid", err.message


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": r"^(a)\1$"},
        {"type": "string", "pattern": "^(?=a)a$"},
        {"type": "object", "patternProperties": {"(?<!x)y": {}}},
        {"type": "array", "items": {"pattern": "a{2000}"}},
    ],
    ids=["backreference", "lookahead", "lookbehind-in-patternProperties", "huge-repetition"],
)
def test_a_pattern_re2_cannot_run_makes_the_wait_schema_invalid(shared_repo, schema):
    from swamp.domain.inputs import InputValidationService

    problems = InputValidationService().schema_problems(schema)
    assert any("cannot run in linear time" in p for p in problems), problems
    name = wait_workflow(
        shared_repo, f"unrunnable-{abs(hash(json.dumps(schema))) % 10**8}", wait_step("w", schema=schema)
    )
    err = refusal(shared_repo, "workflow.run", {"workflow": name})
    assert err.code == "workflow_invalid"
    assert "Wait schemas" in err.message and "linear time" in err.message


def test_an_input_schema_pattern_re2_cannot_run_makes_the_workflow_invalid(shared_repo):
    name = shared_repo.write_workflow(
        "input-backref",
        [{"name": "main", "steps": [{"name": "s", "task": {"type": "manual_approval", "prompt": "go?"}}]}],
        inputs={"type": "object", "properties": {"x": {"type": "string", "pattern": r"(.)\1"}}},
    )
    err = refusal(shared_repo, "workflow.run", {"workflow": name, "inputs": {"x": "aa"}})
    assert err.code == "workflow_invalid"
    assert "Inputs schema" in err.message and "linear time" in err.message


def test_a_captured_schema_with_an_unrunnable_pattern_refuses_payloads(shared_repo):
    """A record written before INPUT-015 may hold such a schema: payloads are refused, never matched
    by a backtracking engine."""
    name = wait_workflow(shared_repo, "captured-backref", wait_step("w", schema={"type": "string"}))
    doc = shared_repo.run(name)
    wait_id = doc["waits"][0]["waitId"]
    path = record_path(shared_repo, doc)
    rec = json.loads(path.read_text(encoding="utf-8"))
    step_record(rec, "w")["wait"]["schema"] = {"type": "string", "pattern": r"^(a+)+\1$"}
    path.write_text(json.dumps(rec), encoding="utf-8")
    with bounded(30):
        err = refusal(shared_repo, "workflow.signal", {"waitId": wait_id, "payload": EVIL_TEXT})
    assert err.code == "payload_invalid"
    assert "cannot be checked" in err.message and "linear time" in err.message


def test_patterns_are_ecma_classes_on_re2(shared_repo):
    """\\d is an ASCII digit (ECMA-262), and a valid payload still passes."""
    name = wait_workflow(
        shared_repo, "digits", wait_step("w", schema={"type": "string", "pattern": r"^\d+$"})
    )
    wait_id = shared_repo.run(name)["waits"][0]["waitId"]
    assert (
        refusal(shared_repo, "workflow.signal", {"waitId": wait_id, "payload": "٣"}).code == "payload_invalid"
    )
    assert signal(shared_repo, wait_id, "42")["payload"] == "42"


def test_the_payload_is_checked_before_the_claim_is_taken(repo, monkeypatch):
    """While the schema is checked, the run's claim is free (another command could take it)."""
    from swamp.app.context import App
    from swamp.domain.inputs import InputValidationService
    from swamp.store.claim import RunClaim

    name = wait_workflow(repo, "claim-free", wait_step("w", schema={"type": "integer"}))
    doc = repo.run(name)
    wait_id = doc["waits"][0]["waitId"]
    layout = App.open(str(repo.root)).layout
    seen: list[bool] = []
    original = InputValidationService.problems

    def watching(self, value, schema):
        probe = RunClaim(layout, doc["id"], timeout=0)
        free = probe.try_acquire()
        probe.release()
        seen.append(free)
        return original(self, value, schema)

    monkeypatch.setattr(InputValidationService, "problems", watching)
    assert refusal(repo, "workflow.signal", {"waitId": wait_id, "payload": "x"}).code == "payload_invalid"
    assert signal(repo, wait_id, 7)["payload"] == 7
    assert seen and all(seen), seen
