"""The `swamp` command line: parse, call the request handler, render. Nothing else lives here.

Subcommands live in one module per group (repo, workflows, gates, waits, models, serve) and are
imported only when used, so `swamp workflow signal` loads its own command and nothing else.
"""

from __future__ import annotations

import gc
import os
import sys

# A Tab (click's completion protocol) that completes a wait ID, run ID or step is answered from the
# open index before click, or anything else, is imported: see cli/tabcomplete.py.
if "_SWAMP_COMPLETE" in os.environ:
    from .tabcomplete import answer

    if answer():
        sys.exit(0)

# Importing click and building the command tree below allocates thousands of objects that live as
# long as the process; the cyclic garbage collector would only walk them again and again (5-10 ms
# of every command). It is paused while this module loads; at the end they are frozen (left out of
# every later collection) and the collector resumes.
_GC_WAS_ENABLED = gc.isenabled()
gc.disable()

from .. import __version__  # noqa: E402
from ..domain.errors import EXIT_SIGINT, EXIT_USAGE, SwampError  # noqa: E402
from .common import LazyGroup, click  # noqa: E402
from .output import print_error, print_json  # noqa: E402


@click.group(
    cls=LazyGroup,
    lazy={
        "repo": ".repo:repo",
        "workflow": ".main:workflow",
        "model": ".models:model",
        "serve": ".serve:serve",
        "service": ".service:service",
        "gateway": ".gateway:gateway",
        "events": ".events:events",
        "store": ".store:store",
        "version": ".version:version",
        "completion": ".complete:completion",
    },
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON documents instead of log lines.")
@click.option("--jsonl", is_flag=True, help="Serve JSON-lines requests from stdin until EOF.")
@click.option(
    "--repo-dir", type=click.Path(file_okay=False), metavar="DIR", help="The repository to work on."
)
@click.option(
    "--connect",
    metavar="PATH",
    envvar="SWAMP_CONNECT",
    help="Send every command to the swamp serve listening on this socket instead of opening the "
    "store here (also SWAMP_CONNECT); how you answer waits kept by a service account.",
)
@click.version_option(version=__version__, prog_name="swamp")
@click.pass_context
def cli(ctx: click.Context, as_json: bool, jsonl: bool, repo_dir: str | None, connect: str | None) -> None:
    """swamp: a local workflow engine.

    \b
    Quick start:
      swamp repo init my-repo && cd my-repo
      swamp model create command/shell hello
      swamp workflow create hello
      swamp workflow run hello
    """
    ctx.obj = {**(ctx.obj or {}), "json": as_json, "repo_dir": repo_dir, "connect": connect or None}
    if connect:
        _connectable(ctx, jsonl, repo_dir)
    if jsonl:
        from ..protocol.jsonl import serve_stdio

        ctx.exit(serve_stdio(repo_dir=repo_dir))
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _connectable(ctx: click.Context, jsonl: bool, repo_dir: str | None) -> None:
    """--connect sends requests to a serve; what works on this machine instead is a usage error
    (ACCESS-083). Requests about local files (repo init, store copy/migrate) are refused by
    cli/transport.py, per request."""
    if jsonl:
        raise click.UsageError("--jsonl answers requests here; with --connect, use the serve's socket itself")
    if repo_dir:
        raise click.UsageError(
            "--repo-dir names a repository on this machine; through --connect requests go to the "
            "serve's own repository: leave out one of them"
        )
    if ctx.invoked_subcommand == "serve":
        raise click.UsageError(
            "swamp serve does not go through another serve: leave out --connect (and SWAMP_CONNECT)"
        )


@click.group(
    cls=LazyGroup,
    lazy={
        "run": ".workflows:workflow_run",
        "list": ".workflows:workflow_list",
        "get": ".workflows:workflow_get",
        "create": ".workflows:workflow_create",
        "validate": ".workflows:workflow_validate",
        "history": ".workflows:workflow_history",
        "approve": ".gates:approve",
        "reject": ".gates:reject",
        "approvals": ".gates:workflow_approvals",
        "resume": ".gates:workflow_resume",
        "cancel": ".gates:workflow_cancel",
        "signal": ".waits:workflow_signal",
        "waits": ".waits:workflow_waits",
        "wait": ".waits:workflow_wait",
        "watch": ".watch:workflow_watch",
    },
)
def workflow() -> None:
    """Create, validate, run, resume and inspect workflows; answer their gates and waits.

    \b
    Examples:
      swamp workflow run release
      swamp workflow waits
      swamp workflow signal WAIT_ID --payload '{"verdict":"ship"}'
      swamp workflow resume release
      swamp workflow watch RUN_ID
    """


cli.add_command(workflow)

gc.freeze()
if _GC_WAS_ENABLED:
    gc.enable()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if {"--json", "--jsonl"} & set(args):
        from ..protocol.channel import protect_stdout

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
        code = EXIT_SIGINT
    except SwampError as exc:
        print_error(exc, "--json" in args)
        code = exc.exit_code
    sys.exit(code or 0)
