"""The `swamp` command line: parse, call the request handler, render. Nothing else lives here."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

# rich-click renders help beautifully but costs ~25 ms of import; commands that only do work (a
# `signal` in a script's loop) parse with plain click, which rich-click wraps with the same API.
if not sys.argv[1:] or {"-h", "--help"} & set(sys.argv[1:]):
    import rich_click as click

    click.rich_click.USE_RICH_MARKUP = False
    click.rich_click.SHOW_ARGUMENTS = True
    click.rich_click.MAX_WIDTH = 100
else:
    import click  # type: ignore[no-redef]

from .. import __version__
from ..domain.errors import EXIT_FAILED, EXIT_USAGE, InternalError, SwampError, UsageError
from .output import out, print_error, print_json, style

Renderer = Callable[[dict[str, Any]], None]


def _as_json(ctx: click.Context, local: bool) -> bool:
    root = ctx.find_root()
    return local or bool(root.obj and root.obj.get("json"))


def _repo_dir(ctx: click.Context, local: str | None) -> str | None:
    root = ctx.find_root()
    return local or (root.obj or {}).get("repo_dir")


def call(
    ctx: click.Context,
    request: str,
    payload: dict[str, Any],
    *,
    as_json: bool,
    repo_dir: str | None,
    render: Renderer,
    progress: Callable[[dict[str, Any]], None] | None = None,
    exit_code: Callable[[dict[str, Any]], int] = lambda data: 0,
) -> None:
    from ..protocol.requests import handle

    use_json = _as_json(ctx, as_json)
    directory = _repo_dir(ctx, repo_dir)
    if directory is not None:
        payload = {**payload, "repoDir": directory}
    try:
        data = handle(request, payload, None if use_json else progress)
    except SwampError as exc:
        print_error(exc, use_json)
        ctx.exit(exc.exit_code)
    except Exception as exc:  # never a bare traceback
        if os.environ.get("SWAMP_DEBUG"):
            raise
        error = InternalError(
            f"unexpected error: {type(exc).__name__}: {exc}. Run again with SWAMP_DEBUG=1 for a traceback"
        )
        print_error(error, use_json)
        ctx.exit(error.exit_code)
    if use_json:
        print_json(data)
    else:
        render(data)
    code = exit_code(data)
    if code:
        ctx.exit(code)


COMMAND_REQUESTS = {
    "repo init": "repo.init",
    "workflow run": "workflow.run",
    "workflow list": "workflow.list",
    "workflow get": "workflow.get",
    "workflow create": "workflow.create",
    "workflow validate": "workflow.validate",
    "workflow history": "workflow.history",
    "workflow approve": "workflow.approve",
    "workflow reject": "workflow.reject",
    "workflow approvals": "workflow.approvals",
    "workflow resume": "workflow.resume",
    "workflow cancel": "workflow.cancel",
    "workflow signal": "workflow.signal",
    "workflow waits": "workflow.waits",
    "workflow wait show": "workflow.wait.show",
    "model create": "model.create",
    "model list": "model.list",
    "model get": "model.get",
    "model type list": "model.type.list",
}


def _serve_command_jsonl(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """--jsonl on a command: every stdin line is one payload of that command's request type."""
    if not value or ctx.resilient_parsing:
        return
    from ..protocol.jsonl import serve_stdio

    path = ctx.command_path.split(" ", 1)[1] if " " in ctx.command_path else ""
    # Eager: this runs before the command's own --repo-dir is parsed, so read it from the argv.
    argv = (ctx.find_root().obj or {}).get("argv", [])
    local = _option_value(argv, "--repo-dir")
    ctx.exit(serve_stdio(repo_dir=_repo_dir(ctx, local), implied_type=COMMAND_REQUESTS[path]))


