"""The runner plugin end to end: pytester runs `pytest conformance` against small fakes."""

import json
import os
import shlex
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

CONFORMANCE = Path(__file__).resolve().parents[1]
SCHEMAS = CONFORMANCE.parent / "spec" / "schemas"
FAKE = CONFORMANCE / "tests" / "fake_impl.py"
GOOD = CONFORMANCE / "tests" / "good_impl.py"


def command(*words):
    return shlex.join([sys.executable, *map(str, words)])


@pytest.fixture
def suite(pytester, monkeypatch):
    """A copy of the runner (no scenarios but _selftest) with its own rootdir."""
    # inner runs need no third-party plugins (some, like hypothesis, are slow to import)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    ignore = shutil.ignore_patterns("__pycache__")
    target = pytester.path / "conformance"
    shutil.copytree(CONFORMANCE / "runner", target / "runner", ignore=ignore)
    shutil.copytree(
        CONFORMANCE / "scenarios" / "_selftest", target / "scenarios" / "_selftest", ignore=ignore
    )
    shutil.copy(CONFORMANCE / "conftest.py", target)
    shutil.copy(CONFORMANCE / "scenario.schema.json", target)
    shutil.copytree(SCHEMAS, pytester.path / "spec" / "schemas")
    pytester.makeini("[pytest]\n")
    return pytester


def scenario(pytester, name, text):
    path = pytester.path / "conformance" / "scenarios" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def run(pytester, impl, *args):
    return pytester.runpytest("conformance", "--impl", impl, "-p", "no:cacheprovider", *args)


def test_wrong_implementation_fails_the_selftest_scenarios_readably(suite):
    result = run(suite, command(FAKE), "--include-selftest")
    result.assert_outcomes(failed=4)
    out = result.stdout.str()
    # the CLI refusal: step, argv, expected vs actual, and the process output
    assert "steps[0] (run): exit code: expected 3, got 0 (+2 more)\n  scenario: selftest-cli-error" in out
    assert "fake_impl.py workflow history get run_missing --json" in out
    assert "- exit code: expected 3, got 0" in out
    assert "- json $.error: missing key" in out
    assert "stdout:\n  | {}" in out
    # ... and the document is checked against the schema of what it claims to be (exit 0: a result)
    assert (
        "- the --json document of `workflow history get` does not match "
        "results.schema.json#/$defs/workflow.history.get: 'formatVersion' is a required property (at /)"
    ) in out
    # a result frame's data is checked against its request type's document
    assert (
        "steps[0] (jsonl): frame #0 does not match frame.schema.json: 'formatVersion' is a required "
        "property (at /payload/data, checked as results.schema.json#/$defs/workflow.history.get)"
    ) in out
    # the JSON-lines step: the unmatched frame, the candidates, what was sent and received
    assert "- expected frame [0] matched no actual frame" in out
    assert 'expected frame [2] matched no actual frame: {"type": "error", "id": null' in out
    assert "no actual frame has id null" in out
    assert '$.type: expected "error", got "workflow.history.get"' in out
    assert "  | this line is not json" in out
    assert '  #1 {"type": "done", "id": "r1"}' in out
    # the roundtrip stops at its first step
    assert "steps[0] (run: start a run): json $.id: missing key" in out
    assert "LOGNAME=alice SWAMP_ACTOR=alice SWAMP_NOW=2026-01-01T00:00:00Z USER=alice" in out
    assert "repo dir (kept): " in out


def test_right_implementation_passes_the_selftest_scenarios(suite):
    result = run(suite, command(GOOD), "--include-selftest")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["conformance impl: *good_impl.py"])


def test_selftest_scenarios_are_skipped_without_the_option(suite):
    result = run(suite, command(GOOD))
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_requirement_ids_select_scenarios_with_k(suite):
    result = run(suite, command(GOOD), "--include-selftest", "-k", "SELFTEST-002")
    result.assert_outcomes(passed=1, deselected=3)


