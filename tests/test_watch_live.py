"""`workflow watch` and `run --watch` against runs that other processes execute and answer, as
people use them from two terminals (real subprocesses). Each test moves the run on by files the
step waits for, so nothing depends on timing; every read has a bound so a failure never hangs."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from helpers import SWAMP, Repo, clean_env, dep, job, make_repo, sh

BOUND = 60  # seconds any one expected line may take before the test fails


class Lines:
    """The lines a process writes, read by a thread so that each read can give up."""

    def __init__(self, stream: IO[str]):
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, wanted: str) -> list[str]:
        """Lines up to and including the first that contains `wanted`."""
        got: list[str] = []
        while True:
            line = self._queue.get(timeout=BOUND)
            assert line is not None, f"ended before {wanted!r}; saw {self.seen}"
            got.append(line)
            self.seen.append(line)
            if wanted in line:
                return got

    def rest(self) -> list[str]:
        got: list[str] = []
        while (line := self._queue.get(timeout=BOUND)) is not None:
            got.append(line)
            self.seen.append(line)
        return got


def start(repo: Repo, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(SWAMP), *args],
        cwd=repo.root,
        env=clean_env({"NO_COLOR": "1"}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def eventually(probe: Any, what: str) -> Any:
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"never saw {what}")


def test_watch_shows_each_output_line_of_a_running_step_before_the_step_ends(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wait_for = "while [ ! -f {0} ]; do sleep 0.02; done"
    repo.write_workflow(
        "live",
        [
            job(
                "main",
                sh("slow", f"{wait_for.format('ready')}; echo first; {wait_for.format('go')}; echo second"),
                sh("after", "echo done", dependsOn=[dep("slow")]),
            )
        ],
    )
    run = start(repo, "workflow", "run", "live", "--json")
    try:

        def running() -> str | None:
            runs = repo.swamp("workflow", "history", "live", "--json").json["runs"]
            return runs[0]["runId"] if runs and runs[0]["status"] == "running" else None

        run_id = eventually(running, "the run running")
        watch = start(repo, "workflow", "watch", run_id[:8])
        lines = Lines(watch.stdout)  # type: ignore[arg-type]
        assert "running" in lines.until("Watching:")[-1]
        (repo.root / "ready").touch()
        before_end = lines.until("first")
        assert not any("✓ slow" in line for line in before_end)
        (repo.root / "go").touch()
        rest = lines.rest()
        assert watch.wait(timeout=BOUND) == 0
        text = "\n".join(lines.seen)
        assert "second" in text and "✓ slow" in text and "▶ after" in text
        assert any("succeeded: workflow live" in line and run_id in line for line in rest)
    finally:
        (repo.root / "ready").touch()
        (repo.root / "go").touch()
        run.communicate(timeout=BOUND)
    assert run.returncode == 0


def test_run_watch_waits_through_a_signal_and_a_resume_from_other_processes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.write_workflow(
        "asks",
        [
            job(
                "main",
                {
                    "name": "ask",
                    "task": {"type": "wait_for_signal", "timeout": 600, "schema": {"type": "boolean"}},
                },
                sh("after", "echo shipped", dependsOn=[dep("ask")]),
            )
        ],
    )
    proc = start(repo, "workflow", "run", "asks", "--watch", "--json")
    try:
        waits = eventually(lambda: repo.swamp("workflow", "waits", "--json").json["waits"], "the wait")
        assert repo.swamp("workflow", "signal", waits[0]["waitId"], "--payload", "true").code == 0
        assert repo.swamp("workflow", "resume", "asks").code == 0
        out, err = proc.communicate(timeout=BOUND)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["status"] == "succeeded" and doc["watch"] == {"outcome": "finished"}
    assert doc["superseded"] == [] and doc["id"] == waits[0]["runId"]
