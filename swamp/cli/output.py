"""Writing to the terminal: JSON documents, error envelopes, and styled log lines."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ..domain.errors import SwampError
from ..protocol.channel import stdout
from .terminal_text import own_line, shown


def color_enabled(stream: Any = None) -> bool:
    """Colour by the usual conventions (CLI-005, CLI-014): `NO_COLOR` set to anything non-empty
    (no-color.org) turns it off and wins over everything; `FORCE_COLOR` set to anything non-empty
    (force-color.org) turns it on, also on a pipe and with `TERM=dumb`; otherwise colour only on a
    terminal whose `TERM` is not `dumb`. An empty variable counts as unset."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def style(
    text: str, color: str | None = None, bold: bool = False, dim: bool = False, stream: Any = None
) -> str:
    """`text` in ANSI colour when `stream` (default: stdout) gets colour (color_enabled); its
    control characters shown as escapes (terminal_text.shown) either way."""
    text = shown(text)
    if not color_enabled(stream):
        return text
    codes = []
    if bold:
        codes.append("1")
    if dim:
        codes.append("2")
    palette = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "cyan": "36"}
    if color:
        codes.append(palette[color])
    return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if codes else text


def out(line: str = "") -> None:
    """One log-mode line on stdout. Callers show what came from a run with terminal_text.shown;
    this is the last guard (CLI-030): no control sequence but swamp's own colours gets through."""
    stream = stdout()
    stream.write(own_line(line, color_enabled(stream)) + "\n")
    stream.flush()


def err(line: str = "") -> None:
    """One log-mode line on stderr, guarded as `out` is."""
    sys.stderr.write(own_line(line, color_enabled(sys.stderr)) + "\n")
    sys.stderr.flush()


def print_json(doc: Any) -> None:
    """The document, UTF-8 whatever it holds: a lone surrogate (an argument that was not UTF-8,
    decoded by Python with surrogateescape) is written as its JSON escape, never as a raw byte,
    as JSON-lines frames are (protocol/frames.py encode_frame)."""
    stream = stdout()
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False)
    stream.write(text + "\n")
    stream.flush()


def print_error(error: SwampError, as_json: bool) -> None:
    if as_json:
        print_json({"error": error.to_dict()})
        return
    err(style("Error: ", "red", bold=True, stream=sys.stderr) + shown(error.message))
    for key in ("problems", "errors"):
        items = error.details.get(key)
        if isinstance(items, list) and len(items) > 1:
            for item in items:
                text = (
                    f"{item.get('pointer') or '/'}: {item.get('message')}" if isinstance(item, dict) else item
                )
                err(f"  - {shown(text)}")
    err(style(f"  ({error.code})", dim=True, stream=sys.stderr))