def test_relative_impl_paths_are_taken_from_the_invocation_dir(suite):
    shutil.copy(GOOD, suite.path / "impl.py")
    result = run(suite, f"{shlex.quote(sys.executable)} ./impl.py", "--include-selftest")
    result.assert_outcomes(passed=4)


def test_environment_contract(suite, monkeypatch):
    monkeypatch.setenv("SWAMP_LEAK", "from the runner")
    monkeypatch.setenv("PYTHONWARNINGS", "ignore")
    scenario(
        suite,
        "env.yaml",
        """\
        id: env-contract
        title: The process sees a clean environment
        requirements: [ENV-001]
        features: [core]
        env: {SWAMP_NOW: "2026-01-01T00:00:00Z"}
        steps:
          - run: [debug, env]
            stdin: "literal $${x}"
            expect:
              json:
                env:
                  SWAMP_LEAK: {$absent: true}
                  PYTHONWARNINGS: {$absent: true}
                  SWAMP_NOW: "2026-01-01T00:00:00Z"
                  USER: conformance
                  LOGNAME: conformance
                  NO_COLOR: "1"
                  TERM: dumb
                  LANG: C.UTF-8
                  LC_ALL: C.UTF-8
                  HOME: {$regex: "/home$", $capture: home}
                  PATH: {$type: string}
                cwd: {$regex: "/repo$"}
                user: conformance
                stdin: "literal $${x}"
          - run: [debug, env]
            user: bob
            env: {TERM: null, COUNT: 3, SWAMP_NOW: "2027-01-01T00:00:00Z"}
            expect:
              json:
                env: {TERM: {$absent: true}, COUNT: "3", HOME: "${home}", USER: bob,
                      SWAMP_NOW: "2027-01-01T00:00:00Z"}
                user: bob
          - files:
              - {path: .swamp.yaml}
        """,
    )
    result = run(suite, command(GOOD))
    result.assert_outcomes(passed=1)


def test_timeout_is_a_failure_with_a_clear_message(suite):
    scenario(
        suite,
        "slow.yaml",
        """\
        id: slow
        title: A hanging process is killed
        requirements: [ENV-002]
        features: [core]
        init: false
        steps:
          - run: [debug, sleep, "30"]
            timeout: 0.5
        """,
    )
    result = run(suite, command(GOOD))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*timed out after 0.5 s waiting for the process to finish (the process was killed)*"]
    )
    assert result.duration < 15


def test_missing_implementation_is_a_clear_failure(suite):
    result = run(suite, "/nonexistent/swamp-impl", "--include-selftest", "-k", "SELFTEST-001")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(
        ["*could not start the implementation '/nonexistent/swamp-impl repo init .'*"]
    )


def test_frames_are_validated_against_the_frame_schema(suite):
    impl = suite.path / "bad_frames.py"
    impl.write_text(
        "import json, sys\n"
        "sys.stdin.read()\n"
        'print(json.dumps({"type": "done", "id": "r1", "extra": 1}))\n'
        'print(json.dumps({"type": "error", "id": "r1", "error": {"code": "Bad-Code", "message": "x"}}))\n'
        "print('not json')\n"
    )
    scenario(
        suite,
        "frames.yaml",
        """\
        id: frames
        title: Frames must follow the schema
        requirements: [PROTO-001]
        features: [core]
        init: false
        steps:
          - jsonl: [{type: workflow.list, id: r1}]
        """,
    )
    result = run(suite, command(impl))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "frame #0 does not match frame.schema.json: Additional properties" in out
    assert "checked as frame.schema.json#/$defs/done" in out
    assert "frame #1 does not match frame.schema.json: 'Bad-Code' is not one of [" in out
    assert "(at /error/code, checked as errors.schema.json#/$defs/errorBody)" in out
    assert "stdout line 3 is not a JSON frame" in out
    assert "  !! not json" in out


