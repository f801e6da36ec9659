"""Run the swamp CLI with its durable writes failing, as on a full disk or a read-only .swamp/.

Usage: python scripts/reliability_faulty.py enospc|erofs|eacces SWAMP-ARGS...

`enospc` makes every atomic write land on /dev/full, so the kernel itself answers ENOSPC at the
write or the fsync; `erofs` and `eacces` refuse to create the temporary file, as a read-only mount
or a directory without write permission would (tests run as root, so chmod alone cannot).
Reads, the run claim and everything else work as usual.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
import types


def main() -> None:
    fault = sys.argv[1]
    real = tempfile.mkstemp

    def mkstemp(*args: object, **kwargs: object) -> tuple[int, str]:
        where = str(kwargs.get("dir"))
        if fault == "erofs":
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), where)
        if fault == "eacces":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), where)
        fd, name = real(*args, **kwargs)  # type: ignore[call-overload]
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    import swamp.store.files as files

    files.tempfile = types.SimpleNamespace(mkstemp=mkstemp)  # type: ignore[assignment]
    from swamp.cli.main import main as swamp_main

    sys.argv = ["swamp", *sys.argv[2:]]
    swamp_main()


if __name__ == "__main__":
    main()
