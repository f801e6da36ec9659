"""Held early signals: .swamp/held/<waitId>.json, one file per reserved wait.

Why a file per wait, created exclusively: a signal sent to a reserved wait before its step opens
must be kept durably without the run's claim (the process executing the run holds it), and at most
one may be kept per wait. The file is written beside its name, flushed, then published under its
name with link(2), which fails when the name exists: two early signals cannot both be held, and a
reader never sees half a file. The file is removed only after the record that applied (or the
audit entry that refused) it is durable, so a crash between the two leaves a file whose wait has
settled, which the next holder of the claim removes (app/held.py).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable

from ..domain.held import HeldSignal
from ..domain.records import RecordError, read_record, write_record
from .counts import fsync
from .files import _fsync_dir, _write_all, read_file, refuse_links
from .repo import RepoLayout

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class HeldStore:
    def __init__(self, layout: RepoLayout):
        self.layout = layout
        self.folder = str(layout.datastore / "held")

    def _path(self, wait_id: str) -> str:
        return f"{self.folder}/{wait_id}.json"

    def _checked_folder(self) -> None:
        refuse_links(str(self.layout.root), self.folder)
        os.makedirs(self.folder, exist_ok=True)

    def hold(self, held: HeldSignal) -> bool:
        """Keep `held` durably; False (nothing written) when its wait already holds one."""
        self._checked_folder()
        record = {**write_record(held), "payload": held.payload}  # a null payload is written too
        data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        tmp = f"{self.folder}/.{held.waitId}.{os.urandom(6).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
        try:
            try:
                _write_all(fd, data)
                fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, self._path(held.waitId))
            except FileExistsError:
                return False
            _fsync_dir(self.folder)
            return True
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def read(self, wait_id: str) -> HeldSignal | None:
        """The signal held for `wait_id`, or None (an unreadable file counts as none)."""
        try:
            data = json.loads(read_file(self._path(wait_id)))
            return read_record(HeldSignal, data, "held signal")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecordError):
            return None

    def exists(self, wait_id: str) -> bool:
        return os.path.lexists(self._path(wait_id))

    def exists_with_next_read(self, wait_id: str) -> Callable[[], bool]:
        return lambda: self.exists(wait_id)  # a file is looked at when asked

    def discard(self, wait_id: str) -> bool:
        """Remove the held signal; True iff this call removed it (so exactly one caller did)."""
        try:
            os.unlink(self._path(wait_id))
        except FileNotFoundError:
            return False
        return True
