"""`http` steps end to end: pytester runs `pytest conformance` against http_impl.py, an HTTP echo.

The scenarios of http_scenarios.json check, byte for byte, what the runner sent; the Node runner's
own test (conformance/node/test/http.test.mjs) runs the same file, and the last test here runs both
runners and compares the digests of what each step sent (FORMAT.md §10).
"""

import json
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CONFORMANCE = Path(__file__).resolve().parents[1]
SERVER = CONFORMANCE / "tests" / "http_impl.py"
SCENARIOS = json.loads((CONFORMANCE / "tests" / "http_scenarios.json").read_text(encoding="utf-8"))
IMPL = shlex.join([sys.executable, str(SERVER)])


@pytest.fixture
def suite(pytester, monkeypatch):
    """A copy of the runner (without scenarios) with its own rootdir and swamp's schemas."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    ignore = shutil.ignore_patterns("__pycache__")
    target = pytester.path / "conformance"
    shutil.copytree(CONFORMANCE / "runner", target / "runner", ignore=ignore)
    (target / "scenarios").mkdir()
    shutil.copy(CONFORMANCE / "conftest.py", target)
    shutil.copy(CONFORMANCE / "scenario.schema.json", target)
    shutil.copytree(CONFORMANCE.parent / "spec" / "schemas", pytester.path / "spec" / "schemas")
    pytester.makeini("[pytest]\n")
    return pytester


def write(pytester, scenario, name):
    path = pytester.path / "conformance" / "scenarios" / name
    # JSON is YAML: the scenario as the export has it
    text = scenario if isinstance(scenario, str) else json.dumps(scenario, ensure_ascii=False, indent=1)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(pytester, *args):
    return pytester.runpytest("conformance", "--impl", IMPL, "-p", "no:cacheprovider", *args)


def test_what_an_http_step_sends_and_how_its_answer_matches(suite):
    for i, scenario in enumerate(SCENARIOS):
        write(suite, scenario, f"s{i}.yaml")
    result = run(suite)
    result.assert_outcomes(passed=len(SCENARIOS))


GATEWAY = """\
    id: http-fails
    title: an http step that does not hold
    requirements: [AB-001]
    features: [core, gateway]
    steps:
      - session: {args: [gateway, --listen, "127.0.0.1:0"], stdout: json}
        steps:
          - expect: {frames: [{listening: {$capture: base}}]}
          - http: {url: "${base}/x?status=%s"}
            %s
"""


def test_a_status_other_than_2xx_fails_unless_expected_and_the_report_shows_both_sides(suite):
    write(suite, GATEWAY % ("503", ""), "a.yaml")
    result = run(suite)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "(http): status: expected a 2xx status (the step may set `expect.status`), got 503" in out
    assert "request: GET http://127.0.0.1:" in out
    assert "response: 503 Echo" in out
    assert "  | X-Twice: two" in out
    # a JSON answer with an error status must be the core's error document
    assert "the body of a 503 answer does not match errors.schema.json#/$defs/errorDocument" in out


def test_a_header_or_json_mismatch_names_the_header_and_the_path(suite):
    expect = "expect: {status: 200, headers: {x-twice: one}, json: {method: POST}}"
    write(suite, GATEWAY % ("200", expect), "a.yaml")
    out = run(suite).stdout.str()
    assert "headers $.x-twice" in out
    assert "json $.method" in out


def test_nothing_listening_is_a_readable_failure_not_a_traceback(suite):
    write(
        suite,
        """\
        id: http-refused
        title: nothing listens
        requirements: [AB-001]
        features: [core, gateway]
        steps:
          - http: {url: "http://127.0.0.1:9/x"}
            timeout: 5
        """,
        "a.yaml",
    )
    result = run(suite)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "steps[0] (http): ConnectionRefusedError" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ('{http: {url: "${base}/x"}, expect: {headers: {A: 1, a: 2}}}', "'A' and 'a' name the same header"),
        ('{http: {url: "${base}/x", json: 1, body: x}}', "should not be valid"),
        ('{http: {url: "${nope}/x"}}', "unknown capture(s) ${nope}"),
    ],
)
def test_a_broken_http_step_is_reported_before_anything_runs(suite, step, message):
    text = GATEWAY.replace('- http: {url: "${base}/x?status=%s"}\n            %s', "- " + step)
    write(suite, text, "a.yaml")
    out = run(suite).stdout.str()
    assert message in out


def test_both_runners_send_the_same_bytes(suite, tmp_path):
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    for i, scenario in enumerate(SCENARIOS):
        write(suite, scenario, f"s{i}.yaml")
    py = tmp_path / "py.json"
    run(suite, "--results-json", str(py)).assert_outcomes(passed=len(SCENARIOS))
    export = tmp_path / "export.json"
    listed = [{"file": f"t/s{i}.yaml", **s} for i, s in enumerate(SCENARIOS)]
    export.write_text(json.dumps({"suiteVersion": "1.0.0", "specVersion": "1.0.0", "scenarios": listed}))
    node = tmp_path / "node.json"
    done = subprocess.run(
        ["node", str(CONFORMANCE / "node" / "run.mjs"), "--impl", IMPL, "--scenarios", str(export),
         "--results-json", str(node)],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    compare = subprocess.run(
        [sys.executable, str(CONFORMANCE.parent / "scripts" / "compare-runners"),
         "--pytest-results", str(py), "--node-results", str(node)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert compare.returncode == 0, compare.stdout
    sent = json.loads(py.read_text())["scenarios"]["http-step-bytes"]["sent"]
    assert len([s for s in sent if " (http" in s["step"]]) == 8  # every http step has its digest


def test_the_gateway_feature_is_found_mechanically():
    from swamp_conformance_runner.uses import undeclared

    def needs(*steps):
        return undeclared({"features": ["core"], "steps": list(steps)}).get("gateway")

    session = {"session": {"args": ["gateway", "--listen", "127.0.0.1:0"]}, "steps": [{"sleep": 1}]}
    assert needs(session) == ["argv word 'gateway'"]
    assert needs({"http": {"url": "http://127.0.0.1:9/"}}) == ["an `http` step"]
    assert needs({"run": ["workflow", "wait", "link", "w1"]}) == ["argv `wait link`"]
    assert needs({"jsonl": [{"type": "workflow.link.show", "id": "a", "payload": {"token": "t"}}]}) == [
        "request 'workflow.link.show'"
    ]
    assert needs({"run": ["workflow", "run", "link"]}) is None  # a workflow named link is not a link
