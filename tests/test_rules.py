"""The behavioural rules of swamp-workflows.md §7 (1–12), one or more tests per rule.

Most tests run workflows in process through the request layer (`swamp.protocol.requests.handle`,
the same entry the CLI uses) against one repository per module; a few go through the CLI in a
subprocess where the exit code or the absence of a run record is the point. Shell steps append a
line to a file in the repository so the tests can see what ran, and in which order.

Documented differences from the reference that these tests pin: forEach expansions evaluate their
own dependsOn; a dependency on a forEach template sees the combined status of its expansions;
`steps.<name>.outputs/status` are in the expression context; input problems exit 3 with
`input_invalid`; a guard error fails the step and is never an allowed failure.
"""

from __future__ import annotations

import pytest
from helpers import dep, echo, jdep, job, job_of, sh, statuses, step_of

from swamp.domain.conditions import Condition, condition_holds
from swamp.domain.errors import InputInvalid, WorkflowInvalid


def log_to(file: str, word: str) -> str:
    return f"echo {word} >> {file}"


# -- rule 1: levels, weight then name, barrier, cycles -------------------------------------------


def test_rule01_levels_run_in_weight_then_name_order(shared_repo):
    f = "r01-steps.txt"
    shared_repo.write_workflow(
        "r01-steps",
        [
            job(
                "main",
                sh("c", log_to(f, "c")),
                sh("a", log_to(f, "a"), weight=5),
                sh("d", log_to(f, "d"), dependsOn=[dep("a")]),
                sh("b", log_to(f, "b")),
                concurrency=1,
            )
        ],
    )
    doc = shared_repo.run("r01-steps")
    assert doc["status"] == "succeeded"
    # level 1 = {a(5), b(0), c(0)} sorted by weight then name; level 2 = {d}
    assert shared_repo.lines(f) == ["b", "c", "a", "d"]


def test_rule01_job_levels_run_in_weight_then_name_order(shared_repo):
    f = "r01-jobs.txt"
    shared_repo.write_workflow(
        "r01-jobs",
        [
            job("zeta", sh("s", log_to(f, "zeta"))),
            job("last", sh("s", log_to(f, "last")), dependsOn=[jdep("alpha")]),
            job("alpha", sh("s", log_to(f, "alpha")), weight=1),
            job("mid", sh("s", log_to(f, "mid"))),
        ],
        concurrency=1,
    )
    assert shared_repo.run("r01-jobs")["status"] == "succeeded"
    assert shared_repo.lines(f) == ["mid", "zeta", "alpha", "last"]


def test_rule01_next_level_waits_for_the_whole_previous_level(shared_repo):
    f = "r01-barrier.txt"
    shared_repo.write_workflow(
        "r01-barrier",
        [
            job(
                "main",
                sh("slow", f"sleep 0.4; {log_to(f, 'slow')}"),
                sh("fast", log_to(f, "fast")),
                # depends only on `fast`, but is in level 2 and must wait for `slow` too
                sh("after", log_to(f, "after"), dependsOn=[dep("fast")]),
            )
        ],
    )
    assert shared_repo.run("r01-barrier")["status"] == "succeeded"
    assert shared_repo.lines(f) == ["fast", "slow", "after"]


def test_rule01_next_job_level_waits_for_the_whole_previous_level(shared_repo):
    f = "r01-jobbarrier.txt"
    shared_repo.write_workflow(
        "r01-jobbarrier",
        [
            job("slow", sh("s", f"sleep 0.4; {log_to(f, 'slow')}")),
            job("fast", sh("s", log_to(f, "fast"))),
            job("after", sh("s", log_to(f, "after")), dependsOn=[jdep("fast")]),
        ],
    )
    assert shared_repo.run("r01-jobbarrier")["status"] == "succeeded"
    assert shared_repo.lines(f) == ["fast", "slow", "after"]


