"""workflow wait grant / revoke, and the token a signal presents (ACCESS-040..069).

A permission is granted on one open wait by someone who may answer it, and kept on that wait in
the run record (its token's SHA-256 only). A signal presenting the token is admitted on the
granter's behalf; the use is counted in the same save as the receipt, under the run's claim.
Every grant, revoke and token refusal is in the run's audit trail, never with the token.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..domain import suggested
from ..domain.errors import SwampError
from ..domain.instants import iso
from ..domain.permissions import Permission, PermissionInvalid, holds, refusal
from ..domain.run import JobRun, StepRun, WorkflowRun
from ..domain.waits import WaitExpired, WaitNotFound
from .answerers import Admission
from .context import App


def admit_answerer(app: App, run: WorkflowRun, wait_id: str, override: str | None) -> Admission:
    """Whether the acting account may answer this wait, and so grant or revoke a permission on it
    (ACCESS-041, ACCESS-061): the policy the wait captured, through the one admission of every
    answer (answerers.py), which refuses with answerer_not_allowed."""
    from .answerers import admit_wait

    job, step = run.find_reserved(wait_id) or run.find_wait(wait_id)  # reserved: GATEWAY-054
    return admit_wait(app, run, job, step, wait_id, override)


# -- the audit trail -------------------------------------------------------------------------


def audit_entry(
    app: App, now: dt.datetime, action: str, wait_id: str, code: str, **fields: Any
) -> dict[str, Any]:
    """A grant or revoke attempt in the run's audit trail (never the token)."""
    entry: dict[str, Any] = {"at": iso(now), "by": app.user}
    if app.on_behalf_of is not None:
        entry["onBehalfOf"] = app.on_behalf_of
    entry.update({"action": action, "waitId": wait_id, "code": code})
    entry.update({k: v for k, v in fields.items() if v is not None})
    return entry


def refusal_fields(exc: SwampError) -> dict[str, Any]:
    """What an audit entry keeps of a token's refusal: the reason and the permission it named."""
    if not isinstance(exc, PermissionInvalid):
        return {}
    kept = {"reason": exc.details.get("reason"), "permissionId": exc.details.get("permissionId")}
    return {k: v for k, v in kept.items() if v is not None}


def delivered_fields(permission: Permission) -> dict[str, Any]:
    """What the audit entry of a signal delivered with a permission adds (ACCESS-046)."""
    return {"via": "permission", "permissionId": permission.id, "grantedBy": permission.grantedBy}


# -- a token presented with a signal ---------------------------------------------------------


def admit_token(app: App, run: WorkflowRun, wait_id: str, token: Any, now: dt.datetime) -> Permission:
    """The permission of wait `wait_id` that `token` is, if it admits its bearer now (ACCESS-045);
    otherwise permission_invalid, its reason `other_wait` when the token is a live permission of
    another open wait (ACCESS-050)."""
    from ..domain.permissions import admit

    reserved = run.find_reserved(wait_id)
    if reserved is not None:  # granted before the wait opened (GATEWAY-054)
        permissions = reserved[1].permissions
    else:
        _, step = run.find_wait(wait_id)
        permissions = step.wait.permissions if step.wait is not None else None
    try:
        return admit(permissions, token, wait_id, now)
    except PermissionInvalid as exc:
        if exc.details.get("reason") == "unknown" and _live_elsewhere(app, token, wait_id, now):
            raise refusal("other_wait", wait_id) from None
        raise


def _live_elsewhere(app: App, token: Any, wait_id: str, now: dt.datetime) -> bool:
    """Whether `token` is a live permission of another open wait of an active run."""
    runs, _ = app.runs.active_runs()
    for run in runs:
        for _, step in run.unsettled_waits():
            wait = step.wait
            if wait is not None and wait.waitId != wait_id and holds(wait.permissions, token, now):
                return True
    return False


def deliver(permission: Permission, step: StepRun, signal_id: str) -> None:
    """The accepted signal used the permission: one use counted, and the receipt (in the record and
    in the step's `signal` output) names the permission and its granter (ACCESS-046, ACCESS-047)."""
    from ..domain.permissions import use

    use(permission, signal_id)
    wait = step.wait
    assert wait is not None and wait.receipt is not None
    wait.receipt.permissionId = permission.id
    wait.receipt.grantedBy = permission.grantedBy
    if isinstance(step.outputs, dict):
        step.outputs["signal"] = wait.receipt.as_signal()


