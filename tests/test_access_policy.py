"""Answerer and approver policies (spec/access.md, ACCESS-001..): the policy value, the one
admission function, and the workflow file's reader agreeing with workflow.schema.json.

Properties over arbitrary policies, accounts, groups, starters, admins and overrides: an answer is
admitted exactly when the rules say. Real accounts are in test_access_policy_accounts.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
import yaml
from conftest_hypothesis import scaled
from hypothesis import given, settings
from hypothesis import strategies as st

from swamp.app.answerers import OPEN, OVERRIDE, POLICY, admit
from swamp.domain.access import Admins, Policy
from swamp.domain.definition import parse_workflow
from swamp.domain.errors import AnswererNotAllowed, InvalidRequest, SwampError

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "spec" / "schemas" / "workflow.schema.json").read_text(encoding="utf-8"))

NAMES = st.sampled_from(["alice", "bob", "carol", "dave"])
GROUPS = st.sampled_from(["qa", "ops", "rel"])
policies = st.builds(
    Policy,
    accounts=st.lists(NAMES, max_size=3, unique=True),
    groups=st.lists(GROUPS, max_size=2, unique=True),
    starter=st.booleans(),
    required=st.integers(1, 3),
)
member_of = st.frozensets(GROUPS, max_size=3)
starters = st.one_of(st.none(), NAMES)


def expected(policy: Policy, account: str, groups: frozenset[str], started_by: str | None) -> bool:
    """ACCESS-002, ACCESS-007, ACCESS-010 said plainly."""
    if not policy.starter and account == started_by:
        return False
    if not policy.accounts and not policy.groups:
        return True
    return account in policy.accounts or any(g in policy.groups for g in groups)


@settings(max_examples=scaled(8))
@given(policies, NAMES, member_of, starters)
def test_admits_exactly_when_the_policy_says(
    policy: Policy, account: str, groups: frozenset[str], started_by: str | None
) -> None:
    assert policy.admits(account, groups, started_by) == expected(policy, account, groups, started_by)
    captured = Policy.from_dict(json.loads(json.dumps(policy.to_dict())))  # as the record keeps it
    assert captured == policy
    assert captured is not None and captured.admits(account, groups, started_by) == policy.admits(
        account, groups, started_by
    )


def _app(account: str, groups: frozenset[str], admins: Admins) -> Any:
    return SimpleNamespace(
        user=account,
        groups_of=lambda name: groups if name == account else frozenset(),
        settings=SimpleNamespace(admins=admins),
    )


admins_of = st.builds(
    Admins,
    accounts=st.lists(NAMES, max_size=2, unique=True),
    groups=st.lists(GROUPS, max_size=1, unique=True),
)


@settings(max_examples=scaled(8))
@given(st.one_of(st.none(), policies), NAMES, member_of, starters, admins_of, st.sampled_from([None, "away"]))
def test_admit_follows_policy_then_override(
    policy: Policy | None,
    account: str,
    groups: frozenset[str],
    started_by: str | None,
    admins: Admins,
    override: str | None,
) -> None:
    """ACCESS-007, ACCESS-021..023: a non-admin's override is refused; without a policy anyone
    answers (open); an admitted account answers by the policy, override or not; an admin's
    override passes a refusing policy; everyone else is refused."""
    run = SimpleNamespace(id="r", started_by=started_by)
    is_admin = admins.include(account, groups)
    try:
        admission = admit(_app(account, groups, admins), run, policy, override=override, what="wait w")  # type: ignore[arg-type]
    except AnswererNotAllowed as exc:
        refused = exc.details["reason"]
        if override is not None and not is_admin:
            assert refused == "not_admin"
        else:
            assert policy is not None and not policy.admits(account, groups, started_by)
            assert override is None
            assert refused == ("starter" if policy.refuses_starter(account, started_by) else "policy")
            assert exc.message.startswith(f"{account} may not answer wait w: it may be answered by ")
        return
    assert admission.account == account
    assert override is None or is_admin
    if policy is None:
        assert admission.via == OPEN
    elif policy.admits(account, groups, started_by):
        assert admission.via == POLICY and admission.override is None
    else:
        assert admission.via == OVERRIDE and admission.override == override and is_admin


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_override_reason_is_a_usage_error(blank: str) -> None:
    with pytest.raises(InvalidRequest):
        admit(
            _app("alice", frozenset(), Admins(["alice"])),
            SimpleNamespace(id="r", started_by=None),
            None,
            override=blank,
            what="w",
        )  # type: ignore[arg-type]


def test_describe_says_who() -> None:
    assert Policy(["alice", "bob"], ["qa"], False).describe("carol") == (
        "accounts alice, bob or members of group qa, not the account that started the run (carol)"
    )
    assert Policy(starter=False).describe() == "any account, not the account that started the run"


HEAD = "id: 10000000-0000-4000-8000-0000000000f1\nname: pol\njobs:\n  - name: main\n    steps:\n"
WAIT = "      - {{name: s, task: {{type: wait_for_signal, timeout: 60, answerers: {p}}}}}\n"
GATE = "      - {{name: s, task: {{type: manual_approval, prompt: ok, approvers: {p}}}}}\n"
CASES = [
    (WAIT, "{accounts: [a]}", True),
    (WAIT, "{groups: [g], starter: false}", True),
    (WAIT, "{starter: false}", True),
    (WAIT, "{starter: true}", False),
    (WAIT, "{}", False),
    (WAIT, "{accounts: []}", False),
    (WAIT, "{accounts: [a], required: 2}", False),
    (WAIT, "{accounts: ['']}", False),
    (WAIT, "{accounts: [3]}", False),
    (WAIT, "{accounts: a}", False),
    (WAIT, "[a]", False),
    (WAIT, "null", False),
    (GATE, "{required: 2}", True),
    (GATE, "{required: 2.0}", True),
    (GATE, "{required: 1}", False),
    (GATE, "{required: 0, accounts: [a]}", False),
    (GATE, "{required: 1.5, accounts: [a]}", False),
    (GATE, "{required: true, accounts: [a]}", False),
    (GATE, "{groups: [g], starter: 'no'}", False),
    (GATE, "{accounts: [a, b], groups: [g], starter: false, required: 2}", True),
    (GATE, "{acounts: [a]}", False),
]


@pytest.mark.parametrize(("shape", "policy", "loads"), CASES)
def test_the_reader_and_the_schema_agree_on_policies(shape: str, policy: str, loads: bool) -> None:
    """ACCESS-002..005: swamp's loader and workflow.schema.json give one verdict."""
    document = yaml.safe_load(HEAD + shape.format(p=policy))
    try:
        parse_workflow(document)
        loaded = True
    except SwampError:
        loaded = False
    assert loaded == loads
    assert jsonschema.Draft202012Validator(SCHEMA).is_valid(document) == loads


