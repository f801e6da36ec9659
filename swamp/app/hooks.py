"""The repository's hooks: the commands `.swamp.yaml` names for a wait that opened or settled.

Why here: publish (the one place a save's changes are told) calls `start_hooks` with the events a
save produced. This module decides which hooks those events run (Settings.hooks_for) and builds
each hook's stdin document from the run: the wait, its schema, an example payload that passes the
schema and the exact `swamp workflow signal` command, shell-quoted (HOOK-006). The document is data
on the hook's stdin, never part of its command line (HOOK-008). Running the commands, detached and
bounded, is swamp/hooks (HOOK-009..012); nothing here waits for them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..domain.run import WorkflowRun
    from .context import App


def start_hooks(app: App, run: WorkflowRun, changes: list[dict[str, Any]]) -> None:
    """Hand the hooks these events run to swamp/hooks, which starts them detached."""
    settings = app.settings
    if not settings.hooks:
        return
    jobs: list[dict[str, Any]] = []
    for event in changes:
        hooks = settings.hooks_for(event)
        if not hooks:
            continue
        document = hook_document(app, run, event)
        if event["event"] == "wait_opened" and settings.public_url is not None:
            link = _link(app, run, event["waitId"])
            if link is not None:
                document["link"] = link
        for hook in hooks:
            jobs.append(
                {
                    "hook": hook.name,
                    "command": hook.command,
                    "timeout": hook.timeout,
                    "retries": hook.retries,
                    "backoff": hook.backoff,
                    "event": event["event"],
                    "waitId": event["waitId"],
                    "runId": run.id,
                    "workflowId": run.workflowId,
                    "audit": app.runs.audit_location(run),
                    "stdin": json.dumps({"hook": hook.name, **document}, ensure_ascii=False),
                }
            )
    if jobs:
        from ..hooks.launch import launch

        launch(app.layout, jobs)


def _link(app: App, run: WorkflowRun, wait_id: str) -> str | None:
    """A one-use answer link for the wait just opened (GATEWAY-014); a hook without one still runs."""
    try:
        return hook_link(app, run, wait_id)
    except Exception:  # noqa: BLE001 - an observer never fails the save, nor the hook
        return None


def hook_link(app: App, run: WorkflowRun, wait_id: str) -> str | None:
    """The `link` of a waitOpened hook's document (GATEWAY-014): a one-use permission granted by
    the account whose save opened the wait, when `gateway.publicUrl` is set and the wait has no
    answerer policy (a link admits its bearer on its granter's behalf, and the opener is no
    answerer the policy chose). None when there is no link to give. Made here, from the domain
    alone, as links.py makes `wait link`'s (publish imports no use case)."""
    from ..domain.instants import iso
    from ..domain.permissions import grant

    url = app.settings.public_url
    if url is None:
        return None
    _, step = run.find_wait(wait_id)
    wait = step.wait
    if wait is None or wait.answerers is not None or step.status != "waiting" or wait.outcome is not None:
        return None
    now = app.clock.now()
    permission, token = grant(now, app.user, app.on_behalf_of, expires_in=None, uses=1, note="hook link")
    wait.permissions = [*(wait.permissions or []), permission]
    entry: dict[str, Any] = {"at": iso(now), "by": app.user}
    if app.on_behalf_of is not None:
        entry["onBehalfOf"] = app.on_behalf_of
    entry.update(
        {
            "action": "grant",
            "waitId": wait_id,
            "code": "accepted",
            "permissionId": permission.id,
            "link": "hook",
        }
    )
    # Saved by the claim holder whose save opened the wait (publish runs under that claim), into
    # the same run object it goes on with, so its later saves keep the permission.
    app.runs.save_with_audit(run, entry)
    return f"{url}/a/{token}"


def hook_document(app: App, run: WorkflowRun, event: dict[str, Any]) -> dict[str, Any]:
    """What a hook reads on stdin about the wait of `event` (HOOK-006, HOOK-007)."""
    from ..domain import suggested
    from ..domain.waits import example_value

    wait_id = event["waitId"]
    _, step = run.find_wait(wait_id)
    wait = step.wait
    assert wait is not None
    value = example_value(wait.schema)
    fits = not app.validation.problems(value, wait.schema)
    example = value if fits else None
    payload = (
        json.dumps(value, separators=(",", ":"), ensure_ascii=False) if fits else "<json matching the schema>"
    )
    document: dict[str, Any] = {
        "event": event["event"],
        "waitId": wait_id,
        "runId": run.id,
        "workflow": run.workflowName,
        "workflowId": run.workflowId,
        "job": event["job"],
        "step": event["step"],
        "description": wait.description,
        "openedAt": wait.openedAt,
        "deadline": wait.deadline,
        "schema": wait.schema,
        "example": example,
        "signal": suggested.signal(wait_id, payload),
    }
    if event["event"] == "wait_due_soon":
        document["dueSoonAt"] = wait.dueSoonAt
    if event["event"] == "wait_settled":
        document["outcome"] = event["outcome"]
        if "receipt" in event:
            document["receipt"] = event["receipt"]
            if isinstance(step.outputs, dict) and "payload" in step.outputs:
                document["payload"] = step.outputs["payload"]
    return document
