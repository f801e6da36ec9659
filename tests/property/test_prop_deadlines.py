"""Deadlines (WAIT-005, -011, -016, -019, -031): random timeouts, sub-millisecond ones included, and
clock readings (SWAMP_NOW, in any time zone, across leap days) around the deadline, the exact
instant included. A signal is accepted iff now <= deadline; past it, `signal` is wait_expired,
`waits` does not list it, and resume fails the step with wait_timeout and runs the failure handler.
"""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path
from typing import Any

import reliability_kit as kit
from conftest_hypothesis import scaled
from hypothesis import event, given, settings
from hypothesis import strategies as st

NAMES = itertools.count()
US = dt.timedelta(microseconds=1)
MS = dt.timedelta(milliseconds=1)

ZONES = st.sampled_from([0, 60, 330, 345, 525, 840, -180, -570, -720]).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)
AWKWARD = [
    dt.datetime(2028, 2, 28, 23, 59, 59, 999500, tzinfo=dt.UTC),
    dt.datetime(2028, 2, 29, 23, 59, 59, 999999, tzinfo=dt.UTC),
    dt.datetime(2024, 2, 29, 12, 0, tzinfo=dt.UTC),
    dt.datetime(2100, 2, 28, 23, 59, 59, 999000, tzinfo=dt.UTC),  # 2100 is not a leap year
    dt.datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
    dt.datetime(2026, 3, 29, 0, 59, 59, 999999, tzinfo=dt.UTC),  # a DST change in Europe
]
STARTS = st.sampled_from(AWKWARD) | st.datetimes(
    min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)
)
TIMEOUTS = (
    st.integers(1, 5_000_000).map(lambda us: us / 1e6)  # sub-second to seconds, microsecond steps
    | st.integers(1, 10 * 365 * 86400)
    | st.sampled_from([0.0005, 0.0015, 0.5, 1, 59.999, 86400, 29 * 86400, 366 * 86400, 10 * 365 * 86400])
)


def stamp(moment: dt.datetime, zone: dt.tzinfo) -> str:
    return moment.astimezone(zone).isoformat(timespec="microseconds")


def parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@st.composite
def offsets(draw: Any, timeout: float) -> dt.timedelta:
    """Where the clock reads when the signal comes, relative to the deadline."""
    exact = st.sampled_from([-MS, -US, dt.timedelta(0), US, MS])
    spread = int(min(timeout * 2, 10 * 86400) * 1e6) + 2
    return draw(exact | st.integers(-spread, spread).map(lambda us: us * US))


def workflow(repo: Path, timeout: float, allow: bool) -> str:
    name = f"deadline-{next(NAMES)}"
    main = kit.job(
        "main",
        kit.wait_step("review", timeout, {"type": "object"}, allowFailure=allow),
        kit.echo_step(
            "after", {"payload": "${{ steps.review.outputs.payload }}"}, dependsOn=[kit.dep("review")]
        ),
        kit.echo_step(
            "handler", {"reason": "${{ steps.review.status }}"}, dependsOn=[kit.dep("review", "failed")]
        ),
    )
    recover = kit.job("recover", kit.echo_step("mop", {}), dependsOn=[kit.jdep("main", "failed")])
    return kit.write_workflow(repo, name, [main, recover])


@settings(max_examples=scaled(1.2))
@given(
    start=STARTS,
    timeout=TIMEOUTS,
    allow=st.booleans(),
    zones=st.tuples(ZONES, ZONES, ZONES),
    data=st.data(),
)
def test_a_signal_is_accepted_iff_now_is_not_past_the_deadline(
    kit_repo: Path, start: dt.datetime, timeout: float, allow: bool, zones: tuple[Any, Any, Any], data: Any
) -> None:
    name = workflow(kit_repo, timeout, allow)
    run = kit.call(kit_repo, "workflow.run", {"workflow": name}, now=stamp(start, zones[0]))
    wait = kit.step_named(kit.the_run(kit_repo, run["id"]), "review")["wait"]
    opened, deadline = parse(wait["openedAt"]), parse(wait["deadline"])
    assert wait["deadline"].endswith("Z") and wait["openedAt"].endswith("Z")
    assert opened <= start < opened + MS, "openedAt is the time the step started waiting"
    whole_ms = -(-round(timeout * 1e6) // 1000)  # the timeout to the microsecond, rounded up to a ms
    assert deadline == opened + whole_ms * MS, "deadline = openedAt + timeout, rounded up to a millisecond"
    assert wait["deadline"][-5] == "." and wait["deadline"][-4:-1].isdigit(), "kept to the millisecond"

    moment = deadline + data.draw(offsets(timeout), label="offset")
    now = stamp(moment, zones[1])
    open_now = moment <= deadline
    event("open" if open_now else "expired")
    before = kit.snapshot(kit_repo)
    listed = kit.call(kit_repo, "workflow.waits", {"workflow": name}, now=now)["waits"]
    everything = kit.call(kit_repo, "workflow.waits", {"workflow": name, "all": True}, now=now)["waits"]
    assert kit.snapshot(kit_repo) == before, "listing waits changed a record"
    assert [w["waitId"] for w in listed] == ([wait["waitId"]] if open_now else [])
    assert [(w["waitId"], w["expired"]) for w in everything] == [(wait["waitId"], not open_now)]

    answer = kit.attempt(
        kit_repo, "workflow.signal", {"waitId": wait["waitId"], "payload": {"at": now}}, now=now
    )
    if open_now:
        assert "error" not in answer, answer
    else:
        assert answer["error"]["code"] == "wait_expired"
        assert answer["error"]["details"] == {"waitId": wait["waitId"], "deadline": wait["deadline"]}
        assert kit.snapshot(kit_repo) == before, "a refused signal changed a record"

    later = stamp(moment + data.draw(st.sampled_from([dt.timedelta(0), US, dt.timedelta(days=3)])), zones[2])
    done = kit.call(kit_repo, "workflow.resume", {"workflow": name, "run": run["id"]}, now=later)
    review = kit.step_named(done, "review")
    ran = {s["name"]: s["status"] for s in kit.steps_of(done)}
    if open_now:
        assert review["status"] == "succeeded" and review["wait"]["outcome"] == "received"
        assert kit.step_named(done, "after")["outputs"]["args"]["payload"] == {"at": now}
        assert (ran["handler"], ran["mop"], done["status"]) == ("skipped", "skipped", "succeeded")
        return
    assert (review["status"], review["reason"], review["wait"]["outcome"]) == (
        "failed",
        "wait_timeout",
        "timed_out",
    )
    assert review["error"] == f"Wait timed out: no signal by {wait['deadline']}"
    assert review["allowedFailure"] is allow
    if allow:  # the failure is allowed: the step's own failure handler runs and the run succeeds
        assert (ran["handler"], ran["after"], ran["mop"], done["status"]) == (
            "succeeded",
            "skipped",
            "skipped",
            "succeeded",
        )
    else:  # the job fails; the job that handles its failure runs; the run fails
        assert (ran["mop"], done["status"], done["failedStep"]) == ("succeeded", "failed", "main.review")
    assert kit.call(kit_repo, "workflow.waits", {"workflow": name, "all": True}, now=later)["waits"] == []
    again = kit.attempt(kit_repo, "workflow.signal", {"waitId": wait["waitId"], "payload": {}}, now=later)
    assert again["error"]["code"] == "wait_settled"
    assert again["error"]["details"]["outcome"] == "timed_out"