# -- grant -----------------------------------------------------------------------------------


def _open_wait(run: WorkflowRun, wait_id: str, now: dt.datetime, verb: str) -> tuple[JobRun, StepRun]:
    """The step of `wait_id` when the wait is open, or reserved and still able to open (a grant on
    a reserved wait, GATEWAY-054); otherwise the wait's own refusal (ACCESS-041)."""
    reserved = run.find_reserved(wait_id)
    if reserved is not None and verb == "grant a permission":
        from ..domain.held import closed_error

        closed = closed_error(run, *reserved, wait_id)
        if closed is not None:
            raise closed
        return reserved
    if reserved is not None:
        raise WaitNotFound(
            f"Wait {wait_id} is reserved, but step '{reserved[1].name}' has not opened it "
            f"({reserved[1].status}); {verb} once it is open (swamp workflow waits lists open waits)",
            {"waitId": wait_id, "runId": run.id, "reason": "no_wait", "stepStatus": reserved[1].status},
        )
    job, step = run.find_wait(wait_id)
    wait = step.wait
    assert wait is not None
    if step.status != "waiting" or wait.outcome is not None:
        raise step.settled_error(None)
    if wait.is_expired(now):
        raise WaitExpired(
            f"Wait {wait_id} (step '{step.name}') expired at {wait.deadline}; there is nothing left "
            f"to {verb}",
            {"waitId": wait_id, "deadline": wait.deadline},
        )
    return job, step


def _locate(app: App, wait_id: str) -> WorkflowRun:
    from ..domain.waits import check_wait_id

    check_wait_id(wait_id)
    run = app.runs.find_wait(wait_id)
    if run is None:
        raise WaitNotFound(
            f"No wait {wait_id}; list open waits with: swamp workflow waits",
            {"waitId": wait_id, "reason": "unknown"},
        )
    return run


def grant(
    app: App,
    wait_id: str,
    *,
    expires: float | None = None,
    uses: int | None = None,
    note: str | None = None,
    override: str | None = None,
    claim_timeout: float | None = None,
) -> dict[str, Any]:
    """`workflow wait grant`: a permission to deliver to the open wait `wait_id`, granted by someone
    who may answer it (ACCESS-040..043). The result holds the token: the only place it ever is."""
    from ..domain.permissions import grant as new_permission

    found = _locate(app, wait_id)

    def check(run: WorkflowRun, now: dt.datetime) -> tuple[StepRun, Admission]:
        _, step = _open_wait(run, wait_id, now, "grant a permission")
        return step, admit_answerer(app, run, wait_id, override)

    now = app.clock.now()
    try:
        check(found, now)
        with app.claim(found.id, timeout=claim_timeout, purpose="grant"):
            run = app.runs.load(found.workflowId, found.id)
            now = app.clock.now()
            step, admission = check(run, now)
            permission, token = new_permission(
                now, app.user, app.on_behalf_of, expires_in=expires, uses=uses, note=note
            )
            wait = step.wait
            if wait is None:  # reserved: kept on the step until its wait opens (GATEWAY-054)
                step.permissions = [*(step.permissions or []), permission]
            else:
                wait.permissions = [*(wait.permissions or []), permission]
            entry = audit_entry(
                app, now, "grant", wait_id, "accepted", permissionId=permission.id, **admission.audit_fields()
            )
            app.runs.save_with_audit(run, entry)
    except SwampError as exc:
        if exc.code != "claim_timeout":
            app.runs.append_audit(found, audit_entry(app, app.clock.now(), "grant", wait_id, exc.code))
        raise
    return {
        "permission": {
            "id": permission.id,
            "token": token,
            "waitId": wait_id,
            "runId": run.id,
            "grantedBy": permission.grantedBy,
            "grantedAt": permission.grantedAt,
            "expiresAt": permission.expiresAt,
            "uses": permission.uses,
            **({"note": permission.note} if permission.note is not None else {}),
        },
        "next": [_signal_with_token(wait_id)],
    }


def _signal_with_token(wait_id: str) -> str:
    return f"swamp workflow signal {wait_id} --token-file TOKEN_FILE --payload '<json>'"


# -- revoke ----------------------------------------------------------------------------------


