"""Unit tests of the matcher module: every matcher, captures, substitution, frame ordering."""

import pytest
from swamp_conformance_runner.matching import (
    ScenarioError,
    captured_names,
    check_expected,
    json_equal,
    match,
    match_frames,
    references,
    substitute,
)


def ok(expected, actual, captures=None):
    return match(expected, actual, {} if captures is None else captures) == []


def messages(expected, actual):
    return [str(m) for m in match(expected, actual, {})]


# ----------------------------------------------------------------------------- scalars, dicts, lists


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        ("1", 1, False),
        (None, None, True),
        (None, False, False),
        ([1, {"a": 2}], [1.0, {"a": 2}], True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([1], [1, 2], False),
    ],
)
def test_json_equal(a, b, equal):
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


def test_scalar_mismatch_message_shows_both_values():
    assert messages("succeeded", "failed") == ['$: expected "succeeded", got "failed"']


def test_dict_is_a_subset_match():
    actual = {"status": "succeeded", "id": "run_1", "extra": [1, 2]}
    assert ok({"status": "succeeded"}, actual)
    assert ok({}, actual)
    assert messages({"status": "failed"}, actual) == ['$.status: expected "failed", got "succeeded"']
    assert messages({"nope": 1}, actual) == ["$.nope: missing key (expected 1)"]
    assert messages({"a": 1}, [1]) == ["$: expected an object, got [1]"]


def test_nested_paths_name_the_place():
    actual = {"payload": {"data": {"steps": [{"status": "waiting"}]}}}
    problems = messages({"payload": {"data": {"steps": [{"status": "succeeded"}]}}}, actual)
    assert problems == ['$.payload.data.steps[0].status: expected "succeeded", got "waiting"']
    assert messages({"a b": 1}, {"a b": 2}) == ['$["a b"]: expected 1, got 2']


def test_list_needs_same_length_and_matches_elementwise():
    assert ok([1, {"a": 1}], [1, {"a": 1, "b": 2}])
    assert not ok([1, 2], [1, 2, 3])
    assert not ok([1, 2], [2, 1])
    assert messages([1], "x") == ['$: expected an array, got "x"']


def test_literal_dollar_key_is_escaped_with_double_dollar():
    actual = {"schema": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}
    assert ok({"schema": {"$$schema": {"$regex": "2020-12"}}}, actual)
    assert not ok({"schema": {"$$schema": "other"}}, actual)


# ----------------------------------------------------------------------------- matchers


def test_any_needs_the_key_but_accepts_any_value():
    assert ok({"a": {"$any": True}}, {"a": None})
    assert messages({"a": {"$any": True}}, {}) == ['$.a: missing key (expected {"$any": true})']


def test_absent():
    assert ok({"error": {"$absent": True}}, {"status": "ok"})
    assert messages({"error": {"$absent": True}}, {"error": None}) == [
        "$.error: expected no such key, got null"
    ]
    with pytest.raises(ScenarioError, match="only meaningful as the value of an object key"):
        match({"$absent": True}, 1, {})
    with pytest.raises(ScenarioError, match="only meaningful"):
        match([{"$absent": True}], [1], {})


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("string", "x", 1),
        ("number", 1.5, "1"),
        ("integer", 2, 2.5),
        ("integer", 2.0, True),
        ("boolean", False, 0),
        ("object", {}, []),
        ("array", [], {}),
        ("null", None, 0),
    ],
)
def test_type(name, good, bad):
    assert ok({"$type": name}, good)
    assert not ok({"$type": name}, bad)


def test_type_accepts_a_list_and_rejects_unknown_names():
    assert ok({"$type": ["string", "null"]}, None)
    assert not ok({"$type": ["string", "null"]}, 3)
    with pytest.raises(ScenarioError, match=r"\$type takes one of"):
        match({"$type": "str"}, "x", {})


def test_regex_searches_strings_only():
    assert ok({"$regex": "^wait_[a-z2-7]{26}$"}, "wait_" + "a" * 26)
    assert ok({"$regex": "run"}, "a run id")
    assert not ok({"$regex": "^run"}, "a run id")
    assert messages({"$regex": "1"}, 1) == ["$: expected a string matching /1/, got 1"]
    with pytest.raises(ScenarioError, match="unclosed"):
        match({"$regex": "("}, "x", {})


