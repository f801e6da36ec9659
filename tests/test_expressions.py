"""Pure domain units: JS truthiness, substitution rules, topological levels and cycles."""

from __future__ import annotations

import math

import pytest

from swamp.domain.errors import ExpressionError, WorkflowInvalid
from swamp.domain.expressions import (
    ExpressionEngine,
    Scope,
    cel_view,
    is_truthy,
    js_string,
    plain_path,
    whole_expression,
)
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


# -- plain paths (EXPR-015) and the CEL view (EXPR-016) -------------------------------------------


def same_kind(a, b):
    """Equal, and of the same Python types all the way down (1 is not 1.0 or True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_kind(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_kind(x, y) for x, y in zip(a, b, strict=True))
    return a == b


ODD = {"n": 2**64, "neg": -(10**400), "s": "a\x00b", "k\x00ey": ["\x00", 2**63 - 1], "z": -0.0, "a": 1.0}


def odd_scope():
    payload = {"verdict": "ship\x00x", **ODD}
    return Scope({"steps": {"review": {"status": "succeeded", "outputs": {"payload": payload}}}})


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("inputs", ("inputs", ())),
        ("steps.review.outputs.payload", ("steps", ("review", "outputs", "payload"))),
        ('self.item["a b"][0]', ("self", ("item", "a b", 0))),
        ("inputs [ 'x' ] . y [ 12 ]", ("inputs", ("x", "y", 12))),
        ('steps["deploy-eu"].outputs', ("steps", ("deploy-eu", "outputs"))),
        ("inputs.x + 1", None),
        ("(inputs.x)", None),
        ("other.x", None),
        (".inputs.x", None),
        ("inputs.x.", None),
        ("inputs.in", None),
        ("inputs.null", None),
        ("inputs.as", None),
        ("inputs.let", None),
        ("inputs[01]", None),
        ("inputs[-1]", None),
        ("inputs[1u]", None),
        ("inputs[99999999999999999999]", None),
        ('inputs["a\\"b"]', None),
        ('inputs["""a"""]', None),
        ('inputs[r"a"]', None),
    ],
    ids=repr,
)
def test_plain_paths_are_recognised(source, expected):
    assert plain_path(source) == expected


def test_a_plain_path_reads_the_stored_value_exactly(engine):
    scope = odd_scope()
    payload = engine.evaluate("steps.review.outputs.payload", scope)
    stored = scope.variables["steps"]["review"]["outputs"]["payload"]
    assert same_kind(payload, stored) and list(payload) == list(stored)  # key order kept
    assert math.copysign(1, payload["z"]) == -1
    assert engine.evaluate("steps.review.outputs.payload.n", scope) == 2**64
    assert engine.evaluate('steps["review"].outputs.payload["k\x00ey"][0]', scope) == "\x00"
    assert engine.render_text("${{ steps.review.outputs.payload.s }}", scope) == "a\x00b"
    assert engine.render_text("n=${{ steps.review.outputs.payload.neg }}", scope) == f"n={-(10**400)}"
    payload["s"] = "changed"  # a copy: the caller may change it, the record must not
    assert stored["s"] == "a\x00b"


def test_a_plain_path_gives_what_cel_gives_on_ordinary_data(engine):
    scope = Scope(
        {
            "inputs": {
                "n": 3,
                "f": 1.0,
                "b": False,
                "none": None,
                "l": [1, 2.5, {"k": "v"}],
                "big": 2**64 - 1,
            },
            "self": {"item": {"a b": ["x"]}},
            "env": {"HOME": "/h"},
        }
    )
    paths = (
        "inputs inputs.n inputs.f inputs.b inputs.none inputs.l inputs.l[2].k inputs.big self env run steps"
    )
    for path in [*paths.split(), 'self.item["a b"][0]']:
        assert plain_path(path) is not None
        assert same_kind(engine.evaluate(path, scope), engine.evaluate(f"({path})", scope)), path


@pytest.mark.parametrize(
    "source",
    [
        "inputs.missing",
        "inputs.l[5]",
        "inputs.l.a",
        "inputs.n.x",
        'inputs["missing"]',
        "inputs[0]",
        "inputs.l['a']",
        "steps.nope.outputs",
    ],
)
def test_a_plain_path_that_misses_fails_as_cel_does(engine, source):
    scope = Scope({"inputs": {"n": 1, "l": [1, 2]}})
    with pytest.raises(ExpressionError) as fast:
        engine.evaluate(source, scope)
    with pytest.raises(ExpressionError) as cel:
        engine.evaluate(f"({source})", scope)
    assert fast.value.message == cel.value.message
    assert fast.value.details == {"expression": source}


def test_reserved_words_are_left_to_cel(engine):
    scope = Scope({"inputs": {"in": 1, "as": 2, "null": 3}})
    with pytest.raises(ExpressionError, match="Syntax error"):
        engine.evaluate("inputs.in", scope)
    with pytest.raises(ExpressionError, match="Syntax error"):
        engine.evaluate("inputs.null", scope)
    assert engine.evaluate("inputs.as", scope) == 2
    assert engine.evaluate('inputs["in"]', scope) == 1


def test_cel_reads_big_integers_as_doubles_and_nul_as_replacement_character(engine):
    scope = odd_scope()
    payload = "steps.review.outputs.payload"
    assert is_truthy(engine.evaluate(f"{payload}.n > 5", scope))  # a guard
    assert engine.evaluate(f"{payload}.n == 18446744073709551616.0", scope) is True
    assert engine.evaluate(f"{payload}.neg < -1e308", scope) is True  # beyond doubles: -inf
    assert engine.evaluate(f'{payload}["k\\ufffdey"][1] - 1', scope) == 2**63 - 2  # 64 bits: an int
    assert engine.evaluate(f'{payload}.verdict == "ship"', scope) is False
    assert engine.evaluate(f'{payload}.verdict == "ship\\ufffdx"', scope) is True
    assert engine.evaluate(f"size({payload}.verdict)", scope) == 6
    assert engine.evaluate(f'"k\\ufffdey" in {payload}', scope) is True
    assert engine.evaluate(f"[{payload}.s]", scope) == ["a\ufffdb"]


def test_cel_reads_other_fields_beside_a_big_integer(engine):
    scope = Scope({"steps": {"r": {"outputs": {"payload": {"verdict": "ship", "n": 2**64}}}}})
    assert engine.evaluate('steps.r.outputs.payload.verdict == "ship"', scope) is True
    assert engine.evaluate("inputs == {} && steps.r.outputs.payload.n > 0.0", scope) is True


def test_the_cel_view_changes_nothing_it_need_not():
    plain = {"a": [1, "x", {"b": 2.5, "c": None, "d": True}], "u": 2**64 - 1, "i": -(2**63)}
    assert cel_view(plain) is plain
    for value in ["text", 7, 1.5, None, False, [], {}]:
        assert cel_view(value) is value
    mixed = {"keep": plain, "s": "a\x00", "l": [plain, 2**64]}
    viewed = cel_view(mixed)
    assert viewed == {"keep": plain, "s": "a\ufffd", "l": [plain, float(2**64)]}
    assert viewed["keep"] is plain and viewed["l"][0] is plain
    assert mixed["s"] == "a\x00" and mixed["l"][1] == 2**64  # the original is left alone
    assert cel_view({"k\x00": 1}) == {"k\ufffd": 1}
    assert cel_view([10**400, -(10**400)]) == [math.inf, -math.inf]
    assert type(cel_view(True)) is bool


def test_the_cel_view_is_made_once_per_scope_and_shared_by_self_scopes(engine):
    scope = odd_scope()
    first = scope.cel_variable("steps")
    assert scope.cel_variable("steps") is first
    child = scope.with_self({"i": 1})
    assert child.cel_variable("steps") is first
    assert child.with_self({"j": 2}).cel_variable("steps") is first
    assert engine.evaluate("self.i + 1", child) == 2
    assert engine.evaluate("steps.review.outputs.payload.n > 5.0 && self.i == 1", child) is True
    plain = Scope({"inputs": {"a": [1]}})
    assert plain.cel_variable("inputs") is plain.variables["inputs"]


def test_one_scope_serves_expressions_that_name_different_variables(engine):
    scope = Scope({"inputs": {"a": 1}, "steps": {"r": {"outputs": {"n": 2**64}}}})
    assert engine.evaluate("inputs.a + 1", scope) == 2
    assert engine.evaluate("steps.r.outputs.n > 1.0", scope) is True
    assert engine.evaluate("inputs.a + 1", scope) == 2


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
