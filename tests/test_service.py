"""swamp service (spec/service.md): the unit's name escaped exactly as systemd-escape escapes it,
arguments systemd reads back as written, the host without systemd (this one, in CI containers),
and, where systemd is PID 1, a real install, status and uninstall."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import make_repo

from swamp.cli import service

TRICKY = [
    "/srv/qa-repo",
    "/tmp//a/./b/",
    "/home/ann/my repo",
    "/x/.hidden/ü",
    "/opt/50%/$HOME",
    "/",
    "/a:b_c.d",
]
SYSTEMD = service.systemd_running()
NO_SYSTEMD = "systemd is not PID 1 here (no /run/systemd/system): install is refused, as spec/service.md says"


@pytest.mark.skipif(shutil.which("systemd-escape") is None, reason="no systemd-escape to compare with")
@pytest.mark.parametrize("path", TRICKY)
def test_the_name_is_escaped_as_systemd_escape_does(path: str) -> None:
    if path == "/tmp//a/./b/":
        path = "/tmp/a/b"  # systemd-escape --path refuses a path that is not normalised
    expected = subprocess.run(
        ["systemd-escape", "--path", path], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert service.systemd_escape_path(path) == expected
    assert service.unit_name(path) == f"swamp-{expected}.service"


def test_exec_start_reads_back_as_written() -> None:
    import shlex

    text = service.unit_text(
        "/opt/50%/my repo", user_unit=True, account=None, environment={"SWAMP_STORE_URL": "host=db user=qa"}
    )
    exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    words = [w.replace("%%", "%").replace("$$", "$") for w in shlex.split(exec_start[len("ExecStart=") :])]
    assert words[words.index("--repo-dir") + 1] == "/opt/50%/my repo"
    assert 'Environment="SWAMP_STORE_URL=host=db user=qa"' in text
    assert 'WorkingDirectory="/opt/50%%/my repo"' in text


def test_a_password_in_any_spelling_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from swamp.domain.errors import ServiceSecret

    for address in (
        "postgresql://qa:s3cret@db/swamp",
        "host=db password=s3cret",
        "postgresql://db/x?password=s3cret",
    ):
        monkeypatch.setenv("SWAMP_STORE_URL", address)
        with pytest.raises(ServiceSecret) as refused:
            service._environment()
        assert "s3cret" not in refused.value.message and "s3cret" not in str(refused.value.details)
    monkeypatch.setenv("SWAMP_STORE_URL", "service=swamp")
    monkeypatch.setenv("PGSERVICEFILE", "/etc/swamp/pg_service.conf")
    assert service._environment() == {
        "SWAMP_STORE_URL": "service=swamp",
        "PGSERVICEFILE": "/etc/swamp/pg_service.conf",
    }


@pytest.mark.skipif(SYSTEMD, reason="systemd runs here: the real install below is the test")
def test_without_systemd_nothing_is_written_and_the_command_is_given(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("a system unit needs root first (SERVICE-009); the host check comes after")
    repo = make_repo(tmp_path / "repo")
    done = repo.swamp("service", "install", "--json", env={"SWAMP_STORE_URL": ""})
    assert done.code == 3, done
    error = done.json["error"]
    assert error["code"] == "service_unavailable"
    assert "systemd is not running here" in error["message"]
    command = error["details"]["command"]
    assert command[0].startswith("/") and command[1:4] == ["serve", "--auto-continue", "--enforce-deadlines"]
    assert command[command.index("--repo-dir") + 1] == str(repo.root)
    assert not (Path("/etc/systemd/system") / service.unit_name(str(repo.root))).exists()


@pytest.mark.skipif(not SYSTEMD, reason=NO_SYSTEMD)
def test_a_real_install_runs_serve(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the real install writes a system unit, which needs root")
    repo = make_repo(tmp_path / "repo")
    try:
        done = repo.swamp("service", "install", "--json", env={"SWAMP_STORE_URL": ""})
        assert done.code == 0 and done.json["installed"], done
        status = repo.swamp("service", "status", "--json")
        assert status.json["installed"] and status.json["active"] in ("active", "activating")
    finally:
        removed = repo.swamp("service", "uninstall", "--json")
        assert removed.code == 0, removed
