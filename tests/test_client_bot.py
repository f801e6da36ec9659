"""examples/bot/answer.py, the bot of the README, in real processes: serve on a socket, the bot
subscribed to it, and a CLI in another process that starts the run. The bot sees the wait open
(the event comes from the CLI's process, through the repository's event log), answers it with
`resume`, and the run finishes in serve.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import clean_env, echo, job
from test_serve_support import serve_fixture, sockdir_fixture  # noqa: F401 - fixtures

pytestmark = pytest.mark.cli

BOT = Path(__file__).resolve().parent.parent / "examples" / "bot" / "answer.py"
VERDICT = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["ship", "fix"]}}}


def lines_of(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """The lines the process prints, as they come (read by a thread, so a wait can time out)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.strip())

    threading.Thread(target=read, daemon=True).start()
    return lines


def next_line(lines: queue.Queue[str], proc: subprocess.Popen[str], timeout: float) -> str:
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        proc.kill()
        stderr = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"the bot printed nothing within {timeout:g} s; stderr: {stderr}") from None


def test_the_bot_answers_a_wait_opened_by_a_cli_in_another_process_and_the_run_finishes(repo, serve):
    review = {"name": "review", "task": {"type": "wait_for_signal", "timeout": 600, "schema": VERDICT}}
    after = echo("after", {"verdict": "${{ steps.review.outputs.payload.verdict }}"})
    after["dependsOn"] = [{"step": "review", "condition": {"type": "succeeded"}}]
    repo.write_workflow("shipit", [job("main", review, after)])
    server = serve()
    bot = subprocess.Popen(
        [sys.executable, str(BOT), str(server.socket), "review", '{"verdict": "ship"}', "1"],
        cwd=repo.root,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = lines_of(bot)
    try:
        assert next_line(said, bot, 30) == "ready"
        started = repo.swamp("workflow", "run", "shipit", "--json")  # another process: the CLI
        # The bot answers at wait_opened: while the CLI still executes the run, its answer is held
        # and the CLI goes on to the end itself (WAIT-078); once the run is suspended, the answer
        # continues it.
        assert started.code == 0 and started.json["status"] in ("suspended", "succeeded"), started.err
        run_id = started.json["id"]
        answered = next_line(said, bot, 30)
        assert answered.endswith(
            (f"answered; run {run_id} is succeeded", f"held; run {run_id} takes it when it can")
        )
        assert bot.wait(timeout=30) == 0, bot.stderr.read() if bot.stderr else ""
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
    done = repo.swamp("workflow", "history", "get", run_id, "--json")
    assert done.json["status"] == "succeeded"
    steps = {s["name"]: s for s in done.json["jobs"][0]["steps"]}
    assert steps["after"]["outputs"]["args"] == {"verdict": "ship"}


def test_the_bot_is_under_40_lines():
    assert len(BOT.read_text().splitlines()) < 40