@pytest.mark.cli
def test_rule01_cycle_is_refused_with_its_path(repo):
    repo.write_workflow(
        "r01-cycle",
        [
            job(
                "main",
                sh("a", "touch r01-cycle-ran", dependsOn=[dep("b")]),
                sh("b", "true", dependsOn=[dep("a")]),
            )
        ],
    )
    code, out, _err, body = repo.swamp("workflow", "run", "r01-cycle", "--json")
    assert code == 3
    assert body["error"]["code"] == "workflow_invalid"
    assert "Cyclic dependency detected: a -> b -> a" in body["error"]["message"]
    assert repo.run_files() == []
    assert not (repo.root / "r01-cycle-ran").exists()


def test_rule01_job_cycle_is_refused(shared_repo):
    shared_repo.write_workflow(
        "r01-jobcycle",
        [job("a", sh("s", "true"), dependsOn=[jdep("b")]), job("b", sh("s", "true"), dependsOn=[jdep("a")])],
    )
    with pytest.raises(WorkflowInvalid) as info:
        shared_repo.run("r01-jobcycle")
    assert "Cyclic dependency detected: a -> b -> a" in info.value.message


# -- rule 2: conditions ----------------------------------------------------------------------------

STATUSES = ["succeeded", "failed", "skipped", "pending", "running", None]
LEAF_EXPECTED = {
    "always": {"succeeded", "failed", "skipped", "pending", "running", None},
    "succeeded": {"succeeded"},
    "failed": {"failed"},
    "completed": {"succeeded", "failed"},
    "skipped": {"skipped"},
}


@pytest.mark.parametrize("kind", sorted(LEAF_EXPECTED))
def test_rule02_leaf_conditions_by_status(kind):
    cond = Condition(type=kind)
    holds = {s for s in STATUSES if condition_holds(cond, s)}
    assert holds == LEAF_EXPECTED[kind]


def test_rule02_and_or_not_combine_leaves():
    succ, fail, skip = Condition(type="succeeded"), Condition(type="failed"), Condition(type="skipped")
    either = Condition(type="or", conditions=(succ, fail))
    both = Condition(
        type="and", conditions=(Condition(type="completed"), Condition(type="not", condition=fail))
    )
    assert [condition_holds(either, s) for s in ("succeeded", "failed", "skipped")] == [True, True, False]
    assert [condition_holds(both, s) for s in ("succeeded", "failed", "skipped")] == [True, False, False]
    assert condition_holds(Condition(type="not", condition=skip), "running") is True


def test_rule02_dependency_entries_are_anded_and_conditions_decide(shared_repo):
    f = "r02.txt"
    cond_or = {"type": "or", "conditions": [{"type": "succeeded"}, {"type": "failed"}]}
    cond_not_succ = {"type": "not", "condition": {"type": "succeeded"}}
    cond_not_completed = {"type": "not", "condition": {"type": "completed"}}
    shared_repo.write_workflow(
        "r02",
        [
            job(
                "main",
                sh("ok", "true"),
                sh("bad", "exit 1", allowFailure=True),
                sh("skip", "true", guard="${{ true }}"),
                sh("and_pass", log_to(f, "and_pass"), dependsOn=[dep("ok"), dep("bad", "failed")]),
                sh("and_fail", log_to(f, "and_fail"), dependsOn=[dep("ok"), dep("bad", "succeeded")]),
                sh("completed_on_skip", log_to(f, "completed_on_skip"), dependsOn=[dep("skip", "completed")]),
                sh("skipped_on_skip", log_to(f, "skipped_on_skip"), dependsOn=[dep("skip", "skipped")]),
                sh("completed_on_fail", log_to(f, "completed_on_fail"), dependsOn=[dep("bad", "completed")]),
                sh("or_on_fail", log_to(f, "or_on_fail"), dependsOn=[{"step": "bad", "condition": cond_or}]),
                sh("not_succ", log_to(f, "not_succ"), dependsOn=[{"step": "ok", "condition": cond_not_succ}]),
                sh(
                    "not_completed",
                    log_to(f, "not_completed"),
                    dependsOn=[{"step": "skip", "condition": cond_not_completed}],
                ),
            )
        ],
    )
    doc = shared_repo.run("r02")
    ran = {"and_pass", "skipped_on_skip", "completed_on_fail", "or_on_fail", "not_completed"}
    skipped = {"and_fail", "completed_on_skip", "not_succ"}
    st = statuses(doc, "main")
    assert {n for n in ran | skipped if st[n] == "succeeded"} == ran
    assert {n for n in ran | skipped if st[n] == "skipped"} == skipped
    assert set(shared_repo.lines(f)) == ran


