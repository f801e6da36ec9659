"""Session steps end to end: pytester runs `pytest conformance` against serve_impl.py, a tiny server."""

import json
import shlex
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

CONFORMANCE = Path(__file__).resolve().parents[1]
SCHEMAS = CONFORMANCE.parent / "spec" / "schemas"
SERVER = CONFORMANCE / "tests" / "serve_impl.py"
IMPL = shlex.join([sys.executable, str(SERVER)])


@pytest.fixture
def suite(pytester, monkeypatch):
    """A copy of the runner (without scenarios) with its own rootdir."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    ignore = shutil.ignore_patterns("__pycache__")
    target = pytester.path / "conformance"
    shutil.copytree(CONFORMANCE / "runner", target / "runner", ignore=ignore)
    (target / "scenarios").mkdir()
    shutil.copy(CONFORMANCE / "conftest.py", target)
    shutil.copy(CONFORMANCE / "scenario.schema.json", target)
    # serve_impl speaks the frames' protocol with its own request types (echo, sleep), not swamp's:
    # its folder holds a frame schema without the per-type documents, and no index (frames only)
    (pytester.path / "spec" / "schemas").mkdir(parents=True)
    frame = json.loads((SCHEMAS / "frame.schema.json").read_text())
    frame["$defs"]["result"].pop("allOf", None)
    frame["$defs"]["event"]["properties"]["event"] = {"type": "object"}
    frame["$defs"]["errorBody"] = {"type": "object", "required": ["code", "message"]}
    (pytester.path / "spec" / "schemas" / "frame.schema.json").write_text(json.dumps(frame))
    pytester.makeini("[pytest]\n")
    return pytester


def scenario(pytester, text, name="session.yaml"):
    path = pytester.path / "conformance" / "scenarios" / name
    path.write_text(textwrap.dedent(text))
    return path


def run(pytester):
    return pytester.runpytest("conformance", "--impl", IMPL, "-p", "no:cacheprovider")


def test_a_session_keeps_one_process_across_exchanges(suite):
    scenario(
        suite,
        """\
        id: session-roundtrip
        title: One server process, two socket clients, commands in between, a signal at the end
        requirements: [SESS-001]
        features: [core]
        steps:
          - session: {args: [serve, --socket, s.sock], env: {MARK: "1"}}
            steps:
              - send:
                  - {type: sleep, id: r1, payload: {seconds: 1}}
                  - {type: echo, id: r2, payload: {n: 2}}
              - name: the quick request is answered while the slow one runs
                expect:
                  only: true
                  frames:
                    - {type: echo, id: r2, payload: {data: {n: {$capture: two}}}}
                    - {type: done, id: r2}
              - run: [count]
                expect: {json: {files: {$type: integer}}}
              - expect:
                  frames: [{type: sleep, id: r1, payload: {data: {seconds: 1}}}, {type: done, id: r1}]
                  only: true
              - connect: s.sock
                as: a
              - connect: s.sock
                as: b
              - send: [{type: echo, id: r1, payload: {from: a, n: "${two}"}}]
                to: a
              - send: [{type: echo, id: r1, payload: {from: b}}]
                to: b
              - expect: {frames: [{type: echo, id: r1, payload: {data: {from: b}}}], only: false}
                from: b
              - expect: {frames: [{type: echo, id: r1, payload: {data: {from: a, n: 2}}}]}
                from: a
              - send: [{type: touch, id: t1, payload: {path: made.txt, after: 0.3}}]
                to: a
              - files:
                  - {path: made.txt, text: "touched\\n"}
                timeout: 10
              - close: stdio
              - sleep: 0.2
              - name: EOF on stdin did not end a server with a socket
                send: [{type: log, id: l1, payload: {text: still here}}]
                to: b
              - expect: {stderr: {$contains: still here}}
              - signal: TERM
              - expect: {exit: 0, stderr: {$contains: "stopping on signal 15"}}
          - files:
              - {path: s.sock, exists: false}
          - run: [count]
            expect: {json: {files: "${two}"}}
        """,
    )
    result = run(suite)
    result.assert_outcomes(passed=1)


def test_an_expect_that_never_holds_fails_after_its_timeout_with_the_channel_shown(suite):
    scenario(
        suite,
        """\
        id: session-timeout
        title: A frame that never comes
        requirements: [SESS-002]
        features: [core]
        steps:
          - session: {args: [serve]}
            steps:
              - send: [{type: echo, id: r1, payload: {n: 1}}]
              - expect: {frames: [{type: echo, id: r1}]}
              - expect: {frames: [{type: echo, id: r9}]}
                timeout: 0.5
        """,
    )
    result = run(suite)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert (
        'steps[0].steps[2] (expect): expected frame [0] matched no actual frame: {"type": "echo", "id": "r9"}'
        in out
    )
    assert "  session: " in out and "serve_impl.py serve" in out
    assert "  session process: still running" in out
    assert 'no actual frame has id "r9"' in out
    assert "waited on stdio: still not so after 0.5 s (a sub-step may set `timeout:`)" in out
    assert 'sent on stdio:\n  | {"type": "echo", "id": "r1", "payload": {"n": 1}}' in out
    assert '  #0* {"type": "echo", "id": "r1", "payload": {"data": {"n": 1}}}' in out
    assert "session stderr:\n  | ready" in out
    assert result.duration < 20


def test_waiting_stops_as_soon_as_the_process_has_ended(suite):
    scenario(
        suite,
        """\
        id: session-ended
        title: Nothing more can arrive
        requirements: [SESS-003]
        features: [core]
        steps:
          - session: {args: [serve]}
            steps:
              - close: stdio
              - expect: {frames: [{type: echo, id: r1}]}
                timeout: 60
        """,
    )
    result = run(suite)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "nothing more can arrive (the process has ended and the channel is closed)" in out
    assert "  session process: exited with code 0" in out
    assert result.duration < 20


def test_exit_code_and_signal_problems_are_failures(suite):
    scenario(
        suite,
        """\
        id: session-exit
        title: Wrong exit code
        requirements: [SESS-004]
        features: [core]
        steps:
          - session: {args: [serve, --socket, s.sock, --exit-code, "3"]}
            steps:
              - expect: {stderr: {$contains: ready}}
              - signal: INT
              - expect: {exit: 0}
        """,
    )
    scenario(
        suite,
        """\
        id: session-signal-after-exit
        title: Signalling a process that has ended
        requirements: [SESS-004]
        features: [core]
        steps:
          - session: {args: [serve]}
            steps:
              - close: stdio
              - expect: {exit: 0}
              - signal: TERM
        """,
        name="after.yaml",
    )
    result = run(suite)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "steps[0].steps[2] (expect): exit code: expected 0, got 3" in out
    assert "steps[0].steps[2] (signal): signal TERM: the process has already exited (exit code 0)" in out


def test_a_line_that_is_not_a_frame_fails_the_next_expect_at_once(suite):
    scenario(
        suite,
        """\
        id: session-garbage
        title: Not JSON
        requirements: [SESS-005]
        features: [core]
        steps:
          - session: {args: [serve]}
            steps:
              - send: [{type: garbage, id: g1}]
              - expect: {frames: [{type: garbage, id: g1}]}
                timeout: 30
        """,
    )
    result = run(suite)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "stdio: line 1 is not a JSON frame" in out
    assert "  !! this is not json" in out
    assert result.duration < 20


def test_frames_taken_by_an_expect_are_not_matched_again(suite):
    scenario(
        suite,
        """\
        id: session-taken
        title: Each frame is taken once
        requirements: [SESS-006]
        features: [core]
        steps:
          - session: {args: [serve]}
            steps:
              - send: [{type: echo, id: r1}, {type: echo, id: r2}]
              - expect: {frames: [{type: done, id: r1}, {type: done, id: r2}]}
              - expect: {frames: [{type: done, id: r1}]}
                timeout: 0.3
        """,
    )
    scenario(
        suite,
        """\
        id: session-only
        title: only counts the frames not taken yet
        requirements: [SESS-006]
        features: [core]
        steps:
          - session: {args: [serve]}
            steps:
              - send: [{type: echo, id: r1}, {type: echo, id: r2}]
              - expect: {frames: [{type: echo, id: r1}, {type: done, id: r1}, {type: done, id: r2}]}
              - expect: {frames: [], only: true}
                timeout: 0.3
        """,
        name="only.yaml",
    )
    result = run(suite)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "steps[0].steps[2] (expect): expected frame [0] matched no actual frame" in out
    assert 'was not expected (only: true): {"type": "echo", "id": "r2", "payload": {"data": {}}}' in out


def test_a_session_left_running_is_stopped_at_its_end(suite):
    scenario(
        suite,
        """\
        id: session-left-running
        title: The runner ends the process (EOF, then SIGTERM)
        requirements: [SESS-007]
        features: [core]
        steps:
          - session: {args: [serve, --socket, s.sock]}
            steps:
              - connect: s.sock
                as: a
          - files:
              - {path: s.sock, exists: false}
        """,
    )
    run(suite).assert_outcomes(passed=1)


def test_files_checks_mode_and_wait_with_a_timeout(suite):
    scenario(
        suite,
        """\
        id: files-mode-timeout
        title: mode and timeout on files checks
        requirements: [SESS-008]
        features: [core]
        files: {plain.txt: "x"}
        steps:
          - files:
              - {path: plain.txt, mode: "0600"}
              - {path: never.txt}
            timeout: 0.3
        """,
    )
    result = run(suite)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "files[0] plain.txt: expected mode 0600, got 0644" in out
    assert "files[1] path 'never.txt': expected it to exist" in out
    assert "still so after 0.3 s of checking again" in out


BROKEN = (
    "id: x\ntitle: t\nrequirements: [AB-001]\n"
    "features: [core]\nsteps:\n  - session: {args: [serve]}\n    steps:\n"
)


@pytest.mark.parametrize(
    ("substeps", "message"),
    [
        ("      - send: []\n        to: a\n", "to: 'a' is not an open channel of this session"),
        ("      - drop: stdio\n", "drop takes a connection"),
        (
            "      - connect: s.sock\n        as: a\n      - drop: a\n      - close: a\n",
            "close: 'a' is not an open channel",
        ),
        ("      - connect: s.sock\n        as: stdio\n", "steps[0].steps[0].as"),
        ("      - session: {args: [serve]}\n        steps: [{sleep: 1}]\n", "sessions cannot be nested"),
        ("      - send: []\n        close: stdio\n", "exactly one of `send`, `expect`"),
        ("      - connect: ../s.sock\n        as: a\n", "must be a relative path"),
        ("      - signal: STOPPLEASE\n", "'STOPPLEASE' is not one of"),
        ("      - expect: {frames: [{id: '${nope}'}]}\n", "unknown capture(s) ${nope}"),
        ("      - expect: {}\n", "should be non-empty"),
        ("      - expect: {exit: 0, json: {}}\n", "'json' was unexpected"),
    ],
)
def test_broken_session_scenarios_are_collection_errors(suite, substeps, message):
    path = scenario(suite, BROKEN + substeps)
    result = run(suite)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert f"broken scenario {path}" in out
    assert message in out
