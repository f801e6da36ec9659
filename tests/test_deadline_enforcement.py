"""Issue 30's done-when: following the README, a 10-second wait fails at its deadline with no command
typed after `swamp serve --auto-continue --enforce-deadlines` was started (what `swamp service
install` runs), and `watch` shows it happen. Real processes, the real clock: the run is started
with SWAMP_NOW six seconds in the past, so its 10-second deadline is four real seconds away; the
outcome is polled for with a bound (watch's own --timeout), never slept for."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
from pathlib import Path

import pytest
from helpers import SWAMP, clean_env, make_repo

WORKFLOW = """\
id: 0e0e0e0e-0000-4000-8000-000000000930
name: qa
jobs:
  - name: main
    steps:
      - {name: verdict, task: {type: wait_for_signal, timeout: 10s}}
      - name: ship
        dependsOn: [{step: verdict, condition: {type: succeeded}}]
        task: {type: model_method, modelIdOrName: sh, methodName: execute, inputs: {run: "echo shipped"}}
"""


def test_a_ten_second_wait_fails_at_its_deadline_by_itself_and_watch_shows_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.write_workflow("qa", raw=WORKFLOW)
    env = {"SWAMP_STORE_URL": "", "SWAMP_NOW": ""}
    serve = subprocess.Popen(
        [str(SWAMP), "serve", "--auto-continue", "--enforce-deadlines"],
        cwd=repo.root,
        env=clean_env(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert serve.stdin is not None and serve.stdout is not None
        serve.stdin.write('{"type": "serve.status", "id": "s"}\n')  # answered: it has announced itself
        serve.stdin.flush()
        assert '"enforceDeadlines": true' in serve.stdout.readline().replace('":true', '": true')

        waits = repo.swamp("workflow", "waits", "--json", env=env)
        assert waits.json["deadlineEnforced"] is True, waits

        opened = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=6)
        started = repo.swamp("workflow", "run", "qa", "--json", env={**env, "SWAMP_NOW": opened.isoformat()})
        assert started.json["status"] == "suspended" and started.json["deadlineEnforced"] is True, started
        run_id = started.json["id"]

        # Nothing is typed from here on: the watch only looks.
        watched = repo.swamp("workflow", "watch", run_id, "--timeout", "60", env=env)
        assert watched.code == 1, watched
        lines = watched.out
        assert "Deadlines are enforced: a serve fails each wait at its deadline" in lines
        assert "main │ ⏰ verdict: deadline passed at " in lines
        assert "A swamp serve --enforce-deadlines fails the wait now (wait_timeout)." in lines
        assert "verdict: timed out" in lines
        assert lines.index("deadline passed") < lines.index("timed out")

        record = repo.swamp("workflow", "history", "get", run_id, "--json", env=env).json
        steps = {s["name"]: s for s in record["jobs"][0]["steps"]}
        assert record["status"] == "failed"
        assert steps["verdict"]["reason"] == "wait_timeout"
        assert steps["verdict"]["wait"]["outcome"] == "timed_out"
        assert steps["ship"]["status"] == "pending"  # never reached: the run failed at the wait
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=30)
    after = repo.swamp("workflow", "waits", "--json", env=env)
    assert after.json["deadlineEnforced"] is False, after  # the serve is gone, and so is its announcement
    assert os.path.exists(repo.root / ".swamp" / "locks" / "deadlines.lock")


def _announcement_lives_and_ends(app: object) -> None:
    from swamp.app.announcements import ENFORCER, deadlines_enforced

    assert deadlines_enforced(app) is False  # type: ignore[arg-type]
    first = app.store.announce(ENFORCER)  # type: ignore[attr-defined]
    second = app.store.announce(ENFORCER)  # type: ignore[attr-defined]  # several serves at once
    assert deadlines_enforced(app) is True  # type: ignore[arg-type]
    first.release()
    assert deadlines_enforced(app) is True  # type: ignore[arg-type]
    second.renew()
    second.release()
    assert deadlines_enforced(app) is False  # type: ignore[arg-type]


def test_the_announcement_on_files_is_a_shared_lock(tmp_path: Path) -> None:
    """SERVE-047, WAIT-092: held by each serve at once, gone with the last; reading writes nothing."""
    from swamp.app.context import App

    repo = make_repo(tmp_path / "repo")
    _announcement_lives_and_ends(App.open(str(repo.root)))
    lock = repo.root / ".swamp" / "locks" / "deadlines.lock"
    assert lock.stat().st_size == 0


@pytest.mark.skipif(
    not os.environ.get("SWAMP_TEST_PG", "").startswith("postgresql://"), reason="SWAMP_TEST_PG is not set"
)
def test_the_announcement_on_postgresql_is_a_shared_advisory_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uuid

    from swamp.app.context import App

    address = os.environ["SWAMP_TEST_PG"]
    schema = f"t_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv(
        "SWAMP_STORE_URL", f"{address}{'&' if '?' in address else '?'}options=-csearch_path%3D{schema}"
    )
    repo = make_repo(tmp_path / "repo")
    _announcement_lives_and_ends(App.open(str(repo.root)))
