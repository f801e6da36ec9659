"""YAML 1.2 core schema (WF-030..WF-033): what swamp writes (`model create`, `workflow get`'s log
output) reads back as the same values under YAML 1.2 and under YAML 1.1, so a string such as
`yes` or `0o17` is quoted; and what it reads follows the core schema, not PyYAML's 1.1 rules."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from swamp.store.yamlio import YamlError, dump_yaml, load_yaml

AMBIGUOUS = [
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "~",
    "null",
    "",
    "0o17",
    "017",
    "0x1F",
    "1e3",
    ".5",
    "1.",
    "1:30",
    "1_000",
    "2026-01-01",
    "2026-01-01T10:00:00Z",
    ".inf",
    "-.INF",
    ".NaN",
    "True",
    "<<",
    "=",
    "+1",
]
SCALARS = st.one_of(
    st.sampled_from(AMBIGUOUS),
    st.text(alphabet="01289oxeE.:_-+ yYnNtT~", max_size=8),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)


@given(
    st.dictionaries(
        st.sampled_from(AMBIGUOUS) | st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=4),
        SCALARS,
        max_size=4,
    )
)
def test_what_swamp_writes_reads_back_the_same_under_yaml_1_1_and_1_2(data: dict[str, Any]) -> None:
    text = dump_yaml({"values": data})
    assert load_yaml(text) == {"values": data}
    assert yaml.safe_load(text) == {"values": data}


@pytest.mark.parametrize(
    ("plain", "value"),
    [
        ("yes", "yes"),
        ("off", "off"),
        ("2026-01-01", "2026-01-01"),
        ("017", 17),
        ("0o17", 15),
        ("0x1F", 31),
        ("1:30", "1:30"),
        ("1_000", "1_000"),
        ("1e3", 1000.0),
        ("~", None),
        ("", None),
        ("TRUE", True),
        ("tRue", "tRue"),
        ("!!str 5", "5"),
        ("!!float 1", 1.0),
    ],
)
def test_a_plain_scalar_is_read_by_the_core_schema(plain: str, value: Any) -> None:
    assert load_yaml(f"k: {plain}\n{plain or 'x'}: 1\n") == {"k": value, (value if plain else "x"): 1}


@pytest.mark.parametrize(
    "text", ["on: 1\n'on': 2\n", "1: a\n+1: b\n", "a: !!timestamp 2026-01-01\n", "a: !!set {b}\n"]
)
def test_a_repeated_key_or_a_tag_outside_the_core_schema_is_not_valid_yaml(text: str) -> None:
    with pytest.raises(YamlError):
        load_yaml(text)
