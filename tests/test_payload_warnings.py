"""validate's payload-path warnings (WF-034 .. WF-036), on the domain function that makes them.

Each test builds a workflow with one wait whose schema is the point, and expressions that read
its payload; `payload_warnings` must name exactly the paths the schema lets be absent and that no
`has()` in the same expression guards.
"""

from __future__ import annotations

from typing import Any

import pytest

from swamp.domain.celtree import tree_of
from swamp.domain.definition import parse_workflow
from swamp.domain.errors import ExpressionError
from swamp.domain.expressions import ExpressionEngine
from swamp.domain.payloadpaths import payload_warnings

P = "steps.review.outputs.payload"


@pytest.fixture(scope="module")
def engine() -> ExpressionEngine:
    return ExpressionEngine()


def wait(schema: Any, name: str = "review", **step: Any) -> dict[str, Any]:
    return {"name": name, "task": {"type": "wait_for_signal", "timeout": 60, "schema": schema}, **step}


def reader(name: str, *expressions: str, **step: Any) -> dict[str, Any]:
    run = " ".join("${{ " + e + " }}" for e in expressions)
    task = {"type": "model_method", "modelIdOrName": "sh", "methodName": "execute", "inputs": {"run": run}}
    return {"name": name, "task": task, **step}


def warned(engine: ExpressionEngine, schema: Any, *expressions: str) -> list[str]:
    """The paths warned about when a step after the wait reads `expressions`."""
    workflow = parse_workflow(
        {
            "id": "10000000-0000-4000-8000-000000000001",
            "name": "w",
            "jobs": [{"name": "main", "steps": [wait(schema), reader("use", *expressions)]}],
        }
    )
    return [w.path for w in payload_warnings(workflow, engine)]


OBJECT = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"type": "string"}, "who": {}}}


def test_a_required_path_gives_no_warning(engine):
    assert warned(engine, OBJECT, f'{P}.verdict == "ship"', f'{P}["verdict"]') == []


def test_an_optional_path_gives_a_warning(engine):
    assert warned(engine, OBJECT, f'{P}.who == "x"') == [f"{P}.who"]


def test_a_nested_path_needs_required_at_every_level(engine):
    nested = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {
                "type": "object",
                "required": ["b"],
                "properties": {"b": {"type": "object", "required": ["c"], "properties": {"d": {}}}},
            }
        },
    }
    assert warned(engine, nested, f"{P}.a.b.c") == []
    assert warned(engine, nested, f"{P}.a.b.d") == [f"{P}.a.b.d"]
    middle_optional = {**nested, "required": []}
    assert warned(engine, middle_optional, f"{P}.a.b.c") == [f"{P}.a.b.c"]


def test_required_is_not_enough_when_the_parent_may_be_another_type(engine):
    loose = {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": ["object", "null"], "required": ["b"]}},
    }
    assert warned(engine, loose, f"{P}.a.b") == [f"{P}.a.b"]
    untyped = {"type": "object", "required": ["a"]}  # `a` may be any value
    assert warned(engine, untyped, f"{P}.a") == []
    assert warned(engine, untyped, f"{P}.a.b") == [f"{P}.a.b"]
    assert warned(engine, True, f"{P}.a") == [f"{P}.a"]
    assert warned(engine, {}, f"{P}.a") == [f"{P}.a"]


def test_has_in_the_same_expression_guards_the_path(engine):
    assert warned(engine, OBJECT, f'has({P}.who) && {P}.who == "x"') == []
    assert warned(engine, OBJECT, f'!has({P}.who) || {P}.who == "x"') == []
    # a has() in another expression of the step does not
    assert warned(engine, OBJECT, f"has({P}.who)", f'{P}.who == "x"') == [f"{P}.who"]


def test_has_must_cover_every_optional_level(engine):
    both = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}}}}}
    assert warned(engine, both, f"has({P}.a) && has({P}.a.b) && {P}.a.b == 1") == []
    # has(P.a.b) reads P.a, which may itself be absent: both reads are warned about
    assert warned(engine, both, f"has({P}.a.b) && {P}.a.b == 1") == [f"{P}.a", f"{P}.a.b"]


def test_a_step_that_is_no_wait_the_payload_itself_and_the_signal_give_nothing(engine):
    workflow = parse_workflow(
        {
            "id": "10000000-0000-4000-8000-000000000001",
            "name": "w",
            "jobs": [
                {
                    "name": "main",
                    "steps": [
                        wait(OBJECT),
                        reader("build", "1"),
                        reader("use", "steps.build.outputs.payload.x", P, "steps.review.outputs.signal.id"),
                    ],
                }
            ],
        }
    )
    assert payload_warnings(workflow, engine) == []