# -- rule 3: unmet conditions skip; a skipped job skips its steps ------------------------------------


def test_rule03_unmet_condition_skips_step_and_its_task_never_runs(shared_repo):
    shared_repo.write_workflow(
        "r03-step",
        [job("main", sh("a", "true"), sh("b", "touch r03-step-b", dependsOn=[dep("a", "failed")]))],
    )
    doc = shared_repo.run("r03-step")
    b = step_of(doc, "main", "b")
    assert b["status"] == "skipped"
    assert b.get("reason") == "dependency"
    assert "startedAt" not in b
    assert not (shared_repo.root / "r03-step-b").exists()
    assert doc["status"] == "succeeded"


def test_rule03_skipped_job_marks_all_its_pending_steps_skipped(shared_repo):
    shared_repo.write_workflow(
        "r03-job",
        [
            job("build", sh("compile", "exit 1")),
            job(
                "deploy",
                sh("one", "touch r03-job-one"),
                sh("two", "touch r03-job-two", dependsOn=[dep("one", "always")]),
                dependsOn=[jdep("build")],
            ),
            job("after", sh("note", "touch r03-job-after"), dependsOn=[jdep("deploy", "skipped")]),
        ],
    )
    doc = shared_repo.run("r03-job")
    assert job_of(doc, "deploy")["status"] == "skipped"
    assert statuses(doc, "deploy") == {"one": "skipped", "two": "skipped"}
    assert not (shared_repo.root / "r03-job-one").exists()
    assert not (shared_repo.root / "r03-job-two").exists()
    # downstream sees `skipped`
    assert job_of(doc, "after")["status"] == "succeeded"
    assert (shared_repo.root / "r03-job-after").exists()


# -- rule 4: guards --------------------------------------------------------------------------------

GUARDS = {
    "empty_list": ("${{ [] }}", True),
    "empty_map": ("${{ {} }}", True),
    "true": ("${{ true }}", True),
    "text": ("${{ 'x' }}", True),
    "one": ("${{ 1 }}", True),
    "zero": ("${{ 0 }}", False),
    "empty_text": ("${{ '' }}", False),
    "null": ("${{ null }}", False),
    "false": ("${{ false }}", False),
    "nan": ("${{ 0.0 / 0.0 }}", False),
    "zero_double": ("${{ 0.0 }}", False),
}


def test_rule04_guard_uses_js_truthiness(shared_repo):
    f = "r04.txt"
    steps = [sh(name, log_to(f, name), guard=guard) for name, (guard, _) in GUARDS.items()]
    shared_repo.write_workflow("r04", [job("main", *steps)])
    doc = shared_repo.run("r04")
    st = statuses(doc, "main")
    expected = {name: ("skipped" if skips else "succeeded") for name, (_, skips) in GUARDS.items()}
    assert st == expected
    assert set(shared_repo.lines(f)) == {n for n, (_, skips) in GUARDS.items() if not skips}
    assert all(step_of(doc, "main", n).get("reason") == "guarded" for n, (_, s) in GUARDS.items() if s)


