"""The CLI of signal waits in real subprocesses: payload sources as bytes, log mode, reject by wait
ID, the next commands, and payloads in shell commands (defects found while specifying waits, fixed
since)."""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers import SWAMP, clean_env, job, sh
from test_waits_support import VERDICT, env, record, step_record, wait_step, wait_workflow

pytestmark = pytest.mark.cli


@pytest.fixture
def one_wait(repo):
    wait_workflow(repo, "cli", wait_step("review", schema=VERDICT), wait_step("any"))
    code, _, _, doc = repo.swamp("workflow", "run", "cli", "--json", env=env())
    assert code == 0
    return repo, doc, {w["stepName"]: w["waitId"] for w in doc["waits"]}


def _raw(repo, *args: bytes | str, stdin: bytes = b"") -> tuple[int, dict]:
    done = subprocess.run(
        [str(SWAMP), *args], cwd=repo.root, env=clean_env(env()), input=stdin, capture_output=True, timeout=60
    )
    return done.returncode, json.loads(done.stdout)


def test_payload_bytes_are_checked_as_received(one_wait):
    repo, doc, waits = one_wait
    # an argument that is not UTF-8 reaches the rules as bytes
    code, out = _raw(repo, "workflow", "signal", waits["any"], "--payload", b'"\xff"', "--json")
    assert (code, out["error"]["code"]) == (3, "payload_malformed")
    # a large stdin is refused by size without being read whole
    code, out = _raw(
        repo, "workflow", "signal", waits["any"], "--payload", "-", "--json", stdin=b"1" * 200_000
    )
    assert (code, out["error"]["code"]) == (3, "payload_too_large")
    big = repo.root / "big.json"
    big.write_bytes(b"[" + b" " * 20_000 + b"]")
    code, out = _raw(repo, "workflow", "signal", waits["any"], "--payload-file", str(big), "--json")
    assert (code, out["error"]["code"]) == (3, "payload_too_large")
    assert step_record(record(repo, doc), "any")["status"] == "waiting"


def test_log_mode_of_a_signal_and_of_a_refusal(one_wait):
    repo, doc, waits = one_wait
    code, out, err, _ = repo.swamp(
        "workflow", "signal", waits["review"], "--payload", '{"verdict":"abandon"}', env=env(user="zoe")
    )
    assert code == 0 and err == ""
    assert "Signal accepted" in out and waits["review"] in out
    # one wait is still open: the next command is its signal, not resume
    assert f"swamp workflow signal {waits['any']}" in out and "resume" not in out
    code, out, err, _ = repo.swamp("workflow", "signal", waits["review"], "--payload", "{}", env=env())
    assert code == 3 and out == ""
    assert err.startswith("Error: ") and "wait_settled" in err and "Traceback" not in err
    code, out, _, _ = repo.swamp("workflow", "signal", waits["any"], "--payload", "0", env=env())
    assert code == 0 and f"swamp workflow resume cli --run {doc['id']}" in out


def test_usage_errors_leave_the_wait_open(one_wait):
    repo, doc, waits = one_wait
    for args in (
        [],
        ["--payload", "1", "--payload-file", "x.json"],
        ["--payload-file", "missing.json"],
    ):
        code, _, _, out = repo.swamp("workflow", "signal", waits["any"], *args, "--json", env=env())
        assert (code, out["error"]["code"]) == (2, "usage_error"), args
    assert step_record(record(repo, doc), "any")["status"] == "waiting"


def test_reject_by_wait_id_on_the_command_line(one_wait):
    repo, doc, waits = one_wait
    code, _, _, out = repo.swamp("workflow", "reject", waits["review"], "--reason", "no", "--json", env=env())
    assert code == 0, out
    assert out["waitId"] == waits["review"] and out["runStatus"] == "failed"


def test_approving_the_last_gate_points_at_the_open_wait(repo):
    repo.write_workflow(
        "gate-wait",
        [
            job(
                "main",
                {"name": "gate", "task": {"type": "manual_approval", "prompt": "go?"}},
                wait_step("value"),
            )
        ],
    )
    _, _, _, doc = repo.swamp("workflow", "run", "gate-wait", "--json", env=env())
    wait_id = doc["waits"][0]["waitId"]
    code, _, _, out = repo.swamp("workflow", "approve", "gate-wait", "gate", "--json", env=env())
    assert code == 0
    assert any(c.startswith(f"swamp workflow signal {wait_id}") for c in out["next"]), out["next"]
    assert not any("resume" in c for c in out["next"])


