"""A `session` step: one process of the implementation kept running across several exchanges.

The process starts with its stdin and stdout as the channel `stdio`; `connect` opens more channels
(Unix socket connections). Sub-steps send frames, wait for frames (`expect`, with a timeout), close
or drop channels, send signals, sleep, and run ordinary steps (`run`, `jsonl`, `files`, `write`)
while the process keeps running in the background. Frames read on every channel are kept in order;
an `expect` takes the frames it matches, and later `expect`s only see the frames not taken yet.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from .matching import ScenarioError, assign_frames, json_text, match, short
from .scenario import STDIO, Step, raw_text, repo_path

if TYPE_CHECKING:
    from .execute import ScenarioRun

DEFAULT_EXPECT_TIMEOUT = 10.0
DEFAULT_CONNECT_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0  # how long a session still running at its end gets after SIGTERM
POLL = 0.02


class SessionFailure(Exception):
    """A sub-step of a session failed; ``problems`` say how."""

    def __init__(self, problems: list[str]):
        super().__init__(problems[0])
        self.problems = problems


@dataclass
class Channel:
    """One stream of frames: the process's stdout (`stdio`) or a socket connection."""

    name: str
    frame_problem: Any  # (number, frame) -> the report of a frame the frame schema refuses, or None
    frames: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # every line read, for the report
    sent: list[str] = field(default_factory=list)
    taken: set[int] = field(default_factory=set)  # frames matched by an earlier expect
    reported: int = 0  # problems already reported
    eof: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read_from(self, stream: IO[bytes]) -> threading.Thread:
        def pump() -> None:
            try:
                for raw in stream:
                    self._add(raw.decode("utf-8", errors="replace").rstrip("\n"))
            except (OSError, ValueError):
                pass
            finally:
                with self.lock:
                    self.eof = True

        thread = threading.Thread(target=pump, name=f"conformance-{self.name}", daemon=True)
        thread.start()
        return thread

    def _add(self, line: str) -> None:
        with self.lock:
            self.lines.append(line)
            try:
                frame = json.loads(line)
            except ValueError as exc:
                number = len(self.lines)
                self.problems.append(f"{self.name}: line {number} is not a JSON frame ({exc}): {short(line)}")
                return
            problem = self.frame_problem(len(self.frames), frame)
            if problem is not None:
                self.problems.append(f"{self.name}: {problem}")
            self.frames.append(frame)

    def snapshot(self) -> tuple[list[int], list[Any], list[str], bool]:
        """(numbers, frames) not taken yet, new problems, and whether the stream has ended."""
        with self.lock:
            numbers = [i for i in range(len(self.frames)) if i not in self.taken]
            return numbers, [self.frames[i] for i in numbers], self.problems[self.reported :], self.eof

    def render(self, keep: int = 200) -> str:
        with self.lock:
            lines = list(self.lines)
            taken = set(self.taken)
        if not lines:
            return "  | (nothing yet)"
        out, number = [], 0
        for line in lines:
            try:
                json.loads(line)
            except ValueError:
                out.append("  !! " + _cut(line))
                continue
            mark = "*" if number in taken else " "
            out.append(f"  #{number}{mark} {_cut(line)}")
            number += 1
        if len(out) > keep:
            out = [f"  ... ({len(out) - keep} earlier lines)", *out[-keep:]]
        return "\n".join(out)


