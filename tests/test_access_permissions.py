"""Signal permissions through every surface (ACCESS-040..063): the CLI, `--jsonl`, serve and the
client; a token that appears nowhere but the grant's result; concurrent signals with a one-use
token; another OS account delivering with a token on the granter's behalf."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env, job, make_repo, swamp_for_other_accounts

from swamp.client import Client, SwampError

pytestmark = pytest.mark.cli

SCHEMA = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["ship", "fix"]}}}


def waiting(repo: Repo, name: str, count: int) -> tuple[str, list[str]]:
    """Run a workflow of `count` parallel waits: (run ID, wait IDs)."""
    steps = [
        {"name": f"w{i}", "task": {"type": "wait_for_signal", "timeout": 3600, "schema": SCHEMA}}
        for i in range(count)
    ]
    repo.write_workflow(name, [job("main", *steps)])
    run = repo.swamp("workflow", "run", name, "--json").json
    return run["id"], [w["waitId"] for w in run["waits"]]


def jsonl(repo: Repo, frames: list[dict[str, Any]], outputs: list[str]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(SWAMP), "--jsonl", "--repo-dir", str(repo.root)],
        input="".join(json.dumps(f) + "\n" for f in frames),
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
    )
    outputs += [done.stdout, done.stderr]
    return [json.loads(line) for line in done.stdout.splitlines()]


PG = os.environ.get("SWAMP_TEST_PG", "")


@pytest.fixture(params=["file", "postgresql"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """None for the file store; the PostgreSQL store's address (a schema of the test's own)."""
    if request.param == "file":
        return None
    if not PG.startswith(("postgresql://", "postgres://")):
        pytest.skip("SWAMP_TEST_PG (a PostgreSQL address, as `scripts/pg start DIR` prints) is not set")
    import uuid

    url = f"{PG}{'&' if '?' in PG else '?'}options=-csearch_path%3Dt_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("SWAMP_STORE_URL", url)  # the subprocesses inherit it (clean_env)
    return url


def database_text(url: str) -> str:
    """Every row of every table of the store's schema, as text."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
            )
        ]
        return "\n".join(
            str(row[0]) for table in tables for row in conn.execute(f'SELECT t::text FROM "{table}" t')
        )


