"""swamp.client against a real `swamp serve`: every method, over stdin/stdout and over the socket,
each result validated against spec/schemas/results.schema.json; refusals; threads sharing one
connection; a connection that dies. One serve for the module (spawned with --socket, so both
transports reach the same process); each test uses its own workflow names.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers import Repo, dep, echo, job, make_repo, sh
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from swamp.client import Client, ConnectionLost, SwampError

pytestmark = pytest.mark.cli

ROOT_DIR = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT_DIR / "spec" / "schemas"
REGISTRY = Registry().with_resources(  # type: ignore[var-annotated]
    (path.name, DRAFT202012.create_resource(json.loads(path.read_text())))
    for path in SCHEMAS.glob("*.schema.json")
)


def valid(request_type: str, data: dict[str, Any]) -> dict[str, Any]:
    """`data` as returned, after checking it against its request type's result schema."""
    schema = {"$ref": f"results.schema.json#/$defs/{request_type}"}
    jsonschema.Draft202012Validator(schema, registry=REGISTRY).validate(data)
    return data


def gate(name: str) -> dict[str, Any]:
    return {"name": name, "task": {"type": "manual_approval", "prompt": f"{name}?"}}


VERDICT = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["ship", "fix"]}}}


def waiter(repo: Repo, name: str) -> str:
    review = {"name": "review", "task": {"type": "wait_for_signal", "timeout": 600, "schema": VERDICT}}
    after = echo("after", {"verdict": "${{ steps.review.outputs.payload.verdict }}"})
    after["dependsOn"] = [{"step": "review", "condition": {"type": "succeeded"}}]
    return repo.write_workflow(name, [job("main", review, after)])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Repo, Client, Path]]:
    """(repository, a client of serve's stdin/stdout, serve's socket path)."""
    repo = make_repo(tmp_path_factory.mktemp("client") / "repo")
    (repo.root / ".swamp.yaml").write_text("version: 1\ngateway: {publicUrl: 'https://swamp.example.com'}\n")
    sock = Path(tmp_path_factory.mktemp("sock", numbered=True)) / "s.sock"
    if len(str(sock)) > 100:  # Unix socket paths are short
        sock = Path(f"/tmp/swcl-{os.getpid()}.sock")
    client = Client.spawn(repo.root, args=["--socket", str(sock)])
    client.serve_status()  # answered: serve is up (its socket is made before stdin is read)
    yield repo, client, sock
    client.close()
    assert client.process is not None and client.process.returncode == 0, client.serve_log()


@pytest.fixture
def repo(served: tuple[Repo, Client, Path]) -> Repo:
    return served[0]


@pytest.fixture
def client(served: tuple[Repo, Client, Path]) -> Client:
    return served[1]


@pytest.fixture
def socket_client(served: tuple[Repo, Client, Path]) -> Iterator[Client]:
    with Client.connect(served[2]) as client:
        yield client


# -- the surface -------------------------------------------------------------------------------------


def test_there_is_a_method_for_every_request_type_and_each_is_exercised_here():
    requests = json.loads((SCHEMAS / "requests.schema.json").read_text())
    protocol_types = set(requests["properties"]["type"]["enum"])
    assert set(Client.METHODS) == protocol_types | {"serve.status", "cancel", "events.subscribe"}
    source = Path(__file__).read_text()
    for request_type, method in Client.METHODS.items():
        assert callable(getattr(Client, method)), request_type
        if request_type != "events.subscribe":  # tests/test_client_events.py
            assert re.search(rf"\.{method}\(", source), f"{method} ({request_type}) is never called here"


def test_serve_answers_no_request_type_the_client_lacks(client):
    version = valid("protocol.version", client.protocol_version())
    assert set(version["requestTypes"]) <= set(Client.METHODS)