def _option_value(argv: list[str], name: str) -> str | None:
    """The value of the last `name VALUE` or `name=VALUE` in argv."""
    found = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith(name + "="):
            found = arg.split("=", 1)[1]
    return found


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--jsonl",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_serve_command_jsonl,
        help="Read one JSON payload per stdin line and answer each with JSON-lines frames.",
    )(func)
    func = click.option(
        "--repo-dir",
        type=click.Path(file_okay=False),
        help="The repository (default: found from the current directory).",
    )(func)
    func = click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document instead of log lines."
    )(func)
    return func


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True, help="Print JSON documents instead of log lines.")
@click.option("--jsonl", is_flag=True, help="Serve JSON-lines requests from stdin until EOF.")
@click.option("--repo-dir", type=click.Path(file_okay=False), help="The repository to work on.")
@click.version_option(version=__version__, prog_name="swamp")
@click.pass_context
def cli(ctx: click.Context, as_json: bool, jsonl: bool, repo_dir: str | None) -> None:
    """swamp: a local workflow engine.

    \b
    Quick start:
      swamp repo init my-repo && cd my-repo
      swamp model create command/shell hello
      swamp workflow create hello
      swamp workflow run hello
    """
    ctx.obj = {**(ctx.obj or {}), "json": as_json, "repo_dir": repo_dir}
    if jsonl:
        from ..protocol.jsonl import serve_stdio

        ctx.exit(serve_stdio(repo_dir=repo_dir))
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


# -- repo ----------------------------------------------------------------------------------------


@cli.group()
def repo() -> None:
    """Create swamp repositories.

    \b
    Example:
      swamp repo init my-repo
    """


