"""workflow run / list / get / create / validate / history."""

from __future__ import annotations

from typing import Any

from ..domain.errors import EXIT_FAILED
from .common import (
    _run_exit,
    call,
    click,
    input_options,
    output_options,
    read_inputs,
    run_rendering,
    watch_option,
    wide_option,
)
from .complete import history_args, workflow_names
from .output import out, style


@click.command("run")
@click.argument("name", shell_complete=workflow_names)
@input_options("An input value (repeatable): key=value, a.b=value, key:json=<json>.")
@watch_option
@output_options
@click.pass_context
def workflow_run(
    ctx: click.Context,
    name: str,
    inputs: tuple[str, ...],
    input_file: str | None,
    watch: bool,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Run workflow NAME until it finishes or suspends (with --watch: until it finishes).

    Each line a step prints is shown as it comes (stderr marked `!`). Ctrl-C stops the run: it is
    recorded failed (interrupted), the command exits 130 and prints the `resume --from` command
    that retries it; a second Ctrl-C exits at once.

    \b
    Examples:
      swamp workflow run release
      swamp workflow run release --watch     # then wait for the signal and the resume, showing both
      swamp workflow run deploy --input env=prod --input replicas=3
      swamp workflow run deploy --input regions:json='["eu","us"]' --json
    """
    from .render import RunProgress, run_outcome

    values = read_inputs(ctx, inputs, input_file, as_json)
    call(
        ctx,
        "workflow.run",
        {"workflow": name, "inputs": values},
        as_json=as_json,
        repo_dir=repo_dir,
        **run_rendering(watch, run_outcome, RunProgress(), _run_exit),
    )


@click.command("list")
@wide_option
@output_options
@click.pass_context
def workflow_list(ctx: click.Context, wide: bool, as_json: bool, repo_dir: str | None) -> None:
    """List the workflows of the repository.

    At a narrow terminal the path is cut first; --wide shows every column whole.
    On a pipe the table is plain, every cell whole; programs should read --json.

    \b
    Examples:
      swamp workflow list
      swamp workflow list --json
    """
    from .tables import table

    def render(data: dict[str, Any]) -> None:
        if not data["workflows"] and not data["broken"]:
            out("No workflows yet. Create one with: swamp workflow create NAME")
            return
        table(
            [[w["name"], str(w["jobs"]), str(w["steps"]), w["path"]] for w in data["workflows"]],
            ["NAME", "JOBS", "STEPS", "PATH"],
            wide=wide,
        )
        for broken in data["broken"]:
            out(style(f"broken: {broken['path']}: {broken['error']['message']}", "red"))

    call(ctx, "workflow.list", {}, as_json=as_json, repo_dir=repo_dir, render=render)


@click.command("get")
@click.argument("name", shell_complete=workflow_names)
@output_options
@click.pass_context
def workflow_get(ctx: click.Context, name: str, as_json: bool, repo_dir: str | None) -> None:
    """Show workflow NAME (by name or id).

    \b
    Example:
      swamp workflow get release
    """

    def render(data: dict[str, Any]) -> None:
        from ..store.yamlio import dump_yaml

        out(f"{style(data['name'], bold=True)} ({data['path']})")
        out(dump_yaml(data["definition"]).rstrip())

    call(ctx, "workflow.get", {"workflow": name}, as_json=as_json, repo_dir=repo_dir, render=render)


@click.command("create")
@click.argument("name")
@click.option("--description", help="A one-line description.")
@output_options
@click.pass_context
def workflow_create(
    ctx: click.Context, name: str, description: str | None, as_json: bool, repo_dir: str | None
) -> None:
    """Create workflows/workflow-NAME.yaml from a starter template.

    \b
    Example:
      swamp workflow create hello
    """

    def render(data: dict[str, Any]) -> None:
        out(f"Created {data['path']}")
        out(f"Edit it, then: swamp workflow validate {data['name']} && swamp workflow run {data['name']}")

    payload = {"name": name, **({"description": description} if description else {})}
    call(ctx, "workflow.create", payload, as_json=as_json, repo_dir=repo_dir, render=render)


@click.command("validate")
@click.argument("name", required=False, shell_complete=workflow_names)
@output_options
@click.pass_context
def workflow_validate(ctx: click.Context, name: str | None, as_json: bool, repo_dir: str | None) -> None:
    """Check workflow NAME (or every workflow): schema, names, references, cycles, expressions.

    Also warns (without failing) where an expression reads a path of a wait's payload that the
    wait's schema does not guarantee, and shows the has() form that reads it safely.

    \b
    Examples:
      swamp workflow validate release
      swamp workflow validate --json
    """

    def render_one(result: dict[str, Any]) -> None:
        out(f"Validating: {style(result['workflowName'] or result['path'], bold=True)}")
        for check in result["validations"]:
            mark = style("✓", "green") if check["passed"] else style("✗", "red")
            out(f"  {mark} {check['name']}")
            if not check["passed"]:
                for problem in result.get("problems") or [check.get("error")]:
                    out(f"    → {problem}")
        for warning in result.get("warnings", []):
            place = f"job '{warning['job']}' step '{warning['step']}' {warning['field']}"
            out(f"  {style('!', 'yellow')} {place}: {warning['path']} may be absent ({warning['reason']})")
            out(f"    → use has(): {warning['fix']}")
            if warning.get("yaml"):
                out(f"      as YAML: {warning['yaml']}")
        warned = len(result.get("warnings", []))
        note = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
        out(f"Result: {style('PASSED', 'green') if result['passed'] else style('FAILED', 'red')}{note}")

    def render(data: dict[str, Any]) -> None:
        if "workflows" not in data:
            render_one(data)
            return
        if not data["workflows"]:
            out("No workflows to validate")
            return
        for result in data["workflows"]:
            render_one(result)
            out()
        total = data["totalPassed"] + data["totalFailed"]
        warned = sum(len(r.get("warnings", [])) for r in data["workflows"])
        note = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
        out(f"Summary: {data['totalPassed']}/{total} workflows passed{note}")

    payload = {"workflow": name} if name else {}
    call(
        ctx,
        "workflow.validate",
        payload,
        as_json=as_json,
        repo_dir=repo_dir,
        render=render,
        exit_code=lambda data: 0 if data["passed"] else EXIT_FAILED,
    )


@click.command("history", context_settings={"ignore_unknown_options": False})
@click.argument("args", nargs=-1, metavar="[NAME] | get RUN_ID_OR_PREFIX", shell_complete=history_args)
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="At most N runs (N ≥ 1).")
@click.option(
    "--lines",
    type=click.IntRange(min=0),
    metavar="N",
    help="history get: the last N lines of each step's output (default 5; 0: none).",
)
@wide_option
@output_options
@click.pass_context
def workflow_history(
    ctx: click.Context,
    args: tuple[str, ...],
    limit: int | None,
    lines: int | None,
    wide: bool,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """List runs, newest first, or show one run whole.

    At a narrow terminal times are shown to the second and the duration gives way first; --wide
    shows every column whole. On a pipe the table is plain, every cell whole; programs should
    read --json.

    \b
    Examples:
      swamp workflow history             # every run
      swamp workflow history release     # the runs of one workflow
      swamp workflow history --wide      # every column whole
      swamp workflow history get 3f2a    # one run: each step's last output lines, each
                                         # answer (payload, who, when), the audit trail
      swamp workflow history get 3f2a --lines 20
    """
    from .render import OUTPUT_LINES, duration, run_tree
    from .tables import table

    if args and args[0] == "get":
        if len(args) != 2:
            raise click.UsageError("usage: swamp workflow history get RUN_ID_OR_PREFIX")
        shown = OUTPUT_LINES if lines is None else lines
        call(
            ctx,
            "workflow.history.get",
            {"run": args[1]},
            as_json=as_json,
            repo_dir=repo_dir,
            render=lambda doc: run_tree(doc, shown),
        )
        return
    if lines is not None:
        raise click.UsageError("--lines goes with history get RUN: swamp workflow history get RUN --lines N")
    if len(args) > 1:
        raise click.UsageError("usage: swamp workflow history [NAME] or swamp workflow history get RUN_ID")

    def render(data: dict[str, Any]) -> None:
        if not data["runs"]:
            out("No runs yet. Start one with: swamp workflow run NAME")
        else:
            table(
                [
                    [
                        r["runId"],
                        r["workflowName"],
                        r["status"] + (" (interrupted)" if r.get("interrupted") else ""),
                        r["createdAt"],
                        duration(r.get("durationMs")),
                    ]
                    for r in data["runs"]
                ],
                ["RUN", "WORKFLOW", "STATUS", "CREATED", "TOOK"],
                wide=wide,
                drop=("TOOK", "WORKFLOW"),
            )
        for problem in data["unreadable"]:
            out(style(f"unreadable: {problem['message']}", "red"))

    payload: dict[str, Any] = {}
    if args:
        payload["workflow"] = args[0]
    if limit:
        payload["limit"] = limit
    call(ctx, "workflow.history", payload, as_json=as_json, repo_dir=repo_dir, render=render)
