"""The answer form made from a wait's schema, and the submitted form read back (swamp/gateway/forms.py):
pure functions, no gateway process."""

from __future__ import annotations

import pytest

pytest.importorskip("jinja2")

from swamp.gateway import forms  # noqa: E402

RELEASE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict"],
    "properties": {
        "verdict": {"type": "string", "enum": ["ship", "fix", "abandon"]},
        "note": {"type": "string"},
    },
}

WIDE = {
    "type": "object",
    "required": ["count", "when", "ok"],
    "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
        "ratio": {"type": "number", "multipleOf": 0.5},
        "when": {"type": "string", "format": "date"},
        "mail": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "ticket": {"type": "string", "maxLength": 20, "default": "OPS-1"},
        "ok": {"type": "boolean", "default": True},
        "region": {"enum": ["a", "b", "c", "d", "e", "f", "g"]},
        "tags": {"type": "array", "items": {"enum": ["x", "y", "z"]}},
        "details": {
            "type": "object",
            "title": "More details",
            "required": ["owner"],
            "properties": {"owner": {"type": "string", "maxLength": 40}, "level": {"type": "integer"}},
        },
        "extra": {"type": "array", "items": {"type": "object"}},
        "level": {"$ref": "#/$defs/level"},
    },
    "$defs": {"level": {"enum": [1, 2, None]}},
}


def by_name(fields: list[forms.Field]) -> dict[str, forms.Field]:
    return {f.name: f for top in fields for f in top.walk()}


def test_an_enum_is_radio_buttons_and_a_long_one_a_select() -> None:
    fields = by_name(forms.build_form(WIDE))
    assert [o.value for o in forms.build_form(RELEASE)[0].options] == ["ship", "fix", "abandon"]
    assert forms.build_form(RELEASE)[0].kind == "radio"
    assert forms.build_form(RELEASE)[0].required
    assert fields["$/region"].kind == "select"
    assert [o.value for o in fields["$/level"].options] == ["1", "2", "null"]  # a local $ref followed


def test_each_type_has_its_control_with_its_bounds() -> None:
    fields = by_name(forms.build_form(WIDE))
    count = fields["$/count"]
    assert (count.kind, count.input_type, count.value, count.required) == ("input", "number", "3", True)
    assert count.attrs == {"min": "1", "max": "9", "step": "1"}
    assert fields["$/ratio"].attrs == {"step": "0.5"}
    assert fields["$/when"].input_type == "date"
    assert fields["$/mail"].input_type == "email"
    assert fields["$/site"].input_type == "url"
    assert (fields["$/ticket"].kind, fields["$/ticket"].value) == ("input", "OPS-1")
    assert fields["$/ticket"].attrs == {"maxlength": "20"}
    assert fields["$/ok"].kind == "checkbox" and fields["$/ok"].checked
    assert fields["$/tags"].kind == "checkboxes"
    assert fields["$/details"].kind == "fieldset" and fields["$/details"].label == "More details"
    assert fields["$/details/owner"].required and not fields["$/details/level"].required
    assert fields["$/extra"].kind == "json"
    assert forms.build_form(RELEASE)[1].kind == "textarea"  # a string with no maxLength


def test_every_field_has_an_id_of_its_own() -> None:
    ids = [f.id for f in by_name(forms.build_form(WIDE)).values()]
    assert len(ids) == len(set(ids)) and all(ids)


def test_a_payload_that_is_not_an_object_is_one_field() -> None:
    (only,) = forms.build_form({"type": "string", "enum": ["yes", "no"]})
    assert (only.name, only.kind) == ("$", "radio")
    assert forms.read_form({"type": "string", "enum": ["yes", "no"]}, {"$": ["no"]}).payload == "no"
    (anything,) = forms.build_form(None)
    assert anything.kind == "json"
    assert forms.read_form(None, {"$": ['{"a": [1]}']}).payload == {"a": [1]}


