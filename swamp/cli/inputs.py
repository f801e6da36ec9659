"""--input k=v / k:json=<json> / --input-file FILE, merged into one inputs object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..domain.errors import UsageError


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def parse_inputs(pairs: tuple[str, ...], input_file: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if input_file:
        from ..store.yamlio import YamlError, load_yaml

        try:
            loaded = load_yaml(Path(input_file).read_text(encoding="utf-8"))
        except (OSError, YamlError, UnicodeDecodeError) as exc:
            raise UsageError(f"--input-file {input_file}: {exc}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"--input-file {input_file} must hold a mapping of input names to values")
        result = loaded
    given: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            if pair.strip().startswith("{"):
                try:
                    parsed = json.loads(pair)
                except ValueError as exc:
                    raise UsageError(f"--input {pair!r} is not valid JSON: {exc}") from None
                given = _deep_merge(given, parsed)
                continue
            raise UsageError(f"--input {pair!r} must look like key=value, key:json=<json>, or a JSON object")
        key, raw = pair.split("=", 1)
        value: Any = raw
        if key.endswith(":json"):
            key = key[: -len(":json")]
            try:
                value = json.loads(raw)
            except ValueError as exc:
                raise UsageError(f"--input {key}:json= is not valid JSON: {exc}") from None
        if not key:
            raise UsageError(f"--input {pair!r} has an empty key")
        _set_dotted(given, key, value)
    return _deep_merge(result, given)
