"""A client may write every request before it reads any answer (`write; close; read`, the
simplest script): swamp reads requests at most MAX_PIPELINED ahead of their answers, so if an
answer waited on a full stdout pipe, the client and swamp would wait on each other for ever.
Answers queue for their reader (up to a bound) instead. Bounded waits here detect a deadlock;
nothing is timed."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest
from helpers import SWAMP, job, sh

from swamp.protocol.jsonl import MAX_PIPELINED

COUNT = MAX_PIPELINED * 3  # requests beyond the read-ahead, and with PAD far beyond what pipes buffer
PAD = "x" * 1000


@pytest.mark.parametrize("command", [["--jsonl"], ["serve"]])
def test_a_client_that_writes_everything_before_reading_gets_every_answer(shared_repo, command):
    shared_repo.write_workflow("listed", [job("main", sh("a", "echo one"))])
    proc = subprocess.Popen(
        [str(SWAMP), *command],
        cwd=shared_repo.root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    requests = "".join(
        json.dumps({"type": "workflow.list", "id": f"l{i}{PAD}", "payload": {}}) + "\n" for i in range(COUNT)
    ).encode()

    def write_all() -> None:
        assert proc.stdin is not None
        proc.stdin.write(requests)
        proc.stdin.close()

    writer = threading.Thread(target=write_all, daemon=True)
    writer.start()
    writer.join(60)
    if writer.is_alive():
        proc.kill()
        pytest.fail("swamp stopped reading requests while its answers waited for a reader: a deadlock")
    out = proc.stdout.read()
    proc.wait(timeout=60)
    done = {json.loads(line)["id"] for line in out.splitlines() if json.loads(line)["type"] == "done"}
    assert done == {f"l{i}{PAD}" for i in range(COUNT)}