def test_contains_on_strings_is_a_substring():
    assert ok({"$contains": "Suspended"}, "Run Suspended at gate")
    assert not ok({"$contains": "suspended"}, "Run Suspended at gate")
    assert not ok({"$contains": "x"}, 5)


def test_contains_on_lists_needs_each_item_somewhere():
    actual = [{"name": "build", "status": "succeeded"}, {"name": "gate", "status": "waiting"}]
    assert ok({"$contains": [{"name": "gate"}]}, actual)
    assert ok({"$contains": [{"name": "gate"}, {"name": "build"}]}, actual)
    assert ok({"$contains": {"name": "gate"}}, actual)  # a single item
    assert ok({"$contains": []}, actual)
    problems = messages({"$contains": [{"name": "gate", "status": "succeeded"}]}, actual)
    assert len(problems) == 1
    assert "no element matches" in problems[0]
    assert '$[1].status: expected "succeeded", got "waiting"' in problems[0]
    assert '$[0].name: expected "gate", got "build"' in problems[0]
    assert "the array is empty" in messages({"$contains": [1]}, [])[0]
    assert not ok({"$contains": ["x"]}, "x")  # a list item cannot be found in a string


def test_len():
    assert ok({"$len": 2}, [1, 2])
    assert ok({"$len": 3}, "abc")
    assert ok({"$len": 1}, {"a": 1})
    assert ok({"$len": {"$not": 0}}, [1])
    assert not ok({"$len": {"$not": 0}}, [])
    assert messages({"$len": 1}, [1, 2]) == ["$: expected length 1, got 2: [1, 2]"]
    assert not ok({"$len": 1}, 1)
    with pytest.raises(ScenarioError, match="integer or a matcher"):
        match({"$len": "1"}, [1], {})


def test_not():
    assert ok({"$not": "failed"}, "succeeded")
    assert not ok({"$not": "failed"}, "failed")
    assert ok({"$not": {"$type": "null"}}, 0)
    assert ok({"a": {"$not": {"b": 1}}}, {"a": {"b": 2}})


def test_not_does_not_leak_captures():
    captures = {}
    assert ok({"$not": {"$capture": "x", "$type": "string"}}, 1, captures)
    assert captures == {}


def test_eq_is_exact_not_subset():
    assert ok({"$eq": {"a": 1}}, {"a": 1.0})
    assert not ok({"$eq": {"a": 1}}, {"a": 1, "b": 2})
    assert ok({"$eq": [1, 2]}, [1, 2])
    assert not ok({"$eq": [True]}, [1])
    # inside $eq nothing is a matcher
    assert ok({"$eq": {"x": {"$any": True}}}, {"x": {"$any": True}})
    assert not ok({"$eq": {"x": {"$any": True}}}, {"x": 1})


def test_several_matchers_in_one_object_must_all_hold():
    assert ok({"$type": "string", "$regex": "^run_", "$len": 6}, "run_01")
    assert not ok({"$type": "string", "$regex": "^run_", "$len": 5}, "run_01")
    assert len(messages({"$type": "number", "$len": 9}, "abc")) == 2


def test_unknown_or_mixed_matchers_are_scenario_errors():
    with pytest.raises(ScenarioError, match=r"unknown matcher \$regexp"):
        match({"$regexp": "x"}, "x", {})
    with pytest.raises(ScenarioError, match="mixes matcher keys"):
        match({"$type": "string", "name": "x"}, {"name": "x"}, {})
    with pytest.raises(ScenarioError, match="takes true"):
        match({"$any": 1}, 1, {})
    with pytest.raises(ScenarioError, match="alone"):
        check_expected({"a": {"$absent": True, "$type": "null"}})


# ----------------------------------------------------------------------------- captures


def test_capture_stores_the_actual_value():
    captures = {}
    assert ok({"id": {"$capture": "runId"}, "n": {"$capture": "n"}}, {"id": "run_1", "n": 3}, captures)
    assert captures == {"runId": "run_1", "n": 3}


