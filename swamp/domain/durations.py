"""Durations, the one parser for every duration swamp takes (WF-038..042): a workflow file's
`timeout`, `--expires`, `--expiring-within`, `watch --timeout`, a request's `expires`.

Forms: a number of seconds (`90`, `2.5`), units summed left to right (`90s`, `10m`, `1h30m`, `2d`,
`1w`), and ISO 8601 without years or months (`PT10M`, `P1DT2H`, `P2W`): a month or a year has no
fixed length, so `P1M` is refused rather than guessed. The arithmetic is exact (fractions): a
duration that is a whole number of seconds is an int, so `10m` is 600, never 600.0.
"""

from __future__ import annotations

import re
from fractions import Fraction

EXAMPLES = "90s, 10m, 1h30m, 2d or PT10M"
_NUMBER = r"\d+(?:\.\d+)?"
_UNITS = re.compile(rf"(?:{_NUMBER}[smhdw])+")
_PART = re.compile(rf"({_NUMBER})([smhdw])")
_ISO = re.compile(
    rf"P(?:({_NUMBER})W)?(?:({_NUMBER})D)?(?:T(?:({_NUMBER})H)?(?:({_NUMBER})M)?(?:({_NUMBER})S)?)?"
)
_SCALE = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_ISO_SCALE = (604800, 86400, 3600, 60, 1)


def is_number_text(text: str) -> bool:
    """A bare number of seconds written as text (`"60"`): a duration only where text is all there
    is (the command line), never in a workflow file, where a string is not a number (WF-025)."""
    return re.fullmatch(_NUMBER, text) is not None


def parse_duration(text: str) -> int | float:
    """`text` in seconds; ValueError (its message names the forms) when it is not a duration."""
    cleaned = text
    if re.fullmatch(_NUMBER, cleaned):
        return _seconds(Fraction(cleaned))
    lowered = cleaned.lower()
    if _UNITS.fullmatch(lowered):
        return _seconds(sum((Fraction(n) * _SCALE[u] for n, u in _PART.findall(lowered)), Fraction(0)))
    iso = _ISO.fullmatch(cleaned.upper())
    if iso and any(iso.groups()) and not cleaned.upper().endswith("T"):
        parts = zip(iso.groups(), _ISO_SCALE, strict=True)
        return _seconds(sum((Fraction(n) * scale for n, scale in parts if n), Fraction(0)))
    raise ValueError(f"{text!r} is not a duration: give a number of seconds or a duration such as {EXAMPLES}")


def _seconds(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)
