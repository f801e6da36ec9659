"""The hook supervisor and launcher: a timeout kills the hook's whole process group, every outcome
is audited, a slow hook never delays `signal`, and hooks are bounded (queued, none dropped)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, Site, clean_env, run_swamp

from swamp.hooks import MAX_RUNNING
from swamp.hooks.launch import launch, take_slot
from swamp.hooks.supervisor import STDERR_TAIL, run_job
from swamp.store.repo import RepoLayout

WAIT = "wait_" + "a" * 26


def eventually(check: Any, limit: float = 30) -> None:
    """Poll for an effect of a detached process (bounded: fails after `limit` seconds)."""
    end = time.monotonic() + limit
    while not check():
        assert time.monotonic() < end, "the detached hook never got there"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as stat:  # a zombie is dead too
        return stat.read().split(") ")[-1][0] != "Z"
    return True


def test_a_hook_reads_its_document_and_its_outcome_is_audited(site: Site) -> None:
    entry = run_job(site.root, site.job('cat > got.json; echo "$SWAMP_HOOK $SWAMP_WAIT_ID" >&2'))
    assert json.loads((site.root / "got.json").read_text()) == {"waitId": WAIT}
    assert (site.root / "got.json").read_text().endswith("}\n")
    assert entry["code"] == "ok" and entry["exitCode"] == 0 and entry["timedOut"] is False
    assert entry["stderr"] == f"waitOpened {WAIT}\n"
    (audited,) = site.trail()
    assert audited["action"] == "hook" and audited["code"] == "ok" and audited["hook"] == "waitOpened"
    assert audited["by"] and audited["at"].endswith("Z")


def test_a_failing_hook_is_audited_with_the_tail_of_its_stderr(site: Site) -> None:
    run_job(
        site.root, site.job(f"head -c {STDERR_TAIL * 3} /dev/zero | tr '\\0' x >&2; echo END >&2; exit 9")
    )
    (audited,) = site.trail()
    assert (audited["code"], audited["exitCode"]) == ("hook_failed", 9)
    assert len(audited["stderr"]) == STDERR_TAIL and audited["stderr"].endswith("xEND\n")


def test_a_hook_past_its_timeout_is_killed_with_its_whole_process_group(site: Site) -> None:
    # The shell starts a background sleep (same process group) and waits on another one.
    command = "sleep 60 & echo $! > bg.pid; sleep 60"
    entry = run_job(site.root, site.job(command, timeout=0.5))
    assert entry["code"] == "hook_timed_out" and entry["timedOut"] is True and entry["exitCode"] is None
    background = int((site.root / "bg.pid").read_text())
    eventually(lambda: not alive(background), limit=10)
    assert site.trail()[0]["code"] == "hook_timed_out"


def test_a_hook_that_ignores_its_stdin_is_not_an_error(site: Site) -> None:
    big = json.dumps({"waitId": WAIT, "schema": {"description": "x" * 300_000}})  # more than a pipe holds
    assert run_job(site.root, site.job("exit 0", stdin=big))["code"] == "ok"


def test_a_hook_that_cannot_start_is_audited(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(site.root / "no-bin"))  # no `sh` to start it with
    entry = run_job(site.root, site.job("true"))
    assert entry["code"] == "hook_not_started" and entry["error"]
    assert site.trail()[0]["code"] == "hook_not_started"


def test_a_slow_hook_never_delays_signal_or_the_run(repo: Repo) -> None:
    """The settled hook waits for a file written only after `signal` returned; a signal that waited
    for its hook would never return (the subprocess timeout would fail the test)."""
    (repo.root / ".swamp.yaml").write_text(
        "hooks:\n"
        "  waitOpened: {command: 'while ! test -f go; do sleep 0.02; done; echo opened > opened.txt'}\n"
        "  waitSettled: {command: 'while ! test -f go; do sleep 0.02; done; echo settled > settled.txt'}\n"
    )
    repo.write_workflow(
        "slow",
        [{"name": "main", "steps": [{"name": "w", "task": {"type": "wait_for_signal", "timeout": 60}}]}],
    )
    started = run_swamp("workflow", "run", "slow", "--json", cwd=repo.root, timeout=30)
    assert started.json["status"] == "suspended"
    wait_id = started.json["waits"][0]["waitId"]
    signalled = run_swamp(
        "workflow", "signal", wait_id, "--payload", "1", "--resume", "--json", cwd=repo.root, timeout=30
    )
    assert signalled.code == 0 and signalled.json["runStatus"] == "succeeded"
    assert not (repo.root / "opened.txt").exists() and not (repo.root / "settled.txt").exists()
    (repo.root / "go").write_text("")
    eventually(lambda: (repo.root / "opened.txt").exists() and (repo.root / "settled.txt").exists())


def test_jobs_queued_while_every_slot_is_busy_run_later_none_dropped(site: Site) -> None:
    layout = RepoLayout(site.root)
    spool = site.root / ".swamp" / "hooks"
    spool.mkdir(exist_ok=True)
    held = [take_slot(spool, slot) for slot in range(MAX_RUNNING)]
    assert all(fd is not None for fd in held)
    launch(layout, [site.job(f"echo {n} >> out") for n in range(3)])
    assert len(os.listdir(spool / "queue")) == 3  # no supervisor could start: the jobs wait
    for fd in held:
        assert fd is not None
        os.close(fd)
    launch(layout, [site.job("echo 3 >> out")])
    eventually(lambda: (site.root / "out").exists() and len((site.root / "out").read_text().split()) == 4)
    assert sorted((site.root / "out").read_text().split()) == ["0", "1", "2", "3"]
    eventually(lambda: len(site.trail()) == 4)


def test_a_burst_of_hooks_never_runs_more_than_the_bound_at_once(site: Site) -> None:
    layout = RepoLayout(site.root)
    command = 'mkdir -p active; : > "active/$$"; sleep 0.05; ls active | wc -l >> counts; rm "active/$$"'
    for _ in range(5):  # five saves of 8 waits each, as fast as a run opens them
        launch(layout, [site.job(command) for _ in range(8)])
    eventually(
        lambda: (site.root / "counts").exists() and len((site.root / "counts").read_text().split()) == 40
    )
    assert max(int(n) for n in (site.root / "counts").read_text().split()) <= MAX_RUNNING


def test_the_supervisor_runs_as_a_module_in_its_own_session(site: Site, tmp_path: Path) -> None:
    """`python -m swamp.hooks` is what launch starts: it must import and run without the CLI."""
    spool = tmp_path / "spool"
    (spool / "queue").mkdir(parents=True)
    (spool / "queue" / "1.json").write_text(json.dumps(site.job("echo $PPID > ran")))
    fd = take_slot(spool, 0)
    assert fd is not None
    done = subprocess.run(
        [sys.executable, "-m", "swamp.hooks", str(site.root), str(spool), str(fd)],
        pass_fds=(fd,),
        env=clean_env(),
        capture_output=True,
        timeout=60,
    )
    os.close(fd)
    assert done.returncode == 0, done.stderr
    assert (site.root / "ran").exists() and site.trail()[0]["code"] == "ok"
    assert os.listdir(spool / "queue") == []


@pytest.mark.parametrize("where", ["trail", "folder"])
def test_the_audit_is_never_written_through_a_planted_link(site: Site, tmp_path: Path, where: str) -> None:
    outside = tmp_path / "outside"
    folder = site.audit_file.parent
    if where == "trail":
        outside.mkdir()
        site.audit_file.unlink(missing_ok=True)
        site.audit_file.symlink_to(outside / "stolen")
    else:
        folder.rename(outside)
        folder.symlink_to(outside)
    before = sorted(os.listdir(outside))
    run_job(site.root, site.job("true"))
    assert sorted(os.listdir(outside)) == before


def test_the_signal_command_a_hook_is_given_sends_the_example_when_a_shell_runs_it(repo: Repo) -> None:
    """HOOK-006: `signal` is quoted for sh, even when the example holds quotes and `$(...)`."""
    (repo.root / ".swamp.yaml").write_text("hooks: {waitOpened: 'cat > doc.json'}\n")
    schema = {
        "type": "object",
        "required": ["note"],
        "properties": {"note": {"const": "it's $(touch pwned)"}},
    }
    task = {"type": "wait_for_signal", "timeout": 60, "schema": schema}
    repo.write_workflow("quoted", [{"name": "main", "steps": [{"name": "w", "task": task}]}])
    started = run_swamp("workflow", "run", "quoted", "--json", cwd=repo.root)
    doc_file = repo.root / "doc.json"
    eventually(lambda: doc_file.exists() and doc_file.read_text().endswith("\n"))
    doc = json.loads(doc_file.read_text())
    assert doc["example"] == {"note": "it's $(touch pwned)"}
    bin_dir = str(Path(sys.executable).parent)
    env = clean_env({"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    sent = subprocess.run(
        ["sh", "-c", doc["signal"] + " --json"], cwd=repo.root, env=env, capture_output=True, timeout=60
    )
    assert sent.returncode == 0, sent.stdout
    assert json.loads(sent.stdout)["payload"] == doc["example"]
    assert json.loads(sent.stdout)["waitId"] == started.json["waits"][0]["waitId"]
    assert not (repo.root / "pwned").exists()


def test_a_hook_that_cannot_even_be_started_never_fails_the_run(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor cannot be started (no Python there, no process left): the run is saved and
    goes on, and the audit trail says the hook did not start."""
    import swamp.hooks.launch as launch_module

    def refuse(*args: Any) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(launch_module, "_start_supervisor", refuse)
    (repo.root / ".swamp.yaml").write_text("hooks: {waitOpened: 'true'}\n")
    task = {"type": "wait_for_signal", "timeout": 60}
    repo.write_workflow("nostart", [{"name": "main", "steps": [{"name": "w", "task": task}]}])
    result = repo.run("nostart")
    assert result["status"] == "suspended"
    shown = repo.handle("workflow.wait.show", {"waitId": result["waits"][0]["waitId"]})
    (entry,) = shown["hooks"]
    assert entry["code"] == "hook_not_started" and "Resource temporarily unavailable" in entry["error"]
