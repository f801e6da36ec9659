"""Provider webhooks against the real gateway process on a loopback port (GATEWAY-070..089): a
GitHub-signed delivery with a wrong signature delivers nothing, a right one delivers once, its
replay answers with the same receipt (after a restart too); Slack's timestamp window; a route that
cannot work stops the gateway from starting."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env

pytest.importorskip("uvicorn")

SECRET = "It's a Secret to Everybody"
SCHEMA = {
    "type": "object",
    "required": ["passed"],
    "properties": {"passed": {"type": "boolean"}, "by": {"type": "string"}},
}
ROUTES = """version: 1
gateway:
  routes:
    ci:
      verify: github
      secret: {env: CI_HOOK_SECRET}
      wait: "${{ body.client_payload.waitId }}"
      payload: {passed: "${{ body.client_payload.conclusion == 'success' }}", by: "${{ body.sender.login }}"}
    chat:
      verify: slack
      secret: {env: CI_HOOK_SECRET}
      run: "${{ body.run }}"
      step: checks
      payload: {passed: "${{ body.text == 'pass' }}"}
"""
NOW = "2026-01-01T00:00:00Z"
NOW_UNIX = 1767225600


@contextmanager
def gateway(repo: Repo, env: dict[str, str] | None = None) -> Iterator[str]:
    process = subprocess.Popen(
        [str(SWAMP), "gateway", "--listen", "127.0.0.1:0", "--repo-dir", str(repo.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env({"CI_HOOK_SECRET": SECRET, "SWAMP_NOW": NOW, **(env or {})}),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, process.communicate(timeout=10)
        yield json.loads(line)["listening"]
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()
        if process.stderr:
            process.stderr.close()


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def announce_body(url: str, length: int) -> tuple[int, dict[str, Any]]:
    """Send only the headers of a POST whose Content-Length is `length`, and read the answer. The
    gateway refuses a body too large before reading it and closes the connection, so a client still
    writing that body may get EPIPE instead of the answer (it did, under load)."""
    parsed = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        connection.putrequest("POST", parsed.path)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(length))
        connection.endheaders()
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def github(
    url: str, wait_id: str, *, secret: str = SECRET, conclusion: str = "success", delivery: str = "d-1"
):
    body = json.dumps(
        {"client_payload": {"waitId": wait_id, "conclusion": conclusion}, "sender": {"login": "octo"}}
    )
    signature = "sha256=" + hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-Hub-Signature-256": signature,
        "X-GitHub-Delivery": delivery,
    }
    return post(url + "/hooks/ci", body.encode(), headers)


def open_wait(repo: Repo, name: str = "hooked", **task: Any) -> dict[str, Any]:
    repo.write_workflow(
        name,
        [
            {
                "name": "main",
                "steps": [
                    {
                        "name": "checks",
                        "task": {"type": "wait_for_signal", "timeout": 3600, "schema": SCHEMA, **task},
                    }
                ],
            }
        ],
    )
    done = repo.swamp("workflow", "run", name, "--json", env={"SWAMP_NOW": NOW})
    assert done.code == 0, done
    return {"runId": done.json["id"], "waitId": done.json["waits"][0]["waitId"]}


def wait_status(repo: Repo, wait_id: str) -> str:
    shown = repo.swamp("workflow", "wait", "show", wait_id, "--json", env={"SWAMP_NOW": NOW})
    return str(shown.json["status"])


@pytest.fixture
def hooked(repo: Repo) -> Repo:
    (repo.root / ".swamp.yaml").write_text(ROUTES)
    return repo


def test_github_wrong_signature_delivers_nothing_right_one_once_replay_same_receipt_across_restart(
    hooked: Repo,
):
    wait = open_wait(hooked)
    with gateway(hooked) as url:
        status, doc = github(url, wait["waitId"], secret="not the secret")
        assert (status, doc["error"]["code"]) == (401, "signature_invalid")
        assert SECRET not in json.dumps(doc)
        assert wait_status(hooked, wait["waitId"]) == "open"
        status, first = github(url, wait["waitId"])
        assert status == 200 and first["replayed"] is False, first
        assert first["signal"]["waitId"] == wait["waitId"] and first["runStatus"] == "succeeded"
        status, again = github(url, wait["waitId"])
        assert status == 200 and again["replayed"] is True and again["signal"] == first["signal"]
        status, other = github(url, wait["waitId"], conclusion="failure", delivery="d-2")
        assert (status, other["error"]["code"]) == (409, "wait_settled")
    with gateway(hooked) as url:  # the store, not the process, remembers
        status, after = github(url, wait["waitId"])
        assert status == 200 and after["replayed"] is True and after["signal"] == first["signal"]
    run = hooked.swamp("workflow", "history", "get", wait["runId"], "--json").json
    taken = run["jobs"][0]["steps"][0]
    assert taken["outputs"]["payload"] == {"passed": True, "by": "octo"}


def test_unknown_route_missing_signature_and_too_large(hooked: Repo):
    wait = open_wait(hooked)
    with gateway(hooked) as url:
        status, doc = post(url + "/hooks/nope", b"{}", {"Content-Type": "application/json"})
        assert (status, doc["error"]["code"]) == (404, "route_not_found")
        status, doc = post(url + "/hooks/ci", b"{}", {"Content-Type": "application/json"})
        assert (status, doc["error"]["code"]) == (401, "signature_invalid")
        assert "missing" in doc["error"]["message"]
        status, doc = announce_body(url + "/hooks/ci", 1024 * 1024 + 1)
        assert (status, doc["error"]["code"]) == (413, "payload_too_large")
    assert wait_status(hooked, wait["waitId"]) == "open"


def slack(url: str, body: dict[str, Any], timestamp: int) -> tuple[int, dict[str, Any]]:
    raw = json.dumps(body).encode()
    base = b"v0:" + str(timestamp).encode() + b":" + raw
    signature = "v0=" + hmac.new(SECRET.encode(), base, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Signature": signature,
        "X-Slack-Request-Timestamp": str(timestamp),
    }
    return post(url + "/hooks/chat", raw, headers)


def test_slack_timestamp_window(hooked: Repo):
    wait = open_wait(hooked)
    body = {"run": wait["runId"], "text": "pass"}
    with gateway(hooked) as url:
        status, doc = slack(url, body, NOW_UNIX - 301)
        assert (status, doc["error"]["code"]) == (401, "signature_invalid"), doc
        assert "300 seconds" in doc["error"]["message"]
        assert wait_status(hooked, wait["waitId"]) == "open"
        status, doc = slack(url, body, NOW_UNIX - 300)
        assert status == 200 and doc["waitId"] == wait["waitId"], doc


def test_the_gateway_account_must_be_admitted_by_the_waits_policy(hooked: Repo):
    wait = open_wait(hooked, "guarded", answerers={"accounts": ["someone-else"]})
    with gateway(hooked) as url:
        status, doc = github(url, wait["waitId"])
        assert (status, doc["error"]["code"]) == (403, "answerer_not_allowed"), doc
    assert wait_status(hooked, wait["waitId"]) == "open"


def test_a_route_that_cannot_work_stops_the_gateway_before_it_listens(hooked: Repo):
    env = {k: v for k, v in clean_env().items() if k != "CI_HOOK_SECRET"}
    started = time.monotonic()
    done = subprocess.run(
        [str(SWAMP), "--json", "gateway", "--listen", "127.0.0.1:0", "--repo-dir", str(hooked.root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 3 and "listening" not in done.stdout, done
    assert time.monotonic() - started < 30
    error = json.loads(done.stdout or done.stderr)["error"]
    assert error["code"] == "settings_invalid" and error["details"]["key"] == "gateway.routes.ci.secret"


def test_a_literal_secret_is_refused_by_every_command_that_reads_the_settings(hooked: Repo):
    (hooked.root / ".swamp.yaml").write_text(ROUTES.replace("{env: CI_HOOK_SECRET}", "hunter2", 1))
    hooked.write_workflow(
        "plain",
        [{"name": "main", "steps": [{"name": "w", "task": {"type": "wait_for_signal", "timeout": 60}}]}],
    )
    done = hooked.swamp("workflow", "run", "plain", "--json")
    assert done.code == 3, done
    assert done.json["error"]["details"]["key"] == "gateway.routes.ci.secret"


def test_an_early_delivery_to_a_reserved_wait_is_held_and_its_replay_answers_with_the_held_receipt(
    hooked: Repo,
):
    gate = {"name": "gate", "task": {"type": "manual_approval", "prompt": "go?"}}
    checks = {
        "name": "checks",
        "dependsOn": [{"step": "gate", "condition": {"type": "succeeded"}}],
        "task": {"type": "wait_for_signal", "timeout": 3600, "schema": SCHEMA},
    }
    hooked.write_workflow("early", [{"name": "main", "steps": [gate, checks]}])
    done = hooked.swamp("workflow", "run", "early", "--json", env={"SWAMP_NOW": NOW})
    reserved = done.json["jobs"][0]["steps"][1]["reservedWaitId"]
    with gateway(hooked) as url:
        status, first = github(url, reserved)
        assert status == 200 and first["held"] is True and first["replayed"] is False, first
        status, again = github(url, reserved)
        assert status == 200 and again["replayed"] is True and again["held"] is True, again
        assert again["signal"]["id"] == first["signal"]["id"]
        status, other = github(url, reserved, conclusion="failure", delivery="d-2")  # another delivery
        assert (status, other["error"]["code"]) == (409, "signal_held")