def test_files_step_failure_lists_the_repo(suite):
    scenario(
        suite,
        "files.yaml",
        """\
        id: files
        title: File checks report what is there
        requirements: [FILE-001]
        features: [core]
        files: {workflows/workflow-a.yaml: "name: a\\n", run.sh: "echo $${HOME}"}
        steps:
          - files:
              - {path: run.sh, text: "echo $${HOME}"}
              - {glob: "workflows/*.yaml", count: 2}
              - {path: workflows/workflow-a.yaml, text: {$contains: "name: b"}}
              - {path: nothing.json, json: {}}
        """,
    )
    result = run(suite, command(GOOD))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "- files[0]" not in out  # $${HOME} was written and compared as ${HOME}
    assert "- files[1] glob 'workflows/*.yaml': expected count 2, got 1: ['workflows/workflow-a.yaml']" in out
    assert '- files[2] workflows/workflow-a.yaml text: expected a string containing "name: b"' in out
    assert "- files[3] path 'nothing.json': expected it to exist" in out
    assert "files in the repo dir:\n  | .swamp.yaml" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id: x\ntitle: [unclosed\n", "the scenario is not valid YAML"),
        (
            "id: x\ntitle: t\nrequirements: [A-001]\nfeatures: [core]\nsteps: [{run: [a]}]\n",
            "'A-001' does not match",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\n"
            "features: [core]\nsteps: [{run: [a], expect: {exits: 0}}]\n",
            "'exits' was unexpected",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\nfeatures: [core]\nsteps: [{run: [a], files: []}]\n",
            "exactly one of `run`",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\nfeatures: [core]\nsteps: [{run: ['${nope}']}]\n",
            "unknown capture(s) ${nope}",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\n"
            "features: [core]\nsteps: [{run: [a], expect: {json: {$regexp: a}}}]\n",
            "unknown matcher",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\n"
            "features: [core]\nsteps: [{run: [a], expect: {stdout: {a: 1}}}]\n",
            "got an object",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\nfeatures: [core]\nid: y\nsteps: [{run: [a]}]\n",
            "found duplicate key 'id'",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\nfeatures: [core]\nsteps: [{write: {../out: x}}]\n",
            "must be a relative path",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\nfeatures: [core]\nfiles: {a: x}\n"
            "steps: [{files: [{path: a, unchanged: rec}]}, {files: [{path: a, snapshot: rec}]}]\n",
            "unchanged: 'rec' names no snapshot taken earlier",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\nfeatures: [core]\n"
            "steps: [{files: [{glob: '*', snapshot: rec}]}]\n",
            "steps[0].files[0]",
        ),
        (
            "id: x\ntitle: t\nrequirements: [AB-001]\nfeatures: [core]\n"
            "steps: [{files: [{path: a, exists: false, snapshot: rec}]}]\n",
            "steps[0].files[0].exists",
        ),
    ],
)
def test_broken_scenarios_are_collection_errors(suite, text, message):
    path = scenario(suite, "broken.yaml", text)
    result = run(suite, command(GOOD))
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert f"broken scenario {path}" in out
    assert message in out


def test_captures_flow_between_steps_in_order(suite):
    scenario(
        suite,
        "order.yaml",
        """\
        id: order
        title: A capture is usable only in later steps
        requirements: [CAP-001]
        features: [core]
        steps:
          - run: [workflow, run, a, --json]
            expect: {json: {id: {$capture: first}}}
          - run: [workflow, run, b, --json]
            expect: {json: {id: {$not: "${first}"}, workflowName: b}}
          - run: [workflow, history, get, "${first}", --json]
            expect: {json: {workflowName: a}}
        """,
    )
    run(suite, command(GOOD)).assert_outcomes(passed=1)