def test_a_token_appears_nowhere_but_in_its_grant(tmp_path: Path, store: str | None) -> None:
    """ACCESS-063: grant and signal, accepted and refused, through the CLI, --jsonl, serve and
    the client; then every file under the repository (and, on PostgreSQL, every row of the
    store), the event log and every output but the grants' results are searched for each token."""
    repo = make_repo(tmp_path / "repo")
    run_id, (w_cli, w_jsonl, w_client) = waiting(repo, "secret", 3)
    outputs: list[str] = []  # everything printed, but the grants' results

    granted = repo.swamp("workflow", "wait", "grant", w_cli, "--uses", "1", "--json")
    t_cli = granted.json["permission"]["token"]
    frames = jsonl(repo, [{"type": "workflow.wait.grant", "id": "g", "payload": {"waitId": w_jsonl}}], [])
    t_jsonl = next(f for f in frames if f["type"] == "workflow.wait.grant")["payload"]["data"]["permission"][
        "token"
    ]
    log = tmp_path / "serve.log"
    with Client.spawn(repo.root, args=["--log-file", str(log)]) as client:
        t_client = client.grant(w_client, expires=600)["permission"]["token"]
        tokens = [t_cli, t_jsonl, t_client]

        # refused everywhere else: each token at the wrong wait, a token with a typo, a bad field
        for token in tokens:
            with pytest.raises(SwampError) as refused:
                client.signal(w_cli if token != t_cli else w_jsonl, {"verdict": "ship"}, token=token)
            outputs.append(str(refused.value) + json.dumps(refused.value.details))
            assert refused.value.details["reason"] == "other_wait"
        with pytest.raises(SwampError) as typo:
            client.signal(
                w_client, {"verdict": "ship"}, token=t_client[:-1] + ("b" if t_client.endswith("a") else "a")
            )
        outputs.append(str(typo.value) + json.dumps(typo.value.details))
        with pytest.raises(SwampError) as malformed:
            client.request("workflow.signal", {"waitId": w_client, "payload": 1, "token": 7, "x": t_client})
        outputs.append(str(malformed.value) + json.dumps(malformed.value.details))
        jsonl(
            repo,
            [
                {
                    "type": "workflow.signal",
                    "id": "a",
                    "payload": {"waitId": w_cli, "payload": 1, "token": t_jsonl},
                },
                {
                    "type": "workflow.signal",
                    "id": "b",
                    "payload": {"waitId": w_jsonl, "payload": 1, "token": t_cli},
                },
            ],
            outputs,
        )
        wrong = repo.swamp(
            "workflow", "signal", w_jsonl, "--token", t_client, "--payload", '{"verdict":"fix"}'
        )
        assert wrong.code == 3
        outputs += [wrong.out, wrong.err]
        echoed = repo.swamp("workflow", "signal", "--jsonl", "--token", t_cli, input="")
        assert echoed.code == 2
        outputs += [echoed.out, echoed.err]

        # accepted, one through each surface
        (tmp_path / "token").write_text(t_cli + "\n")
        ok = repo.swamp(
            "workflow",
            "signal",
            w_cli,
            "--token-file",
            str(tmp_path / "token"),
            "--payload",
            '{"verdict":"ship"}',
        )
        assert ok.code == 0, ok
        outputs += [ok.out, ok.err]
        again = repo.swamp(
            "workflow",
            "signal",
            w_cli,
            "--token-file",
            str(tmp_path / "token"),
            "--payload",
            '{"verdict":"ship"}',
        )
        assert again.code == 3 and "no use left" in again.err
        outputs += [again.out, again.err]
        answered = jsonl(
            repo,
            [
                {
                    "type": "workflow.signal",
                    "id": "c",
                    "payload": {"waitId": w_jsonl, "payload": {"verdict": "fix"}, "token": t_jsonl},
                }
            ],
            outputs,
        )
        assert any(f["type"] == "workflow.signal" for f in answered), answered
        result = client.signal(w_client, {"verdict": "ship"}, token=t_client)
        outputs.append(json.dumps(result))
        assert result["signal"]["permissionId"]
        for wait_id in (w_cli, w_jsonl, w_client):
            outputs.append(json.dumps(client.wait_show(wait_id)))
        outputs.append(json.dumps(client.history_get(run_id)))
        outputs += client.serve_log()
    for args in (("workflow", "history", "get", run_id), ("workflow", "waits", "--all", "--json")):
        shown = repo.swamp(*args)
        outputs += [shown.out, shown.err]
    events = repo.swamp("events", "--after", "0", "--timeout", "0", "--json")
    outputs += [events.out, events.err]

    files = [p for p in repo.root.rglob("*") if p.is_file()] + [log]
    rows = database_text(store) if store is not None else ""
    assert store is not None or any(p.name.endswith(".audit.jsonl") for p in files)
    assert store is None or ("grant" in rows and "permissionId" in rows)  # audit and record are there
    for token in tokens:
        assert [str(p) for p in files if token.encode() in p.read_bytes()] == []
        assert token not in rows
        assert [o for o in outputs if token in o] == []
        # nor its SHA-256 in any output (it is in the record only)
        digest = hashlib.sha256(token.encode()).hexdigest()
        assert [o for o in outputs if digest in o] == []
        if store is None:
            assert any(digest.encode() in p.read_bytes() for p in files if p.suffix == ".json")
        else:
            assert digest in rows


def test_concurrent_signals_with_a_one_use_token_deliver_once(tmp_path: Path) -> None:
    """ACCESS-047: the use is counted with the receipt, under the run's claim."""
    repo = make_repo(tmp_path / "repo")
    run_id, (wait_id,) = waiting(repo, "race", 1)
    token = repo.swamp("workflow", "wait", "grant", wait_id, "--uses", "1", "--json").json["permission"][
        "token"
    ]
    results: list[Any] = []

    def send(verdict: str) -> None:
        results.append(
            repo.swamp(
                "workflow",
                "signal",
                wait_id,
                "--token",
                token,
                "--payload",
                json.dumps({"verdict": verdict}),
                "--claim-timeout",
                "30",
                "--json",
            )
        )

    threads = [threading.Thread(target=send, args=(v,)) for v in ("ship", "fix", "ship", "fix")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.code for r in results) == [0, 3, 3, 3], results
    for refused in (r for r in results if r.code == 3):
        assert refused.json["error"]["code"] == "permission_invalid", refused
        assert refused.json["error"]["details"]["reason"] == "used_up"
    shown = repo.swamp("workflow", "wait", "show", wait_id, "--json").json
    assert shown["permissions"][0]["usesLeft"] == 0
    audit = repo.swamp("workflow", "history", "get", run_id, "--json").json["audit"]
    assert [e["code"] for e in audit if e["action"] == "signal"].count("accepted") == 1


