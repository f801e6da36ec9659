"""workflow cancel: stop a suspended (or interrupted) run; no step is left waiting."""

from __future__ import annotations

from typing import Any

from ..domain.run import WorkflowRun
from .access import change_run, resolve_run
from .context import App
from .views import run_document


def cancel(
    app: App,
    workflow_ref: str,
    *,
    run_ref: str | None = None,
    reason: str | None = None,
    claim_timeout: float | None = None,
) -> dict[str, Any]:
    run = resolve_run(app, workflow_ref, run_ref, ["suspended", "interrupted", "pending"], verb="cancel")

    behalf = f" (for {app.on_behalf_of})" if app.on_behalf_of else ""
    default_reason = f"cancelled by {app.user}{behalf}"

    def apply(fresh: WorkflowRun) -> None:
        fresh.cancel(app.clock.now(), reason or default_reason)

    saved, _ = change_run(app, run, apply, purpose="cancel", claim_timeout=claim_timeout)
    if saved.reserved_waits():  # early signals held for waits it never opened are refused
        from .held import settle_after

        settle_after(app, saved)
    return run_document(app, saved)
