"""The feature os-accounts in the pytest plugin: roles made into OS accounts, `as:` steps, the
static checks, and the skip when the runner is not root (README "Several OS accounts")."""

import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from swamp_conformance_runner.uses import features_used
from test_runner import GOOD, command, run, scenario, suite  # noqa: F401 - suite is a fixture

ROOT = os.geteuid() == 0

ACCOUNTS_SCENARIO = """\
id: accounts-roles
title: Each role is an OS account of its own, with its groups, sharing the repo
requirements: [RUN-008]
features: [core, os-accounts, jsonl]
accounts: [a, b]
groups: {rtg: [a]}
steps:
  - name: the runner's own account
    run: [debug, id]
    expect: {json: {account: "${account}", umask: "0000"}}
  - name: a, with the group rtg
    as: a
    run: [debug, id]
    expect:
      json: {account: "${account_a}", groups: {$contains: ["${group_rtg}", "${account_a}"]}, umask: "0000"}
  - name: b is no member of rtg
    as: b
    run: [debug, id]
    expect: {json: {account: "${account_b}", groups: ["${account_b}"]}}
  - name: a writes in the repo the runner made
    as: a
    run: [workflow, run, hello, --json]
    expect: {json: {initiatedBy: "${account_a}", id: {$capture: runId}}}
  - files:
      - {path: ".swamp/workflow-runs/hello/${runId}.json", mode: "0666"}
  - name: b reads it over --jsonl
    as: b
    jsonl: [{type: debug.id, id: r1}, {type: workflow.history.get, id: r2, payload: {run: "${runId}"}}]
    expect:
      frames:
        - {type: error, id: r1, error: {message: "${account_b}"}}
        - {type: workflow.history.get, id: r2, payload: {data: {initiatedBy: "${account_a}"}}}
  - session: {args: [--jsonl], as: b}
    steps:
      - send: [{type: debug.id, id: s1}]
      - expect: {frames: [{type: error, id: s1, error: {message: "${account_b}"}}]}
"""


@pytest.fixture
def shared_impl():
    """good_impl.py where other accounts can run it: a 0755 folder, the base interpreter (this
    checkout and its venv may be in a folder only root can enter)."""
    folder = Path(tempfile.mkdtemp(prefix="swamp-conformance-selftest-"))
    folder.chmod(0o755)
    shutil.copy(GOOD, folder / "good_impl.py")
    (folder / "good_impl.py").chmod(0o644)
    yield shlex.join([os.path.realpath(sys.executable), "-S", str(folder / "good_impl.py")])
    shutil.rmtree(folder, ignore_errors=True)


def test_os_accounts_scenarios_are_skipped_unless_selected(suite):  # noqa: F811
    scenario(suite, "roles.yaml", ACCOUNTS_SCENARIO)
    result = run(suite, command(GOOD), "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs feature(s) not selected: os-accounts*"])


def test_a_runner_that_is_not_root_skips_them_saying_why(suite, monkeypatch):  # noqa: F811
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    scenario(suite, "roles.yaml", ACCOUNTS_SCENARIO)
    result = run(suite, command(GOOD), "-rs", "--features", "all,os-accounts")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*os-accounts needs root: the runner makes the OS accounts*"])


@pytest.mark.skipif(not ROOT, reason="os-accounts needs root to make OS accounts")
def test_steps_run_as_the_accounts_of_their_roles(suite, shared_impl, tmp_path):  # noqa: F811
    scenario(suite, "roles.yaml", ACCOUNTS_SCENARIO)
    results = tmp_path / "results.json"
    result = run(suite, shared_impl, "--features", "all,os-accounts", "--results-json", str(results))
    result.assert_outcomes(passed=1)
    sent = {
        s["step"]: s["sha256"] for s in json.loads(results.read_text())["scenarios"]["accounts-roles"]["sent"]
    }
    # FORMAT.md §10: a process run `as:` a role has the role as a sixth element of its record;
    # the one without `as:` keeps its five
    digest = lambda record: hashlib.sha256(json.dumps(record, separators=(",", ":")).encode()).hexdigest()  # noqa: E731
    assert sent["steps[1] (run: a, with the group rtg)"] == digest(
        ["run", ["debug", "id"], [], None, "", "a"]
    )
    assert sent["steps[0] (run: the runner's own account)"] == digest(["run", ["debug", "id"], [], None, ""])