def test_a_bad_expiring_within_is_a_usage_error(repo):
    code, _, _, out = repo.swamp("workflow", "waits", "--expiring-within", "soon", "--json", env=env())
    assert (code, out["error"]["code"]) == (2, "usage_error")


def test_a_payload_in_a_shell_command_is_data(repo):
    repo.write_workflow(
        "inject",
        [
            job(
                "main",
                wait_step("value"),
                sh(
                    "use",
                    "echo ${{ steps.value.outputs.payload.note }}",
                    dependsOn=[{"step": "value", "condition": {"type": "succeeded"}}],
                ),
            )
        ],
    )
    _, _, _, doc = repo.swamp("workflow", "run", "inject", "--json", env=env())
    note = "hi; touch pwned-1; $(touch pwned-2)"
    repo.swamp(
        "workflow", "signal", doc["waits"][0]["waitId"], "--payload", json.dumps({"note": note}), env=env()
    )
    code, _, _, done = repo.swamp("workflow", "resume", "inject", "--json", env=env())
    assert not (repo.root / "pwned-1").exists()
    assert not (repo.root / "pwned-2").exists()
    assert step_record(done, "use")["outputs"]["stdout"] == note + "\n"


def test_a_payload_inside_shell_quotes_is_data_and_validate_refuses_backticks(repo):
    """The reproduction of issue 13: inside "..." and '...' the payload ran (MODEL-015, WAIT-038)."""
    after = {"dependsOn": [{"step": "value", "condition": {"type": "succeeded"}}]}
    note = "$(touch pwned-1) `touch pwned-2` ' \" \\"
    use = "steps.value.outputs.payload.note"
    run = f"printf '%s|' \"got ${{{{ {use} }}}}\" 'got ${{{{ {use} }}}}'"
    repo.write_workflow("quoted", [job("main", wait_step("value"), sh("use", run, **after))])
    code, out, _, _ = repo.swamp("workflow", "validate", "quoted")
    assert code == 0 and "Result: PASSED" in out
    _, _, _, doc = repo.swamp("workflow", "run", "quoted", "--json", env=env())
    payload = json.dumps({"note": note})
    repo.swamp("workflow", "signal", doc["waits"][0]["waitId"], "--payload", payload, env=env())
    _, _, _, done = repo.swamp("workflow", "resume", "quoted", "--json", env=env())
    assert step_record(done, "use")["outputs"]["stdout"] == f"got {note}|got {note}|"
    assert not (repo.root / "pwned-1").exists() and not (repo.root / "pwned-2").exists()

    ticks = sh("use", f"echo `echo ${{{{ {use} }}}}`", **after)
    repo.write_workflow("ticks", [job("main", wait_step("value"), ticks)])
    code, out, _, _ = repo.swamp("workflow", "validate", "ticks")
    assert code == 1
    assert "✗ Shell arguments" in out
    assert f"use $(...) instead of backticks: $(echo ${{{{ {use} }}}})" in out
    code, _, _, refused = repo.swamp("workflow", "run", "ticks", "--json", env=env())
    assert (code, refused["error"]["code"]) == (3, "workflow_invalid")


def test_the_suggested_example_payload_is_accepted(repo):
    schema = {
        "type": "object",
        "required": ["ratio", "code"],
        "properties": {
            "ratio": {"type": "number", "exclusiveMinimum": 0},
            "code": {"type": "string", "maxLength": 2},
        },
    }
    wait_workflow(repo, "bounds", wait_step("value", schema=schema))
    _, _, _, doc = repo.swamp("workflow", "run", "bounds", "--json", env=env())
    suggested = doc["next"][0]
    assert suggested.startswith("swamp workflow signal ")
    example = suggested.split("--payload '", 1)[1].rstrip("'")
    code, _, _, out = repo.swamp(
        "workflow", "signal", doc["waits"][0]["waitId"], "--payload", example, "--check", "--json", env=env()
    )
    assert code == 0, out