def test_raw_pieces_send_long_text_and_the_schema_takes_them(suite):
    from swamp_conformance_runner.scenario import raw_text

    assert raw_text("as is\n") == "as is\n"
    assert raw_text(["a", {"repeat": "xy", "times": 3}, "\n"]) == "axyxyxy\n"
    scenario(
        suite,
        "raw.yaml",
        """\
        id: raw-pieces
        title: raw may be pieces
        requirements: [ENV-001]
        features: [core]
        steps:
          - jsonl: []
            raw: [{repeat: "x", times: 5}, "\\n"]
            expect: {exit: {$any: true}}
        """,
    )
    run(suite, command(GOOD)).assert_outcomes(passed=1)
    scenario(
        suite,
        "raw.yaml",
        """\
        id: raw-pieces
        title: raw pieces are checked
        requirements: [ENV-001]
        features: [core]
        steps:
          - jsonl: []
            raw: [{repeat: "x"}]
        """,
    )
    assert "times" in str(run(suite, command(GOOD)).stdout)


# --- every JSON document is validated against spec/schemas (index.json says which schema) --------

DOCUMENTS_IMPL = """\
import json, os, sys
from pathlib import Path

args = sys.argv[1:]
mode = os.environ.get("IMPL_MODE", "right")
run = {
    "formatVersion": 1, "id": "run-1", "workflowId": "wf-1", "workflowName": "hello",
    "status": "succeeded", "createdAt": "2026-01-01T00:00:00.000Z", "jobs": [],
}
if args == ["repo", "init", "."]:
    Path(".swamp/workflow-runs/wf-1").mkdir(parents=True)
    record = dict(run, status="finished") if mode == "bad-record" else run
    Path(".swamp/workflow-runs/wf-1/run-1.json").write_text(json.dumps(record))
    sys.exit(0)
if "waits" in args:
    print(json.dumps({"waits": [], "extra": 1} if mode == "bad-result" else {"waits": []}))
elif "teleport" in args:
    print(json.dumps({"teleported": True}))
elif "cancel" in args:  # a refusal
    code = "run_misplaced" if mode == "bad-error" else "run_not_found"
    print(json.dumps({"error": {"code": code, "message": "No run x; list runs with swamp workflow history"}}))
    sys.exit(3)
elif "run" in args:  # a failed run exits 1 with its result, not an error
    print(json.dumps(dict(run, status="failed", path="p", superseded=[])))
    sys.exit(1)
"""

DOCUMENTS_SCENARIO = """\
id: documents
title: Every document is checked against its schema
requirements: [CLI-010]
features: [core]
steps:
  - run: [--repo-dir, ., workflow, waits, --json]
  - run: [workflow, cancel, hello, --json]
    expect: {exit: 3}
  - run: [workflow, run, hello, --json]
    expect: {exit: 1}
  - files:
      - {glob: ".swamp/workflow-runs/*/*.json", count: 1}
"""


def documents_suite(suite):
    impl = suite.path / "documents_impl.py"
    impl.write_text(DOCUMENTS_IMPL)
    scenario(suite, "documents.yaml", DOCUMENTS_SCENARIO)
    return command(impl)


