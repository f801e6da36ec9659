"""Run the swamp CLI with its durable writes failing, as on a full disk or a read-only .swamp/.

Usage: python scripts/reliability_faulty.py enospc|erofs|eacces SWAMP-ARGS...

`enospc` makes every atomic write (a temp file or a record's swap file) land on /dev/full, so the
kernel itself answers ENOSPC at the write or the fsync; `erofs` and `eacces` refuse to open them,
as a read-only mount or a directory without write permission would (tests run as root, so chmod
alone cannot).
Reads, the run claim and everything else work as usual.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path


def main() -> None:
    fault = sys.argv[1]
    import swamp.store.files as files

    real = files._temp_beside

    def temp_beside(path: Path) -> tuple[int, str]:
        where = str(path.parent)
        if fault == "erofs":
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), where)
        if fault == "eacces":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), where)
        fd, name = real(path)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    real_swap = files._open_swap

    def open_swap(swap: str) -> tuple[int, bool]:
        where = os.path.dirname(swap)
        if fault == "erofs":
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), where)
        if fault == "eacces":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), where)
        fd, created = real_swap(swap)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), created

    files._temp_beside = temp_beside  # type: ignore[assignment]
    files._open_swap = open_swap  # type: ignore[assignment]
    from swamp.cli.main import main as swamp_main

    sys.argv = ["swamp", *sys.argv[2:]]
    swamp_main()


if __name__ == "__main__":
    main()
