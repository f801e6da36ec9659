"""Pure domain units: JS truthiness, substitution rules, topological levels and cycles."""

from __future__ import annotations

import math

import pytest

from swamp.domain.errors import ExpressionError, WorkflowInvalid
from swamp.domain.expressions import ExpressionEngine, Scope, is_truthy, js_string, whole_expression
from swamp.domain.graph import Node, find_cycle, topological_levels


@pytest.fixture(scope="module")
def engine():
    return ExpressionEngine()


@pytest.mark.parametrize(
    ("value", "truthy"),
    [
        ([], True),
        ({}, True),
        ([0], True),
        ("0", True),
        ("false", True),
        (True, True),
        (-1, True),
        (0.5, True),
        (0, False),
        (0.0, False),
        (-0.0, False),
        ("", False),
        (None, False),
        (False, False),
        (math.nan, False),
    ],
    ids=repr,
)
def test_is_truthy_follows_javascript(value, truthy):
    assert is_truthy(value) is truthy


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (True, "true"),
        (False, "false"),
        (3, "3"),
        (2.0, "2"),
        (1.5, "1.5"),
        ("x", "x"),
        ({"a": [1, None]}, '{\n  "a": [\n    1,\n    null\n  ]\n}'),
        ([1, 2], "[\n  1,\n  2\n]"),
    ],
    ids=repr,
)
def test_js_string(value, text):
    assert js_string(value) == text


def test_whole_expression_detection():
    assert whole_expression("${{ inputs.x }}") == "inputs.x"
    assert whole_expression("  ${{inputs.x}}  ") == "inputs.x"
    assert whole_expression("a ${{ inputs.x }}") is None
    assert whole_expression("${{ a }}${{ b }}") is None
    assert whole_expression("plain") is None


def test_whole_string_expression_keeps_its_type(engine):
    scope = Scope({"inputs": {"n": 3, "cfg": {"a": [1, 2]}, "flag": False, "nothing": None}})
    assert engine.render_text("${{ inputs.n }}", scope) == 3
    assert engine.render_text("${{ inputs.cfg }}", scope) == {"a": [1, 2]}
    assert engine.render_text(" ${{ inputs.flag }} ", scope) is False
    assert engine.render_text("${{ inputs.nothing }}", scope) is None
    assert engine.render_text("${{ inputs.n * 2 }}", scope) == 6


def test_embedded_expressions_are_stringified(engine):
    scope = Scope({"inputs": {"n": 3, "cfg": {"a": 1}, "flag": True, "nothing": None}})
    assert engine.render_text("n=${{ inputs.n }}", scope) == "n=3"
    assert engine.render_text("[${{ inputs.nothing }}]", scope) == "[]"
    assert engine.render_text("cfg=${{ inputs.cfg }}", scope) == 'cfg={\n  "a": 1\n}'
    assert engine.render_text("${{ inputs.flag }}!", scope) == "true!"
    assert engine.render_text("${{ inputs.n }}-${{ inputs.n }}", scope) == "3-3"


def test_render_walks_mappings_and_lists(engine):
    scope = Scope({"inputs": {"n": 1}})
    value = {"a": ["${{ inputs.n }}", "x${{ inputs.n }}"], "b": {"c": "${{ inputs.n + 1 }}"}, "d": 5}
    assert engine.render(value, scope) == {"a": [1, "x1"], "b": {"c": 2}, "d": 5}


def test_expression_errors_are_expression_errors(engine):
    with pytest.raises(ExpressionError):
        engine.evaluate("inputs.missing", Scope({"inputs": {}}))
    with pytest.raises(ExpressionError):
        engine.compile("inputs.(")
    with pytest.raises(ExpressionError):
        engine.evaluate("1 / 0", Scope({}))


def test_context_names_are_available(engine):
    scope = Scope(
        {
            "inputs": {"a": 1},
            "self": {"item": "x"},
            "run": {"id": "r"},
            "env": {"HOME": "/h"},
            "steps": {"s": {"status": "succeeded", "outputs": {"v": 2}}},
        }
    )
    src = "[inputs.a, self.item, run.id, env.HOME, steps.s.status, steps.s.outputs.v]"
    assert engine.evaluate(src, scope) == [1, "x", "r", "/h", "succeeded", 2]


# -- graph -----------------------------------------------------------------------------------------


def names(levels):
    return [[n.name for n in level] for level in levels]


def test_levels_sort_by_weight_then_name():
    nodes = [Node("c"), Node("a", weight=5), Node("b"), Node("d", depends_on=("a",)), Node("e", -1, ("a",))]
    assert names(topological_levels(nodes)) == [["b", "c", "a"], ["e", "d"]]


def test_unknown_dependencies_are_ignored_by_the_sort():
    assert names(topological_levels([Node("a", depends_on=("ghost",))])) == [["a"]]


def test_cycle_path_and_error():
    nodes = [Node("a", depends_on=("b",)), Node("b", depends_on=("a",)), Node("c")]
    assert find_cycle(nodes) == ["a", "b", "a"]
    with pytest.raises(WorkflowInvalid) as info:
        topological_levels(nodes)
    assert info.value.message == "Cyclic dependency detected: a -> b -> a"
    assert find_cycle([Node("a"), Node("b", depends_on=("a",))]) is None


def test_duplicate_nodes_are_refused():
    with pytest.raises(WorkflowInvalid) as info:
        topological_levels([Node("a"), Node("a")])
    assert "Duplicate node names: a" in info.value.message
