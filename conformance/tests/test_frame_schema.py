"""spec/schemas/frame.schema.json: replies at the top level, requests under $defs/request."""

import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry
from referencing.jsonschema import DRAFT202012

SCHEMAS = Path(__file__).resolve().parents[2] / "spec" / "schemas"
SCHEMA = json.loads((SCHEMAS / "frame.schema.json").read_text())
# frame.schema.json refers to its neighbours by file name (results, events, errors)
REGISTRY = Registry().with_resources(  # type: ignore[var-annotated]
    (path.name, DRAFT202012.create_resource(json.loads(path.read_text())))
    for path in SCHEMAS.glob("*.schema.json")
)
REPLY = jsonschema.Draft202012Validator({"$ref": "frame.schema.json"}, registry=REGISTRY)
REQUEST = jsonschema.Draft202012Validator({"$ref": "frame.schema.json#/$defs/request"}, registry=REGISTRY)

AT = "2026-01-01T00:00:00.000Z"


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize(
    "frame",
    [
        {
            "type": "event",
            "id": "r1",
            "event": {
                "event": "step_started",
                "at": AT,
                "job": "main",
                "step": "build",
                "task": "model_method",
            },
        },
        {
            "type": "workflow.create",
            "id": "r1",
            "payload": {"data": {"name": "hello", "path": "workflows/x"}},
        },
        {"type": "workflow.waits", "id": "r2", "payload": {"data": {"waits": []}}},
        {"type": "error", "id": "r1", "error": {"code": "wait_not_found", "message": "No such wait."}},
        {
            "type": "error",
            "id": "r1",
            "error": {
                "code": "payload_invalid",
                "message": "m",
                "details": {"errors": [{"pointer": "/a", "message": "m"}]},
            },
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
        # a result's data is its request type's document; an event is its kind's; a code is registered
        {"type": "workflow.waits", "id": "r1", "payload": {"data": {}}},
        {"type": "workflow.waits", "id": "r1", "payload": {"data": {"waits": [], "more": 1}}},
        {"type": "workflow.create", "id": "r1", "payload": {"data": {"name": "hello"}}},
        {"type": "no.such.type", "id": "r1", "payload": {"data": {}}},
        {"type": "event", "id": "r1", "event": {"kind": "step.started", "step": "build"}},
        {"type": "event", "id": "r1", "event": {"event": "step_started", "at": AT, "job": "main"}},
        {
            "type": "event",
            "id": "r1",
            "event": {"event": "step_teleported", "at": AT, "job": "j", "step": "s"},
        },
        {"type": "error", "id": "r1", "error": {"code": "wait_misplaced", "message": "m"}},
        {"type": "error", "id": "r1", "error": {"code": "payload_invalid", "message": "m", "details": {}}},
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
