"""Answerer and approver policies with real OS accounts and groups (spec/access.md).

As root, the tests make accounts and groups named `swpp...` (idempotently) and run the CLI as
them with setpriv (their own uid, primary group and supplementary groups), all on one repository
in a shared folder: 0777 under a 0755 parent, the commands run with umask 0 so that every
account can write what another made. Skipped (with the reason) when not root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import swamp_for_other_accounts

GROUPS = {"swppqa": ["swppalice", "swppcarol"], "swpprel": ["swppr1", "swppr2"]}
ACCOUNTS = ["swppalice", "swppbob", "swppcarol", "swppr1", "swppr2", "swppr3"]


def _need(ok: bool, why: str) -> None:
    if not ok:
        pytest.skip(why)


def _ensure_accounts() -> None:
    for group in GROUPS:
        subprocess.run(["groupadd", "-f", group], check=True, capture_output=True)
    for account in ACCOUNTS:
        made = subprocess.run(
            ["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", account], capture_output=True, text=True
        )
        if made.returncode not in (0, 9):  # 9: it exists already
            pytest.skip(f"useradd {account} failed: {made.stderr.strip()}")
    for group, members in GROUPS.items():
        for account in members:
            subprocess.run(["gpasswd", "-a", account, group], check=True, capture_output=True)
    for account in ACCOUNTS:
        if account not in {m for members in GROUPS.values() for m in members}:
            for group in GROUPS:
                subprocess.run(["gpasswd", "-d", account, group], capture_output=True)


class Shared:
    """One repository that every test account can use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "repo"

    def swamp(self, account: str | None, *args: str) -> subprocess.CompletedProcess[str]:
        return self.start(account, *args).communicate_result()  # type: ignore[attr-defined,no-any-return]

    def start(self, account: str | None, *args: str) -> Any:
        command = [str(swamp_for_other_accounts()), *args]
        if account is not None:
            command = [*_as(account), *command]
        env = {
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": str(self.root / "home"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "SWAMP_REPO_DIR": str(self.repo),
        }
        process = subprocess.Popen(
            command,
            cwd=self.repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: os.umask(0),  # noqa: PLW1509 - shared files for every account
        )
        process.communicate_result = lambda: _finish(process, command)  # type: ignore[attr-defined]
        return process

    def json(self, account: str | None, *args: str, code: int = 0) -> Any:
        done = self.swamp(account, *args, "--json")
        assert done.returncode == code, (account, args, done.stdout, done.stderr)
        return json.loads(done.stdout)

    def workflow(self, name: str, text: str) -> None:
        path = self.repo / "workflows" / f"workflow-{name}.yaml"
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)


def _as(account: str) -> list[str]:
    """setpriv as `account`: its uid, its primary group and its supplementary groups."""
    import pwd

    gid = pwd.getpwnam(account).pw_gid
    return ["setpriv", f"--reuid={account}", f"--regid={gid}", "--init-groups", "--"]


def _finish(process: subprocess.Popen[str], command: list[str]) -> subprocess.CompletedProcess[str]:
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    _need(os.geteuid() == 0, "needs root to make accounts and act as them")
    _need(
        all(shutil.which(t) for t in ("setpriv", "useradd", "groupadd", "gpasswd")),
        "needs setpriv and shadow-utils",
    )
    _ensure_accounts()
    probe = subprocess.run(
        [
            *_as("swppbob"),
            sys.executable,
            "-c",
            "import swamp.cli.main",
        ],
        capture_output=True,
        text=True,
    )
    _need(
        probe.returncode == 0,
        f"the test accounts cannot run this checkout's swamp: {probe.stderr.strip()[-200:]}",
    )
    parent = Path(tempfile.mkdtemp(prefix="swpp-"))
    parent.chmod(0o755)
    place = Shared(parent)
    place.repo.mkdir()
    place.repo.chmod(0o777)
    (parent / "home").mkdir(mode=0o777)
    (parent / "home").chmod(0o777)
    assert place.swamp(None, "repo", "init").returncode == 0
    try:
        yield place
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def _wait_id(doc: dict[str, Any]) -> str:
    (wait,) = doc["waits"]
    return str(wait["waitId"])


def test_a_group_policy_admits_a_member_and_refuses_anyone_else(shared: Shared) -> None:
    """ACCESS-007: groups are the acting account's OS groups."""
    shared.workflow(
        "qa",
        "id: 28000000-0000-4000-8000-0000000000a1\nname: qa\njobs:\n  - name: main\n    steps:\n"
        "      - name: verdict\n"
        "        task: {type: wait_for_signal, timeout: 600, answerers: {groups: [swppqa]}}\n",
    )
    started = shared.json(None, "workflow", "run", "qa")
    wait = _wait_id(started)
    refused = shared.json("swppbob", "workflow", "signal", wait, "--payload", "1", code=3)
    assert refused["error"]["code"] == "answerer_not_allowed"
    assert refused["error"]["details"]["account"] == "swppbob"
    assert "members of group swppqa" in refused["error"]["message"]
    shown = shared.json("swppbob", "workflow", "wait", "show", wait)
    assert shown["status"] == "open"
    taken = shared.json("swppalice", "workflow", "signal", wait, "--payload", "1")
    assert taken["signal"]["submittedBy"] == "swppalice"
    audit = shared.json(None, "workflow", "history", "get", started["id"])["audit"]
    assert [(e["by"], e["code"], e.get("via")) for e in audit] == [
        ("swppbob", "answerer_not_allowed", None),
        ("swppalice", "accepted", "policy"),
    ]


