"""Naming a wait as people do: its ID, a unique prefix of it, or the run and step that hold it.

Every verb that takes a wait (signal, wait show, reject) turns its address into a whole wait ID
here first. A whole ID goes through as it is, so the signal's fast path reads nothing more; a
prefix costs one listing of the wait index; a run and step cost reading that run's record.
"""

from __future__ import annotations

from ..domain import suggested
from ..domain.errors import InvalidRequest
from ..domain.prefixes import check_wait_ref
from ..domain.run import JobRun, StepRun, WorkflowRun
from ..domain.waits import WaitAmbiguous, WaitNotFound
from .context import App


def resolve_wait(
    app: App,
    wait_ref: str | None,
    *,
    run_ref: str | None = None,
    step: str | None = None,
    job: str | None = None,
) -> str:
    """The whole ID of the wait that `wait_ref` (an ID or a unique prefix) or `run_ref` + `step`
    (+ `job`) names."""
    if wait_ref is not None:
        if run_ref is not None or step is not None or job is not None:
            raise InvalidRequest(
                "name the wait with 'waitId' alone, or with 'run' and 'step' (and 'job'), not both",
                {"field": "waitId"},
            )
        if check_wait_ref(wait_ref):
            return wait_ref
        return _by_prefix(app, wait_ref)
    if run_ref is None or step is None:
        missing = "run" if run_ref is None else "step"
        raise InvalidRequest(
            "name the wait with 'waitId' (its ID or a unique prefix), or with 'run' and 'step' (and 'job')",
            {"missing": "waitId" if run_ref is None and step is None else missing},
        )
    return _by_step(app, run_ref, step, job)


def _by_prefix(app: App, prefix: str) -> str:
    ids = app.runs.wait_ids_starting(prefix)
    if not ids:
        raise WaitNotFound(
            f"No wait ID starts with {prefix}; list open waits with: swamp workflow waits",
            {"waitId": prefix, "reason": "unknown"},
        )
    if len(ids) > 1:
        from ..domain.prefixes import SHOWN, ambiguous_wait, wait_candidate

        raise ambiguous_wait(prefix, [wait_candidate(i, app.runs.find_wait(i)) for i in ids[:SHOWN]], ids)
    return ids[0]


def _by_step(app: App, run_ref: str, step: str, job: str | None) -> str:
    """The wait the step holds: its open or settled wait, else the wait ID reserved for it (WAIT-058,
    WAIT-066), so a reserved wait answers as it does by its ID (held early signal, `reserved`)."""
    run = app.runs.find(run_ref)
    matches = [(j, s) for j, s in run.steps() if s.name == step and (job is None or j.name == job)]
    if not matches:
        raise _no_such_step(run, step, job)
    holding = [(j, s) for j, s in matches if _held_id(s) is not None]
    if len(holding) > 1:
        waiting = [(j, s) for j, s in holding if s.status == "waiting"]
        if len(waiting) == 1:
            holding = waiting
        else:
            jobs = sorted(j.name for j, _ in holding)
            raise WaitAmbiguous(
                f"Step '{step}' of run {run.id} holds a wait in several jobs ({', '.join(jobs)}); "
                "say which with --job JOB",
                {"runId": run.id, "step": step, "jobs": jobs, "candidates": _ids(holding)},
            )
    if not holding:
        job_run, step_run = matches[0]
        raise _no_wait(run, job_run.name, step_run.name, step_run.status)
    wait_id = _held_id(holding[0][1])
    assert wait_id is not None
    return wait_id


def _held_id(step: StepRun) -> str | None:
    return step.wait.waitId if step.wait is not None else step.reservedWaitId


def _ids(steps: list[tuple[JobRun, StepRun]]) -> list[str]:
    return sorted(w for _, s in steps if (w := _held_id(s)) is not None)


def _no_such_step(run: WorkflowRun, step: str, job: str | None) -> WaitNotFound:
    where = f" in job '{job}'" if job else ""
    expansions = [
        s.name for j, s in run.steps() if s.forEachTemplate == step and (job is None or j.name == job)
    ]
    details: dict[str, object] = {"runId": run.id, "step": step, "reason": "no_such_step"}
    if job:
        details["job"] = job
    if expansions:
        details["expansions"] = expansions
        return WaitNotFound(
            f"Step '{step}' of run {run.id} is a forEach step; name one of its expansions with --step: "
            f"{', '.join(expansions)}",
            details,
        )
    return WaitNotFound(
        f"Run {run.id} has no step '{step}'{where}; see its steps with: swamp workflow history get {run.id}",
        details,
    )


def _no_wait(run: WorkflowRun, job: str, step: str, status: str) -> WaitNotFound:
    if status == "pending":
        why = "the run has not reached it (pending)"
    elif status == "waiting_approval":
        why = (
            f"it is an approval gate; decide it with: {suggested.approve(run.workflowName, step, run.id)}"
        )
    else:
        why = f"it is {status}"
    return WaitNotFound(
        f"Step {job}.{step} of run {run.id} holds no wait: {why}",
        {"runId": run.id, "step": step, "job": job, "reason": "no_wait", "stepStatus": status},
    )
