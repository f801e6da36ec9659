"""The fast meta-schema check (swamp.domain.schemacheck): it vouches for a schema only when Draft
2020-12's meta-schema accepts it, `schema_problems` answers exactly as when it always asked
jsonschema, and the release example's validate, run and resume never import jsonschema.

The property test beside these cases is tests/property/test_prop_schemacheck.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from helpers import SWAMP, clean_env
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from swamp.domain import schemacheck
from swamp.domain.inputs import InputValidationService

RELEASE = Path(__file__).parent.parent / "examples" / "release"
pytestmark = pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
HEAVY = {"jsonschema", "referencing", "attrs", "rpds", "jsonschema_specifications"}


def meta_schema_accepts(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return True


def always_jsonschema(schema: Any) -> list[str]:
    """`schema_problems` as it was before the fast check: jsonschema checks every schema."""
    with mock.patch.object(schemacheck, "meta_valid", lambda _schema: False):
        return InputValidationService().schema_problems(schema)


VOUCHED = [
    True,
    False,
    {},
    {
        "type": "object",
        "properties": {"version": {"type": "string", "default": "1.4.0"}},
        "additionalProperties": False,
    },
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["verdict"],
        "properties": {
            "verdict": {"type": "string", "enum": ["ship", "fix", "abandon"]},
            "note": {"type": "string"},
        },
    },
    {"type": ["string", "null"]},
    {"minLength": 2.0, "maxItems": 0, "minProperties": -0.0, "maxLength": 10**40, "minItems": 1e300},
    {"properties": {"a": True, "b": False}, "items": False, "additionalProperties": True},
    {
        "multipleOf": 0.5,
        "minimum": -1e308,
        "maximum": 10**400,
        "exclusiveMinimum": -3,
        "exclusiveMaximum": 2.5,
    },
    {"enum": [], "const": None, "default": {"$ref": "http://elsewhere"}, "examples": [1, "a", [2]]},
    {"pattern": "^(a+)+$", "patternProperties": {"^x-": {"type": "integer"}}, "format": "whatever"},
    {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#"}}},
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "x",
        "title": "t",
        "description": "d",
    },
    {
        "allOf": [{"type": "object"}],
        "anyOf": [True, {"required": []}],
        "oneOf": [False, {}],
        "not": {"const": 1},
    },
    {"if": {"type": "string"}, "then": {"minLength": 1}, "else": {"type": "integer"}},
    {
        "prefixItems": [{"type": "string"}],
        "contains": {"type": "integer"},
        "minContains": 0,
        "maxContains": 3,
    },
    {"dependentRequired": {"a": ["b", "c"]}, "dependentSchemas": {"a": {"required": ["d"]}}},
    {"propertyNames": {"maxLength": 3}, "unevaluatedProperties": False, "unevaluatedItems": {"type": "null"}},
    {"deprecated": True, "readOnly": False, "writeOnly": True, "uniqueItems": True},
    {
        "contentEncoding": "base64",
        "contentMediaType": "application/json",
        "contentSchema": {"type": "object"},
    },
    {"definitions": {"a": {}}, "items": {"items": {"items": {"type": "array", "maxItems": 2}}}},
    {"minimum": float("nan"), "maximum": float("inf")},  # numbers, to the meta-schema
]

NOT_VOUCHED = [
    # problems the meta-schema finds
    {"type": "text"},
    {"type": []},
    {"type": ["string", "string"]},
    {"type": ["string", 1]},
    {"required": ["a", "a"]},
    {"required": "a"},
    {"required": [1]},
    {"minLength": -1},
    {"minLength": 2.5},
    {"minLength": True},
    {"minLength": "2"},
    {"maxItems": float("inf")},
    {"minimum": "0"},
    {"minimum": True},
    {"multipleOf": 0},
    {"multipleOf": -1},
    {"pattern": "("},
    {"pattern": 1},
    {"patternProperties": {"(": {}}},
    {"properties": {"a": 1}},
    {"properties": {"a": {"type": "nope"}}},
    {"properties": []},
    {"items": []},
    {"items": None},
    {"additionalProperties": "no"},
    {"allOf": []},
    {"anyOf": {}},
    {"not": [True]},
    {"enum": "a"},
    {"examples": "a"},
    {"title": 1},
    {"format": None},
    {"uniqueItems": 1},
    {"$comment": []},
    {"$defs": []},
    {"dependentRequired": {"a": ["b", "b"]}},
    {"$schema": "not a uri"},
    {"properties": {"a": {"items": {"items": {"minItems": -1}}}}},
    # keywords this check leaves to jsonschema, or values it cannot vouch for
    {"$id": "https://example.com/s"},
    {"$anchor": "a"},
    {"$dynamicRef": "#meta"},
    {"dependencies": {"a": ["b"]}},
    {"x-custom": 1},
    {1: {}},
    {"properties": {1: {}}},
    {"$ref": "http://example.com/s"},
    {"$ref": "#/properties/a b"},
    {"$ref": "#anchor"},
    {"pattern": "[[a]"},  # re warns (a possible nested set): jsonschema compiles it and warns, as before
]


@pytest.mark.parametrize("schema", VOUCHED, ids=range(len(VOUCHED)))
def test_what_the_check_vouches_for_the_meta_schema_accepts(schema: Any) -> None:
    assert schemacheck.meta_valid(schema)
    assert meta_schema_accepts(schema)


@pytest.mark.parametrize("schema", NOT_VOUCHED, ids=range(len(NOT_VOUCHED)))
def test_what_the_check_is_not_sure_of_goes_to_jsonschema(schema: Any) -> None:
    assert not schemacheck.meta_valid(schema)
    with mock.patch.object(
        Draft202012Validator, "check_schema", wraps=Draft202012Validator.check_schema
    ) as asked:
        InputValidationService().schema_problems(schema)
    assert asked.call_count == 1


@pytest.mark.parametrize("schema", VOUCHED + NOT_VOUCHED, ids=range(len(VOUCHED + NOT_VOUCHED)))
def test_schema_problems_says_what_it_said_when_jsonschema_checked_every_schema(schema: Any) -> None:
    assert InputValidationService().schema_problems(schema) == always_jsonschema(schema)


def test_local_reference_and_pattern_problems_still_reported_for_a_vouched_schema() -> None:
    schema = {"properties": {"a": {"$ref": "#/$defs/missing"}, "b": {"pattern": "(a)\\1"}}}
    assert schemacheck.meta_valid(schema)  # the meta-schema has nothing against it
    problems = InputValidationService().schema_problems(schema)
    assert problems == always_jsonschema(schema)
    assert [p.split(":")[0] for p in problems] == ["/properties/a/$ref", "/properties/b/pattern"]


def nested(levels: int, wrap: Any) -> Any:
    schema: Any = {"type": "string"}
    for _ in range(levels):
        schema = wrap(schema)
    return schema


@pytest.mark.parametrize(
    "wrap",
    [lambda s: {"properties": {"a": s}}, lambda s: {"items": s}, lambda s: {"allOf": [True, s]}],
    ids=["properties", "items", "allOf"],
)
def test_a_schema_nested_deeper_than_the_bound_goes_to_jsonschema(wrap: Any) -> None:
    """Past MAX_DEPTH levels jsonschema answers (and, some 80 levels on, fails with RecursionError
    as it always did, in `workflow validate` an internal error): the check never turns that into
    a pass."""
    assert schemacheck.meta_valid(nested(schemacheck.MAX_DEPTH, wrap))
    assert not schemacheck.meta_valid(nested(schemacheck.MAX_DEPTH + 1, wrap))
    assert not schemacheck.meta_valid(nested(5000, wrap))
    deep = nested(150, wrap)
    with pytest.raises(RecursionError):
        always_jsonschema(deep)
    with pytest.raises(RecursionError):
        InputValidationService().schema_problems(deep)


# -- the release example never imports jsonschema ---------------------------------------------------


def imported(done: subprocess.CompletedProcess[str]) -> set[str]:
    """Top-level package names of every module `-X importtime` reported."""
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name.split(".")[0])
    return names


def swamp_importtime(repo: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(SWAMP), *args],
        cwd=repo,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, imported(done)


@pytest.mark.cli
def test_release_example_validate_run_and_resume_import_no_jsonschema(tmp_path: Path) -> None:
    import json

    repo = tmp_path / "release"
    shutil.copytree(RELEASE, repo)
    done, _ = swamp_importtime(repo, "repo", "init", ".")
    assert done.returncode == 0, done.stderr[-2000:]
    commands = [
        ("workflow", "validate", "release"),
        ("workflow", "validate", "release", "--json"),
        ("workflow", "run", "release", "--json"),  # the input's default
        ("workflow", "run", "release", "--json", "--input", "version=2.0.0"),
    ]
    runs = []
    for args in commands:
        done, names = swamp_importtime(repo, *args)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        assert names, "no -X importtime output"
        assert "swamp" in names and not names & HEAVY, (args, sorted(names & HEAVY))
        if args[1] == "run":
            document = json.loads(done.stdout)
            assert document["status"] == "suspended"
            runs.append(document["id"])
    waits = json.loads(swamp_importtime(repo, "workflow", "waits", "--json")[0].stdout)
    for run_id in runs:
        [wait_id] = [w["waitId"] for w in waits["waits"] if w["runId"] == run_id]
        done, names = swamp_importtime(repo, "workflow", "signal", wait_id, "--payload", '{"verdict":"ship"}')
        assert done.returncode == 0 and not names & HEAVY, (done.stderr[-2000:], sorted(names & HEAVY))
    for run_id, extra in zip(runs, [(), ("--input", "version=2.0.1")], strict=True):
        done, names = swamp_importtime(
            repo, "workflow", "resume", "release", "--run", run_id, "--json", *extra
        )
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        assert json.loads(done.stdout)["status"] == "succeeded"
        assert not names & HEAVY, sorted(names & HEAVY)


def test_a_pattern_re_warns_about_is_never_vouched_for_even_once_re_cached_it() -> None:
    import re
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        re.compile("[[b]")  # as jsonschema does when it validates a payload: now in re's cache
    assert not schemacheck.meta_valid({"pattern": "[[b]"})
    assert not schemacheck.meta_valid({"pattern": "[[b]"})