def test_documents_that_match_their_schemas_pass(suite):
    result = run(suite, documents_suite(suite))
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (
            "bad-result",
            "steps[0] (run): the --json document of `workflow waits` does not match "
            "results.schema.json#/$defs/workflow.waits: Additional properties are not allowed "
            "('extra' was unexpected) (at /)",
        ),
        (
            "bad-error",
            "steps[1] (run): the error document does not match errors.schema.json#/$defs/errorDocument: "
            "'run_misplaced' is not one of [",
        ),
        (
            "bad-record",
            "steps[3] (files): files[0] .swamp/workflow-runs/wf-1/run-1.json: does not match "
            "run-record.schema.json: 'finished' is not one of [",
        ),
    ],
)
def test_a_document_that_does_not_match_its_schema_fails_the_step(suite, mode, message):
    impl = documents_suite(suite)
    result = suite.runpytest(
        "conformance", "--impl", f"env IMPL_MODE={mode} {impl}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)
    assert message in result.stdout.str()


def test_a_json_command_without_an_index_entry_fails(suite):
    impl = documents_suite(suite)
    scenario(
        suite,
        "documents.yaml",
        """\
        id: documents
        title: A command the index does not know
        requirements: [CLI-010]
        features: [core]
        steps:
          - run: [workflow, teleport, hello, --json]
        """,
    )
    result = run(suite, impl)
    result.assert_outcomes(failed=1)
    assert (
        "steps[0] (run): no schema for the output of `workflow teleport hello`: "
        "index.json has no `commands` entry for it"
    ) in result.stdout.str()


def test_a_file_the_scenario_wrote_itself_is_not_checked_but_one_the_implementation_rewrote_is(suite):
    impl = suite.path / "touch_impl.py"
    impl.write_text(
        "import sys\nfrom pathlib import Path\n"
        "if sys.argv[1:] == ['rewrite']:\n"
        "    Path('.swamp/workflow-runs/wf/r.json').write_text('{\"formatVersion\":9}')\n"
    )
    scenario(
        suite,
        "written.yaml",
        """\
        id: written
        title: A record the scenario planted is its own
        requirements: [RUN-010]
        features: [core]
        init: false
        files:
          .swamp/workflow-runs/wf/r.json: '{"formatVersion": 9}'
        steps:
          - files: [{path: .swamp/workflow-runs/wf/r.json, json: {formatVersion: 9}}]
          - run: [rewrite]
          - files: [{path: .swamp/workflow-runs/wf/r.json, json: {formatVersion: 9}}]
        """,
    )
    result = run(suite, command(impl))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "steps[2] (files): files[0] .swamp/workflow-runs/wf/r.json: does not match run-record" in out
    assert "steps[0]" not in out.split("problems:")[0]


def test_schemas_option_points_at_another_folder(suite):
    impl = documents_suite(suite)
    other = suite.path / "other-schemas"
    shutil.copytree(suite.path / "spec" / "schemas", other)
    index = json.loads((other / "index.json").read_text())
    del index["commands"]["workflow waits"]
    (other / "index.json").write_text(json.dumps(index))
    result = run(suite, impl, "--schemas", str(other))
    result.assert_outcomes(failed=1)
    assert "no schema for the output of `. workflow waits`" in result.stdout.str()


def test_unchanged_passes_for_an_untouched_file_and_names_what_differs(suite):
    scenario(
        suite,
        "unchanged.yaml",
        """\
        id: unchanged
        title: A snapshot taken, a file rewritten
        requirements: [FILE-002]
        features: [core]
        files: {record.json: "{\\"a\\": 1}\\n", other.json: "{}"}
        steps:
          - files: [{path: record.json, snapshot: rec}, {path: other.json, snapshot: other}]
          - run: [workflow, run, a, --json]
          - files: [{path: record.json, unchanged: rec}, {path: other.json, unchanged: other}]
          - write: {record.json: "{\\"a\\": 22}\\n"}
          - files: [{path: other.json, unchanged: other}, {path: record.json, unchanged: rec}]
        """,
    )
    result = run(suite, command(GOOD))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "steps[4] (files): files[1] path 'record.json': changed since snapshot 'rec': bytes differ" in out
    assert "size 9 then, 10 now" in out
    assert "files[0]" not in out.split("problems:")[1].split("files in the repo dir")[0]


def test_a_same_bytes_rewrite_shows_as_a_new_inode_or_mtime(tmp_path):
    from swamp_conformance_runner.execute import FileSnapshot

    path = tmp_path / "record.json"
    path.write_bytes(b'{"a": 1}')
    then = FileSnapshot.of(path)
    assert then is not None
    assert then.differences(FileSnapshot.of(path)) == []
    swap = tmp_path / ".record.json.swap"
    swap.write_bytes(b'{"a": 1}')
    os.utime(swap, ns=(then.mtime_ns, then.mtime_ns))
    os.replace(swap, path)  # the same bytes and mtime through a swap file: only the inode tells
    assert [d.split()[0] for d in then.differences(FileSnapshot.of(path))] == ["inode"]
    now = FileSnapshot.of(path)
    path.write_bytes(b'{"a": 1}')  # in place: the same inode and bytes, a later mtime
    os.utime(path, ns=(now.mtime_ns + 1000, now.mtime_ns + 1000))
    assert [d.split()[0] for d in now.differences(FileSnapshot.of(path))] == ["mtime_ns"]
    link = tmp_path / "link.json"
    link.symlink_to(path)
    assert FileSnapshot.of(link) is None  # a symlink is not the file the scenario named


@pytest.mark.parametrize(("code", "outcome"), [(130, "passed"), (143, "passed"), (3, "failed")])
def test_a_run_stopped_by_a_signal_prints_a_result_checked_as_one(suite, code, outcome):
    """CLI-012, RUN-027: exit 130/143 with a run document is a result; exit 3 with it is not."""
    impl = suite.path / "stopped_impl.py"
    impl.write_text(
        "import json, sys\n"
        "print(json.dumps({'formatVersion': 1, 'id': 'run-1', 'workflowId': 'wf-1', 'workflowName': 'w',"
        " 'status': 'failed', 'createdAt': '2026-01-01T00:00:00.000Z', 'jobs': [], 'path': 'p',"
        " 'superseded': []}))\n"
        f"sys.exit({code})\n"
    )
    scenario(
        suite,
        "stopped.yaml",
        f"""\
        id: stopped
        title: A run stopped by a signal
        requirements: [RUN-027]
        features: [core]
        init: false
        steps:
          - run: [workflow, run, w, --json]
            expect: {{exit: {code}, json: {{status: failed}}}}
        """,
    )
    result = run(suite, command(impl))
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        assert "the error document does not match" in result.stdout.str()


# ---------------------------------------------------------------- --env-hook (FORMAT.md §4)

ENV_IMPL = (
    "import json, os, sys\n"
    "lines = ''.join(f'{k}={v}\\n' for k, v in sorted(os.environ.items()))\n"
    "if sys.argv[1:] == ['repo', 'init', '.']:\n"
    "    open('init-env.txt', 'w').write(lines)\n"
    "elif sys.argv[1:] == ['--jsonl']:\n"
    "    error = {'code': 'invalid_request', 'message': os.environ.get('HOOKED', '-')}\n"
    "    print(json.dumps({'type': 'error', 'id': None, 'error': error}))\n"
    "    print(json.dumps({'type': 'done', 'id': None}))\n"
    "elif sys.argv[1:] == ['serve']:\n"
    "    sys.stderr.write(lines)\n"
    "else:\n"
    "    sys.stdout.write(lines)\n"
)

HOOKED_SCENARIO = """\
    id: hooked
    title: The hook's variables reach every process of the scenario
    requirements: [ENV-003]
    features: [core]
    env: {OVERRIDE: scenario}
    steps:
      - files:
          - {path: init-env.txt, text: {$contains: "HOOKED=yes a=b\\n"}}
      - run: [env]
        expect:
          stdout:
            $contains: "HOOKED=yes a=b\\n"
            $regex: "(^|\\\\n)SCENARIO=hooked\\\\n[\\\\s\\\\S]*STORE=postgresql:///s\\\\?options=-csearch_path%3Dc_x\\\\n"
      - run: [env]
        expect:
          stdout:
            $contains: "FROM_RUNNER=the runner's own\\n"
            $regex: "(^|\\\\n)OVERRIDE=scenario\\\\n"
      - jsonl: []
        expect: {frames: [{type: error, error: {message: "yes a=b"}}, {type: done}]}
      - session: {args: [serve]}
        steps:
          - expect: {exit: 0, stderr: {$contains: "HOOKED=yes a=b\\n"}}
    """


def env_hook(pytester, body):
    hook = pytester.path / "hook.sh"
    hook.write_text("#!/bin/sh\n" + body)
    hook.chmod(0o755)
    return "./hook.sh"


def test_env_hook_variables_reach_every_process_of_the_scenario(suite, monkeypatch):
    """The hook runs with the runner's environment and the scenario id; what it prints is in the
    environment of repo init, run and jsonl steps and a session; the scenario's env wins."""
    monkeypatch.setenv("SWAMP_TEST_PG", "the runner's own")
    impl = suite.path / "env_impl.py"
    impl.write_text(ENV_IMPL)
    scenario(suite, "hooked.yaml", HOOKED_SCENARIO)
    hook = env_hook(
        suite,
        'echo "HOOKED=yes a=b"; echo; echo "SCENARIO=$1"; echo "OVERRIDE=hook"\n'
        'echo "STORE=postgresql:///s?options=-csearch_path%3Dc_x"; echo "FROM_RUNNER=$SWAMP_TEST_PG"\n',
    )
    result = run(suite, command(impl), "--env-hook", hook)
    result.assert_outcomes(passed=1)
    without = run(suite, command(impl))
    without.assert_outcomes(failed=1)
    assert 'files[0] init-env.txt text: expected a string containing "HOOKED=yes a=b' in without.stdout.str()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("echo 'no cluster at /x' >&2; exit 3\n", "exited 3; its stderr:\n  | no cluster at /x"),
        (
            "echo HOOKED=yes; echo 'not a variable'\n",
            "line 2 of its stdout is not NAME=VALUE: 'not a variable'",
        ),
    ],
)
def test_a_failing_env_hook_fails_the_scenario_before_anything_runs(suite, body, message):
    marker = suite.path / "impl-ran"
    impl = suite.path / "env_impl.py"
    impl.write_text(f"open({str(marker)!r}, 'a').write('ran')\n" + ENV_IMPL)
    scenario(suite, "hooked.yaml", HOOKED_SCENARIO)
    result = run(suite, command(impl), "--env-hook", env_hook(suite, body))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "env hook: the environment hook" in out and "hook.sh hooked`" in out
    assert message in out
    assert "nothing of the scenario ran" in out
    assert not marker.exists()


