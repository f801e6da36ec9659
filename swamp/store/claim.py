"""The run claim: one process at a time may change a run.

A claim is an exclusive lock on .swamp/locks/<runId>.lock, held from re-reading the record to saving
it (and by run and resume for as long as they execute). The OS releases it when the holder dies, so
a crashed process never blocks the next command. Waiting is bounded; past the bound the command
gives up with ClaimTimeout (exit 75) and can simply be retried.

The lock is fcntl.flock on POSIX (portalocker's own mechanism there, without the ~90 ms its
package import costs on the start-up path of `swamp workflow signal`); portalocker elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from ..domain.errors import ClaimTimeout, StorageError
from .files import refuse_links
from .repo import RepoLayout

DEFAULT_TIMEOUT = 5.0
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
_LOCK_FLAGS |= getattr(os, "O_NOFOLLOW", 0)
POLL_SECONDS = 0.02

try:
    import fcntl

    def _try_lock(handle: Any) -> bool:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

    def _try_lock(handle: Any) -> bool:
        import portalocker

        try:
            portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.exceptions.LockException:
            return False
        return True


def default_timeout() -> float:
    raw = os.environ.get("SWAMP_CLAIM_TIMEOUT")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if math.isfinite(value) and value >= 0 else DEFAULT_TIMEOUT


class RunClaim:
    def __init__(self, layout: RepoLayout, run_id: str, *, timeout: float | None = None, purpose: str = ""):
        self._file = f"{layout.locks_dir}/{run_id}.lock"  # a plain string: this is on every hot path
        self._root = str(layout.root)
        self.run_id = run_id
        chosen = default_timeout() if timeout is None else timeout
        # NaN or infinity would wait forever: a bound that is not a finite number is the default.
        self.timeout = chosen if math.isfinite(chosen) and chosen >= 0 else DEFAULT_TIMEOUT
        self.purpose = purpose
        self._handle: Any = None

    @property
    def path(self) -> Path:
        return Path(self._file)

    def acquire(self) -> RunClaim:
        handle = self._open()
        deadline = time.monotonic() + self.timeout
        while not _try_lock(handle):
            if time.monotonic() >= deadline:
                holder = self._holder(handle)
                handle.close()
                raise ClaimTimeout(
                    f"Run {self.run_id} is busy{holder} and its claim could not be had within "
                    f"{self.timeout:g}s; try again (or raise --claim-timeout)",
                    {"runId": self.run_id, "timeout": self.timeout},
                )
            time.sleep(POLL_SECONDS)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "purpose": self.purpose}).encode())
        self._handle = handle
        return self

    def try_acquire(self) -> bool:
        """Take the claim only if it is free right now."""
        handle = self._open()
        if not _try_lock(handle):
            handle.close()
            return False
        self._handle = handle
        return True

    def _open(self) -> Any:
        """The lock file, open for the life of the claim; never through a symbolic link (neither
        the file nor .swamp/locks), created with the process umask. StorageError when it cannot
        be opened: read-only storage, no write access, or a file where .swamp/locks should be."""
        try:
            refuse_links(self._root, os.path.dirname(self._file))
            try:
                fd = os.open(self._file, _LOCK_FLAGS, 0o666)
            except FileNotFoundError:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self._file, _LOCK_FLAGS, 0o666)
        except OSError as exc:
            raise StorageError.from_os_error(exc, "open the run's claim") from None
        return open(fd, "a+b", buffering=0)  # noqa: SIM115 - held for the life of the claim

    def release(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                # The next holder may not be a swamp that says who it is. (Only when something is
                # written: truncating an empty file still dirties its inode.)
                if os.fstat(self._handle.fileno()).st_size:
                    self._handle.truncate(0)
            self._handle.close()
            self._handle = None

    @staticmethod
    def _holder(handle: Any) -> str:
        try:
            handle.seek(0)
            info = json.loads(handle.read() or "{}")
        except (OSError, ValueError):
            return ""
        if not info.get("pid"):
            return ""
        return f" (held by pid {info['pid']}{': ' + info['purpose'] if info.get('purpose') else ''})"

    def __enter__(self) -> RunClaim:
        if self._handle is None:
            self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def is_held(layout: RepoLayout, run_id: str) -> bool:
    """Whether some live process holds the run's claim (used to spot interrupted runs)."""
    probe = RunClaim(layout, run_id)
    if probe.try_acquire():
        probe.release()
        return False
    return True


class Announcement:
    """A shared flock on locks/<name>.lock held for the life of a process, to say to every other
    process of the repository that it is alive and doing something (a serve enforcing deadlines:
    locks/deadlines.lock, SERVE-047). Any number of processes hold it at once; the OS lets go of
    it when the holder dies, so a crashed serve is never announced."""

    def __init__(self, layout: RepoLayout, name: str):
        self._claim = RunClaim(layout, name)
        self._handle: Any = None

    def hold(self) -> Announcement:
        handle = self._claim._open()
        if fcntl is None:  # pragma: no cover - not POSIX
            raise StorageError("announcing a serve needs flock(2)", {})
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        self._handle = handle
        return self

    def renew(self) -> None:
        """Nothing to do: a flock lasts as long as its descriptor."""

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.close()


def announced(layout: RepoLayout, name: str) -> bool:
    """Whether a live process holds locks/<name>.lock (shared or not). Read-only: the file is
    neither created nor written, so an account that may only read the repository can ask."""
    path = f"{layout.locks_dir}/{name}.lock"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False  # never announced here (or not readable: nothing to go on)
    try:
        if fcntl is None:  # pragma: no cover - not POSIX
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
