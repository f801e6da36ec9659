"""Payload rules through the request layer, in process (WAIT-021, WAIT-022, WAIT-023, WAIT-039):
size as received, strict JSON, nesting depth, schema errors with pointers, samePayload."""

from __future__ import annotations

import json

import pytest
from test_waits_support import T0, at, refusal, signal, wait_step, wait_workflow

LIMIT = 16384


@pytest.fixture(scope="module")
def open_wait(shared_repo):
    """One open wait that accepts any JSON value; tests use --check so it stays open."""
    with pytest.MonkeyPatch.context() as mp:
        at(mp)
        wait_workflow(shared_repo, "payloads", wait_step("value"))
        doc = shared_repo.run("payloads")
    return shared_repo, doc["waits"][0]["waitId"]


@pytest.fixture(autouse=True)
def _clock(monkeypatch):
    at(monkeypatch, T0)


def _check_text(repo, wait_id, text):
    return repo.handle("workflow.signal", {"waitId": wait_id, "payloadText": text, "check": True})


MALFORMED = {
    "empty": "",
    "blank": " \n\t\r ",
    "truncated": '{"a": 1',
    "two values": "1 2",
    "trailing comma": "[1,]",
    "single quotes": "{'a': 1}",
    "bare word": "ship",
    "duplicate key": '{"a": 1, "a": 1}',
    "nested duplicate key": '[{"o": {"k": 1, "k": 2}}]',
    "NaN": "NaN",
    "Infinity": '{"x": Infinity}',
    "-Infinity": "[-Infinity]",
    "overflowing number": "1e400",
    "401-digit integer": "9" * 401,
    "integer 2**1024": str(2**1024),
    "negative 310-digit integer in an object": '{"n": -' + "1" * 310 + "}",
    "integer past Python's 4300 digits": "9" * 5000,
    "byte-order mark": "\ufeff{}",
    "lone surrogate": '"\\udc00"',
    "65 arrays around a value": "[" * 65 + "1" + "]" * 65,
    "65 objects around a value": '{"a":' * 65 + "1" + "}" * 65,
    "very deep": "[" * 5000 + "]" * 5000,
}


