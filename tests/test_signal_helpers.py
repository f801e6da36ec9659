"""Helper processes answer signals that a program pipelines into `swamp --jsonl` or `swamp serve`
(swamp/protocol/helpers.py). What a client sees must not change: the same frames, every request
answered once, refusals intact, nothing lost when a helper dies, no helper left behind."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env, make_repo
from test_waits_support import VERDICT, at, env, wait_step, wait_workflow

pytestmark = [pytest.mark.cli, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")]

SIGNAL_KEYS = {
    "waitId",
    "runId",
    "workflowName",
    "jobName",
    "stepName",
    "payload",
    "signal",
    "runStatus",
    "openWaits",
    "next",
}


def open_waits(repo: Repo, count: int) -> list[str]:
    wait_workflow(repo, "gate", wait_step("review", schema=VERDICT))
    return [repo.run("gate", {})["waits"][0]["waitId"] for _ in range(count)]


def frame(request_id: str, wait_id: str, payload: Any = None, text: str | None = None) -> str:
    if text is not None:
        return text
    body = {"waitId": wait_id, "payload": {"verdict": "ship"} if payload is None else payload}
    return json.dumps({"type": "workflow.signal", "id": request_id, "payload": body})


def helper_pids(parent: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"swamp.protocol.helpers" in cmdline:
            pids.append(int(entry.name))
    return pids


class Session:
    """A `swamp --jsonl` (or `swamp serve`) kept open, read frame by frame."""

    def __init__(self, repo: Repo, *args: str, helpers: int = 2):
        self.proc = subprocess.Popen(
            [str(SWAMP), *args],
            cwd=repo.root,
            env=clean_env({**env(), "SWAMP_SIGNAL_HELPERS": str(helpers)}),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.frames: list[dict[str, Any]] = []

    def send(self, lines: list[str]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("".join(line + "\n" for line in lines))
        self.proc.stdin.flush()

    def until_done(self, ids: set[str]) -> dict[str, list[dict[str, Any]]]:
        assert self.proc.stdout is not None
        by_id: dict[str, list[dict[str, Any]]] = {}
        waiting = set(ids)
        while waiting:
            line = self.proc.stdout.readline()
            assert line, f"the stream ended with {sorted(waiting)} unanswered"
            got = json.loads(line)
            self.frames.append(got)
            by_id.setdefault(got["id"], []).append(got)
            if got["type"] == "done":
                waiting.discard(got["id"])
        return by_id

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        rest, err = self.proc.stdout.read(), self.proc.stderr.read()
        assert not rest.strip(), rest
        return self.proc.returncode, err


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    at(monkeypatch)
    return make_repo(tmp_path / "repo")


def bytes_written(pids: list[int]) -> int:
    """What the helpers passed to write(): their answers and the records they saved. An idle
    helper writes nothing, so growth means a helper answered (unlike CPU ticks, which a short
    burst may not even register)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for row in Path(f"/proc/{pid}/io").read_text().splitlines():
                if row.startswith("wchar:"):
                    total += int(row.split()[1])
    return total


def warm_helpers(session: Session, waits: list[str], count: int = 2) -> list[int]:
    """Pipeline a backlog that starts the helpers, then probe with signals to unknown waits until
    a helper answers one: from then on the helpers are ready and take every signal pipelined
    behind another."""
    session.send([frame(f"w{i}", w) for i, w in enumerate(waits)])
    session.until_done({f"w{i}" for i in range(len(waits))})
    deadline = time.monotonic() + 60
    while len(helper_pids(session.proc.pid)) < count:
        assert time.monotonic() < deadline, "the helpers did not start"
        time.sleep(0.05)
    helpers = helper_pids(session.proc.pid)
    # Each helper writes "ready\n" once it has started; only growth past that is an answer (a
    # probe that saw only a ready line took a helper still starting for one that answers).
    while bytes_written(helpers) < len(b"ready\n") * len(helpers):
        assert time.monotonic() < deadline, "the helpers did not say they were ready"
        time.sleep(0.05)
    for probe in itertools.count():
        before = bytes_written(helpers)
        ids = [f"probe{probe}-{i}" for i in range(4)]
        session.send([frame(rid, "wait_" + "a" * 26) for rid in ids])
        session.until_done(set(ids))
        if bytes_written(helpers) > before:
            return helpers
        assert time.monotonic() < deadline, "the helpers never answered a signal"
        time.sleep(0.05)
    raise AssertionError("unreachable")