# -- another OS account ------------------------------------------------------------------------

GRANTER, BEARER = "swpt-granter", "swpt-bearer"


def _account(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        done = subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            capture_output=True,
            text=True,
        )
        if done.returncode not in (0, 9):  # 9: already exists (made meanwhile)
            pytest.skip(f"useradd {name}: {done.stderr.strip()}")


def as_account(account: str, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`swamp ARGS` run as `account` (umask 0, so the other account can change the store too)."""
    command = "umask 0; exec " + " ".join(_quote(a) for a in [str(swamp_for_other_accounts()), *args])
    return subprocess.run(
        ["runuser", "-u", account, "--", "/bin/sh", "-c", command],
        cwd=repo,
        capture_output=True,
        text=True,
        env=clean_env({"HOME": str(repo)}),
        timeout=60,
    )


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


@pytest.fixture
def shared_repo() -> Any:
    if os.geteuid() != 0:
        pytest.skip("needs root to create OS accounts and act as them")
    if shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("needs runuser and useradd")
    for name in (GRANTER, BEARER):
        _account(name)
    base = Path(tempfile.mkdtemp(prefix="swpt-"))
    base.chmod(0o777)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_another_account_delivers_with_the_token_on_the_granters_behalf(shared_repo: Path) -> None:
    """ACCESS-041, ACCESS-045, ACCESS-046, ACCESS-061, with real accounts: the wait's policy names
    only the granter; the bearer may not answer, grant nor revoke, but delivers with the token, and
    the receipt names the bearer (the acting account) and the granter."""
    root = shared_repo / "repo"
    made = as_account(GRANTER, shared_repo, "repo", "init", str(root))
    assert made.returncode == 0, made.stderr
    policy = {"accounts": [GRANTER]}
    task = {"type": "wait_for_signal", "timeout": 600, "schema": SCHEMA, "answerers": policy}
    steps = [{"name": "verdict", "task": task}]
    workflow = {"id": "5c5c5c5c-0000-4000-8000-000000000001", "name": "review", "jobs": [job("main", *steps)]}
    (root / "workflows" / "workflow-review.yaml").write_text(json.dumps(workflow))
    started = as_account(GRANTER, root, "workflow", "run", "review", "--json")
    assert started.returncode == 0, started.stderr
    wait_id = json.loads(started.stdout)["waits"][0]["waitId"]
    granted = as_account(GRANTER, root, "workflow", "wait", "grant", wait_id, "--uses", "1", "--json")
    assert granted.returncode == 0, granted.stderr
    permission = json.loads(granted.stdout)["permission"]
    assert permission["grantedBy"] == GRANTER

    token_file = shared_repo / "token"
    token_file.write_text(permission["token"])
    token_file.chmod(0o644)

    # the bearer, whom the policy leaves out, may not answer, grant, nor revoke the granter's
    # permission without the token
    for args in (
        ("workflow", "signal", wait_id, "--payload", '{"verdict":"ship"}', "--json"),
        ("workflow", "wait", "grant", wait_id, "--json"),
        ("workflow", "wait", "revoke", permission["id"], "--json"),
    ):
        refused = as_account(BEARER, root, *args)
        assert refused.returncode == 3, refused.stderr
        assert json.loads(refused.stdout)["error"]["code"] == "answerer_not_allowed", refused.stdout
    sent = as_account(
        BEARER,
        root,
        "workflow",
        "signal",
        wait_id,
        "--token-file",
        str(token_file),
        "--payload",
        '{"verdict":"ship"}',
        "--json",
    )
    assert sent.returncode == 0, sent.stderr
    signal = json.loads(sent.stdout)["signal"]
    assert signal["submittedBy"] == BEARER
    assert signal["grantedBy"] == GRANTER and signal["permissionId"] == permission["id"]
    history = as_account(
        GRANTER, root, "workflow", "history", "get", json.loads(started.stdout)["id"], "--json"
    )
    audit = json.loads(history.stdout)["audit"]
    assert [(e["by"], e["action"], e["code"]) for e in audit] == [
        (GRANTER, "grant", "accepted"),
        (BEARER, "signal", "answerer_not_allowed"),
        (BEARER, "grant", "answerer_not_allowed"),
        (BEARER, "revoke", "answerer_not_allowed"),
        (BEARER, "signal", "accepted"),
    ]
    accepted = [e for e in audit if e["action"] == "signal" and e["code"] == "accepted"]
    assert accepted == [
        {
            "at": accepted[0]["at"],
            "by": BEARER,
            "action": "signal",
            "waitId": wait_id,
            "code": "accepted",
            "signalId": signal["id"],
            "via": "permission",
            "permissionId": permission["id"],
            "grantedBy": GRANTER,
        }
    ]
    assert permission["token"] not in history.stdout


def test_through_serve_a_peer_delivers_with_a_token_and_nothing_more(shared_repo: Path) -> None:
    """ACCESS-045, ACCESS-063 through `swamp serve --socket-access any` and `--connect`: serve (this
    account's) holds the store; a peer the policy names grants; another peer, whom it does not
    name, delivers with the token and nothing more; serve's log never holds the token."""
    import time

    root = shared_repo / "repo"
    assert (
        subprocess.run(
            [str(SWAMP), "repo", "init", str(root)], capture_output=True, env=clean_env()
        ).returncode
        == 0
    )
    root.chmod(0o755)
    task = {"type": "wait_for_signal", "timeout": 600, "schema": SCHEMA, "answerers": {"accounts": [GRANTER]}}
    workflow = {
        "id": "5c5c5c5c-0000-4000-8000-000000000002",
        "name": "served",
        "jobs": [job("main", {"name": "verdict", "task": task})],
    }
    (root / "workflows" / "workflow-served.yaml").write_text(json.dumps(workflow))
    started = subprocess.run(
        [str(SWAMP), "workflow", "run", "served", "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    wait_id = json.loads(started.stdout)["waits"][0]["waitId"]
    socket, log = shared_repo / "serve.sock", shared_repo / "serve.log"
    serve = subprocess.Popen(
        [str(SWAMP), "serve", "--socket", str(socket), "--socket-access", "any", "--log-file", str(log)],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=clean_env(),
    )
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            assert serve.poll() is None and time.monotonic() < deadline, "serve did not listen"
            time.sleep(0.05)

        def through(account: str, *args: str) -> tuple[int, Any, str]:
            done = as_account(account, shared_repo, "--connect", str(socket), *args, "--json")
            return done.returncode, json.loads(done.stdout or "null"), done.stdout + done.stderr

        code, granted, _ = through(GRANTER, "workflow", "wait", "grant", wait_id, "--uses", "1")
        assert code == 0, granted
        token = granted["permission"]["token"]
        token_file = shared_repo / "peer-token"
        token_file.write_text(token + "\n")
        token_file.chmod(0o644)
        seen: list[str] = []
        code, refused, text = through(BEARER, "workflow", "wait", "grant", wait_id)
        seen.append(text)
        assert code == 3 and refused["error"]["code"] == "answerer_not_allowed"
        code, refused, text = through(BEARER, "workflow", "wait", "revoke", granted["permission"]["id"])
        seen.append(text)
        assert code == 3 and refused["error"]["code"] == "answerer_not_allowed"
        code, denied, text = through(BEARER, "workflow", "cancel", "served")
        seen.append(text)
        assert code == 3 and denied["error"]["code"] == "permission_denied"
        send = (
            "workflow",
            "signal",
            wait_id,
            "--token-file",
            str(token_file),
            "--payload",
            '{"verdict":"ship"}',
        )
        code, answer, text = through(BEARER, *send)
        seen.append(text)
        assert code == 0, answer
        assert answer["signal"]["submittedBy"] == BEARER and answer["signal"]["grantedBy"] == GRANTER
        code, again, text = through(BEARER, *send)
        seen.append(text)
        assert code == 3 and again["error"]["details"]["reason"] == "used_up"
    finally:
        serve.terminate()
        serve.communicate(timeout=30)
    assert [t for t in seen if token in t] == []
    assert token not in log.read_text()
    assert [str(p) for p in root.rglob("*") if p.is_file() and token.encode() in p.read_bytes()] == []
