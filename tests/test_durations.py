"""The one duration parser (WF-038..042): its forms, its refusals, and that the file's reader, the
command line and workflow.schema.json agree on which strings are durations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from swamp.domain.definition import seconds_number
from swamp.domain.durations import parse_duration

ROOT = Path(__file__).resolve().parents[1]
SECONDS = json.loads((ROOT / "spec/schemas/workflow.schema.json").read_text())["$defs"]["seconds"]
PATTERN = SECONDS["anyOf"][1]["pattern"]

GOOD = {
    "90s": 90, "10m": 600, "1h30m": 5400, "2d": 172800, "1w": 604800, "1.5h": 5400, "0.5s": 0.5,
    "PT10M": 600, "pt10m": 600, "P1DT2H": 93600, "P2W": 1209600, "PT1.5S": 1.5, "P1D": 86400,
    "1H": 3600, "2m30s": 150,
}  # fmt: skip
BAD = ["", "P", "PT", "P1DT", "P1M", "P1Y", "1y", "10 m", " 10m", "-5s", "m", "10", "1e3s", "1h 30m", "T10M"]


@pytest.mark.parametrize(("text", "seconds"), GOOD.items())
def test_durations_read_as_exact_seconds(text: str, seconds: float) -> None:
    got = parse_duration(text)
    assert got == seconds and type(got) is type(seconds)
    assert seconds_number(text) == seconds
    assert re.search(PATTERN, text)


@pytest.mark.parametrize("text", BAD)
def test_what_is_not_a_duration_in_a_file(text: str) -> None:
    with pytest.raises(ValueError, match="must be a number of seconds or a duration such as"):
        seconds_number(text)
    assert not re.search(PATTERN, text)


def test_a_bare_number_is_a_duration_only_on_the_command_line() -> None:
    assert parse_duration("90") == 90 and parse_duration("2.5") == 2.5
    with pytest.raises(ValueError, match="is not a duration: give a number of seconds"):
        parse_duration("1 hour")


def test_one_parser_for_requests() -> None:
    from swamp.domain.errors import InvalidRequest
    from swamp.protocol.requests import parse_duration as request_duration

    assert request_duration("PT2H") == 7200
    with pytest.raises(InvalidRequest, match="'P1M' is not a duration"):
        request_duration("P1M")