def test_postgresql_store_scenarios_run_only_when_selected(suite):
    scenario(
        suite,
        "pg.yaml",
        """\
        id: pg-only
        title: Needs the run store to be PostgreSQL
        requirements: [ENV-004]
        features: [core, postgresql-store]
        init: false
        steps:
          - run: [debug, sleep, "0"]
        """,
    )
    by_default = run(suite, command(GOOD), "-rs")
    by_default.assert_outcomes(skipped=1)
    by_default.stdout.fnmatch_lines(["*needs feature(s) not selected: postgresql-store*"])
    chosen = run(suite, command(GOOD), "--features", "core,postgresql-store")
    chosen.assert_outcomes(passed=1)
    everything = run(suite, command(GOOD), "--include-selftest", "--features", "all,postgresql-store")
    everything.assert_outcomes(passed=5)  # `all`: jsonl and file-store of the selftests too


def test_id_folder_and_exclude_choose_scenarios(suite):
    by_id = run(
        suite, command(GOOD), "--include-selftest", "--id", "selftest-roundtrip,selftest-cli-error-shape"
    )
    by_id.assert_outcomes(passed=2, deselected=2)
    folder = run(
        suite,
        command(GOOD),
        "--include-selftest",
        "--folder",
        "_selftest",
        "--exclude",
        "selftest-same-bytes",
    )
    folder.assert_outcomes(passed=3, deselected=1)
    ids = ["--id", "selftest-roundtrip", "--id", "selftest-same-bytes"]
    repeated = run(suite, command(GOOD), "--include-selftest", *ids, "--exclude", "selftest-roundtrip")
    repeated.assert_outcomes(passed=1, deselected=3)
    # an exact id: `selftest-roundtrip` is no prefix match of anything else, and `roundtrip` matches nothing
    unknown = run(suite, command(GOOD), "--include-selftest", "--id", "roundtrip", "--folder", "_self")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(
        ["*--id roundtrip: no scenario has this id; --folder _self: no scenario is under this folder*"]
    )


