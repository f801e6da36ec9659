"""The open index: `.swamp/index/open.log`, what shell completion offers without reading a record.

Why: a Tab starts a process; importing the store and reading every active record costs more than
the whole budget of a Tab (cli/tabcomplete.py reads this file instead, importing nothing but os).

The file is an append-only log under a header line. Every save of a run (store/runs.py) appends one
line, after the record: the run's status, the stat stamp of its record as saved, and its open
waits; a finished run gets a line saying so. The last line of a run wins. The stamp is how a reader
knows a line is still true: a line whose stamp is not the record's stat now (a crash between the
record and the line) is stale, and the reader asks the store instead; so is the index when a run
of the active-run index (`index/active/`, written before the record) has no line at all (a line
lost to a rebuild, or an account that cannot write here). So completion never offers a wait or
run the record no longer holds as it was, nor misses one the records hold.

Appends hold a shared lock on the file; compaction (keeping each run's last line, once per
COMPACT_EVERY bytes appended) takes it exclusively and renames a new file in, so no line is lost
to it. The file is created only by `rebuild` (from the active-run index), never by an append: a
missing file means "not built", and completion then rebuilds it after answering the slow way.
Only `os`, `errno` and `fcntl` are imported: the reader runs on every Tab.
"""

from __future__ import annotations

import errno
import fcntl
import os

TYPE_CHECKING = False  # not typing's: importing typing costs a Tab more than reading the index
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..domain.run import WorkflowRun

HEADER = b"# swamp open index 1\n"
NAME = "index/open.log"
# With the PostgreSQL store there is no record here to stamp lines with: completion keeps a copy
# of what is open, read from the store by a Tab that asked it, trusted for CACHE_SECONDS and
# dropped by every save made through this repository (store/pg/runs.py).
CACHE_HEADER = b"# swamp open cache 1\n"
CACHE_NAME = "index/open-cache.log"
CACHE_SECONDS = 30
COMPACT_EVERY = 1 << 20
ACTIVE = ("pending", "running", "suspended")
_FLAGS = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def index_path(datastore: str) -> str:
    return os.path.join(datastore, NAME)


def record_path(datastore: str, workflow_id: str, run_id: str) -> str:
    return f"{datastore}/workflow-runs/{workflow_id}/{run_id}.json"


def stamp_of(path: str) -> str:
    """What changes whenever a record is saved: its inode (saves swap two), size and mtime."""
    st = os.stat(path)
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


DESCRIPTION_CHARS = 40  # cli/tabcomplete.py shows no more beside a wait ID


def _clean(text: str) -> str:
    """One field of a line: no control character (the separators are tab, \\x1e, \\x1f, newline),
    each shown as a visible escape as the CLI shows it (CLI-030), so a Tab's help reads as click's."""
    from ..domain.visible import shown

    return shown(text).replace("\t", "\\x09").replace("\n", "\\x0a")


def _epoch(deadline: str) -> str:
    from ..domain.instants import parse_iso

    return repr(parse_iso(deadline).timestamp())


def line_for(run: WorkflowRun, stamp: str) -> bytes:
    """The run as completion sees it: runId, workflowId, workflowName, status, createdAt, stamp,
    then its open waits (waitId, job, step, deadline, the deadline in seconds since the epoch, the
    start of the wait's description)."""
    if run.status not in ACTIVE:
        return f"{run.id}\t-\n".encode()
    waits = "\x1e".join(
        "\x1f".join(
            _clean(text)
            for text in (
                s.wait.waitId,
                j.name,
                s.name,
                s.wait.deadline,
                _epoch(s.wait.deadline),
                (s.wait.description or "")[:DESCRIPTION_CHARS],
            )
        )
        for j, s in run.unsettled_waits()
        if s.wait is not None
    )
    fields = (run.id, run.workflowId, run.workflowName, run.status, run.createdAt, stamp)
    return ("\t".join(_clean(f) for f in fields) + "\t" + waits + "\n").encode("utf-8", "replace")


