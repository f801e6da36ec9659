"""The durable record write (RUN-002): a swap file exchanged with the record, so a write neither
creates nor frees an inode, and a rename where names cannot be exchanged."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from swamp.store import files


def swap_of(path: Path) -> Path:
    return path.parent / f".{path.name}.swap"


def test_the_first_write_renames_and_leaves_no_swap_file(tmp_path: Path) -> None:
    record = tmp_path / "runs" / "r.json"
    files.write_record(record, b"one\n")
    assert record.read_bytes() == b"one\n"
    assert sorted(p.name for p in record.parent.iterdir()) == ["r.json"]


def test_later_writes_exchange_names_and_reuse_the_two_inodes(tmp_path: Path) -> None:
    if not files._exchange_supported():
        pytest.skip("no RENAME_EXCHANGE here: every write is a rename")
    record = tmp_path / "r.json"
    files.write_record(record, b"first version, the longer one\n")
    files.write_record(record, b"second\n")
    inodes = {record.stat().st_ino, swap_of(record).stat().st_ino}
    assert record.read_bytes() == b"second\n"
    assert swap_of(record).read_bytes() == b"first version, the longer one\n"  # the old bytes
    for text in (b"third\n", b"fourth, longer than the third\n", b"5\n"):
        files.write_record(record, text)
        assert record.read_bytes() == text
        assert {record.stat().st_ino, swap_of(record).stat().st_ino} == inodes
    umask = os.umask(0)
    os.umask(umask)
    assert record.stat().st_mode & 0o777 == 0o666 & ~umask  # the process umask, nothing forced (RUN-021)


def test_a_final_write_takes_the_swap_file_along(tmp_path: Path) -> None:
    record = tmp_path / "r.json"
    for text in (b"a\n", b"b\n", b"c\n"):
        files.write_record(record, text)
    files.write_record(record, b"done\n", final=True)
    assert record.read_bytes() == b"done\n"
    assert not swap_of(record).exists()


def test_without_exchange_every_write_is_a_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "_renameat2", False)
    record = tmp_path / "r.json"
    for text in (b"a\n", b"bb\n", b"c\n"):
        files.write_record(record, text)
        assert record.read_bytes() == text
        assert not swap_of(record).exists()


def test_a_system_that_cannot_exchange_falls_back_to_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object) -> int:
        import ctypes

        ctypes.set_errno(errno.EINVAL)
        return -1

    monkeypatch.setattr(files, "_renameat2", refuse)
    record = tmp_path / "r.json"
    files.write_record(record, b"a\n")
    files.write_record(record, b"b\n")
    assert record.read_bytes() == b"b\n"
    assert files._renameat2 is False  # remembered: the next write renames straight away


def test_a_failed_write_leaves_the_record_and_no_new_swap_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "r.json"
    files.write_record(record, b"kept\n")
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        files.write_record(record, b"lost\n")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert record.read_bytes() == b"kept\n"
    assert not swap_of(record).exists()  # this write made it, so this write removed it