def test_capture_combined_with_other_matchers_needs_them_all():
    captures = {}
    assert not ok({"$capture": "x", "$type": "string"}, 1, captures)
    assert captures == {}
    assert ok({"$capture": "x", "$type": "string"}, "s", captures)
    assert captures == {"x": "s"}
    with pytest.raises(ScenarioError, match="identifier"):
        match({"$capture": "not an id"}, 1, {})


def test_capture_inside_contains_takes_the_matching_element():
    captures = {}
    actual = [{"name": "a", "wait": "w1"}, {"name": "b", "wait": "w2"}]
    assert ok({"$contains": [{"name": "b", "wait": {"$capture": "waitB"}}]}, actual, captures)
    assert captures == {"waitB": "w2"}


def test_captured_names_and_references():
    expected = {
        "a": {"$capture": "one"},
        "b": [{"$contains": [{"c": {"$capture": "two"}}]}],
        "n": {"$not": {"$capture": "no"}},
    }
    assert captured_names(expected) == {"one", "two"}
    assert references(["${a}", {"k${b}": "x ${c} $${d} ${{ inputs.e }}"}]) == {"a", "b", "c"}


# ----------------------------------------------------------------------------- substitution


def test_substitution_whole_string_keeps_type():
    captures = {"n": 3, "obj": {"a": [1]}, "s": "run_1", "flag": False}
    assert substitute("${n}", captures) == 3
    assert substitute("${obj}", captures) == {"a": [1]}
    assert substitute({"run": "${s}", "list": ["${flag}"]}, captures) == {"run": "run_1", "list": [False]}


def test_substitution_embedded_is_stringified():
    captures = {"n": 3, "obj": {"a": 1}, "s": "run_1"}
    assert substitute("id=${s} n=${n} o=${obj}", captures) == 'id=run_1 n=3 o={"a": 1}'
    assert substitute(".swamp/workflow-runs/x/${s}.json", captures) == ".swamp/workflow-runs/x/run_1.json"
    assert substitute({"${s}": 1}, captures) == {"run_1": 1}


def test_substitution_leaves_workflow_expressions_and_escapes_alone():
    text = "${{ inputs.name }} and ${{steps.a.outputs}} and $${HOME} and $x and {y}"
    assert substitute(text, {}) == "${{ inputs.name }} and ${{steps.a.outputs}} and ${HOME} and $x and {y}"


def test_substitution_does_not_alias_captured_values():
    captures = {"obj": {"a": [1]}}
    value = substitute("${obj}", captures)
    value["a"].append(2)
    assert captures == {"obj": {"a": [1]}}


def test_unknown_capture_is_a_scenario_error():
    with pytest.raises(ScenarioError, match=r"unknown capture \$\{runId\} \(captured so far: other\)"):
        substitute({"run": ["x", "${runId}"]}, {"other": 1}, "steps[2]")
    with pytest.raises(ScenarioError, match=r"steps\[2\]"):
        substitute("a ${runId}", {}, "steps[2]")


# ----------------------------------------------------------------------------- frames


def frame(kind, ident, **rest):
    return {"type": kind, "id": ident, **rest}


def test_frames_match_distinct_actual_frames():
    actual = [frame("event", "r1", event={"n": 1}), frame("done", "r1")]
    assert match_frames([frame("done", "r1")], actual, {}) == []
    # two expected events cannot both match the single actual event
    problems = match_frames([frame("event", "r1"), frame("event", "r1")], actual, {})
    assert len(problems) == 1
    assert problems[0].startswith("expected frame [1] matched no actual frame")


def test_same_id_frames_keep_their_order():
    actual = [frame("event", "r1", event={"n": 1}), frame("event", "r1", event={"n": 2}), frame("done", "r1")]
    assert (
        match_frames([{"type": "event", "id": "r1", "event": {"n": 1}}, frame("done", "r1")], actual, {})
        == []
    )
    problems = match_frames(
        [frame("done", "r1"), {"type": "event", "id": "r1", "event": {"n": 2}}], actual, {}
    )
    assert len(problems) == 1
    assert "actual frame #1 matches but comes before a frame already matched for the same id" in problems[0]