def note_saved(datastore: str, run: WorkflowRun, record: str) -> None:
    """Append the run's line after its record was saved (under its claim). Best effort: a line
    not written leaves a stale stamp, which readers detect."""
    path = index_path(datastore)
    try:
        stamp = stamp_of(record) if run.status in ACTIVE else ""
        line = line_for(run, stamp)
        for _ in range(3):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | _FLAGS)
            except FileNotFoundError:
                return  # not built: the next Tab builds it
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                if os.fstat(fd).st_ino != os.stat(path).st_ino:
                    continue  # compacted or rebuilt while we waited: append to the new file
                os.write(fd, line)
                end = os.lseek(fd, 0, os.SEEK_CUR)
            finally:
                os.close(fd)
            if end // COMPACT_EVERY != (end - len(line)) // COMPACT_EVERY:
                compact(path)
            return
    except Exception:  # noqa: BLE001 - the record is saved: a line not written costs a Tab speed, never the save
        return


def latest(data: bytes) -> dict[str, list[str]]:
    """Each run's last line, split into fields, for the runs not finished; torn or malformed lines
    (a crash mid-append) are skipped."""
    runs: dict[str, list[str]] = {}
    for raw in data.split(b"\n")[:-1]:  # the part after the last newline is torn
        if raw.startswith(b"#"):
            continue
        fields = raw.decode("utf-8", "replace").split("\t")
        if len(fields) == 2 and fields[1] == "-":
            runs.pop(fields[0], None)
        elif len(fields) == 7:
            runs[fields[0]] = fields
    return runs


def compact(path: str) -> None:
    """Keep each run's last line; skipped when another process holds the file."""
    try:
        fd = os.open(path, os.O_RDONLY | _FLAGS)
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return
        if os.fstat(fd).st_ino != os.stat(path).st_ino:
            return
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
        if not data.startswith(HEADER):
            return
        _write(path, ("\t".join(f) + "\n" for f in latest(data).values()))
    except OSError:
        return
    finally:
        os.close(fd)


def _write(path: str, lines: Iterable[str], header: bytes = HEADER) -> None:
    """Replace `path` (under `.swamp/index`), never through a symbolic link (store/files.py)."""
    folder = os.path.dirname(path)
    if os.path.islink(folder) or os.path.islink(os.path.dirname(folder)):
        raise OSError(errno.ELOOP, "is a symbolic link", folder)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(header + "".join(lines).encode("utf-8", "replace"))
    os.replace(temporary, path)


def cache_path(datastore: str) -> str:
    return os.path.join(datastore, CACHE_NAME)


def cache_header(store: str) -> bytes:
    """The cache's first lines: which store it copies (a cache of another one is not used)."""
    return CACHE_HEADER + f"# store {_clean(store)}\n".encode("utf-8", "replace")


def write_cache(datastore: str, store: str, runs: Iterable[WorkflowRun]) -> None:
    """With the PostgreSQL store: what completion offers for the next CACHE_SECONDS, as read from
    the store just now (no stamp: there is no record here to compare)."""
    os.makedirs(os.path.dirname(cache_path(datastore)), exist_ok=True)
    lines = (line_for(run, "-").decode("utf-8") for run in runs)
    _write(cache_path(datastore), lines, cache_header(store))


def drop_cache(datastore: str) -> None:
    """A save through this repository: the cache no longer holds (the next Tab asks the store)."""
    try:  # noqa: SIM105 (contextlib is one more import on every Tab)
        os.unlink(cache_path(datastore))
    except OSError:
        pass


def start_empty(datastore: str) -> None:
    """A repository with no run yet: its index holds none (`repo init`)."""
    rebuild(datastore, ())


def rebuild(datastore: str, runs: Iterable[WorkflowRun]) -> None:
    """Write the index afresh from `runs` (the active runs, read from their records)."""
    lines = []
    for run in runs:
        try:
            stamp = stamp_of(record_path(datastore, run.workflowId, run.id))
        except OSError:
            continue
        lines.append(line_for(run, stamp).decode("utf-8"))
    os.makedirs(os.path.dirname(index_path(datastore)), exist_ok=True)
    _write(index_path(datastore), lines)
