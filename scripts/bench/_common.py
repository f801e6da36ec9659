"""Shared helpers for the benchmark scripts: temp repositories, timing, the swamp executable."""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

SWAMP = str(Path(sys.executable).with_name("swamp"))

NOOP_EXTENSION = """
def noop(args, ctx):
    return {"ok": True}

model = {
    "type": "bench/noop",
    "version": "1",
    "methods": {"run": {"description": "does nothing", "arguments": {"type": "object"}, "execute": noop}},
}
"""


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("SWAMP_")}
    out["NO_COLOR"] = "1"
    return out


def make_repo(files: dict[str, str] | None = None, extra_env: dict[str, str] | None = None) -> Path:
    """A repository in a temporary folder with the noop model; `extra_env` for `repo init` (say,
    PYTHONPATH naming another checkout's swamp package)."""
    root = Path(tempfile.mkdtemp(prefix="swamp-bench-"))
    subprocess.run(
        [SWAMP, "repo", "init", str(root)],
        check=True,
        capture_output=True,
        env={**env(), **(extra_env or {})},
    )
    (root / "extensions/models/noop.py").write_text(NOOP_EXTENSION)
    (root / "models/bench/noop").mkdir(parents=True)
    (root / "models/bench/noop/noop.yaml").write_text(
        "id: 00000000-0000-4000-8000-000000000001\nname: noop\ntype: bench/noop\n"
    )
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


def cpu_seconds(roots: list[int]) -> float:
    """CPU time (user and system) of the processes `roots` and of their children, the ones that
    run and the ones reaped (a process's cutime and cstime), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry), int(fields[1])
        if pid in roots or parent in roots:
            total += sum(int(f) for f in fields[11:13]) + (
                sum(int(f) for f in fields[13:15]) if pid in roots else 0
            )
    return total / ticks


def stop(processes: Sequence[subprocess.Popen[bytes]], grace: float) -> None:
    """SIGTERM to each process still running, then wait for each: killed after `grace` seconds."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def timed(
    argv: Sequence[str], cwd: Path | None = None, stdin: bytes | None = None, check: bool = True
) -> float:
    started = time.perf_counter()
    done = subprocess.run(list(argv), cwd=cwd, input=stdin, capture_output=True, env=env())
    took = time.perf_counter() - started
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return took


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)
