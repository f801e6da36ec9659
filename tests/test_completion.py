"""Shell completion: `swamp completion SHELL` prints click's script; the script's callback
(`_SWAMP_COMPLETE=bash_complete`) completes workflow names, run IDs and open wait IDs, and is silent
(no candidates, no traceback, exit 0) outside a repository or when anything goes wrong."""

from __future__ import annotations

import pytest
from helpers import job, make_repo, run_swamp

NOW = {"SWAMP_NOW": "2026-01-01T00:00:00Z"}


def complete(words: str, cwd, env: dict[str, str] | None = None, shell: str = "bash") -> list[str]:
    """The candidates bash would be offered for the last word of `words` (a trailing space: a new word)."""
    parts = words.split(" ")
    result = run_swamp(
        cwd=cwd,
        env={
            **(env or {}),
            "_SWAMP_COMPLETE": f"{shell}_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(parts) - 1),
        },
    )
    assert result.code == 0, result
    assert result.err == "", result.err
    lines = result.out.splitlines()
    # bash: "plain,<value>", or "plain,<value>  (<help>)" when there are several (CLI-044)
    return [line.split(",", 1)[1].split("  (")[0] for line in lines if "," in line]


@pytest.fixture(scope="module")
def completed(tmp_path_factory):
    repo = make_repo(tmp_path_factory.mktemp("completion") / "repo")
    wait = {
        "name": "verdict",
        "task": {"type": "wait_for_signal", "timeout": 60, "schema": {"type": "integer"}},
    }
    repo.write_workflow("release", [job("main", wait)])
    repo.write_workflow("rebuild", [job("main", wait)])
    first = repo.swamp("workflow", "run", "release", "--json", env=NOW).json
    second = repo.swamp(
        "workflow", "run", "rebuild", "--json", env={"SWAMP_NOW": "2025-01-01T00:00:00Z"}
    ).json
    return repo, first, second


@pytest.mark.cli
def test_workflow_names_complete(completed):
    repo, _, _ = completed
    assert complete("swamp workflow run re", repo.root) == ["rebuild", "release"]
    assert complete("swamp workflow run rel", repo.root) == ["release"]
    assert complete("swamp workflow waits --workflow reb", repo.root) == ["rebuild"]


@pytest.mark.cli
def test_run_ids_complete_for_run_options_and_history_get(completed):
    repo, first, second = completed
    assert complete("swamp workflow resume release --run ", repo.root) == [first["id"]]
    assert complete("swamp workflow cancel release --run " + first["id"][:4], repo.root) == [first["id"]]
    assert set(complete("swamp workflow history get ", repo.root)) == {first["id"], second["id"]}
    assert "get" in complete("swamp workflow history ", repo.root)


@pytest.mark.cli
def test_open_wait_ids_complete_and_expired_ones_do_not(completed):
    repo, first, second = completed
    open_wait = first["waits"][0]["waitId"]
    # at NOW the rebuild run's wait (opened a year earlier, 60 s timeout) has expired
    assert complete("swamp workflow signal wait_", repo.root, NOW) == [open_wait]
    assert complete("swamp workflow wait show ", repo.root, NOW) == [open_wait]
    assert open_wait in complete("swamp workflow reject ", repo.root, NOW)


@pytest.mark.cli
def test_the_repository_named_by_repo_dir_is_used(completed, tmp_path):
    repo, _, _ = completed
    assert complete(f"swamp --repo-dir {repo.root} workflow run rel", tmp_path) == ["release"]
    assert complete(f"swamp workflow run --repo-dir {repo.root} rel", tmp_path) == ["release"]


@pytest.mark.cli
def test_outside_a_repository_or_with_a_bad_clock_completion_is_silent(completed, tmp_path):
    repo, _, _ = completed
    assert complete("swamp workflow run ", tmp_path) == []  # stderr empty: checked in complete()
    assert complete("swamp workflow signal ", repo.root, {"SWAMP_NOW": "not a time"}) == []
    assert complete("swamp workflow run ", tmp_path, {"SWAMP_REPO_DIR": str(tmp_path / "none")}) == []


@pytest.mark.cli
def test_commands_complete_and_zsh_gets_descriptions(completed):
    repo, first, _ = completed
    assert "workflow" in complete("swamp wor", repo.root)
    assert "completion" in complete("swamp comp", repo.root)
    zsh = run_swamp(
        cwd=repo.root,
        env={
            **NOW,
            "_SWAMP_COMPLETE": "zsh_complete",
            "COMP_WORDS": "swamp workflow signal w",
            "COMP_CWORD": "3",
        },
    )
    assert zsh.out.splitlines() == ["plain", first["waits"][0]["waitId"], "release main.verdict"]


@pytest.mark.cli
@pytest.mark.parametrize(
    ("shell", "marker"), [("bash", "complete -o"), ("zsh", "compdef swamp"), ("fish", "complete")]
)
def test_completion_prints_the_script_for_each_shell(tmp_path, shell, marker):
    result = run_swamp("completion", shell, cwd=tmp_path)
    assert result.code == 0, result
    assert marker in result.out and "_SWAMP_COMPLETE" in result.out
