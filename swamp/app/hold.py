"""workflow signal to a reserved wait whose step has not opened it: the signal is held (WAIT-069..).

Part of the signal use case (signals.py calls `hold`): the checks made without the run's claim,
the held file written, and, when the run opened the wait meanwhile, the signal applied here under
the claim (held.py explains why this is exactly once). Settling held signals is machinery below
it (held.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..domain import suggested
from ..domain.errors import ClaimTimeout, SwampError
from ..domain.held import HeldSignal, SignalHeld, closed_error, reserved_schema
from ..domain.instants import iso
from ..domain.permissions import Permission
from ..domain.run import JobRun, StepRun, WorkflowRun
from ..domain.waits import (
    PayloadMalformed,
    SignalReceipt,
    SignalWait,
    empty_payload,
    new_signal_id,
    payload_digest,
    payload_invalid,
)
from .context import App
from .held import EarlySignals, settle_claimed
from .signal_results import check_only_result


def hold(
    app: App,
    found: WorkflowRun,
    job: JobRun,
    step: StepRun,
    wait_id: str,
    read_payload: Callable[[], Any],
    *,
    check_only: bool,
    claim_timeout: float | None,
    audit: Callable[..., None],
    accepted: Callable[[WorkflowRun, str], dict[str, Any]],
    continue_run: Callable[[WorkflowRun], dict[str, Any]] | None = None,
    override: str | None = None,
    permission: Permission | None = None,
    delivery_id: str | None = None,
) -> dict[str, Any]:
    """A signal to a reserved wait that has not opened (WAIT-069..). `audit(run, code, signal_id,
    admission=None)` notes an attempt; `accepted(run, wait_id)` is the ordinary result once a wait
    took its signal. The sender is admitted first, by the policy the wait will capture (ACCESS-009):
    one it refuses is not held, so sending early never passes a policy by."""
    from .answerers import admit_wait

    store = app.held
    now = app.clock.now()
    schema = reserved_schema(found, job.name, step.template)
    try:
        # A signal permission granted on the reserved wait admits instead of the policy; its use
        # is counted when the held signal is applied (GATEWAY-054).
        admission = admit_wait(app, found, job, step, wait_id, override) if permission is None else None
        closed = closed_error(found, job, step, wait_id)
        if closed is not None:
            raise closed
        existing = store.read(wait_id)
        if existing is not None:
            raise _already_held(existing, wait_id, step, read_payload, delivery_id)
        payload = _read(read_payload, wait_id, schema, app)
        problems = app.validation.problems(payload, schema)
        if problems:
            raise payload_invalid(wait_id, problems)
    except SwampError as exc:
        if not check_only:
            audit(found, exc.code, None)
        raise
    if check_only:
        return check_only_result(found, wait_id, job, step)
    held = HeldSignal(
        waitId=wait_id,
        runId=found.id,
        workflowId=found.workflowId,
        signalId=new_signal_id(),
        heldAt=iso(now),
        submittedBy=app.user,
        payload=payload,
        onBehalfOf=app.on_behalf_of,
        permissionId=permission.id if permission is not None else None,
        deliveryId=delivery_id,
    )
    if not store.hold(held):  # another early signal was held between the look and the write
        other = store.read(wait_id)
        error = (
            _already_held(other, wait_id, step, lambda: payload, delivery_id) if other else _raced(wait_id)
        )
        audit(found, error.code, None)
        raise error
    audit(found, "held", held.signalId, admission=admission)
    # Written first, read after: if the run has opened the wait meanwhile, its executor may have
    # looked for a held signal before this one was there, so apply it here, under the claim.
    again = app.runs.load(found.workflowId, found.id)
    reserved = again.find_reserved(wait_id)
    if reserved is not None:
        closed = closed_error(again, *reserved, wait_id)
        if closed is not None:  # the run finished (or skipped the step) as it was held
            early = EarlySignals(app)
            early.refuse(again, wait_id, closed, held)
            raise closed
        return _held_result(again, reserved[0], reserved[1], held)
    if again.status == "running" and app.claim_held(again.id):
        # Read after the file was written, and still executing: the process executing it saves
        # the run suspended (or ended) later, then sweeps, and finds this signal (WAIT-020).
        return _held_result(again, job, step, held)
    try:
        with app.claim(found.id, timeout=claim_timeout, purpose="signal"):
            run = app.runs.load(found.workflowId, found.id)
            early = settle_claimed(app, run)
            applied_here = isinstance(early.outcomes.get(wait_id), SignalReceipt)
            # Applied by this sender (the run let go before it could see the file): `--resume`
            # continues the run under this same claim, as for an ordinary signal (WAIT-060).
            continued = continue_run(run) if continue_run is not None and applied_here else None
    except ClaimTimeout:
        return _held_result(again, job, step, held)  # whoever holds the claim applies it
    outcome = early.outcomes.get(wait_id)
    if isinstance(outcome, SwampError):
        raise outcome
    _, opened = run.find_wait(wait_id)
    assert opened.wait is not None
    if opened.wait.receipt is not None and opened.wait.receipt.id == held.signalId:
        doc = accepted(run, wait_id)  # applied, here or by the executor when the wait opened
        if continued is not None:
            from .continuation import add_outcome

            add_outcome(app, doc, run, continued)
        return doc
    if opened.status == "waiting" and store.exists(wait_id):
        return _held_result(run, job, step, held)
    raise opened.settled_error(payload, delivery_id)


def _read(read_payload: Callable[[], Any], wait_id: str, schema: Any, app: App) -> Any:
    try:
        return read_payload()
    except PayloadMalformed as exc:
        if exc.details.get("reason") == "empty":
            provisional = SignalWait(waitId=wait_id, openedAt="", deadline="", timeout=1, schema=schema)
            raise empty_payload(provisional, app.validation.problems) from None
        raise


def _already_held(
    existing: HeldSignal,
    wait_id: str,
    step: StepRun,
    read_payload: Callable[[], Any],
    delivery_id: str | None = None,
) -> SignalHeld:
    try:
        same = payload_digest(read_payload()) == payload_digest(existing.payload)
    except SwampError:
        same = False
    details: dict[str, Any] = {
        "waitId": wait_id,
        "signalId": existing.signalId,
        "heldAt": existing.heldAt,
        "samePayload": same,
    }
    same_delivery = ""
    if delivery_id is not None:  # this very delivery, sent again (WAIT-088)?
        details["sameDelivery"] = delivery_id == existing.deliveryId
        if details["sameDelivery"]:
            same_delivery = f", from this same delivery ({delivery_id})"
    return SignalHeld(
        f"Wait {wait_id} already holds early signal {existing.signalId} (held at {existing.heldAt}"
        f"{same_delivery}); "
        f"it is applied when step '{step.name}' opens, and the wait takes no other signal. "
        f"See it with: swamp workflow wait show {wait_id}",
        details,
    )


def _raced(wait_id: str) -> SignalHeld:
    return SignalHeld(
        f"Wait {wait_id} took another early signal at the same moment; see it with: "
        f"{suggested.wait_show(wait_id)}",
        {"waitId": wait_id},
    )


def _held_result(run: WorkflowRun, job: JobRun, step: StepRun, held: HeldSignal) -> dict[str, Any]:
    return {
        "held": True,
        "waitId": held.waitId,
        "runId": run.id,
        "workflowName": run.workflowName,
        "jobName": job.name,
        "stepName": step.name,
        "payload": held.payload,
        "signal": {
            "id": held.signalId,
            "waitId": held.waitId,
            "receivedAt": held.heldAt,
            "submittedBy": held.submittedBy,
            **({"onBehalfOf": held.onBehalfOf} if held.onBehalfOf is not None else {}),
            **({"deliveryId": held.deliveryId} if held.deliveryId is not None else {}),
        },
        "runStatus": run.status,
        "openWaits": [],
        "next": [suggested.wait_show(held.waitId)],
    }
