"""What a signal attempt leaves: its entry in the run's audit trail and its check-only result.

Machinery below the signal use case (signals.py, hold.py) and the sweep that settles held
signals (held.py): one shape for each, whichever path the signal took. It imports no use case.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from ..domain.instants import iso
from ..domain.run import JobRun, StepRun, WorkflowRun

if TYPE_CHECKING:
    from .answerers import Admission


def signal_audit(
    now: dt.datetime,
    user: str,
    on_behalf_of: str | None,
    wait_id: str,
    code: str,
    signal_id: str | None = None,
    *,
    held: bool = False,
    admission: Admission | None = None,
) -> dict[str, Any]:
    """A signal attempt in the run's audit trail: by whom, to which wait, its outcome `code`
    (`accepted`, `held`, or the refusal's error code); `held` marks the outcome of a held signal;
    `admission` how a wait with a policy admitted it (ACCESS-023)."""
    entry: dict[str, Any] = {"at": iso(now), "by": user}
    if on_behalf_of is not None:
        entry["onBehalfOf"] = on_behalf_of
    entry.update({"action": "signal", "waitId": wait_id, "code": code})
    if signal_id:
        entry["signalId"] = signal_id
    if admission is not None:
        entry.update(admission.audit_fields())
    if held:
        entry["held"] = True
    return entry


def check_only_result(run: WorkflowRun, wait_id: str, job: JobRun, step: StepRun) -> dict[str, Any]:
    """`signal --check`: every check passed, nothing was recorded."""
    return {
        "valid": True,
        "waitId": wait_id,
        "runId": run.id,
        "jobName": job.name,
        "stepName": step.name,
    }