def test_rule04_guard_error_fails_step_even_with_allow_failure(shared_repo):
    shared_repo.write_workflow(
        "r04-error",
        [
            job(
                "main",
                sh("first", "true"),
                sh(
                    "guarded",
                    "touch r04-error-ran",
                    allowFailure=True,
                    guard="${{ steps.first.outputs.noSuchKey }}",
                    dependsOn=[dep("first")],
                ),
            )
        ],
    )
    doc = shared_repo.run("r04-error")
    step = step_of(doc, "main", "guarded")
    assert step["status"] == "failed"
    assert step["error"].startswith("Guard expression failed")
    assert step.get("allowedFailure") is False
    assert job_of(doc, "main")["status"] == "failed"
    assert doc["status"] == "failed"
    assert not (shared_repo.root / "r04-error-ran").exists()


# -- rule 5: a failure fails its job; the level drains; later levels never start ----------------------


def test_rule05_failure_fails_job_siblings_finish_later_levels_stay_pending(shared_repo):
    shared_repo.write_workflow(
        "r05",
        [
            job(
                "main",
                sh("bad", "exit 1"),
                sh("sibling", "sleep 0.3; touch r05-sibling"),
                sh("later", "touch r05-later", dependsOn=[dep("sibling", "always")]),
            ),
            job("other", sh("independent", "touch r05-other")),
        ],
    )
    doc = shared_repo.run("r05")
    assert job_of(doc, "main")["status"] == "failed"
    assert statuses(doc, "main") == {"bad": "failed", "sibling": "succeeded", "later": "pending"}
    assert (shared_repo.root / "r05-sibling").exists()
    assert not (shared_repo.root / "r05-later").exists()
    assert "startedAt" not in step_of(doc, "main", "later")
    assert job_of(doc, "other")["status"] == "succeeded"
    assert doc["status"] == "failed"


# -- rule 6: allowFailure ----------------------------------------------------------------------------


def test_rule06_allowed_failure_is_failed_job_succeeds_downstream_by_condition(shared_repo):
    f = "r06.txt"
    shared_repo.write_workflow(
        "r06",
        [
            job(
                "main",
                sh("flaky", "exit 2", allowFailure=True),
                sh("on_succeeded", log_to(f, "on_succeeded"), dependsOn=[dep("flaky", "succeeded")]),
                sh("on_completed", log_to(f, "on_completed"), dependsOn=[dep("flaky", "completed")]),
                sh("on_failed", log_to(f, "on_failed"), dependsOn=[dep("flaky", "failed")]),
            )
        ],
    )
    doc = shared_repo.run("r06")
    flaky = step_of(doc, "main", "flaky")
    assert flaky["status"] == "failed"
    assert flaky["allowedFailure"] is True
    assert flaky["error"] == "Command exited with code 2"
    assert job_of(doc, "main")["status"] == "succeeded"
    assert statuses(doc, "main")["on_succeeded"] == "skipped"
    assert sorted(shared_repo.lines(f)) == ["on_completed", "on_failed"]
    assert doc["status"] == "succeeded"
    assert "failedStep" not in doc


# -- rule 7: a failed job does not stop other jobs ----------------------------------------------------


@pytest.mark.cli
def test_rule07_failed_job_does_not_stop_others_and_run_ends_failed(repo):
    repo.write_workflow(
        "r07",
        [
            job("build", sh("compile", "exit 1")),
            job("docs", sh("write", "touch r07-docs")),
            job("notify", sh("page", "touch r07-notify"), dependsOn=[jdep("build", "failed")]),
            job("deploy", sh("ship", "touch r07-deploy"), dependsOn=[jdep("build")]),
        ],
    )
    code, _out, _err, doc = repo.swamp("workflow", "run", "r07", "--json")
    assert code == 1
    assert {j["name"]: j["status"] for j in doc["jobs"]} == {
        "build": "failed",
        "docs": "succeeded",
        "notify": "succeeded",
        "deploy": "skipped",
    }
    assert (repo.root / "r07-docs").exists()
    assert (repo.root / "r07-notify").exists()
    assert not (repo.root / "r07-deploy").exists()
    assert doc["status"] == "failed"


