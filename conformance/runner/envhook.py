"""The per-scenario environment hook (`--env-hook CMD`, FORMAT.md §4).

Some things a scenario's processes need cannot be written in the scenario: a database of its own,
say, when the implementation keeps its run state in PostgreSQL. Before a scenario the runner runs
`CMD <scenario-id>` (argv, no shell) with the runner's own environment; each line `NAME=VALUE` it
prints goes into the environment of every process of that scenario. A hook that fails fails the
scenario, with its stderr, before anything of the scenario runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
from pathlib import Path

HOOK_TIMEOUT = 120.0
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class EnvHookFailure(Exception):
    """The hook could not start, timed out, exited non-zero or printed a line that is not NAME=VALUE."""


def resolve_hook(value: str, start: Path) -> list[str]:
    """The hook command split like a shell; relative paths taken from where the runner started
    (the program when it names a path, later words naming an existing path), as for --impl."""
    argv = shlex.split(value)
    if not argv:
        raise ValueError("--env-hook: empty command")
    for i, word in enumerate(argv):
        if "/" in word and not os.path.isabs(word) and (i == 0 or (start / word).exists()):
            argv[i] = str((start / word).absolute())
    return argv


def parse_hook_output(stdout: str) -> dict[str, str]:
    """Each non-empty line is NAME=VALUE (VALUE may hold `=`); anything else is refused."""
    env: dict[str, str] = {}
    for number, line in enumerate(stdout.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep or not _NAME.match(name):
            raise EnvHookFailure(f"line {number} of its stdout is not NAME=VALUE: {line!r}")
        env[name] = value
    return env


def run_env_hook(argv: list[str], scenario_id: str, timeout: float = HOOK_TIMEOUT) -> dict[str, str]:
    """Run the hook for one scenario; its variables, or EnvHookFailure saying what went wrong."""
    command = [*argv, scenario_id]
    shown = shlex.join(command)
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
            start_new_session=True,
        )
    except OSError as exc:
        raise EnvHookFailure(f"the environment hook `{shown}` could not start: {exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=5)
        raise EnvHookFailure(f"the environment hook `{shown}` did not finish in {timeout:g} s") from None
    stderr = err.decode("utf-8", errors="replace").rstrip()
    if proc.returncode != 0:
        raise EnvHookFailure(
            f"the environment hook `{shown}` exited {proc.returncode}; its stderr:\n"
            + ("\n".join(f"  | {line}" for line in stderr.splitlines()) or "  (empty)")
        )
    try:
        return parse_hook_output(out.decode("utf-8", errors="replace"))
    except EnvHookFailure as exc:
        raise EnvHookFailure(f"the environment hook `{shown}`: {exc}") from None