def test_the_definition_a_run_saves_reads_back_with_the_same_policies() -> None:
    """The run executes its saved definition (to_json, read back): the policy survives it."""
    from swamp.domain.definition import Workflow

    text = (
        HEAD
        + WAIT.format(p="{accounts: [a], starter: false}")
        + GATE.replace("name: s", "name: t").format(p="{groups: [g], required: 2}")
    )
    workflow = parse_workflow(yaml.safe_load(text))
    again = Workflow.from_json(json.loads(json.dumps(workflow.to_json())))
    wait, gate = again.jobs[0].steps[0].task, again.jobs[0].steps[1].task
    assert getattr(wait, "answerers") == Policy(["a"], (), False)  # noqa: B009
    assert getattr(gate, "approvers") == Policy((), ["g"], True, 2)  # noqa: B009


@pytest.mark.parametrize(
    "captured",
    [
        {"accounts": ["a"], "groups": [], "starter": True},
        {"accounts": ["a"], "groups": [], "starter": True, "required": 0},
        {"accounts": [1], "groups": [], "starter": True, "required": 1},
        {"accounts": [], "groups": [], "starter": "no", "required": 1},
        {"accounts": [], "groups": [], "starter": True, "required": 1, "extra": 1},
    ],
)
def test_a_record_with_a_policy_it_does_not_understand_is_refused(captured: dict[str, Any]) -> None:
    """RUN-010: a captured policy is read strictly, never guessed at."""
    from swamp.domain.run import RunUnreadable, WorkflowRun
    from swamp.domain.waits import SignalWait

    wait = SignalWait(waitId="wait_" + "a" * 26, openedAt="t", deadline="t", timeout=1, schema={})
    run = WorkflowRun.create(
        run_id="r",
        workflow_id="w",
        workflow_name="n",
        jobs=[("j", ["s"])],
        inputs={},
        tags={},
        initiated_by="me",
        now=__import__("datetime").datetime(2026, 1, 1),
    )
    run.jobs[0].steps[0].wait = wait
    record = run.to_dict()
    WorkflowRun.from_dict(record)  # without a policy: fine
    record["jobs"][0]["steps"][0]["wait"]["answerers"] = captured
    with pytest.raises(RunUnreadable):
        WorkflowRun.from_dict(record)
    record["jobs"][0]["steps"][0]["wait"]["answerers"] = Policy(["a"]).to_dict()
    assert WorkflowRun.from_dict(record).jobs[0].steps[0].wait.answerers == Policy(["a"]).to_dict()  # type: ignore[union-attr]
