"""The run claim under real concurrency: racing commands in separate processes, and processes
killed with SIGKILL while they hold a claim (spec/claims.md, spec/approvals.md, spec/resume.md).

Every test drives the real `swamp` executable. Races are started with Popen so the commands really
overlap; the assertions hold for every interleaving: exactly one winner where the rules allow only
one, and a record that is consistent with some serial order of the commands.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env, dep, job, sh, step_of

pytestmark = pytest.mark.cli

WAITING = {"waiting", "waiting_approval"}


# -- helpers ------------------------------------------------------------------------------------


def gate(name: str, prompt: str = "ok?", **step: Any) -> dict[str, Any]:
    return {"name": name, "task": {"type": "manual_approval", "prompt": prompt}, **step}


def start(repo: Repo, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`swamp ARGS` in the background, in its own process group (so its children can be reaped)."""
    return subprocess.Popen(
        [str(SWAMP), *args],
        cwd=repo.root,
        env=clean_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, Any]:
    out, _err = proc.communicate(timeout=timeout)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    return proc.returncode, doc


def together(repo: Repo, *commands: tuple[str, ...]) -> list[tuple[int, Any]]:
    """Start every command at once and wait for all of them."""
    procs = [start(repo, *cmd) for cmd in commands]
    return [finish(p) for p in procs]


def record(repo: Repo, run_id: str) -> dict[str, Any]:
    [path] = [p for p in repo.run_files() if p.stem == run_id]
    return json.loads(path.read_text(encoding="utf-8"))


def poll(what: Callable[[], Any], timeout: float = 20, every: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError, KeyError, IndexError):
            value = what()
            if value:
                return value
        time.sleep(every)
    raise AssertionError("timed out waiting for a condition")


def only_run_id(repo: Repo) -> str:
    def one() -> str | None:
        files = repo.run_files()
        return files[0].stem if len(files) == 1 else None

    return poll(one)


def steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for j in doc["jobs"] for s in j["steps"]]


def assert_settled(doc: dict[str, Any]) -> None:
    """A finished run has no step waiting or running and no job running."""
    assert doc["status"] in ("succeeded", "failed", "cancelled")
    for s in steps(doc):
        assert s["status"] not in WAITING | {"running"}, s
    for j in doc["jobs"]:
        assert j["status"] != "running", j


