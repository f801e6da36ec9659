"""Hooks you can rely on (issue 30, items 4 and 5; spec/hooks.md HOOK-016..023): a hook that fails
at once is named by the command that started it, a wait whose waitOpened hook failed is marked,
retries follow their schedule, waitDueSoon runs once per wait whoever enforces deadlines, and the
README says where hooks run when several hosts share a store."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, run_swamp

from swamp.domain.errors import SettingsInvalid
from swamp.domain.settings import parse_settings

ROOT = Path(__file__).resolve().parent.parent
WAIT_FOR_SIGNAL = {"type": "wait_for_signal", "timeout": 300, "schema": {"type": "integer"}}


def eventually(check: Any, limit: float = 30) -> None:
    end = time.monotonic() + limit
    while not check():
        assert time.monotonic() < end, "the detached hook never got there"
        time.sleep(0.02)


def _review(repo: Repo, hooks: str, name: str = "review", timeout: int = 300) -> None:
    (repo.root / ".swamp.yaml").write_text(f"version: 1\nhooks:\n{hooks}", encoding="utf-8")
    step = {"name": "review", "task": {**WAIT_FOR_SIGNAL, "timeout": timeout}}
    repo.write_workflow(name, [{"name": "main", "steps": [step]}])


# -- item 5: a failed hook is said where the user looks ----------------------------------------


def test_run_warns_on_stderr_of_a_hook_that_failed_and_waits_marks_its_wait(repo: Repo) -> None:
    """Fails on the main of issue 30: `run` printed its usual block and nothing else."""
    _review(repo, '  waitOpened: "echo no webhook >&2; exit 7"\n')
    env = {"SWAMP_HOOK_REPORT_WAIT": "60"}
    ran = run_swamp("workflow", "run", "review", cwd=repo.root, env=env)
    assert ran.code == 0, ran
    (wait_id,) = re.findall(r"wait ID (wait_[a-z2-7]{26})", ran.out)
    assert "swamp: warning" not in ran.out
    assert (
        f"swamp: warning: hook waitOpened (wait_opened) for {wait_id} failed (exit 7); "
        f"see: swamp workflow wait show {wait_id}"
    ) in ran.err
    listed = run_swamp("workflow", "waits", "--json", cwd=repo.root)
    (entry,) = listed.json["waits"]
    assert entry["hookFailed"]["code"] == "hook_failed" and entry["hookFailed"]["exitCode"] == 7
    assert entry["hookFailed"]["retryAt"] is None
    shown = run_swamp("workflow", "waits", cwd=repo.root)
    assert f"{wait_id} !" in shown.out and "! its waitOpened hook failed" in shown.out


def test_a_hook_that_ends_ok_is_neither_warned_nor_marked(repo: Repo) -> None:
    _review(repo, '  waitOpened: "cat > /dev/null"\n')
    ran = run_swamp(
        "workflow", "run", "review", "--json", cwd=repo.root, env={"SWAMP_HOOK_REPORT_WAIT": "60"}
    )
    assert ran.code == 0 and "hookWarnings" not in ran.json, ran
    assert "warning" not in ran.err
    (entry,) = run_swamp("workflow", "waits", "--json", cwd=repo.root).json["waits"]
    assert "hookFailed" not in entry


def test_with_no_report_window_the_command_does_not_wait_for_its_hooks(repo: Repo) -> None:
    _review(repo, '  waitOpened: "sleep 5; exit 7"\n')
    started = time.monotonic()
    ran = run_swamp("workflow", "run", "review", "--json", cwd=repo.root, env={"SWAMP_HOOK_REPORT_WAIT": "0"})
    assert ran.code == 0 and "hookWarnings" not in ran.json
    assert time.monotonic() - started < 5  # it did not wait for the hook (which takes 5 s)


def test_the_signal_that_settles_a_wait_reports_its_waitSettled_hook(repo: Repo) -> None:
    _review(repo, '  waitSettled: "exit 3"\n')
    ran = run_swamp("workflow", "run", "review", "--json", cwd=repo.root)
    wait_id = ran.json["waits"][0]["waitId"]
    sent = run_swamp(
        "workflow",
        "signal",
        wait_id,
        "--payload",
        "1",
        "--json",
        cwd=repo.root,
        env={"SWAMP_HOOK_REPORT_WAIT": "60"},
    )
    assert sent.code == 0, sent
    (warning,) = sent.json["hookWarnings"]
    assert (warning["hook"], warning["event"], warning["exitCode"]) == ("waitSettled", "wait_settled", 3)


# -- retries ------------------------------------------------------------------------------------


def test_the_retry_schedule_doubles_from_backoff_and_is_bounded() -> None:
    from swamp.domain.settings import MAX_BACKOFF_DELAY, retry_delay

    assert [retry_delay(2, k) for k in (1, 2, 3, 4)] == [2, 4, 8, 16]
    assert retry_delay(2, 20) == MAX_BACKOFF_DELAY == 300


@pytest.mark.parametrize(
    ("body", "seconds"),
    [("backoff: 2s", 2), ("backoff: 1m30s", 90), ("backoff: PT2M", 120), ("backoff: 0.5", 0.5), ("", 2)],
)
def test_backoff_takes_seconds_or_a_duration(body: str, seconds: float) -> None:
    settings = parse_settings({"hooks": {"waitOpened": {"command": "true", "retries": 3, **_yaml(body)}}})
    (hook,) = settings.hooks
    assert (hook.retries, hook.backoff) == (3, seconds)


def _yaml(body: str) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(body) or {}


@pytest.mark.parametrize(
    ("hook", "key"),
    [
        ({"waitOpened": {"command": "true", "retries": -1}}, "hooks.waitOpened.retries"),
        ({"waitOpened": {"command": "true", "retries": True}}, "hooks.waitOpened.retries"),
        ({"waitOpened": {"command": "true", "backoff": "soon"}}, "hooks.waitOpened.backoff"),
        ({"waitOpened": {"command": "true", "backoff": 4000}}, "hooks.waitOpened.backoff"),
        ({"waitDueSoon": {"command": "true"}}, "hooks.waitDueSoon.before"),
        ({"waitDueSoon": {"command": "true", "before": "0s"}}, "hooks.waitDueSoon.before"),
        ({"waitSettled": {"command": "true", "before": "10m"}}, "hooks.waitSettled.before"),
    ],
)
def test_bad_retry_and_due_soon_settings_are_refused_naming_the_key(hook: dict[str, Any], key: str) -> None:
    with pytest.raises(SettingsInvalid) as refused:
        parse_settings({"hooks": hook})
    assert refused.value.details["key"] == key


# -- item 4: where hooks run, and waitDueSoon once whoever enforces deadlines ---------------------


def test_due_soon_starts_once_per_wait_whichever_of_two_enforcers_sweeps(repo: Repo) -> None:
    """Two Apps on one store stand for two hosts' serves: each sweeps twice; the hook ran once.
    Fails on the main of issue 30 (no waitDueSoon hook, nothing sweeps for it)."""
    _review(repo, '  waitDueSoon: {command: "echo $SWAMP_WAIT_ID >> due.log", before: 10m}\n', timeout=300)
    _review(repo, '  waitDueSoon: {command: "echo $SWAMP_WAIT_ID >> due.log", before: 10m}\n', "later", 3600)
    ran = run_swamp("workflow", "run", "review", "--json", cwd=repo.root).json
    soon = ran["waits"][0]["waitId"]
    run_swamp("workflow", "run", "later", "--json", cwd=repo.root)
    from swamp.app.context import App
    from swamp.app.deadlines import start_due_soon_hooks

    started = []
    for _ in range(2):
        for host in (App.open(str(repo.root)), App.open(str(repo.root))):
            started += [due.wait_id for due in start_due_soon_hooks(host)]
    assert started == [soon]
    eventually(lambda: (repo.root / "due.log").exists())
    time.sleep(0.3)  # a second start would have landed by now (the first one did)
    assert repo.lines("due.log") == [soon]
    record = run_swamp("workflow", "history", "get", ran["id"], "--json", cwd=repo.root).json
    assert record["jobs"][0]["steps"][0]["wait"]["dueSoonAt"].endswith("Z")


def test_the_readme_says_where_hooks_run_with_several_hosts() -> None:
    """Fails on the main of issue 30: only spec/store.md said it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    hosts = readme.split("## Several hosts, one database", 1)[1].split("\n## ", 1)[0]
    assert "host that settles the wait" in hosts or "on the host whose" in hosts
    assert "waitExpired" in hosts
    assert "every host" in hosts
