"""The builtin `command/shell` type: one method, `execute`, that runs a command with `sh -c`."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import Any

from ..domain.shellwords import VALUE_PREFIX
from ..engine.ports import OutputLog
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
    timed_out = threading.Event()

    def time_out() -> None:
        timed_out.set()
        stop()

    timer = threading.Timer(timeout_ms / 1000, time_out) if timeout_ms else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        stdout, stderr = _read_output(proc, ctx.log)
        proc.wait()
    finally:
        if timer is not None:
            timer.cancel()
        take_back()
    result = {
        "exitCode": proc.returncode,
        **stdout.fields("stdout"),
        **stderr.fields("stderr"),
        "durationMs": round((time.monotonic() - started) * 1000),
    }
    if timed_out.is_set():
        result["exitCode"] = None
        raise MethodFailed(f"Command timed out after {timeout_ms} ms", result)
    if proc.returncode != 0 and not args.get("ignoreExitCode"):
        raise MethodFailed(f"Command exited with code {proc.returncode}", result)
    return result


TAIL_BYTES = 65536  # of each stream, kept in the result (MODEL-020); the rest is only streamed
_CHUNK = 65536
_LONGEST_LINE = 65536  # a longer line is streamed in pieces of this size, never held whole


class _Tail:
    """The last TAIL_BYTES of a stream and how many bytes came before them: what a step keeps of
    its output however much it prints."""

    def __init__(self) -> None:
        self._kept = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self._kept += chunk
        if len(self._kept) > 2 * TAIL_BYTES:  # trimmed in batches: a trim copies the tail
            self._trim()

    def _trim(self) -> None:
        extra = len(self._kept) - TAIL_BYTES
        if extra > 0:
            del self._kept[:extra]
            self.dropped += extra

    def fields(self, name: str) -> dict[str, Any]:
        """`{name: text}` plus `{name}DroppedBytes` when bytes were left out. Text as a text-mode
        pipe gives it: UTF-8 with replacement, universal newlines."""
        self._trim()
        if self.dropped:  # a character cut at the start of the tail goes with what came before
            cut = 0
            while cut < min(3, len(self._kept)) and 0x80 <= self._kept[cut] < 0xC0:
                cut += 1
            del self._kept[:cut]
            self.dropped += cut
        text = self._kept.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        return {name: text, f"{name}DroppedBytes": self.dropped} if self.dropped else {name: text}


def _read_output(proc: subprocess.Popen[str], log: OutputLog) -> tuple[_Tail, _Tail]:
    """Read both pipes to their end as the command writes them, keeping a bounded tail of each:
    every line is passed to `log` as it arrives, with the stream it came on; stderr is read on a
    thread of its own so that neither pipe fills while the other is read. Memory stays bounded
    whatever is printed (MODEL-020)."""
    assert proc.stdout is not None and proc.stderr is not None
    stdout, stderr = _Tail(), _Tail()
    err_pipe, out_pipe = proc.stderr.buffer, proc.stdout.buffer  # type: ignore[attr-defined,unused-ignore]
    errors = threading.Thread(target=_drain, args=(err_pipe, stderr, log, "stderr"), daemon=True)
    errors.start()
    try:
        _drain(out_pipe, stdout, log, "stdout")
    finally:
        errors.join()
    return stdout, stderr


def _drain(pipe: Any, tail: _Tail, log: OutputLog, stream: str) -> None:
    pending = b""
    with pipe:
        while chunk := pipe.read1(_CHUNK):
            tail.add(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                _log_line(log, line, stream)
            while len(pending) > _LONGEST_LINE:
                _log_line(log, pending[:_LONGEST_LINE], stream)
                pending = pending[_LONGEST_LINE:]
    if pending:
        _log_line(log, pending, stream)


def _log_line(log: OutputLog, line: bytes, stream: str) -> None:
    text = line.decode("utf-8", "replace")
    for part in text.splitlines() or [text]:
        log(part, stream)


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
