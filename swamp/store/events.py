"""The repository's event log: every published change of every run, in one total order.

Why: a program subscribed through `swamp serve` must learn of a wait that a CLI in another
terminal opened. Every process that saves a run appends what the save changed here (app/publish.py),
and subscribers read it from any process (events.subscribe, `swamp events`), resuming after the
last cursor they saw.

Layout (a file-store detail; issue 17 puts a database table behind the same three calls):
`.swamp/events/<epoch>-<first seq, 12 digits>.jsonl`, append-only segments, one published event a
line, each carrying its `cursor`, `<epoch>-<seq, 12 digits>`. `seq` counts from 1, gap-free across
segments; `epoch` is 8 random hex digits chosen when the log is created, so a cursor of a log that
was deleted is never mistaken for a position in the new one. Appends take an exclusive flock on
`.swamp/locks/events.lock` (outside the folder, so taking it wakes no subscriber), read the last
sequence number from the newest segment's tail, and write their lines in one write(2): cursors are
gap-free and totally ordered whichever process appends. Every open refuses a symbolic link.

Bounded: a segment is closed once it holds SEGMENT_BYTES and a new one begins; only the newest
KEEP_SEGMENTS are kept (about 16 MiB). A cursor older than the oldest kept event is refused
(`cursor_expired`, with the oldest cursor still usable in details), so a subscriber knows it missed
events and can re-read the runs, instead of silently skipping them.

Not fsynced, like the run journal: the record is the durable truth, the log is for telling. A
process killed after its save and before its append (or an append that fails: disk full, EACCES)
loses those events: subscribers never see them, and the next event has the next cursor (no gap
marks the loss). A line torn by a crash or a full disk is closed by the next append and skipped by
readers; its sequence number is given to the next event, so cursors stay gap-free.

Cost: one append is ~12 system calls (lock, list the folder, open, stat, read the tail, write,
close, unlock) and the JSON encoding: about 1 ms of a `workflow signal` under cProfile, import
included (no regular expression, no `secrets`: this module is on the signal path). Measured on a
loaded 2-core machine, `workflow signal` interleaved with the tree before the log, 25 each:
median 312.8 ms before, 318.2 ms after (`python -c pass` 41.6 ms: 7.52x and 7.65x), within the
noise; scripts/bench/serve's pipelined signals per second (400 runs, 3 bursts, two rounds) 143
and 344 before, 176 and 303 after, the disk's durable-write floor moving more than either.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Callable
from typing import Any

from ..domain.errors import CursorExpired, CursorInvalid
from .files import _CLOEXEC, _NOFOLLOW, _write_all, refuse_links
from .repo import RepoLayout

SEGMENT_BYTES = 2 * 1024 * 1024
KEEP_SEGMENTS = 8
LOCK_SECONDS = 5.0  # an append gives up (the events are lost, and said so) past this
_HEX = frozenset("0123456789abcdef")
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def cursor_of(epoch: str, seq: int) -> str:
    return f"{epoch}-{seq:012d}"


def check_cursor(
    after: str, epoch: str | None, oldest_seq: int, last_seq: Callable[[], int]
) -> tuple[str, int]:
    """(epoch, seq) of `after` in a log of `epoch` (None: no log yet) that keeps the events after
    `oldest_seq` up to `last_seq()`; else CursorInvalid or CursorExpired. The rules every store's
    event log keeps (the PostgreSQL one too)."""
    if not isinstance(after, str) or not _is_cursor(after):
        raise CursorInvalid(
            f"{after!r} is not an event cursor; pass the 'cursor' of an event (or of a result) "
            "this repository gave, or leave it out to start at the end of the log",
            {"cursor": after},
        )
    oldest = None if epoch is None else cursor_of(epoch, oldest_seq)
    if epoch is None or after[:8] != epoch:
        raise CursorExpired(
            f"cursor {after} is from an event log this repository no longer has; resume from "
            f"the oldest cursor kept ({oldest or 'none: leave --after out'}) and re-read the runs",
            {"cursor": after, "oldest": oldest},
        )
    seq, last = _seq(after), last_seq()
    if seq > last:
        raise CursorInvalid(
            f"cursor {after} is past the end of this repository's event log; pass a cursor it gave",
            {"cursor": after, "latest": cursor_of(epoch, last)},
        )
    if seq < oldest_seq:
        raise CursorExpired(
            f"the events after cursor {after} are no longer kept; resume from the oldest cursor "
            f"kept ({oldest}) and re-read the runs (swamp workflow history) for what was missed",
            {"cursor": after, "oldest": oldest},
        )
    return epoch, seq


def events_dir(layout: RepoLayout) -> str:
    return f"{layout.datastore}/events"


class EventLog:
    """`append(events)` from any process; `read(after, limit)` and `latest()` from any other."""

    def __init__(
        self, layout: RepoLayout, *, segment_bytes: int = SEGMENT_BYTES, keep_segments: int = KEEP_SEGMENTS
    ):
        self.layout = layout
        self.root = str(layout.root)
        self.folder = events_dir(layout)
        self.lock_path = f"{layout.locks_dir}/events.lock"
        self.segment_bytes = segment_bytes
        self.keep_segments = max(1, keep_segments)
        # Where the last read ended: (epoch, seq, segment first seq, byte offset), so a follower
        # reads only what was appended since instead of its whole segment again.
        self._hint: tuple[str, int, int, int] | None = None
        self.where = self.folder
        self.warned = False  # a failed append was reported (app/publish.py says it once)
        # The last segment retention could not drop, and why; app/publish.py says it once.
        self.retention_blocked: tuple[str, str] | None = None
        self.retention_warned = False

    # -- writing ----------------------------------------------------------------------------------

    def append(self, events: list[dict[str, Any]]) -> list[str]:
        """Append `events` (each gains its `cursor`, in place) in one write; the cursors given."""
        if not events:
            return []
        with self._locked():
            epoch, first, fd = self._newest_for_append()
            try:
                last = self._last_seq(fd, first)
                if os.fstat(fd).st_size >= self.segment_bytes:
                    os.close(fd)
                    fd = -1
                    first = last + 1
                    fd = self._create(epoch, first)
                    self._prune()
                cursors = []
                lines = []
                for offset, event in enumerate(events, start=1):
                    cursor = cursor_of(epoch, last + offset)
                    event.pop("cursor", None)
                    stamped = {"cursor": cursor, **event}
                    event.clear()
                    event.update(stamped)
                    cursors.append(cursor)
                    lines.append(_encode(stamped))
                _write_all(fd, ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
                return cursors
            finally:
                if fd >= 0:
                    os.close(fd)

    @contextlib.contextmanager
    def _locked(self) -> Any:
        refuse_links(self.root, str(self.layout.locks_dir))
        flags = os.O_RDWR | os.O_CREAT | _CLOEXEC | _NOFOLLOW
        try:
            fd = os.open(self.lock_path, flags, 0o666)
        except FileNotFoundError:
            os.makedirs(self.layout.locks_dir, exist_ok=True)
            fd = os.open(self.lock_path, flags, 0o666)
        try:
            import fcntl

            deadline = time.monotonic() + LOCK_SECONDS
            pause = 0.0005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise OSError(
                            errno.EWOULDBLOCK, "the event log's lock is held", self.lock_path
                        ) from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.01)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _newest_for_append(self) -> tuple[str, int, int]:
        """(epoch, first seq, descriptor open for appending) of the newest segment, made when the
        log has none."""
        segments = self._segments()
        if not segments:
            epoch = os.urandom(4).hex()
            return epoch, 1, self._create(epoch, 1)
        epoch, first = segments[-1]
        path = self._path(epoch, first)
        return epoch, first, os.open(path, os.O_RDWR | os.O_APPEND | _CLOEXEC | _NOFOLLOW)

    def _create(self, epoch: str, first: int) -> int:
        path = self._path(epoch, first)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | _CLOEXEC | _NOFOLLOW
        try:
            return os.open(path, flags, 0o666)
        except FileNotFoundError:
            os.makedirs(self.folder, exist_ok=True)
            return os.open(path, flags, 0o666)

    def _prune(self) -> None:
        """Drops the segments past the newest `keep_segments`, oldest first. One it cannot drop
        (another account's file in a sticky shared folder, say) costs nothing of this append: it
        and every newer segment are kept, so what is kept stays gap-free (a reader after a cursor
        in it misses nothing), the log grows past its bound, the segment is recorded in
        `retention_blocked` for the caller to say, and the next rollover tries again (EVENT-013)."""
        segments = self._segments()
        for epoch, first in segments[: max(0, len(segments) - self.keep_segments)]:
            path = self._path(epoch, first)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                self.retention_blocked = (path, exc.strerror or str(exc))
                return

    def _last_seq(self, fd: int, first: int) -> int:
        """The sequence number of the segment's last whole line (first - 1 when it has none). A
        torn last line (a crash or a full disk mid-write) is closed with a newline first."""
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            _write_all(fd, b"\n")
        return _tail_seq(fd, first)

    # -- reading ----------------------------------------------------------------------------------

    def _segments(self) -> list[tuple[str, int]]:
        """(epoch, first seq) of every segment of the current epoch, oldest first."""
        refuse_links(self.root, self.folder)
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            if name.endswith(".jsonl") and _is_cursor(name[:-6]):
                found.append((int(name[9:21]), name[:8]))
        if not found:
            return []
        found.sort()
        epoch = found[-1][1]
        return [(e, first) for first, e in found if e == epoch]

    def _path(self, epoch: str, first: int) -> str:
        return f"{self.folder}/{epoch}-{first:012d}.jsonl"

    def changes(self) -> Any:
        """Wakes a subscriber when the log's folder changes (inotify where there is one)."""
        from .notify import Changes

        return Changes([], folders=[self.folder])

    def latest(self) -> str | None:
        """The cursor of the last event (of the log's start when it has none; None: no log yet)."""
        segments = self._segments()
        if not segments:
            return None
        epoch, first = segments[-1]
        try:
            fd = os.open(self._path(epoch, first), os.O_RDONLY | _CLOEXEC | _NOFOLLOW)
        except FileNotFoundError:
            return self.latest()  # pruned or replaced between the listing and the open
        try:
            return cursor_of(epoch, _tail_seq(fd, first))
        finally:
            os.close(fd)

    def start(self) -> str:
        """The cursor of the log's end, creating the (empty) log when there is none, so a
        subscriber always has a position to resume from."""
        found = self.latest()
        if found is not None:
            return found
        with self._locked():
            epoch, first, fd = self._newest_for_append()
            os.close(fd)
        found = self.latest()
        assert found is not None
        return found

    def check(self, after: str) -> tuple[str, int]:
        """(epoch, seq) of a cursor this log can resume after, or CursorInvalid / CursorExpired."""
        segments = self._segments()
        if not segments:
            return check_cursor(after, None, 0, lambda: 0)
        return check_cursor(after, segments[0][0], segments[0][1] - 1, lambda: self._last_known(segments))

    def _last_known(self, segments: list[tuple[str, int]]) -> int:
        latest = self.latest()
        return segments[-1][1] - 1 if latest is None else _seq(latest)

    def read(self, after: str | None, limit: int) -> list[dict[str, Any]]:
        """At most `limit` events after the cursor `after` (None: from the oldest kept), in log
        order. CursorInvalid / CursorExpired for a cursor the log cannot resume after (also when
        the events after it were pruned while reading)."""
        if after is None:
            segments = self._segments()
            if not segments:
                return []
            epoch, seq = segments[0][0], segments[0][1] - 1
        else:
            epoch, seq = self.check(after)
        found: list[dict[str, Any]] = []
        while len(found) < limit:
            segments = self._segments()
            if not segments or segments[0][0] != epoch or seq + 1 < segments[0][1]:
                self.check(cursor_of(epoch, seq))  # pruned (or the log replaced) since: refused
            index = max(i for i, (_, first) in enumerate(segments) if first <= seq + 1)
            first = segments[index][1]
            hint = self._hint
            offset = hint[3] if hint is not None and hint[:3] == (epoch, seq, first) else 0
            try:
                fd = os.open(self._path(epoch, first), os.O_RDONLY | _CLOEXEC | _NOFOLLOW)
            except FileNotFoundError:
                continue  # pruned between the listing and the open: list again
            try:
                raw = os.pread(fd, max(0, os.fstat(fd).st_size - offset), offset)
            finally:
                os.close(fd)
            position = offset
            for line in raw[: raw.rfind(b"\n") + 1].split(b"\n")[:-1]:  # whole lines only
                position += len(line) + 1
                event = _event_of(line)
                if event is None or _seq(event["cursor"]) <= seq:
                    continue
                found.append(event)
                seq = _seq(event["cursor"])
                self._hint = (epoch, seq, first, position)
                if len(found) >= limit:
                    return found
            if index + 1 >= len(segments):
                return found
            seq = max(seq, segments[index + 1][1] - 1)  # this segment is closed: on to the next
        return found


def _seq(cursor: str) -> int:
    return int(cursor[9:])


def _tail_seq(fd: int, first: int) -> int:
    """The sequence number of the last whole (newline-ended) readable line of a segment."""
    size = os.fstat(fd).st_size
    span = 4096
    while True:
        start = max(0, size - span)
        tail = os.pread(fd, size - start, start)
        end = tail.rfind(b"\n")
        lines = tail[: end + 1].split(b"\n")[:-1]
        for line in reversed(lines[0 if start == 0 else 1 :]):  # the first may be cut short
            seq = _seq_of(line)
            if seq is not None:
                return seq
        if start == 0:
            return first - 1
        span *= 4


def _seq_of(line: bytes) -> int | None:
    event = _event_of(line)
    return None if event is None else _seq(event["cursor"])


def _event_of(line: bytes) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("cursor"), str):
        return None
    if not _is_cursor(event["cursor"]):
        return None
    return event


def _is_cursor(text: str) -> bool:
    """`<8 lowercase hex digits>-<12 digits>` (a regular expression costs its compile at import:
    this module is on the signal path)."""
    return (
        len(text) == 21
        and text[8] == "-"
        and _HEX.issuperset(text[:8])
        and text[9:].isascii()
        and text[9:].isdigit()
    )
