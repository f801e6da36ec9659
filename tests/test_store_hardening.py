"""The store trusts no path (RUN-019) and says storage_error when it cannot read or write
(RUN-020); the files it makes have the process umask's permissions (RUN-021). Through the CLI in
real subprocesses; read-only storage is a read-only bind mount in a private mount namespace, and a
user without access is root without the capabilities that bypass file permissions."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env

WAITER = """\
id: 0a000000-0000-4000-8000-000000000020
name: waiter
jobs:
  - name: main
    steps:
      - {name: value, task: {type: wait_for_signal, timeout: 600}}
"""
WAITER_FOLDER = ".swamp/workflow-runs/0a000000-0000-4000-8000-000000000020"


def _suspended(repo: Repo) -> tuple[str, str]:
    repo.write_workflow("waiter", raw=WAITER)
    result = repo.swamp("workflow", "run", "waiter", "--json")
    assert result.json["status"] == "suspended", result
    return result.json["id"], result.json["waits"][0]["waitId"]


def _wrapped(repo: Repo, wrapper: str, *args: str, umask: int | None = None) -> Any:
    """swamp ARGS run by `sh -c WRAPPER` (which ends by exec'ing "$@"), JSON parsed."""
    done = subprocess.run(
        ["sh", "-c", wrapper, "sh", str(SWAMP), *args, "--json"],
        cwd=repo.root,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=(lambda: os.umask(umask)) if umask is not None else None,  # noqa: PLW1509
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout


def _refused_with_storage_error(code: int, out: str, path_part: str) -> dict[str, Any]:
    import json

    body = json.loads(out)
    assert code == 1, out
    assert body["error"]["code"] == "storage_error", out
    assert path_part in body["error"]["message"] and path_part in body["error"]["details"]["path"], out
    return body


def _can(wrapper: str) -> bool:
    return subprocess.run(["sh", "-c", wrapper + " true"], capture_output=True).returncode == 0


READ_ONLY = 'mount --bind .swamp .swamp && mount -o remount,bind,ro .swamp && exec "$@"'
NO_BYPASS = 'exec capsh --drop=cap_dac_override,cap_dac_read_search,cap_fowner -- -c \'exec "$@"\' sh "$@"'


def test_read_only_storage_refuses_every_change_with_storage_error(repo: Repo) -> None:
    if os.geteuid() != 0 or not _can("unshare -m"):
        pytest.skip("needs a private mount namespace (root and unshare) for a read-only bind mount")
    run_id, wait_id = _suspended(repo)
    wrapper = f"exec unshare -m sh -c '{READ_ONLY}' sh \"$@\""
    for args in (
        ("workflow", "signal", wait_id, "--payload", "1"),
        ("workflow", "run", "waiter"),
        ("workflow", "cancel", "waiter", "--run", run_id),
    ):
        code, out = _wrapped(repo, wrapper, *args)
        body = _refused_with_storage_error(code, out, ".swamp")
        assert "writable" in body["error"]["message"], out
    code, out = _wrapped(repo, wrapper, "workflow", "waits")
    assert code == 0 and wait_id in out, out  # reading needs no write


def test_a_file_where_the_locks_folder_should_be_is_a_storage_error(repo: Repo) -> None:
    run_id, wait_id = _suspended(repo)
    shutil.rmtree(repo.root / ".swamp" / "locks", ignore_errors=True)
    (repo.root / ".swamp" / "locks").write_text("not a folder\n")
    for args in (("workflow", "signal", wait_id, "--payload", "1"), ("workflow", "run", "waiter")):
        code, out = _wrapped(repo, 'exec "$@"', *args)
        _refused_with_storage_error(code, out, ".swamp/locks")
    assert repo.swamp("workflow", "history", "get", run_id, "--json").json["status"] == "suspended"


@pytest.mark.parametrize("folder", [".swamp/locks", ".swamp/waits", WAITER_FOLDER, ".swamp/index/active"])
def test_a_folder_under_swamp_that_is_a_link_is_refused_and_nothing_written_through_it(
    repo: Repo, tmp_path: Path, folder: str
) -> None:
    run_id, wait_id = _suspended(repo)
    outside = tmp_path / "outside"
    shutil.copytree(repo.root / folder, outside) if (repo.root / folder).is_dir() else outside.mkdir()
    before = sorted((p.name, p.read_bytes()) for p in outside.iterdir())
    shutil.rmtree(repo.root / folder, ignore_errors=True)
    os.symlink(outside, repo.root / folder)
    refused = []
    for args in (("workflow", "signal", wait_id, "--payload", '"secret"'), ("workflow", "run", "waiter")):
        code, out = _wrapped(repo, 'exec "$@"', *args)
        if code:
            refused.append(_refused_with_storage_error(code, out, folder))
    assert refused, f"neither command refused the link at {folder}"
    assert sorted((p.name, p.read_bytes()) for p in outside.iterdir()) == before


def _modes(repo: Repo) -> dict[str, int]:
    modes = {}
    for path in (repo.root / ".swamp").rglob("*"):
        if path.is_file() and path.name != ".gitignore":
            modes[str(path.relative_to(repo.root))] = stat.S_IMODE(path.stat().st_mode)
    return modes


@pytest.mark.parametrize(("umask", "mode"), [(0o077, 0o600), (0o022, 0o644)])
def test_files_under_swamp_have_the_umask_permissions(repo: Repo, umask: int, mode: int) -> None:
    repo.write_workflow("waiter", raw=WAITER)
    code, out = _wrapped(repo, 'exec "$@"', "workflow", "run", "waiter", umask=umask)
    assert code == 0, out
    wait_id = out.split('"waitId": "')[1].split('"')[0]
    code, out = _wrapped(repo, 'exec "$@"', "workflow", "signal", wait_id, "--payload", "1", umask=umask)
    assert code == 0, out
    modes = _modes(repo)
    modes.pop(".swamp/index/open.log")  # made by `repo init` (the fixture's umask), appended to since
    kinds = {".json.swap", ".audit.jsonl", ".lock", "active/", "waits/", "workflow-runs/"}
    assert {k for k in kinds if any(k in name for name in modes)} == kinds, modes
    assert {name: m for name, m in modes.items() if m != mode} == {}


def test_a_file_this_user_cannot_read_is_a_storage_error(repo: Repo) -> None:
    if os.geteuid() != 0 or shutil.which("capsh") is None:
        pytest.skip("needs root and capsh to be a user without access to another user's files")
    repo.write_workflow("waiter", raw=WAITER)
    _wrapped(repo, 'exec "$@"', "workflow", "run", "waiter", umask=0o077)
    for path in (repo.root / ".swamp").rglob("*"):
        os.chown(path, 65534, 65534)  # another user's files, 0600 under their umask
    code, out = _wrapped(repo, NO_BYPASS, "workflow", "waits")
    _refused_with_storage_error(code, out, ".swamp")
