"""How a setting of .swamp.yaml is refused (REPO-012): `settings_invalid` naming the key's dotted
path, what is wrong with it and what to write instead. Shared by the settings and the gateway's
webhook routes."""

from __future__ import annotations

from typing import Any

from .errors import SettingsInvalid


def refuse(where: str, problem: str, fix: str) -> SettingsInvalid:
    return SettingsInvalid(
        f".swamp.yaml: {where} {problem}; {fix}",
        {"path": ".swamp.yaml", "key": where},
    )


def did_you_mean(key: Any, known: tuple[str, ...]) -> str:
    import difflib

    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    return f"did you mean {close[0]}? " if close else ""


def kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null" if value is None else type(value).__name__
