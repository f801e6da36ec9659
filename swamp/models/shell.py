"""The builtin `command/shell` type: one method, `execute`, that runs a command with `sh -c`."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from typing import Any

from ..domain.shellwords import VALUE_PREFIX
from .types import Method, MethodContext, MethodFailed, ModelType

ARGUMENTS = {
    "type": "object",
    "properties": {
        "run": {
            "type": "string",
            "minLength": 1,
            "description": "the command, run with sh -c; each ${{ }} in it reaches the command as "
            "data, through the variable SWAMP_VALUE_<n> (MODEL-015)",
        },
        "workingDir": {"type": "string", "description": "relative to the repository root"},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "milliseconds"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "ignoreExitCode": {"type": "boolean", "default": False},
    },
    "required": ["run"],
    "additionalProperties": False,
}


def execute(args: dict[str, Any], ctx: MethodContext) -> dict[str, Any]:
    cwd = os.path.join(ctx.repo_dir, args.get("workingDir") or ".")
    own = args.get("env") or {}
    reserved = sorted(name for name in own if name.startswith(VALUE_PREFIX))
    if reserved:
        raise MethodFailed(
            f"env sets {', '.join(reserved)}: names starting with {VALUE_PREFIX} carry the values of "
            "the expressions in `run` (MODEL-015); rename the variable"
        )
    # The values of `run`'s expressions, and no stale ones inherited from swamp's own environment.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(VALUE_PREFIX)}
    env = {**inherited, **own, **ctx.shell_values}
    timeout_ms = args.get("timeout")
    started = time.monotonic()
    try:
        # Its own process group, so a timeout stops the command and everything it started.
        proc = subprocess.Popen(
            ["sh", "-c", args["run"]],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        raise MethodFailed(f"Command could not start: {exc}") from None

    def stop() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    take_back = ctx.on_abandon(stop)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_ms / 1000 if timeout_ms else None)
    except subprocess.TimeoutExpired:
        stop()
        stdout, stderr = proc.communicate()
        take_back()
        raise MethodFailed(
            f"Command timed out after {timeout_ms} ms",
            {
                "exitCode": None,
                "stdout": stdout,
                "stderr": stderr,
                "durationMs": round((time.monotonic() - started) * 1000),
            },
        ) from None

    take_back()
    result = {
        "exitCode": proc.returncode,
        "stdout": stdout,
        "stderr": stderr,
        "durationMs": round((time.monotonic() - started) * 1000),
    }
    for line in stdout.splitlines():
        ctx.log(line)
    if proc.returncode != 0 and not args.get("ignoreExitCode"):
        raise MethodFailed(f"Command exited with code {proc.returncode}", result)
    return result


SHELL = ModelType(
    type="command/shell",
    version="2026.01.01.1",
    description="Run a shell command",
    methods={
        "execute": Method(
            "execute",
            "Run `run` with sh -c and capture its output",
            ARGUMENTS,
            execute,
            frozenset({"run"}),
            values_by_environment=True,
        )
    },
    source="builtin",
)
