"""The form of a run reference: a run ID, or a prefix of one, as a command names it.

A run ID becomes a file name in the file store, so a reference is checked against this form before
any path is built from it: `../../tmp/x` or `a/b` can never name a run (as wait IDs are checked
against their pattern before any lookup).
"""

from __future__ import annotations

import re

from .errors import RunNotFound

# Letters, digits, `-` and `_`, starting with a letter or digit: a UUID (what swamp makes) and the
# hand-made IDs of older records both fit; `/`, `.`, NUL and the like never do.
RUN_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def is_run_id(text: object) -> bool:
    return isinstance(text, str) and RUN_REF.fullmatch(text) is not None


def check_run_ref(text: str) -> str:
    """`text` when it has the form of a run ID (or a prefix of one); run_not_found otherwise."""
    if not is_run_id(text):
        shown = repr(text)[:80]
        raise RunNotFound(
            f"{shown} is not a run ID or a prefix of one (letters, digits, '-' and '_', at most 64); "
            "list runs with: swamp workflow history",
            {"run": text if isinstance(text, str) else None, "reason": "malformed"},
        )
    return text
