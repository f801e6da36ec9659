"""How the CLI finds its repository: --repo-dir, SWAMP_REPO_DIR, walking up, and the refusal outside."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from helpers import SH_MODEL, Repo, clean_env, job, run_swamp, sh

pytestmark = pytest.mark.cli


@pytest.fixture(scope="module")
def located(shared_repo):
    shared_repo.write_workflow("where", [job("main", sh("pwd", "pwd"))])
    return shared_repo


def names(body):
    return [w["name"] for w in body["workflows"]]


def test_repo_init_creates_the_layout(tmp_path):
    code, out, _err, body = run_swamp("repo", "init", "new", "--json", cwd=tmp_path)
    assert code == 0
    assert body["created"] is True
    root = tmp_path / "new"
    for part in (".swamp.yaml", "workflows", "models", "extensions/models", ".swamp"):
        assert (root / part).exists(), part
    again = run_swamp("repo", "init", "new", "--json", cwd=tmp_path)
    assert again.code == 0 and again.json["created"] is False


def test_repo_dir_option_from_outside(located, tmp_path):
    code, _out, _err, body = run_swamp(
        "workflow", "list", "--repo-dir", str(located.root), "--json", cwd=tmp_path
    )
    assert code == 0
    assert "where" in names(body)


def test_repo_dir_option_on_the_root_group(located, tmp_path):
    code, _out, _err, body = run_swamp(
        "--repo-dir", str(located.root), "--json", "workflow", "list", cwd=tmp_path
    )
    assert code == 0
    assert "where" in names(body)


def test_swamp_repo_dir_environment_variable(located, tmp_path):
    code, _out, _err, body = run_swamp(
        "workflow", "list", "--json", cwd=tmp_path, env={"SWAMP_REPO_DIR": str(located.root)}
    )
    assert code == 0
    assert "where" in names(body)


def test_repo_dir_option_wins_over_environment(located, tmp_path):
    other = tmp_path / "other"
    assert run_swamp("repo", "init", str(other), cwd=tmp_path).code == 0
    code, _out, _err, body = run_swamp(
        "workflow", "list", "--repo-dir", str(located.root), "--json",
        cwd=tmp_path, env={"SWAMP_REPO_DIR": str(other)},
    )  # fmt: skip
    assert code == 0
    assert "where" in names(body)


def test_walks_up_from_a_subdirectory_and_runs_at_the_root(located):
    sub = located.root / "workflows" / "deeper"
    sub.mkdir(parents=True, exist_ok=True)
    code, _out, _err, doc = located.swamp("workflow", "run", "where", "--json", cwd=sub)
    assert code == 0
    assert doc["status"] == "succeeded"
    # the shell step runs in the repository root, not in the caller's directory
    assert doc["jobs"][0]["steps"][0]["outputs"]["stdout"].strip() == str(located.root)


def test_outside_a_repo_the_error_names_repo_init(tmp_path):
    code, out, _err, body = run_swamp("workflow", "list", "--json", cwd=tmp_path)
    assert code == 3
    assert body["error"]["code"] == "repo_not_found"
    assert "swamp repo init" in body["error"]["message"]


def test_outside_a_repo_log_mode_says_what_to_do(tmp_path):
    code, out, err, _ = run_swamp("workflow", "list", cwd=tmp_path)
    assert code == 3
    assert "swamp repo init" in err
    assert "Traceback" not in out + err


def test_repo_dir_that_is_not_a_repo_is_refused(tmp_path):
    code, _out, _err, body = run_swamp(
        "workflow", "list", "--repo-dir", str(tmp_path), "--json", cwd=tmp_path
    )
    assert code == 3
    assert body["error"]["code"] == "repo_not_found"
    assert "swamp repo init" in body["error"]["message"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_status_lists_nothing_under_swamp_after_runs(tmp_path):
    """REPO-010: every file a run writes under .swamp/ (records, swap files, wait and active
    indexes, audit trail, locks) is ignored; only .swamp/.gitignore itself is for git."""
    env = {
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=tmp_path, env=clean_env(env), capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    git("init", "-q")
    assert run_swamp("repo", "init", cwd=tmp_path).code == 0
    repo = Repo(tmp_path)
    repo.write_model(SH_MODEL)
    wait = {"name": "review", "task": {"type": "wait_for_signal", "timeout": 60, "schema": {}}}
    repo.write_workflow("gi", [job("main", sh("hello", "echo hi"), wait)])
    assert git("status", "--porcelain", "--untracked-files=all").count(".swamp/") == 1  # the .gitignore
    git("add", "-A")
    git("commit", "-q", "-m", "init")
    started = repo.swamp("workflow", "run", "gi", "--json")
    assert started.json["status"] == "suspended", started
    wait_id = started.json["waits"][0]["waitId"]
    assert repo.swamp("workflow", "signal", wait_id, "--payload", "{}").code == 0
    assert repo.swamp("workflow", "resume", "gi").code == 0
    assert list((tmp_path / ".swamp").rglob("*.audit.jsonl")), "the run wrote its state"
    assert git("status", "--porcelain", "--untracked-files=all", "--ignored=no") == ""
