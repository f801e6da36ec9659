"""workflow approve / reject / approvals / resume / cancel: gates and the run's life."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .common import (
    _drop_none,
    _run_exit,
    call,
    call_answer,
    claim_option,
    click,
    input_options,
    output_options,
    read_inputs,
    run_rendering,
    watch_option,
    wide_option,
)
from .complete import run_ids, workflow_names, workflow_or_wait
from .output import out, style


def _decision_command(approved: bool) -> Callable[..., Any]:
    verb = "approve" if approved else "reject"

    @click.argument(
        "workflow_name",
        metavar="WORKFLOW" if approved else "WORKFLOW|WAIT_ID",
        shell_complete=workflow_names if approved else workflow_or_wait,
    )
    @click.argument("step", required=approved)
    @click.option(
        "--run",
        "run_id",
        metavar="RUN_ID",
        shell_complete=run_ids,
        help="The run (ID or prefix) when several are suspended.",
    )
    @click.option("--job", metavar="JOB", help="The job, when the step name is waiting in several jobs.")
    @click.option("--reason", help="Why; recorded with the decision.")
    @click.option(
        "--override",
        metavar="REASON",
        help="As an admin (.swamp.yaml admins), answer past the approver or answerer policy; "
        "the reason is recorded.",
    )
    @claim_option
    @output_options
    @click.pass_context
    def command(
        ctx: click.Context,
        workflow_name: str,
        step: str | None,
        run_id: str | None,
        job: str | None,
        reason: str | None,
        override: str | None,
        claim_timeout: float | None,
        as_json: bool,
        repo_dir: str | None,
        resume: bool = False,
    ) -> None:
        def render(data: dict[str, Any]) -> None:
            from .render import who

            if data.get("continued"):
                from .render import run_outcome

                run_outcome(data["run"])
                return

            word = style("Approved", "green") if data["approved"] else style("Rejected", "red")
            what = f"step {data['stepName']}"
            if data.get("waitId"):
                what = f"wait {data['waitId']} ({what})"
            by = who(data["decidedBy"], data)
            if data.get("override"):
                by += f" (override: {data['override']})"
            out(f"{word} {what} of {data['workflowName']} (run {data['runId']}) as {by}")
            if data.get("remaining"):
                out(
                    f"{len(data['approvals'])} of {data['required']} approvals; the gate opens after "
                    f"{data['remaining']} more from other approvers."
                )
            if not data["approved"]:
                out(f"The run is now {data['runStatus']}.")
            if "stillOpen" in data:
                from .render import still_open

                still_open(data)
            for command in data.get("next", []):
                out(f"  Next: {command}")

        if step is None:  # reject WAIT_ID: the wait ID names the run and the step
            if run_id or job:
                raise click.UsageError("reject WAIT_ID takes no --run or --job: the wait ID names the run")
            payload = _drop_none(
                {
                    "waitId": workflow_name,
                    "reason": reason,
                    "claimTimeout": claim_timeout,
                    "override": override,
                }
            )
        else:
            payload = _drop_none(
                {
                    "workflow": workflow_name,
                    "step": step,
                    "run": run_id,
                    "job": job,
                    "reason": reason,
                    "claimTimeout": claim_timeout,
                    "resume": True if resume else None,
                    "override": override,
                }
            )
        call_answer(
            ctx,
            f"workflow.{verb}",
            payload,
            headline="Approved",
            as_json=as_json,
            repo_dir=repo_dir,
            render=render,
        )

    return command


approve = click.command(
    "approve",
    help="Approve the gate STEP of a suspended run of WORKFLOW. With --resume the run continues in "
    "this command once nothing else is open (exit codes then as for resume)."
    "\n\n\b\nExamples:\n"
    "  swamp workflow approve release gate\n"
    "  swamp workflow approve release gate --run 3f2a --reason 'looks good'\n"
    "  swamp workflow approve release gate --resume\n"
    "  swamp workflow approve release gate --override 'release managers are away'",
)(
    click.option(
        "--resume",
        is_flag=True,
        help="Then continue the run here, as `resume` would, when nothing else is open.",
    )(_decision_command(True))
)
reject = click.command(
    "reject",
    help="Reject the gate STEP of a suspended run of WORKFLOW, or the signal wait WAIT_ID; the run fails."
    "\n\n\b\nExamples:\n"
    "  swamp workflow reject release gate --reason 'not this week'\n"
    "  swamp workflow reject wait_abcdefghijklmnopqrstuvwxyz --reason 'abandoned'",
)(_decision_command(False))


@click.command("approvals")
@click.option(
    "--workflow",
    "workflow_name",
    metavar="WORKFLOW",
    shell_complete=workflow_names,
    help="Only this workflow's gates.",
)
@wide_option
@output_options
@click.pass_context
def workflow_approvals(
    ctx: click.Context, workflow_name: str | None, wide: bool, as_json: bool, repo_dir: str | None
) -> None:
    """List every open approval gate of every suspended run.

    At a narrow terminal the deadline and the prompt give way first; --wide shows every column
    whole. On a pipe the table is plain, every cell whole; programs should read --json.

    \b
    Examples:
      swamp workflow approvals
      swamp workflow approvals --wide
      swamp workflow approvals --json
    """
    from .tables import table

    def render(data: dict[str, Any]) -> None:
        if not data["approvals"]:
            out("No open approval gates.")
            return
        counted = any("required" in g for g in data["approvals"])  # a gate with approvers (ACCESS-016)
        table(
            [
                [
                    g["workflowName"],
                    g["runId"],
                    g["jobName"],
                    g["stepName"],
                    *([_approved_so_far(g)] if counted else []),
                    g["deadline"] or "-",
                    g["prompt"],
                ]
                for g in data["approvals"]
            ],
            ["WORKFLOW", "RUN", "JOB", "STEP", *(["APPROVED"] if counted else []), "DEADLINE", "PROMPT"],
            wide=wide,
            drop=("DEADLINE", "PROMPT", "JOB"),
        )

    payload = {"workflow": workflow_name} if workflow_name else {}
    call(ctx, "workflow.approvals", payload, as_json=as_json, repo_dir=repo_dir, render=render)


def _approved_so_far(gate: dict[str, Any]) -> str:
    """`1 of 2: alice` for a gate with approvers; `-` for one without."""
    if "required" not in gate:
        return "-"
    names = ", ".join(a["by"] for a in gate["approvals"])
    return f"{len(gate['approvals'])} of {gate['required']}" + (f": {names}" if names else "")


def workflow_and_run(func: Callable[..., Any]) -> Callable[..., Any]:
    """WORKFLOW and --run RUN_ID, as resume and cancel take them (both complete)."""
    func = click.option(
        "--run",
        "run_id",
        metavar="RUN_ID",
        shell_complete=run_ids,
        help="The run (ID or prefix) when several could be meant.",
    )(func)
    return click.argument("workflow_name", metavar="WORKFLOW", shell_complete=workflow_names)(func)


@click.command("resume")
@workflow_and_run
@click.option(
    "--from",
    "from_step",
    metavar="STEP",
    help="Retry a failed run from STEP (and all after it), with the definition saved when the run started.",
)
@input_options("Override an input for the rest of the run (only its name is recorded).")
@claim_option
@watch_option
@output_options
@click.pass_context
def workflow_resume(
    ctx: click.Context,
    workflow_name: str,
    run_id: str | None,
    from_step: str | None,
    inputs: tuple[str, ...],
    input_file: str | None,
    claim_timeout: float | None,
    watch: bool,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Continue a suspended run of WORKFLOW, or retry a failed one with --from (with --watch:
    if it suspends again, wait until it finishes).

    A run always executes the definition saved when it started, never the workflow file as it is
    now: editing the file does not change a run, and resume says so when the file changed. To run
    the edited file, start a fresh run with swamp workflow run WORKFLOW.

    \b
    Examples:
      swamp workflow resume release
      swamp workflow resume release --run 3f2a
      swamp workflow resume release --from deploy
      swamp workflow run release      # after an edit: a fresh run uses it
      swamp workflow resume release --watch
    """
    from .render import RunProgress, run_outcome

    values = read_inputs(ctx, inputs, input_file, as_json)
    payload = _drop_none(
        {"workflow": workflow_name, "run": run_id, "from": from_step, "claimTimeout": claim_timeout}
    )
    if values:
        payload["inputs"] = values
    call(
        ctx,
        "workflow.resume",
        payload,
        as_json=as_json,
        repo_dir=repo_dir,
        **run_rendering(watch, run_outcome, RunProgress(), _run_exit),
    )


@click.command("cancel")
@workflow_and_run
@click.option("--reason", help="Why; recorded on the run.")
@claim_option
@output_options
@click.pass_context
def workflow_cancel(
    ctx: click.Context,
    workflow_name: str,
    run_id: str | None,
    reason: str | None,
    claim_timeout: float | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Cancel a suspended (or interrupted) run of WORKFLOW. Open waits are settled as failed.

    \b
    Example:
      swamp workflow cancel release --run 3f2a --reason 'superseded by hotfix'
    """

    def render(data: dict[str, Any]) -> None:
        out(f"Cancelled run {data['id']} of {data['workflowName']}: {data.get('cancelReason')}")

    payload = _drop_none(
        {"workflow": workflow_name, "run": run_id, "reason": reason, "claimTimeout": claim_timeout}
    )
    call(ctx, "workflow.cancel", payload, as_json=as_json, repo_dir=repo_dir, render=render)
