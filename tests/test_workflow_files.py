"""Workflow files: strict keys, dependsOn and task shapes, `workflow validate`, list / get / create."""

from __future__ import annotations

import re
import uuid

import pytest
from helpers import dep, jdep, job, sh

from swamp.domain.definition import parse_workflow
from swamp.domain.errors import WorkflowInvalid

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def raw_workflow(*jobs, **top):
    return {"id": str(uuid.uuid4()), "name": "wf", **top, "jobs": list(jobs)}


def problems_of(raw) -> list[str]:
    with pytest.raises(WorkflowInvalid) as info:
        parse_workflow(raw, "workflows/workflow-wf.yaml")
    assert info.value.code == "workflow_invalid"
    return info.value.details["problems"]


# -- strict keys ---------------------------------------------------------------------------------


def test_unknown_step_key_is_refused_with_suggestion_and_valid_keys():
    step = sh("build", "true")
    step["gaurd"] = "${{ true }}"
    problems = problems_of(raw_workflow(job("main", step)))
    assert len(problems) == 1
    text = problems[0]
    assert "Unknown key 'gaurd' on step 'build'. Did you mean 'guard'?" in text
    valid = text.split("Valid step keys: ", 1)[1]
    for key in ("name", "task", "dependsOn", "guard", "allowFailure", "forEach", "weight", "concurrency"):
        assert key in valid.split(", ")


def test_unknown_job_and_workflow_keys_are_refused():
    main = job("main", sh("s", "true"))
    main["dependOn"] = []
    problems = problems_of(raw_workflow(main, jobz=[]))
    assert any("Unknown key 'dependOn' on job 'main'. Did you mean 'dependsOn'?" in p for p in problems)
    assert any("Unknown key 'jobz' on workflow 'wf'. Did you mean 'jobs'?" in p for p in problems)


def test_unknown_key_without_a_close_match_has_no_suggestion():
    step = sh("build", "true")
    step["zzzzzz"] = 1
    [text] = problems_of(raw_workflow(job("main", step)))
    assert "Unknown key 'zzzzzz' on step 'build'." in text
    assert "Did you mean" not in text
    assert "Valid step keys:" in text


def test_unknown_task_key_is_refused():
    step = sh("build", "true")
    step["task"]["method"] = "execute"
    [text] = problems_of(raw_workflow(job("main", step)))
    assert "Unknown key 'method' on task 'build'" in text


def test_string_form_depends_on_is_refused_with_the_object_form():
    problems = problems_of(raw_workflow(job("main", sh("a", "true"), sh("b", "true", dependsOn=["a"]))))
    assert len(problems) == 1
    assert "dependsOn" in problems[0]
    assert "{step: a, condition: {type: succeeded}}" in problems[0]


def test_string_form_job_depends_on_is_refused():
    problems = problems_of(
        raw_workflow(job("a", sh("s", "true")), job("b", sh("s", "true"), dependsOn=["a"]))
    )
    assert "{job: a, condition: {type: succeeded}}" in problems[0]


def test_depends_on_without_a_condition_is_refused():
    problems = problems_of(
        raw_workflow(job("main", sh("a", "true"), sh("b", "true", dependsOn=[{"step": "a"}])))
    )
    assert any("condition" in p for p in problems)


def test_unknown_task_type_is_refused():
    step = {"name": "build", "task": {"type": "shell", "run": "make"}}
    [text] = problems_of(raw_workflow(job("main", step)))
    assert "Unknown task type 'shell' on step 'build'" in text
    assert "model_method" in text


def test_every_problem_is_listed_not_only_the_first():
    a = sh("a", "true")
    a["gaurd"] = "x"
    b = sh("b", "true")
    b["alowFailure"] = True
    problems = problems_of(raw_workflow(job("main", a, b)))
    assert len(problems) == 2


def test_a_valid_workflow_parses():
    wf = parse_workflow(raw_workflow(job("main", sh("a", "true"), sh("b", "true", dependsOn=[dep("a")]))))
    assert [s.name for s in wf.jobs[0].steps] == ["a", "b"]
    assert wf.jobs[0].steps[1].dependsOn[0].condition.type == "succeeded"


