"""examples/hooks runs for real: its file hook logs a wait as it opens and as it settles, and its
chat hook posts a JSON body (built from stdin, never from shell text) to a webhook."""

from __future__ import annotations

import json
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import run_swamp

EXAMPLE = Path(__file__).parent.parent / "examples" / "hooks"
HOSTILE = "1.4 $(touch pwned) `touch pwned2` it's"


def eventually(check: Any, limit: float = 30) -> None:
    """Poll for an effect of a detached hook (bounded: fails after `limit` seconds)."""
    end = time.monotonic() + limit
    while not check():
        assert time.monotonic() < end, "the hook never got there"
        time.sleep(0.02)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "hooks"
    shutil.copytree(EXAMPLE, root)
    assert run_swamp("repo", "init", ".", "--json", cwd=root).code == 0
    return root


def test_the_file_hook_logs_the_wait_opening_and_settling(repo: Path) -> None:
    started = run_swamp("workflow", "run", "deploy", "--input", f"version={HOSTILE}", "--json", cwd=repo)
    assert started.code == 0, started.out
    wait_id = started.json["waits"][0]["waitId"]
    log = repo / "waits.log"
    eventually(lambda: len(lines(log)) == 2)
    opened, answer = lines(log)
    assert f"OPENED deploy/go-ahead {wait_id}" in opened and HOSTILE in opened
    assert answer.strip() == f"answer with: swamp workflow signal {wait_id} --payload '{{\"go\":true}}'"
    signalled = run_swamp("workflow", "signal", wait_id, "--payload", '{"go": true}', "--json", cwd=repo)
    assert signalled.code == 0, signalled.out
    eventually(lambda: len(lines(log)) == 3)
    assert f"RECEIVED deploy/go-ahead {wait_id}" in lines(log)[2]
    assert not list(repo.glob("pwned*"))
    # The hook writes the log line before it exits; its outcome is audited after it exits.
    def outcomes() -> list[tuple[str, str]]:
        shown = run_swamp("workflow", "wait", "show", wait_id, "--json", cwd=repo)
        return [(h["hook"], h["code"]) for h in shown.json["hooks"]]

    eventually(lambda: len(outcomes()) == 2)
    assert outcomes() == [("waitOpened", "ok"), ("waitSettled", "ok")]


@pytest.mark.skipif(shutil.which("curl") is None, reason="the chat example posts with curl")
def test_the_chat_hook_posts_the_wait_as_json(repo: Path) -> None:
    received: list[dict[str, Any]] = []

    class Webhook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"type": self.headers["Content-Type"], "body": json.loads(body)})
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Webhook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (repo / ".swamp.yaml").write_text(
            'version: 1\nhooks:\n  waitOpened: {command: "sh hooks/notify-chat.sh", timeout: 30}\n'
        )
        url = f"http://127.0.0.1:{server.server_port}/hook"
        started = run_swamp(
            "workflow", "run", "deploy", "--input", f"version={HOSTILE}", "--json",
            cwd=repo, env={"SWAMP_CHAT_WEBHOOK_URL": url},
        )  # fmt: skip
        wait_id = started.json["waits"][0]["waitId"]
        eventually(lambda: len(received) == 1)
    finally:
        server.shutdown()
    assert received[0]["type"] == "application/json"
    text = received[0]["body"]["text"]
    assert f"Deploy {HOSTILE} to production?" in text
    assert f"swamp workflow signal {wait_id} --payload" in text
    assert not list(repo.glob("pwned*"))


def test_the_chat_hook_without_a_url_fails_and_says_why_in_the_audit(repo: Path) -> None:
    (repo / ".swamp.yaml").write_text('hooks:\n  waitOpened: {command: "sh hooks/notify-chat.sh"}\n')
    started = run_swamp("workflow", "run", "deploy", "--input", "version=1.4", "--json", cwd=repo)
    assert started.code == 0
    wait_id = started.json["waits"][0]["waitId"]

    def hooks() -> list[dict[str, Any]]:
        return list(run_swamp("workflow", "wait", "show", wait_id, "--json", cwd=repo).json["hooks"])

    eventually(lambda: bool(hooks()))
    (entry,) = hooks()
    assert entry["code"] == "hook_failed" and "SWAMP_CHAT_WEBHOOK_URL" in entry["stderr"]
