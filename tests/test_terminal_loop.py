"""The loop finished at a terminal (issue 30, items 6 and 7), driven through a pseudo-terminal
(tests/terminal.py): after the payload prompt's answer, `Continue the run now? [Y/n]` when the run
waits for nothing and no serve will continue it, and advice that says what happened (CLI-038,
CLI-039); `run --watch` says it is watching and how to stop, and Ctrl-C stops only the watching
(WATCH-015)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from helpers import SWAMP, clean_env, dep, job, make_repo, sh
from terminal import Terminal

NOW = {"SWAMP_NOW": "2026-01-01T00:00:00Z"}
RESUME_ADVICE = "Next: swamp workflow resume"


def waiting(name: str, **step: object) -> dict:
    return {
        "name": name,
        "task": {"type": "wait_for_signal", "timeout": 86400, "schema": {"type": "boolean"}},
        **step,
    }


@pytest.fixture(scope="module")
def loop_repo(tmp_path_factory):
    repo = make_repo(tmp_path_factory.mktemp("loop") / "repo")
    repo.write_workflow(
        "one", [job("main", waiting("ask"), sh("after", "echo went on", dependsOn=[dep("ask")]))]
    )
    repo.write_workflow("two", [job("a", waiting("ask")), job("b", waiting("other"))])
    repo.write_workflow(
        "chain",
        [
            job(
                "main",
                waiting("ask"),
                sh("middle", "echo middle", dependsOn=[dep("ask")]),
                waiting("later", dependsOn=[dep("middle")]),
                sh("end", "echo the end", dependsOn=[dep("later")]),
            )
        ],
    )
    gate = {"name": "go", "task": {"type": "manual_approval", "prompt": "ship?"}}
    repo.write_workflow("gated", [job("a", waiting("ask")), job("b", gate)])
    repo.write_workflow(
        "busy",
        [
            job("a", waiting("ask")),
            job("b", sh("slow", "i=0; while [ ! -f go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done")),
        ],
    )
    return repo


def suspended(repo, workflow: str) -> dict:
    run = repo.swamp("workflow", "run", workflow, "--json", env=NOW)
    assert run.json["status"] == "suspended", run
    return run.json


def answer_at_the_prompt(repo, wait_id: str) -> Terminal:
    term = Terminal(["workflow", "signal", wait_id], repo.root, NOW)
    term.expect("payload (boolean): ")
    term.line("yes")
    term.expect("[y/N] ")
    term.line("y")
    term.expect("Signal accepted")
    return term


def status(repo, run_id: str) -> str:
    return repo.swamp("workflow", "history", "get", run_id, "--json", env=NOW).json["status"]


@pytest.mark.cli
def test_enter_at_the_offer_continues_the_run_here(loop_repo):
    run = suspended(loop_repo, "one")
    term = answer_at_the_prompt(loop_repo, run["waits"][0]["waitId"])
    term.expect("Continue the run now? [Y/n] ")
    term.line("")
    code, text = term.finish()
    assert code == 0, text
    assert f"Continuing run {run['id']} here" in text and "went on" in text
    assert "succeeded: workflow one" in text
    assert RESUME_ADVICE not in text  # the run moved on: never resume advice
    assert status(loop_repo, run["id"]) == "succeeded"


@pytest.mark.parametrize(("keys", "exit_code"), [("n\r", 0), ("\x03", 130)])
@pytest.mark.cli
def test_no_or_ctrl_c_at_the_offer_leaves_the_run_and_says_how_to_resume(loop_repo, keys, exit_code):
    run = suspended(loop_repo, "one")
    term = answer_at_the_prompt(loop_repo, run["waits"][0]["waitId"])
    term.expect("Continue the run now? [Y/n] ")
    term.send(keys)
    code, text = term.finish()
    assert code == exit_code, text
    assert f"{RESUME_ADVICE} one --run {run['id']}" in text
    assert status(loop_repo, run["id"]) == "suspended"


@pytest.mark.cli
def test_no_offer_while_another_wait_of_the_run_is_open(loop_repo):
    run = suspended(loop_repo, "two")
    first = next(w for w in run["waits"] if w["stepName"] == "ask")
    other = next(w for w in run["waits"] if w["stepName"] == "other")
    code, text = answer_at_the_prompt(loop_repo, first["waitId"]).finish()
    assert code == 0, text
    assert "[Y/n]" not in text and RESUME_ADVICE not in text
    assert f"Next: swamp workflow signal {other['waitId']}" in text


@pytest.mark.cli
def test_no_offer_while_a_gate_of_the_run_is_open_the_approval_is_next(loop_repo):
    run = suspended(loop_repo, "gated")
    code, text = answer_at_the_prompt(loop_repo, run["waits"][0]["waitId"]).finish()
    assert code == 0, text
    assert "[Y/n]" not in text and RESUME_ADVICE not in text
    assert f"Next: swamp workflow approve gated go --run {run['id']} --resume" in text


@pytest.mark.cli
def test_a_serve_that_auto_continues_is_named_instead_of_the_offer(tmp_path):
    """CLI-037/038: a live `serve --auto-continue` on the store continues the run; the prompt does
    not offer to, and the advice is to watch it, never to resume it."""
    repo = make_repo(tmp_path / "repo")
    repo.write_workflow(
        "one", [job("main", waiting("ask"), sh("after", "echo went on", dependsOn=[dep("ask")]))]
    )
    serve = subprocess.Popen(
        [str(SWAMP), "serve", "--auto-continue"],
        cwd=repo.root,
        env=clean_env(NOW),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert serve.stderr is not None
        assert b"ready" in serve.stderr.readline()  # announced before it says ready
        run = suspended(repo, "one")
        code, text = answer_at_the_prompt(repo, run["waits"][0]["waitId"]).finish()
        assert code == 0, text
        assert "[Y/n]" not in text and RESUME_ADVICE not in text
        assert f"swamp serve --auto-continue continues it. Watch it: swamp workflow watch {run['id']}" in text
        watched = repo.swamp("workflow", "watch", run["id"], "--timeout", "20", "--json", env=NOW)
        assert watched.json["status"] == "succeeded", watched
    finally:
        assert serve.stdin is not None
        serve.stdin.close()  # end of input: serve stops, and its announcement with it
        serve.wait(timeout=30)
    # Gone with its serve: the next answer is offered the continuation again.
    run = suspended(repo, "one")
    term = answer_at_the_prompt(repo, run["waits"][0]["waitId"])
    term.expect("Continue the run now? [Y/n] ")
    term.line("n")
    assert term.finish()[0] == 0


@pytest.mark.cli
def test_run_watch_says_it_watches_shows_answers_and_held_signals_and_ctrl_c_stops_it(loop_repo):
    term = Terminal(["workflow", "run", "chain", "--watch"], loop_repo.root, NOW)
    before = term.expect("; Ctrl-C stops watching (the run stays suspended).")
    run_id = re.search(r"Starting workflow chain \(run ([0-9a-f-]{36})\)", before).group(1)
    assert f"Watching run {run_id} for answers" in before
    waits = loop_repo.swamp("workflow", "waits", "--reserved", "--json", env=NOW).json
    mine = {w["stepName"]: w["waitId"] for w in waits["waits"] + waits["reserved"] if w["runId"] == run_id}
    # A signal for a wait not reached yet is held; the first is answered by someone else.
    held = loop_repo.swamp("workflow", "signal", mine["later"], "--payload", "true", "--json", env=NOW)
    assert held.json["held"] is True, held
    answered = loop_repo.swamp("workflow", "signal", mine["ask"], "--payload", "true", env=NOW)
    assert answered.code == 0, answered
    term.expect("ask: signal accepted from ")
    loop_repo.swamp("workflow", "resume", "chain", "--run", run_id, env=NOW)
    term.expect("later took early signal")
    code, text = term.finish()
    assert code == 0 and "succeeded: workflow chain" in text, text

    term = Terminal(["workflow", "run", "one", "--watch"], loop_repo.root, NOW)
    term.expect("Ctrl-C stops watching (the run stays suspended).")
    term.send("\x03")
    code, text = term.finish()
    assert code == 130, text
    run_id = re.search(r"Watching run ([0-9a-f-]{36})", text).group(1)
    assert f"Stopped watching; the run goes on. Watch it again: swamp workflow watch {run_id}" in text
    assert "Aborted" not in text and status(loop_repo, run_id) == "suspended"


@pytest.mark.cli
def test_off_a_terminal_a_plain_signal_still_advises_resume(loop_repo):
    run = suspended(loop_repo, "one")
    result = loop_repo.swamp("workflow", "signal", run["waits"][0]["waitId"], "--payload", "true", env=NOW)
    assert result.code == 0 and f"{RESUME_ADVICE} one --run {run['id']}" in result.out, result
    assert json.loads(json.dumps(result.out)) and "[Y/n]" not in result.out


@pytest.mark.cli
def test_run_shows_a_signal_held_while_steps_beside_the_wait_ran_when_it_applies_it(loop_repo):
    """WATCH-016: the signal is held while `slow` runs; when the run applies it, a line says so."""
    (loop_repo.root / "go").unlink(missing_ok=True)
    term = Terminal(["workflow", "run", "busy", "--watch"], loop_repo.root, NOW)
    term.expect("ask waiting for a signal (")
    wait_id = term.expect(")")
    held = loop_repo.swamp("workflow", "signal", wait_id, "--payload", "true", "--json", env=NOW)
    assert held.json["held"] is True, held
    (loop_repo.root / "go").write_text("")
    term.expect(f"a │ ✉ ask: signal accepted from {held.json['signal']['submittedBy']} ({wait_id})")
    code, text = term.finish()
    assert code == 0 and "succeeded: workflow busy" in text, text
