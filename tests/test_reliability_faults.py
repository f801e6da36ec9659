"""Faults: kill -9 at random moments, a full disk, a read-only datastore (CLAIM-005, RUN records).

After a SIGKILL of a signal, a resume or a run, every record still reads, every wait is open with
no receipt or settled with one, nothing acknowledged is lost, and the next command is not blocked
by a leftover claim. A write that fails (ENOSPC, EROFS, EACCES) is a refusal without a traceback
that leaves the old record byte-identical. scripts/reliability runs the kill trials by the hundred.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import reliability_kit as kit  # noqa: E402

pytestmark = pytest.mark.cli


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with kit.scratch(tmp_path_factory.mktemp("faults")) as path:
        yield path


@pytest.mark.parametrize("target", kit.KILL_TARGETS)
@pytest.mark.parametrize("seed", [3, 4])
def test_kill_nine_at_a_random_moment(base: Path, target: str, seed: int) -> None:
    tally = kit.trial_kill(base, target, random.Random(seed * 31 + len(target)))
    assert tally.clean, {"summary": tally.summary(), "violations": tally.violations, "notes": tally.notes}


def test_a_killed_claim_holder_frees_the_run_at_once(base: Path) -> None:
    """A resume killed while it holds the claim (inside a long step) leaves nothing held: the next
    command takes the claim on its first try and finds the run interrupted."""
    root = kit.fresh(base, "held")
    wf = kit.write_workflow(
        root,
        "held",
        [
            kit.job(
                "main",
                kit.wait_step("review", 3600, {}),
                kit.sh_step("long", "sleep 30", dependsOn=[kit.dep("review")]),
            )
        ],
    )
    run = kit.start_run(root, wf)
    kit.call(root, "workflow.signal", {"waitId": run["waits"][0]["waitId"], "payload": 1}, now=kit.at(1))
    proc = kit.spawn(root, "workflow", "resume", wf, "--run", run["id"], "--json", now=kit.at(2))
    deadline = time.monotonic() + 30
    while kit.the_run(root, run["id"])["status"] != "running":  # saved running as it starts executing
        assert time.monotonic() < deadline and proc.poll() is None, "the resume never started executing"
        time.sleep(0.02)
    time.sleep(0.3)  # inside `sleep 30` now, claim held
    assert kit.claim_held(root, run["id"]) and proc.poll() is None
    kit.kill(proc)
    assert not kit.claim_held(root, run["id"])
    answer = kit.attempt(
        root, "workflow.resume", {"workflow": wf, "run": run["id"], "claimTimeout": 0}, now=kit.at(3)
    )
    assert answer["error"]["code"] == "run_not_suspended"  # interrupted, now marked failed
    doc = kit.the_run(root, run["id"])
    assert doc["status"] == "failed"
    assert kit.step_named(doc, "review")["wait"]["receipt"] is not None  # the acknowledged signal kept
    assert kit.violations(doc) == []


def test_an_interrupted_run_keeps_no_step_waiting(base: Path) -> None:
    """CLAIM-010: killed while a sibling job runs, after a step started waiting; the next resume marks
    the run failed and settles the wait (reason interrupted) instead of leaving it `waiting`."""
    root = kit.fresh(base, "interrupt")
    wf = kit.write_workflow(
        root,
        "interrupt",
        [
            kit.job(
                "a",
                kit.sh_step("first", "sleep 0.2"),
                kit.wait_step("review", 3600, {}, dependsOn=[kit.dep("first")]),
            ),
            kit.job("b", kit.sh_step("slow", "sleep 30")),
        ],
    )
    proc = kit.spawn(root, "workflow", "run", wf, "--json")
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline and proc.poll() is None, "the run never reached the wait"
        files = kit.record_files(root)
        if files:
            doc = kit.load_record(files[0])
            if doc["status"] == "running" and kit.step_named(doc, "review")["status"] == "waiting":
                break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    answer = kit.attempt(
        root, "workflow.resume", {"workflow": wf, "run": doc["id"], "claimTimeout": 0}, now=kit.at(1)
    )
    assert answer["error"]["code"] == "run_not_suspended"
    after = kit.the_run(root, doc["id"])
    assert after["status"] == "failed"
    review = kit.step_named(after, "review")
    assert (review["status"], review["reason"], review["wait"]["outcome"]) == (
        "failed",
        "interrupted",
        "cancelled",
    )


# -- storage faults ------------------------------------------------------------------------------


def faulty(root: Path, fault: str, *args: str, now: str) -> kit.Result:
    """The real CLI, with every durable write failing as `fault` (see scripts/reliability_faulty.py)."""
    return kit.cli(root, *args, now=now, program=[kit.PYTHON, kit.FAULTY, fault])


STORAGE_CASES = [
    ("enospc", "signal"),
    ("enospc", "resume"),
    ("enospc", "cancel"),
    ("enospc", "run"),
    ("erofs", "signal"),
    ("eacces", "reject"),
]


@pytest.mark.parametrize(("fault", "verb"), STORAGE_CASES)
def test_a_failed_write_is_refused_and_the_old_record_stays(base: Path, fault: str, verb: str) -> None:
    tally = kit.trial_storage(base, fault, verb)
    assert tally.clean, {"summary": tally.summary(), "violations": tally.violations, "notes": tally.notes}
    assert tally.accepted == 0 and sum(tally.refused.values()) == 1


def _setup(base: Path, label: str) -> tuple[Path, str, dict[str, Any]]:
    root = kit.fresh(base, label)
    wf = kit.one_wait_workflow(root, "disk")
    return root, wf, kit.start_run(root, wf)


def test_log_mode_says_it_plainly_too(base: Path) -> None:
    root, _, run = _setup(base, "log-mode")
    result = faulty(
        root,
        "enospc",
        "workflow",
        "signal",
        run["waits"][0]["waitId"],
        "--payload",
        '{"n": 1}',
        now=kit.at(1),
    )
    assert result.code != 0 and not kit.has_traceback(result.out, result.err)
    assert "No space left on device" in result.err and result.out == ""


def test_a_failed_write_has_its_own_code_and_next_step(base: Path) -> None:
    root, _, run = _setup(base, "clear")
    result = faulty(
        root,
        "enospc",
        "workflow",
        "signal",
        run["waits"][0]["waitId"],
        "--payload",
        '{"n": 1}',
        "--json",
        now=kit.at(1),
    )
    error = json.loads(result.out)["error"]
    assert error["code"] != "internal_error"
    assert "SWAMP_DEBUG" not in error["message"]