def test_selection_rules():
    from swamp_conformance_runner.selection import Selection, split_values

    assert split_values(["a,b", " c ", ""]) == ("a", "b", "c")
    pairs = [("w-1", "waits/w-1.yaml"), ("x-1", "waitsx/x-1.yaml"), ("g-1", "gates/sub/g-1.yaml")]
    waits = Selection(folders=("waits",))
    assert [sid for sid, file in pairs if waits.chooses(sid, file)] == ["w-1"]
    nested = Selection(folders=("gates/sub/",), ids=("x-1",))
    assert [sid for sid, file in pairs if nested.chooses(sid, file)] == ["x-1", "g-1"]
    assert [sid for sid, file in pairs if Selection(excludes=("gates", "w-1")).chooses(sid, file)] == ["x-1"]
    assert Selection(ids=("w",), excludes=("wait",)).unknown(pairs) == [
        "--id w: no scenario has this id",
        "--exclude wait: no scenario has this id or is under this folder",
    ]


def test_results_record_a_digest_of_what_each_step_sent(suite, tmp_path):
    from swamp_conformance_runner.execute import sent_digest

    docs = []
    for n in (1, 2):  # two runs, two scenario directories: the same digests
        out = tmp_path / f"r{n}.json"
        result = run(
            suite, command(GOOD), "--id", "selftest-same-bytes", "--include-selftest", "--results-json", out
        )
        result.assert_outcomes(passed=1, deselected=3)
        docs.append(json.loads(out.read_text())["scenarios"]["selftest-same-bytes"]["sent"])
    assert docs[0] == docs[1]
    assert [s["step"] for s in docs[0]] == [
        "files", "steps[0] (run)", "steps[1] (run)", "steps[3] (jsonl)",
    ]  # fmt: skip
    big = "1" + "0" * 399
    env = [["BIG", big], ["E16", "1e+16"], ["NEGZERO", "-0.0"], ["TENTH", "0.1"], ["TWO", "2.0"]]
    record = ["run", ["debug", "argv", big, "2.0", "1e+16", "-0.0", "0.1"], env, None, ""]
    assert docs[0][1]["sha256"] == sent_digest(record, "/nowhere")
    # the placeholder stands for the scenario's directory wherever it appears
    assert sent_digest(["x", ["/w/x/repo"]], "/w/x") == sent_digest(["x", ["<scenario-dir>/repo"]], "/y")
    # the Node runner's sentDigest gives this for the same record (conformance/node/test/units.test.mjs)
    record = ["run", ["debug", "/w/x/repo", "é\u2028"], [["A", "1"], ["B", None]], None, "in\n"]
    assert sent_digest(record, "/w/x") == "a4d88cbf6e7935a16144121ab20722c263bdc809a8d59032c077081db21d678c"


