"""Durable file writes: a record is either the old one or the new one, never a torn mix."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path
from typing import Any

from .counts import fsync


def write_replace(path: Path, data: bytes) -> None:
    """Write to a temp file and rename it over `path`: never torn, but not forced to disk. For
    files that can be rebuilt (indexes)."""
    _replace(path, data, durable=False)


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file, fsync, rename over `path`, fsync the directory."""
    _replace(path, data, durable=True)
    _fsync_dir(path.parent)


def write_record(path: Path | str, data: bytes, *, final: bool = False) -> None:
    """Durably replace `path`, a file that only one writer at a time changes (a run record, under
    its run's claim), by way of its swap file `.<name>.swap` beside it. The new bytes are written
    into the swap file and flushed, the swap file and `path` exchange names in one atomic step,
    and the directory is flushed. The swap file then holds the old bytes and is overwritten by the
    next write, so a write neither creates nor frees an inode: on ext4 without a journal, creating
    an inode scans past every inode freed in the last minutes, which made each rename-over write
    slower than the one before. `final` (the last write of the file) renames the swap file over
    `path` instead, leaving no swap file behind; so does every write where names cannot be
    exchanged (no renameat2, or a file system without RENAME_EXCHANGE)."""
    folder, name = os.path.split(path)
    swap = os.path.join(folder, f".{name}.swap")
    fd, created = _open_swap(swap)
    try:
        try:
            _write_all(fd, data)
            os.ftruncate(fd, len(data))
            fsync(fd)
        finally:
            os.close(fd)
        if final or not _exchange(swap, os.fspath(path)):
            os.replace(swap, path)
    except BaseException:
        if created:  # a swap file this write made is not left behind by it
            with contextlib.suppress(OSError):
                os.unlink(swap)
        raise
    _fsync_dir(folder)


def _open_swap(swap: str) -> tuple[int, bool]:
    """The swap file open for writing from its start, and whether it was created just now. Never
    through a symbolic link; created with the process umask, as every file swamp makes."""
    try:
        return os.open(swap, os.O_WRONLY | _CLOEXEC | _NOFOLLOW), False
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC | _NOFOLLOW
    try:
        return os.open(swap, flags, 0o666), True
    except FileNotFoundError:
        os.makedirs(os.path.dirname(swap), exist_ok=True)
        return os.open(swap, flags, 0o666), True


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# Every open under .swamp/ refuses a symbolic link as its last name (ELOOP), so a link planted
# there never makes a write land outside the repository; refuse_links checks the folders above.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2: Any = None  # libc's renameat2 once looked up; False where there is none


def _exchange(a: str, b: str) -> bool:
    """Swap the names `a` and `b` atomically (renameat2 RENAME_EXCHANGE); False when `b` does not
    exist yet or the system cannot exchange names, so the caller renames instead."""
    global _renameat2
    if not _exchange_supported():
        return False
    import ctypes

    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.ENOENT:
        return False
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EPERM):
        _renameat2 = False  # this file system (or sandbox) does not exchange: rename from now on
        return False
    raise OSError(err, os.strerror(err), b)


def _exchange_supported() -> bool:
    global _renameat2
    if _renameat2 is None:
        _renameat2 = _load_renameat2()
    return _renameat2 is not False


def _load_renameat2() -> Any:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # here: only a process that writes a record pays for the import

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # no libc symbol (an old glibc, or another C library)
        return False
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def _fsync_dir(folder: Path | str) -> None:
    dir_fd = os.open(folder, os.O_RDONLY | _DIRECTORY)
    try:
        fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _replace(path: Path, data: bytes, *, durable: bool) -> None:
    fd, tmp = _temp_beside(path)
    try:
        try:
            _write_all(fd, data)
            if durable:
                fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temp file (with the process umask) in the folder of `path`, creating the folder only
    when it is missing (a mkdir per write is a system call the hot paths do not need)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC | _NOFOLLOW
    for attempt in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:
            if attempt:
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
    raise FileExistsError(f"no free temp file name beside {path}")


def append_line(path: Path | str, line: str | None) -> None:
    """Append one line (not fsynced; None creates the file), creating the folder only when it is
    missing."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _CLOEXEC | _NOFOLLOW
    try:
        fd = os.open(path, flags, 0o666)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o666)
    try:
        if line is not None:
            _write_all(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def read_file(path: Path | str) -> bytes:
    """The whole file, with fewer system calls and objects than Path.read_bytes (a hot path).
    Read without touching its access time where the OS allows (an atime update is an inode write
    that the next fsync has to commit)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOATIME | _NOFOLLOW | _CLOEXEC)
    except PermissionError:  # O_NOATIME is for the file's owner only
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
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


def refuse_links(base: str, folder: str) -> None:
    """Raise OSError(ELOOP) naming the first folder between `base` (excluded) and `folder`
    (included) that is a symbolic link; a folder that does not exist yet ends the check."""
    if not folder.startswith(base + "/"):
        return
    current = base
    for name in folder[len(base) + 1 :].split("/"):
        if not name:
            continue
        current = f"{current}/{name}"
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):
            raise OSError(errno.ELOOP, "is a symbolic link", current)
