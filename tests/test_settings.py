"""Repository settings (`.swamp.yaml`): what is accepted, what is refused and how, and that reading
them stays cheap (no YAML parser for the default marker, nor for settings already parsed once)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, clean_env

from swamp.domain.settings import DEFAULTS, Hook, SettingsInvalid, parse_settings
from swamp.store.repo import RepoLayout
from swamp.store.settings import load_settings


def test_the_default_marker_and_an_empty_file_are_the_defaults() -> None:
    assert parse_settings(None) == DEFAULTS
    assert parse_settings({"version": 1}) == DEFAULTS


def test_hooks_are_read_in_their_order_with_the_default_timeout() -> None:
    settings = parse_settings(
        {"hooks": {"waitExpired": "sh late.sh", "waitOpened": {"command": "sh open.sh", "timeout": 2.5}}}
    )
    assert settings.hooks == (Hook("waitOpened", "sh open.sh", 2.5), Hook("waitExpired", "sh late.sh", 30.0))


def test_which_hooks_an_event_runs() -> None:
    settings = parse_settings(
        {"hooks": {name: "true" for name in ("waitOpened", "waitSettled", "waitExpired")}}
    )

    def names(event: dict[str, Any]) -> list[str]:
        return [hook.name for hook in settings.hooks_for(event)]

    assert names({"event": "wait_opened"}) == ["waitOpened"]
    assert names({"event": "wait_settled", "outcome": "received"}) == ["waitSettled"]
    assert names({"event": "wait_settled", "outcome": "timed_out"}) == ["waitSettled", "waitExpired"]
    assert names({"event": "run_suspended"}) == []


@pytest.mark.parametrize(
    ("doc", "key", "words"),
    [
        ({"hook": {}}, "hook", ["did you mean hooks?"]),
        ({"store": "postgres"}, "store", ["not a PostgreSQL address", "store: postgresql://"]),
        ({"store": "postgresql://alice:pw@db/x"}, "store", ["holds a password", "PGPASSWORD"]),
        ({"version": 2}, "version", ["version: 1"]),
        ({"version": True}, "version", []),
        ({"hooks": []}, "hooks", ["mapping"]),
        ({"hooks": {"waitopened": "x"}}, "hooks.waitopened", ["did you mean waitOpened?"]),
        ({"hooks": {"waitOpened": {"timeout": 3}}}, "hooks.waitOpened.command", ["is missing"]),
        ({"hooks": {"waitOpened": {"command": "  "}}}, "hooks.waitOpened.command", ["non-empty"]),
        ({"hooks": {"waitOpened": {"command": "x", "timeout": 0}}}, "hooks.waitOpened.timeout", ["above 0"]),
        ({"hooks": {"waitOpened": {"command": "x", "timeout": 3601}}}, "hooks.waitOpened.timeout", ["3600"]),
        ({"hooks": {"waitOpened": {"command": "x", "timeout": "5"}}}, "hooks.waitOpened.timeout", []),
        (
            {"hooks": {"waitOpened": {"command": "x", "env": {}}}},
            "hooks.waitOpened.env",
            ["command, timeout"],
        ),
        ({"hooks": {"waitOpened": 3}}, "hooks.waitOpened", ["mapping"]),
        ([{"version": 1}], "", ["mapping of settings"]),
    ],
)
def test_a_setting_swamp_does_not_understand_is_refused_naming_it(
    doc: Any, key: str, words: list[str]
) -> None:
    with pytest.raises(SettingsInvalid) as caught:
        parse_settings(doc)
    assert caught.value.code == "settings_invalid"
    assert caught.value.details["key"] == key
    assert "\n" not in caught.value.message
    for word in words:
        assert word in caught.value.message


def test_the_marker_is_never_read_through_a_symbolic_link(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.yaml").write_text("version: 1\n")
    (tmp_path / ".swamp.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    with pytest.raises(SettingsInvalid, match="symbolic link"):
        load_settings(RepoLayout(tmp_path))


def test_the_parsed_copy_follows_every_edit_of_the_marker(tmp_path: Path) -> None:
    marker = tmp_path / ".swamp.yaml"
    marker.write_text('hooks: {waitOpened: "sh a.sh"}\n')
    assert load_settings(RepoLayout(tmp_path)).hooks[0].command == "sh a.sh"
    assert (tmp_path / ".swamp" / "index" / "settings.json").is_file()
    marker.write_text('hooks: {waitOpened: "sh b.sh"}\n')  # same size, maybe the same mtime
    assert load_settings(RepoLayout(tmp_path)).hooks[0].command == "sh b.sh"
    marker.write_text("hooks: {waitOpend: x}\n")
    with pytest.raises(SettingsInvalid):
        load_settings(RepoLayout(tmp_path))


def test_a_tampered_copy_is_not_trusted(tmp_path: Path) -> None:
    (tmp_path / ".swamp.yaml").write_text('hooks: {waitOpened: "sh a.sh"}\n')
    load_settings(RepoLayout(tmp_path))
    copy = tmp_path / ".swamp" / "index" / "settings.json"
    body = json.loads(copy.read_text())
    body["settings"] = {"hooks": {"waitOpend": "x"}}
    copy.write_text(json.dumps(body))
    assert load_settings(RepoLayout(tmp_path)).hooks[0].command == "sh a.sh"


PROBE = """
import sys
from swamp.app.context import App
app = App.open(sys.argv[1])
app.runs
print("yaml" in sys.modules)
"""


@pytest.mark.parametrize(
    ("marker", "loads_yaml"),
    [
        ("# swamp repository\nversion: 1\n", [False, False]),
        ("", [False, False]),
        ('version: 1\nhooks:\n  waitOpened: {command: "true"}\n', [True, False]),  # parsed once, then kept
    ],
)
def test_commands_on_runs_pay_no_yaml_import_for_settings(
    repo: Repo, marker: str, loads_yaml: list[bool]
) -> None:
    (repo.root / ".swamp.yaml").write_text(marker)
    seen = []
    for _ in loads_yaml:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(repo.root)],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        seen.append(done.stdout.strip() == "True")
    assert seen == loads_yaml


def test_commands_that_need_no_runs_work_with_broken_settings(repo: Repo) -> None:
    (repo.root / ".swamp.yaml").write_text("hooks: [\n")
    assert repo.swamp("workflow", "list", "--json").code == 0
    assert repo.swamp("model", "list", "--json").code == 0
    refused = repo.swamp("workflow", "waits", "--json")
    assert refused.code == 3
    assert refused.json["error"]["code"] == "settings_invalid"
    assert "Traceback" not in refused.err
