"""Output modes: one JSON document with --json, error envelopes, log lines, NO_COLOR, --help."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess

import click
import pytest
from click.testing import CliRunner
from helpers import SWAMP, clean_env, dep, echo, job, sh

from swamp.cli.main import cli

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@pytest.fixture(scope="module")
def out_repo(shared_repo):
    shared_repo.write_workflow(
        "mixed",
        [
            job(
                "build",
                sh("compile", "echo compiling; echo warn >&2"),
                echo("talk", {"x": 1}),
                sh("lint", "exit 2", allowFailure=True),
                sh("package", "true", dependsOn=[dep("lint")]),
                sh("guarded", "true", guard="${{ true }}"),
            ),
            job(
                "deploy",
                sh("ship", "exit 4"),
                dependsOn=[{"job": "build", "condition": {"type": "succeeded"}}],
            ),
        ],
    )
    return shared_repo


def single_document(stdout: str):
    """The whole of stdout is one JSON document (json.loads refuses trailing data)."""
    return json.loads(stdout)


@pytest.mark.cli
@pytest.mark.parametrize(
    "args",
    [
        ("workflow", "run", "mixed", "--json"),
        ("--json", "workflow", "list"),
        ("workflow", "validate", "--json"),
        ("workflow", "history", "mixed", "--json"),
        ("model", "type", "list", "--json"),
    ],
    ids=["run", "list", "validate", "history", "types"],
)
def test_json_mode_prints_exactly_one_document(out_repo, args):
    code, out, err, _ = out_repo.swamp(*args)
    assert code in (0, 1), err
    doc = single_document(out)
    assert isinstance(doc, dict)
    assert "error" not in doc
    assert "Traceback" not in err


@pytest.mark.cli
def test_json_error_envelope_on_stdout_with_exit_3(out_repo):
    code, out, _err, _ = out_repo.swamp("workflow", "get", "no-such", "--json")
    assert code == 3
    doc = single_document(out)
    assert set(doc) == {"error"}
    assert set(doc["error"]) <= {"code", "message", "details"}
    assert doc["error"]["code"] == "workflow_not_found"
    assert "swamp workflow list" in doc["error"]["message"]
    assert "\n" not in doc["error"]["message"]


@pytest.mark.cli
def test_json_usage_error_is_an_envelope_with_exit_2(out_repo):
    code, out, _err, _ = out_repo.swamp("workflow", "run", "--json")
    assert code == 2
    assert single_document(out)["error"]["code"] == "usage_error"


@pytest.mark.cli
def test_log_mode_shows_step_lines_and_the_outcome(out_repo):
    code, out, err, _ = out_repo.swamp("workflow", "run", "mixed")
    assert code == 1
    assert "Starting workflow mixed" in out
    assert "build │ ▶ compile" in out
    assert "build │   compile │ compiling" in out  # the command's own output, marked with its step
    assert re.search(r"build │ ✓ compile", out)
    assert "lint (failure allowed): Command exited with code 2" in out
    assert "package skipped (dependency)" in out
    assert "guarded skipped (guarded)" in out
    assert "deploy │ ✗ ship: Command exited with code 4" in out
    run_id = re.search(r"\(run ([0-9a-f-]{36})\)", out).group(1)
    assert "failed: workflow mixed" in out
    assert "deploy.ship: Command exited with code 4" in out
    assert f"swamp workflow history get {run_id}" in out
    assert "Traceback" not in out + err


@pytest.mark.cli
def test_log_mode_error_goes_to_stderr(out_repo):
    code, out, err, _ = out_repo.swamp("workflow", "run", "no-such")
    assert code == 3
    assert out == ""
    assert "Error:" in err and "no-such" in err and "workflow_not_found" in err


def run_in_pty(args, cwd, env):
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(SWAMP), *args], cwd=cwd, env=env, stdout=slave, stderr=slave, stdin=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.cli
def test_no_color_disables_ansi_escapes_on_a_terminal(shared_repo):
    shared_repo.write_workflow("colors", [job("main", sh("a", "true"))])
    base = clean_env({"TERM": "xterm-256color"})
    colored = run_in_pty(["workflow", "run", "colors"], shared_repo.root, base)
    plain = run_in_pty(["workflow", "run", "colors"], shared_repo.root, {**base, "NO_COLOR": "1"})
    assert ANSI.search(colored), "expected colours on a terminal without NO_COLOR"
    assert "succeeded" in plain
    assert not ANSI.search(plain)


def _leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        path = (*prefix, name)
        if isinstance(command, click.Group):
            yield from _leaf_commands(command, path)
        else:
            yield path


LEAVES = list(_leaf_commands(cli))


def test_command_tree_has_the_foundation_commands():
    names = {" ".join(p) for p in LEAVES}
    for expected in (
        "repo init",
        "workflow run",
        "workflow list",
        "workflow get",
        "workflow create",
        "workflow validate",
        "workflow history",
        "model create",
        "model list",
        "model get",
        "model type list",
    ):
        assert expected in names


@pytest.mark.parametrize("path", LEAVES, ids=[" ".join(p) for p in LEAVES])
def test_every_command_help_works_and_has_an_example(path):
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="swamp")
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert "Usage:" in result.output


@pytest.mark.cli
def test_help_in_a_subprocess(tmp_path):
    done = subprocess.run(
        [str(SWAMP), "workflow", "run", "--help"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0
    assert "Example" in done.stdout
    assert "--input" in done.stdout


NOISY_EXTENSION = """\
def run(args, ctx):
    print("noise from user code")
    return {"ok": True}


model = {"type": "@test/noisy", "version": "1", "methods": {"run": {"execute": run}}}
"""


def _noisy_repo(repo):
    repo.write_extension("noisy.py", NOISY_EXTENSION)
    repo.write_model({"id": "5e5e5e5e-0000-4000-8000-0000000000bb", "name": "noisy", "type": "@test/noisy"})
    task = {"type": "model_method", "modelIdOrName": "noisy", "methodName": "run"}
    repo.write_workflow("noisy", [job("main", {"name": "s", "task": task})])
    return repo


@pytest.mark.cli
def test_json_stdout_stays_one_document_when_a_model_prints(repo):
    code, out, err, _ = _noisy_repo(repo).swamp("workflow", "run", "noisy", "--json")
    assert code == 0, err
    assert single_document(out)["status"] == "succeeded"


@pytest.mark.cli
def test_jsonl_stream_stays_frames_when_a_model_prints(repo):
    request = json.dumps({"type": "workflow.run", "id": "a", "payload": {"workflow": "noisy"}}) + "\n"
    code, out, err, _ = _noisy_repo(repo).swamp("--jsonl", input=request)
    assert code == 0, err
    frames = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert frames[-1] == {"type": "done", "id": "a"}
