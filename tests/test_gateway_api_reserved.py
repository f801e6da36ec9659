"""A reserved wait handed out with a permission (GATEWAY-054): the permission is granted before the
wait opens, a fast callback presenting it is held, and it is applied (its use counted) when the
wait opens; a token revoked meanwhile is refused then, never lost in silence."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from gateway_support import SCHEMA, gateway
from helpers import Repo, job, make_repo

pytestmark = pytest.mark.cli


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "repo")


def gated(repo: Repo) -> tuple[str, str]:
    """A run suspended at a gate, its wait `verdict` reserved behind it: (run ID, wait ID)."""
    gate = {"name": "gate", "task": {"type": "manual_approval", "prompt": "start the scan?"}}
    verdict = {
        "name": "verdict",
        "dependsOn": [{"step": "gate", "condition": {"type": "succeeded"}}],
        "task": {"type": "wait_for_signal", "timeout": 3600, "schema": SCHEMA},
    }
    repo.write_workflow("scan", [job("main", gate, verdict)])
    run = repo.swamp("workflow", "run", "scan", "--json").json
    step = next(s for s in run["jobs"][0]["steps"] if s["name"] == "verdict")
    return run["id"], step["reservedWaitId"]


def test_a_fast_callback_to_a_reserved_wait_is_held_and_applied_when_it_opens(repo: Repo) -> None:
    run_id, wait_id = gated(repo)
    granted = repo.swamp("workflow", "wait", "grant", wait_id, "--uses", "1", "--json")
    assert granted.code == 0, granted
    permission = granted.json["permission"]
    shown = repo.swamp("workflow", "wait", "show", wait_id, "--json").json
    assert shown["status"] == "reserved" and shown["permissions"][0]["id"] == permission["id"]
    auth = {"Authorization": f"Bearer {permission['token']}"}
    with gateway(repo) as gw:
        got = httpx.get(f"{gw.url}/v1/waits/{wait_id}", headers=auth)
        assert got.status_code == 200 and got.json()["wait"]["status"] == "reserved"
        held = httpx.post(f"{gw.url}/v1/waits/{wait_id}/signal", json={"verdict": "ship"}, headers=auth)
        assert held.status_code == 200, held.text
        assert held.json()["held"] is True
        signal_id = held.json()["signal"]["id"]
    approved = repo.swamp("workflow", "approve", "scan", "gate", "--resume", "--json")
    assert approved.code == 0, approved
    done = repo.swamp("workflow", "history", "get", run_id, "--json").json
    assert done["status"] == "succeeded", done
    step = next(s for s in done["jobs"][0]["steps"] if s["name"] == "verdict")
    receipt = step["wait"]["receipt"]
    assert receipt["id"] == signal_id and receipt["permissionId"] == permission["id"]
    assert step["wait"]["permissions"][0]["usesLeft"] == 0
    assert any(e.get("via") == "permission" and e.get("code") == "accepted" for e in done["audit"])


def test_a_token_revoked_before_the_wait_opens_refuses_the_held_signal(repo: Repo) -> None:
    run_id, wait_id = gated(repo)
    permission = repo.swamp("workflow", "wait", "grant", wait_id, "--json").json["permission"]
    sent = repo.swamp(
        "workflow",
        "signal",
        wait_id,
        "--token",
        permission["token"],
        "--payload",
        '{"verdict":"fix"}',
        "--json",
    )
    assert sent.code == 0 and sent.json["held"] is True, sent
    assert repo.swamp("workflow", "wait", "revoke", permission["id"], "--json").code == 0
    repo.swamp("workflow", "approve", "scan", "gate", "--resume", "--json")
    shown = repo.swamp("workflow", "wait", "show", wait_id, "--json").json
    assert shown["status"] == "open" and "receipt" not in shown
    assert shown["heldRefused"]["code"] == "permission_invalid"


def test_another_token_is_not_held(repo: Repo) -> None:
    _, wait_id = gated(repo)
    refused = repo.swamp(
        "workflow",
        "signal",
        wait_id,
        "--token",
        "swp_" + "c" * 32,
        "--payload",
        '{"verdict":"fix"}',
        "--json",
    )
    assert refused.code == 3 and refused.json["error"]["code"] == "permission_invalid"