def test_pipelined_signals_are_answered_by_helpers_with_the_same_frames(repo: Repo) -> None:
    waits = open_waits(repo, 96)
    session = Session(repo, "--jsonl")
    helpers = warm_helpers(session, waits[60:])
    before = bytes_written(helpers)
    lines = [frame(f"s{i}", w) for i, w in enumerate(waits[:20])]
    lines.append(frame("bad", waits[20], {"verdict": "maybe"}))
    lines.append(
        frame(
            "dup",
            "",
            text='{"type":"workflow.signal","id":"dup","payload":'
            f'{{"waitId":"{waits[21]}","payload":{{"verdict":"ship","verdict":"fix"}}}}}}',
        )
    )
    lines.append(frame("twice", waits[0]))
    lines.extend(frame(f"s{i}", w) for i, w in enumerate(waits[24:60], start=24))
    session.send(lines)
    by_id = session.until_done({f"s{i}" for i in [*range(20), *range(24, 60)]} | {"bad", "dup", "twice"})
    assert bytes_written(helpers) > before, "the helpers answered signals"
    code, err = session.close()
    assert code == 0 and not err.strip(), err

    for frames in by_id.values():
        assert [f["type"] for f in frames][-1] == "done" and len(frames) == 2, frames
    accepted = {rid: f[0]["payload"]["data"] for rid, f in by_id.items() if f[0]["type"] == "workflow.signal"}
    assert {f"s{i}" for i in [*range(1, 20), *range(24, 60)]} <= set(accepted)
    for data in accepted.values():
        assert set(data) == SIGNAL_KEYS and data["payload"] == {"verdict": "ship"}
    assert by_id["bad"][0]["error"]["code"] == "payload_invalid"
    assert by_id["dup"][0]["error"]["code"] == "payload_malformed"
    # s0 and "twice" name one wait: exactly one of them settles it, the other is told it is settled
    first, second = by_id["s0"][0], by_id["twice"][0]
    assert sorted([first["type"], second["type"]]) == ["error", "workflow.signal"]
    assert (first.get("error") or second.get("error"))["code"] == "wait_settled"

    listed = repo.handle("workflow.waits", {})["waits"]
    assert sorted(w["waitId"] for w in listed) == sorted(waits[20:24])  # bad, dup and two unused
    for helper in helpers:
        assert not Path(f"/proc/{helper}").exists() or _zombie(helper), "helpers exit with the stream"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_one_signal_at_a_time_never_starts_a_helper(repo: Repo) -> None:
    waits = open_waits(repo, 3)
    session = Session(repo, "--jsonl")
    for i, wait_id in enumerate(waits):
        session.send([frame(f"s{i}", wait_id)])
        by_id = session.until_done({f"s{i}"})
        assert by_id[f"s{i}"][0]["type"] == "workflow.signal"
    assert helper_pids(session.proc.pid) == []
    code, err = session.close()
    assert code == 0, err