def _find_permission(app: App, permission_id: str) -> tuple[WorkflowRun, str]:
    """(the run, the wait ID) holding permission `permission_id`, among the active runs."""
    from ..domain.permissions import PERMISSION_ID

    if isinstance(permission_id, str) and PERMISSION_ID.fullmatch(permission_id):
        runs, _ = app.runs.active_runs()
        for run in runs:
            for _, step in run.steps():
                wait = step.wait
                if wait is not None and any(p.id == permission_id for p in wait.permissions or ()):
                    return run, wait.waitId
                kept = step.permissions if wait is None else None  # a reserved wait's (GATEWAY-054)
                if step.reservedWaitId is not None and any(p.id == permission_id for p in kept or ()):
                    return run, step.reservedWaitId
    if isinstance(permission_id, str) and permission_id.startswith("swp_"):  # a token: not shown
        raise PermissionInvalid(
            "That is a signal permission's token (not shown), not its ID: revoke takes the ID "
            "(perm_...), as the grant and swamp workflow wait show WAIT_ID give it",
            {"reason": "unknown"},
        )
    shown = permission_id[:40] if isinstance(permission_id, str) and permission_id.isprintable() else "?"
    raise PermissionInvalid(
        f"No permission {shown} on a wait of an active run (permission IDs look like perm_ and 26 "
        "letters a-z and digits 2-7; a finished run's permissions have ended); see a wait's "
        "permissions with: swamp workflow wait show WAIT_ID",
        {"reason": "unknown", "permissionId": shown},
    )


def _permission(run: WorkflowRun, wait_id: str, permission_id: str) -> tuple[StepRun, Permission]:
    reserved = run.find_reserved(wait_id)
    _, step = reserved if reserved is not None else run.find_wait(wait_id)
    permissions = step.wait.permissions if step.wait is not None else step.permissions
    for permission in permissions or ():
        if permission.id == permission_id:
            return step, permission
    raise PermissionInvalid(  # it was there a moment ago: a retry reset its wait
        f"No permission {permission_id} on wait {wait_id} any more; see: {suggested.wait_show(wait_id)}",
        {"reason": "unknown", "permissionId": permission_id, "waitId": wait_id},
    )


def revoke(
    app: App, permission_id: str, *, override: str | None = None, claim_timeout: float | None = None
) -> dict[str, Any]:
    """`workflow wait revoke`: the permission admits nothing from now on (ACCESS-060..). Its granter
    may revoke it, and so may whoever may answer its wait (ACCESS-061)."""
    from ..domain.permissions import revoke as revoked

    found, wait_id = _find_permission(app, permission_id)

    def check(run: WorkflowRun, now: dt.datetime) -> tuple[Permission, dict[str, Any]]:
        _, permission = _permission(run, wait_id, permission_id)
        admitted: dict[str, Any] = {}
        if permission.grantedBy != app.user:  # its granter may always take it back
            admission = admit_answerer(app, run, wait_id, override)
            admitted = admission.audit_fields()
        revoked(permission, wait_id, app.user, now)
        return permission, admitted

    try:
        check(found, app.clock.now())
        with app.claim(found.id, timeout=claim_timeout, purpose="revoke"):
            run = app.runs.load(found.workflowId, found.id)
            now = app.clock.now()
            permission, admitted = check(run, now)
            entry = audit_entry(
                app, now, "revoke", wait_id, "accepted", permissionId=permission_id, **admitted
            )
            app.runs.save_with_audit(run, entry)
    except SwampError as exc:
        if exc.code != "claim_timeout":
            entry = audit_entry(
                app,
                app.clock.now(),
                "revoke",
                wait_id,
                exc.code,
                permissionId=permission_id,
                **{k: v for k, v in refusal_fields(exc).items() if k == "reason"},
            )
            app.runs.append_audit(found, entry)
        raise
    return {"permission": {**permission.shown(now), "waitId": wait_id, "runId": run.id}}


def shown_permissions(wait_permissions: list[Permission] | None, now: dt.datetime) -> list[dict[str, Any]]:
    """A wait's permissions as `wait show` lists them: never a token nor its hash (ACCESS-062)."""
    return [p.shown(now) for p in wait_permissions or ()]


def strip_hashes(doc: dict[str, Any]) -> dict[str, Any]:
    """A run document without its permissions' token hashes (they stay in the record file only)."""
    for job in doc.get("jobs") or ():
        for step in job.get("steps") or ():
            wait = step.get("wait") if isinstance(step, dict) else None
            for permission in (wait or {}).get("permissions") or ():
                permission.pop("sha256", None)
    return doc
