"""serve as the gatekeeper, with real accounts (spec/access.md, ACCESS-070..ACCESS-089).

A service account (swpcsvc) owns a repository whose .swamp is 0700 and runs `swamp serve --socket
... --socket-access group:swpcrel`. A member of that group (swpcmem) answers through `--connect`
and is refused everything else; without `--connect` the store is out of its reach; an account
outside the group (swpcout) cannot connect at all. One serve for the whole module.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import python_for_other_accounts
from tests.helpers import swamp_for_other_accounts as FOR_OTHERS

SERVICE, MEMBER, OUTSIDER, GROUP = "swpcsvc", "swpcmem", "swpcout", "swpcrel"
NOW = "2026-01-01T00:00:00Z"
WORKFLOW = """\
id: 0a0a0a0a-0000-4000-8000-0000000c0001
name: release
jobs:
  - name: main
    steps:
      - {name: verdict, task: {type: wait_for_signal, timeout: 86400, schema: {type: object}}}
  - name: deploy
    steps:
      - {name: gate, task: {type: manual_approval, prompt: "ship?"}}
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create and act as other accounts")


def _quietly(*argv: str) -> None:
    subprocess.run(argv, capture_output=True, check=False)


def _accounts() -> None:
    """The accounts and group, made idempotently (an existing one is kept)."""
    _quietly("groupadd", "-f", GROUP)
    for name in (SERVICE, MEMBER, OUTSIDER):
        _quietly("useradd", "--no-create-home", "--shell", "/bin/false", "--user-group", name)
    for name in (SERVICE, MEMBER):
        _quietly("usermod", "-aG", GROUP, name)
    for name in (SERVICE, MEMBER, OUTSIDER):
        pwd.getpwnam(name)  # raises if it could not be made
    grp.getgrnam(GROUP)


class Place:
    def __init__(self, base: Path):
        self.base = base
        self.repo = base / "repo"
        self.run = base / "run"
        self.socket = base / "run" / "release.sock"
        self.log = base / "serve.log"

    def swamp(self, account: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """swamp as `account` (its groups from the account database), in the repository."""
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.base), "SWAMP_NOW": NOW, "LANG": "C.UTF-8"}
        return subprocess.run(
            [
                "setpriv",
                f"--reuid={account}",
                f"--regid={account}",
                "--init-groups",
                str(FOR_OTHERS()),
                *args,
            ],
            cwd=self.repo,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def through(self, account: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.swamp(account, "--connect", str(self.socket), *args)

    def json(self, account: str, *args: str, connect: bool = False) -> Any:
        done = (self.through if connect else self.swamp)(account, *args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def place() -> Iterator[Place]:
    _accounts()
    base = Path(tempfile.mkdtemp(prefix="swpc-", dir="/tmp"))
    base.chmod(0o755)
    here = Place(base)
    here.repo.mkdir()
    here.run.mkdir(mode=0o750)
    shutil.chown(here.repo, SERVICE, SERVICE)
    shutil.chown(here.run, SERVICE, GROUP)  # as systemd's RuntimeDirectory= with Group=
    os.chmod(here.run, 0o750)
    ready = here.swamp(SERVICE, "version")
    if ready.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"{SERVICE} cannot run {FOR_OTHERS()}: {ready.stderr.strip()}")
    assert here.swamp(SERVICE, "repo", "init", ".").returncode == 0
    (here.repo / ".swamp").chmod(0o700)
    (here.repo / "workflows" / "workflow-release.yaml").write_text(WORKFLOW)
    shutil.chown(here.repo / "workflows" / "workflow-release.yaml", SERVICE, SERVICE)
    serve = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={SERVICE}",
            f"--regid={SERVICE}",
            "--init-groups",
            str(FOR_OTHERS()),
            "serve",
            "--socket",
            str(here.socket),
            "--socket-access",
            f"group:{GROUP}",
        ],
        cwd=here.repo,
        env={"PATH": "/usr/bin:/bin", "HOME": str(base), "SWAMP_NOW": NOW},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=here.log.open("w"),
    )
    try:
        deadline = time.monotonic() + 30
        while not here.socket.exists():
            assert serve.poll() is None, here.log.read_text()
            assert time.monotonic() < deadline, "serve did not listen within 30 s"
            time.sleep(0.05)
        yield here
    finally:
        serve.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            serve.wait(20)
        if serve.poll() is None:
            serve.kill()
        shutil.rmtree(base, ignore_errors=True)


