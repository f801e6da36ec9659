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


def _utf8(pair: str) -> None:
    """INPUT-016: an argument that was not UTF-8 reaches Python with its bad bytes as lone
    surrogates (surrogateescape); refuse it here, where the person can be told what to do, rather
    than fail on it deep in a save."""
    try:
        pair.encode("utf-8")
    except UnicodeEncodeError as exc:
        from .terminal_text import shown

        bad = pair[exc.start]
        byte = f"byte 0x{ord(bad) - 0xDC00:02x}" if 0xDC80 <= ord(bad) <= 0xDCFF else "a character"
        raise UsageError(
            f"--input {shown(pair)} is not UTF-8 text ({byte} at character {exc.start + 1}); "
            "inputs are Unicode text: convert the value to UTF-8 (iconv -f latin1 -t utf-8), or "
            "give binary data base64-encoded"
        ) from None


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
        _utf8(pair)
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