@repo.command("init")
@click.argument("directory", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def repo_init(ctx: click.Context, directory: str | None, as_json: bool) -> None:
    """Create a repository in DIRECTORY (default: the current directory).

    \b
    Example:
      swamp repo init my-repo
    """

    def render(data: dict[str, Any]) -> None:
        verb = "Created" if data["created"] else "Already a repository:"
        out(f"{verb} {data['path']}")
        out("Next: swamp model create command/shell hello && swamp workflow create hello")

    call(ctx, "repo.init", {"path": directory or "."}, as_json=as_json, repo_dir=None, render=render)


# -- workflow --------------------------------------------------------------------------------------


@cli.group()
def workflow() -> None:
    """Create, validate, run, resume and inspect workflows; answer their gates and waits.

    \b
    Examples:
      swamp workflow run release
      swamp workflow waits
      swamp workflow signal WAIT_ID --payload '{"verdict":"ship"}'
      swamp workflow resume release
    """


@workflow.command("run")
@click.argument("name")
@click.option(
    "--input",
    "-i",
    "inputs",
    multiple=True,
    metavar="K=V",
    help="An input value (repeatable): key=value, a.b=value, key:json=<json>.",
)
@click.option("--input-file", type=click.Path(dir_okay=False), help="A YAML or JSON file of inputs.")
@output_options
@click.pass_context
def workflow_run(
    ctx: click.Context,
    name: str,
    inputs: tuple[str, ...],
    input_file: str | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Run workflow NAME until it finishes or suspends.

    \b
    Examples:
      swamp workflow run release
      swamp workflow run deploy --input env=prod --input replicas=3
      swamp workflow run deploy --input regions:json='["eu","us"]' --json
    """
    from .inputs import parse_inputs
    from .render import RunProgress, run_outcome

    try:
        values = parse_inputs(inputs, input_file)
    except UsageError as exc:
        print_error(exc, _as_json(ctx, as_json))
        ctx.exit(exc.exit_code)
    call(
        ctx,
        "workflow.run",
        {"workflow": name, "inputs": values},
        as_json=as_json,
        repo_dir=repo_dir,
        render=run_outcome,
        progress=RunProgress(),
        exit_code=_run_exit,
    )


def _run_exit(data: dict[str, Any]) -> int:
    return EXIT_FAILED if data.get("status") in ("failed", "cancelled") else 0


@workflow.command("list")
@output_options
@click.pass_context
def workflow_list(ctx: click.Context, as_json: bool, repo_dir: str | None) -> None:
    """List the workflows of the repository.

    \b
    Example:
      swamp workflow list --json
    """
    from .render import table

    def render(data: dict[str, Any]) -> None:
        if not data["workflows"] and not data["broken"]:
            out("No workflows yet. Create one with: swamp workflow create NAME")
            return
        table(
            [[w["name"], str(w["jobs"]), str(w["steps"]), w["path"]] for w in data["workflows"]],
            ["NAME", "JOBS", "STEPS", "PATH"],
        )
        for broken in data["broken"]:
            out(style(f"broken: {broken['path']}: {broken['error']['message']}", "red"))

    call(ctx, "workflow.list", {}, as_json=as_json, repo_dir=repo_dir, render=render)


@workflow.command("get")
@click.argument("name")
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


@workflow.command("create")
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


@workflow.command("validate")
@click.argument("name", required=False)
@output_options
@click.pass_context
def workflow_validate(ctx: click.Context, name: str | None, as_json: bool, repo_dir: str | None) -> None:
    """Check workflow NAME (or every workflow): schema, names, references, cycles, expressions.

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
        out(f"Result: {style('PASSED', 'green') if result['passed'] else style('FAILED', 'red')}")

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
        out(f"Summary: {data['totalPassed']}/{total} workflows passed")

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


@workflow.command("history", context_settings={"ignore_unknown_options": False})
@click.argument("args", nargs=-1, metavar="[NAME] | get RUN_ID_OR_PREFIX")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many runs.")
@output_options
@click.pass_context
def workflow_history(
    ctx: click.Context, args: tuple[str, ...], limit: int | None, as_json: bool, repo_dir: str | None
) -> None:
    """List runs, newest first, or show one run whole.

    \b
    Examples:
      swamp workflow history             # every run
      swamp workflow history release     # the runs of one workflow
      swamp workflow history get 3f2a    # one run, by ID or unique prefix
    """
    from .render import duration, run_tree, table

    if args and args[0] == "get":
        if len(args) != 2:
            raise click.UsageError("usage: swamp workflow history get RUN_ID_OR_PREFIX")
        call(
            ctx, "workflow.history.get", {"run": args[1]}, as_json=as_json, repo_dir=repo_dir, render=run_tree
        )
        return
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
            )
        for problem in data["unreadable"]:
            out(style(f"unreadable: {problem['message']}", "red"))

    payload: dict[str, Any] = {}
    if args:
        payload["workflow"] = args[0]
    if limit:
        payload["limit"] = limit
    call(ctx, "workflow.history", payload, as_json=as_json, repo_dir=repo_dir, render=render)


def claim_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--claim-timeout",
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help="How long to wait for the run's claim when another command holds it (default 5).",
    )(func)


def _decision_command(approved: bool) -> Callable[..., Any]:
    verb = "approve" if approved else "reject"

    @click.argument("workflow_name", metavar="WORKFLOW")
    @click.argument("step")
    @click.option(
        "--run", "run_id", metavar="RUN_ID", help="The run (ID or prefix) when several are suspended."
    )
    @click.option("--job", help="The job, when the step name is waiting in several jobs.")
    @click.option("--reason", help="Why; recorded with the decision.")
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
        claim_timeout: float | None,
        as_json: bool,
        repo_dir: str | None,
    ) -> None:
        def render(data: dict[str, Any]) -> None:
            word = style("Approved", "green") if data["approved"] else style("Rejected", "red")
            out(
                f"{word} step {data['stepName']} of {data['workflowName']} (run {data['runId']}) "
                f"as {data['decidedBy']}"
            )
            if not data["approved"]:
                out(f"The run is now {data['runStatus']}.")
            for command in data.get("next", []):
                out(f"  Next: {command}")

        payload = _drop_none(
            {
                "workflow": workflow_name,
                "step": step,
                "run": run_id,
                "job": job,
                "reason": reason,
                "claimTimeout": claim_timeout,
            }
        )
        call(ctx, f"workflow.{verb}", payload, as_json=as_json, repo_dir=repo_dir, render=render)

    return command


