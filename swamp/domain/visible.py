"""Text shown as a terminal would not obey it (CLI-030): every control character but tab and newline
written as a visible escape (`\\x1b`, `\\x9b`, `\\x7f`). Pure, for every layer that prints text
a run brought along: the CLI's renderers (cli/terminal_text.py) and serve's log."""

from __future__ import annotations

import re

# C0 but tab and newline, DEL, C1, and lone surrogates (bytes that were not UTF-8, decoded with
# surrogateescape, would reach the terminal as those raw bytes: 0x9b is a CSI on many terminals).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


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