def test_starter_false_refuses_the_starter_whoever_resumes(shared: Shared) -> None:
    """ACCESS-010: the starter (initiatedBy) may not approve; resume by another account keeps it."""
    shared.workflow(
        "selfie",
        "id: 28000000-0000-4000-8000-0000000000a2\nname: selfie\njobs:\n  - name: main\n    steps:\n"
        "      - {name: first, task: {type: manual_approval, prompt: begin}}\n"
        "      - name: deploy\n        dependsOn: [{step: first, condition: {type: succeeded}}]\n"
        "        task: {type: manual_approval, prompt: go, approvers: {groups: [swppqa], starter: false}}\n",
    )
    run = shared.json("swppalice", "workflow", "run", "selfie")["id"]
    shared.json("swppbob", "workflow", "approve", "selfie", "first")
    resumed = shared.json("swppcarol", "workflow", "resume", "selfie")
    assert resumed["initiatedBy"] == "swppalice"
    refused = shared.json("swppalice", "workflow", "approve", "selfie", "deploy", code=3)
    assert refused["error"]["details"]["reason"] == "starter"
    outsider = shared.json("swppbob", "workflow", "approve", "selfie", "deploy", code=3)
    assert outsider["error"]["details"]["reason"] == "policy"
    approved = shared.json("swppcarol", "workflow", "approve", "selfie", "deploy")
    assert approved["decidedBy"] == "swppcarol"
    assert shared.json(None, "workflow", "history", "get", run)["initiatedBy"] == "swppalice"


def test_two_of_three_racing_approvers_open_a_required_two_gate_once(shared: Shared) -> None:
    """ACCESS-014, ACCESS-017: r1 and r2 (group swpprel) and r3 (not in it) approve at once."""
    shared.workflow(
        "prod",
        "id: 28000000-0000-4000-8000-0000000000a3\nname: prod\njobs:\n  - name: main\n    steps:\n"
        "      - name: gate\n"
        "        task: {type: manual_approval, prompt: prod, approvers: {groups: [swpprel], required: 2}}\n",
    )
    run = shared.json(None, "workflow", "run", "prod")["id"]
    racers = {
        account: shared.start(
            account, "workflow", "approve", "prod", "gate", "--json", "--claim-timeout", "30"
        )
        for account in ("swppr1", "swppr3", "swppr2")
    }
    done = {account: process.communicate_result() for account, process in racers.items()}
    results = {account: json.loads(d.stdout) for account, d in done.items()}
    assert done["swppr3"].returncode == 3, done["swppr3"]
    assert results["swppr3"]["error"]["code"] == "answerer_not_allowed"
    assert done["swppr1"].returncode == 0 and done["swppr2"].returncode == 0, done
    assert sorted(results[a]["remaining"] for a in ("swppr1", "swppr2")) == [0, 1]  # opened once
    record = shared.json(None, "workflow", "history", "get", run)
    (gate,) = record["jobs"][0]["steps"]
    assert gate["status"] == "succeeded"
    assert sorted(a["by"] for a in gate["approval"]["approvals"]) == ["swppr1", "swppr2"]
    opener = next(a for a in ("swppr1", "swppr2") if results[a]["remaining"] == 0)
    assert gate["approval"]["decision"]["decidedBy"] == opener
    codes = sorted((e["by"], e["code"]) for e in record["audit"])
    assert codes == [("swppr1", "accepted"), ("swppr2", "accepted"), ("swppr3", "answerer_not_allowed")]


def test_through_serve_the_policy_judges_the_peer(shared: Shared) -> None:
    """ACCESS-007, ACCESS-011, ACCESS-021: over `--connect`, serve (root's) judges each peer's own
    account and groups: a non-member is refused, a member answers, an admin overrides."""
    import time

    place = Shared(shared.root / "served")
    place.root.mkdir(mode=0o755)
    place.root.chmod(0o755)
    place.repo.mkdir(mode=0o755)
    assert place.swamp(None, "repo", "init").returncode == 0
    (place.repo / ".swamp.yaml").write_text("version: 1\nadmins: {accounts: [swppcarol]}\n")
    place.workflow(
        "served",
        "id: 28000000-0000-4000-8000-0000000000a4\nname: served\njobs:\n  - name: main\n    steps:\n"
        "      - {name: a, task: {type: wait_for_signal, timeout: 600, answerers: {groups: [swppqa]}}}\n"
        "      - {name: b, task: {type: wait_for_signal, timeout: 600, answerers: {accounts: [swppbob]}}}\n",
    )
    waits = {w["stepName"]: w["waitId"] for w in place.json(None, "workflow", "run", "served")["waits"]}
    socket = place.root / "serve.sock"
    serve = place.start(None, "serve", "--socket", str(socket), "--socket-access", "any")
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            assert serve.poll() is None and time.monotonic() < deadline, "serve did not listen"
            time.sleep(0.05)

        def through(account: str, *args: str, code: int = 0) -> Any:
            return place.json(account, "--connect", str(socket), *args, code=code)

        refused = through("swppbob", "workflow", "signal", waits["a"], "--payload", "1", code=3)
        assert refused["error"]["code"] == "answerer_not_allowed"
        assert refused["error"]["details"]["account"] == "swppbob"
        taken = through("swppalice", "workflow", "signal", waits["a"], "--payload", "1")
        assert taken["signal"]["submittedBy"] == "swppalice"
        overridden = through(
            "swppcarol", "workflow", "signal", waits["b"], "--payload", "2", "--override", "bob is out"
        )
        assert overridden["signal"] == {
            **overridden["signal"],
            "submittedBy": "swppcarol",
            "override": "bob is out",
        }
    finally:
        serve.terminate()
        serve.communicate_result()
