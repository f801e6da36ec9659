"""Who may answer: the one admission every answer path goes through (spec/access.md).

`workflow signal`, `approve` and `reject` (CLI, `--jsonl`, serve, the client: all through
protocol/requests.py) call `admit` with the policy the wait or gate captured when it opened,
before any other check of the wait, the gate or the payload (ACCESS-008): an account the policy
refuses learns nothing about what the wait would accept. The acting account is `app.user` (this
process's real user, or serve's peer); its groups come from the account database (store/accounts.py
through the App).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..domain.access import Policy
from ..domain.errors import AnswererNotAllowed, InvalidRequest
from ..domain.run import JobRun, StepRun, WorkflowRun
from .context import App

OPEN = "open"  # the wait or gate has no policy: anyone may answer
POLICY = "policy"  # the policy admits the account
OVERRIDE = "override"  # an admin answered past the policy, with a reason (ACCESS-021)


@dataclass(frozen=True, slots=True)
class Admission:
    account: str
    via: str  # OPEN, POLICY or OVERRIDE
    reason: str | None = None  # the override's reason (via OVERRIDE)
    permission: dict[str, Any] | None = None  # reserved for signal permissions (ACCESS-040..)

    @property
    def override(self) -> str | None:
        return self.reason if self.via == OVERRIDE else None

    def audit_fields(self) -> dict[str, Any]:
        """What an audit entry says of how the answer was admitted (nothing when it was open)."""
        if self.via == OPEN:
            return {}
        fields: dict[str, Any] = {"via": self.via}
        if self.via == OVERRIDE:
            fields["override"] = self.reason
        return fields


def check_override(override: str | None) -> str | None:
    """An override's reason: a non-empty line of text (ACCESS-020)."""
    if override is not None and (not isinstance(override, str) or not override.strip()):
        raise InvalidRequest(
            "--override needs a reason: say why the policy is overridden, e.g. --override 'QA lead is away'",
            {"field": "override"},
        )
    return override


def admit(
    app: App,
    run: WorkflowRun,
    policy: Policy | None,
    *,
    override: str | None,
    what: str,
    details: dict[str, Any] | None = None,
) -> Admission:
    """Whether the acting account may answer `what` (e.g. "wait wait_x", "step 'deploy'") of
    `run` under `policy` (None: no policy). Raises answerer_not_allowed, whose message says who
    may answer and what to do; `details` are added to the refusal's."""
    check_override(override)
    account = app.user
    groups = app.groups_of(account)
    admins = app.settings.admins
    is_admin = admins.include(account, groups)
    if override is not None and not is_admin:
        raise _refused(
            f"{account} may not use --override: only the repository's admins may "
            f"({admins.describe() or 'none are named in .swamp.yaml'}); "
            + (
                f"{what} may be answered by {policy.describe(run.started_by)}"
                if policy is not None
                else f"answer {what} without --override"
            ),
            account,
            "not_admin",
            policy,
            run,
            details,
        )
    if policy is None:
        return Admission(account, OPEN)
    if policy.admits(account, groups, run.started_by):
        return Admission(account, POLICY)
    if override is not None:
        return Admission(account, OVERRIDE, reason=override)
    why = "starter" if policy.refuses_starter(account, run.started_by) else "policy"
    said = "started the run" if why == "starter" else "is not among them"
    ask = "ask another account" if policy.names_anyone else "ask one of them"
    if is_admin:
        then = "as an admin, answer past the policy with --override REASON"
    elif admins.describe():
        then = f"{ask}, or an admin ({admins.describe()}) to answer with --override REASON"
    else:
        then = ask
    raise _refused(
        f"{account} may not answer {what}: it may be answered by {policy.describe(run.started_by)}, "
        f"and {account} {said}; {then}",
        account,
        why,
        policy,
        run,
        details,
    )


def _refused(
    message: str,
    account: str,
    reason: str,
    policy: Policy | None,
    run: WorkflowRun,
    details: dict[str, Any] | None,
) -> AnswererNotAllowed:
    body: dict[str, Any] = {"account": account, "reason": reason, "runId": run.id}
    if policy is not None:
        body["policy"] = policy.to_dict()
    if run.started_by is not None:
        body["startedBy"] = run.started_by
    return AnswererNotAllowed(message, {**body, **(details or {})})


def admit_wait(
    app: App, run: WorkflowRun, job: JobRun, step: StepRun, wait_id: str, override: str | None
) -> Admission:
    """Whether the acting account may answer this wait: the policy captured when it opened
    (ACCESS-001) or, for a wait reserved but not open, the one it will capture (ACCESS-009)."""
    if step.wait is not None:
        policy = Policy.from_dict(step.wait.answerers)
    else:
        policy = reserved_answerers(run, job.name, step)
    return admit(app, run, policy, override=override, what=f"wait {wait_id}", details={"waitId": wait_id})


def reserved_answerers(run: WorkflowRun, job_name: str, step: StepRun) -> Policy | None:
    """The policy a reserved wait will capture when its step opens it: the step's `answerers:` in
    the definition the run executes (saved when it started, like the schema: WAIT-070)."""
    for job in run.definition.get("jobs") or []:
        if not isinstance(job, dict) or job.get("name") != job_name:
            continue
        for entry in job.get("steps") or []:
            if isinstance(entry, dict) and entry.get("name") == step.template:
                task = entry.get("task")
                return Policy.from_dict(task.get("answerers")) if isinstance(task, dict) else None
    return None