# -- rule 8: final status, failedStep, failureReason --------------------------------------------------


def test_rule08_run_succeeds_when_every_job_succeeded_or_skipped(shared_repo):
    shared_repo.write_workflow(
        "r08-ok",
        [
            job("a", sh("s", "true")),
            job("b", sh("s", "true"), dependsOn=[jdep("a", "failed")]),
        ],
    )
    doc = shared_repo.run("r08-ok")
    assert [j["status"] for j in doc["jobs"]] == ["succeeded", "skipped"]
    assert doc["status"] == "succeeded"
    assert "failedStep" not in doc and "failureReason" not in doc


def test_rule08_failed_step_names_the_first_non_allowed_failure(shared_repo):
    shared_repo.write_workflow(
        "r08-fail",
        [
            job("alpha", sh("soft", "exit 4", allowFailure=True), sh("hard", "exit 3")),
            job("beta", sh("worse", "exit 5")),
        ],
    )
    doc = shared_repo.run("r08-fail")
    assert doc["status"] == "failed"
    assert doc["failedStep"] == "alpha.hard"
    assert doc["failureReason"] == "Command exited with code 3"


# -- rule 9: forEach ----------------------------------------------------------------------------------


def test_rule09_foreach_array_binds_self_and_names_from_template(shared_repo):
    shared_repo.write_workflow(
        "r09-array",
        [
            job(
                "main",
                echo(
                    "deploy-${{ self.env }}",
                    {"target": "${{ self.env }}"},
                    forEach={"item": "env", "in": "${{ inputs.envs }}"},
                ),
            )
        ],
        inputs={"type": "object", "properties": {"envs": {"type": "array", "default": ["dev", "prod"]}}},
    )
    doc = shared_repo.run("r09-array")
    steps = job_of(doc, "main")["steps"]
    assert [s["name"] for s in steps] == ["deploy-dev", "deploy-prod"]
    assert [s["outputs"]["args"]["target"] for s in steps] == ["dev", "prod"]
    assert all(s["status"] == "succeeded" for s in steps)


def test_rule09_foreach_default_names_value_index_and_key(shared_repo):
    shared_repo.write_workflow(
        "r09-names",
        [
            job(
                "main",
                echo("prim", {"v": "${{ self.x }}"}, forEach={"item": "x", "in": "${{ ['alpha', 'beta'] }}"}),
                echo(
                    "obj",
                    {"v": "${{ self.x.n }}"},
                    forEach={"item": "x", "in": "${{ [{'n': 1}, {'n': 2}] }}"},
                ),
                echo(
                    "map",
                    {"k": "${{ self.x.key }}", "v": "${{ self.x.value }}"},
                    forEach={"item": "x", "in": "${{ {'env': 'prod', 'tier': 'web'} }}"},
                ),
            )
        ],
    )
    doc = shared_repo.run("r09-names")
    st = {s["name"]: s for s in job_of(doc, "main")["steps"]}
    assert set(st) == {"prim-alpha", "prim-beta", "obj-0", "obj-1", "map-env", "map-tier"}
    assert st["prim-beta"]["outputs"]["args"] == {"v": "beta"}
    assert st["obj-1"]["outputs"]["args"] == {"v": 2}
    assert st["map-env"]["outputs"]["args"] == {"k": "env", "v": "prod"}
    assert st["map-tier"]["outputs"]["args"] == {"k": "tier", "v": "web"}


def test_rule09_foreach_template_is_replaced_in_the_record(shared_repo):
    shared_repo.write_workflow(
        "r09-replace",
        [
            job(
                "main",
                sh("before", "true"),
                sh("t-${{ self.x }}", "true", forEach={"item": "x", "in": "${{ ['a', 'b'] }}"}),
                sh("after", "true"),
            )
        ],
    )
    doc = shared_repo.run("r09-replace")
    names = [s["name"] for s in job_of(doc, "main")["steps"]]
    assert names == ["before", "t-a", "t-b", "after"]
    assert "t-${{ self.x }}" not in names


