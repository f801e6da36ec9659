"""The active-run index entry: which runs are not finished, and what both stores keep about them.

Why: the file store (store/runs.py) keeps `.swamp/index/active/` by hand and PostgreSQL
(store/pg/runs.py) keeps the same facts as columns beside the record; supersede
(app/supersede.py) compares inputs by the same digest. One definition keeps them agreeing.
"""

from __future__ import annotations

import json
from typing import Any

from .instants import parse_iso
from .run import WorkflowRun

ACTIVE = frozenset({"pending", "running", "suspended"})


def inputs_digest(inputs: dict[str, Any]) -> str:
    import hashlib  # here: `waits` and the other readers never make a digest

    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def active_entry(run: WorkflowRun) -> dict[str, Any]:
    deadlines = [s.wait.deadline for _, s in run.unsettled_waits() if s.wait is not None]
    return {
        "runId": run.id,
        "workflowId": run.workflowId,
        "workflowName": run.workflowName,
        "status": run.status,
        "inputsSha256": inputs_digest(run.inputs),
        "nextDeadline": min(deadlines, key=parse_iso) if deadlines else None,
    }