@pytest.mark.skipif(not ROOT, reason="os-accounts needs root to make OS accounts")
def test_a_step_as_another_account_that_does_not_match_fails_naming_setpriv(suite, shared_impl):  # noqa: F811
    scenario(
        suite,
        "roles.yaml",
        ACCOUNTS_SCENARIO.replace('account: "${account_b}", groups', 'account: "${account_a}", groups'),
    )
    result = run(suite, shared_impl, "--features", "all,os-accounts")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert 'steps[2] (run: b is no member of rtg): json $.account: expected "swpr-a", got "swpr-b"' in out
    assert "command: setpriv --reuid=swpr-b --regid=swpr-b --init-groups -- " in out
    kept = Path(out.split("repo dir (kept): ")[1].split()[0]).parent  # outside pytest's basetemp
    shutil.rmtree(kept, ignore_errors=True)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("    as: b\n    run: [debug, id]", "    as: c\n    run: [debug, id]"),
            "steps[2] (run: b is no member of rtg): as: 'c' is not an account of this scenario "
            "(accounts: a, b)",
        ),
        (("groups: {rtg: [a]}", "groups: {rtg: [a, z]}"), "groups.rtg: z is not in `accounts` (a, b)"),
        (("accounts: [a, b]", "accounts: [a, B]"), "accounts[1]: 'B' does not match"),
        (('"${group_rtg}"', '"${group_zz}"'), "unknown capture(s) ${group_zz}"),
    ],
)
def test_roles_are_checked_before_anything_runs(suite, change, message):  # noqa: F811
    scenario(suite, "roles.yaml", ACCOUNTS_SCENARIO.replace(*change))
    result = run(suite, command(GOOD), "--features", "all,os-accounts")
    assert result.ret == 2
    assert message in result.stdout.str()


def test_a_group_has_the_same_members_in_every_scenario(suite):  # noqa: F811
    scenario(suite, "a.yaml", ACCOUNTS_SCENARIO)
    scenario(suite, "b.yaml", ACCOUNTS_SCENARIO.replace("id: accounts-roles", "id: accounts-other")
             .replace("groups: {rtg: [a]}", "groups: {rtg: [a, b]}"))  # fmt: skip
    result = run(suite, command(GOOD), "--features", "all,os-accounts")
    assert result.ret == 2
    assert (
        "groups.rtg: members [a, b], but scenario accounts-roles gives the group [a]; a group's members "
        "are the same in every scenario"
    ) in result.stdout.str()


def test_as_and_accounts_need_the_feature():
    steps = [
        {"run": ["x"], "as": "a"},
        {"session": {"args": [], "as": "a"}, "steps": []},
        {"connect": "s.sock", "as": "chan"},
    ]
    data = {"accounts": ["a"], "steps": steps}
    assert features_used(data)["os-accounts"] == [
        "top-level `accounts:`",
        "step 1 runs `as:` another OS account",
        "step 2 runs `as:` another OS account",
    ]
    assert "os-accounts" not in features_used(
        {"steps": [{"session": {"args": []}, "steps": [{"connect": "s", "as": "c"}]}]}
    )


SERVED_SCENARIO = """\
id: accounts-served
title: The runner connects to a socket that an account of the scenario serves
requirements: [RUN-008]
features: [core, os-accounts, serve, unix-socket]
accounts: [svc]
steps:
  - session: {args: [serve, --socket, s.sock], as: svc}
    steps:
      - {connect: s.sock, as: c}
      - {send: [{type: echo, id: e1, payload: {n: 1}}], to: c}
      - {expect: {frames: [{type: echo, id: e1, payload: {data: {n: 1}}}]}, from: c}
"""


@pytest.mark.skipif(not ROOT, reason="os-accounts needs root to make OS accounts")
def test_the_runner_connects_to_a_socket_of_an_account_of_the_scenario(suite):  # noqa: F811
    folder = Path(tempfile.mkdtemp(prefix="swamp-conformance-selftest-"))
    try:
        folder.chmod(0o755)
        shutil.copy(GOOD.parent / "serve_impl.py", folder / "serve_impl.py")
        impl = shlex.join([os.path.realpath(sys.executable), "-S", str(folder / "serve_impl.py")])
        scenario(suite, "served.yaml", SERVED_SCENARIO)
        # serve_impl answers its own request types (echo), not swamp's: frames only, as test_sessions
        schemas = suite.path / "spec" / "schemas"
        frame = json.loads((schemas / "frame.schema.json").read_text())
        frame["$defs"]["result"].pop("allOf", None)
        shutil.rmtree(schemas)
        schemas.mkdir()
        (schemas / "frame.schema.json").write_text(json.dumps(frame))
        result = run(suite, impl, "--features", "all,os-accounts")
        result.assert_outcomes(passed=1)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
