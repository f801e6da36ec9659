"""A real `swamp gateway` process on a loopback port, for the gateway's tests."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import SWAMP, Repo, clean_env, job

SCHEMA = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["ship", "fix"]}}}


@dataclass
class Running:
    url: str
    process: subprocess.Popen[str]
    log: list[str] = field(default_factory=list)

    def stop(self) -> int:
        """SIGTERM, then its exit code; the access log lines are in `log`."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30)
        assert self.process.stderr is not None
        self.log += self.process.stderr.read().splitlines()
        return code

    def ended(self, timeout: float = 30) -> int:
        """Its exit code once it ends by itself (after a SIGTERM the test sent: a second one, as
        `stop` would send, can come after it restored the default handler on its way out)."""
        code = self.process.wait(timeout=timeout)
        assert self.process.stderr is not None
        self.log += self.process.stderr.read().splitlines()
        return code

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log if line.startswith("{")]


@contextmanager
def gateway(repo: Repo, *args: str, env: dict[str, str] | None = None) -> Iterator[Running]:
    process = subprocess.Popen(
        [str(SWAMP), "gateway", "--listen", "127.0.0.1:0", "--repo-dir", str(repo.root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(env),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.stderr else ""
        yield Running(json.loads(line)["listening"], process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def waiting(repo: Repo, name: str = "qa", **task: Any) -> tuple[str, str]:
    """(run ID, wait ID) of a new run waiting on SCHEMA."""
    step = {"name": "verdict", "task": {"type": "wait_for_signal", "timeout": 3600, "schema": SCHEMA, **task}}
    repo.write_workflow(name, [job("main", step)])
    run = repo.swamp("workflow", "run", name, "--json").json
    return run["id"], run["waits"][0]["waitId"]


def grant(repo: Repo, wait_id: str, *args: str) -> str:
    made = repo.swamp("workflow", "wait", "grant", wait_id, *args, "--json")
    assert made.code == 0, made
    return str(made.json["permission"]["token"])


def public(repo: Repo, url: str = "https://swamp.example.com") -> None:
    (repo.root / ".swamp.yaml").write_text(f"version: 1\ngateway: {{publicUrl: '{url}'}}\n")


def everything_stored(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in (root / ".swamp").rglob("*") if p.is_file())
