"""Globs of `files` checks, with one meaning in every runner (FORMAT.md).

Python's `Path.glob` follows its own rules (what `**` matches last, symlinked directories), so the
runner walks the repo itself: `**` as a whole segment matches zero or more segments, `*` any run of
characters but `/`, `?` one character but `/`, `[...]` a class (`[!...]` or `[^...]` negated). A leading
dot is not special. Regular files and directories both match; symlinks are never followed (a symlink
itself matches as a path). Matches come back sorted by path, in code point order.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path


@cache
def _segment(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                negated = body[:1] in ("!", "^")
                body = body[1:] if negated else body
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append("[" + ("^" if negated else "") + body + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _matches(segments: list[str], parts: list[str]) -> bool:
    if not segments:
        return not parts
    head, rest = segments[0], segments[1:]
    if head == "**":
        return any(_matches(rest, parts[k:]) for k in range(len(parts) + 1))
    return bool(parts) and bool(_segment(head).fullmatch(parts[0])) and _matches(rest, parts[1:])


def matches(pattern: str, rel_path: str) -> bool:
    """Whether the relative POSIX path ``rel_path`` matches the glob ``pattern``."""
    return _matches([s for s in pattern.split("/") if s != ""], rel_path.split("/"))


def glob(root: Path, pattern: str) -> list[Path]:
    """Every path under ``root`` (not ``root`` itself) whose relative POSIX path matches ``pattern``."""
    segments = [s for s in pattern.split("/") if s != ""]
    found: list[str] = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(directory).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        for name in dirnames + filenames:
            rel = prefix + name
            if _matches(segments, rel.split("/")):
                found.append(rel)
    return [root / rel for rel in sorted(found)]