def _drop_none(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if v is not None}


workflow.command(
    "approve",
    help="Approve the gate STEP of a suspended run of WORKFLOW.\n\n\b\nExamples:\n"
    "  swamp workflow approve release gate\n"
    "  swamp workflow approve release gate --run 3f2a --reason 'looks good'",
)(_decision_command(True))
workflow.command(
    "reject",
    help="Reject the gate STEP of a suspended run of WORKFLOW, or the signal wait WAIT_ID; the run fails."
    "\n\n\b\nExamples:\n"
    "  swamp workflow reject release gate --reason 'not this week'\n"
    "  swamp workflow reject wait_abcdefghijklmnopqrstuvwxyz --reason 'abandoned'",
)(_decision_command(False))


@workflow.command("approvals")
@click.option("--workflow", "workflow_name", metavar="WORKFLOW", help="Only this workflow's gates.")
@output_options
@click.pass_context
def workflow_approvals(
    ctx: click.Context, workflow_name: str | None, as_json: bool, repo_dir: str | None
) -> None:
    """List every open approval gate of every suspended run.

    \b
    Example:
      swamp workflow approvals --json
    """
    from .render import table

    def render(data: dict[str, Any]) -> None:
        if not data["approvals"]:
            out("No open approval gates.")
            return
        table(
            [
                [
                    g["workflowName"],
                    g["runId"],
                    g["jobName"],
                    g["stepName"],
                    g["deadline"] or "-",
                    g["prompt"],
                ]
                for g in data["approvals"]
            ],
            ["WORKFLOW", "RUN", "JOB", "STEP", "DEADLINE", "PROMPT"],
        )

    payload = {"workflow": workflow_name} if workflow_name else {}
    call(ctx, "workflow.approvals", payload, as_json=as_json, repo_dir=repo_dir, render=render)