def test_different_ids_may_interleave():
    actual = [frame("event", "r2"), frame("event", "r1"), frame("done", "r2"), frame("done", "r1")]
    expected = [frame("event", "r1"), frame("done", "r1"), frame("event", "r2"), frame("done", "r2")]
    assert match_frames(expected, actual, {}) == []


def test_error_frames_with_null_id_are_matched_and_ordered_as_an_id():
    actual = [
        frame("error", None, error={"code": "invalid_request", "message": "a"}),
        frame("done", None),
        frame("error", None, error={"code": "invalid_request", "message": "b"}),
    ]
    expected = [
        frame("error", None, error={"message": "a"}),
        frame("error", None, error={"message": "b"}),
    ]
    assert match_frames(expected, actual, {}) == []
    assert len(match_frames(list(reversed(expected)), actual, {})) == 1


def test_only_requires_every_actual_frame_to_be_matched():
    actual = [frame("event", "r1"), frame("done", "r1")]
    assert match_frames([frame("done", "r1")], actual, {}) == []
    problems = match_frames([frame("done", "r1")], actual, {}, only=True)
    assert problems == ['actual frame #0 was not expected (only: true): {"type": "event", "id": "r1"}']


def test_unmatched_frame_explains_candidates_of_the_same_id():
    actual = [frame("workflow.signal", "r1", payload={"data": {"status": "waiting"}}), frame("done", "r1")]
    problems = match_frames(
        [frame("workflow.signal", "r1", payload={"data": {"status": "settled"}})], actual, {}
    )
    assert len(problems) == 1
    assert 'actual frame #0: $.payload.data.status: expected "settled", got "waiting"' in problems[0]
    problems = match_frames([frame("done", "r9")], actual, {})
    assert 'no actual frame has id "r9"' in problems[0]


def test_frames_without_a_literal_id_match_any_unused_frame():
    actual = [frame("event", "r1"), frame("done", "r1")]
    expected = [{"type": "done", "id": {"$type": "string"}}, frame("done", "r1")]
    # the literal-id frame is matched first, so the wildcard has nothing left
    assert len(match_frames(expected, actual, {})) == 1
    assert match_frames([{"type": "event"}, frame("done", "r1")], actual, {}) == []


def test_frame_captures_are_kept_only_from_matching_frames():
    captures = {}
    actual = [frame("event", "r1", event={"waitId": "w1"}), frame("done", "r1")]
    expected = [{"type": "event", "id": "r1", "event": {"waitId": {"$capture": "wait"}}}]
    assert match_frames(expected, actual, captures) == []
    assert captures == {"wait": "w1"}


def test_extract_stores_the_first_group_of_the_first_match():
    captures = {}
    page = '<form><input type="hidden" name="_csrf" value="f0rm-t0ken"><input name="_csrf" value="x"></form>'
    wanted = {"$extract": {"regex": 'name="_csrf" value="([^"]+)"', "name": "csrf"}}
    assert match(wanted, page, captures) == [] and captures == {"csrf": "f0rm-t0ken"}
    assert captured_names(wanted) == {"csrf"}
    assert ok({"$extract": {"regex": "run_[0-9]+", "name": "r"}, "$regex": "^ok"}, "ok run_12 done", captures)
    assert captures["r"] == "run_12"  # no group: the whole match
    assert ok({"$extract": {"regex": "a(b)?c", "name": "g"}}, "ac", captures) and captures["g"] == ""
    kept = {}
    assert not ok({"$extract": {"regex": "z", "name": "n"}, "$type": "string"}, "abc", kept) and kept == {}
    assert not ok(wanted, 42)


@pytest.mark.parametrize(
    "arg",
    [
        {"regex": "a"},
        {"regex": "a", "name": "1x"},
        {"regex": "(?=a)", "name": "n"},
        "a",
        {"regex": 1, "name": "n"},
    ],
)
def test_extract_arguments_are_checked(arg):
    with pytest.raises(ScenarioError, match=r"\$extract"):
        check_expected({"$extract": arg})