@contextlib.contextmanager
def reaped(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """Kill what is left of the process group (e.g. a step's `sleep`) when the test ends."""
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.communicate(timeout=5)


def suspended_run(repo: Repo, workflow: str, inputs: dict[str, Any] | None = None) -> str:
    """Set-up, in process (the request layer), to keep the tests quick."""
    doc = repo.run(workflow, inputs)
    assert doc["status"] == "suspended", doc
    return doc["id"]


def approve(repo: Repo, workflow: str, step: str) -> None:
    """Set-up, in process."""
    assert repo.handle("workflow.approve", {"workflow": workflow, "step": step})["approved"] is True


def kill_while_running(
    repo: Repo, workflow: str, ready: Callable[[dict[str, Any]], bool], *, check_live: bool = False
) -> str:
    """Start `workflow run`, wait until its record satisfies `ready`, SIGKILL it; return the run ID."""
    proc = start(repo, "workflow", "run", workflow, "--json")
    with reaped(proc):
        run_id = only_run_id(repo)
        poll(lambda: ready(record(repo, run_id)))
        if check_live:  # alive: the claim is held and the run is not interrupted
            live_checks(repo, workflow, run_id)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    return run_id


def live_checks(repo: Repo, workflow: str, run_id: str) -> None:
    """While its process lives, a run is not interrupted and its claim is held."""
    code, _o, _e, doc = repo.swamp("workflow", "history", "get", run_id, "--json")
    assert code == 0 and doc["interrupted"] is False and doc["status"] == "running"
    code, _o, _e, doc = repo.swamp(
        "workflow", "cancel", workflow, "--run", run_id, "--claim-timeout", "0.2", "--json"
    )
    assert (code, doc["error"]["code"]) == (75, "claim_timeout")


# -- two resumes --------------------------------------------------------------------------------


def _approved_run_with_slow_work(repo: Repo, name: str, seconds: float | None) -> str:
    """A run whose gate is approved and whose next step takes `seconds`, or (None) runs until the
    test writes `<name>.release`, so a test can hold the run busy however loaded the machine is."""
    held = f"while [ ! -f {name}.release ]; do sleep 0.02; done"
    wait = f"sleep {seconds}" if seconds is not None else held
    repo.write_workflow(
        name,
        [
            job(
                "main",
                gate("gate"),
                sh("work", f"echo ran >> {name}.count; {wait}", dependsOn=[dep("gate")]),
            )
        ],
    )
    run_id = suspended_run(repo, name)
    approve(repo, name, "gate")
    return run_id


def test_two_resumes_at_once_exactly_one_runs(repo):
    run_id = _approved_run_with_slow_work(repo, "twice", 1.0)
    cmd = ("workflow", "resume", "twice", "--run", run_id, "--claim-timeout", "0.3", "--json")
    results = together(repo, cmd, cmd)
    winners = [doc for code, doc in results if code == 0]
    losers = [(code, doc) for code, doc in results if code != 0]
    assert len(winners) == 1 and winners[0]["status"] == "succeeded"
    [(code, doc)] = losers
    assert (code, doc["error"]["code"]) in {
        (75, "claim_timeout"),
        (3, "run_not_suspended"),
        (3, "run_terminal"),
    }
    assert repo.read("twice.count") == "ran\n"
    final = record(repo, run_id)
    assert final["status"] == "succeeded"
    assert_settled(final)


def test_a_resume_that_waits_for_the_claim_finds_the_run_finished(repo):
    run_id = _approved_run_with_slow_work(repo, "waiter", 1.0)
    first = start(repo, "workflow", "resume", "waiter", "--run", run_id, "--json")
    poll(lambda: record(repo, run_id)["status"] == "running")
    code, _out, _err, doc = repo.swamp(
        "workflow", "resume", "waiter", "--run", run_id, "--claim-timeout", "30", "--json"
    )
    assert (code, doc["error"]["code"]) == (3, "run_terminal")
    assert finish(first)[0] == 0
    assert repo.read("waiter.count") == "ran\n"


def test_a_second_resume_without_run_is_told_the_run_is_busy(repo):
    run_id = _approved_run_with_slow_work(repo, "busy", None)
    first = start(repo, "workflow", "resume", "busy", "--json")
    with reaped(first):
        poll(lambda: record(repo, run_id)["status"] == "running")
        code, _out, _err, doc = repo.swamp("workflow", "resume", "busy", "--claim-timeout", "0.2", "--json")
        assert doc["error"]["code"] in ("claim_timeout", "run_not_suspended"), doc
        (repo.root / "busy.release").write_text("")
        assert finish(first)[0] == 0


# -- racing decisions ---------------------------------------------------------------------------


def test_approve_racing_reject_exactly_one_wins(repo):
    repo.write_workflow("duel", [job("main", gate("gate"), sh("after", "true", dependsOn=[dep("gate")]))])
    seen: set[str] = set()
    for round_ in range(2):
        run_id = suspended_run(repo, "duel", {"round": round_})
        approve = ("workflow", "approve", "duel", "gate", "--run", run_id, "--claim-timeout", "30", "--json")
        reject = ("workflow", "reject", "duel", "gate", "--run", run_id, "--claim-timeout", "30", "--json")
        pairs = [approve, reject] if round_ % 2 == 0 else [reject, approve]
        (code_a, doc_a), (code_b, doc_b) = together(repo, *pairs)
        results = {pairs[0][1]: (code_a, doc_a), pairs[1][1]: (code_b, doc_b)}
        winners = [verb for verb, (code, _doc) in results.items() if code == 0]
        assert len(winners) == 1, results
        [winner] = winners
        loser_code, loser_doc = results["reject" if winner == "approve" else "approve"]
        final = record(repo, run_id)
        g = step_of(final, "main", "gate")
        if winner == "approve":
            assert (loser_code, loser_doc["error"]["code"]) == (3, "step_not_waiting")
            assert final["status"] == "suspended"
            assert g["status"] == "succeeded" and g["approval"]["decision"]["approved"] is True
        else:
            assert (loser_code, loser_doc["error"]["code"]) == (3, "run_terminal")
            assert g["status"] == "failed" and g["reason"] == "rejected"
            assert g["approval"]["decision"]["approved"] is False
            assert_settled(final)
        seen.add(winner)
    assert seen  # at least one order was exercised; both are checked when they happen


def test_approve_racing_cancel_ends_cancelled_and_consistent(repo):
    repo.write_workflow(
        "halt", [job("main", gate("gate"), gate("other"), sh("after", "true", dependsOn=[dep("gate")]))]
    )
    for round_ in range(2):
        run_id = suspended_run(repo, "halt", {"round": round_})
        (code_a, doc_a), (code_c, doc_c) = together(
            repo,
            ("workflow", "approve", "halt", "gate", "--run", run_id, "--claim-timeout", "30", "--json"),
            ("workflow", "cancel", "halt", "--run", run_id, "--claim-timeout", "30", "--json"),
        )
        # cancel always wins: either it came first, or it came after the approval (which leaves the
        # run suspended); the approval either landed before it or was refused
        assert code_c == 0 and doc_c["status"] == "cancelled"
        final = record(repo, run_id)
        assert final["status"] == "cancelled"
        assert_settled(final)
        g = step_of(final, "main", "gate")
        if code_a == 0:
            assert doc_a["approved"] is True
            assert g["status"] == "succeeded" and g["approval"]["decision"]["approved"] is True
        else:
            assert (code_a, doc_a["error"]["code"]) == (3, "run_terminal")
            assert g["status"] == "failed" and g["reason"] == "cancelled" and "decision" not in g["approval"]
        other = step_of(final, "main", "other")
        assert other["status"] == "failed" and other["reason"] == "cancelled"


def test_concurrent_approvals_of_one_run_lose_no_decision(repo):
    names = ["a", "b", "c", "d", "e", "f"]
    repo.write_workflow(
        "quorum",
        [
            job(
                "main",
                {
                    **gate("sign", "${{ self.who }}?"),
                    "forEach": {"item": "who", "in": "${{ " + json.dumps(names) + " }}"},
                },
            )
        ],
    )
    run_id = suspended_run(repo, "quorum")
    results = together(
        repo,
        *[
            ("workflow", "approve", "quorum", f"sign-{n}", "--run", run_id, "--claim-timeout", "30", "--json")
            for n in names
        ],
    )
    assert [code for code, _doc in results] == [0] * len(names), results
    final = record(repo, run_id)
    for n in names:
        s = step_of(final, "main", f"sign-{n}")
        assert s["status"] == "succeeded" and s["approval"]["decision"]["approved"] is True
    code, _out, _err, doc = repo.swamp("workflow", "resume", "quorum", "--json")
    assert code == 0 and doc["status"] == "succeeded"


# -- the claim while a run executes -------------------------------------------------------------


def test_suspension_is_saved_only_after_siblings_and_the_claim_is_held_until_then(repo):
    repo.write_workflow(
        "sib",
        [
            job(
                "main",
                gate("gate"),
                sh("slow", "sleep 2; echo slow"),
                sh("after", "true", dependsOn=[dep("slow")]),
            )
        ],
    )
    proc = start(repo, "workflow", "run", "sib", "--json")
    with reaped(proc):
        run_id = only_run_id(repo)

        poll(lambda: record(repo, run_id)["status"] == "running")
        # while the sibling runs the run is not suspended: no gate is listed, none can be decided
        code, _o, _e, listed = repo.swamp("workflow", "approvals", "--json")
        assert listed["approvals"] == [] or proc.poll() is not None
        early = repo.swamp(
            "workflow", "approve", "sib", "gate", "--run", run_id, "--claim-timeout", "0", "--json"
        )
        if proc.poll() is None:  # it was still executing all along: its claim was held
            assert (early.code, early.json["error"]["code"]) == (75, "claim_timeout")
        snapshots = []
        while proc.poll() is None:
            with contextlib.suppress(ValueError, OSError):
                snapshots.append(record(repo, run_id))
            time.sleep(0.02)
        assert finish(proc)[0] == 0
    for snap in snapshots:
        if snap["status"] == "suspended":
            assert all(s["status"] != "running" for s in steps(snap)), snap
    final = record(repo, run_id)
    assert final["status"] == "suspended"
    assert step_of(final, "main", "slow")["status"] == "succeeded"
    assert step_of(final, "main", "after")["status"] == "pending"
    if early.code != 0:  # --run takes a unique prefix of the run ID
        code, _o, _e, doc = repo.swamp("workflow", "approve", "sib", "gate", "--run", run_id[:8], "--json")
        assert code == 0 and doc["runId"] == run_id


# -- SIGKILL while holding the claim ------------------------------------------------------------


def _crash_workflow(repo: Repo, name: str) -> None:
    """`main.slow` sleeps while the flag file exists; `side.quick` ends at once, so the record is
    saved with `slow` running."""
    (repo.root / f"{name}.flag").write_text("", encoding="utf-8")
    repo.write_workflow(
        name,
        [
            job(
                "main",
                sh("slow", f"if [ -f {name}.flag ]; then sleep 30; fi; echo slow"),
                sh("next", "echo next", dependsOn=[dep("slow")]),
            ),
            job("side", sh("quick", "echo quick")),
        ],
    )


def _slow_recorded_running(doc: dict[str, Any]) -> bool:
    return (
        step_of(doc, "main", "slow")["status"] == "running"
        and step_of(doc, "side", "quick")["status"] == "succeeded"
    )


def test_killed_run_is_interrupted_and_can_be_cancelled_at_once(repo):
    _crash_workflow(repo, "crash")
    run_id = kill_while_running(repo, "crash", _slow_recorded_running, check_live=True)
    code, _o, _e, doc = repo.swamp("workflow", "history", "crash", "--json")
    assert [(r["runId"], r["status"], r["interrupted"]) for r in doc["runs"]] == [(run_id, "running", True)]
    started = time.monotonic()
    code, _o, err, doc = repo.swamp(
        "workflow", "cancel", "crash", "--reason", "crashed", "--claim-timeout", "0", "--json"
    )
    assert code == 0, err
    assert time.monotonic() - started < 5
    assert doc["status"] == "cancelled" and doc["cancelReason"] == "crashed"
    slow = step_of(doc, "main", "slow")
    assert (
        slow["status"] == "failed"
        and slow["reason"] == "interrupted"
        and slow["error"].startswith("interrupted:")
    )
    final = record(repo, run_id)
    assert_settled(final)
    code, _o, _e, doc = repo.swamp("workflow", "history", "get", run_id, "--json")
    assert doc["interrupted"] is False and doc["status"] == "cancelled"


def test_killed_run_resume_marks_it_failed_then_resume_from_retries(repo):
    (repo.root / "solo.flag").write_text("", encoding="utf-8")
    repo.write_workflow(
        "solo",
        [
            job(
                "main",
                sh("first", "echo first >> solo.log"),
                sh(
                    "slow",
                    "if [ -f solo.flag ]; then sleep 30; fi; echo slow >> solo.log",
                    dependsOn=[dep("first")],
                ),
            )
        ],
    )
    # the record is saved after level 1 (first succeeded) while `slow` runs
    run_id = kill_while_running(repo, "solo", lambda d: step_of(d, "main", "first")["status"] == "succeeded")
    code, _o, _e, doc = repo.swamp("workflow", "approve", "solo", "slow", "--run", run_id, "--json")
    assert (code, doc["error"]["code"]) == (3, "run_not_suspended")
    code, _o, _e, doc = repo.swamp("workflow", "resume", "solo", "--claim-timeout", "0", "--json")
    assert (code, doc["error"]["code"]) == (3, "run_not_suspended")
    assert "--from" in doc["error"]["message"]
    failed = record(repo, run_id)
    assert failed["status"] == "failed" and failed.get("completedAt")
    assert all(s["status"] != "running" for s in steps(failed))
    (repo.root / "solo.flag").unlink()
    code, _o, err, doc = repo.swamp("workflow", "resume", "solo", "--from", "slow", "--json")
    assert code == 0, err
    assert doc["id"] == run_id and doc["status"] == "succeeded"
    assert repo.read("solo.log") == "first\nslow\n"


def test_killed_run_resume_from_can_end_succeeded(repo):
    _crash_workflow(repo, "crash2")
    run_id = kill_while_running(repo, "crash2", _slow_recorded_running)
    code, _o, _e, doc = repo.swamp("workflow", "resume", "crash2", "--json")
    assert (code, doc["error"]["code"]) == (3, "run_not_suspended")
    failed = record(repo, run_id)
    slow = step_of(failed, "main", "slow")
    assert slow["status"] == "failed" and slow["reason"] == "interrupted"
    (repo.root / "crash2.flag").unlink()
    code, _o, _e, doc = repo.swamp("workflow", "resume", "crash2", "--from", "slow", "--json")
    assert doc["status"] == "succeeded", [(j["name"], j["status"]) for j in doc["jobs"]]


def test_killed_run_with_an_open_gate_keeps_no_step_waiting(repo):
    (repo.root / "gated.flag").write_text("", encoding="utf-8")
    repo.write_workflow(
        "gated",
        [
            job("ask", sh("pre", "echo pre"), gate("gate", dependsOn=[dep("pre")])),
            job("work", sh("slow", "if [ -f gated.flag ]; then sleep 30; fi; echo slow")),
        ],
    )
    run_id = kill_while_running(
        repo, "gated", lambda d: step_of(d, "ask", "gate")["status"] == "waiting_approval"
    )
    code, _o, _e, doc = repo.swamp("workflow", "resume", "gated", "--json")
    assert (code, doc["error"]["code"]) == (3, "run_not_suspended")
    assert_settled(record(repo, run_id))


# -- other findings -----------------------------------------------------------------------------


def test_gates_of_parallel_jobs_open_together(repo):
    repo.write_workflow(
        "parallel",
        [
            job("legal", gate("legal-ok")),
            job("security", sh("prepare", "echo docs"), gate("security-ok", dependsOn=[dep("prepare")])),
        ],
    )
    code, _o, _e, doc = repo.swamp("workflow", "run", "parallel", "--json")
    assert code == 0 and doc["status"] == "suspended"
    assert sorted(g["stepName"] for g in doc["gates"]) == ["legal-ok", "security-ok"]


def test_resume_inputs_are_validated_like_run_inputs(repo):
    repo.write_workflow(
        "typed",
        [job("main", gate("gate"), sh("use", "echo ${{ inputs.version }}", dependsOn=[dep("gate")]))],
        inputs={
            "type": "object",
            "properties": {"version": {"type": "string", "default": "1"}},
            "additionalProperties": False,
        },
    )
    bad = 'version:json={"a": 1}'
    code, _o, _e, doc = repo.swamp("workflow", "run", "typed", "--input", bad, "--json")
    assert (code, doc["error"]["code"]) == (3, "input_invalid")
    run_id = suspended_run(repo, "typed")
    approve(repo, "typed", "gate")
    code, _o, _e, doc = repo.swamp("workflow", "resume", "typed", "--input", bad, "--json")
    assert (code, doc.get("error", {}).get("code")) == (3, "input_invalid"), doc.get("status")
    assert record(repo, run_id)["status"] == "suspended"


def test_claim_lock_file_is_the_documented_path(repo):
    repo.write_workflow("lockpath", [job("main", gate("gate"))])
    run_id = suspended_run(repo, "lockpath")
    lock = Path(repo.root / ".swamp" / "locks" / f"{run_id}.lock")
    assert lock.is_file()
    holder = subprocess.Popen(["flock", str(lock), "sleep", "30"], start_new_session=True)
    with reaped(holder):  # type: ignore[arg-type]
        time.sleep(0.2)
        code, _o, _e, doc = repo.swamp(
            "workflow", "approve", "lockpath", "gate", "--claim-timeout", "0.3", "--json"
        )
        assert (code, doc["error"]["code"]) == (75, "claim_timeout")
        assert doc["error"]["details"] == {"runId": run_id, "timeout": 0.3}
    code, _o, _e, doc = repo.swamp(
        "workflow", "approve", "lockpath", "gate", "--claim-timeout", "0", "--json"
    )
    assert code == 0 and doc["approved"] is True
