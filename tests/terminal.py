"""Driving `swamp` at a pseudo-terminal, for behaviour that exists only at a terminal (the payload
prompt, tables sized to the terminal). Standard library only: `pty`, `select`, `termios`.

`Terminal` starts swamp with a pty as its controlling terminal (so Ctrl-C typed into it is a SIGINT
from the terminal driver, as at a real one), of the size asked for. Every read has a deadline, so a
test that waits for text that never comes fails instead of hanging.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

from helpers import SWAMP, clean_env

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
DEADLINE = 30.0  # seconds any one expectation may take (a slow, shared CI machine)


class Terminal:
    def __init__(
        self, args: list[str], cwd: Path | str, env: dict[str, str] | None = None, columns: int = 80
    ) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))

        def controlling_terminal() -> None:  # runs in the child: the pty becomes its terminal
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # as at a shell, even if ours ignores it

        environment = {k: v for k, v in clean_env().items() if k not in ("COLUMNS", "LINES")}
        environment.update({"TERM": "xterm-256color", **(env or {})})
        self.proc = subprocess.Popen(
            [str(SWAMP), *args],
            cwd=str(cwd),
            env=environment,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=controlling_terminal,
        )
        # The slave side stays open here until the end: were swamp its only holder, its exit could
        # end the master's reads (EIO) before the last of its output was read.
        self.slave = slave
        self.seen = ""  # everything read so far, ANSI escapes removed
        self._consumed = 0

    def _read(self, until: float) -> bool:
        """Read what comes before `until`; False when nothing came."""
        ready, _, _ = select.select([self.master], [], [], max(0.0, until - time.monotonic()))
        if not ready:
            return False
        data = os.read(self.master, 65536)
        self.seen += ANSI.sub("", data.decode("utf-8", "replace")).replace("\r\n", "\n")
        return True

    def expect(self, text: str, timeout: float = DEADLINE) -> str:
        """Wait until `text` appears after what earlier expects consumed; return what came before it."""
        until = time.monotonic() + timeout
        while True:
            found = self.seen.find(text, self._consumed)
            if found >= 0:
                before = self.seen[self._consumed : found]
                self._consumed = found + len(text)
                return before
            if time.monotonic() >= until:
                raise AssertionError(f"expected {text!r} at the terminal; it shows:\n{self.seen}")
            self._read(min(until, time.monotonic() + 0.1))

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def line(self, text: str) -> None:
        self.send(text + "\r")

    def finish(self, timeout: float = DEADLINE) -> tuple[int, str]:
        """Wait for swamp to exit and read all it wrote; the exit code and the whole output."""
        until = time.monotonic() + timeout
        try:
            while self.proc.poll() is None:
                if time.monotonic() >= until:
                    self.proc.kill()
                    self.proc.wait()
                    raise AssertionError(f"swamp did not finish at the terminal; it shows:\n{self.seen}")
                self._read(min(until, time.monotonic() + 0.1))
            while self._read(time.monotonic() + 0.05):  # what is still on its way
                pass
        finally:
            os.close(self.slave)
            os.close(self.master)
        return self.proc.returncode, self.seen


def at_terminal(
    args: list[str], cwd: Path | str, env: dict[str, str] | None = None, columns: int = 80
) -> tuple[int, str]:
    """Run a command that asks nothing at a terminal `columns` wide; its exit code and output."""
    return Terminal(args, cwd, env, columns).finish()