def test_importing_the_client_loads_nothing_heavy_and_the_cli_never_imports_it():
    probe = (
        "import sys, swamp.client\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'rich_click', 'click',"
        " 'jsonschema', 'pydantic', 'yaml'})\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
    for path in (ROOT_DIR / "swamp").rglob("*.py"):
        if "client" in path.relative_to(ROOT_DIR / "swamp").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            assert not any(n.startswith("swamp.client") or n == ".client" for n in names), path


# -- runs, waits, gates ------------------------------------------------------------------------------


def test_a_run_streams_events_suspends_and_a_signal_with_resume_finishes_it(repo, client):
    name = waiter(repo, "cl-signal")
    seen: list[str] = []
    run = valid("workflow.run", client.run(name, on_event=lambda e: seen.append(e["event"])))
    assert run["status"] == "suspended"
    assert seen[0] == "run_started" and "step_waiting" in seen
    wait_id = run["waits"][0]["waitId"]

    open_waits = valid("workflow.waits", client.waits(workflow=name))["waits"]
    assert [w["waitId"] for w in open_waits] == [wait_id]
    shown = valid("workflow.wait.show", client.wait_show(wait_id[:12]))
    assert shown["status"] == "open" and shown["schema"] == VERDICT
    assert valid("workflow.wait.show", client.wait_show(run=run["id"], step="review"))["waitId"] == wait_id
    assert valid("workflow.signal", client.signal(wait_id, {"verdict": "fix"}, check=True))["valid"] is True

    resumed: list[str] = []
    answer = valid(
        "workflow.signal",
        client.signal(
            wait_id, {"verdict": "ship"}, resume=True, on_event=lambda e: resumed.append(e["event"])
        ),
    )
    assert answer["continued"] is True and answer["run"]["status"] == "succeeded"
    assert "run_resumed" in resumed and "step_succeeded" in resumed

    got = valid("workflow.history.get", client.history_get(run["id"]))
    assert got["status"] == "succeeded" and got["audit"]
    runs = valid("workflow.history", client.history(name, limit=5))["runs"]
    assert [r["runId"] for r in runs] == [run["id"]]
    watched = valid("workflow.watch", client.watch(run["id"], timeout=0))
    assert watched["watch"] == {"outcome": "finished"}


def test_grant_signal_with_its_token_and_revoke(repo, client):
    wait_id = client.run(waiter(repo, "cl-grant"))["waits"][0]["waitId"]
    granted = valid("workflow.wait.grant", client.grant(wait_id, expires="1h", uses=1, note="ci"))
    unused = valid("workflow.wait.grant", client.grant(wait_id))["permission"]
    revoked = valid("workflow.wait.revoke", client.revoke(unused["id"]))["permission"]
    assert revoked["state"] == "revoked" and revoked["waitId"] == wait_id
    with pytest.raises(SwampError) as refused:
        client.signal(wait_id, {"verdict": "ship"}, token=unused["token"])
    assert refused.value.details["reason"] == "revoked" and unused["token"] not in str(refused.value)
    token = granted["permission"]["token"]
    link = valid("workflow.wait.link", client.link(wait_id, expires="1d"))
    assert link["url"] == "https://swamp.example.com/a/" + link["permission"]["token"]
    shown = valid("workflow.link.show", client.link_show(link["permission"]["token"]))
    assert shown["permission"]["state"] == "live" and shown["wait"]["waitId"] == wait_id
    answer = valid("workflow.signal", client.signal(wait_id, {"verdict": "ship"}, token=token))
    assert answer["signal"]["permissionId"] == granted["permission"]["id"]


def test_a_null_payload_is_sent_as_null_and_refused_by_the_schema(repo, client):
    run = client.run(waiter(repo, "cl-null"))
    with pytest.raises(SwampError) as refused:
        client.signal(run["waits"][0]["waitId"], None)
    assert refused.value.code == "payload_invalid", refused.value


def test_gates_approve_and_reject_approvals_and_cancel(repo, client):
    name = repo.write_workflow("cl-gate", [job("main", gate("go"))])
    first = valid("workflow.run", client.run(name))
    pending = valid("workflow.approvals", client.approvals(workflow=name))["approvals"]
    assert [(a["runId"], a["stepName"]) for a in pending] == [(first["id"], "go")]
    approved = valid(
        "workflow.approve", client.approve(name, "go", run=first["id"], resume=True, reason="ok")
    )
    assert approved["continued"] is True and approved["run"]["status"] == "succeeded"

    second = client.run(name)
    rejected = valid("workflow.reject", client.reject(name, "go", run=second["id"], reason="no"))
    assert rejected["approved"] is False

    third = client.run(name)
    cancelled = valid("workflow.cancel", client.cancel(name, run=third["id"], reason="not today"))
    assert cancelled["status"] == "cancelled"

    waited = client.run(waiter(repo, "cl-reject-wait"))
    wait_id = waited["waits"][0]["waitId"]
    refused = valid("workflow.reject", client.reject(wait_id=wait_id, reason="stale"))
    assert refused["waitId"] == wait_id and refused["approved"] is False


def test_resume_continues_a_run_whose_wait_was_answered_without_resume(repo, client):
    run = client.run(waiter(repo, "cl-resume"))
    client.signal(run=run["id"], step="review", payload={"verdict": "ship"})
    resumed = valid("workflow.resume", client.resume("cl-resume", run=run["id"], claim_timeout=5))
    assert resumed["status"] == "succeeded" and resumed["definitionChanged"] is False


# -- workflows, models, the repository, serve -------------------------------------------------------


def test_workflows_models_and_repository_requests(repo, client, tmp_path):
    created = valid("workflow.create", client.create_workflow("cl-made", description="made by a test"))
    assert created["name"] == "cl-made"
    listed = valid("workflow.list", client.list_workflows())
    assert "cl-made" in {w["name"] for w in listed["workflows"]}
    detail = valid("workflow.get", client.get_workflow("cl-made"))
    assert detail["description"] == "made by a test" and "definition" in detail
    assert valid("workflow.validate", client.validate("cl-made"))["passed"] is True
    assert "totalPassed" in valid("workflow.validate", client.validate())

    model = valid("model.create", client.create_model("command/shell", "cl-model"))
    assert model["name"] == "cl-model"
    assert "cl-model" in {m["name"] for m in valid("model.list", client.models())["models"]}
    assert valid("model.get", client.get_model("cl-model"))["type"] == "command/shell"
    types = valid("model.type.list", client.model_types())["types"]
    assert {"command/shell", "@test/echo"} <= {t["type"] for t in types}

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert valid("repo.init", client.repo_init(fresh))["created"] is True
    assert valid("workflow.list", client.list_workflows(repo_dir=fresh))["workflows"] == []


def test_serve_status_and_cancelling_a_request_by_id_and_by_run(repo, client):
    status = valid("serve.status", client.serve_status())
    assert status["pid"] == client.process.pid and status["socket"]
    name = repo.write_workflow(
        "cl-slow", [job("main", sh("nap", "sleep 1"), sh("after", "true", dependsOn=[dep("nap")]))]
    )

    def executing() -> str:
        deadline = time.monotonic() + 20
        while not (runs := client.serve_status()["runsInFlight"]):
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.02)
        return runs[0]

    by_id = client.start("workflow.run", {"workflow": name})
    executing()
    assert by_id.cancel() is True
    assert valid("workflow.run", by_id.result(timeout=30))["status"] == "cancelled"
    assert by_id.cancel() is False  # finished: nothing left to stop

    by_run = client.start("workflow.run", {"workflow": name})
    run_id = executing()
    stopped = valid("cancel", client.cancel_request(run=run_id))["cancelled"]
    assert stopped == [{"id": by_run.id, "type": "workflow.run", "runIds": [run_id]}]
    assert by_run.result(timeout=30)["status"] == "cancelled"

    watched = client.run(waiter(repo, "cl-watched"))
    watch = client.start("workflow.watch", {"run": watched["id"]})  # no timeout: lasts until the run ends
    assert next(watch.events())["event"] == "run_status"
    assert watch.cancel() is True
    stopped_watch = valid("workflow.watch", watch.result(timeout=10))
    assert stopped_watch["watch"] == {"outcome": "cancelled"} and stopped_watch["status"] == "suspended"

    with pytest.raises(SwampError) as nothing:
        client.cancel_request(id="c-not-sent")
    assert nothing.value.code == "not_in_flight" and nothing.value.details == {"id": "c-not-sent"}


