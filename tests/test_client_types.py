"""swamp.client's result types follow spec/schemas/results.schema.json, and the schemas ship with
the package (importlib.resources finds every one; the wheel's package data takes them all).

Real results are validated against the schema in tests/test_client.py; here, without a serve,
every key of each TypedDict must be a property of its schema entry, and the keys the type marks
required must be exactly those the schema always requires (in every branch of a `oneOf`).
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from swamp.client import results, schema

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "spec" / "schemas"
RESULTS = json.loads((SCHEMAS / "results.schema.json").read_text())
DEFS = RESULTS["$defs"]


def shape(entry: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(every property the entry allows, the properties it always requires), through `$ref`s
    within results.schema.json, `allOf` (all apply) and `oneOf`/`anyOf` (one applies)."""
    if "$ref" in entry and entry["$ref"].startswith("#/$defs/"):
        return shape(DEFS[entry["$ref"].removeprefix("#/$defs/")])
    allowed, required = set(entry.get("properties", {})), set(entry.get("required", []))
    for sub in entry.get("allOf", []):
        sub_allowed, sub_required = shape(sub)
        allowed |= sub_allowed
        required |= sub_required
    branches = [shape(sub) for key in ("oneOf", "anyOf") for sub in entry.get(key, [])]
    branches = [b for b in branches if b[0]]  # a branch that only adds `required` narrows nothing
    if branches:
        allowed |= set().union(*(b[0] for b in branches))
        required |= set.intersection(*(b[1] for b in branches))
    return allowed, required


SUBSCRIBE = {"cursor", "outcome"}  # events.subscribe is specified on branch h-events (contracts16.md)


@pytest.mark.parametrize("request_type", sorted(results.RESULT_TYPES))
def test_each_result_type_names_only_properties_of_its_schema_entry(request_type):
    typed = results.RESULT_TYPES[request_type]
    keys = set(typed.__annotations__) | set(typed.__required_keys__) | set(typed.__optional_keys__)
    if request_type not in DEFS:
        assert request_type == "events.subscribe" and keys == SUBSCRIBE
        return
    allowed, required = shape(DEFS[request_type])
    assert keys <= allowed, f"{typed.__name__} has keys the schema does not: {sorted(keys - allowed)}"
    assert typed.__required_keys__ == required, (
        f"{typed.__name__}: required by the type only {sorted(typed.__required_keys__ - required)}, "
        f"by the schema only {sorted(required - typed.__required_keys__)}"
    )


def test_every_result_type_of_the_schema_has_a_typed_result():
    assert set(DEFS["resultType"]["enum"]) <= set(results.RESULT_TYPES)


def test_every_schema_of_the_spec_ships_in_the_package():
    from importlib.resources import files

    shipped = files("swamp").joinpath("schemas")
    spec_files = sorted(p.name for p in SCHEMAS.glob("*.json"))
    assert spec_files and all(shipped.joinpath(name).is_file() for name in spec_files)
    for name in spec_files:
        assert schema(name) == json.loads((SCHEMAS / name).read_text()), name
    assert schema("results") == RESULTS
    with pytest.raises(FileNotFoundError):
        schema("no-such")
    # the wheel takes what the package data names: every schema file matches one of its globs
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = project["tool"]["setuptools"]["package-data"]["swamp"]
    assert all(any(fnmatch.fnmatch(f"schemas/{name}", g) for g in globs) for name in spec_files)