def _start(place: Place) -> tuple[str, str]:
    """A run suspended at its wait and its gate: (run ID, wait ID)."""
    run = place.json(SERVICE, "workflow", "run", "release")
    assert run["status"] == "suspended"
    return run["id"], run["waits"][0]["waitId"]


def _state(place: Place, run_id: str) -> list[Any]:
    """The runs and the run a refusal was about, as their owner reads them: to see it changed nothing."""
    runs = place.json(SERVICE, "workflow", "history")
    return [runs, place.json(SERVICE, "workflow", "history", "get", run_id)]


def test_the_socket_is_the_groups_and_serve_keeps_the_store_to_itself(place: Place) -> None:
    """ACCESS-070: group:NAME gives the socket that group, mode 0660."""
    found = os.stat(place.socket)
    assert oct(found.st_mode & 0o777) == "0o660"
    assert grp.getgrgid(found.st_gid).gr_name == GROUP
    assert pwd.getpwuid(found.st_uid).pw_name == SERVICE
    assert oct(os.stat(place.repo / ".swamp").st_mode & 0o777) == "0o700"


def test_a_member_answers_through_connect_as_itself(place: Place) -> None:
    """ACCESS-074, ACCESS-080: a peer of another account signals and approves; the record says
    who (the kernel's account, not serve's)."""
    run_id, wait_id = _start(place)
    signalled = place.json(MEMBER, "workflow", "signal", wait_id, "--payload", '{"ok": true}', connect=True)
    assert signalled["signal"]["submittedBy"] == MEMBER
    approved = place.through(MEMBER, "workflow", "approve", "release", "gate", "--run", run_id)
    assert approved.returncode == 0, approved.stderr
    assert f"as {MEMBER}" in approved.stdout
    record = place.json(SERVICE, "workflow", "history", "get", run_id)
    steps = {s["name"]: s for job in record["jobs"] for s in job["steps"]}
    assert steps["gate"]["approval"]["decision"]["decidedBy"] == MEMBER


REFUSED = [
    ("workflow", "run", "release"),
    ("workflow", "resume", "release", "--run", "{run}"),
    ("workflow", "cancel", "release", "--run", "{run}"),
    ("workflow", "create", "another"),
    ("workflow", "signal", "{wait}", "--payload", "{}", "--resume"),
    ("workflow", "approve", "release", "gate", "--run", "{run}", "--resume"),
    ("store", "status"),
    ("model", "list"),
]


@pytest.mark.parametrize("argv", REFUSED, ids=lambda argv: " ".join(a for a in argv if "{" not in a))
def test_a_member_is_refused_everything_else_and_nothing_changes(place: Place, argv: tuple[str, ...]) -> None:
    """ACCESS-074, ACCESS-075: permission_denied (exit 3), saying what to do; nothing changed."""
    run_id, wait_id = _start(place)
    before = _state(place, run_id)
    words = [a.replace("{run}", run_id).replace("{wait}", wait_id) for a in argv]
    refused = place.through(MEMBER, *words, "--json")
    assert refused.returncode == 3, (refused.stdout, refused.stderr)
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "permission_denied"
    assert SERVICE in error["message"] and "Traceback" not in refused.stderr
    assert _state(place, run_id) == before
    assert f"from {MEMBER} (permission_denied)" in place.log.read_text()


FRAMES_AS_A_PEER = """
import json, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
sock.sendall(sys.stdin.buffer.read())
sock.shutdown(socket.SHUT_WR)
print(sock.makefile("rb").read().decode())
"""


