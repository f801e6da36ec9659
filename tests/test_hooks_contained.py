"""Hooks end with their shell: nothing a hook started outlives it (HOOK-014, HOOK-015)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import Site
from test_hooks import alive, eventually

from swamp.hooks.contain import CGROUP_ENV, Cage
from swamp.hooks.supervisor import run_job

WAIT_FOR_PID = "while [ ! -s bg.pid ]; do sleep 0.01; done"


def cgroups_offered() -> bool:
    cage = Cage.make()
    if cage is None:
        return False
    cage.remove()
    return True


@pytest.mark.parametrize("contained", ["cgroup", "process-group"])
def test_what_a_hook_left_running_is_killed_when_its_shell_exits(
    site: Site, monkeypatch: pytest.MonkeyPatch, contained: str
) -> None:
    if contained == "cgroup" and not cgroups_offered():
        pytest.skip("this machine offers no writable cgroup v2")
    if contained == "process-group":
        monkeypatch.setenv(CGROUP_ENV, "off")
    entry = run_job(site.root, site.job("sleep 300 & echo $! > bg.pid"))
    assert entry["code"] == "ok"
    background = int((site.root / "bg.pid").read_text())
    eventually(lambda: not alive(background), limit=10)
    assert site.trail()[0]["code"] == "ok"


def test_a_process_that_leaves_the_hooks_process_group_ends_with_the_hook_too(site: Site) -> None:
    if not cgroups_offered():
        pytest.skip("this machine offers no writable cgroup v2: spec/hooks.md says what remains possible")
    command = f"setsid sh -c 'echo $$ > bg.pid; exec sleep 300' & {WAIT_FOR_PID}"
    assert run_job(site.root, site.job(command))["code"] == "ok"
    escaped = int((site.root / "bg.pid").read_text())
    assert not alive(escaped)  # gone before the outcome was audited, not some time later


def test_a_process_that_leaves_the_process_group_of_a_hook_past_its_timeout_is_killed(site: Site) -> None:
    if not cgroups_offered():
        pytest.skip("this machine offers no writable cgroup v2: spec/hooks.md says what remains possible")
    command = f"setsid sh -c 'echo $$ > bg.pid; exec sleep 300' & {WAIT_FOR_PID}; sleep 60"
    assert run_job(site.root, site.job(command, timeout=1))["code"] == "hook_timed_out"
    assert not alive(int((site.root / "bg.pid").read_text()))


def test_a_hook_leaves_no_cgroup_behind(site: Site) -> None:
    from swamp.hooks.contain import cgroup_dir

    if not cgroups_offered():
        pytest.skip("this machine offers no writable cgroup v2")
    folder = cgroup_dir()
    assert folder is not None
    before = {p.name for p in Path(folder).iterdir() if p.name.startswith("swamp-hook-")}
    run_job(site.root, site.job("sleep 300 & true"))
    after = {p.name for p in Path(folder).iterdir() if p.name.startswith("swamp-hook-")}
    assert after <= before


def test_a_cgroup_the_hook_cannot_enter_is_given_up_and_the_hook_still_runs_once(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not cgroups_offered():
        pytest.skip("this machine offers no writable cgroup v2")
    made: list[Cage] = []
    make = Cage.make

    def recording() -> Cage | None:
        cage = make()
        if cage is not None:
            made.append(cage)
        return cage

    def refused(self: Cage) -> None:
        raise PermissionError("the move into the cgroup is refused")

    monkeypatch.setattr(Cage, "make", staticmethod(recording))
    monkeypatch.setattr(Cage, "enter", refused)
    entry = run_job(site.root, site.job("echo once >> ran; sleep 300 & echo $! > bg.pid"))
    assert entry["code"] == "ok" and (site.root / "ran").read_text() == "once\n"
    eventually(lambda: not alive(int((site.root / "bg.pid").read_text())), limit=10)  # its group still
    assert made and not Path(made[0].path).exists()
