"""swamp serve."""

from __future__ import annotations

from ..domain.errors import SwampError
from .common import (
    _repo_dir,
    click,
)
from .output import print_error

# -- serve -------------------------------------------------------------------------------------------


@click.command("serve")
@click.option(
    "--socket",
    "socket_path",
    type=click.Path(),  # what stands at PATH is checked by serve (socket_path_taken)
    help="Also listen on this Unix socket; put it in a directory only you can write, such as "
    "$XDG_RUNTIME_DIR (not /tmp).",
)
@click.option(
    "--max-runs", type=click.IntRange(min=1), metavar="N", help="At most N runs executing at once (N ≥ 1)."
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    metavar="N",
    default=256,
    show_default=True,
    help="At most N --socket connections open at once; the next is refused with too_many_requests.",
)
@click.option(
    "--auto-continue",
    is_flag=True,
    help="Resume a run once its last wait is settled, by whichever process or host (serve follows "
    "the store's events); at start, resume the runs answered while no serve ran.",
)
@click.option(
    "--enforce-deadlines", is_flag=True, help="Fail expired waits at their deadline (wait_timeout)."
)
@click.option(
    "--grace",
    metavar="SECONDS",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="Seconds running steps may take to finish on SIGTERM/SIGINT.",
)
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write logs here instead of stderr.")
@click.option(
    "--repo-dir", type=click.Path(file_okay=False), metavar="DIR", help="The default repository for requests."
)
@click.pass_context
def serve(
    ctx: click.Context,
    socket_path: str | None,
    max_runs: int | None,
    max_connections: int,
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
      swamp serve --socket "$XDG_RUNTIME_DIR/swamp.sock" --enforce-deadlines --auto-continue
      SWAMP_STORE_URL=service=swamp swamp serve --auto-continue --enforce-deadlines  # one per host

    Several serves may follow one store (PostgreSQL shared by several hosts, or one repository):
    each run is resumed once and each deadline enforced once, whichever serve gets there.
    """
    from ..protocol.serve import ServeOptions, run_server

    options = ServeOptions(
        repo_dir=_repo_dir(ctx, repo_dir),
        socket_path=socket_path,
        max_runs=max_runs,
        max_connections=max_connections,
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