def test_what_a_peer_may_ask_is_decided_by_serve_not_by_the_cli(place: Place) -> None:
    """ACCESS-074..ACCESS-077 on the wire: the CLI's own refusals are a courtesy; serve refuses
    a foreign peer's repo.init, serve.status, a cancel of a run, another repository, and keeps
    protocol.version."""
    run_id, _wait_id = _start(place)
    frames = [
        {"type": "repo.init", "id": "i", "payload": {"path": str(place.base / "mine")}},
        {"type": "serve.status", "id": "s"},
        {"type": "cancel", "id": "c", "payload": {"run": run_id}},
        {"type": "workflow.waits", "id": "r", "payload": {"repoDir": "/"}},
        {
            "type": "workflow.reject",
            "id": "j",
            "payload": {"workflow": "release", "step": "gate", "resume": True},
        },
        {"type": "protocol.version", "id": "v"},
        {"type": "workflow.waits", "id": "w", "payload": {"repoDir": str(place.repo)}},
    ]
    sent = "".join(json.dumps(f) + "\n" for f in frames)
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={MEMBER}",
            f"--regid={MEMBER}",
            "--init-groups",
            "/usr/bin/python3",
            "-S",
            "-c",
            FRAMES_AS_A_PEER,
            str(place.socket),
        ],
        input=sent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    answers = {f["id"]: f for f in lines if f["type"] != "done"}
    for ident, field in (("i", None), ("s", None), ("c", "run"), ("r", "repoDir"), ("j", "resume")):
        assert answers[ident]["type"] == "error", answers[ident]
        error = answers[ident]["error"]
        assert error["code"] == "permission_denied" and error["details"]["account"] == MEMBER
        assert error["details"].get("field") == field
    assert answers["v"]["type"] == "protocol.version" and answers["w"]["type"] == "workflow.waits"
    assert not (place.base / "mine").exists()


def test_local_only_commands_are_usage_errors_through_connect(place: Place) -> None:
    """ACCESS-083: repo init (and --repo-dir) through --connect is a usage error, before serve."""
    init = place.through(MEMBER, "repo", "init", "elsewhere")
    assert init.returncode == 2 and "without --connect" in init.stderr
    repo_dir = place.swamp(MEMBER, "--connect", str(place.socket), "--repo-dir", ".", "workflow", "waits")
    assert repo_dir.returncode == 2 and "--repo-dir" in repo_dir.stderr


def test_without_connect_the_member_cannot_reach_the_store(place: Place) -> None:
    """ACCESS-086: the same account without --connect cannot answer: the store is its owner's
    (storage_error, exit 1, naming what to do), never a traceback."""
    run_id, wait_id = _start(place)
    before = _state(place, run_id)
    direct = place.swamp(MEMBER, "workflow", "signal", wait_id, "--payload", "{}", "--json")
    assert direct.returncode == 1, (direct.stdout, direct.stderr)
    error = json.loads(direct.stdout)["error"]
    assert error["code"] == "storage_error" and "Permission denied" in error["message"]
    assert "Traceback" not in direct.stderr
    assert _state(place, run_id) == before


def test_an_account_outside_the_group_cannot_connect(place: Place) -> None:
    """ACCESS-070, ACCESS-084: the socket's mode keeps it out; a clear error, exit 1."""
    _run_id, wait_id = _start(place)
    refused = place.through(OUTSIDER, "workflow", "signal", wait_id, "--payload", "{}", "--json")
    assert refused.returncode == 1, (refused.stdout, refused.stderr)
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "store_unavailable" and "Permission denied" in error["message"]
    assert "Traceback" not in refused.stderr


