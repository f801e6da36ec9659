"""Workflow inputs: --input parsing, coercion to declared types, defaults, validation, no record."""

from __future__ import annotations

import pytest
from helpers import echo, job, sh, step_of

from swamp.domain.errors import InputInvalid
from swamp.domain.inputs import InputValidationService

SCHEMA = {
    "type": "object",
    "properties": {
        "env": {"type": "string", "enum": ["dev", "prod"]},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "cfg": {
            "type": "object",
            "properties": {"region": {"type": "string"}, "zone": {"type": "string"}},
            "additionalProperties": False,
        },
        "meta": {"type": "object"},
        "code": {"type": "string"},
        "level": {"type": "integer", "default": 5},
    },
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def inputs_repo(shared_repo):
    shared_repo.write_workflow("inputs", [job("main", echo("show", {"all": "${{ inputs }}"}))], inputs=SCHEMA)
    return shared_repo


@pytest.mark.cli
def test_cli_inputs_are_coerced_to_declared_types(inputs_repo):
    code, _out, err, doc = inputs_repo.swamp(
        "workflow", "run", "inputs",
        "--input", "env=prod",
        "--input", "count=3",
        "--input", "ratio=1.5",
        "--input", "flag=true",
        "--input", 'tags=["a","b"]',
        "--input", "cfg.region=eu",
        "--input", 'meta:json={"n": 1, "ok": true}',
        "--input", "code=007",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    expected = {
        "env": "prod",
        "count": 3,
        "ratio": 1.5,
        "flag": True,
        "tags": ["a", "b"],
        "cfg": {"region": "eu"},
        "meta": {"n": 1, "ok": True},
        "code": "007",
        "level": 5,
    }
    assert doc["inputs"] == expected
    assert step_of(doc, "main", "show")["outputs"]["args"]["all"] == expected


@pytest.mark.cli
def test_input_file_is_deep_merged_under_cli_inputs(inputs_repo, tmp_path):
    file = tmp_path / "inputs.yaml"
    file.write_text("env: dev\ncount: 2\ncfg:\n  region: us\n  zone: a\n", encoding="utf-8")
    code, _out, err, doc = inputs_repo.swamp(
        "workflow", "run", "inputs", "--input-file", str(file), "--input", "env=prod",
        "--input", "cfg.region=eu", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert doc["inputs"] == {"env": "prod", "count": 2, "cfg": {"region": "eu", "zone": "a"}, "level": 5}


@pytest.mark.cli
def test_invalid_inputs_log_mode_lists_every_problem_and_writes_no_record(repo):
    repo.write_workflow("strict", [job("main", sh("s", "touch ran"))], inputs=SCHEMA)
    code, out, err, _ = repo.swamp(
        "workflow", "run", "strict", "--input", "env=qa", "--input", "count=lots", "--input", "flag=maybe"
    )
    assert code == 3
    assert "Input validation failed" in err
    for pointer in ("/env", "/count", "/flag"):
        assert pointer in err
    assert "input_invalid" in err
    assert "Traceback" not in out + err
    assert repo.run_files() == []
    assert not (repo.root / "ran").exists()


@pytest.mark.cli
def test_malformed_input_flag_is_a_usage_error(inputs_repo):
    code, _out, _err, body = inputs_repo.swamp(
        "workflow", "run", "inputs", "--input", "no-equals-sign", "--json"
    )
    assert code == 2
    assert body["error"]["code"] == "usage_error"
    assert "key=value" in body["error"]["message"]


def test_defaults_fill_only_absent_inputs(inputs_repo):
    assert inputs_repo.run("inputs")["inputs"] == {"level": 5}
    assert inputs_repo.run("inputs", {"level": 9})["inputs"] == {"level": 9}


def test_inputs_failure_raises_input_invalid_with_each_error_and_no_record(repo):
    repo.write_workflow("strict2", [job("main", sh("s", "true"))], inputs={**SCHEMA, "required": ["env"]})
    with pytest.raises(InputInvalid) as info:
        repo.run("strict2", {"count": "x", "tags": "not-json", "cfg": {"region": 1, "extra": "y"}})
    error = info.value
    assert error.code == "input_invalid"
    assert error.exit_code == 3
    assert error.message.startswith("Input validation failed:")
    pointers = sorted(e["pointer"] for e in error.details["errors"])
    # missing env, count, tags, cfg.region, and cfg's extra key: each the member at fault (WAIT-023)
    assert pointers == ["/cfg/extra", "/cfg/region", "/count", "/env", "/tags"]
    assert repo.run_files() == []


def test_workflow_without_an_inputs_schema_passes_inputs_through(shared_repo):
    shared_repo.write_workflow("untyped", [job("main", echo("show", {"n": "${{ inputs.n }}"}))])
    doc = shared_repo.run("untyped", {"n": "3"})
    assert doc["inputs"] == {"n": "3"}
    assert step_of(doc, "main", "show")["outputs"]["args"] == {"n": "3"}


def test_input_values_are_data_never_evaluated(shared_repo):
    shared_repo.write_workflow(
        "data-only",
        [job("main", echo("show", {"whole": "${{ inputs.msg }}", "text": "got ${{ inputs.msg }}"}))],
    )
    doc = shared_repo.run("data-only", {"msg": "${{ run.id }}"})
    assert step_of(doc, "main", "show")["outputs"]["args"] == {
        "whole": "${{ run.id }}",
        "text": "got ${{ run.id }}",
    }


def test_flat_inputs_schema_is_honoured_or_refused(shared_repo):
    shared_repo.write_workflow(
        "flat", [job("main", sh("s", "touch flat-ran"))], inputs={"env": {"type": "string", "enum": ["dev"]}}
    )
    try:
        doc = shared_repo.run("flat", {"env": "prod"})
    except InputInvalid:
        return  # honoured
    except Exception as exc:  # refused as an invalid workflow: also acceptable
        assert getattr(exc, "code", None) == "workflow_invalid"
        return
    raise AssertionError(f"env=prod violates enum [dev] but the run went ahead: {doc['status']}")


# -- coercion units ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "text", "expected"),
    [
        ("integer", "42", 42),
        ("integer", "-7", -7),
        ("number", "2.5", 2.5),
        ("number", "10", 10.0),  # a double, so CEL arithmetic with doubles works
        ("boolean", "true", True),
        ("boolean", "false", False),
        ("boolean", "yes", "yes"),  # only true/false convert
        ("integer", "ten", "ten"),  # left for validation to refuse
        ("array", "[1, 2]", [1, 2]),
        ("array", '{"a": 1}', '{"a": 1}'),  # wrong shape: left as text
        ("object", '{"a": 1}', {"a": 1}),
        ("string", "12", "12"),
    ],
)
def test_coerce_top_level_strings(declared, text, expected):
    schema = {"type": "object", "properties": {"v": {"type": declared}}}
    out = InputValidationService.coerce({"v": text}, schema)
    assert out["v"] == expected
    assert type(out["v"]) is type(expected)


def test_coerce_leaves_nested_values_alone():
    schema = {
        "type": "object",
        "properties": {"cfg": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    assert InputValidationService.coerce({"cfg": {"n": "3"}}, schema) == {"cfg": {"n": "3"}}


def test_schema_errors_point_at_the_member_on_both_validation_paths():
    """WAIT-023 / INPUT-005: `/extra` for an unexpected member, the missing member's pointer for
    `required`, whether the fast validator or jsonschema checks the schema (`not` is jsonschema's)."""
    from swamp.domain import fastschema
    from swamp.domain.inputs import InputValidationService

    fast = {
        "type": "object",
        "required": ["a", "b"],
        "additionalProperties": False,
        "properties": {"a": {"type": "integer"}, "b": {}, "n": {"type": "object", "required": ["id"]}},
    }
    slow = {**fast, "properties": {**fast["properties"], "c": {"not": {"type": "string"}}}}
    assert fastschema.supported(fast) and not fastschema.supported(slow)
    value = {"x": 1, "y": 2, "a": "s", "n": {}}
    for schema in (fast, slow):
        got = [(p.pointer, p.message) for p in InputValidationService().problems(value, schema)]
        assert got == [
            ("/a", "'s' is not of type 'integer'"),
            ("/b", "'b' is a required property"),
            ("/n/id", "'id' is a required property"),
            ("/x", "Additional properties are not allowed ('x' was unexpected)"),
            ("/y", "Additional properties are not allowed ('y' was unexpected)"),
        ]
