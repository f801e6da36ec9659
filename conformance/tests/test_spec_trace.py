"""scripts/spec-trace against small temporary repositories."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "spec-trace"

SPEC = """\
# Runs

- **[RUN-001]** A run MUST have an id.
* [RUN-002] A run has a status
  that MUST be known.
  1. **[GATE-010]** Nested and numbered MAY be. *(feature: serve)*
[WAIT-003] Bare at the start of a line SHOULD work.

Prose that mentions [RUN-999] is not a definition, nor is `[RUN-998]`.

```markdown
- **[RUN-997]** inside a fenced block
```
"""


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def scenario(root, rel, ident, requirements):
    write(
        root,
        f"conformance/scenarios/{rel}",
        f"id: {ident}\ntitle: t\nrequirements: {json.dumps(requirements)}\n",
    )


def spec_trace(root, *args):
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *args], capture_output=True, text=True, timeout=30
    )


@pytest.fixture
def repo(tmp_path):
    write(tmp_path, "spec/runs.md", SPEC)
    scenario(tmp_path, "runs/basic.yaml", "run-basic", ["RUN-001", "RUN-002"])
    scenario(tmp_path, "gates/nested.yml", "gate-nested", ["GATE-010", "WAIT-003", "RUN-001"])
    return tmp_path


def test_everything_covered_passes_with_a_table(repo):
    result = spec_trace(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["REQUIREMENT", "SCENARIOS"]
    assert lines[1:5] == [
        "GATE-010     gate-nested",
        "RUN-001      gate-nested, run-basic",
        "RUN-002      run-basic",
        "WAIT-003     gate-nested",
    ]
    assert lines[-2] == (
        "spec-trace: requirements by feature: core 3, serve 1; "
        "3 of the core ones are cited by a scenario that needs only `core`"
    )
    assert lines[-1] == "spec-trace: 4 requirements, 4 covered, 0 uncovered; 2 scenarios; ok"


def test_json_report(repo):
    result = spec_trace(repo, "--json")
    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["requirements"][1] == {
        "id": "RUN-001",
        "defined_at": "spec/runs.md:3",
        "feature": "core",
        "scenarios": ["gate-nested", "run-basic"],
    }
    assert report["summary"] == {
        "requirements": 4,
        "covered": 4,
        "uncovered": 0,
        "scenarios": 2,
        "problems": 0,
        "coreProvedByCoreProfile": 3,
        "byFeature": {"core": 3, "serve": 1},
    }
    assert report["requirements"][0]["feature"] == "serve"


def test_uncovered_requirement_fails(repo):
    write(repo, "spec/more.md", "- **[SIG-001]** Signals MUST be data.\n")
    result = spec_trace(repo)
    assert result.returncode == 1
    assert "SIG-001      -- NONE --" in result.stdout
    assert "[uncovered] SIG-001 (spec/more.md:1) has no scenario" in result.stdout
    assert result.stdout.splitlines()[-1].endswith("FAILED with 1 problem(s)")


def test_undefined_citation_fails(repo):
    scenario(repo, "x.yaml", "cites-nothing", ["RUN-001", "RUN-999"])
    result = spec_trace(repo)
    assert result.returncode == 1
    assert (
        "[undefined] scenario 'cites-nothing' (conformance/scenarios/x.yaml) cites RUN-999" in result.stdout
    )


def test_duplicate_definition_fails(repo):
    write(repo, "spec/again.md", "Intro.\n\n- **[RUN-002]** again MUST\n")
    result = spec_trace(repo, "--json")
    assert result.returncode == 1
    problems = json.loads(result.stdout)["problems"]
    assert problems == [
        {
            "kind": "duplicate_requirement",
            "message": "RUN-002 is defined twice: at spec/again.md:3 and at spec/runs.md:4",
        }
    ]


def test_duplicate_scenario_id_fails(repo):
    scenario(repo, "other/basic.yaml", "run-basic", ["RUN-001"])
    result = spec_trace(repo)
    assert result.returncode == 1
    assert (
        "[duplicate_scenario] scenario id 'run-basic' is used by conformance/scenarios/other/basic.yaml "
        "and conformance/scenarios/runs/basic.yaml" in result.stdout
    )


def test_unreadable_scenario_fails(repo):
    write(repo, "conformance/scenarios/bad.yaml", "id: [unclosed\n")
    write(repo, "conformance/scenarios/noid.yaml", "title: t\n")
    result = spec_trace(repo)
    assert result.returncode == 1
    assert "[unreadable_scenario] conformance/scenarios/bad.yaml cannot be read" in result.stdout
    assert "conformance/scenarios/noid.yaml needs a string `id` and a list `requirements`" in result.stdout


def test_selftest_scenarios_are_ignored(repo):
    scenario(repo, "_selftest/self.yaml", "run-basic", ["NOPE-001"])
    result = spec_trace(repo)
    assert result.returncode == 0, result.stdout


def test_missing_spec_dir_is_a_usage_error(tmp_path):
    result = spec_trace(tmp_path)
    assert result.returncode == 2
    assert "no spec/ directory" in result.stderr


NO_KEYWORD = "has no MUST, SHOULD or MAY: say what is required"


def test_a_requirement_without_an_rfc_2119_key_word_fails(repo):
    write(
        repo,
        "spec/words.md",
        "- **[SIG-001]** Signals are data.\n  Nothing here is required.\n\n"
        "  MUST on a line after a blank one.\n"
        "- **[SIG-002]** Lower-case must, should and may do not count; MUSTARD neither.\n"
        "- **[SIG-003]** *withdrawn*: replaced by SIG-004.\n",
    )
    scenario(repo, "sig.yaml", "sig", ["SIG-001", "SIG-002", "SIG-003"])
    result = spec_trace(repo, "--json")
    assert result.returncode == 1
    assert [p for p in json.loads(result.stdout)["problems"] if p["kind"] == "no_keyword"] == [
        {"kind": "no_keyword", "message": f"SIG-00{n} (spec/words.md:{line}) {NO_KEYWORD}"}
        for n, line in ((1, 1), (2, 5))
    ]


def test_a_core_requirement_proved_only_with_more_features_is_not_counted_as_proved_by_core(repo):
    write(repo, "spec/more.md", "- **[SIG-001]** Signals MUST be data.\n")
    write(
        repo,
        "conformance/scenarios/sig.yaml",
        "id: sig\ntitle: t\nrequirements: [SIG-001]\nfeatures: [core, file-store]\n",
    )
    summary = json.loads(spec_trace(repo, "--json").stdout)["summary"]
    assert (summary["byFeature"], summary["coreProvedByCoreProfile"]) == ({"core": 4, "serve": 1}, 3)


TEXT_SPEC = """\
# Waits

