"""Ctrl-C and SIGTERM in a command that executes a run: the one place they are handled.

While a run executes in this process, the first SIGINT or SIGTERM is acknowledged at once on
stderr and stops the run through the executor's `interrupt` (found through serve's RunHooks /
HOSTED_RUNS attach and detach, so the engine has one way to be stopped from outside): running
commands are killed with their process group, the steps stopped are recorded failed with reason
`interrupted`, the steps not started stay pending, and the run ends `failed` with `interruption`
(RUN-025..RUN-029). The command then prints the run as it was recorded and exits 130 (SIGINT) or
143 (SIGTERM). A second signal while stopping exits at once: the OS releases the run's claim, and
the run reads as interrupted (CLAIM-006).

Outside an execution (before the run starts, after it ends, while a suspended run is watched) the
signals keep their usual meaning: SIGINT raises KeyboardInterrupt, SIGTERM ends the process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from ..domain.errors import EXIT_SIGINT, EXIT_SIGTERM
from ..engine.ports import HOSTED_RUNS, RunHooks

EXIT_CODES = {"SIGINT": EXIT_SIGINT, "SIGTERM": EXIT_SIGTERM}
ACTIONS = {"SIGINT": "Ctrl-C (SIGINT)", "SIGTERM": "SIGTERM"}


class Interruption:
    """The executors running in this process, and the signal that stopped them, if one did."""

    def __init__(self, status_width: Any = None) -> None:
        self.signal: str | None = None
        self._executors: list[Any] = []
        self._executed = False  # whether a run has executed here (attached) at all
        # Reentrant: handle() runs on the main thread, which may be inside attach or detach.
        self._lock = threading.RLock()
        # How wide the elapsed-time status line on stdout is now (cleared before the message).
        self._status_width = status_width

    @property
    def exit_code(self) -> int | None:
        return EXIT_CODES.get(self.signal or "")

    def attach(self, executor: Any) -> None:
        with self._lock:
            self._executors.append(executor)
            self._executed = True

    def detach(self, executor: Any) -> None:
        with self._lock:
            if executor in self._executors:
                self._executors.remove(executor)

    def handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        with self._lock:
            executors = list(self._executors)
        if self.signal is not None:  # a second signal while stopping: exit at once
            _say(f"\n{ACTIONS.get(name, name)} again: exiting now; the run is left interrupted")
            os._exit(EXIT_CODES.get(self.signal, EXIT_SIGINT))
        if not executors:  # no run is executing here: the signal's usual meaning
            if not self._executed:
                _say(f"Interrupted ({ACTIONS.get(name, name)}) before a run started executing here")
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(EXIT_CODES.get(name, EXIT_SIGTERM))
        self.signal = name
        width = self._status_width() if callable(self._status_width) else 0
        runs = ", ".join(str(executor.run.id) for executor in executors)
        _say(
            ("\r" + " " * width + "\r" if width else "")
            + f"Interrupted: stopping run {runs} ({ACTIONS.get(name, name)}); "
            "press Ctrl-C again to exit at once"
        )
        reason = f"swamp received {name}"
        # The executor takes its lock: from a thread, since this handler may run while the main
        # thread holds it.
        for executor in executors:
            threading.Thread(
                target=executor.interrupt, args=(reason,), kwargs={"signal": name}, daemon=True
            ).start()


def _say(line: str) -> None:
    """To stderr without Python's buffered writer, which the interrupted code may be inside."""
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode("utf-8", "replace"))


@contextlib.contextmanager
def interruptible(status_width: Any = None) -> Iterator[Interruption]:
    """Handle SIGINT and SIGTERM as this module says while the block runs (main thread only)."""
    state = Interruption(status_width)
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    hooks = RunHooks(stop_reason=lambda: None, attach=state.attach, detach=state.detach)
    token = HOSTED_RUNS.set(hooks)
    previous = {sig: signal.signal(sig, state.handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield state
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        HOSTED_RUNS.reset(token)
