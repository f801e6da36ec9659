"""spec/schemas says what swamp emits, whole: every error code with its exit code, a result schema
for every request type, an event schema for every event, an index entry for every --json command.

These read swamp's code (the error classes, the request table, the executor's emits, the click
tree) and the schema files, and fail when either side has something the other lacks; the
conformance suite checks that the documents swamp writes match the schemas.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest

import swamp
from swamp.domain import errors as error_module
from swamp.domain.errors import SwampError
from swamp.protocol.requests import REQUEST_TYPES
from swamp.protocol.serve import SERVE_TYPES

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "spec" / "schemas"
SOURCE = Path(swamp.__file__).resolve().parent

# The keywords a schema may use (conformance/README.md, Schemas): what the Node runner validates.
KEYWORDS = {
    "$ref", "$defs", "type", "properties", "required", "additionalProperties", "items", "prefixItems",
    "enum", "const", "oneOf", "anyOf", "allOf", "not", "if", "then", "else", "pattern", "minLength",
    "maxLength", "minimum", "maximum", "exclusiveMinimum", "minItems", "maxItems", "uniqueItems",
    "patternProperties", "propertyNames", "title", "description", "$schema", "$id", "$comment",
    "examples", "default",
}  # fmt: skip
# Keywords whose value is a map of names to schemas, or a list of schemas, or one schema.
SCHEMA_MAPS = {"$defs", "properties", "patternProperties"}
SCHEMA_LISTS = {"prefixItems", "oneOf", "anyOf", "allOf"}
SCHEMA_ONE = {"additionalProperties", "items", "not", "if", "then", "else", "propertyNames"}


def load(name: str) -> Any:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


def swamp_sources() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def raised_codes() -> dict[str, int]:
    """Every error code swamp can raise, with its exit code: each SwampError class's `code`, and
    each `code="..."` given to one where it is raised."""
    for module in pkgutil.walk_packages([str(SOURCE)], "swamp."):
        if module.name.startswith("swamp.cli") or module.name == "swamp.__main__":
            continue  # click commands: nothing they raise is missing from the other modules
        importlib.import_module(module.name)
    classes: dict[str, type[SwampError]] = {}
    todo: list[type[SwampError]] = [SwampError]
    while todo:
        cls = todo.pop()
        classes[cls.__name__] = cls
        todo += cls.__subclasses__()
    codes = {cls.code: cls.exit_code for cls in classes.values()}
    for path in swamp_sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                    name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                    assert name in classes, f"{path}: code={keyword.value.value!r} given to {name}"
                    codes[keyword.value.value] = classes[name].exit_code
    return codes


def emitted_events() -> set[str]:
    """Every event kind swamp can emit: `_emit("kind", ...)` and `{"event": "kind", ...}`."""
    kinds: set[str] = set()
    for path in swamp_sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "_emit":
                first = node.args[0]
                if isinstance(first, ast.Constant):
                    kinds.add(first.value)
                elif isinstance(first, ast.IfExp):  # "run_resumed" if resumed else "run_started"
                    kinds |= {n.value for n in (first.body, first.orelse) if isinstance(n, ast.Constant)}
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "event"
                        and isinstance(value, ast.Constant)
                        and isinstance(value.value, str)
                    ):
                        kinds.add(value.value)
    return kinds


def test_every_error_code_swamp_raises_is_registered_with_its_exit_code_and_nothing_else_is():
    registry = {code: entry["exit"] for code, entry in load("errors.json")["codes"].items()}
    assert registry == raised_codes()


def test_the_error_schema_is_generated_from_the_registry():
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "error-schema"), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    assert load("errors.schema.json")["$defs"]["code"]["enum"] == list(load("errors.json")["codes"])


def test_every_request_type_has_a_result_schema():
    results = load("results.schema.json")["$defs"]
    types = set(REQUEST_TYPES) | SERVE_TYPES
    assert types - set(results) == set()
    assert types - set(results["resultType"]["enum"]) == set()
    applied = {rule["if"]["properties"]["type"]["const"] for rule in results["byType"]["allOf"]}
    assert applied == set(results["resultType"]["enum"])


def test_every_event_swamp_emits_has_a_schema_and_every_schema_is_emitted():
    events = load("events.schema.json")["$defs"]
    kinds = set(events["event"]["properties"]["event"]["enum"])
    assert kinds == emitted_events()
    applied = {rule["if"]["properties"]["event"]["const"] for rule in events["event"]["allOf"]}
    assert applied == kinds and kinds <= set(events)


def json_commands(command: click.Command, words: tuple[str, ...] = ()) -> set[str]:
    """The words of every command that takes --json (a group's subcommands, recursively)."""
    found: set[str] = set()
    if isinstance(command, click.Group):  # a lazy group loads a subcommand when asked for it
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            found |= json_commands(sub, (*words, name))
    elif any("--json" in getattr(p, "opts", ()) for p in command.params):
        found.add(" ".join(words))
    return found


def test_the_index_maps_every_json_command_to_a_schema_and_no_other():
    from swamp.cli.main import cli

    commands = json_commands(cli)
    assert "workflow history" in commands and "workflow wait show" in commands
    commands.add("workflow history get")  # `history get RUN` is the history command's other form
    index = load("index.json")
    assert set(index["commands"]) == commands


def test_every_reference_of_the_index_resolves():
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    registry = Registry().with_resources(  # type: ignore[var-annotated]
        (path.name, DRAFT202012.create_resource(json.loads(path.read_text())))
        for path in SCHEMAS.glob("*.schema.json")
    )
    index = load("index.json")
    refs = [index["frame"], index["errorDocument"], *index["commands"].values()]
    refs += [entry["schema"] for entry in index["files"]]
    resolver = registry.resolver()
    for ref in refs:
        resolver.lookup(ref)  # raises when the reference leads nowhere


SCHEMA_FILES = sorted(p.name for p in SCHEMAS.glob("*.schema.json"))
# the schemas of what swamp writes (workflow.schema.json, of what it reads, is checked with it)
EMITTED = {
    "frame.schema.json",
    "results.schema.json",
    "events.schema.json",
    "errors.schema.json",
    "run-record.schema.json",
}


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_each_schema_is_draft_2020_12_named_by_its_file_with_only_the_portable_keywords(name):
    schema = load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    if name in EMITTED:
        assert schema["$id"] == name

    def walk(node: Any, at: str) -> None:
        if isinstance(node, bool):
            return
        assert isinstance(node, dict), at
        unknown = set(node) - KEYWORDS
        assert not unknown, f"{name} {at}: keywords outside the portable set: {sorted(unknown)}"
        for key, value in node.items():
            if key in SCHEMA_MAPS:
                for sub, child in value.items():
                    walk(child, f"{at}/{key}/{sub}")
            elif key in SCHEMA_LISTS:
                for i, child in enumerate(value):
                    walk(child, f"{at}/{key}/{i}")
            elif key in SCHEMA_ONE:
                walk(value, f"{at}/{key}")

    if name in EMITTED:
        walk(schema, "")


def test_the_registry_details_are_schemas_of_objects():
    for code, entry in load("errors.json")["codes"].items():
        jsonschema.Draft202012Validator.check_schema(entry["details"])
        assert entry["details"].get("type") == "object", code
        assert entry["exit"] in (1, 2, 3, 75), code
        assert entry["meaning"].strip(), code


def test_error_classes_keep_their_codes_in_the_module_that_defines_them():
    """A sanity check of the reader above: it finds the classes of errors.py and their exits."""
    codes = raised_codes()
    assert codes["claim_timeout"] == error_module.EXIT_RETRY
    assert codes["usage_error"] == error_module.EXIT_USAGE
    assert codes["not_in_flight"] == error_module.EXIT_REFUSED
