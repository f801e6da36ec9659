"""The gateway in front of a serve, with real accounts (spec/gateway.md, GATEWAY-008, GATEWAY-009).

A service account (swgwsvc) owns a repository whose .swamp is 0700 and runs `swamp serve --socket
... --socket-access group:swgwacc --auto-continue`. The gateway runs as its own account (swgwgw, a
member of that group) with `--connect`: it cannot read the store, and answers links, the JSON API
and a webhook route through serve, as itself, without asking for `resume` (serve would refuse it
from another account, ACCESS-075: so an answer taken at all shows none was asked). One serve and
one gateway for the module.
"""

from __future__ import annotations

import contextlib
import grp
import hashlib
import hmac
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import swamp_for_other_accounts as FOR_OTHERS

httpx = pytest.importorskip("httpx")

SERVICE, GATEWAY, GROUP = "swgwsvc", "swgwgw", "swgwacc"
NOW = "2026-01-01T00:00:00Z"
SECRET = "a route's secret"
WORKFLOW = """\
id: 0a0a0a0a-0000-4000-8000-0000000c0901
name: release
jobs:
  - name: main
    steps:
      - name: verdict
        task:
          type: wait_for_signal
          timeout: 86400
          schema: {type: object, required: [verdict], properties: {verdict: {enum: [ship, fix]}}}
"""
CONFIG = """\
gateway:
  publicUrl: https://gateway.example.com
  routes:
    ci:
      {verify: github, secret: {file: ci.secret}, wait: "${{ body.w }}", payload: {verdict: "${{ body.v }}"}}
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create and act as other accounts")


def _quietly(*argv: str) -> None:
    subprocess.run(argv, capture_output=True, check=False)


def _accounts() -> None:
    """The accounts and group, made idempotently (an existing one is kept)."""
    _quietly("groupadd", "-f", GROUP)
    for name in (SERVICE, GATEWAY):
        _quietly("useradd", "--no-create-home", "--shell", "/bin/false", "--user-group", name)
        _quietly("usermod", "-aG", GROUP, name)
        pwd.getpwnam(name)  # raises if it could not be made
    grp.getgrnam(GROUP)


def _as(account: str, *args: str) -> list[str]:
    return ["setpriv", f"--reuid={account}", f"--regid={account}", "--init-groups", str(FOR_OTHERS()), *args]


class Place:
    def __init__(self, base: Path):
        self.base = base
        self.repo = base / "repo"
        self.socket = base / "run" / "serve.sock"
        self.home = base / "gw"  # the gateway's own folder: its config and the route's secret
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(base), "SWAMP_NOW": NOW, "LANG": "C.UTF-8"}
        self.url = ""
        self.gateway: subprocess.Popen[str] | None = None
        self.serve: subprocess.Popen[bytes] | None = None
        self.serve_log = base / "serve.log"

    def start_serve(self) -> None:
        argv = ["serve", "--socket", str(self.socket), "--socket-access", f"group:{GROUP}", "--auto-continue"]
        self.serve = subprocess.Popen(
            _as(SERVICE, *argv),
            cwd=self.repo,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.serve_log.open("a"),
        )
        _wait_for(self.socket.exists, "serve listens", self.serve, self.serve_log)

    def stop_serve(self) -> None:
        if self.serve is None:
            return
        self.serve.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.serve.wait(20)
        if self.serve.poll() is None:
            self.serve.kill()
            self.serve.wait()

    def swamp(self, account: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            _as(account, *args),
            cwd=cwd or self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def json(self, *args: str) -> Any:
        done = self.swamp(SERVICE, *args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def waiting(self) -> tuple[str, str, str]:
        """(run ID, wait ID, a link's token) of a new run suspended at its wait."""
        run = self.json("workflow", "run", "release")
        wait_id = run["waits"][0]["waitId"]
        token = self.json("workflow", "wait", "link", wait_id)["permission"]["token"]
        return run["id"], wait_id, token


def _wait_for(check: Any, what: str, process: subprocess.Popen[Any], log: Path) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{what} within 30 s"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def place() -> Iterator[Place]:
    _accounts()
    base = Path(tempfile.mkdtemp(prefix="swgw-", dir="/tmp"))
    base.chmod(0o755)
    here = Place(base)
    for folder, owner, group, mode in (
        (here.repo, SERVICE, SERVICE, 0o755),
        (here.socket.parent, SERVICE, GROUP, 0o750),
        (here.home, GATEWAY, GATEWAY, 0o700),
    ):
        folder.mkdir()
        shutil.chown(folder, owner, group)
        folder.chmod(mode)
    ready = here.swamp(SERVICE, "version")
    if ready.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"{SERVICE} cannot run {FOR_OTHERS()}: {ready.stderr.strip()}")
    assert here.swamp(SERVICE, "repo", "init", ".").returncode == 0
    (here.repo / ".swamp").chmod(0o700)
    for name, text in (
        (".swamp.yaml", "version: 1\ngateway: {publicUrl: 'https://gateway.example.com'}\n"),
        ("workflows/workflow-release.yaml", WORKFLOW),
    ):
        (here.repo / name).write_text(text)
        shutil.chown(here.repo / name, SERVICE, SERVICE)
    for name, text in (("gateway.yaml", CONFIG), ("ci.secret", SECRET + "\n")):
        (here.home / name).write_text(text)
        shutil.chown(here.home / name, GATEWAY, GATEWAY)
    gateway_log = base / "gateway.log"
    try:
        here.start_serve()
        here.gateway = subprocess.Popen(
            _as(
                GATEWAY,
                "gateway",
                "--listen",
                "127.0.0.1:0",
                "--connect",
                str(here.socket),
                "--config",
                "gateway.yaml",
            ),
            cwd=here.home,
            env=here.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=gateway_log.open("w"),
            text=True,
        )
        assert here.gateway.stdout is not None
        line = here.gateway.stdout.readline()
        assert line, gateway_log.read_text()
        here.url = json.loads(line)["listening"]
        yield here
    finally:
        if here.gateway is not None:
            here.gateway.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                here.gateway.wait(20)
            if here.gateway.poll() is None:
                here.gateway.kill()
                here.gateway.wait()
        here.stop_serve()
        shutil.rmtree(base, ignore_errors=True)


