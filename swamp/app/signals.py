"""workflow signal / waits / wait show: the wait_for_signal commands.

`signal` follows `approve`: the same run claim, the same load, change and save. The wait ID is the
only address; the run is found through the wait index. Every attempt that reaches a run is
appended to the run's audit trail (beside the record, so a refusal leaves the record untouched).

Use cases. A signal to a wait whose step has not opened it is held (hold.py, part of this use case);
what they share with the other use cases is machinery below them: settling held signals (held.py),
continuing the run under its claim (continuation.py), the audit entry and the check-only result
(signal_results.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..domain import suggested
from ..domain.errors import RunNotFound, SwampError
from ..domain.run import JobRun, StepRun, WorkflowRun
from ..domain.waits import SignalReceipt, SignalWait, WaitNotFound, check_wait_id
from .context import App
from .signal_results import check_only_result, signal_audit
from .views import wait_command

if TYPE_CHECKING:
    from .answerers import Admission


def _locate(app: App, wait_id: str) -> WorkflowRun:
    check_wait_id(wait_id)
    run = app.runs.find_wait(wait_id)
    if run is None:
        raise _unknown(wait_id)
    return run


def _unknown(wait_id: str) -> WaitNotFound:
    return WaitNotFound(
        f"No wait {wait_id}; list open waits with: swamp workflow waits",
        {"waitId": wait_id, "reason": "unknown"},
    )


def _open_while_executing(app: App, run: WorkflowRun, wait_id: str) -> tuple[JobRun, StepRun] | None:
    """The step of an open wait whose run a live process is still executing (finishing the steps
    beside it, WAIT-020): a signal to it is held like an early one, and that process applies it
    before it lets the run's claim go. None otherwise (a run left `running` by a process that
    stopped is refused)."""
    if run.status != "running":
        return None
    for job, step in run.steps():
        wait = step.wait
        if wait is not None and wait.waitId == wait_id and step.status == "waiting" and wait.outcome is None:
            return (job, step) if app.claim_held(run.id) else None
    return None


def _read_unclaimed(app: App, wait_id: str) -> WorkflowRun:
    """The run holding the wait, read without its claim (records are replaced atomically, so this
    is one consistent state); a stale wait index entry is mended by find_wait."""
    check_wait_id(wait_id)
    run = app.runs.read_holding(wait_id)
    if run is None:
        raise _unknown(wait_id)
    return run


def signal(
    app: App,
    wait_id: str,
    read_payload: Callable[[], Any],
    *,
    check_only: bool = False,
    claim_timeout: float | None = None,
    resume: bool = False,
    emit: Callable[[dict[str, Any]], None] | None = None,
    override: str | None = None,
    token: str | None = None,
    delivery_id: str | None = None,
) -> dict[str, Any]:
    """Every check, payload and schema included, is made first on the record read without the
    claim (WAIT-016): a slow or hostile payload never holds the claim. Then, under the claim, the
    record is read again and what can have changed since (the step, the deadline, the run's status)
    is checked again with the payload already read and checked. With `resume`, the run is then
    continued under that same claim when nothing else is open (continuation.py). The wait's
    answerer policy is the first check of all (ACCESS-008): it was captured when the wait opened
    and never changes, so it is not checked again under the claim.

    A `token` (a signal permission, permissions.py) is the admission instead of the policy: it is
    checked first, before the wait's own checks, and again under the claim, where its use is
    counted in the same save as the receipt (ACCESS-045..047). A signal with a token is never held
    (ACCESS-052).

    A `delivery_id` (the sender's ID of this delivery, WAIT-086) is kept on the receipt; a wait that
    already took a signal says whether it was this very delivery (`sameDelivery`, WAIT-087)."""
    from ..domain.waits import check_delivery_id
    from .answerers import check_override

    check_override(override)
    check_delivery_id(delivery_id)
    if token is not None and override is not None:
        from ..domain.errors import InvalidRequest

        raise InvalidRequest(
            "a signal delivered with a signal permission's token needs no --override; give one of them",
            {"field": "override"},
        )
    user, on_behalf_of = app.user, app.on_behalf_of
    found = _read_unclaimed(app, wait_id)
    now = app.clock.now()
    held_with = None
    if token is not None:
        from .permissions import admit_token

        try:
            held_with = admit_token(app, found, wait_id, token, now)
        except SwampError as exc:
            if not check_only:
                app.runs.append_audit(found, _refused(now, user, on_behalf_of, wait_id, exc))
            raise
    reserved = found.find_reserved(wait_id) or (
        _open_while_executing(app, found, wait_id) if token is None else None
    )
    if reserved is not None:  # its step has not opened the wait, or its run is busy: held (hold.py)
        from .continuation import continue_if_nothing_open
        from .hold import hold

        def note(
            run: WorkflowRun, code: str, signal_id: str | None, admission: Admission | None = None
        ) -> None:
            app.runs.append_audit(
                run,
                signal_audit(
                    app.clock.now(), user, on_behalf_of, wait_id, code, signal_id, admission=admission
                ),
            )

        return hold(
            app,
            found,
            *reserved,
            wait_id,
            read_payload,
            check_only=check_only,
            claim_timeout=claim_timeout,
            audit=note,
            accepted=lambda run, wid: _accepted(app, run, wid, app.clock.now()),
            continue_run=(lambda run: continue_if_nothing_open(app, run, emit)) if resume else None,
            override=override,
            permission=held_with,
            delivery_id=delivery_id,
        )
    try:
        from .answerers import admit_wait

        admission = None  # with a token, the token is the admission (checked above, ACCESS-045)
        if token is None:
            admission = admit_wait(app, found, *found.find_wait(wait_id), wait_id, override)
        job, step, payload, _ = found.signal(
            now, wait_id, read_payload, user, app.validation.problems, record=False, delivery_id=delivery_id
        )
    except SwampError as exc:
        if not check_only:
            app.runs.append_audit(found, signal_audit(now, user, on_behalf_of, wait_id, exc.code))
        raise
    if check_only and token is not None:  # checked, never used (ACCESS-053)
        return _checked_with(app, found, wait_id, job, step, token, now)
    if check_only:
        return check_only_result(found, wait_id, job, step)
    checked_schema = step.wait.schema if step.wait is not None else None

    def checked_already(value: Any, schema: Any) -> list[Any]:
        # The schema is captured once per wait ID and never changes; check again only if it did.
        return [] if schema == checked_schema else app.validation.problems(value, schema)

    # Brief unless the run is continued under the same claim: the claim is then only the write's
    # own transaction on PostgreSQL (its lock sent with the read, released by the commit).
    with app.claim(found.id, timeout=claim_timeout, purpose="signal", brief=not resume):
        held_now = app.held.exists_with_next_read(wait_id)  # one round trip with the load
        try:
            run = app.runs.load_again(found)  # the checks above changed nothing in `found`
        except RunNotFound:
            raise _unknown(wait_id) from None
        if held_now():
            from .held import settle_claimed  # an early signal held for this wait comes first

            settle_claimed(app, run)
        now = app.clock.now()
        permission = None
        try:
            if token is not None:
                from .permissions import admit_token

                permission = admit_token(app, run, wait_id, token, now)
            job, step, payload, receipt = run.signal(
                now,
                wait_id,
                lambda: payload,
                user,
                checked_already,
                on_behalf_of=on_behalf_of,
                override=admission.override if admission is not None else None,
                delivery_id=delivery_id,
            )
        except SwampError as exc:
            app.runs.append_audit(run, _refused(now, user, on_behalf_of, wait_id, exc))
            raise
        signal_id = receipt.id if receipt else None
        # The receipt and the audit entry: one transaction where the store has them (PostgreSQL).
        entry = signal_audit(now, user, on_behalf_of, wait_id, "accepted", signal_id, admission=admission)
        if permission is not None and receipt is not None:
            from .permissions import deliver, delivered_fields

            deliver(permission, step, receipt.id)  # its use, saved with the receipt (ACCESS-047)
            entry.update(delivered_fields(permission))
        app.runs.save_with_audit(run, entry, settled_only=True)
        if resume:
            from .continuation import add_outcome, continue_if_nothing_open

            outcome = continue_if_nothing_open(app, run, emit)
    assert receipt is not None
    doc = _accepted(app, run, wait_id, now, job, step, payload, receipt)
    if resume:
        add_outcome(app, doc, run, outcome)
    return doc


def _checked_with(
    app: App, run: WorkflowRun, wait_id: str, job: JobRun, step: StepRun, token: str, now: dt.datetime
) -> dict[str, Any]:
    """`signal --check` with a token: valid, and the permission it is (nothing used)."""
    from .permissions import admit_token

    permission = admit_token(app, run, wait_id, token, now)
    return {**check_only_result(run, wait_id, job, step), "permissionId": permission.id}


def _refused(
    now: dt.datetime, user: str, on_behalf_of: str | None, wait_id: str, exc: SwampError
) -> dict[str, Any]:
    """The audit entry of a refused signal; a token's refusal keeps its reason, never the token."""
    entry = signal_audit(now, user, on_behalf_of, wait_id, exc.code)
    if exc.code == "permission_invalid":
        from .permissions import refusal_fields

        entry.update(refusal_fields(exc))
    return entry


def _accepted(
    app: App,
    run: WorkflowRun,
    wait_id: str,
    now: dt.datetime,
    job: JobRun | None = None,
    step: StepRun | None = None,
    payload: Any = None,
    receipt: SignalReceipt | None = None,
) -> dict[str, Any]:
    """The result of a signal the wait took (WAIT-027)."""
    if job is None or step is None or receipt is None:
        job, step = run.find_wait(wait_id)
        assert step.wait is not None and step.wait.receipt is not None
        receipt = step.wait.receipt
        payload = step.outputs.get("payload") if isinstance(step.outputs, dict) else None
    still_open = [s.wait.waitId for _, s in run.open_waits(now) if s.wait is not None]
    return {
        "waitId": wait_id,
        "runId": run.id,
        "workflowName": run.workflowName,
        "jobName": job.name,
        "stepName": step.name,
        "payload": payload,
        "signal": receipt.as_signal(),
        "runStatus": run.status,
        "openWaits": still_open,
        "next": [suggested.resume(run.workflowName, run.id)]
        if not still_open
        else [wait_command(app, run, w) for w in still_open],
    }


def _wait_entry(
    run: WorkflowRun, job_name: str, step_name: str, wait: SignalWait, now: dt.datetime
) -> dict[str, Any]:
    left = wait.seconds_left(now)
    return {
        "waitId": wait.waitId,
        "workflowName": run.workflowName,
        "workflowId": run.workflowId,
        "runId": run.id,
        "jobName": job_name,
        "stepName": step_name,
        "openedAt": wait.openedAt,
        "deadline": wait.deadline,
        "secondsLeft": round(left, 3),
        "expired": left < 0,
        "description": wait.description,
        "schema": wait.schema,
        **({"answerers": wait.answerers} if wait.answerers is not None else {}),
    }


def opened_hook_failures(audit: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """HOOK-017: for each wait whose last `waitOpened` attempt in `audit` did not end ok, what
    `waits` and `wait show` say of it as `hookFailed`: that attempt's outcome, and when the next
    one is due (null: none is)."""
    last: dict[str, dict[str, Any]] = {}
    for entry in audit:
        if entry.get("action") == "hook" and entry.get("hook") == "waitOpened":
            last[str(entry.get("waitId"))] = entry
    return {
        wait_id: {
            "hook": "waitOpened",
            "code": entry.get("code"),
            "exitCode": entry.get("exitCode"),
            "at": entry.get("at"),
            "attempt": entry.get("attempt", 1),
            "attempts": entry.get("attempts", 1),
            "retryAt": entry.get("retryAt"),
        }
        for wait_id, entry in last.items()
        if entry.get("code") != "ok"
    }


def list_waits(
    app: App,
    workflow_ref: str | None = None,
    *,
    expiring_within: float | None = None,
    include_expired: bool = False,
    reserved: bool = False,
) -> dict[str, Any]:
    from .access import suspended_runs, workflow_id_for

    workflow_id = workflow_id_for(app, workflow_ref)[0] if workflow_ref else None
    now = app.clock.now()
    waits = []
    for run in suspended_runs(app, workflow_id):
        of_run = []
        for job, step in run.unsettled_waits():
            assert step.wait is not None
            entry = _wait_entry(run, job.name, step.name, step.wait, now)
            if entry["expired"] and not include_expired:
                continue
            if expiring_within is not None and entry["secondsLeft"] > expiring_within:
                continue
            of_run.append(entry)
        if of_run:
            failed = opened_hook_failures(app.runs.read_audit(run))
            for entry in of_run:
                if entry["waitId"] in failed:
                    entry["hookFailed"] = failed[entry["waitId"]]
        waits.extend(of_run)
    waits.sort(key=lambda w: (w["deadline"], w["waitId"]))
    from .announcements import deadlines_enforced

    listed: dict[str, Any] = {"waits": waits, "deadlineEnforced": deadlines_enforced(app)}  # WAIT-090
    if not reserved:
        return listed
    from .held import reserved_entries

    return {**listed, "reserved": reserved_entries(app, workflow_id)}


def show_wait(app: App, wait_id: str) -> dict[str, Any]:
    run = _locate(app, wait_id)
    reserved = run.find_reserved(wait_id)
    if reserved is not None:
        from .held import show_reserved

        return show_reserved(app, run, *reserved, wait_id)
    job, step = run.find_wait(wait_id)
    wait = step.wait
    assert wait is not None
    now = app.clock.now()
    doc = _wait_entry(run, job.name, step.name, wait, now)
    doc["status"] = (
        "open"
        if step.status == "waiting" and not wait.is_expired(now)
        else ("expired" if step.status == "waiting" else wait.outcome or step.status)
    )
    doc["stepStatus"] = step.status
    if step.status == "waiting":
        from .announcements import deadlines_enforced

        doc["deadlineEnforced"] = deadlines_enforced(app)  # WAIT-090
    doc["hooks"] = [
        entry
        for entry in app.runs.read_audit(run)
        if entry.get("action") == "hook" and entry.get("waitId") == wait_id
    ]
    failed = opened_hook_failures(doc["hooks"]).get(wait_id)
    if failed is not None:
        doc["hookFailed"] = failed
    if wait.permissions:
        from .permissions import shown_permissions

        doc["permissions"] = shown_permissions(wait.permissions, now)
    if wait.receipt is not None:
        doc["receipt"] = wait.receipt.as_signal()
        doc["payload"] = (step.outputs or {}).get("payload") if isinstance(step.outputs, dict) else None
    if wait.receipt is not None and wait.receipt.heldAt is not None:
        doc["heldAt"] = wait.receipt.heldAt  # the signal was sent early and held (WAIT-072)
    if wait.receipt is None or wait.receipt.heldAt is None:
        from .held import held_fields  # one held now, or the last one refused (WAIT-073, WAIT-074)

        doc.update(held_fields(app, run, wait_id))
    if doc["status"] == "open":
        from .views import payload_example, signal_text

        example = payload_example(app, wait.schema)
        if example[0]:
            doc["examplePayload"] = example[1]
        doc["next"] = [signal_text(wait_id, example)]  # a placeholder without an example
    return doc
