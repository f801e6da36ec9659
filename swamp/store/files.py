"""Durable file writes: a record is either the old one or the new one, never a torn mix."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_replace(path: Path, data: bytes) -> None:
    """Write to a temp file and rename it over `path`: never torn, but not forced to disk. For
    files that can be rebuilt (indexes)."""
    _replace(path, data, durable=False)


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file, fsync, rename over `path`, fsync the directory."""
    _replace(path, data, durable=True)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _replace(path: Path, data: bytes, *, durable: bool) -> None:
    fd, tmp = _temp_beside(path)
    try:
        try:
            if durable:
                os.fchmod(fd, 0o644)  # temp files are 0600; records are as readable as the repo
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temp file (0600) in the folder of `path`, creating the folder only when it is missing
    (a mkdir per write is a system call the hot paths do not need)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:
            if attempt:
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
    raise FileExistsError(f"no free temp file name beside {path}")


def append_line(path: Path, line: str | None) -> None:
    """Append one line (not fsynced; None creates the file), creating the folder only when it is
    missing."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        if line is not None:
            _write_all(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def read_file(path: Path) -> bytes:
    """The whole file, with fewer system calls and objects than Path.read_bytes (a hot path).
    Read without touching its access time where the OS allows (an atime update is an inode write
    that the next fsync has to commit)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOATIME)
    except PermissionError:  # O_NOATIME is for the file's owner only
        fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, os.fstat(fd).st_size + 1)]
        while chunks[-1]:  # the file grew, or it is not a regular file
            chunks.append(os.read(fd, 1 << 20))
        return b"".join(chunks)
    finally:
        os.close(fd)


_NOATIME = getattr(os, "O_NOATIME", 0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
