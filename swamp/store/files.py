"""Durable file writes: a record is either the old one or the new one, never a torn mix."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_replace(path: Path, data: bytes) -> None:
    """Write to a temp file and rename it over `path`: never torn, but not forced to disk. For
    files that can be rebuilt (indexes)."""
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file, fsync, rename over `path`, fsync the directory."""
    fd, tmp = _temp_beside(path)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; records are as readable as the rest of the repo
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temp file in the folder of `path`, creating the folder only when it is missing (a
    mkdir per write is a system call the hot paths do not need)."""
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)


def append_line(path: Path, line: str | None) -> None:
    """Append one line (not fsynced; None creates the file), creating the folder only when it is
    missing."""
    try:
        handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a", encoding="utf-8")  # noqa: SIM115
    with handle:
        if line is not None:
            handle.write(line + "\n")
