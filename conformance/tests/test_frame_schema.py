"""spec/schemas/frame.schema.json: replies at the top level, requests under $defs/request."""

import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

SCHEMAS = Path(__file__).resolve().parents[2] / "spec" / "schemas"
SCHEMA = json.loads((SCHEMAS / "frame.schema.json").read_text())
REQUESTS = json.loads((SCHEMAS / "requests.schema.json").read_text())
REGISTRY = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in (SCHEMA, REQUESTS)])
REPLY = jsonschema.Draft202012Validator(SCHEMA)
REQUEST = jsonschema.Draft202012Validator({"$ref": "frame.schema.json#/$defs/request"}, registry=REGISTRY)


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "event", "id": "r1", "event": {"kind": "step.started", "step": "build"}},
        {"type": "workflow.signal", "id": "r1", "payload": {"data": {"status": "accepted"}}},
        {"type": "workflow.history.get", "id": "r2", "payload": {"data": {}}},
        {"type": "error", "id": "r1", "error": {"code": "wait_not_found", "message": "No such wait."}},
        {
            "type": "error",
            "id": "r1",
            "error": {"code": "payload_invalid", "message": "m", "details": {"errors": []}},
        },
        {"type": "error", "id": None, "error": {"code": "invalid_request", "message": "Line 1 is not JSON."}},
        {"type": "done", "id": "r1"},
        {"type": "done", "id": None},
    ],
)
def test_valid_replies(frame):
    assert list(REPLY.iter_errors(frame)) == []


@pytest.mark.parametrize(
    "frame",
    [
        [],
        {"type": "done"},  # no id
        {"type": "done", "id": "r1", "extra": True},
        {"type": "done", "id": 1},
        {"type": "event", "id": "r1"},
        {"type": "event", "id": None, "event": {}},  # only error/done may have a null id
        {"type": "workflow.signal", "id": "r1", "payload": {}},  # result without data
        {"type": "workflow.signal", "id": "r1", "payload": {"data": []}},
        {"type": "workflow.signal", "id": "r1", "payload": {"data": {}, "more": 1}},
        {"type": "Workflow.Signal", "id": "r1", "payload": {"data": {}}},
        {"type": "error", "id": "r1", "payload": {"data": {}}},  # a result cannot be typed error
        {"type": "error", "id": "r1", "error": {"code": "WaitNotFound", "message": "m"}},
        {"type": "error", "id": "r1", "error": {"code": "wait_not_found"}},
        {"type": "error", "id": "r1", "error": {"code": "wait_not_found", "message": "two\nlines"}},
        {"type": "error", "id": "r1", "error": {"code": "wait_not_found", "message": "m", "details": None}},
    ],
)
def test_invalid_replies(frame):
    assert not REPLY.is_valid(frame)


def test_requests():
    assert REQUEST.is_valid(
        {"type": "workflow.signal", "id": "r1", "payload": {"waitId": "wait_x", "payload": 1}}
    )
    assert REQUEST.is_valid({"type": "workflow.list", "id": "r1"})
    # the payload is checked by type, through requests.schema.json
    assert not REQUEST.is_valid({"type": "workflow.history.get", "id": "r1"})
    assert not REQUEST.is_valid({"type": "workflow.signal", "id": "r1", "payload": {"wait": "wait_x"}})
    assert not REQUEST.is_valid({"type": "workflow.history", "id": "r1", "payload": {"limit": "5"}})
    assert not REQUEST.is_valid({"type": "workflow.nope", "id": "r1"})
    assert not REQUEST.is_valid({"type": "workflow.signal", "payload": {}})
    assert not REQUEST.is_valid({"type": "workflow.signal", "id": "", "payload": {}})
    assert not REQUEST.is_valid({"type": "done", "id": "r1"})
    assert not REQUEST.is_valid({"type": "workflow.signal", "id": "r1", "payload": "x"})
    # a request is not a reply
    assert not REPLY.is_valid({"type": "workflow.signal", "id": "r1", "payload": {"wait": "wait_x"}})