def test_rule09_foreach_over_empty_collection_yields_no_steps(shared_repo):
    shared_repo.write_workflow(
        "r09-empty",
        [
            job(
                "main",
                sh("each", "touch r09-empty-ran", forEach={"item": "x", "in": "${{ [] }}"}),
                sh("other", "true"),
            )
        ],
    )
    doc = shared_repo.run("r09-empty")
    assert [s["name"] for s in job_of(doc, "main")["steps"]] == ["other"]
    assert job_of(doc, "main")["status"] == "succeeded"
    assert doc["status"] == "succeeded"
    assert not (shared_repo.root / "r09-empty-ran").exists()


def test_rule09_foreach_over_a_non_collection_errors(shared_repo):
    shared_repo.write_workflow(
        "r09-scalar",
        [job("main", sh("each", "touch r09-scalar-ran", forEach={"item": "x", "in": "${{ 'just text' }}"}))],
    )
    doc = shared_repo.run("r09-scalar")
    step = step_of(doc, "main", "each")
    assert step["status"] == "failed"
    assert "forEach.in" in step["error"]
    assert job_of(doc, "main")["status"] == "failed"
    assert doc["status"] == "failed"
    assert not (shared_repo.root / "r09-scalar-ran").exists()


def test_rule09_foreach_expansions_evaluate_their_own_depends_on(shared_repo):
    """Documented difference: the reference ignores an expansion's conditions; swamp honours them."""
    shared_repo.write_workflow(
        "r09-deps",
        [
            job(
                "main",
                sh("gate", "true"),
                sh(
                    "on-fail-${{ self.x }}",
                    "touch r09-deps-ran",
                    forEach={"item": "x", "in": "${{ ['a', 'b'] }}"},
                    dependsOn=[dep("gate", "failed")],
                ),
            )
        ],
    )
    doc = shared_repo.run("r09-deps")
    assert statuses(doc, "main") == {"gate": "succeeded", "on-fail-a": "skipped", "on-fail-b": "skipped"}
    assert not (shared_repo.root / "r09-deps-ran").exists()


def test_rule09_dependency_on_template_sees_combined_status(shared_repo):
    """Documented difference: failed if any failed, skipped if none/all skipped, else succeeded."""
    f = "r09-combined.txt"
    shared_repo.write_workflow(
        "r09-combined",
        [
            job(
                "main",
                sh(
                    "mixed",
                    "test ${{ self.x }} = ok",
                    allowFailure=True,
                    forEach={"item": "x", "in": "${{ ['ok', 'bad'] }}"},
                ),
                sh("good", "true", forEach={"item": "x", "in": "${{ ['p', 'q'] }}"}),
                sh("none", "true", forEach={"item": "x", "in": "${{ [] }}"}),
                sh("mixed_failed", log_to(f, "mixed_failed"), dependsOn=[dep("mixed", "failed")]),
                sh("mixed_succeeded", log_to(f, "mixed_succeeded"), dependsOn=[dep("mixed", "succeeded")]),
                sh("good_succeeded", log_to(f, "good_succeeded"), dependsOn=[dep("good", "succeeded")]),
                sh("none_skipped", log_to(f, "none_skipped"), dependsOn=[dep("none", "skipped")]),
                sh("none_succeeded", log_to(f, "none_succeeded"), dependsOn=[dep("none", "succeeded")]),
            )
        ],
    )
    doc = shared_repo.run("r09-combined")
    st = statuses(doc, "main")
    assert st["mixed-ok"] == "succeeded" and st["mixed-bad"] == "failed"
    assert sorted(shared_repo.lines(f)) == ["good_succeeded", "mixed_failed", "none_skipped"]
    assert st["mixed_succeeded"] == "skipped" and st["none_succeeded"] == "skipped"