def _same_shape(text: str) -> str:
    """Output with what differs between two runs of one workflow (IDs, times) blanked."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "RUN", text)
    text = re.sub(r"\b(wait|sig)_[a-z2-7]{26}\b", r"\1_ID", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "TIME", text)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_output_through_connect_is_the_local_output(place: Place, as_json: bool) -> None:
    """ACCESS-081: reads give the same bytes; answers the same output for the same answer
    (serve adds autoResume to an approve it answers, SERVE-019)."""
    flag = ["--json"] if as_json else []
    for argv in (["workflow", "waits"], ["workflow", "history"], ["workflow", "approvals"]):
        local = place.swamp(SERVICE, *argv, *flag)
        remote = place.through(MEMBER, *argv, *flag)
        assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout), argv
    run_id, wait_id = _start(place)
    for argv in (["workflow", "wait", "show", wait_id], ["workflow", "history", "get", run_id]):
        local, remote = place.swamp(SERVICE, *argv, *flag), place.through(MEMBER, *argv, *flag)
        assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout), argv
    other_run, other_wait = _start(place)
    answers = [  # the approve first: with the wait still open, serve does not resume the run
        (
            ["workflow", "approve", "release", "gate", "--run", run_id],
            ["workflow", "approve", "release", "gate", "--run", other_run],
        ),
        (
            ["workflow", "signal", wait_id, "--payload", "{}"],
            ["workflow", "signal", other_wait, "--payload", "{}"],
        ),
    ]
    for here, there in answers:
        local, remote = place.swamp(SERVICE, *here, *flag), place.through(SERVICE, *there, *flag)
        assert remote.returncode == local.returncode == 0, remote.stderr
        if as_json:
            mine, theirs = json.loads(local.stdout), json.loads(remote.stdout)
            if "autoResume" in theirs:
                assert theirs.pop("autoResume")["resumed"] is False
            assert _same_shape(json.dumps(theirs)) == _same_shape(json.dumps(mine))
        else:
            assert _same_shape(remote.stdout) == _same_shape(local.stdout)


def test_a_serve_of_another_account_in_a_folder_it_does_not_own_is_refused(place: Place) -> None:
    """ACCESS-082: anyone may leave a socket in a shared folder (here a sticky 1777 one of root's);
    --connect sends nothing to a serve of an account that neither is yours, nor root, nor owns
    the folder: socket_not_owned (exit 3)."""
    shared = place.base / "shared"
    shared.mkdir(mode=0o1777, exist_ok=True)
    os.chmod(shared, 0o1777)
    trap = shared / "release.sock"
    serve = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={OUTSIDER}",
            f"--regid={OUTSIDER}",
            "--init-groups",
            str(FOR_OTHERS()),
            "serve",
            "--socket",
            str(trap),
            "--socket-access",
            "any",
        ],
        cwd=place.base,
        env={"PATH": "/usr/bin:/bin", "HOME": str(place.base)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not trap.exists():
            assert serve.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        _run_id, wait_id = _start(place)
        sent = place.swamp(
            MEMBER, "--connect", str(trap), "workflow", "signal", wait_id, "--payload", "{}", "--json"
        )
        assert sent.returncode == 3, (sent.stdout, sent.stderr)
        error = json.loads(sent.stdout)["error"]
        assert error["code"] == "socket_not_owned"
        assert error["details"]["owner"] == pwd.getpwnam(OUTSIDER).pw_uid
        shown = place.json(SERVICE, "workflow", "wait", "show", wait_id)
        assert shown["status"] == "open"
    finally:
        serve.terminate()
        serve.wait(20)


CLIENT_AS_A_PEER = """
import json, sys
from swamp.client import Client, SwampError
with Client.connect(sys.argv[1]) as client:
    waits = client.waits()["waits"]
    try:
        client.run("release")
    except SwampError as err:
        print(json.dumps({"waits": len(waits), "refused": err.code}))
    else:
        print("{}")
"""


def test_a_member_program_reaches_the_serve_with_swamp_client(place: Place) -> None:
    """ACCESS-082 in swamp.client: Client.connect trusts a serve of the account owning the
    socket's folder; the program then reads, and is refused a run like any peer (ACCESS-074)."""
    _start(place)
    ran = subprocess.run(
        [
            "setpriv",
            f"--reuid={MEMBER}",
            f"--regid={MEMBER}",
            "--init-groups",
            str(python_for_other_accounts()),
            "-c",
            CLIENT_AS_A_PEER,
            str(place.socket),
        ],
        env={"PATH": "/usr/bin:/bin", "HOME": str(place.base)},
        cwd=place.base,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    said = json.loads(ran.stdout)
    assert said["refused"] == "permission_denied" and said["waits"] >= 1
