"""The record text each recently read run was parsed from, so that reading a run again (under its
claim, after checks made without it) can hand back the very run read before when its record has
not changed since: a signal parsed the same record twice (issue 31), and parsing is the larger part
of its work in Python. Only for a caller that has not changed the run it read."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..domain.run import WorkflowRun

KEPT = 16  # runs remembered; a serve's threads each read a few at a time


class ReadTexts:
    def __init__(self) -> None:
        self._texts: OrderedDict[int, tuple[WorkflowRun, str | bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, run: WorkflowRun, text: str | bytes) -> None:
        with self._lock:
            self._texts[id(run)] = (run, text)
            self._texts.move_to_end(id(run))
            while len(self._texts) > KEPT:
                self._texts.popitem(last=False)

    def unchanged(self, run: WorkflowRun, text: str | bytes) -> bool:
        """Whether `run` was parsed from `text` (its record as stored now)."""
        with self._lock:
            kept = self._texts.get(id(run))
        return kept is not None and kept[0] is run and kept[1] == text
