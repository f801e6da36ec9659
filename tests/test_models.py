"""Models: create / list / get, model types, broken extensions, command/shell results and failures."""

from __future__ import annotations

import pytest
from helpers import echo, job, sh, step_of

from swamp.domain.errors import ModelExists, ModelNotFound

SHELL_RESULT_KEYS = {"exitCode", "stdout", "stderr", "durationMs"}


@pytest.mark.cli
def test_model_create_list_get(repo):
    code, _out, _err, created = repo.swamp("model", "create", "command/shell", "hello", "--json")
    assert code == 0
    assert created["path"] == "models/command/shell/hello.yaml"
    assert created["type"] == "command/shell"
    assert (repo.root / created["path"]).is_file()

    code, _out, _err, listed = repo.swamp("model", "list", "--json")
    assert code == 0
    assert {"echo", "hello", "sh"} <= {m["name"] for m in listed["models"]}

    code, _out, _err, got = repo.swamp("model", "get", "hello", "--json")
    assert code == 0
    assert got["id"] == created["id"]
    assert "execute" in got["typeInfo"]["methods"]

    code, _out, _err, again = repo.swamp("model", "create", "command/shell", "hello", "--json")
    assert code == 3
    assert again["error"]["code"] == "model_exists"


def test_model_create_with_an_unknown_type_is_refused(shared_repo):
    with pytest.raises(ModelNotFound) as info:
        shared_repo.handle("model.create", {"type": "nope/missing", "name": "x"})
    assert "nope/missing" in info.value.message
    assert not (shared_repo.root / "models" / "nope").exists()


def test_model_create_twice_is_refused(shared_repo):
    shared_repo.handle("model.create", {"type": "command/shell", "name": "twice"})
    with pytest.raises(ModelExists):
        shared_repo.handle("model.create", {"type": "command/shell", "name": "twice"})


def test_model_get_unknown_names_the_next_command(shared_repo):
    with pytest.raises(ModelNotFound) as info:
        shared_repo.handle("model.get", {"model": "ghost"})
    assert "swamp model create" in info.value.message


def test_model_type_list_has_builtin_and_extension(shared_repo):
    body = shared_repo.handle("model.type.list")
    by_type = {t["type"]: t for t in body["types"]}
    assert by_type["command/shell"]["source"] == "builtin"
    assert set(by_type["command/shell"]["methods"]) == {"execute"}
    assert by_type["@test/echo"]["source"] == "extensions/models/echo.py"
    assert set(by_type["@test/echo"]["methods"]) == {"echo", "fail"}
    assert body["problems"] == []


# -- broken extensions -------------------------------------------------------------------------

BROKEN = {
    "syntax.py": ("def broken(:\n", "SyntaxError"),
    "raises.py": ("raise RuntimeError('extension exploded')\n", "extension exploded"),
    "nomodel.py": ("x = 1\n", "defines no `model`"),
}


@pytest.mark.cli
def test_broken_extensions_are_reported_and_do_not_break_other_workflows(repo):
    for name, (text, _) in BROKEN.items():
        repo.write_extension(name, text)
    code, _out, _err, body = repo.swamp("model", "type", "list", "--json")
    assert code == 0
    problems = {p["path"]: p["error"] for p in body["problems"]}
    for name, (_, fragment) in BROKEN.items():
        assert fragment in problems[f"extensions/models/{name}"]
    assert "@test/echo" in {t["type"] for t in body["types"]}

    code, out, err, _ = repo.swamp("model", "type", "list")
    assert code == 0
    assert "Traceback" not in out + err
    for name in BROKEN:
        assert f"extensions/models/{name}" in out

    # a workflow using the good extension (which loads every extension file) still runs
    repo.write_workflow("uses-echo", [job("main", echo("e", {"x": 1}), sh("s", "echo hi"))])
    code, _out, err, doc = repo.swamp("workflow", "run", "uses-echo", "--json")
    assert code == 0, err
    assert doc["status"] == "succeeded"
    assert step_of(doc, "main", "e")["outputs"]["args"] == {"x": 1}