# -- workflow validate --------------------------------------------------------------------------

CHECK_NAMES = [
    "Schema validation",
    "Unique job names",
    "Unique step names in job 'main'",
    "Valid job dependency references",
    "Valid step dependency references in job 'main'",
    "No cyclic job dependencies",
    "No cyclic step dependencies in job 'main'",
    "Expressions compile",
]


@pytest.mark.cli
def test_validate_lists_each_check_in_json_and_log(repo):
    repo.write_workflow("good", [job("main", sh("a", "echo ${{ inputs.x }}"), sh("b", "true"))])
    code, _out, _err, body = repo.swamp("workflow", "validate", "good", "--json")
    assert code == 0
    assert body["passed"] is True
    names = [v["name"] for v in body["validations"]]
    for name in CHECK_NAMES:
        assert name in names
    assert all(v["passed"] for v in body["validations"])

    code, out, _err, _ = repo.swamp("workflow", "validate", "good")
    assert code == 0
    for name in CHECK_NAMES:
        assert f"✓ {name}" in out
    assert "Result: PASSED" in out


@pytest.mark.cli
def test_validate_reports_a_step_cycle(repo):
    repo.write_workflow(
        "cyclic", [job("main", sh("a", "true", dependsOn=[dep("b")]), sh("b", "true", dependsOn=[dep("a")]))]
    )
    code, _out, _err, body = repo.swamp("workflow", "validate", "cyclic", "--json")
    assert code == 1
    assert body["passed"] is False
    check = next(v for v in body["validations"] if v["name"] == "No cyclic step dependencies in job 'main'")
    assert check["passed"] is False
    assert check["error"] == "Cyclic dependency detected: a -> b -> a"

    code, out, _err, _ = repo.swamp("workflow", "validate", "cyclic")
    assert code == 1
    assert "✗ No cyclic step dependencies in job 'main'" in out
    assert "Cyclic dependency detected: a -> b -> a" in out
    assert "Result: FAILED" in out


def test_validate_reports_duplicates_and_bad_references(shared_repo):
    shared_repo.write_workflow(
        "refs",
        [
            job("main", sh("a", "true"), sh("a", "true"), sh("c", "true", dependsOn=[dep("nope")])),
            job("dup", sh("x", "true"), dependsOn=[jdep("ghost")]),
            job("dup", sh("y", "true")),
        ],
    )
    body = shared_repo.handle("workflow.validate", {"workflow": "refs"})
    by_name = {v["name"]: v for v in body["validations"]}
    assert body["passed"] is False
    assert by_name["Unique job names"]["error"] == "Duplicate job names: dup"
    assert by_name["Unique step names in job 'main'"]["passed"] is False
    assert "Duplicate step names: a" in by_name["Unique step names in job 'main'"]["error"]
    assert by_name["Valid job dependency references"]["error"] == "Invalid job references: dup -> ghost"
    assert "c -> nope" in by_name["Valid step dependency references in job 'main'"]["error"]


def test_validate_reports_a_job_cycle(shared_repo):
    shared_repo.write_workflow(
        "jobcycle",
        [job("a", sh("s", "true"), dependsOn=[jdep("b")]), job("b", sh("s", "true"), dependsOn=[jdep("a")])],
    )
    body = shared_repo.handle("workflow.validate", {"workflow": "jobcycle"})
    check = next(v for v in body["validations"] if v["name"] == "No cyclic job dependencies")
    assert check == {
        "name": "No cyclic job dependencies",
        "passed": False,
        "error": "Cyclic dependency detected: a -> b -> a",
    }


def test_validate_reports_a_bad_top_level_expression(shared_repo):
    shared_repo.write_workflow("badtop", [job("main", sh("s", "true"))], description="${{ inputs.( }}")
    body = shared_repo.handle("workflow.validate", {"workflow": "badtop"})
    check = next(v for v in body["validations"] if v["name"] == "Expressions compile")
    assert check["passed"] is False
    assert "inputs.(" in check["error"]


