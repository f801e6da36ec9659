"""spec/schemas/requests.schema.json is what swamp checks request payloads with (PROTO-007, PROTO-010).

The compiled checks (swamp/protocol/payloads.py) must give jsonschema's verdict on every payload
of a table built from each type's own fields: every field given every kind of JSON value, each
required field left out, and a field no type defines. The request types swamp answers and the
types the schema defines are the same set, and the schemas swamp reads are the spec's files.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from swamp.domain.errors import InvalidRequest
from swamp.protocol import payloads
from swamp.protocol.requests import REQUEST_TYPES, handle

ROOT = Path(__file__).resolve().parents[1]
SPEC_SCHEMAS = ROOT / "spec" / "schemas"
DOCUMENT = json.loads((SPEC_SCHEMAS / "requests.schema.json").read_text(encoding="utf-8"))
SAMPLES: list[Any] = [None, True, False, 0, 7, 2.0, 1.5, -3, "", "text", b"raw", {}, {"a": 1}, [], [1]]


def _registry() -> Registry:
    resources = []
    for path in sorted(SPEC_SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        if "$id" in schema:
            resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def _schema_verdict(request_type: str, payload: Any) -> bool:
    sub = {"$ref": f"requests.schema.json#/$defs/{request_type}"}
    as_json = json.loads(json.dumps(payload, default=lambda b: b.decode()))  # bytes are text on the wire
    return jsonschema.Draft202012Validator(sub, registry=_registry()).is_valid(as_json)


def _swamp_verdict(request_type: str, payload: Any) -> bool:
    try:
        payloads.request_schemas().check(request_type)(payload)
    except InvalidRequest:
        return False
    return True


def _payloads(request_type: str) -> list[dict[str, Any]]:
    """A base payload holding every required field, then one field changed at a time."""
    definition = DOCUMENT["$defs"][request_type]
    required = definition.get("required", [])
    base = {name: "x" for name in required}
    cases: list[dict[str, Any]] = [base, {**base, "unknownField": 1}]
    cases += [{k: v for k, v in base.items() if k != name} for name in required]
    for name, sample in itertools.product(definition["properties"], SAMPLES):
        cases.append({**base, name: sample})
    return cases


def test_the_schema_defines_exactly_the_request_types_swamp_answers() -> None:
    assert sorted(DOCUMENT["properties"]["type"]["enum"]) == sorted(REQUEST_TYPES)
    defined = {name for name in DOCUMENT["$defs"] if "." in name}
    assert defined == set(REQUEST_TYPES)
    assert [a["if"]["properties"]["type"]["const"] for a in DOCUMENT["allOf"]] == sorted(REQUEST_TYPES)


@pytest.mark.parametrize("request_type", sorted(REQUEST_TYPES))
def test_the_compiled_check_gives_the_schemas_verdict(request_type: str) -> None:
    cases = _payloads(request_type)
    differ = [
        (case, _swamp_verdict(request_type, case))
        for case in cases
        if _swamp_verdict(request_type, case) != _schema_verdict(request_type, case)
    ]
    assert not differ, f"swamp's verdict (second) differs from the schema's on: {differ[:5]}"
    assert any(_swamp_verdict(request_type, c) for c in cases)
    assert not all(_swamp_verdict(request_type, c) for c in cases)


def test_refusals_name_the_field_and_say_what_is_wanted() -> None:
    check = payloads.request_schemas().check
    with pytest.raises(InvalidRequest, match=r"^payload of 'workflow.get' needs 'workflow'$"):
        check("workflow.get")({"workflow": None})
    with pytest.raises(
        InvalidRequest, match=r"^'limit' in the payload of 'workflow.history' must be an integer$"
    ):
        check("workflow.history")({"limit": 1.5})
    with pytest.raises(InvalidRequest, match=r"unknown field\(s\): colour; valid fields: repoDir, workflow$"):
        check("workflow.get")({"workflow": "w", "colour": "red"})
    with pytest.raises(InvalidRequest, match=r"'claimTimeout' .* must be a finite number$"):
        check("workflow.cancel")({"workflow": "w", "claimTimeout": float("nan")})
    assert check("workflow.history")({"limit": 2.0}) == {"limit": 2}
    assert type(check("workflow.history")({"limit": 2.0})["limit"]) is int


def test_bounds_and_event_kinds_are_the_schemas_and_refused_by_it() -> None:
    from swamp.app.events import KINDS

    kinds = DOCUMENT["$defs"]["events.subscribe"]["properties"]["kinds"]["items"]["enum"]
    assert kinds == list(KINDS)
    check = payloads.request_schemas().check
    with pytest.raises(
        InvalidRequest, match=r"^'timeout' in the payload of 'workflow.watch' must be a finite number >= 0$"
    ):
        check("workflow.watch")({"run": "r", "timeout": -1})
    with pytest.raises(
        InvalidRequest, match=r"^'timeout' in the payload of 'events.subscribe' must be a finite number >= 0$"
    ):
        check("events.subscribe")({"timeout": -0.5})
    with pytest.raises(InvalidRequest, match=r"^'wait_opend' in 'kinds' .* is not one of: wait_opened, "):
        check("events.subscribe")({"kinds": ["wait_opened", "wait_opend"]})
    with pytest.raises(InvalidRequest, match=r"'kinds' .* must be an array of strings$"):
        check("events.subscribe")({"kinds": [1]})
    with pytest.raises(InvalidRequest, match=r"'runs' .* must be an array of non-empty strings$"):
        check("events.subscribe")({"runs": [""]})
    assert check("events.subscribe")({"kinds": [], "runs": ["r"], "timeout": 0}) == {
        "kinds": [],
        "runs": ["r"],
        "timeout": 0,
    }


def test_a_schema_that_says_more_than_the_compiler_checks_is_refused() -> None:
    document = json.loads(json.dumps(DOCUMENT))
    document["$defs"]["workflow.history"]["properties"]["limit"]["multipleOf"] = 2
    with pytest.raises(payloads.SchemaNotCompilable, match="limit"):
        payloads.RequestSchemas(document).check("workflow.history")


def test_the_frame_schema_constrains_a_requests_payload_by_its_type() -> None:
    frame = json.loads((SPEC_SCHEMAS / "frame.schema.json").read_text(encoding="utf-8"))
    sub = {"$ref": "frame.schema.json#/$defs/request"}
    validator = jsonschema.Draft202012Validator(
        sub, registry=_registry().with_resource("frame.schema.json", Resource.from_contents(frame))
    )
    assert validator.is_valid({"type": "workflow.get", "id": "a", "payload": {"workflow": "w"}})
    assert validator.is_valid({"type": "workflow.list", "id": "a"})
    assert not validator.is_valid({"type": "workflow.get", "id": "a"})
    assert not validator.is_valid({"type": "workflow.get", "id": "a", "payload": {"workflow": 5}})
    assert not validator.is_valid({"type": "workflow.list", "id": "a", "payload": {"colour": "red"}})
    assert not validator.is_valid({"type": "workflow.nope", "id": "a"})


def test_swamp_reads_the_spec_schemas_from_its_own_package() -> None:
    """swamp/schemas is spec/schemas (a link in the source tree, copies in a wheel)."""
    assert payloads.SCHEMAS.parent == Path(payloads.__file__).resolve().parents[1]
    for path in SPEC_SCHEMAS.glob("*.json"):
        assert (payloads.SCHEMAS / path.name).read_bytes() == path.read_bytes()


def test_protocol_version_names_the_spec_and_every_request_type() -> None:
    data = handle("protocol.version", {})
    assert data == {
        "spec": (ROOT / "spec" / "VERSION").read_text(encoding="utf-8").strip(),
        "protocol": 1,
        "requestTypes": sorted(REQUEST_TYPES),
    }
