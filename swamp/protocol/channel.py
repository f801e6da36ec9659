"""Where swamp's own output goes. In JSON modes (`--json`, `--jsonl`, serve on stdio) stdout must
carry our documents or frames only, so `protect_stdout` moves file descriptor 1 to stderr
(anything a model method or its subprocess prints lands there) and keeps a private handle on the
real stdout for us. It lives at the protocol layer because the protocol hosts need it; the
terminal output (cli/output.py) writes through `stdout()` too."""

from __future__ import annotations

import os
import sys
from typing import TextIO


class _Channel:
    stream: TextIO | None = None


def protect_stdout() -> TextIO:
    if _Channel.stream is None:
        sys.stdout.flush()
        private = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="surrogateescape")
        os.dup2(2, 1)
        _Channel.stream = private
    return _Channel.stream


def stdout() -> TextIO:
    """The real stdout: the private handle once protected, else sys.stdout."""
    return _Channel.stream or sys.stdout