class Session:
    """The process of a session step, its channels, and the sub-steps that drive them."""

    def __init__(self, run: ScenarioRun, step: Step) -> None:
        self.run = run
        self.step = step
        self.channels: dict[str, Channel] = {}
        self.sockets: dict[str, socket.socket] = {}
        self.stderr: list[bytes] = []
        self.stderr_ended = threading.Event()
        self.threads: list[threading.Thread] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.argv: list[str] = []
        self.env: dict[str, str] = {}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        spec = self.run._sub(self.step.data["session"], f"{self.step.where}.session")
        self.argv, self.env = self.run._command(spec["args"], spec.get("env", {}), spec.get("user"))
        shown = self.run.placeholder_sub(self.step.data["session"], f"{self.step.where}.session")
        self.run.record_process(
            self.step, "session", shown["args"], shown.get("env", {}), shown.get("user"), ""
        )
        try:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=self.run.repo,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise SessionFailure(
                [f"could not start the implementation {shlex.join(self.argv)!r}: {exc}"]
            ) from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        channel = self._channel(STDIO)
        if self.step.data["session"].get("stdout") == "json":
            channel.frame_problem = _any_json  # JSON lines, but not protocol frames (FORMAT.md §11)
        self.threads.append(channel.read_from(self.proc.stdout))
        self.threads.append(self._collect_stderr(self.proc.stderr))

    def _channel(self, name: str) -> Channel:
        channel = Channel(name, self.run.frame_problem)
        self.channels[name] = channel
        return channel

    def _collect_stderr(self, stream: IO[bytes]) -> threading.Thread:
        def pump() -> None:
            try:
                for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
                    self.stderr.append(chunk)
            except (OSError, ValueError):
                pass
            finally:
                self.stderr_ended.set()

        thread = threading.Thread(target=pump, name="conformance-stderr", daemon=True)
        thread.start()
        return thread

    def stderr_text(self) -> str:
        return b"".join(list(self.stderr)).decode("utf-8", errors="replace")

    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def finish(self, *, failed: bool) -> None:
        """End whatever is still open: on failure at once, otherwise EOF, then SIGTERM, then SIGKILL."""
        for sock in self.sockets.values():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the reader thread
            sock.close()
        if self.proc is not None and self.proc.poll() is None:
            if failed:
                self._kill_group()
            else:
                self._close_stdin()
                try:
                    self.proc.send_signal(signal.SIGTERM)
                    self.proc.wait(timeout=STOP_TIMEOUT)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    pass
        self._kill_group()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        for thread in self.threads:
            thread.join(timeout=2)

    def _kill_group(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def _close_stdin(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    # ------------------------------------------------------------------ sub-steps

    def do(self, sub: Step) -> None:
        getattr(self, f"_do_{sub.kind}")(sub)

    def _do_send(self, sub: Step) -> None:
        def build(sub_fn: Any) -> str:
            frames = sub_fn(sub.data["send"], f"{sub.where}.send")
            raw = raw_text(sub_fn(sub.data.get("raw", ""), f"{sub.where}.raw"))
            return "".join(json_text(f) + "\n" for f in frames) + raw

        text = build(self.run._sub)
        name = sub.data.get("to", STDIO)
        self.run.record_sent(sub, ["send", name, build(self.run.placeholder_sub)])
        channel = self.channels[name]
        channel.sent.append(text)
        data = text.encode("utf-8")
        try:
            if name == STDIO:
                assert self.proc is not None and self.proc.stdin is not None
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            else:
                self.sockets[name].sendall(data)
        except (OSError, ValueError) as exc:
            state = self._state()
            raise SessionFailure([f"send to {name}: could not write ({exc}); {state}"]) from None

    def _do_expect(self, sub: Step) -> None:
        expect = self.run._sub(sub.data["expect"], f"{sub.where}.expect")
        name = sub.data.get("from", STDIO)
        channel = self.channels[name]
        timeout = float(sub.data.get("timeout", DEFAULT_EXPECT_TIMEOUT))
        deadline = time.monotonic() + timeout
        while True:
            broken = channel.snapshot()[2]
            if broken:  # a line that is not a valid frame never becomes one: fail at once
                with channel.lock:
                    channel.reported = len(channel.problems)
                raise SessionFailure(broken)
            # Taken before evaluating: if everything had ended already, this evaluation saw the
            # final state; if it ended during the evaluation, evaluate once more.
            settled = self._settled(channel)
            problems, commit = self._evaluate(expect, channel)
            if not problems:
                commit()
                return
            if settled or time.monotonic() >= deadline:
                why = (
                    "nothing more can arrive (the process has ended and the channel is closed)"
                    if settled
                    else f"still not so after {timeout:g} s (a sub-step may set `timeout:`)"
                )
                raise SessionFailure([*problems, f"waited on {name}: {why}"])
            time.sleep(POLL)

    def _settled(self, channel: Channel) -> bool:
        """The process has exited and both the channel and stderr have been read to their end."""
        return self.returncode() is not None and channel.snapshot()[3] and self.stderr_ended.is_set()

    def _evaluate(self, expect: dict[str, Any], channel: Channel) -> tuple[list[str], Any]:
        """Problems with `expect` as things stand, and a function that commits a success."""
        trial = dict(self.run.captures)
        problems: list[str] = []
        if "exit" in expect:
            code = self.returncode()
            if code is None:
                problems.append("exit code: the process is still running")
            else:
                self._drain(channel)  # frames written before the exit must all be in
                problems += [f"exit code: {m.message}" for m in match(expect["exit"], code, trial)]
        numbers, frames, _, _ = channel.snapshot()
        used: dict[int, int] = {}
        if "frames" in expect:
            found, used = assign_frames(
                expect["frames"], frames, trial, only=expect.get("only", False), numbers=numbers
            )
            problems += found
        if "stderr" in expect:
            problems += [f"stderr: {m.message}" for m in match(expect["stderr"], self.stderr_text(), trial)]

        def commit() -> None:
            self.run.captures.update(trial)
            with channel.lock:
                channel.taken.update(numbers[j] for j in used)

        return problems, commit

    def _drain(self, channel: Channel) -> None:
        """After the process ended: wait (briefly) until the channel has been read to its end."""
        deadline = time.monotonic() + 2
        while not channel.snapshot()[3] and time.monotonic() < deadline:
            time.sleep(POLL)

    def _do_close(self, sub: Step) -> None:
        name = sub.data["close"]
        if name == STDIO:
            self._close_stdin()
            return
        try:
            self.sockets[name].shutdown(socket.SHUT_WR)
        except OSError as exc:
            raise SessionFailure([f"close {name}: {exc}"]) from None

    def _do_drop(self, sub: Step) -> None:
        name = sub.data["drop"]
        sock = self.sockets.pop(name)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    def _do_signal(self, sub: Step) -> None:
        name = sub.data["signal"]
        code = self.returncode()
        if code is not None:
            raise SessionFailure([f"signal {name}: the process has already exited (exit code {code})"])
        assert self.proc is not None
        self.proc.send_signal(getattr(signal, f"SIG{name}"))

    def _do_sleep(self, sub: Step) -> None:
        time.sleep(float(sub.data["sleep"]))

    def _do_connect(self, sub: Step) -> None:
        rel = self.run._sub(sub.data["connect"], f"{sub.where}.connect")
        path = repo_path(self.run.repo, rel, sub.where)
        name = sub.data["as"]
        timeout = float(sub.data.get("timeout", DEFAULT_CONNECT_TIMEOUT))
        deadline = time.monotonic() + timeout
        address = str(path)
        if len(address.encode()) > 100:  # sun_path is ~108 bytes; a relative path is shorter
            address = os.path.relpath(path)
            if len(address.encode()) > 100:
                raise ScenarioError(f"{sub.where}: the socket path {path} is too long for a Unix socket")
        last: Exception | None = None
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(address)
                break
            except OSError as exc:
                sock.close()
                last = exc
            if self.returncode() is not None or time.monotonic() >= deadline:
                state = self._state()
                raise SessionFailure(
                    [f"connect {rel}: no connection within {timeout:g} s ({last}); {state}"]
                ) from None
            time.sleep(0.05)
        owner = os.stat(address).st_uid
        if owner not in (os.getuid(), 0):  # someone else's socket: send it nothing
            sock.close()
            raise SessionFailure([f"connect {rel}: the socket belongs to uid {owner}, not to this user"])
        self.sockets[name] = sock
        channel = self._channel(name)
        self.threads.append(channel.read_from(sock.makefile("rb")))

    def _state(self) -> str:
        code = self.returncode()
        return "the process is still running" if code is None else f"the process exited with code {code}"

    # ------------------------------------------------------------------ reporting

    def header(self) -> list[str]:
        """The session's lines in the head of a failure report."""
        extra = {k: v for k, v in self.env.items() if self.run._base_value(k) != v}
        code = self.returncode()
        return [
            f"  session: {shlex.join(self.argv)}",
            "  session env (besides the clean base env): "
            + (" ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items())) or "(none)"),
            f"  session process: {'still running' if code is None else f'exited with code {code}'}",
        ]

    def body(self) -> list[str]:
        """What was sent and received on every channel, and the process's stderr."""
        out: list[str] = []
        for name, channel in self.channels.items():
            sent = "".join(channel.sent)
            if sent:
                out += [f"sent on {name}:", _block(sent)]
            out += [f"frames on {name} (numbered #0...; * = taken by an earlier expect):", channel.render()]
        stderr = self.stderr_text()
        out += ["session stderr:", _block(stderr)]
        return out


def _any_json(number: int, document: Any) -> None:
    """A session with `stdout: json` checks its stdout lines are JSON, not that they are frames."""
    return None


def _cut(line: str, limit: int = 600) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _block(text: str, limit: int = 8000) -> str:
    if not text:
        return "  | (empty)"
    if len(text) > limit:
        text = text[-limit:]
        return "  | ...\n" + "\n".join("  | " + line for line in text.rstrip("\n").split("\n"))
    return "\n".join("  | " + line for line in text.rstrip("\n").split("\n"))