def test_rule09_guard_sees_the_expansion_item(shared_repo):
    shared_repo.write_workflow(
        "r09-guard",
        [
            job(
                "main",
                sh(
                    "g-${{ self.x }}",
                    "touch r09-guard-${{ self.x }}",
                    guard="${{ self.x == 'b' }}",
                    forEach={"item": "x", "in": "${{ ['a', 'b'] }}"},
                ),
            )
        ],
    )
    doc = shared_repo.run("r09-guard")
    assert statuses(doc, "main") == {"g-a": "succeeded", "g-b": "skipped"}
    assert (shared_repo.root / "r09-guard-a").exists()
    assert not (shared_repo.root / "r09-guard-b").exists()


def test_rule09_expansion_colliding_with_a_step_name_is_not_silently_dropped(shared_repo):
    shared_repo.write_workflow(
        "r09-collide",
        [
            job(
                "main",
                sh("deploy-a", "echo regular >> r09-collide.txt"),
                sh(
                    "deploy",
                    "echo each-${{ self.x }} >> r09-collide.txt",
                    forEach={"item": "x", "in": "${{ ['a', 'b'] }}"},
                ),
            )
        ],
    )
    try:
        doc = shared_repo.run("r09-collide")
    except WorkflowInvalid:
        return  # refused up front: acceptable
    if doc["status"] == "failed" and "deploy-a" in (doc.get("failureReason") or ""):
        return  # refused at run time, naming the clash: acceptable
    assert sorted(shared_repo.lines("r09-collide.txt")) == ["each-a", "each-b", "regular"]


# -- rule 10: inputs ----------------------------------------------------------------------------------

R10_INPUTS = {
    "type": "object",
    "properties": {
        "env": {"type": "string", "enum": ["dev", "prod"]},
        "replicas": {"type": "integer", "default": 1},
        "regions": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "dryRun": {"type": "boolean", "default": False},
    },
    "required": ["env", "regions"],
    "additionalProperties": False,
}


def test_rule10_inputs_are_coerced_and_defaults_applied(shared_repo):
    shared_repo.write_workflow(
        "r10-ok",
        [job("main", echo("show", {"replicas": "${{ inputs.replicas }}", "dry": "${{ inputs.dryRun }}"}))],
        inputs=R10_INPUTS,
    )
    doc = shared_repo.run("r10-ok", {"env": "prod", "regions": '["eu"]', "dryRun": "true"})
    assert doc["inputs"] == {"env": "prod", "regions": ["eu"], "dryRun": True, "replicas": 1}
    assert step_of(doc, "main", "show")["outputs"]["args"] == {"replicas": 1, "dry": True}


@pytest.mark.cli
def test_rule10_invalid_inputs_are_all_listed_and_no_record_is_written(repo):
    repo.write_workflow("r10-bad", [job("main", sh("s", "touch r10-ran"))], inputs=R10_INPUTS)
    code, _out, _err, body = repo.swamp(
        "workflow",
        "run",
        "r10-bad",
        "--input",
        "env=staging",
        "--input",
        "replicas=many",
        "--input",
        "regions:json=[]",
        "--input",
        "extra=1",
        "--json",
    )
    assert code == 3
    error = body["error"]
    assert error["code"] == "input_invalid"
    assert error["message"].startswith("Input validation failed:")
    pointers = sorted(e["pointer"] for e in error["details"]["errors"])
    assert pointers == ["/env", "/extra", "/regions", "/replicas"]  # the unexpected member itself
    assert repo.run_files() == []
    assert not (repo.root / "r10-ran").exists()