def test_validate_reports_a_bad_expression_in_a_step(shared_repo):
    shared_repo.write_workflow("badstep", [job("main", sh("s", "echo ${{ inputs.( }}"))])
    body = shared_repo.handle("workflow.validate", {"workflow": "badstep"})
    check = next(v for v in body["validations"] if v["name"] == "Expressions compile")
    assert check["passed"] is False
    assert "jobs[0].steps[0]" in check["error"]


@pytest.mark.cli
def test_validate_a_broken_file_reports_schema_validation(repo):
    step = sh("s", "true")
    step["gaurd"] = "${{ true }}"
    repo.write_workflow("broken", [job("main", step)])
    code, _out, _err, body = repo.swamp("workflow", "validate", "broken", "--json")
    assert code == 1
    assert body["passed"] is False
    schema = body["validations"][0]
    assert schema["name"] == "Schema validation" and schema["passed"] is False
    assert "Did you mean 'guard'?" in schema["error"]


def test_validate_all_counts_passed_and_failed(repo):
    repo.write_workflow("ok-one", [job("main", sh("s", "true"))])
    repo.write_workflow("bad-one", [job("main", sh("a", "true", dependsOn=[dep("a")]))])
    body = repo.handle("workflow.validate")
    assert body["totalPassed"] == 1
    assert body["totalFailed"] == 1
    assert body["passed"] is False
    assert {w["workflowName"]: w["passed"] for w in body["workflows"]} == {"ok-one": True, "bad-one": False}


# -- list / get / create ----------------------------------------------------------------------


@pytest.mark.cli
def test_workflow_create_list_get(repo):
    code, _out, _err, created = repo.swamp("workflow", "create", "hello", "--description", "Say hi", "--json")
    assert code == 0
    assert created["path"] == "workflows/workflow-hello.yaml"
    assert (repo.root / created["path"]).is_file()

    code, _out, _err, listed = repo.swamp("workflow", "list", "--json")
    assert code == 0
    [item] = [w for w in listed["workflows"] if w["name"] == "hello"]
    assert UUID.match(item["id"])
    assert item["description"] == "Say hi"
    assert (item["jobs"], item["steps"]) == (1, 1)

    code, _out, _err, got = repo.swamp("workflow", "get", item["id"], "--json")
    assert code == 0
    assert got["name"] == "hello"
    assert got["definition"]["jobs"][0]["steps"][0]["task"]["type"] == "model_method"

    code, _out, _err, again = repo.swamp("workflow", "create", "hello", "--json")
    assert code == 3
    assert again["error"]["code"] == "workflow_exists"


def test_workflow_create_refuses_a_bad_name(repo):
    from swamp.domain.errors import UsageError

    with pytest.raises(UsageError):
        repo.handle("workflow.create", {"name": "Not Valid"})
    assert not list((repo.root / "workflows").glob("*.yaml"))


def test_workflow_get_by_name_and_unknown(shared_repo):
    from swamp.domain.errors import WorkflowNotFound

    shared_repo.write_workflow("getme", [job("main", sh("s", "true"))])
    got = shared_repo.handle("workflow.get", {"workflow": "getme"})
    assert got["name"] == "getme" and got["path"] == "workflows/workflow-getme.yaml"
    with pytest.raises(WorkflowNotFound) as info:
        shared_repo.handle("workflow.get", {"workflow": "no-such-flow"})
    assert "swamp workflow list" in info.value.message


def test_workflow_list_reports_broken_files_apart(repo):
    repo.write_workflow("fine", [job("main", sh("s", "true"))])
    repo.write_workflow("torn", raw="id: [unclosed\n")
    body = repo.handle("workflow.list")
    assert [w["name"] for w in body["workflows"]] == ["fine"]
    assert [b["path"] for b in body["broken"]] == ["workflows/workflow-torn.yaml"]
    assert body["broken"][0]["error"]["code"] == "workflow_invalid"


def test_running_a_broken_workflow_is_refused_with_the_problem(repo):
    step = sh("s", "touch ran")
    step["dependsOn"] = ["x"]
    repo.write_workflow("torn-run", [job("main", step)])
    with pytest.raises(WorkflowInvalid) as info:
        repo.run("torn-run")
    assert "workflows/workflow-torn-run.yaml" in info.value.message
    assert "condition" in info.value.message
    assert repo.run_files() == []
    assert not (repo.root / "ran").exists()