@pytest.mark.parametrize("text", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_payloads(open_wait, text):
    repo, wait_id = open_wait
    err = refusal(repo, "workflow.signal", {"waitId": wait_id, "payloadText": text, "check": True})
    assert err.code == "payload_malformed", err.message
    assert "\n" not in err.message


@pytest.mark.parametrize(
    "raw",
    [b'"\xff"', b'"\xc3"', b"\xef\xbb\xbf[]", b'"\xed\xa0\x80"'],
    ids=["invalid byte", "truncated sequence", "BOM bytes", "encoded surrogate"],
)
def test_malformed_bytes_as_received(open_wait, raw):
    repo, wait_id = open_wait
    assert refusal(repo, "workflow.signal", {"waitId": wait_id, "payloadText": raw, "check": True}).code == (
        "payload_malformed"
    )


ACCEPTED = {
    "64 arrays": ("[" * 64 + "1" + "]" * 64, None),
    "64 objects": ('{"a":' * 64 + "1" + "}" * 64, None),
    "65 empty arrays (the innermost is inside 64)": ("[" * 65 + "]" * 65, None),
    "null": ("null", None),
    "string with escapes": ('"tab\\t \\u00e9 \\ud83d\\ude00"', "tab\t é 😀"),
    "number forms": (
        "[-0, 1.5e3, 123456789012345678901234567890]",
        [0, 1500.0, 123456789012345678901234567890],
    ),
    "surrounding whitespace": ("\n  {}  \n", {}),
    "largest integer a double holds": (str(2**1024 - 2**970 - 1), None),
    "underflow to zero": ("1e-400", 0.0),
}


@pytest.mark.parametrize(
    "value",
    [int("9" * 401), -(2**1024), float("inf")],
    ids=["401-digit integer", "-2**1024", "Infinity"],
)
def test_numbers_beyond_a_double_are_malformed_as_protocol_values(open_wait, value):
    """WAIT-022 whatever the form: a `payload` value over the protocol is held to the same rule."""
    repo, wait_id = open_wait
    err = refusal(repo, "workflow.signal", {"waitId": wait_id, "payload": {"n": value}, "check": True})
    assert err.code == "payload_malformed", err.message


def test_a_frame_integer_too_long_for_python_is_a_malformed_payload_not_a_bad_line(open_wait):
    """The frame reader keeps a 5000-digit integer as a marker; the signal refuses it as a payload."""
    import io

    from swamp.protocol.jsonl import serve

    repo, wait_id = open_wait
    line = (
        '{"type":"workflow.signal","id":"big","payload":{"waitId":"' + wait_id + '","check":true,'
        '"repoDir":' + json.dumps(str(repo.root)) + ',"payload":{"n":' + "9" * 5000 + "}}}\n"
    )
    out = io.StringIO()
    serve(io.BytesIO(line.encode()), out)
    frames = [json.loads(x) for x in out.getvalue().splitlines()]
    assert frames[0]["error"]["code"] == "payload_malformed", frames
    assert "5000-digit integer" in frames[0]["error"]["message"]


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_accepted_payloads(open_wait, case):
    repo, wait_id = open_wait
    text, _ = ACCEPTED[case]
    assert _check_text(repo, wait_id, text)["valid"] is True


def test_size_is_bytes_as_received(open_wait):
    repo, wait_id = open_wait
    two_byte = '"' + "é" * ((LIMIT - 2) // 2) + '"'
    assert len(two_byte.encode()) == LIMIT
    assert _check_text(repo, wait_id, two_byte)["valid"] is True
    err = refusal(repo, "workflow.signal", {"waitId": wait_id, "payloadText": two_byte + " ", "check": True})
    assert (err.code, err.details) == ("payload_too_large", {"bytes": LIMIT + 1, "limit": LIMIT})
    # size is checked before the text is parsed (and before the schema)
    assert refusal(repo, "workflow.signal", {"waitId": wait_id, "payloadText": "x" * (LIMIT + 1)}).code == (
        "payload_too_large"
    )


def test_a_json_value_over_the_protocol_is_measured_as_compact_json(open_wait):
    repo, wait_id = open_wait
    overhead = len(json.dumps({"a": ""}, separators=(",", ":")))
    fits = {"a": "x" * (LIMIT - overhead)}
    assert signal(repo, wait_id, fits, check=True)["valid"] is True
    err = refusal(
        repo, "workflow.signal", {"waitId": wait_id, "payload": {"a": "x" * (LIMIT - overhead + 1)}}
    )
    assert err.code == "payload_too_large"


def test_schema_errors_are_all_listed_with_json_pointers(shared_repo):
    schema = {
        "type": "object",
        "required": ["list", "name"],
        "additionalProperties": False,
        "properties": {
            "list": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
            "name": {"type": "string", "minLength": 2},
            "a~b/c": {"type": "boolean"},
        },
    }
    wait_workflow(shared_repo, "pointers", wait_step("value", schema=schema))
    wait_id = shared_repo.run("pointers")["waits"][0]["waitId"]
    err = refusal(
        shared_repo,
        "workflow.signal",
        {
            "waitId": wait_id,
            "payload": {"list": [1, "2", 3, 4], "name": "x", "a~b/c": "no", "extra": 1},
        },
    )
    assert err.code == "payload_invalid"
    pointers = sorted(e["pointer"] for e in err.details["errors"])
    assert pointers == ["/a~0b~1c", "/extra", "/list", "/list/1", "/name"]  # WAIT-023: /extra
    assert all(isinstance(e["message"], str) and e["message"] for e in err.details["errors"])
    assert f"swamp workflow wait show {wait_id}" in err.message


def test_same_payload_compares_json_values_not_text(shared_repo):
    wait_workflow(shared_repo, "same", wait_step("value"))
    wait_id = shared_repo.run("same")["waits"][0]["waitId"]
    signal(shared_repo, wait_id, text='{"a": 1, "b": [true, null]}')
    same = refusal(
        shared_repo, "workflow.signal", {"waitId": wait_id, "payloadText": '{ "b":[true,null],"a":1 }'}
    )
    assert (same.code, same.details["samePayload"]) == ("wait_settled", True)
    other = refusal(shared_repo, "workflow.signal", {"waitId": wait_id, "payload": {"a": 1, "b": [True]}})
    assert other.details["samePayload"] is False
    unreadable = refusal(shared_repo, "workflow.signal", {"waitId": wait_id, "payloadText": "{oops"})
    assert (unreadable.code, unreadable.details["samePayload"]) == ("wait_settled", False)


def test_ids_are_fresh_random_and_well_formed(shared_repo):
    import re

    many = wait_step("value", forEach={"item": "i", "in": "${{ " + json.dumps(list(range(20))) + " }}"})
    wait_workflow(shared_repo, "ids", many)
    first = shared_repo.run("ids")["waits"]
    second = shared_repo.run("ids")["waits"]
    ids = [w["waitId"] for w in first + second]
    assert len(ids) == 40 and len(set(ids)) == 40
    assert all(re.fullmatch(r"wait_[a-z2-7]{26}", i) for i in ids)
    assert not any("value" in i for i in ids)
    sig = signal(shared_repo, ids[0], 1)["signal"]["id"]
    assert re.fullmatch(r"sig_[a-z2-7]{26}", sig)


def test_deadline_boundary_is_inclusive(shared_repo, monkeypatch):
    wait_workflow(shared_repo, "edge", wait_step("value", timeout=1.5))
    doc = shared_repo.run("edge")
    wait_id = doc["waits"][0]["waitId"]
    assert doc["waits"][0]["deadline"] == "2026-01-01T00:00:01.500Z"
    at(monkeypatch, "2026-01-01T00:00:01.500Z")
    assert signal(shared_repo, wait_id, 1, check=True)["valid"] is True
    assert shared_repo.handle("workflow.wait.show", {"waitId": wait_id})["status"] == "open"
    at(monkeypatch, "2026-01-01T00:00:01.501Z")
    assert refusal(shared_repo, "workflow.signal", {"waitId": wait_id, "payload": 1}).code == "wait_expired"
    assert shared_repo.handle("workflow.wait.show", {"waitId": wait_id})["status"] == "expired"


def test_listing_is_ordered_by_deadline_then_id(shared_repo):
    wait_workflow(
        shared_repo,
        "order",
        wait_step("late", timeout=900),
        wait_step("early", timeout=300),
        wait_step("twin", timeout=300),
    )
    run_id = shared_repo.run("order")["id"]
    listed = [
        w
        for w in shared_repo.handle("workflow.waits", {"workflow": "order"})["waits"]
        if w["runId"] == run_id
    ]
    assert [w["stepName"] for w in listed][-1] == "late"
    early = listed[:2]
    assert [w["waitId"] for w in early] == sorted(w["waitId"] for w in early)
    assert [w["secondsLeft"] for w in listed] == [300, 300, 900]


@pytest.mark.parametrize(
    ("offered", "why"),
    [
        ({"payloadText": "{oops"}, "malformed JSON"),
        ({"payloadText": '"' + "x" * LIMIT + '"'}, "too large"),
        ({"payload": "a string, not the integer the schema wants"}, "invalid"),
        ({"payload": 5}, "valid"),
    ],
)
def test_an_expired_wait_is_refused_before_its_payload_is_judged(shared_repo, monkeypatch, offered, why):
    """WAIT-016's order: the deadline is checked before the payload's size, JSON and schema, so a
    sender past the deadline hears wait_expired (what happened to the wait), whatever it sent, and
    the record is not written (WAIT-024: the same bytes, the same file, the same mtime)."""
    from test_waits_support import record_path

    wait_workflow(shared_repo, f"late-{len(why)}", wait_step("value", timeout=60, schema={"type": "integer"}))
    doc = shared_repo.run(f"late-{len(why)}")
    wait_id = doc["waits"][0]["waitId"]
    path = record_path(shared_repo, doc)
    before = (path.read_bytes(), path.stat().st_ino, path.stat().st_mtime_ns)
    at(monkeypatch, "2026-01-01T00:01:00.001Z")
    refused = refusal(shared_repo, "workflow.signal", {"waitId": wait_id, **offered})
    assert (refused.code, refused.details) == (
        "wait_expired",
        {"waitId": wait_id, "deadline": "2026-01-01T00:01:00.000Z"},
    ), why
    assert (path.read_bytes(), path.stat().st_ino, path.stat().st_mtime_ns) == before
