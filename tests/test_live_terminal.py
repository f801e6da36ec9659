"""A run at a terminal: the elapsed-time line of a long step (never on a pipe), and Ctrl-C.

Driven through a pseudo-terminal (Python's `pty`), as a person at a terminal would see it: the
terminal's Ctrl-C character (`\\x03`) makes the line discipline send SIGINT to swamp's process
group. Every wait has a deadline, so nothing here can hang; no assertion is about time.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import time
from pathlib import Path

import pytest
from helpers import SWAMP, Repo, clean_env, job, sh

DEADLINE = 30.0  # seconds any one wait may take before the test fails (never reached when it passes)


class Terminal:
    """swamp running with a pseudo-terminal as its stdin, stdout and stderr."""

    def __init__(self, repo: Repo, *args: str) -> None:
        env = clean_env({"TERM": "xterm", "COLUMNS": "100", "LINES": "30"})
        env.pop("NO_COLOR", None)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: becomes swamp, the terminal's foreground process
            try:
                os.chdir(repo.root)
                os.execve(str(SWAMP), [str(SWAMP), *args], env)
            finally:
                os._exit(127)
        self.seen = b""
        self.code: int | None = None

    def read_until(self, pattern: str) -> str:
        """Everything seen so far once `pattern` (a regex) matches it; fails at the deadline."""
        end = time.monotonic() + DEADLINE
        while not re.search(pattern, self.text):
            if not self._read(end - time.monotonic()):
                pytest.fail(f"never saw {pattern!r}; the terminal showed:\n{self.text}")
        return self.text

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def wait(self) -> int:
        """Read to the end, then the exit code."""
        end = time.monotonic() + DEADLINE
        while self._read(end - time.monotonic()):
            pass
        while self.code is None and time.monotonic() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
            else:
                time.sleep(0.02)
        if self.code is None:
            os.kill(self.pid, signal.SIGKILL)
            pytest.fail(f"swamp did not exit; the terminal showed:\n{self.text}")
        os.close(self.fd)
        return self.code

    @property
    def text(self) -> str:
        """What was shown, without the colour codes."""
        return re.sub(r"\x1b\[[0-9;]*m", "", self.seen.decode("utf-8", "replace"))

    def _read(self, timeout: float) -> bool:
        if timeout <= 0:
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: the other end closed (swamp exited)
            return False
        self.seen += chunk
        return bool(chunk)


def _wait_for_flag(name: str) -> str:
    return f"i=0; while [ ! -f {name} ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.05; done"


@pytest.mark.cli
def test_a_step_running_over_a_second_shows_its_elapsed_time_in_place_and_clears_it(repo: Repo) -> None:
    repo.write_workflow("long", [job("main", sh("long", _wait_for_flag("go.flag")), sh("next", "echo next"))])
    terminal = Terminal(repo, "workflow", "run", "long")
    shown = terminal.read_until(r"\rmain │ ◐ long \d+s")
    assert "▶ long" in shown
    (repo.root / "go.flag").write_text("")
    assert terminal.wait() == 0
    after = terminal.text[len(shown) :]
    # The status line is blanked and the cursor put back at its start before the next line.
    status = re.findall(r"\r(main │ ◐ long \d+s)", terminal.text)[-1]
    assert re.search(rf"\r {{{len(status)},}}\r[^\n]*✓ long", terminal.text), terminal.text
    assert "◐" not in after.split("✓ long", 1)[1]  # nothing redrawn once no step is long
    assert "succeeded: workflow long" in after


@pytest.mark.cli
def test_no_elapsed_time_on_a_pipe(repo: Repo) -> None:
    repo.write_workflow("slowpipe", [job("main", sh("long", "sleep 1.3; echo done"))])
    result = repo.swamp("workflow", "run", "slowpipe")
    assert result.code == 0, result.err
    assert "\r" not in result.out and "◐" not in result.out
    assert "main │   long │ done" in result.out


@pytest.mark.cli
def test_ctrl_c_at_a_terminal_stops_the_command_and_says_how_to_resume(repo: Repo) -> None:
    repo.write_workflow(
        "ctrlc",
        [job("main", sh("long", "echo $$ > child.pid; echo started; exec sleep 30"), sh("after", "true"))],
    )
    terminal = Terminal(repo, "workflow", "run", "ctrlc")
    terminal.read_until(r"long │ [^\n]*started")
    child = int((repo.root / "child.pid").read_text())
    terminal.type(b"\x03")
    assert terminal.wait() == 130
    shown = terminal.text
    assert re.search(r"Interrupted: stopping run [0-9a-f-]{36} \(Ctrl-C \(SIGINT\)\)", shown)
    assert "✗ long: interrupted: swamp received SIGINT" in shown
    lines = [line for line in shown.replace("\r\n", "\n").split("\n") if line.strip()]
    hint = r"Resume with: swamp workflow resume ctrlc --run [0-9a-f-]{36} --from long"
    assert re.fullmatch(hint, lines[-1]), shown
    with pytest.raises(ProcessLookupError):  # stopped with its process group, and reaped
        os.kill(child, 0)


EXTENSION = """\
import pathlib
import time


def hang(args, ctx):
    time.sleep(30)
    pathlib.Path(ctx.repo_dir, "finished.flag").write_text("yes")
    return {}


model = {
    "type": "@test/stubborn",
    "version": "1",
    "description": "sleeps in swamp's process, where nothing can stop it",
    "methods": {"hang": {"description": "sleep", "arguments": {"type": "object"}, "execute": hang}},
}
"""


@pytest.mark.cli
def test_a_second_ctrl_c_while_stopping_exits_at_once(repo: Repo) -> None:
    repo.write_extension("stubborn.py", EXTENSION)
    repo.write_model({"id": "5e5e5e5e-0000-4000-8000-00000000aaaa", "name": "stub", "type": "@test/stubborn"})
    step = {"name": "hang", "task": {"type": "model_method", "modelIdOrName": "stub", "methodName": "hang"}}
    repo.write_workflow("stubborn", [job("main", step)])
    terminal = Terminal(repo, "workflow", "run", "stubborn")
    terminal.read_until(r"▶ hang")
    terminal.type(b"\x03")
    terminal.read_until(r"press Ctrl-C again to exit at once")
    terminal.type(b"\x03")
    assert terminal.wait() == 130
    assert "again: exiting now; the run is left interrupted" in terminal.text
    assert not Path(repo.root / "finished.flag").exists()
    runs = repo.swamp("workflow", "history", "--json").json["runs"]
    assert [(r["status"], r["interrupted"]) for r in runs] == [("running", True)]
