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

Following: every line's cursor must follow the one before it (seq + 1, from the segment's first
number on), and every segment the one before it (its first number is the last one's seq + 1);
a line or a segment that does not (planted by someone who can write the folder, or an old
version's) is skipped by appenders and readers alike and reported in `skipped` (EVENT-022), so
one planted line with a huge cursor neither moves the numbering nor hides what follows. Where the
log ends is kept in the lock file (the head: newest segment, its size and its last seq, written
under the lock after each append), so an append reads no more than the tail of its segment;
segments newer than the head, or of another epoch, are not the log's (EVENT-023). Cursors are
ordered as numbers: at least 12 digits, at most MAX_DIGITS (an append past that is refused).

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
Keeping the head (issue 26: read and check it, write it back) added about 15 us to an append
(400 appends, each by a fresh EventLog: median 36 us before, 51 us after, on the same machine).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..domain.errors import CursorExpired, CursorInvalid
from .files import _CLOEXEC, _NOFOLLOW, _write_all, refuse_links
from .repo import RepoLayout

SEGMENT_BYTES = 2 * 1024 * 1024
MAX_DIGITS = 18  # of a cursor's seq: at least 12, at most this (a PostgreSQL bigint holds it)
_HEAD_BYTES = 68  # "<epoch>-<first, 18 digits> <size, 20 digits> <seq, 18 digits>\n"
KEEP_SEGMENTS = 8
LOCK_SECONDS = 5.0  # an append gives up (the events are lost, and said so) past this
_HEX = frozenset("0123456789abcdef")
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def cursor_of(epoch: str, seq: int) -> str:
    return f"{epoch}-{seq:012d}"


_PAST_THE_LAST: int = 10**MAX_DIGITS  # the first sequence number a cursor cannot hold


def cursor_seq(text: str) -> int | None:
    """The sequence number a well-formed cursor holds; None when `text` is not a cursor."""
    return _seq(text) if _is_cursor(text) else None


def _fits(seq: int) -> bool:
    return seq < _PAST_THE_LAST


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
        # What this process skipped as not following its predecessor (EVENT-022), each said once.
        self.skipped: list[str] = []
        self._skipped_at: set[tuple[str, int]] = set()
        self._genuine: dict[tuple[str, int, int, int], bool] = {}  # (epoch, first, size, want)

    # -- writing ----------------------------------------------------------------------------------

    def append(self, events: list[dict[str, Any]]) -> list[str]:
        """Append `events` (each gains its `cursor`, in place) in one write; the cursors given."""
        if not events:
            return []
        with self._locked() as lock:
            epoch, first, fd = self._newest_for_append()
            try:
                last = self._last_seq(fd, first, epoch)
                if os.fstat(fd).st_size >= self.segment_bytes:
                    os.close(fd)
                    fd = -1
                    first = last + 1
                    fd = self._create(epoch, first)
                    last = self._follow(fd, epoch, first, 0, first - 1)  # what it holds already
                    self._prune()
                if not _fits(last + len(events)):
                    raise OSError(errno.EOVERFLOW, "the event log's cursors would pass 18 digits", self.where)
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
                _write_head(lock, epoch, first, os.fstat(fd).st_size, last + len(events))
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
            yield fd
        finally:
            os.close(fd)  # releases the lock

    def _newest_for_append(self) -> tuple[str, int, int]:
        """(epoch, first seq, descriptor open for appending) of the log's head segment, made (with
        a new epoch) when the log has none."""
        head = self._head(self._listing())
        if head is None:
            epoch = os.urandom(4).hex()
            return epoch, 1, self._create(epoch, 1)
        epoch, first = head
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

    def _last_seq(self, fd: int, first: int, epoch: str) -> int:
        """The seq of the segment's last line that follows its predecessor (first - 1 when none
        does). A torn last line (a crash or a full disk mid-write) is closed with a newline first."""
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            _write_all(fd, b"\n")
        return self._end(fd, epoch, first)

    def _end(self, fd: int, epoch: str, first: int) -> int:
        """Where the segment's chain of lines ends: from the head kept in the lock file when it
        names this segment (only what was appended since is read), else from its first line."""
        head = self._read_head()
        size = os.fstat(fd).st_size
        if head is not None and head[:2] == (epoch, first) and head[2] <= size:
            _, _, at, seq = head
            # Believed only where the line it ends at says so (a head read while it was being
            # written, or one forged, is not): then only what was appended since is followed.
            if (at == 0 or os.pread(fd, 1, at - 1) == b"\n") and _tail_seq(fd, first, epoch, at) == seq:
                return seq if at == size else self._follow(fd, epoch, first, at, seq)
        return self._follow(fd, epoch, first, 0, first - 1)

    def _follow(self, fd: int, epoch: str, first: int, offset: int, chain: int) -> int:
        """The last seq of the chain that goes on from `chain` at byte `offset` of the segment;
        every line on the way that does not follow is reported (EVENT-022)."""
        raw = os.pread(fd, max(0, os.fstat(fd).st_size - offset), offset)
        for _, seq, _ in self._chained(raw, offset, epoch, first, chain):
            chain = seq
        return chain

    def _chained(
        self, raw: bytes, offset: int, epoch: str, first: int, chain: int, end: int | None = None
    ) -> Iterator[tuple[dict[str, Any], int, int]]:
        """(event, its seq, the byte just past its line) for each whole line of `raw` (the segment
        from byte `offset` on) that follows the chain ending at `chain`: of this epoch, seq one more
        than the last, and not past `end` (where a closed segment ends). Every other line is
        reported and skipped (EVENT-022); an unreadable one is skipped."""
        position = offset
        for line in raw[: raw.rfind(b"\n") + 1].split(b"\n")[:-1]:  # whole lines only
            start = position
            position += len(line) + 1
            event = _event_of(line)
            if event is None:
                continue
            number = _seq(event["cursor"])
            if event["cursor"][:8] != epoch or number != chain + 1 or (end is not None and number > end):
                self._out_of_sequence(epoch, first, start, event["cursor"], cursor_of(epoch, chain))
                continue
            chain = number
            yield event, number, position

    def _read_head(self) -> tuple[str, int, int, int] | None:
        """(epoch, first, size, seq) of the head kept in the lock file; None when there is none
        (a log an older swamp wrote) or it does not read as one."""
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | _CLOEXEC | _NOFOLLOW)
        except OSError:
            return None
        try:
            text = os.pread(fd, _HEAD_BYTES, 0)
        except OSError:
            return None
        finally:
            os.close(fd)
        parts = text.decode("ascii", "replace").rstrip("\n").split(" ")
        if len(text) != _HEAD_BYTES or len(parts) != 3 or not _is_cursor(parts[0]):
            return None
        if not (parts[1].isascii() and parts[1].isdigit() and parts[2].isascii() and parts[2].isdigit()):
            return None
        return parts[0][:8], int(parts[0][9:]), int(parts[1]), int(parts[2])

    def _out_of_sequence(self, epoch: str, first: int, offset: int, cursor: str, after: str) -> None:
        key = (f"{epoch}-{first:012d}", offset)
        if key in self._skipped_at:
            return
        self._skipped_at.add(key)
        self.skipped.append(
            f"{self._shown(epoch, first)}, byte {offset}: a line with cursor {cursor[:40]} does not "
            f"follow {after}"
        )

    def _foreign(self, epoch: str, first: int, why: str) -> None:
        key = (f"{epoch}-{first:012d}", -1)
        if key in self._skipped_at:
            return
        self._skipped_at.add(key)
        self.skipped.append(f"{self._shown(epoch, first)}: a segment that does not follow the log ({why})")

    def _shown(self, epoch: str, first: int) -> str:
        return os.path.relpath(self._path(epoch, first), self.root)

    def count_skipped(self) -> int:
        """How many lines and segments the log holds that do not follow their predecessor
        (`store status`, EVENT-022): the whole log is read."""
        with contextlib.suppress(CursorExpired, CursorInvalid):
            self.read(None, 1 << 62)
        return len(self.skipped)

    # -- reading ----------------------------------------------------------------------------------

    def _listing(self) -> list[tuple[str, int]]:
        """(epoch, first seq) of every file in the folder named like a segment, by first seq."""
        refuse_links(self.root, self.folder)
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        found = [
            (int(name[9:-6]), name[:8]) for name in names if name.endswith(".jsonl") and _is_cursor(name[:-6])
        ]
        # One name a segment (`1` is `000000000001`, never `0000000000001`), or two files are one.
        given = set(names)
        found = [(first, epoch) for first, epoch in found if f"{epoch}-{first:012d}.jsonl" in given]
        found.sort()
        return [(epoch, first) for first, epoch in found]

    def _head(self, listing: list[tuple[str, int]]) -> tuple[str, int] | None:
        """The segment appended to last: the one the lock file's head names, or one that follows
        it (a rollover whose head was not written); without a head (a log an older swamp wrote),
        the newest. Never a newer segment that does not follow (EVENT-023)."""
        if not listing:
            return None
        head = self._read_head()
        if head is None or head[:2] not in listing:
            return listing[-1]
        epoch, first = head[:2]
        while any(e == epoch and f > first for e, f in listing):
            try:
                fd = os.open(self._path(epoch, first), os.O_RDONLY | _CLOEXEC | _NOFOLLOW)
            except FileNotFoundError:
                break
            try:
                end = self._end(fd, epoch, first)
            finally:
                os.close(fd)
            if (epoch, end + 1) not in listing:
                break
            first = end + 1
        return epoch, first

    def _segments(self) -> list[tuple[str, int]]:
        """(epoch, first seq) of the log's segments, oldest first: the head and, going back,
        each segment that holds the seq just before its successor's first. Any other file named
        like a segment (another epoch, newer than the head, or one the chain does not pass
        through) is not the log's: reported once and skipped (EVENT-023)."""
        listing = self._listing()
        head = self._head(listing)
        if head is None:
            return []
        epoch, first = head
        chain = [head]
        want = first - 1
        for e, f in reversed(listing):
            if (e, f) == head:
                continue
            if e != epoch:
                self._foreign(e, f, f"another log's epoch, not {epoch}")
            elif f > first:
                self._foreign(e, f, f"newer than the segment appended to last, {self._shown(epoch, first)}")
            elif f <= want and self._holds(e, f, want):
                chain.append((e, f))
                want = f - 1
            else:
                self._foreign(e, f, f"it does not end where the next segment begins, at {cursor_of(e, want)}")
        chain.reverse()
        return chain

    def _holds(self, epoch: str, first: int, seq: int) -> bool:
        """Whether the segment holds a line with cursor `seq` (searched from its end)."""
        try:
            fd = os.open(self._path(epoch, first), os.O_RDONLY | _CLOEXEC | _NOFOLLOW)
        except FileNotFoundError:
            return False
        try:
            size = os.fstat(fd).st_size
            key = (epoch, first, size, seq)
            if key not in self._genuine:
                self._genuine[key] = _holds_line(fd, size, f'{{"cursor":"{cursor_of(epoch, seq)}"'.encode())
            return self._genuine[key]
        finally:
            os.close(fd)

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
            return cursor_of(epoch, self._end(fd, epoch, first))
        finally:
            os.close(fd)

    def start(self) -> str:
        """The cursor of the log's end, creating the (empty) log when there is none, so a
        subscriber always has a position to resume from."""
        found = self.latest()
        if found is not None:
            return found
        with self._locked() as lock:
            epoch, first, fd = self._newest_for_append()
            try:
                if self._read_head() is None:
                    _write_head(lock, epoch, first, os.fstat(fd).st_size, self._last_seq(fd, first, epoch))
            finally:
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
            # A closed segment ends where the next begins: a line past that does not follow.
            end = segments[index + 1][1] - 1 if index + 1 < len(segments) else None
            hint = self._hint
            if hint is not None and hint[:3] == (epoch, seq, first):
                offset, chain = hint[3], seq
            else:
                offset, chain = 0, first - 1
            try:
                fd = os.open(self._path(epoch, first), os.O_RDONLY | _CLOEXEC | _NOFOLLOW)
            except FileNotFoundError:
                continue  # pruned between the listing and the open: list again
            try:
                raw = os.pread(fd, max(0, os.fstat(fd).st_size - offset), offset)
            finally:
                os.close(fd)
            for event, number, position in self._chained(raw, offset, epoch, first, chain, end):
                if number <= seq:
                    continue  # before `after`
                found.append(event)
                seq = number
                self._hint = (epoch, seq, first, position)
                if len(found) >= limit:
                    return found
            if end is None:
                return found
            seq = max(seq, end)  # this segment is closed: on to the next
        return found


def _seq(cursor: str) -> int:
    return int(cursor[9:])


def _tail_seq(fd: int, first: int, epoch: str | None = None, size: int | None = None) -> int:
    """The sequence number of the last whole (newline-ended) readable line of a segment (of its
    first `size` bytes)."""
    if size is None:
        size = os.fstat(fd).st_size
    span = 4096
    while True:
        start = max(0, size - span)
        tail = os.pread(fd, size - start, start)
        end = tail.rfind(b"\n")
        lines = tail[: end + 1].split(b"\n")[:-1]
        for line in reversed(lines[0 if start == 0 else 1 :]):  # the first may be cut short
            event = _event_of(line)
            if event is not None and (epoch is None or event["cursor"][:8] == epoch):
                return _seq(event["cursor"])
        if start == 0:
            return first - 1
        span *= 4


def _holds_line(fd: int, size: int, prefix: bytes) -> bool:
    """Whether a whole line of the file starts with `prefix`, searched from its end (where the
    line a closed segment ends with is), in growing spans."""
    span = 4096
    while True:
        start = max(0, size - span)
        lines = os.pread(fd, size - start, start).split(b"\n")
        if any(line.startswith(prefix) for line in lines[0 if start == 0 else 1 :]):
            return True
        if start == 0:
            return False
        span *= 4


def _write_head(fd: int, epoch: str, first: int, size: int, seq: int) -> None:
    """Where the log ends, into the lock file (held): one write of a fixed width."""
    os.pwrite(fd, f"{epoch}-{first:018d} {size:020d} {seq:018d}\n".encode("ascii"), 0)


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
    """`<8 lowercase hex digits>-<12 to MAX_DIGITS digits>` (a regular expression costs its
    compile at import: this module is on the signal path)."""
    return (
        21 <= len(text) <= 9 + MAX_DIGITS
        and text[8] == "-"
        and _HEX.issuperset(text[:8])
        and text[9:].isascii()
        and text[9:].isdigit()
    )