def test_anyof_and_refs_guarantee_what_every_branch_guarantees(engine):
    branches = {
        "$defs": {"base": {"type": "object", "required": ["kind"]}},
        "anyOf": [
            {"$ref": "#/$defs/base", "required": ["a"]},
            {"allOf": [{"$ref": "#/$defs/base"}], "required": ["b"]},
        ],
    }
    assert warned(engine, branches, f"{P}.kind") == []
    assert warned(engine, branches, f"{P}.a") == [f"{P}.a"]
    impossible_branch = {"type": "object", "required": ["kind"], "oneOf": [{"required": ["a"]}, False]}
    assert warned(engine, impossible_branch, f"{P}.a") == []


def test_indexes_need_an_array_with_enough_items(engine):
    listing = {"type": "object", "required": ["l"], "properties": {"l": {"type": "array", "minItems": 2}}}
    assert warned(engine, listing, f"{P}.l[1]") == []
    assert warned(engine, listing, f"{P}.l[2]") == [f"{P}.l[2]"]


def test_the_warning_names_the_place_the_reason_and_the_fix(engine):
    workflow = parse_workflow(
        {
            "id": "10000000-0000-4000-8000-000000000001",
            "name": "w",
            "jobs": [
                {"name": "gate", "steps": [wait(OBJECT)]},
                {"name": "later", "steps": [reader("use", "1", guard="${{ " + f'{P}.who == "x"' + " }}")]},
            ],
        }
    )
    (warning,) = payload_warnings(workflow, engine)
    doc = warning.to_dict()
    assert (doc["job"], doc["step"], doc["field"], doc["path"]) == ("later", "use", "guard", f"{P}.who")
    assert "'who'" in doc["reason"] and "required" in doc["reason"]
    assert doc["fix"] == f'has({P}.who) && {P}.who == "x"'
    assert "job 'later' step 'use' guard" in doc["message"]


def fixes(engine: ExpressionEngine, guard: str) -> list[str]:
    workflow = parse_workflow(
        {
            "id": "10000000-0000-4000-8000-000000000001",
            "name": "w",
            "jobs": [
                {"name": "main", "steps": [wait(OBJECT), reader("use", "1", guard="${{ " + guard + " }}")]}
            ],
        }
    )
    return [w.to_dict()["fix"] for w in payload_warnings(workflow, engine)]


def test_the_fix_of_a_negative_test_keeps_it_true_when_the_path_is_absent(engine):
    # "anything but x" holds when nothing was sent: has() && ... would turn it false.
    assert fixes(engine, f'{P}.who != "x"') == [f'!has({P}.who) || {P}.who != "x"']
    assert fixes(engine, f'!({P}.who == "x")') == [f'!has({P}.who) || !({P}.who == "x")']
    assert fixes(engine, f'{P}.who == "x"') == [f'has({P}.who) && {P}.who == "x"']


def test_an_expanded_foreach_name_means_its_template(engine):
    workflow = parse_workflow(
        {
            "id": "10000000-0000-4000-8000-000000000001",
            "name": "w",
            "jobs": [
                {
                    "name": "main",
                    "steps": [
                        wait(OBJECT, forEach={"item": "r", "in": '${{ ["eu", "us"] }}'}),
                        reader(
                            "use",
                            'steps["review-eu"].outputs.payload.who',
                            'steps["review-eu"].outputs.payload.verdict',
                        ),
                    ],
                }
            ],
        }
    )
    assert [w.path for w in payload_warnings(workflow, engine)] == ['steps["review-eu"].outputs.payload.who']


def test_a_schema_that_is_no_valid_schema_gives_no_crash(engine):
    # the `Wait schemas` check fails such a workflow; the warnings must still be computed
    assert warned(engine, {"type": 5, "allOf": 3, "required": "who"}, f"{P}.who") == [f"{P}.who"]
    assert warned(engine, {"type": "object", "required": ["a"], "$ref": "#/nowhere"}, f"{P}.a") == []
    recursive = {
        "type": "object",
        "anyOf": [{"$ref": "#"}, {"required": ["a"]}],
        "properties": {"a": {"$ref": "#"}},
    }
    assert warned(engine, recursive, f"{P}.a.a.b") == []  # too complex to tell: nothing said


def test_an_unreadable_tree_is_an_expression_error():
    with pytest.raises(ExpressionError):
        tree_of(b"\x0a\x05hello\x12\x03\xff\xff\xff")