def test_the_gateways_account_cannot_read_the_store(place: Place) -> None:
    """The premise: without --connect the gateway's account is refused the store (STORE-009)."""
    done = place.swamp(GATEWAY, "--json", "workflow", "waits")
    assert done.returncode != 0
    assert json.loads(done.stdout)["error"]["code"] == "storage_error"
    assert httpx.get(f"{place.url}/healthz").json() == {"status": "ok"}  # GATEWAY-015


def test_the_json_api_answers_through_serve_as_the_gateways_account(place: Place) -> None:
    """GATEWAY-008: serve's documents pass through; the signal is the gateway's account's, on the
    granter's behalf; serve's --auto-continue, not the gateway, continues the run."""
    run_id, wait_id, token = place.waiting()
    auth = {"Authorization": f"Bearer {token}"}
    shown = httpx.get(f"{place.url}/v1/waits/{wait_id}", headers=auth)
    assert shown.status_code == 200, shown.text
    assert shown.json()["wait"]["runId"] == run_id
    refused = httpx.post(f"{place.url}/v1/waits/{wait_id}/signal", headers=auth, json={"verdict": "maybe"})
    assert refused.status_code == 422
    local = place.swamp(SERVICE, "--json", "workflow", "signal", wait_id, "--payload", '{"verdict": "maybe"}')
    assert refused.json() == json.loads(local.stdout)  # the core's error document, as it is
    taken = httpx.post(f"{place.url}/v1/waits/{wait_id}/signal", headers=auth, json={"verdict": "ship"})
    assert taken.status_code == 200, taken.text
    answer = taken.json()
    assert answer["signal"]["submittedBy"] == GATEWAY
    assert answer["signal"]["grantedBy"] == SERVICE
    assert "continued" not in answer  # no resume was asked (serve refuses one from a peer)
    assert answer["autoResume"] == {"resumed": True, "runStatus": "succeeded"}
    assert place.json("workflow", "history", "get", run_id)["status"] == "succeeded"
    again = httpx.post(f"{place.url}/v1/waits/{wait_id}/signal", headers=auth, json={"verdict": "ship"})
    assert again.status_code == 403
    assert again.json()["error"]["details"]["reason"] == "used_up"


