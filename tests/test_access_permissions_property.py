"""Property (ACCESS-041, ACCESS-045, ACCESS-050): for arbitrary answerer policies, accounts,
permissions and moments, a signal is accepted exactly when the policy admits the acting account
(without a token) or a live permission of that wait is presented (with one); every other token is
refused with the reason its permission's state gives, and a grant succeeds exactly when the policy
admits the granter. In process, through the request layer, acting as arbitrary accounts (none of
them in any OS group, so a policy here names accounts)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from typing import Any

import pytest
from conftest_hypothesis import scaled
from helpers import Repo, job, make_repo
from hypothesis import given, settings
from hypothesis import strategies as st

from swamp.domain.actors import Actor
from swamp.domain.errors import SwampError
from swamp.protocol.requests import handle

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
ACCOUNTS = ["swpt-ann", "swpt-bob", "swpt-cy"]


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def write(repo: Repo, policy: dict[str, Any] | None) -> None:
    """The workflow: the wait `mine` under `policy` (None: none), and `other`, open to anyone."""
    guarded = {}
    if policy is not None:  # an empty list of accounts names nobody: the key is left out instead
        guarded = {"answerers": {k: v for k, v in policy.items() if v != []}}
    steps = [
        {
            "name": "mine",
            "task": {"type": "wait_for_signal", "timeout": 86400, "schema": {"type": "integer"}, **guarded},
        },
        {
            "name": "other",
            "task": {"type": "wait_for_signal", "timeout": 86400, "schema": {"type": "integer"}},
        },
    ]
    repo.write_workflow("prop", [job("main", *steps)], id="5c5c5c5c-0000-4000-8000-0000000000ff")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Repo]:
    repo = make_repo(tmp_path_factory.mktemp("perm-prop") / "repo")
    saved = os.environ.get("SWAMP_NOW")
    yield repo
    if saved is None:
        os.environ.pop("SWAMP_NOW", None)
    else:
        os.environ["SWAMP_NOW"] = saved


def ask(repo: Repo, request: str, payload: dict[str, Any], account: str, when: float) -> dict[str, Any]:
    os.environ["SWAMP_NOW"] = at(when)
    return handle(request, {**payload, "repoDir": str(repo.root)}, actor=Actor(account))


PERMISSION = st.fixed_dictionaries(
    {
        "granter": st.sampled_from(ACCOUNTS),
        "expires": st.sampled_from([None, 60, 1800, 3600]),
        "uses": st.sampled_from([None, 1, 2]),
        "revoked": st.booleans(),
    }
)


POLICY = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"accounts": st.lists(st.sampled_from(ACCOUNTS), unique=True, max_size=2), "starter": st.booleans()}
    ).filter(lambda p: p["accounts"] or not p["starter"]),  # a policy that says nothing is refused
)


def admits(policy: dict[str, Any] | None, account: str) -> bool:
    """The model: anyone without a policy; else a named account (any, when none are named), and
    not the starter when `starter: false`."""
    if policy is None:
        return True
    if not policy["starter"] and account == STARTER:
        return False
    return not policy["accounts"] or account in policy["accounts"]


STARTER = ACCOUNTS[0]


@settings(max_examples=scaled(1))
@given(
    policy=POLICY,
    permissions=st.lists(PERMISSION, min_size=0, max_size=3),
    other_live=st.booleans(),
    presented=st.one_of(st.none(), st.integers(0, 2), st.sampled_from(["other", "unknown", "garbage"])),
    sender=st.sampled_from(ACCOUNTS),
    later=st.floats(0, 7200),
)
def test_accepted_exactly_when_admitted_or_a_live_permission_of_the_wait(
    repo: Repo,
    policy: dict[str, Any] | None,
    permissions: list[dict[str, Any]],
    other_live: bool,
    presented: int | str | None,
    sender: str,
    later: float,
) -> None:
    write(repo, policy)
    run = ask(repo, "workflow.run", {"workflow": "prop"}, STARTER, 0)
    mine, other = (w["waitId"] for w in run["waits"])
    granted = []
    kept = []  # the permissions whose grant the policy allowed
    for p in permissions:
        request = {
            "waitId": mine,
            **({"expires": p["expires"]} if p["expires"] else {}),
            **({"uses": p["uses"]} if p["uses"] else {}),
        }
        try:
            made = ask(repo, "workflow.wait.grant", request, p["granter"], 0)["permission"]
        except SwampError as exc:
            assert exc.code == "answerer_not_allowed" and not admits(policy, p["granter"]), exc.to_dict()
            continue
        assert admits(policy, p["granter"])
        if p["revoked"]:
            ask(repo, "workflow.wait.revoke", {"permissionId": made["id"]}, p["granter"], 1)
        granted.append(made)
        kept.append(p)
    permissions = kept
    others = ask(
        repo,
        "workflow.wait.grant",
        {"waitId": other, **({} if other_live else {"expires": 10})},
        ACCOUNTS[1],
        0,
    )
    token: str | None
    if presented is None:
        token = None
    elif isinstance(presented, int):
        token = granted[presented]["token"] if presented < len(granted) else "swp_" + "a" * 32
    elif presented == "other":
        token = others["permission"]["token"]
    else:
        token = "swp_" + "b" * 32 if presented == "unknown" else "not a token"

    def state(p: dict[str, Any]) -> str:
        if p["revoked"]:
            return "revoked"
        if p["expires"] is not None and later > p["expires"]:
            return "expired"
        return "live"

    expected: str  # "accepted" or the refusal's reason
    if token is None:
        expected = "accepted" if admits(policy, sender) else "answerer_not_allowed"
    elif isinstance(presented, int) and presented < len(granted):
        expected = "accepted" if state(permissions[presented]) == "live" else state(permissions[presented])
    elif presented == "other":
        expected = "other_wait" if (other_live or later <= 10) else "unknown"
    else:
        expected = "unknown"

    payload = {"waitId": mine, "payload": 1, **({"token": token} if token is not None else {})}
    try:
        answer = ask(repo, "workflow.signal", payload, sender, later)
        outcome = "accepted"
    except SwampError as exc:
        assert exc.code in ("permission_invalid", "answerer_not_allowed"), exc.to_dict()
        outcome = exc.details["reason"] if exc.code == "permission_invalid" else exc.code
        assert token is None or token not in exc.message + repr(exc.details)
    assert outcome == expected
    if outcome == "accepted":
        assert answer["signal"]["submittedBy"] == sender
        if token is not None:
            used = granted[presented]  # type: ignore[index]
            assert answer["signal"]["permissionId"] == used["id"]
            assert answer["signal"]["grantedBy"] == used["grantedBy"]
    shown = ask(repo, "workflow.wait.show", {"waitId": mine}, ACCOUNTS[0], later)
    assert (shown["status"] == "received") == (outcome == "accepted")
    handle("workflow.cancel", {"workflow": "prop", "run": run["id"], "repoDir": str(repo.root)})
