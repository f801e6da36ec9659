"""Block until a file changes or a timeout passes, costing no CPU while nothing changes.

Why: `swamp workflow watch` waits on a run for hours; a poll loop that reads the record every
0.1 s costs a core's percent, and a slower one answers late. On Linux the kernel says when
something changed (inotify, through ctypes: no dependency); elsewhere, or when inotify cannot be
had (no libc symbol, the watch limit reached), a bounded poll compares each file's
(inode, size, mtime) every POLL_SECONDS.

A `Changes` is made BEFORE the caller reads the state it waits on, so a change between that read
and `wait` is not missed (inotify queues it; the poll compares against the signatures taken when
it was made). A wake-up may be spurious: the caller reads its state again and waits again.

Files are watched through their folder, so a file that is replaced by a rename (a run record),
created later (a journal), or appended to is seen; only events about the watched names (and their
swap and temp files, which start with "." + the name) wake the caller. A folder that does not
exist yet is watched through the nearest one that does, and the watches are armed again after each
wake-up. Issue 16 reuses this module.

Waiting on descriptors is `readable()` (poll, not select: select cannot wait on a descriptor
numbered 1,024 or more, which a serve with many connections and subscriptions reaches; SERVE-044).
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import struct
import sys
import time
from collections.abc import Iterable

POLL_SECONDS = 0.5

_IN_MODIFY = 0x2
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)
_HEADER = struct.Struct("iIII")


def readable(fds: Iterable[int], timeout: float | None) -> bool:
    """Wait until one of `fds` can be read (or has hung up), or `timeout` seconds (None: no limit)
    pass; whether one can. Any descriptor number works, unlike select()'s."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN | select.POLLPRI)
    milliseconds = None if timeout is None else max(0, math.ceil(timeout * 1000))
    return bool(poller.poll(milliseconds))


class Changes:
    """Watches files; `wait(timeout)` returns True when one may have changed, False when
    `timeout` seconds (None: no limit) passed without a change. `poll=True` forces the poll."""

    def __init__(
        self,
        paths: Iterable[str],
        *,
        folders: Iterable[str] = (),
        poll: bool = False,
        poll_seconds: float = POLL_SECONDS,
    ):
        self.paths = [os.path.abspath(p) for p in paths]
        self.folders = [os.path.abspath(f) for f in folders]  # any name in them (the event log's)
        self.poll_seconds = poll_seconds
        self._inotify: _Inotify | None = None
        if not poll and os.environ.get("SWAMP_NOTIFY") != "poll":
            self._inotify = _Inotify.open()
        if self._inotify is not None and not self._inotify.arm(self.paths, self.folders):
            self._inotify.close()
            self._inotify = None
        self._signatures = None if self._inotify is not None else self._signature()

    @property
    def mechanism(self) -> str:
        return "inotify" if self._inotify is not None else "poll"

    def wait(self, timeout: float | None) -> bool:
        if self._inotify is not None:
            changed = self._inotify.wait(timeout)
            if changed:
                self._inotify.arm(self.paths, self.folders)  # a folder may have been created
            return changed
        return self._poll(timeout)

    def _poll(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            current = self._signature()
            if current != self._signatures:
                self._signatures = current
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            time.sleep(self.poll_seconds if left is None else min(self.poll_seconds, left))

    def _signature(self) -> list[tuple[int, int, int] | None]:
        found: list[tuple[int, int, int] | None] = []
        names = []
        for folder in self.folders:
            try:
                names.extend(sorted(os.path.join(folder, n) for n in os.listdir(folder)))
            except OSError:
                found.append(None)
        for path in [*self.paths, *names]:
            try:
                st = os.stat(path)
            except OSError:
                found.append(None)
                continue
            found.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return found

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None

    def __enter__(self) -> Changes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Inotify:
    def __init__(self, fd: int, add_watch: object):
        self.fd = fd
        self._add_watch = add_watch
        self._names: dict[int, set[str] | None] = {}  # watch -> names that matter (None: any)
        self._armed: dict[str, tuple[int, set[str] | None]] = {}

    @classmethod
    def open(cls) -> _Inotify | None:
        if not sys.platform.startswith("linux"):
            return None
        import ctypes  # here: only a watching process pays for it

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init, add_watch = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError):
            return None
        init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
        add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        add_watch.restype = ctypes.c_int
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        return cls(fd, add_watch)

    def arm(self, paths: list[str], folders: Iterable[str] = ()) -> bool:
        """Watch the folder of every path (or its nearest existing ancestor), and every name in
        each of `folders` (or the nearest existing ancestor for the folder's name); False when the
        kernel refuses a watch (then the caller polls)."""
        wanted: dict[str, set[str] | None] = {}
        for path in [*paths, *(os.path.join(f, "") for f in folders)]:
            folder, name = os.path.split(path)
            while not os.path.isdir(folder):
                parent, name = os.path.split(folder)
                if parent == folder:
                    break
                folder = parent
            if not name:  # one of `folders`, and it exists: any name in it
                wanted[folder] = None
            elif folder not in wanted or wanted[folder] is not None:
                known = wanted.get(folder)
                wanted[folder] = (known or set()) | {name}
        for folder, names in wanted.items():
            armed = self._armed.get(folder)
            if armed is not None and (armed[1] is None or (names is not None and armed[1] >= names)):
                continue
            wd = self._add_watch(self.fd, os.fsencode(folder), _MASK)  # type: ignore[operator]
            if wd < 0:
                return False
            merged = None if names is None else names | (armed[1] or set() if armed else set())
            self._armed[folder] = (wd, merged)
            self._names[wd] = merged
        return True

    def wait(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not readable([self.fd], left):
                return False
            if self._relevant():
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def _relevant(self) -> bool:
        """Read every queued event; whether one is about a watched name."""
        relevant = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return relevant
            if not data:
                return relevant
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size : offset + _HEADER.size + length]
                offset += _HEADER.size + length
                if mask & (_IN_Q_OVERFLOW | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED):
                    if mask & _IN_IGNORED:  # the folder went away: arm again after this wake-up
                        self._forget(wd)
                    relevant = True
                    continue
                name = raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
                names = self._names.get(wd)
                if names is None or any(name == n or name.startswith("." + n) for n in names):
                    relevant = True

    def _forget(self, wd: int) -> None:
        self._names.pop(wd, None)
        for folder, (armed_wd, _) in list(self._armed.items()):
            if armed_wd == wd:
                del self._armed[folder]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
