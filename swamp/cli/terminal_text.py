"""Text made safe for a terminal (CLI-030): what a run brings along (workflow names, inputs,
payloads, a step's output, records, the journal) may hold control characters that a terminal
obeys (ESC ] 52 writes the clipboard, ESC ] 0 sets the title, ESC [ 2J clears the screen, a CR
rewrites the line). Log mode shows each such character as a visible escape instead: `\\x1b`,
`\\x9b`, `\\x7f`. Tab and newline stay. JSON output needs none of this (JSON escapes them)."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from ..domain.visible import shown

_F = TypeVar("_F")

# What swamp itself styles with (output.style, rich): Select Graphic Rendition only, no other
# sequence. Let through by `own_line` when colour is on; everything else is escaped.
_SGR = re.compile("\x1b\\[[0-9;]*m")


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
