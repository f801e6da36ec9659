"""One-time links in the core (GATEWAY-010..014): `workflow wait link`, `workflow.link.show`, the
`gateway.publicUrl` setting and the hooks' `link`; a token appears only in the link's result."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, job, make_repo

pytestmark = pytest.mark.cli

SCHEMA = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["ship", "fix"]}}}
URL = "https://swamp.example.com"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = make_repo(tmp_path / "repo")
    (made.root / ".swamp.yaml").write_text(f"version: 1\ngateway: {{publicUrl: '{URL}/'}}\n")
    return made


def waiting(repo: Repo, name: str = "qa", **task: Any) -> str:
    step = {"name": "verdict", "task": {"type": "wait_for_signal", "timeout": 3600, "schema": SCHEMA, **task}}
    repo.write_workflow(name, [job("main", step)])
    run = repo.swamp("workflow", "run", name, "--json").json
    return str(run["waits"][0]["waitId"])


def token_of(url: str) -> str:
    found = re.fullmatch(re.escape(URL) + r"/a/(swp_[a-z2-7]{32})", url)
    assert found, url
    return found.group(1)


def test_a_link_is_a_one_use_grant_whose_token_the_url_carries(repo: Repo) -> None:
    wait_id = waiting(repo)
    made = repo.swamp("workflow", "wait", "link", wait_id, "--expires", "1d", "--json")
    assert made.code == 0, made
    token = token_of(made.json["url"])
    permission = made.json["permission"]
    assert permission["token"] == token and permission["uses"] == 1 and permission["expiresAt"]
    shown = repo.handle("workflow.link.show", {"token": token})
    assert shown["permission"]["id"] == permission["id"] and shown["permission"]["state"] == "live"
    assert shown["wait"]["waitId"] == wait_id and shown["wait"]["schema"] == SCHEMA
    assert token not in json.dumps(shown)
    sent = repo.swamp(
        "workflow", "signal", wait_id, "--token", token, "--payload", '{"verdict":"ship"}', "--json"
    )
    assert sent.code == 0, sent
    assert repo.handle("workflow.link.show", {"token": token})["permission"]["state"] == "used_up"
    again = repo.swamp(
        "workflow", "signal", wait_id, "--token", token, "--payload", '{"verdict":"fix"}', "--json"
    )
    assert again.code == 3 and again.json["error"]["code"] == "permission_invalid"
    stored = "".join(p.read_text() for p in (repo.root / ".swamp").rglob("*") if p.is_file())
    assert token not in stored


def test_log_mode_prints_the_url(repo: Repo) -> None:
    wait_id = waiting(repo)
    made = repo.swamp("workflow", "wait", "link", wait_id)
    assert made.code == 0 and f"{URL}/a/swp_" in made.out, made


def test_an_unknown_token_is_refused_without_being_echoed(repo: Repo) -> None:
    waiting(repo)
    from swamp.domain.errors import SwampError

    for token in ("swp_" + "a" * 32, "not-a-token"):
        with pytest.raises(SwampError) as caught:
            repo.handle("workflow.link.show", {"token": token})
        assert caught.value.code == "permission_invalid"
        assert caught.value.details == {"reason": "unknown"}
        assert token not in caught.value.message


def test_without_a_public_url_nothing_is_granted(repo: Repo) -> None:
    (repo.root / ".swamp.yaml").write_text("version: 1\n")
    wait_id = waiting(repo)
    made = repo.swamp("workflow", "wait", "link", wait_id, "--json")
    assert made.code == 3 and made.json["error"]["code"] == "settings_invalid"
    assert made.json["error"]["details"]["key"] == "gateway.publicUrl"
    assert "permissions" not in repo.swamp("workflow", "wait", "show", wait_id, "--json").json


@pytest.mark.parametrize(
    ("setting", "key"),
    [
        ("gateway: {publicUrl: 'ftp://x'}", "gateway.publicUrl"),
        ("gateway: {publicUrl: 'https://u:p@x'}", "gateway.publicUrl"),
        ("gateway: {publicURL: 'https://x'}", "gateway.publicURL"),
        ("gateway: [x]", "gateway"),
    ],
)
def test_a_wrong_gateway_setting_is_refused_naming_it(repo: Repo, setting: str, key: str) -> None:
    (repo.root / ".swamp.yaml").write_text(f"version: 1\n{setting}\n")
    refused = repo.swamp("workflow", "waits", "--json")
    assert refused.code == 3 and refused.json["error"]["details"]["key"] == key, refused


def eventually(check: Any, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def test_a_wait_opened_hook_reads_a_link_that_answers_the_wait(repo: Repo) -> None:
    (repo.root / ".swamp.yaml").write_text(
        f"version: 1\ngateway: {{publicUrl: '{URL}'}}\nhooks: {{waitOpened: 'cat > doc.json'}}\n"
    )
    wait_id = waiting(repo)
    doc_file = repo.root / "doc.json"
    eventually(lambda: doc_file.exists() and doc_file.read_text().endswith("\n"))
    token = token_of(json.loads(doc_file.read_text())["link"])
    shown = repo.handle("workflow.link.show", {"token": token})["permission"]
    assert shown["uses"] == 1 and shown["state"] == "live"
    sent = repo.swamp(
        "workflow", "signal", wait_id, "--token", token, "--payload", '{"verdict":"ship"}', "--json"
    )
    assert sent.code == 0 and sent.json["signal"]["permissionId"] == shown["id"], sent
    trail = repo.swamp("workflow", "history", "get", sent.json["runId"], "--json").json["audit"]
    assert any(e.get("action") == "grant" and e.get("link") == "hook" for e in trail)
    doc_file.unlink()
    assert token not in "".join(p.read_text() for p in (repo.root / ".swamp").rglob("*.json"))


def test_a_wait_with_an_answerer_policy_gets_no_link_in_its_hooks_document(repo: Repo) -> None:
    (repo.root / ".swamp.yaml").write_text(
        f"version: 1\ngateway: {{publicUrl: '{URL}'}}\nhooks: {{waitOpened: 'cat > doc.json'}}\n"
    )
    import getpass

    wait_id = waiting(repo, answerers={"accounts": [getpass.getuser()]})
    doc_file = repo.root / "doc.json"
    eventually(lambda: doc_file.exists() and doc_file.read_text().endswith("\n"))
    assert "link" not in json.loads(doc_file.read_text())
    assert "permissions" not in repo.swamp("workflow", "wait", "show", wait_id, "--json").json