INIT_COUNTING_IMPL = """\
import os, sys
if sys.argv[1:3] == ["repo", "init"]:
    open({log!r}, "a").write("init\\n")
    os.makedirs(".swamp/index", exist_ok=True)
    open(".swamp.yaml", "w").write("version: 1\\n")
    os.chmod(".swamp.yaml", 0o640)
print("{{}}")
"""


def test_reuse_init_runs_repo_init_once_per_environment_and_copies_its_tree(suite):
    """--reuse-init (FORMAT.md §4): scenarios with the same environment share one `repo init`,
    each getting its tree (modes kept); a scenario with another env runs its own."""
    log = suite.path / "inits.log"
    impl = suite.path / "init_impl.py"
    impl.write_text(INIT_COUNTING_IMPL.format(log=str(log)))
    body = """\
        id: {id}
        title: t
        requirements: [REPO-001]
        features: [core]
        {env}
        steps:
          - files:
              - {{path: .swamp.yaml, text: "version: 1\\n", mode: "0640"}}
              - {{path: .swamp/index}}
        """
    for n, env in enumerate(["", "", 'env: {SWAMP_NOW: "2026-01-01T00:00:00Z"}']):
        scenario(suite, f"init{n}.yaml", body.format(id=f"init-{n}", env=env))
    run(suite, command(impl), "--reuse-init").assert_outcomes(passed=3)
    assert log.read_text().count("init") == 2
    log.unlink()
    run(suite, command(impl)).assert_outcomes(passed=3)
    assert log.read_text().count("init") == 3