# -- refusals, threads, the connection ---------------------------------------------------------------


def test_a_refusal_raises_swamp_error_with_code_message_and_details(client):
    with pytest.raises(SwampError) as missing:
        client.get_workflow("cl-no-such-workflow")
    assert missing.value.code == "workflow_not_found"
    assert missing.value.message and "\n" not in missing.value.message
    with pytest.raises(SwampError) as shapeless:
        client.request("workflow.get", {"workflow": "x", "bogus": 1})
    assert shapeless.value.code == "invalid_request" and "bogus" in shapeless.value.message
    assert not isinstance(shapeless.value, ConnectionLost)
    assert client.connected  # a refusal leaves the connection as it was
    client.serve_status()


def test_threads_share_one_connection_and_each_gets_its_own_answers(repo, client, socket_client):
    names = [repo.write_workflow(f"cl-thread-{i}", [job("main", echo("say", {"i": i}))]) for i in range(4)]
    failures: list[str] = []

    def work(c: Client, i: int) -> None:
        try:
            for _ in range(3):
                assert c.get_workflow(names[i])["name"] == names[i]
                run = c.run(names[i])
                assert run["workflowName"] == names[i] and run["status"] == "succeeded"
                said = run["jobs"][0]["steps"][0]["outputs"]["args"]
                assert said == {"i": i}, said
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(f"{i}: {exc!r}")

    threads = [threading.Thread(target=work, args=(c, i)) for i in range(4) for c in (client, socket_client)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures, failures
    assert not any(t.is_alive() for t in threads)


def test_the_socket_client_reaches_the_same_serve_and_may_name_its_own_repository(
    served, client, socket_client, tmp_path
):
    assert socket_client.serve_status()["pid"] == client.serve_status()["pid"]
    waiter(served[0], "cl-socket")
    assert "cl-socket" in {w["name"] for w in socket_client.list_workflows()["workflows"]}  # --repo-dir
    other = tmp_path / "other"
    other.mkdir()
    client.repo_init(other)
    with Client.connect(served[2], repo_dir=other) as elsewhere:
        assert elsewhere.list_workflows()["workflows"] == []
        assert elsewhere.list_workflows(repo_dir=served[0].root)["workflows"]  # a call's own wins


def test_a_dying_serve_fails_every_call_in_flight_at_once_and_every_later_call(tmp_path):
    repo = make_repo(tmp_path / "repo")
    sock = Path(f"/tmp/swcl-die-{os.getpid()}.sock")
    doomed = Client.spawn(repo.root, args=["--socket", str(sock)])
    try:
        run = doomed.run(waiter(repo, "cl-die"))
        with Client.connect(sock) as far:
            watches = [
                doomed.start("workflow.watch", {"run": run["id"]}),
                far.start("workflow.watch", {"run": run["id"]}),
            ]
            doomed.serve_status(), far.serve_status()  # both watches are in flight now
            assert doomed.process is not None
            os.kill(doomed.process.pid, signal.SIGKILL)
            for call in watches:
                with pytest.raises(ConnectionLost) as lost:
                    call.result(timeout=20)  # at once; a hang would be a TimeoutError
                assert lost.value.code == "connection_lost"
            started = time.monotonic()
            with pytest.raises(ConnectionLost):
                far.serve_status()
            with pytest.raises(ConnectionLost) as later:
                doomed.serve_status()
            assert time.monotonic() - started < 5
            assert "exited -9" in later.value.message and later.value.details["exitCode"] == -9
            assert not doomed.connected and not far.connected
    finally:
        doomed.close()
        sock.unlink(missing_ok=True)


def test_a_serve_that_cannot_start_says_why(tmp_path):
    with Client.spawn(tmp_path, args=["--max-runs", "nope"]) as broken, pytest.raises(ConnectionLost) as lost:
        broken.serve_status()
    assert lost.value.details["exitCode"] == 2
    assert "max-runs" in lost.value.message.lower() or "max-runs" in "".join(broken.serve_log()).lower()


def test_store_status_and_migrate_say_which_store_the_repository_uses(client):
    status = client.store_status()
    assert status["kind"] == "file" and status["current"] is True and status["schemaVersion"] is None
    migrated = client.store_migrate()
    assert migrated["kind"] == "file" and migrated["applied"] == []
    with pytest.raises(SwampError) as same:  # STORE-050: a copy is a request like any other
        client.store_copy("file")
    assert same.value.code == "store_same"
