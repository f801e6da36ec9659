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
from collections.abc import Callable
from typing import Any


def main() -> None:
    fault = sys.argv[1]
    import swamp.store.files as files

    def failing(opener: Callable[[Any], tuple[int, Any]], folder_of: Callable[[Any], str]) -> Any:
        """`opener` (a temp or a swap file: an fd and one more value) with the fault injected."""

        def open_faulty(target: Any) -> tuple[int, Any]:
            where = folder_of(target)
            if fault == "erofs":
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), where)
            if fault == "eacces":
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), where)
            fd, other = opener(target)
            os.close(fd)
            return os.open("/dev/full", os.O_WRONLY), other

        return open_faulty

    files._temp_beside = failing(files._temp_beside, lambda path: str(path.parent))
    files._open_swap = failing(files._open_swap, os.path.dirname)
    from swamp.cli.main import main as swamp_main

    sys.argv = ["swamp", *sys.argv[2:]]
    swamp_main()


if __name__ == "__main__":
    main()