@workflow.command("resume")
@click.argument("workflow_name", metavar="WORKFLOW")
@click.option("--run", "run_id", metavar="RUN_ID", help="The run (ID or prefix) when several could be meant.")
@click.option("--from", "from_step", metavar="STEP", help="Retry a failed run from STEP (and all after it).")
@click.option(
    "--input",
    "-i",
    "inputs",
    multiple=True,
    metavar="K=V",
    help="Override an input for the rest of the run (only its name is recorded).",
)
@click.option("--input-file", type=click.Path(dir_okay=False), help="A YAML or JSON file of inputs.")
@claim_option
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
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Continue a suspended run of WORKFLOW, or retry a failed one with --from.

    \b
    Examples:
      swamp workflow resume release
      swamp workflow resume release --run 3f2a
      swamp workflow resume release --from deploy
    """
    from .inputs import parse_inputs
    from .render import RunProgress, run_outcome

    try:
        values = parse_inputs(inputs, input_file)
    except UsageError as exc:
        print_error(exc, _as_json(ctx, as_json))
        ctx.exit(exc.exit_code)
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
        render=run_outcome,
        progress=RunProgress(),
        exit_code=_run_exit,
    )


@workflow.command("cancel")
@click.argument("workflow_name", metavar="WORKFLOW")
@click.option("--run", "run_id", metavar="RUN_ID", help="The run (ID or prefix) when several could be meant.")
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


MAX_STDIN_PAYLOAD = 16 * 1024 + 1


@workflow.command("signal")
@click.argument("wait_id", metavar="WAIT_ID")
@click.option("--payload", "payload_text", metavar="JSON", help="The message: JSON text, or - to read stdin.")
@click.option("--payload-file", type=click.Path(dir_okay=False), help="Read the message from FILE.")
@click.option("--check", is_flag=True, help="Validate the message against the wait without recording it.")
@claim_option
@output_options
@click.pass_context
def workflow_signal(
    ctx: click.Context,
    wait_id: str,
    payload_text: str | None,
    payload_file: str | None,
    check: bool,
    claim_timeout: float | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Deliver a JSON message to the open wait WAIT_ID (checked against the wait's schema).

    \b
    Examples:
      swamp workflow signal wait_3bq... --payload '{"verdict":"ship"}'
      echo '{"verdict":"fix"}' | swamp workflow signal wait_3bq... --payload -
      swamp workflow signal wait_3bq... --payload-file verdict.json --check
    """
    if (payload_text is None) == (payload_file is None):
        raise click.UsageError(
            "give the message with exactly one of --payload JSON, --payload - or --payload-file FILE"
        )
    raw: bytes
    if payload_file is not None:
        try:
            with open(payload_file, "rb") as handle:
                raw = handle.read(MAX_STDIN_PAYLOAD)
        except OSError as exc:
            raise click.UsageError(f"--payload-file {payload_file}: {exc.strerror}") from None
    elif payload_text == "-":
        raw = sys.stdin.buffer.read(MAX_STDIN_PAYLOAD)
    else:
        assert payload_text is not None
        raw = os.fsencode(payload_text)

    def render(data: dict[str, Any]) -> None:
        if data.get("valid"):
            out(
                f"{style('Valid', 'green')}: the message fits wait {data['waitId']} "
                f"(step {data['stepName']}); "
                "nothing was recorded"
            )
            return
        sig = data["signal"]
        out(
            f"{style('Signal accepted', 'green')}: {sig['id']} for wait {data['waitId']} "
            f"(step {data['jobName']}.{data['stepName']} of {data['workflowName']}, run {data['runId']})"
        )
        for command in data.get("next", []):
            out(f"  Next: {command}")

    payload = _drop_none(
        {
            "waitId": wait_id,
            "payloadText": raw,
            "claimTimeout": claim_timeout,
            "check": True if check else None,
        }
    )
    call(ctx, "workflow.signal", payload, as_json=as_json, repo_dir=repo_dir, render=render)


