"""`resume --from STEP`: which steps go back to pending.

The step and everything downstream of it: steps of its job that depend on it (transitively), and
every step of every job that depends (transitively) on a job with a reset step.
"""

from __future__ import annotations

from .definition import Workflow
from .errors import StepNotFound


def steps_to_reset(workflow: Workflow, step_name: str) -> dict[str, set[str]]:
    """Job name -> template step names to reset."""
    owners = [job for job in workflow.jobs if any(s.name == step_name for s in job.steps)]
    if not owners:
        available = sorted({s.name for j in workflow.jobs for s in j.steps})
        raise StepNotFound(
            f"Workflow '{workflow.name}' has no step '{step_name}'. Steps: {', '.join(available)}",
            {"step": step_name, "available": available},
        )
    reset: dict[str, set[str]] = {}
    for job in owners:
        names = {step_name}
        grew = True
        while grew:
            grew = False
            for step in job.steps:
                if step.name not in names and any(d.step in names for d in step.dependsOn):
                    names.add(step.name)
                    grew = True
        reset[job.name] = names
    jobs = set(reset)
    grew = True
    while grew:
        grew = False
        for job in workflow.jobs:
            if job.name not in jobs and any(d.job in jobs for d in job.dependsOn):
                jobs.add(job.name)
                reset[job.name] = {s.name for s in job.steps}
                grew = True
    return reset