def test_the_submitted_form_is_typed_by_the_schema() -> None:
    form = {
        "$/count": ["4"],
        "$/ratio": ["1.5"],
        "$/when": ["2026-12-03"],
        "$/mail": [""],
        "$/ok": ["true"],
        "$/region": ["g"],
        "$/tags": ["x", "z"],
        "$/details/owner": ["ann"],
        "$/details/level": [""],
        "$/extra": ['[{"k": 1}]'],
        "$/level": ["null"],
        "_csrf": ["abc"],
    }
    reading = forms.read_form(WIDE, form)
    assert reading.errors == {}
    assert reading.payload == {
        "count": 4,
        "ratio": 1.5,
        "when": "2026-12-03",
        "ok": True,
        "region": "g",
        "tags": ["x", "z"],
        "details": {"owner": "ann"},
        "extra": [{"k": 1}],
        "level": None,
    }


def test_an_unchecked_box_is_false_and_an_empty_optional_field_is_left_out() -> None:
    reading = forms.read_form(WIDE, {"$/count": ["2"], "$/when": ["2026-01-01"]})
    assert reading.payload == {"count": 2, "when": "2026-01-01", "ok": False}


def test_text_that_is_no_number_goes_to_the_core_as_typed() -> None:
    assert forms.read_form(WIDE, {"$/count": ["many"]}).payload["count"] == "many"
    assert forms.read_form(WIDE, {"$/count": ["2.5"]}).payload["count"] == 2.5
    assert forms.read_form(WIDE, {"$/count": ["2.0"]}).payload["count"] == 2
    assert forms.read_form(WIDE, {"$/count": ["nan"]}).payload["count"] == "nan"


def test_a_json_field_that_does_not_parse_is_its_own_error() -> None:
    reading = forms.read_form(WIDE, {"$/extra": ["[1,"]})
    assert "extra" not in reading.payload
    assert list(reading.errors) == ["$/extra"]
    assert reading.errors["$/extra"][0].startswith("This is not JSON")


def test_what_was_typed_is_shown_again() -> None:
    form = {"$/count": ["many"], "$/tags": ["y"], "$/region": ["b"], "$/details/owner": ["<b>"]}
    fields = by_name(forms.build_form(WIDE, form))
    assert fields["$/count"].value == "many"
    assert [o.checked for o in fields["$/tags"].options] == [False, True, False]
    assert [o.value for o in fields["$/region"].options if o.checked] == ["b"]
    assert fields["$/details/owner"].value == "<b>"
    assert not fields["$/ok"].checked  # submitted unchecked: not the default any more
    assert fields["$/ticket"].value == ""  # submitted empty: the default is not put back


def test_the_cores_problems_land_beside_their_fields() -> None:
    fields = forms.build_form(WIDE)
    problems = [
        {"pointer": "/count", "message": "10 is greater than the maximum of 9"},
        {"pointer": "/details/owner", "message": "'owner' is a required property"},
        {"pointer": "/tags/1", "message": "'w' is not one of ['x', 'y', 'z']"},
        {"pointer": "/surprise", "message": "Additional properties are not allowed"},
        {"pointer": "", "message": "the payload as a whole"},
    ]
    by_field, general = forms.errors_by_field(fields, problems)
    assert by_field == {
        "$/count": ["10 is greater than the maximum of 9"],
        "$/details/owner": ["'owner' is a required property"],
        "$/tags": ["'w' is not one of ['x', 'y', 'z']"],
    }
    assert general == ["Additional properties are not allowed", "the payload as a whole"]
    forms.attach_errors(fields, by_field)
    assert by_name(fields)["$/count"].errors == ["10 is greater than the maximum of 9"]


def test_a_property_name_with_a_slash_is_escaped_like_a_pointer() -> None:
    schema = {"type": "object", "properties": {"a/b": {"type": "string", "maxLength": 5}}}
    (only,) = forms.build_form(schema)
    assert only.name == "$/a~1b"
    assert forms.read_form(schema, {"$/a~1b": ["hi"]}).payload == {"a/b": "hi"}
    assert forms.errors_by_field([only], [{"pointer": "/a~1b", "message": "too long"}])[0] == {
        "$/a~1b": ["too long"]
    }
