"""How a workflow file has drifted from the definition a run saved when it started.

A run executes its saved definition, never the current file (RESUME-001), so after an edit a
resume (or `resume --from`) can repeat the very error the edit was meant to fix. `resume` says so
(RESUME-022): it compares digests of the two definitions, both in the loader's normal form, and
only when they differ names what differs, job by job and step by step.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# At most this many differences are named; the rest are counted.
SHOWN = 5


def definition_digest(definition: dict[str, Any]) -> str:
    """SHA-256 of the definition as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def definition_changes(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between the saved definition and the current one (empty: nothing)."""
    if definition_digest(saved) == definition_digest(current):
        return []
    changes = [
        f"workflow {key}"
        for key in sorted(set(saved) | set(current))
        if key != "jobs" and saved.get(key) != current.get(key)
    ]
    saved_jobs = {job.get("name"): job for job in saved.get("jobs") or []}
    current_jobs = {job.get("name"): job for job in current.get("jobs") or []}
    for name in [*saved_jobs, *[n for n in current_jobs if n not in saved_jobs]]:
        old, new = saved_jobs.get(name), current_jobs.get(name)
        if old is None:
            changes.append(f"job '{name}' added")
        elif new is None:
            changes.append(f"job '{name}' removed")
        elif old != new:
            changes += _job_changes(str(name), old, new)
    if len(changes) > SHOWN:
        changes = [*changes[:SHOWN], f"{len(changes) - SHOWN} more"]
    return changes or ["the definition"]


def _job_changes(job: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    changes = [
        f"job '{job}' {key}"
        for key in sorted(set(old) | set(new))
        if key != "steps" and old.get(key) != new.get(key)
    ]
    old_steps = {step.get("name"): step for step in old.get("steps") or []}
    new_steps = {step.get("name"): step for step in new.get("steps") or []}
    for name in [*old_steps, *[n for n in new_steps if n not in old_steps]]:
        before, after = old_steps.get(name), new_steps.get(name)
        if before is None:
            changes.append(f"step '{name}' added to job '{job}'")
        elif after is None:
            changes.append(f"step '{name}' removed from job '{job}'")
        elif before != after:
            changes.append(f"step '{name}' of job '{job}'")
    if list(old_steps) != list(new_steps) and set(old_steps) == set(new_steps):
        changes.append(f"the order of the steps of job '{job}'")
    return changes