def test_rule10_missing_required_input_is_refused(shared_repo):
    shared_repo.write_workflow("r10-missing", [job("main", sh("s", "true"))], inputs=R10_INPUTS)
    with pytest.raises(InputInvalid) as info:
        shared_repo.run("r10-missing", {"env": "dev"})
    assert "regions" in info.value.message


# -- rule 11: workflow-level expressions vs deferred ones -----------------------------------------------


@pytest.mark.cli
def test_rule11_unsupplied_input_aborts_before_a_record_exists(repo):
    repo.write_workflow("r11-missing", [job("main", sh("s", "echo ${{ inputs.version }} > r11-ran"))])
    code, _out, _err, body = repo.swamp("workflow", "run", "r11-missing", "--json")
    assert code == 3
    assert body["error"]["code"] == "input_invalid"
    assert "inputs.version" in body["error"]["message"]
    assert repo.run_files() == []
    assert not (repo.root / "r11-ran").exists()


def test_rule11_runtime_expressions_are_deferred_to_step_time(shared_repo, monkeypatch):
    monkeypatch.setenv("R11_VALUE", "from-env")
    shared_repo.write_workflow(
        "r11-deferred",
        [
            job("produce", echo("list", {"items": ["x", "y"]})),
            job(
                "consume",
                sh("first", "printf first-out"),
                echo(
                    "second",
                    {
                        "runId": "${{ run.id }}",
                        "workflow": "${{ run.workflowName }}",
                        "env": "${{ env.R11_VALUE }}",
                        "prev": "${{ steps.first.outputs.stdout }}",
                        "prevStatus": "${{ steps.first.status }}",
                    },
                    dependsOn=[dep("first")],
                ),
                sh(
                    "guarded",
                    "touch r11-guarded",
                    guard="${{ steps.first.outputs.exitCode == 0 }}",
                    dependsOn=[dep("first")],
                ),
                echo(
                    "each-${{ self.i }}",
                    {"i": "${{ self.i }}"},
                    forEach={"item": "i", "in": "${{ steps.list.outputs.args.items }}"},
                ),
                dependsOn=[jdep("produce")],
            ),
        ],
    )
    doc = shared_repo.run("r11-deferred")
    assert doc["status"] == "succeeded", doc.get("failureReason")
    args = step_of(doc, "consume", "second")["outputs"]["args"]
    assert args == {
        "runId": doc["id"],
        "workflow": "r11-deferred",
        "env": "from-env",
        "prev": "first-out",
        "prevStatus": "succeeded",
    }
    assert step_of(doc, "consume", "guarded")["status"] == "skipped"
    assert step_of(doc, "consume", "each-y")["outputs"]["args"] == {"i": "y"}


# -- rule 12: whole-string vs embedded expressions -------------------------------------------------------


def test_rule12_whole_string_keeps_type_embedded_is_stringified(shared_repo):
    shared_repo.write_workflow(
        "r12",
        [
            job(
                "main",
                echo(
                    "show",
                    {
                        "n": "${{ 2 + 1 }}",
                        "obj": "${{ {'a': [1, true]} }}",
                        "flag": "${{ true }}",
                        "nothing": "${{ null }}",
                        "spaced": "  ${{ 7 }}  ",
                        "text_n": "n=${{ 2 + 1 }}",
                        "text_obj": "o=${{ {'a': 1} }}",
                        "text_flag": "t=${{ true }}",
                        "text_null": "z=${{ null }}.",
                        "nested": {"list": ["${{ 1 + 1 }}", "x${{ 1 + 1 }}"]},
                    },
                ),
            )
        ],
    )
    args = step_of(shared_repo.run("r12"), "main", "show")["outputs"]["args"]
    assert args == {
        "n": 3,
        "obj": {"a": [1, True]},
        "flag": True,
        "nothing": None,
        "spaced": 7,
        "text_n": "n=3",
        "text_obj": 'o={\n  "a": 1\n}',
        "text_flag": "t=true",
        "text_null": "z=.",
        "nested": {"list": [2, "x2"]},
    }
