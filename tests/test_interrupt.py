"""SIGTERM to a `workflow run` whose level runs several steps at once (RUN-026): every running
command is stopped and recorded interrupted, a step that had ended keeps its outcome, and nothing
of a later level starts."""

from __future__ import annotations

import os

import pytest
from helpers import Repo, dep, job, sh

# b signals once a runs and quick's command has ended and been reaped (so quick has succeeded).
WAIT = (
    "i=0; while [ ! -s a.pid ] || [ ! -s quick.pid ] || kill -0 $(cat quick.pid) 2>/dev/null; "
    "do i=$((i+1)); [ $i -gt 400 ] && exit 9; sleep 0.05; done"
)


@pytest.mark.cli
def test_sigterm_stops_every_running_step_of_the_level_and_starts_no_later_one(repo: Repo) -> None:
    repo.write_workflow(
        "wide",
        [
            job(
                "main",
                sh("quick", "echo $$ > quick.pid.tmp; mv quick.pid.tmp quick.pid"),
                sh("a", "echo $$ > a.pid.tmp; mv a.pid.tmp a.pid; exec sleep 30"),
                sh("b", f"{WAIT}; kill -TERM $PPID; exec sleep 30"),
                sh("later", "echo later", dependsOn=[dep("a", "completed")]),
            )
        ],
    )
    result = repo.swamp("workflow", "run", "wide", "--json")
    assert result.code == 143, result.err
    steps = {s["name"]: s for s in result.json["jobs"][0]["steps"]}
    assert steps["quick"]["status"] == "succeeded"
    for name in ("a", "b"):
        assert (steps[name]["status"], steps[name]["reason"]) == ("failed", "interrupted")
        assert steps[name]["error"] == "interrupted: swamp received SIGTERM"
    assert steps["later"]["status"] == "pending"
    assert result.json["interruption"]["signal"] == "SIGTERM"
    assert result.json["failedStep"] in ("main.a", "main.b")
    with pytest.raises(ProcessLookupError):
        os.kill(int((repo.root / "a.pid").read_text()), 0)
