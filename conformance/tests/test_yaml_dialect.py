"""Scenario YAML means the same under YAML 1.1 (PyYAML) and YAML 1.2 core (FORMAT.md)."""

from __future__ import annotations

import pytest
from swamp_conformance_runner.scenario import load_yaml


@pytest.mark.parametrize(
    "text", ["a: yes", "a: No", "a: on", "a: OFF", "a: 0600", "a: 1_000", "a: 1:30", "a: 1_0.5"]
)
def test_scalars_that_differ_between_yaml_versions_are_refused(text: str) -> None:
    with pytest.raises(Exception, match="YAML 1.1"):
        load_yaml(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("a: true", True),
        ("a: 10", 10),
        ("a: 0", 0),
        ("a: 0x1f", 31),
        ("a: 1.5", 1.5),
        ('a: "yes"', "yes"),
        ("a: '0600'", "0600"),
        ("a: 2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
        ("a: ~", None),
    ],
)
def test_plain_scalars_that_agree_load_as_json(text: str, value: object) -> None:
    assert load_yaml(text) == {"a": value}
