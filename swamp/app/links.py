"""One-time answer links: `workflow wait link`, `workflow.link.show`, and the hooks' `link`
(GATEWAY-010..019).

A link is a signal permission with one use (permissions.py) whose token is carried in a URL,
`<gateway.publicUrl>/a/<token>`, that `swamp gateway` answers. Making one is a grant like any
other (the same admission, record and audit entry); what a link adds is its URL, and a way to find
the wait from the token alone (`show`), which the gateway's pages and JSON API ask before anything
else. Nothing here returns, logs or records the token other than the URL made for it.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from ..domain.permissions import Permission, PermissionInvalid

if TYPE_CHECKING:
    from ..domain.run import WorkflowRun
    from .context import App

# Settled runs searched for a link's token after the open waits: a link whose wait settled long
# ago answers `unknown`, which is what its page says anyway (nothing to answer).
RECENT_RUNS = 200


def link_url(public_url: str, token: str) -> str:
    return f"{public_url}/a/{token}"  # the hooks' link is made the same way (hooks.py)


def _public_url(app: App) -> str:
    url = app.settings.public_url
    if url is None:
        from ..domain.settings import SettingsInvalid

        raise SettingsInvalid(
            ".swamp.yaml names no gateway.publicUrl, so a link has no address; add the address people "
            "reach `swamp gateway` at, such as `gateway: {publicUrl: https://swamp.example.com}`, or "
            "grant a token instead: swamp workflow wait grant WAIT_ID --uses 1",
            {"path": ".swamp.yaml", "key": "gateway.publicUrl"},
        )
    return url


def wait_link(
    app: App,
    wait_id: str,
    *,
    expires: float | None = None,
    override: str | None = None,
    claim_timeout: float | None = None,
) -> dict[str, Any]:
    """`workflow wait link`: a one-use permission on the open wait, and the URL that carries its
    token (GATEWAY-010). Granted exactly as `wait grant --uses 1` is (ACCESS-040..044)."""
    from .permissions import grant

    url = _public_url(app)  # before the grant: no permission without an address for it
    granted = grant(app, wait_id, expires=expires, uses=1, override=override, claim_timeout=claim_timeout)
    permission = granted["permission"]
    return {
        "url": link_url(url, permission["token"]),
        "permission": permission,
        "next": [f"open it in a browser, or: curl {url}/v1/waits/{wait_id} -H 'Authorization: Bearer TOKEN'"],
    }


def _unknown() -> PermissionInvalid:
    return PermissionInvalid(
        "The link's token is not a permission swamp knows (or its wait settled long ago); ask whoever "
        "sent the link for a new one: swamp workflow wait link WAIT_ID",
        {"reason": "unknown"},
    )


def find(app: App, token: Any) -> tuple[WorkflowRun, str, Permission]:
    """The run, wait ID and permission whose token is `token`: open waits of active runs first,
    then the newest runs; `permission_invalid` reason `unknown` otherwise."""
    from ..domain.permissions import token_sha256, well_formed

    if not well_formed(token):
        raise _unknown()
    digest = token_sha256(token)
    runs, _ = app.runs.active_runs()
    found = _search(runs, digest)
    if found is None:
        active = {run.id for run in runs}
        recent, _ = app.runs.list_runs(limit=RECENT_RUNS)
        found = _search([run for run in recent if run.id not in active], digest)
    if found is None:
        raise _unknown()
    return found


def _search(runs: list[WorkflowRun], digest: str) -> tuple[WorkflowRun, str, Permission] | None:
    import hmac

    for run in runs:
        for _, step in run.steps():
            wait = step.wait
            for permission in (wait.permissions or ()) if wait is not None else ():
                if hmac.compare_digest(permission.sha256, digest):
                    assert wait is not None
                    return run, wait.waitId, permission
    return None


def show(app: App, token: Any) -> dict[str, Any]:
    """`workflow.link.show` (GATEWAY-012): the permission a token is, and its wait as `wait show`
    gives it; never the token."""
    from .signals import show_wait

    run, wait_id, permission = find(app, token)
    now = app.clock.now()
    return {"permission": shown(permission, wait_id, run.id, now), "wait": show_wait(app, wait_id)}


def shown(permission: Permission, wait_id: str, run_id: str, now: dt.datetime) -> dict[str, Any]:
    return {**permission.shown(now), "waitId": wait_id, "runId": run_id}