- **[WAIT-001]** A signal to a settled wait MUST be refused; log mode prints
  `Next: swamp workflow wait show <waitId>` and the message
  `the wait has settled already`, then lists the open waits (`<a>, <b>, ...`), one line
  `Waiting for approval: <job>.<step>: <prompt>` per gate and `swamp workflow resume WORKFLOW --run RUN`.
- **[WAIT-002]** A run MUST end.

  Its stderr tail is shown in a box:

  ```
  main │ ✗ <step>: the step failed for good
  ```
- **[WAIT-003]** Nothing here MAY be quoted.

Unindented explanation: the run stopped for a reason that is not a requirement.
"""


def text_scenario(root, ident, requirements, expect, files=None):
    doc = {"id": ident, "title": "t", "requirements": requirements, "files": files or {}, "steps": [expect]}
    write(root, f"conformance/scenarios/{ident}.yaml", json.dumps(doc))


@pytest.fixture
def text_repo(tmp_path):
    write(tmp_path, "spec/waits.md", TEXT_SPEC)
    text_scenario(tmp_path, "cover", ["WAIT-001", "WAIT-002", "WAIT-003"], {"run": ["x"]})
    return tmp_path


ALTERNATIVES = "(?:one two three four|five six seven eight)"  # neither is pinned


def files_scenario(root, check, requirements):
    doc = {"id": "files", "title": "t", "requirements": requirements, "steps": [{"files": [check]}]}
    write(root, "conformance/scenarios/files.yaml", json.dumps(doc))


def problem(ident, text, requirements):
    return (
        f"scenario {ident!r} (conformance/scenarios/{ident}.yaml) expects the text {text!r}, "
        f"which none of its requirements ({requirements}) states"
    )


def unstated(root):
    result = spec_trace(root, "--json")
    return result.returncode, [p["message"] for p in json.loads(result.stdout)["problems"]]


def test_text_the_cited_requirements_state_passes(text_repo):
    expect = {
        "run": ["workflow", "signal", "${w}", "--payload", "{}", "--note", "a note of my own making"],
        "expect": {
            "exit": 3,
            "json": {"error": {"message": "the wait has settled already", "details": {"waitId": "${w}"}}},
            "stdout": {
                "$regex": "^Next: swamp workflow wait show wait_[a-z2-7]{26}\\n[\\s\\S]*" + ALTERNATIVES
            },
            "stderr": {"$contains": "main │ ✗ compile: the step failed for good"},
        },
    }
    text_scenario(text_repo, "states", ["WAIT-001", "WAIT-002"], expect)
    more = {
        "expect": {
            "json": {
                "next": ["swamp workflow wait show ${w}"],
                "open": "then lists the open waits (wait_a, wait_b, wait_c)",  # `...` stands for more of them
                "note": "a note of my own making",  # the scenario sent it
                "code": "a_long_error_code_of_many_words",  # an identifier
                "outputs": {"stdout": "what the step itself printed out"},
                "gone": {"$not": {"$contains": "text that must not be there"}},
                "expr": "step ${{ inputs.a }} of ${{ inputs.b }} x",  # expressions split the text
                "gate": "Waiting for approval: prod.notify: Tell the team now?",  # <prompt> takes spaces
                "resume": "swamp workflow resume deploy --run ${r}",  # capitals in a code span
            }
        },
        "run": ["x", "a note of my own making"],
    }
    text_scenario(text_repo, "states-too", ["WAIT-001"], more)
    files_scenario(text_repo, {"path": "out.txt", "text": "a file the step wrote itself"}, ["WAIT-003"])
    code, problems = unstated(text_repo)
    assert (code, problems) == (0, [])


def test_text_no_cited_requirement_states_fails(text_repo):
    expect = {
        "run": ["workflow", "signal", "${w}"],
        "expect": {
            "json": {"error": {"message": "the wait has settled, sorry"}},
            "stdout": {"$regex": "^Then: swamp workflow wait show ${w}"},
            "stderr": {"$contains": "the run stopped for a reason"},
            "frames": [{"type": "event", "line": "blow took early signal"}],  # not a <step> alone
        },
    }
    text_scenario(text_repo, "pins", ["WAIT-001", "WAIT-002"], expect)
    files_scenario(
        text_repo,
        {"path": ".swamp/runs/x.json", "json": {"why": "cut at 199 characters plus more"}},
        ["WAIT-003"],
    )
    code, problems = unstated(text_repo)
    assert code == 1
    both = "WAIT-001, WAIT-002"
    assert problems == [
        problem("files", "cut at 199 characters plus more", "WAIT-003"),
        problem("pins", "the wait has settled, sorry", both),
        problem("pins", "blow took early signal", both),
        problem("pins", "Then: swamp workflow wait show", both),
        problem("pins", "the run stopped for a reason", both),
    ]
