"""Text made safe for a terminal (CLI-030): what a run brings along (workflow names, inputs,
payloads, a step's output, records, the journal) may hold control characters that a terminal
obeys (ESC ] 52 writes the clipboard, ESC ] 0 sets the title, ESC [ 2J clears the screen, a CR
rewrites the line). Log mode shows each such character as a visible escape instead: `\\x1b`,
`\\x9b`, `\\x7f`. Tab and newline stay. JSON output needs none of this (JSON escapes them)."""

from __future__ import annotations

import re
from typing import Any, TypeVar

_F = TypeVar("_F")

# C0 but tab and newline, DEL, C1, and lone surrogates (bytes that were not UTF-8, decoded with
# surrogateescape, would reach the terminal as those raw bytes: 0x9b is a CSI on many terminals).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# What swamp itself styles with (output.style, rich): Select Graphic Rendition only, no other
# sequence. Let through by `own_line` when colour is on; everything else is escaped.
_SGR = re.compile("\x1b\\[[0-9;]*m")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): show the byte
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFF:
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def shown(text: object) -> str:
    """`text` (any value, as str()) with every control character but tab and newline shown as a
    visible escape. Use it on every text that did not come from swamp itself."""
    return _UNSAFE.sub(_escape, str(text))


def shown_doc(value: Any) -> Any:
    """A JSON document with `shown` applied to every string in it, keys too: for a renderer
    that prints fields of a record, a result or an event, at its entry."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {shown(key) if isinstance(key, str) else key: shown_doc(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shown_doc(item) for item in value]
    return value


def exact(render: _F) -> _F:
    """Marks a renderer that is given the exact document (common.call gives the others theirs
    through shown_doc): it prints some values as JSON and applies `shown` to everything else."""
    render.exact = True  # type: ignore[attr-defined]
    return render


def own_line(line: str, colour: bool) -> str:
    """The last guard, for a whole line swamp is about to print: with `colour`, swamp's own SGR
    styling passes and any other control character is escaped; without, every one is."""
    if not colour:
        return shown(line)
    parts = []
    at = 0
    for match in _SGR.finditer(line):
        parts.append(shown(line[at : match.start()]))
        parts.append(match.group())
        at = match.end()
    parts.append(shown(line[at:]))
    return "".join(parts)