def test_a_helper_killed_mid_stream_loses_nothing_and_the_stream_goes_on(repo: Repo) -> None:
    waits = open_waits(repo, 40)
    session = Session(repo, "--jsonl", helpers=1)
    (helper,) = warm_helpers(session, waits[:12], count=1)
    session.send([frame(f"b{i}", w) for i, w in enumerate(waits[12:], start=12)])
    time.sleep(0.005)
    os.kill(helper, signal.SIGKILL)
    by_id = session.until_done({f"b{i}" for i in range(12, 40)})
    code, err = session.close()
    assert code == 0 and "Traceback" not in err, err

    still_open = {w["waitId"] for w in repo.handle("workflow.waits", {})["waits"]}
    for i in range(12, 40):
        frames = by_id[f"b{i}"]
        assert len(frames) == 2 and frames[-1]["type"] == "done", frames
        if frames[0]["type"] == "error":  # only a request the helper held when it died
            assert frames[0]["error"]["code"] == "internal_error"
            assert "wait show" in frames[0]["error"]["message"]
        else:
            assert waits[i] not in still_open
    # whatever the helper held either took effect or did not: a second signal settles the rest
    retry = [frame(f"c{i}", w) for i, w in enumerate(waits) if w in still_open]
    again = Session(repo, "--jsonl", helpers=0)
    again.send(retry)
    answers = again.until_done({json.loads(line)["id"] for line in retry})
    again.close()
    assert all(f[0]["type"] == "workflow.signal" for f in answers.values())
    assert repo.handle("workflow.waits", {})["waits"] == []


def test_serve_keeps_helpers_warm_and_takes_them_down_when_it_stops(repo: Repo) -> None:
    waits = open_waits(repo, 16)
    session = Session(repo, "serve")
    deadline = time.monotonic() + 30
    while len(helper_pids(session.proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    helpers = helper_pids(session.proc.pid)
    assert len(helpers) == 2, "serve starts its helpers when it starts"
    session.send([frame(f"s{i}", w) for i, w in enumerate(waits)])
    by_id = session.until_done({f"s{i}" for i in range(16)})
    assert all(f[0]["type"] == "workflow.signal" for f in by_id.values())
    code, err = session.close()
    assert code == 0, err
    deadline = time.monotonic() + 10
    while not all(_zombie(pid) or not Path(f"/proc/{pid}").exists() for pid in helpers):
        assert time.monotonic() < deadline, "a helper outlived serve"
        time.sleep(0.05)


def test_helpers_end_with_serve_when_it_is_killed_even_while_waiting_for_a_claim(repo: Repo) -> None:
    """A helper blocked on a run's claim never sees its stdin close: it must still end with serve,
    not go on (holding claims, settling waits) for a parent that is gone."""
    from swamp.store.claim import RunClaim
    from swamp.store.repo import find_repo

    wait_workflow(repo, "gate", wait_step("review", schema=VERDICT))
    run = repo.run("gate", {})
    wait_id = run["waits"][0]["waitId"]
    claim = RunClaim(find_repo(str(repo.root)), run["id"], purpose="test holds the run")
    assert claim.try_acquire()
    try:
        session = Session(repo, "serve")
        helpers = warm_helpers(session, [])
        body = {"waitId": wait_id, "payload": {"verdict": "ship"}, "claimTimeout": 120}
        session.send(
            [json.dumps({"type": "workflow.signal", "id": f"c{i}", "payload": body}) for i in range(8)]
        )
        lock = str(claim.path)

        def waiting_helpers() -> list[int]:
            found = []
            for pid in helpers:
                with contextlib.suppress(OSError):
                    if any(os.readlink(fd) == lock for fd in Path(f"/proc/{pid}/fd").iterdir()):
                        found.append(pid)
            return found

        deadline = time.monotonic() + 30
        while not waiting_helpers():
            assert time.monotonic() < deadline, "no helper took a signal"
            time.sleep(0.05)
        session.proc.kill()
        session.proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not all(_zombie(pid) or not Path(f"/proc/{pid}").exists() for pid in helpers):
            assert time.monotonic() < deadline, "a helper outlived serve (killed with SIGKILL)"
            time.sleep(0.05)
    finally:
        claim.release()
    listed = repo.handle("workflow.waits", {})["waits"]
    assert [w["waitId"] for w in listed] == [wait_id], "no helper settled the wait after serve died"