@workflow.command("waits")
@click.option("--workflow", "workflow_name", metavar="WORKFLOW", help="Only this workflow's waits.")
@click.option(
    "--expiring-within",
    metavar="DURATION",
    help="Only waits whose deadline is within DURATION (30m, 2h, 1d).",
)
@click.option("--all", "show_all", is_flag=True, help="Also show expired waits, marked expired.")
@output_options
@click.pass_context
def workflow_waits(
    ctx: click.Context,
    workflow_name: str | None,
    expiring_within: str | None,
    show_all: bool,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """List open signal waits: ID, workflow, run, job, step, deadline, schema.

    \b
    Examples:
      swamp workflow waits
      swamp workflow waits --workflow release --expiring-within 2h --json
    """
    from .render import table, time_left

    def render(data: dict[str, Any]) -> None:
        if not data["waits"]:
            out("No open waits.")
            return
        table(
            [
                [
                    w["waitId"],
                    w["workflowName"],
                    w["runId"][:8],
                    f"{w['jobName']}.{w['stepName']}",
                    w["deadline"],
                    "expired" if w["expired"] else time_left(w["secondsLeft"]),
                    summarize_schema(w["schema"]),
                ]
                for w in data["waits"]
            ],
            ["WAIT", "WORKFLOW", "RUN", "STEP", "DEADLINE", "LEFT", "SCHEMA"],
        )
        out(
            "Send one with: swamp workflow signal WAIT_ID --payload '<json>' "
            "(see: swamp workflow wait show WAIT_ID)"
        )

    payload: dict[str, Any] = _drop_none(
        {"workflow": workflow_name, "expiringWithin": expiring_within, "all": True if show_all else None}
    )
    call(ctx, "workflow.waits", payload, as_json=as_json, repo_dir=repo_dir, render=render)


def summarize_schema(schema: Any) -> str:
    if not isinstance(schema, dict) or not schema:
        return "any JSON"
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        required = set(schema.get("required") or [])
        parts = []
        for name, prop in props.items():
            kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
            if isinstance(prop, dict) and prop.get("enum"):
                kind = "|".join(str(v) for v in prop["enum"])
            parts.append(f"{name}{'' if name in required else '?'}: {kind}")
        return "{" + ", ".join(parts) + "}"
    return str(schema.get("type", "schema"))


@workflow.group("wait")
def workflow_wait() -> None:
    """Inspect one signal wait.

    \b
    Example:
      swamp workflow wait show WAIT_ID
    """


@workflow_wait.command("show")
@click.argument("wait_id", metavar="WAIT_ID")
@output_options
@click.pass_context
def workflow_wait_show(ctx: click.Context, wait_id: str, as_json: bool, repo_dir: str | None) -> None:
    """Show wait WAIT_ID whole: its schema and an example payload, or its receipt once settled.

    \b
    Example:
      swamp workflow wait show wait_3bq...
    """
    import json

    def render(data: dict[str, Any]) -> None:
        out(f"Wait {style(data['waitId'], bold=True)}: {data['status']}")
        out(
            f"  workflow {data['workflowName']}, run {data['runId']}, "
            f"step {data['jobName']}.{data['stepName']}"
        )
        if data.get("description"):
            out(f"  {data['description']}")
        out(f"  opened {data['openedAt']}, deadline {data['deadline']}")
        out("  schema: " + json.dumps(data["schema"], ensure_ascii=False))
        if data.get("receipt"):
            receipt = data["receipt"]
            out(f"  received {receipt['id']} at {receipt['receivedAt']} from {receipt['submittedBy']}")
            out("  payload: " + json.dumps(data.get("payload"), ensure_ascii=False))
        for command in data.get("next", []):
            out(f"  Next: {command}")

    call(ctx, "workflow.wait.show", {"waitId": wait_id}, as_json=as_json, repo_dir=repo_dir, render=render)


# -- serve -------------------------------------------------------------------------------------------


@cli.command("serve")
@click.option(
    "--socket", "socket_path", type=click.Path(dir_okay=False), help="Also listen on this Unix socket."
)
@click.option("--max-runs", type=click.IntRange(min=1), help="At most N runs executing at once.")
@click.option("--auto-continue", is_flag=True, help="Resume a run once all its waits and gates are settled.")
@click.option(
    "--enforce-deadlines", is_flag=True, help="Fail expired waits at their deadline (wait_timeout)."
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="Seconds running steps may take to finish on SIGTERM/SIGINT.",
)
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write logs here instead of stderr.")
@click.option("--repo-dir", type=click.Path(file_okay=False), help="The default repository for requests.")
@click.pass_context
def serve(
    ctx: click.Context,
    socket_path: str | None,
    max_runs: int | None,
    auto_continue: bool,
    enforce_deadlines: bool,
    grace: float,
    log_file: str | None,
    repo_dir: str | None,
) -> None:
    """Serve JSON-lines requests on stdin/stdout (and --socket) until EOF or SIGTERM.

    \b
    Examples:
      swamp serve < requests.jsonl
      swamp serve --socket /tmp/swamp.sock --enforce-deadlines --auto-continue
    """
    from ..protocol.serve import ServeOptions, run_server

    options = ServeOptions(
        repo_dir=_repo_dir(ctx, repo_dir),
        socket_path=socket_path,
        max_runs=max_runs,
        auto_continue=auto_continue,
        enforce_deadlines=enforce_deadlines,
        grace=grace,
        log_file=log_file,
    )
    try:
        ctx.exit(run_server(options))
    except SwampError as exc:
        print_error(exc, False)
        ctx.exit(exc.exit_code)


# -- model -------------------------------------------------------------------------------------------


@cli.group()
def model() -> None:
    """Create and inspect model definitions and types.

    \b
    Examples:
      swamp model create command/shell hello
      swamp model type list
    """


@model.command("create")
@click.argument("type_name", metavar="TYPE")
@click.argument("name")
@output_options
@click.pass_context
def model_create(ctx: click.Context, type_name: str, name: str, as_json: bool, repo_dir: str | None) -> None:
    """Create models/TYPE/NAME.yaml, a definition of model type TYPE.

    \b
    Example:
      swamp model create command/shell hello
    """

    def render(data: dict[str, Any]) -> None:
        out(f"Created {data['path']} ({data['type']})")

    call(
        ctx,
        "model.create",
        {"type": type_name, "name": name},
        as_json=as_json,
        repo_dir=repo_dir,
        render=render,
    )


@model.command("list")
@output_options
@click.pass_context
def model_list(ctx: click.Context, as_json: bool, repo_dir: str | None) -> None:
    """List model definitions.

    \b
    Example:
      swamp model list
    """
    from .render import table

    def render(data: dict[str, Any]) -> None:
        if not data["models"]:
            out("No models yet. Create one with: swamp model create command/shell hello")
        else:
            table([[m["name"], m["type"], m["path"]] for m in data["models"]], ["NAME", "TYPE", "PATH"])
        for problem in data["problems"]:
            out(style(f"broken: {problem['path']}: {problem['error']}", "red"))

    call(ctx, "model.list", {}, as_json=as_json, repo_dir=repo_dir, render=render)


@model.command("get")
@click.argument("name")
@output_options
@click.pass_context
def model_get(ctx: click.Context, name: str, as_json: bool, repo_dir: str | None) -> None:
    """Show model definition NAME (by name or id).

    \b
    Example:
      swamp model get hello
    """

    def render(data: dict[str, Any]) -> None:
        from ..store.yamlio import dump_yaml

        shown = {k: v for k, v in data.items() if k not in ("typeInfo",)}
        out(dump_yaml(shown).rstrip())
        if "typeInfo" in data:
            out(f"methods: {', '.join(data['typeInfo']['methods'])}")

    call(ctx, "model.get", {"model": name}, as_json=as_json, repo_dir=repo_dir, render=render)


@model.group("type")
def model_type() -> None:
    """Inspect model types (builtin and extensions/models/*.py).

    \b
    Example:
      swamp model type list --json
    """


@model_type.command("list")
@output_options
@click.pass_context
def model_type_list(ctx: click.Context, as_json: bool, repo_dir: str | None) -> None:
    """List model types, and extension files that failed to load.

    \b
    Example:
      swamp model type list
    """
    from .render import table

    def render(data: dict[str, Any]) -> None:
        table(
            [[t["type"], t["version"], ", ".join(t["methods"]), t["source"]] for t in data["types"]],
            ["TYPE", "VERSION", "METHODS", "SOURCE"],
        )
        for problem in data["problems"]:
            out(style(f"broken: {problem['path']}: {problem['error']}", "red"))

    call(ctx, "model.type.list", {}, as_json=as_json, repo_dir=repo_dir, render=render)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if {"--json", "--jsonl"} & set(args):
        from .output import protect_stdout

        protect_stdout()
    try:
        code = cli.main(args=args, prog_name="swamp", standalone_mode=False, obj={"argv": list(args)})
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        if "--json" in args:
            print_json({"error": {"code": "usage_error", "message": exc.format_message()}})
        else:
            exc.show()
        code = EXIT_USAGE
    except click.exceptions.Abort:
        code = 130
    except SwampError as exc:
        print_error(exc, "--json" in args)
        code = exc.exit_code
    sys.exit(code or 0)