@pytest.mark.cli
def test_extension_calling_sys_exit_is_reported_not_fatal(repo):
    repo.write_extension("quits.py", "import sys\nsys.exit(0)\n")
    code, out, _err, body = repo.swamp("model", "type", "list", "--json")
    assert body is not None, f"no JSON document on stdout (exit {code}): {out!r}"
    assert "extensions/models/quits.py" in {p["path"] for p in body["problems"]}


def test_workflow_using_a_type_from_a_broken_file_fails_its_step_with_a_hint(repo):
    repo.write_extension("syntax.py", "def broken(:\n")
    repo.write_model({"id": "5e5e5e5e-0000-4000-8000-0000000000aa", "name": "lost", "type": "@test/lost"})
    repo.write_workflow(
        "lost",
        [
            job(
                "main",
                {"name": "s", "task": {"type": "model_method", "modelIdOrName": "lost", "methodName": "x"}},
            )
        ],
    )
    doc = repo.run("lost")
    step = step_of(doc, "main", "s")
    assert step["status"] == "failed"
    assert "@test/lost" in step["error"]
    assert "swamp model type list" in step["error"]


# -- command/shell --------------------------------------------------------------------------------


@pytest.mark.cli
def test_shell_result_shape_and_non_zero_exit(repo):
    repo.write_workflow(
        "shell",
        [
            job(
                "main",
                sh("ok", "echo out; echo err >&2"),
                sh("bad", "echo partial; exit 7", allowFailure=True),
            )
        ],
    )
    code, _out, _err, doc = repo.swamp("workflow", "run", "shell", "--json")
    assert code == 0
    ok = step_of(doc, "main", "ok")
    assert set(ok["outputs"]) == SHELL_RESULT_KEYS
    assert ok["outputs"]["exitCode"] == 0
    assert ok["outputs"]["stdout"] == "out\n"
    assert ok["outputs"]["stderr"] == "err\n"
    assert isinstance(ok["outputs"]["durationMs"], int)
    bad = step_of(doc, "main", "bad")
    assert bad["status"] == "failed"
    assert bad["error"] == "Command exited with code 7"
    assert bad["outputs"]["exitCode"] == 7
    assert bad["outputs"]["stdout"] == "partial\n"


def test_non_zero_exit_fails_the_run(shared_repo):
    shared_repo.write_workflow("exit3", [job("main", sh("s", "exit 3"))])
    doc = shared_repo.run("exit3")
    assert step_of(doc, "main", "s")["error"] == "Command exited with code 3"
    assert doc["status"] == "failed"


def test_extension_method_exception_fails_the_step(shared_repo):
    shared_repo.write_workflow(
        "ext-fail",
        [
            job(
                "main",
                {
                    "name": "s",
                    "task": {
                        "type": "model_method",
                        "modelIdOrName": "echo",
                        "methodName": "fail",
                        "inputs": {"message": "kaput"},
                    },
                },
            )
        ],
    )
    doc = shared_repo.run("ext-fail")
    step = step_of(doc, "main", "s")
    assert step["status"] == "failed"
    assert step["error"] == "RuntimeError: kaput"


def test_unknown_method_and_unknown_model_fail_their_steps(shared_repo):
    def task(model, method):
        return {"type": "model_method", "modelIdOrName": model, "methodName": method}

    shared_repo.write_workflow(
        "unknowns",
        [
            job(
                "main",
                {"name": "m", "task": task("sh", "nope")},
                {"name": "d", "task": task("ghost", "execute")},
            )
        ],
    )
    doc = shared_repo.run("unknowns")
    assert "Unknown method 'nope'" in step_of(doc, "main", "m")["error"]
    assert "Model 'ghost' not found" in step_of(doc, "main", "d")["error"]


def test_method_arguments_are_validated(shared_repo):
    step = sh("s", "true")
    step["task"]["inputs"]["bogus"] = 1
    shared_repo.write_workflow("badargs", [job("main", step)])
    doc = shared_repo.run("badargs")
    step = step_of(doc, "main", "s")
    assert step["status"] == "failed"
    assert step["error"].startswith("Method arguments validation failed")
    assert "bogus" in step["error"]