def test_a_links_page_answers_through_serve_and_says_how_serve_went_on(place: Place) -> None:
    """GATEWAY-008: the receipt says what serve's autoResume says."""
    run_id, _, token = place.waiting()
    page = httpx.get(f"{place.url}/a/{token}")
    assert page.status_code == 200, page.text
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', page.text)
    assert found is not None
    receipt = httpx.post(f"{place.url}/a/{token}", data={"_csrf": found.group(1), "$/verdict": "fix"})
    assert receipt.status_code == 200, receipt.text
    assert "The run continued; it is now succeeded." in unescape(receipt.text)
    record = place.json("workflow", "history", "get", run_id)
    assert record["status"] == "succeeded"


def test_a_config_route_delivers_through_serve_as_the_gateways_account(place: Place) -> None:
    """GATEWAY-016: the route of --config, its secret beside the file, delivers as the gateway."""
    run_id, wait_id, _ = place.waiting()
    body = json.dumps({"w": wait_id, "v": "ship"}).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    sent = httpx.post(
        f"{place.url}/hooks/ci",
        content=body,
        headers={"X-Hub-Signature-256": signature, "Content-Type": "application/json"},
    )
    assert sent.status_code == 200, sent.text
    assert sent.json()["signal"]["submittedBy"] == GATEWAY
    replay = httpx.post(
        f"{place.url}/hooks/ci",
        content=body,
        headers={"X-Hub-Signature-256": signature, "Content-Type": "application/json"},
    )
    assert replay.json()["replayed"] is True  # decided by the store, through serve (GATEWAY-079)
    assert place.json("workflow", "history", "get", run_id)["status"] == "succeeded"


def test_the_receipt_text_follows_serves_auto_resume() -> None:
    """GATEWAY-008's receipt sentences for each autoResume serve can send."""
    pytest.importorskip("starlette")
    from swamp.gateway.pages import continuation_text

    assert continuation_text({"autoResume": {"resumed": True, "runStatus": "failed"}}) == (
        "The run continued; it is now failed."
    )
    waiting = {"autoResume": {"resumed": False, "reason": "wait_open", "waitIds": ["wait_a", "wait_b"]}}
    assert continuation_text(waiting) == "The run waits for 2 other answers before it goes on."
    pending = {"autoResume": {"resumed": False, "reason": "approval_pending", "steps": ["gate"]}}
    assert continuation_text(pending) == "The run stays suspended; it goes on once it is resumed."
    assert "stays suspended" in continuation_text({})  # a serve without --auto-continue


def test_a_serve_that_goes_away_is_503_until_it_is_back(place: Place) -> None:
    """GATEWAY-008, GATEWAY-009, GATEWAY-015: the gateway outlives its serve, says so, and finds
    the next one without a restart of its own. (Last in this module: it restarts serve.)"""
    _, wait_id, token = place.waiting()
    auth = {"Authorization": f"Bearer {token}"}
    place.stop_serve()
    health = httpx.get(f"{place.url}/healthz")
    assert health.status_code == 503 and health.headers["retry-after"]
    assert health.json()["error"]["code"] == "store_unavailable"
    gone = httpx.post(f"{place.url}/v1/waits/{wait_id}/signal", headers=auth, json={"verdict": "ship"})
    assert gone.status_code == 503
    assert str(place.socket) not in gone.text
    place.start_serve()
    assert httpx.get(f"{place.url}/healthz").status_code == 200
    back = httpx.post(f"{place.url}/v1/waits/{wait_id}/signal", headers=auth, json={"verdict": "ship"})
    assert back.status_code == 200, back.text
