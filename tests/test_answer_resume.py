"""signal --resume and approve --resume in real processes: the run is continued under the claim the
answer was recorded with, and swamp serve continues it once (its own auto-continue stays out)."""

from __future__ import annotations

import pytest
from helpers import SWAMP, dep, job, sh
from test_serve_support import cli_json, gate, record, serve_stdin, wait

pytestmark = pytest.mark.cli


def test_no_other_process_can_claim_the_run_while_signal_resume_continues_it(repo):
    """The step after the wait asks for the run's claim at once: the answer's process holds it."""
    grab = (
        f"'{SWAMP}' workflow resume held --run ${{{{ run.id }}}} --claim-timeout 0 --json > /dev/null; "
        "echo $? > code.txt"
    )
    repo.write_workflow("held", [job("main", wait("review"), sh("grab", grab, dependsOn=[dep("review")]))])
    code, run = cli_json(repo, "workflow", "run", "held")
    assert code == 0 and run["status"] == "suspended"
    wait_id = run["waits"][0]["waitId"]
    code, answered = cli_json(repo, "workflow", "signal", wait_id, "--payload", "1", "--resume")
    assert code == 0 and answered["continued"] is True and answered["run"]["status"] == "succeeded"
    assert repo.read("code.txt").strip() == "75"  # claim_timeout: the continuation held the claim


@pytest.mark.parametrize("flags", [(), ("--auto-continue",)])
def test_serve_continues_a_signal_with_resume_once_and_streams_it(repo, flags):
    after = sh("after", "echo after >> ran.txt", dependsOn=[dep("review")])
    repo.write_workflow("served", [job("main", wait("review"), after)])
    code, run = cli_json(repo, "workflow", "run", "served")
    assert code == 0
    wait_id = run["waits"][0]["waitId"]
    request = {"waitId": wait_id, "payload": {"ok": True}, "resume": True}
    frame = {"type": "workflow.signal", "id": "s1", "payload": request}
    code, frames, stderr = serve_stdin(repo, [frame], *flags)
    assert code == 0, stderr
    events = [f["event"]["event"] for f in frames if f["type"] == "event"]
    assert events[0] == "run_resumed" and events[-1] == "run_completed"
    (result,) = [f["payload"]["data"] for f in frames if f["type"] == "workflow.signal"]
    assert result["continued"] is True and result["run"]["status"] == "succeeded"
    assert "autoResume" not in result  # serve's own continuation did not run after it
    assert repo.read("ran.txt") == "after\n"
    assert record(repo, run["id"])["status"] == "succeeded"


def test_serve_approve_with_resume_is_not_resumed_again_by_serve(repo):
    repo.write_workflow(
        "gated", [job("main", gate("go"), sh("after", "echo after >> gated.txt", dependsOn=[dep("go")]))]
    )
    code, run = cli_json(repo, "workflow", "run", "gated")
    assert code == 0
    request = {"workflow": "gated", "step": "go", "resume": True}
    code, frames, stderr = serve_stdin(repo, [{"type": "workflow.approve", "id": "a1", "payload": request}])
    assert code == 0, stderr
    (result,) = [f["payload"]["data"] for f in frames if f["type"] == "workflow.approve"]
    assert result["continued"] is True and result["runStatus"] == "succeeded"
    assert "autoResume" not in result
    assert repo.read("gated.txt") == "after\n"
